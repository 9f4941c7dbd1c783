//! `moverctl plan`: flags → resolved options (validated once) → planner → table / JSON / plan file.
//!
//! Measured, not assumed: when `moverctl probe` saved a result for a destination's provider (the
//! newest file in `<state>/probes/<provider>/`), that destination is timed with the probe's
//! latency and per-stream upload throughput instead of the defaults — only for the values not
//! given on the command line, never with `--no-probe` or `--example`. The text output names each
//! probe used ("using probe of LOCATION (DATE): …"); in JSON, `assumptions` are those of the
//! best-ranked destination, `assumptions.probe` is the probe behind them (or null), and every
//! candidate carries its own `probe` (or null): `{location, provider, timestamp, file,
//! latency_ms, stream_throughput_bytes_per_second}` with the values applied.
//!
//! A probe also measured what bounds a run (request rate under concurrency, aggregate throughput,
//! the engine's CPU per GiB): the source's probe (of `--src` or a folder above it, else the newest
//! of the source's provider) gives the GET side, each destination's probe (of `--dst` or a folder
//! above it when there is one destination, else the newest of its provider) the PUT side and the
//! CPU; `assumptions.source_probe` names the source's, `assumptions.measured` the bounds applied.

use super::CliError;
use clap::Args;
use moverctl::catalog::Catalog;
use moverctl::catalog::parts::{MIB, PartRule};
use moverctl::job::Observer;
use moverctl::job::plan::{
    CorpusSource, PlanOutcome, PlanSpec, ProbeUse, Save, Saved, SavedProbes,
};
use moverctl::job::shard::split::{SplitRequest, inventory_format, split_for};
use moverctl::money::Usd;
use moverctl::plan::corpus::{Corpus, parse_size};
use moverctl::plan::horizon::Reads;
use moverctl::plan::model::Assumptions;
use moverctl::plan::render;
use rust_decimal::Decimal;
use std::path::PathBuf;

/// The worked example from the README: 2 PB in 40 M objects out of AWS us-east-1.
pub const EXAMPLE: &[&str] = &[
    "--from",
    "aws:us-east-1",
    "--to",
    "backblaze-b2,cloudflare-r2,wasabi:us-east-1,gcp:us-central1",
    "--bytes",
    "2PB",
    "--objects",
    "40M",
    "--bandwidth",
    "100Gbps",
    "--workers",
    "8",
    "--months",
    "12",
    "--gpu-hourly",
    "4500",
];

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Run the built-in example (2 PB, 40 M objects, AWS us-east-1 to B2, R2, Wasabi and GCS).
    #[arg(long, conflicts_with_all = ["from", "to", "bytes", "objects", "inventory"])]
    pub example: bool,
    /// Where the data is now: PROVIDER[:REGION][/CLASS], e.g. aws:us-east-1/standard.
    #[arg(long)]
    pub from: Option<String>,
    /// Candidate destinations, comma-separated: backblaze-b2,cloudflare-r2,wasabi:us-east-1.
    #[arg(long, value_delimiter = ',')]
    pub to: Vec<String>,
    /// Total size of the corpus: 2PB, 200TiB, 1.5TB.
    #[arg(long, allow_hyphen_values = true)]
    pub bytes: Option<String>,
    /// Number of objects: 40M, 1.2k, 40000000.
    #[arg(long, allow_hyphen_values = true)]
    pub objects: Option<String>,
    /// Object-size profile: shares of the object count with a typical size each,
    /// e.g. "70%:256KiB,25%:64MiB,5%:4GiB" (scaled to --bytes when given).
    #[arg(long = "size-profile", id = "size_profile", value_name = "MIX")]
    pub profile: Option<String>,
    /// A listing of the corpus: CSV (key,size[,storage_class]) or JSON lines; streamed.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["bytes", "objects", "size_profile"])]
    pub inventory: Option<PathBuf>,
    /// Inventory format: auto (by extension), csv, jsonl, or s3 (S3 Inventory CSV; see --s3-columns).
    #[arg(long, default_value = "auto")]
    pub inventory_format: String,
    /// S3 Inventory column order, from manifest.json "fileSchema".
    #[arg(
        long,
        default_value = "Bucket,Key,Size,LastModifiedDate,ETag,StorageClass"
    )]
    pub s3_columns: String,
    /// Months of destination storage to price (the horizon).
    #[arg(long, default_value_t = 12)]
    pub months: u32,
    /// Where the GPUs that read the corpus run: PROVIDER[:REGION], or internet:NAME for a GPU cloud
    /// without a provider file (e.g. internet:lambda; priced as reached over the internet). Adds "stay" as a candidate and
    /// prices every month's reads.
    #[arg(long, value_name = "PROVIDER[:REGION]")]
    pub compute_at: Option<String>,
    /// Full reads of the corpus per month by the compute location (fractional allowed: 0.5).
    #[arg(long, value_name = "R", allow_hyphen_values = true, requires = "compute_at", conflicts_with_all = ["epochs", "over_months"])]
    pub reads_per_month: Option<String>,
    /// Epochs (full reads of the corpus) over --over-months months.
    #[arg(long, value_name = "E", allow_hyphen_values = true, requires_all = ["compute_at", "over_months"])]
    pub epochs: Option<String>,
    /// Months the --epochs are spread over; also the horizon (replaces --months).
    #[arg(long, value_name = "M", requires = "epochs", conflicts_with = "months")]
    pub over_months: Option<u32>,
    /// The rate the GPUs read each store at, for every store or per provider (20Gbps, or
    /// azure=50Gbps,backblaze-b2=5Gbps) [default: a saved probe's, else the provider file's
    /// published limit, else not modelled and said so].
    #[arg(long, value_name = "[PROVIDER=]RATE,…", requires = "compute_at")]
    pub store_read_rate: Option<String>,
    /// Path bandwidth between source and destination.
    #[arg(long, default_value = "10Gbps")]
    pub bandwidth: String,
    /// Machines (or processes) copying in parallel.
    #[arg(long, default_value_t = 1)]
    pub workers: u32,
    /// Network interface speed of one worker.
    #[arg(long, default_value = "25Gbps")]
    pub worker_nic: String,
    /// Objects in flight per worker.
    #[arg(long, default_value_t = 64)]
    pub concurrency: u32,
    /// Throughput one HTTP stream sustains [default: 90MB/s, or what a saved probe of the
    /// destination measured].
    #[arg(long)]
    pub stream_throughput: Option<String>,
    /// Time to first byte per request, in milliseconds [default: 30, or what a saved probe of the
    /// destination measured].
    #[arg(long)]
    pub latency_ms: Option<u32>,
    /// Ignore saved probe results (`moverctl probe`); use the defaults and the flags only.
    #[arg(long)]
    pub no_probe: bool,
    /// Key prefixes the corpus is spread over (per-prefix request limits scale with it).
    #[arg(long, default_value_t = 1)]
    pub prefixes: u32,
    /// Price one ranged GET per part of a large object (as `exec --ranged-reads` reads) instead of
    /// one GET per object (exec's default).
    #[arg(long)]
    pub ranged_reads: bool,
    /// Price and time a move within one region of one S3 service as a streamed copy (by default
    /// it is planned as `exec` does it: copied on the server, no GETs, no bytes through workers).
    #[arg(long)]
    pub no_server_side: bool,
    /// What the idle GPU cluster costs per hour, in USD.
    #[arg(long, allow_hyphen_values = true, conflicts_with_all = ["gpus", "gpu_rate"])]
    pub gpu_hourly: Option<String>,
    /// GPUs idling during the move (with --gpu-rate).
    #[arg(long, requires = "gpu_rate")]
    pub gpus: Option<u32>,
    /// USD per GPU-hour (with --gpus).
    #[arg(long, allow_hyphen_values = true, requires = "gpus")]
    pub gpu_rate: Option<String>,
    /// Assume the source's "leaving the cloud" egress waiver is granted (its conditions are printed).
    #[arg(long)]
    pub exit_waiver: bool,
    #[command(flatten)]
    pub extras: moverctl::job::plan_extras::ExtrasArgs,
    /// Preferred multipart part size (raised to fit the destination's limits).
    #[arg(long, default_value = "64MiB")]
    pub part_size: String,
    /// Objects above this size are uploaded in parts.
    #[arg(long, default_value = "64MiB")]
    pub multipart_threshold: String,
    /// Restore tier for archive-class source objects: bulk, standard, expedited, or auto (the
    /// lowest retrieval fees + GPU idle during the restore) [default: each class's standard restore].
    #[arg(long, value_name = "TIER")]
    pub restore_tier: Option<String>,
    /// Also write a self-contained HTML report (ranked table, charts, assumptions, price sources).
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// Print JSON (schema moverctl.plan/1) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Save a plan file as plans/NAME.toml for `moverctl exec`.
    #[arg(long, value_name = "NAME")]
    pub save: Option<String>,
    /// Which destination the saved plan uses (default: the cheapest).
    #[arg(long, value_name = "DESTINATION")]
    pub pick: Option<String>,
    /// Folder for saved plans.
    #[arg(long, default_value = "plans")]
    pub plans_dir: PathBuf,
    /// Source location to record in the plan (s3://bucket/prefix, gs://…, az://…, a path, or
    /// REMOTE:bucket/prefix). Without --bytes, --objects, --size-profile or --inventory, the location is
    /// listed once (streamed, constant memory, progress on stderr) and the plan uses its real sizes.
    #[arg(long, value_name = "LOCATION")]
    pub src: Option<String>,
    /// Destination location to record in the plan.
    #[arg(long, value_name = "LOCATION")]
    pub dst: Option<String>,
    /// Split the move into N key ranges for N `exec --shard K/N` processes (with --src: from
    /// --inventory, or by listing --src once), balanced by bytes and objects.
    #[arg(long, value_name = "N")]
    pub shards: Option<u32>,
    /// Where shards keep their progress records (default: .moverctl-progress/ beside the
    /// destination prefix); recorded in the plan.
    #[arg(
        long = "progress-location",
        value_name = "LOCATION",
        requires = "shards"
    )]
    pub progress: Option<String>,
    /// Multi-hop: after the move to the destination (--pick, or the cheapest), copy on from there
    /// to PLACE, e.g. --to coreweave --then backblaze-b2 (a cold copy fed from CoreWeave's free
    /// egress); repeat for more legs. Each leg is priced from the previous leg's destination.
    #[arg(long, value_name = "PLACE", value_delimiter = ',')]
    pub then: Vec<String>,
    /// The location of each --then place, in the same order (recorded in its leg's plan file).
    #[arg(long, value_name = "LOCATION", requires = "then")]
    pub then_dst: Vec<String>,
    #[command(flatten)]
    pub tiering: moverctl::job::plan_tiering::TieringArgs,
}

fn usage(m: impl Into<String>) -> CliError {
    CliError::Usage(m.into())
}

/// Notes of the plan job (a listing's progress, a restore tier with nothing to restore), as
/// they come, on stderr.
struct Notes;

impl Observer for Notes {
    fn note(&self, message: &str) {
        eprintln!("{message}");
    }
}

#[derive(clap::Parser)]
struct ExampleParser {
    #[command(flatten)]
    args: PlanArgs,
}

/// `--example`: the built-in example's flags, keeping the given output, save, read and restore
/// flags.
fn example_args(mut args: PlanArgs) -> Result<PlanArgs, CliError> {
    let mut argv = vec!["plan"];
    argv.extend_from_slice(EXAMPLE);
    let ex = <ExampleParser as clap::Parser>::try_parse_from(argv)
        .map_err(|e| CliError::Failure(format!("the built-in example does not parse: {e}")))?;
    let mut ex = ex.args;
    ex.json = args.json;
    ex.save = args.save.take();
    ex.pick = args.pick.take();
    ex.plans_dir = args.plans_dir.clone();
    ex.src = args.src.take();
    ex.dst = args.dst.take();
    ex.compute_at = args.compute_at.take();
    ex.reads_per_month = args.reads_per_month.take();
    ex.epochs = args.epochs.take();
    ex.over_months = args.over_months.take();
    ex.restore_tier = args.restore_tier.take();
    ex.store_read_rate = args.store_read_rate.take();
    ex.tiering.read_rate = args.tiering.read_rate.take();
    ex.ranged_reads = args.ranged_reads;
    ex.no_server_side = args.no_server_side;
    ex.report = args.report.take();
    ex.extras = std::mem::take(&mut args.extras);
    Ok(ex)
}

/// Flags → the plan job's spec, validated in the order the flags are checked: the shard split
/// (`--shards`, which reads the corpus), `--from`, `--to`, the corpus, the assumptions.
fn resolve(
    catalog: &Catalog,
    config: Option<&std::path::Path>,
    args: PlanArgs,
) -> Result<PlanSpec, CliError> {
    let example = args.example;
    let split = split_for(
        &SplitRequest {
            shards: args.shards,
            save: args.save.is_some(),
            progress: args.progress.as_deref(),
            src: args.src.as_deref(),
            inventory: args.inventory.as_deref(),
            inventory_format: &args.inventory_format,
            s3_columns: &args.s3_columns,
            flags_given: args.bytes.is_some() || args.objects.is_some() || args.profile.is_some(),
        },
        config,
    )?;
    let args = if example { example_args(args)? } else { args };
    let from = args.from.clone().ok_or_else(|| {
        usage("plan needs --from (where the data is), --to (candidate destinations) and the corpus (--bytes and --objects, or --inventory); see `moverctl plan --example`")
    })?;
    let to: Vec<String> = (args.to.iter())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if to.is_empty() {
        return Err(usage(
            "--to needs at least one destination, e.g. --to backblaze-b2,wasabi; see `moverctl plan --example`",
        ));
    }
    let (corpus, ranges) = match split {
        Some(s) => (s.corpus, Some(s.ranges)),
        None => (corpus_of(config, &args)?, None),
    };
    let save = args.save.clone().map(|name| Save {
        name,
        pick: args.pick.clone(),
        plans_dir: args.plans_dir.clone(),
        shards: ranges.map(|ranges| moverctl::job::plan::ShardSplit {
            ranges,
            progress: args.progress.clone(),
        }),
    });
    Ok(PlanSpec {
        from,
        to,
        corpus,
        assumptions: assumptions_of(catalog, &args)?,
        restore_tier: args.restore_tier.clone(),
        probes: SavedProbes {
            apply: !example && !args.no_probe,
            latency_given: args.latency_ms.is_some(),
            stream_given: args.stream_throughput.is_some(),
        },
        src: args.src.clone(),
        dst: args.dst.clone(),
        config: config.map(std::path::Path::to_path_buf),
        report: args.report.clone(),
        save,
        then: hops_of(&args)?,
    })
}

/// `--then` places with their `--then-dst` locations (by position).
fn hops_of(args: &PlanArgs) -> Result<Vec<moverctl::job::plan::hops::Hop>, CliError> {
    if args.then_dst.len() > args.then.len() {
        return Err(usage(format!(
            "--then-dst is given {} times for {} --then place(s): give one location per place, in the same order",
            args.then_dst.len(),
            args.then.len()
        )));
    }
    let hops = (args.then.iter().map(|s| s.trim()).filter(|s| !s.is_empty()))
        .enumerate()
        .map(|(i, to)| moverctl::job::plan::hops::Hop {
            to: to.to_string(),
            location: args.then_dst.get(i).cloned(),
        });
    Ok(hops.collect())
}

/// The corpus: `--inventory`, a listing of `--src` (without `--bytes`, `--objects` and
/// `--size-profile`), or those flags.
fn corpus_of(config: Option<&std::path::Path>, args: &PlanArgs) -> Result<Corpus, CliError> {
    let read = |source| moverctl::job::plan::read_corpus(&source, config, &Notes);
    match (&args.inventory, &args.src) {
        (Some(path), _) => {
            let format = inventory_format(&args.inventory_format, &args.s3_columns)?;
            read(CorpusSource::Inventory(path.clone(), format))
        }
        (None, Some(loc))
            if args.bytes.is_none() && args.objects.is_none() && args.profile.is_none() =>
        {
            read(CorpusSource::Listing(loc.clone()))
        }
        _ => Ok(Corpus::from_flags(
            args.bytes.as_deref(),
            args.objects.as_deref(),
            args.profile.as_deref(),
        )?),
    }
}

/// The model's assumptions from the flags (`same_service`, `restore` and `measured` are the
/// job's).
fn assumptions_of(catalog: &Catalog, args: &PlanArgs) -> Result<Assumptions, CliError> {
    let rate = moverctl::job::plan::rate_flag;
    let size = |flag: &str, v: &str| parse_size(v).map_err(|e| usage(format!("{flag}: {e}")));
    let positive = |flag: &str, v: u32| {
        if v == 0 {
            Err(usage(format!("{flag} must be at least 1")))
        } else {
            Ok(v)
        }
    };
    let gpu_hourly = gpu_hourly_of(args)?;
    let part = size("--part-size", &args.part_size)?;
    if part < MIB {
        return Err(usage("--part-size must be at least 1MiB"));
    }
    let (months, reads) = reads_of(catalog, args)?;
    if args.tiering.read_rate.is_some() && reads.is_none() {
        return Err(usage("--read-rate needs --compute-at (or --tiering)"));
    }
    let feed = moverctl::plan::feed::FeedAssumptions::from_flags(
        catalog,
        args.tiering.read_rate.as_deref(),
        Some(&args.tiering.train_hours),
        args.store_read_rate.as_deref(),
    )
    .map_err(usage)?;
    Ok(Assumptions {
        feed,
        months,
        reads,
        restore: None,
        measured: None,
        server_side: !args.no_server_side,
        same_service: None,
        bandwidth: rate("--bandwidth", &args.bandwidth)?,
        workers: positive("--workers", args.workers)?,
        worker_nic: rate("--worker-nic", &args.worker_nic)?,
        concurrency: positive("--concurrency", args.concurrency)?,
        stream_throughput: rate(
            "--stream-throughput",
            args.stream_throughput.as_deref().unwrap_or(DEFAULT_STREAM),
        )?,
        latency_ms: args.latency_ms.unwrap_or(DEFAULT_LATENCY_MS),
        prefixes: positive("--prefixes", args.prefixes)?,
        ranged_reads: args.ranged_reads,
        gpu_hourly,
        exit_waiver: args.exit_waiver,
        extras: args.extras.flags()?,
        part_rule: PartRule {
            threshold: size("--multipart-threshold", &args.multipart_threshold)?,
            preferred_part: part,
        },
    })
}

/// Longest horizon priced (the JSON and the report hold one amount per month).
const MAX_MONTHS: u32 = 1200;
/// Most full reads a month (keeps every amount far inside exact decimal range).
const MAX_READS_PER_MONTH: u32 = 100_000;

/// The horizon and the reads: `--compute-at` with `--reads-per-month` or `--epochs/--over-months`.
fn reads_of(catalog: &Catalog, args: &PlanArgs) -> Result<(u32, Option<Reads>), CliError> {
    let number = |flag: &str, v: &str| -> Result<Decimal, CliError> {
        let d: Decimal = v
            .trim()
            .parse()
            .map_err(|_| usage(format!("{flag} {v:?}: give a number such as 4 or 0.5")))?;
        if d.is_sign_negative() && !d.is_zero() {
            return Err(usage(format!("{flag} {v:?} must be zero or more")));
        }
        Ok(d)
    };
    let months = args.over_months.unwrap_or(args.months);
    if months == 0 {
        let flag = ["--months", "--over-months"][usize::from(args.over_months.is_some())];
        return Err(usage(format!("{flag} 0: the horizon is at least 1 month")));
    }
    if months > MAX_MONTHS {
        return Err(usage(format!(
            "a horizon of {months} months: at most {MAX_MONTHS} (100 years)"
        )));
    }
    let Some(at) = &args.compute_at else {
        return Ok((months, None));
    };
    let per_month = match (&args.reads_per_month, &args.epochs, args.over_months) {
        (Some(r), _, _) => number("--reads-per-month", r)?,
        (None, Some(e), Some(m)) => {
            let e = number("--epochs", e)?;
            if e > Decimal::from(MAX_READS_PER_MONTH) * Decimal::from(m) {
                return Err(usage(format!(
                    "--epochs {e} over {m} months is more than {MAX_READS_PER_MONTH} reads a month"
                )));
            }
            e / Decimal::from(m)
        }
        _ => {
            return Err(usage(
                "--compute-at needs how the corpus is read: --reads-per-month R, or --epochs E --over-months M",
            ));
        }
    };
    if per_month > Decimal::from(MAX_READS_PER_MONTH) {
        return Err(usage(format!(
            "--reads-per-month {per_month}: at most {MAX_READS_PER_MONTH}"
        )));
    }
    let compute = moverctl::job::plan::compute_at(catalog, at)?;
    Ok((months, Some(Reads { compute, per_month })))
}

const DEFAULT_STREAM: &str = "90MB/s";
const DEFAULT_LATENCY_MS: u32 = 30;

pub fn run(
    catalog: &Catalog,
    config: Option<&std::path::Path>,
    args: PlanArgs,
) -> Result<(), CliError> {
    let (example, json) = (args.example, args.json);
    if args.tiering.tiering {
        return tiering(catalog, &args);
    }
    let spec = resolve(catalog, config, args)?;
    let out = moverctl::job::plan::plan(catalog, &spec, &Notes)?;
    if json {
        let v = json_of(&spec, &out);
        println!(
            "{}",
            serde_json::to_string_pretty(&v).expect("JSON values serialize")
        );
    } else {
        print_text(&spec, &out, example);
    }
    let verdict = moverctl::plan::render_during::verdict_line(out.best_assumptions(), &out.ranked);
    for n in &out.credential_notes {
        eprintln!("moverctl: {n}");
    }
    // A message after the output: on stderr when stdout is JSON.
    let say = |msg: String| {
        if json {
            eprintln!("{msg}");
        } else {
            println!("{msg}");
        }
    };
    if let Some(written) = out.report {
        say(format!("Report written to {}", written?.display()));
    }
    if let Some(saved) = out.saved {
        say(saved_message(&saved?));
    }
    if let Some(legs) = out.saved_legs {
        for (i, p) in legs?.iter().enumerate() {
            let p = p.display();
            say(format!(
                "Saved {p} (leg {}) — run it after the leg before it has finished: moverctl exec {p}",
                i + 2
            ));
        }
    }
    if !json {
        println!("{verdict}");
    }
    Ok(())
}

fn gpu_hourly_of(a: &PlanArgs) -> Result<Usd, CliError> {
    let (h, r) = (a.gpu_hourly.as_deref(), a.gpu_rate.as_deref());
    moverctl::job::plan_tiering::gpu_hourly(h, a.gpus, r)
}

/// `plan --tiering`: `--from` is the object store.
fn tiering(catalog: &Catalog, a: &PlanArgs) -> Result<(), CliError> {
    use moverctl::{job::plan_tiering as t, plan::render_tiering as r};
    let gpu = gpu_hourly_of(a)?;
    let from = (a.from.as_deref())
        .ok_or_else(|| usage("plan --tiering needs --from (the object store)"))?;
    let report = a.report.as_deref();
    let out = t::run(catalog, &a.tiering, from, gpu, a.no_probe, report)?;
    let (stdout, stderr) = r::output(&out.plan, a.json, out.report.transpose()?.as_deref());
    print!("{stdout}");
    eprint!("{stderr}");
    Ok(())
}

/// The JSON of `--json` (schema moverctl.plan/1): `assumptions` of the best-ranked destination
/// with the probe behind them, the source's probe, and every candidate's own probe (or null).
fn json_of(spec: &PlanSpec, out: &PlanOutcome) -> serde_json::Value {
    let mut v = render::json(
        &out.source,
        &spec.corpus,
        out.best_assumptions(),
        &out.ranked,
    );
    let probe = |p: Option<&ProbeUse>| {
        p.map_or(serde_json::Value::Null, moverctl::summary::plan::probe_json)
    };
    v["assumptions"]["probe"] = probe(out.best().and_then(|i| out.probes[i].as_ref()));
    v["assumptions"]["source_probe"] = probe(out.source_probe.as_ref());
    if let Some(cs) = v["candidates"].as_array_mut() {
        for (c, o) in out.ranked.iter().zip(cs.iter_mut()) {
            o["probe"] = probe(out.destination_of(c).and_then(|i| out.probes[i].as_ref()));
        }
    }
    v["hops"] = out
        .chain
        .as_ref()
        .map_or(serde_json::Value::Null, moverctl::plan::hops::json);
    v
}

/// The table, after the example's command line and a line for each probe used.
fn print_text(spec: &PlanSpec, out: &PlanOutcome, example: bool) {
    if example {
        println!("Example: moverctl plan {}\n", EXAMPLE.join(" "));
    }
    let mut shown: Vec<&PathBuf> = Vec::new();
    for p in out.source_probe.iter().chain(out.probes.iter().flatten()) {
        if !shown.contains(&&p.file) {
            shown.push(&p.file);
            println!("{}", moverctl::summary::plan::probe_line(p));
        }
    }
    print!(
        "{}",
        render::text(
            &out.source,
            &spec.corpus,
            out.best_assumptions(),
            &out.ranked
        )
    );
    if let Some(chain) = &out.chain {
        print!("\n{}", moverctl::plan::hops::text(chain));
    }
}

/// "Saved PATH (DESTINATION) — run it with: …", with the shards when the plan has them.
fn saved_message(s: &Saved) -> String {
    let path = s.path.display();
    let (exec, fill) = moverctl::summary::plan::exec_command(&s.path, &s.plan);
    let Some(sh) = &s.plan.shards else {
        return format!(
            "Saved {path} ({}) — run it with: {exec}{fill}",
            s.destination
        );
    };
    let workers = s.plan.transfer.workers;
    format!(
        "Saved {path} ({}) in {} shards (plan id {}, predicted {} per shard with {} machine{}) — run each with: {exec} --shard K/{}{fill} (or --shard auto in a Kubernetes Indexed Job or a Slurm array); exec's --bwlimit and --tpslimit apply to each shard process, not to the move; watch it with: moverctl status {path}",
        s.destination,
        sh.count,
        sh.id,
        moverctl::units::fmt_duration(sh.seconds_per_shard.parse().unwrap_or_default()),
        workers.max(1),
        if workers > 1 { "s" } else { "" },
        sh.count,
    )
}
