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
use crate::catalog::parts::{MIB, PartRule};
use crate::catalog::{Catalog, Place};
use crate::money::Usd;
use crate::plan::corpus::Corpus;
use crate::plan::file::{PlanFile, PlanInputs};
use crate::plan::horizon;
use crate::plan::horizon::{ComputeAt, Reads};
use crate::plan::model::{Assumptions, Candidate, Kind, Measured, bucket_classes, evaluate, rank};
use crate::plan::render;
use crate::plan::restore::{self, TierChoice};
use crate::units::{parse_bytes, parse_rate};
use clap::Args;
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;
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
    #[arg(long, required_unless_present = "example")]
    pub from: Option<String>,
    /// Candidate destinations, comma-separated: backblaze-b2,cloudflare-r2,wasabi:us-east-1.
    #[arg(long, value_delimiter = ',', required_unless_present = "example")]
    pub to: Vec<String>,
    /// Total size of the corpus: 2PB, 200TiB, 1.5TB.
    #[arg(long, allow_hyphen_values = true)]
    pub bytes: Option<String>,
    /// Number of objects: 40M, 1.2k, 40000000.
    #[arg(long, allow_hyphen_values = true)]
    pub objects: Option<String>,
    /// Object-size profile: shares of the object count with a typical size each,
    /// e.g. "70%:256KiB,25%:64MiB,5%:4GiB" (scaled to --bytes when given).
    #[arg(long)]
    pub profile: Option<String>,
    /// A listing of the corpus: CSV (key,size[,storage_class]) or JSON lines; streamed.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["bytes", "objects", "profile"])]
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
    /// Where the GPUs that read the corpus run: PROVIDER[:REGION] (a GPU cloud without a provider
    /// file, e.g. lambda, is priced as reached over the internet). Adds "stay" as a candidate and
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
    #[arg(long, conflicts_with_all = ["gpus", "gpu_rate"])]
    pub gpu_hourly: Option<String>,
    /// GPUs idling during the move (with --gpu-rate).
    #[arg(long, requires = "gpu_rate")]
    pub gpus: Option<u32>,
    /// USD per GPU-hour (with --gpus).
    #[arg(long, requires = "gpus")]
    pub gpu_rate: Option<String>,
    /// Assume the source's "leaving the cloud" egress waiver is granted (its conditions are printed).
    #[arg(long)]
    pub exit_waiver: bool,
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
    /// REMOTE:bucket/prefix). Without --bytes, --objects, --profile or --inventory, the location is
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
}

/// Everything `plan` needs, validated.
struct Resolved {
    from: String,
    to: Vec<String>,
    corpus: Corpus,
    assumptions: Assumptions,
}

fn usage(m: impl Into<String>) -> CliError {
    CliError::Usage(m.into())
}

fn resolve(
    catalog: &Catalog,
    config: Option<&std::path::Path>,
    mut args: PlanArgs,
    split: Option<&Corpus>,
) -> Result<(Resolved, PlanArgs), CliError> {
    if args.example {
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
        ex.ranged_reads = args.ranged_reads;
        ex.no_server_side = args.no_server_side;
        ex.report = args.report.take();
        args = ex;
    }
    let from = args
        .from
        .clone()
        .ok_or_else(|| usage("--from is required"))?;
    let to: Vec<String> = args
        .to
        .iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if to.is_empty() {
        return Err(usage("--to needs at least one destination"));
    }
    let corpus = match &args.inventory {
        _ if split.is_some() => split.cloned().expect("checked"),
        Some(path) => {
            let format = super::shard_cmd::inventory_format(&args)?;
            Corpus::from_inventory(path, format)?
        }
        None => match &args.src {
            Some(loc)
                if args.bytes.is_none() && args.objects.is_none() && args.profile.is_none() =>
            {
                list_corpus(config, loc)?
            }
            _ => Corpus::from_flags(
                args.bytes.as_deref(),
                args.objects.as_deref(),
                args.profile.as_deref(),
            )?,
        },
    };
    let rate = |flag: &str, v: &str| parse_rate(v).map_err(|e| usage(format!("{flag}: {e}")));
    let size = |flag: &str, v: &str| parse_bytes(v).map_err(|e| usage(format!("{flag}: {e}")));
    let usd = |flag: &str, v: &str| Usd::parse(v).map_err(|e| usage(format!("{flag}: {e}")));
    let positive = |flag: &str, v: u32| {
        if v == 0 {
            Err(usage(format!("{flag} must be at least 1")))
        } else {
            Ok(v)
        }
    };
    let gpu_hourly = match (&args.gpu_hourly, args.gpus, &args.gpu_rate) {
        (Some(h), _, _) => usd("--gpu-hourly", h)?,
        (None, Some(n), Some(r)) => usd("--gpu-rate", r)? * Decimal::from(n),
        _ => Usd::ZERO,
    };
    let part = size("--part-size", &args.part_size)?;
    if part < MIB {
        return Err(usage("--part-size must be at least 1MiB"));
    }
    let (months, reads) = reads_of(catalog, &args)?;
    let assumptions = Assumptions {
        months,
        reads,
        restore: None,
        measured: None,
        server_side: !args.no_server_side,
        same_service: same_service(config, args.src.as_deref(), args.dst.as_deref()),
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
        part_rule: PartRule {
            threshold: size("--multipart-threshold", &args.multipart_threshold)?,
            preferred_part: part,
        },
    };
    Ok((
        Resolved {
            from,
            to,
            corpus,
            assumptions,
        },
        args,
    ))
}

/// Whether `--src` and `--dst` are one S3 service (the same endpoint), when both are given and
/// resolve; `None` otherwise (the catalog places decide).
fn same_service(
    config: Option<&std::path::Path>,
    src: Option<&str>,
    dst: Option<&str>,
) -> Option<bool> {
    let (src, dst) = (src?, dst?);
    let remotes = crate::store::config::Remotes::load(config).ok()?;
    let a = crate::store::identity_of(src, &remotes).ok()?;
    let b = crate::store::identity_of(dst, &remotes).ok()?;
    Some(crate::transfer::server_side::one_service(&a, &b))
}

/// List `loc` once into a size histogram: streamed, constant memory, progress on stderr every
/// second. A listing carries no storage classes, so every object is priced as the `--from` class.
fn list_corpus(config: Option<&std::path::Path>, loc: &str) -> Result<Corpus, CliError> {
    use crate::store::list::{Listed, list};
    use futures::StreamExt;
    let remotes = crate::store::config::Remotes::load(config)?;
    let store = crate::store::Store::open(loc, &remotes)?;
    let shown = store.shown();
    let rt = super::runtime()?;
    let started = std::time::Instant::now();
    let (corpus, refused) = rt.block_on(async {
        let mut b = crate::plan::corpus::CorpusBuilder::default();
        let mut refused = 0u64;
        let mut stream = list(&store);
        let mut last = std::time::Instant::now();
        while let Some(item) = stream.next().await {
            match item? {
                Listed::Object(e) => b.add(e.size, None),
                Listed::Refused { key, reason } => {
                    refused += 1;
                    eprintln!("moverctl: cannot handle key {key:?}: {reason}; not counted");
                }
            }
            if last.elapsed() >= std::time::Duration::from_secs(1) {
                last = std::time::Instant::now();
                eprintln!(
                    "listing {shown}: {} objects, {} so far",
                    crate::units::fmt_count(b.objects()),
                    crate::units::fmt_bytes(b.bytes())
                );
            }
        }
        Ok::<_, CliError>((b, refused))
    })?;
    eprintln!(
        "listed {shown}: {} objects, {} in {:.1} s{}",
        crate::units::fmt_count(corpus.objects()),
        crate::units::fmt_bytes(corpus.bytes()),
        started.elapsed().as_secs_f64(),
        if refused > 0 {
            format!(" ({refused} keys refused, not counted)")
        } else {
            String::new()
        }
    );
    Ok(corpus.finish(format!("listing {shown}"))?)
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
    if args.over_months == Some(0) {
        return Err(usage("--over-months must be at least 1"));
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
    Ok((
        months,
        Some(Reads {
            compute: compute_at(catalog, at)?,
            per_month,
        }),
    ))
}

/// `PROVIDER[:REGION]` of the compute location. A provider with a catalog file must name one of its
/// regions (default: its default region); any other name is a place reached over the internet.
fn compute_at(catalog: &Catalog, given: &str) -> Result<ComputeAt, CliError> {
    let given = given.trim();
    let (pid, region) = match given.split_once(':') {
        Some((p, r)) => (p.trim(), Some(r.trim())),
        None => (given, None),
    };
    if pid.is_empty()
        || !pid
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        || given.contains('/')
    {
        return Err(usage(format!(
            "--compute-at {given:?}: give PROVIDER[:REGION], e.g. coreweave or aws:us-east-1 (no storage class)"
        )));
    }
    match catalog.get(pid) {
        Ok(p) => {
            let region = region.unwrap_or(&p.file.default_region);
            if !p.file.regions.iter().any(|r| r.id == region) {
                return Err(usage(format!(
                    "--compute-at {given:?}: {pid} has no region {region:?}; its regions: {}",
                    p.file
                        .regions
                        .iter()
                        .map(|r| r.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            Ok(ComputeAt {
                given: given.to_string(),
                provider: pid.to_string(),
                region: Some(region.to_string()),
                in_catalog: true,
            })
        }
        Err(_) => Ok(ComputeAt {
            given: given.to_string(),
            provider: pid.to_string(),
            region: region.map(str::to_string),
            in_catalog: false,
        }),
    }
}

const DEFAULT_STREAM: &str = "90MB/s";
const DEFAULT_LATENCY_MS: u32 = 30;

/// A saved probe applied to one destination: what it measured, as the planner uses it.
#[derive(Debug, Clone)]
struct ProbeUse {
    location: String,
    provider: String,
    timestamp: String,
    file: PathBuf,
    /// Applied unless `--latency-ms` was given.
    latency_ms: Option<u32>,
    /// Applied unless `--stream-throughput` was given; bytes/s.
    stream: Option<Decimal>,
    /// The whole probe, for its measured bounds (request rate, aggregate throughput, CPU).
    report: crate::probe::ProbeReport,
}

/// A measured f64 as an exact decimal (4 places), when it is a positive finite number.
fn dec_of(v: Option<f64>) -> Option<Decimal> {
    use rust_decimal::prelude::FromPrimitive;
    v.filter(|x| x.is_finite() && *x > 0.0)
        .and_then(Decimal::from_f64)
        .map(|d| d.round_dp(4))
}

/// The bounds the source's and a destination's probes measured, at `in_flight` objects in
/// flight; the engine's CPU from the destination's probe, else the source's.
fn measured_of(
    src: Option<&ProbeUse>,
    dst: Option<&ProbeUse>,
    in_flight: usize,
) -> Option<Measured> {
    if src.is_none() && dst.is_none() {
        return None;
    }
    let s = src.map(|p| &p.report);
    let d = dst.map(|p| &p.report);
    let cpu = d
        .and_then(|r| r.client_cpu.clone())
        .or_else(|| s.and_then(|r| r.client_cpu.clone()));
    Some(Measured {
        source_get_per_second: dec_of(s.and_then(|r| r.get_rate_at(in_flight))),
        destination_put_per_second: dec_of(d.and_then(|r| r.put_rate_at(in_flight))),
        source_get_peak_per_second: dec_of(s.and_then(|r| r.get_rate_at(usize::MAX))),
        destination_put_peak_per_second: dec_of(d.and_then(|r| r.put_rate_at(usize::MAX))),
        source_get_one_seconds: dec_of(s.and_then(|r| r.get_rate_at(1)).map(|r| 1.0 / r)),
        destination_put_one_seconds: dec_of(d.and_then(|r| r.put_rate_at(1)).map(|r| 1.0 / r)),
        source_get_bytes_per_second: dec_of(s.and_then(|r| r.multi_stream_get_bytes_per_sec)),
        destination_put_bytes_per_second: dec_of(d.and_then(|r| r.multi_stream_bytes_per_sec)),
        cpu_seconds_per_gib: dec_of(cpu.as_ref().and_then(|c| c.copy_seconds_per_gib)),
        hash_cpu_seconds_per_gib: dec_of(cpu.as_ref().and_then(|c| c.hash_copy_seconds_per_gib)),
        cores: cpu.map_or(1, |c| c.cores.max(1) as u32),
        shared_host: s.is_some_and(|r| r.on_this_machine) && d.is_some_and(|r| r.on_this_machine),
    })
}

impl ProbeUse {
    /// The probe of `location` (or of a folder above it) when one was saved, else the newest of
    /// `provider`.
    fn find(provider: &str, location: Option<&str>, args: &PlanArgs) -> Option<ProbeUse> {
        let (file, r) = location
            .and_then(|l| crate::probe::saved::covering(provider, l))
            .or_else(|| crate::probe::saved::newest(provider))?;
        let latency_ms = match (args.latency_ms, r.latency_ms) {
            (None, Some(ms)) if ms.is_finite() && ms >= 0.0 => Some((ms.ceil() as u32).max(1)),
            _ => None,
        };
        let stream = match (&args.stream_throughput, r.per_stream_bytes_per_sec()) {
            (None, Some(b)) if b.is_finite() && b >= 1.0 => Some(Decimal::from(b.round() as u64)),
            _ => None,
        };
        if latency_ms.is_none() && stream.is_none() && r.request_rate.is_empty() {
            return None;
        }
        Some(ProbeUse {
            location: r.location.clone(),
            provider: provider.to_string(),
            timestamp: r.timestamp.clone(),
            file,
            latency_ms,
            stream,
            report: r,
        })
    }

    fn apply(&self, a: &Assumptions) -> Assumptions {
        let mut a = a.clone();
        if let Some(ms) = self.latency_ms {
            a.latency_ms = ms;
        }
        if let Some(s) = self.stream {
            a.stream_throughput = s;
        }
        a
    }

    fn date(&self) -> String {
        chrono::DateTime::parse_from_rfc3339(&self.timestamp)
            .map(|t| {
                t.with_timezone(&chrono::Utc)
                    .format("%Y-%m-%d %H:%M UTC")
                    .to_string()
            })
            .unwrap_or_else(|_| self.timestamp.clone())
    }

    fn line(&self) -> String {
        let mut parts = Vec::new();
        if let Some(ms) = self.latency_ms {
            parts.push(format!("latency {ms} ms"));
        }
        if let Some(s) = self.stream {
            parts.push(format!(
                "stream {}/s",
                crate::units::fmt_bytes(s.to_u64().unwrap_or(u64::MAX))
            ));
        }
        format!(
            "using probe of {} ({}): {}",
            self.location,
            self.date(),
            parts.join(", ")
        )
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "location": self.location,
            "provider": self.provider,
            "timestamp": self.timestamp,
            "file": self.file.display().to_string(),
            "latency_ms": self.latency_ms,
            "stream_throughput_bytes_per_second": self.stream.and_then(|s| s.to_u64()),
        })
    }
}

#[derive(clap::Parser)]
struct ExampleParser {
    #[command(flatten)]
    args: PlanArgs,
}

pub fn run(
    catalog: &Catalog,
    config: Option<&std::path::Path>,
    args: PlanArgs,
) -> Result<(), CliError> {
    let example = args.example;
    let split = super::shard_cmd::split_for(&args, config)?;
    let (r, args) = resolve(catalog, config, args, split.as_ref().map(|s| &s.corpus))?;
    let src = Place::resolve(catalog, &r.from)?;
    let mut r = r;
    if let Some(t) = &args.restore_tier {
        let choice = TierChoice::parse(t).map_err(usage)?;
        r.assumptions.restore = restore::choose(
            &src,
            &r.corpus,
            &bucket_classes(&src, &r.corpus),
            choice,
            r.assumptions.gpu_hourly,
        )
        .map_err(usage)?;
        if r.assumptions.restore.is_none() {
            eprintln!(
                "note: --restore-tier {t}: no object of the corpus is in an archive class at {}; nothing to restore",
                src.canonical()
            );
        }
    }
    let dests: Vec<Place> =
        r.to.iter()
            .map(|d| Place::resolve(catalog, d))
            .collect::<Result<_, _>>()?;
    // Each destination is timed with its own provider's probe (the probe of `--dst` when one was
    // saved for it), and with the source's probe (of `--src`, else the newest of its provider)
    // for the source's request rate and throughput.
    let use_probes = !example && !args.no_probe;
    let src_probe = use_probes
        .then(|| ProbeUse::find(&src.provider.file.id, args.src.as_deref(), &args))
        .flatten();
    let probes: Vec<Option<ProbeUse>> = dests
        .iter()
        .map(|d| {
            let loc = (dests.len() == 1).then_some(args.dst.as_deref()).flatten();
            use_probes
                .then(|| ProbeUse::find(&d.provider.file.id, loc, &args))
                .flatten()
        })
        .collect();
    let in_flight = (r.assumptions.concurrency.max(1) as usize)
        .saturating_mul(r.assumptions.workers.max(1) as usize);
    let assumed: Vec<Assumptions> = probes
        .iter()
        .map(|p| {
            let mut a = p
                .as_ref()
                .map_or(r.assumptions.clone(), |p| p.apply(&r.assumptions));
            a.measured = measured_of(src_probe.as_ref(), p.as_ref(), in_flight);
            a
        })
        .collect();
    let cands: Vec<Candidate> = dests
        .iter()
        .zip(&assumed)
        .map(|(d, a)| evaluate(&src, d, &r.corpus, a))
        .collect();
    let ranked = match &r.assumptions.reads {
        Some(_) => horizon::move_or_stay(
            cands,
            horizon::stay(&src, &r.corpus, &r.assumptions),
            r.assumptions.months,
        ),
        None => rank(cands),
    };
    // The destination a move candidate came from ("stay" has none).
    let index_of = |c: &Candidate| {
        (c.kind == Kind::Move).then(|| {
            dests
                .iter()
                .position(|d| d.canonical() == c.resolved)
                .expect("every move comes from a destination")
        })
    };
    let best = ranked.iter().find_map(index_of);
    let best_assumptions = best.map_or(&r.assumptions, |i| &assumed[i]);
    if args.json {
        let mut v = render::json(&src, &r.corpus, best_assumptions, &ranked);
        v["assumptions"]["probe"] = best
            .and_then(|i| probes[i].as_ref())
            .map_or(serde_json::Value::Null, ProbeUse::json);
        v["assumptions"]["source_probe"] = src_probe
            .as_ref()
            .map_or(serde_json::Value::Null, ProbeUse::json);
        if let Some(cs) = v["candidates"].as_array_mut() {
            for (c, out) in ranked.iter().zip(cs.iter_mut()) {
                out["probe"] = index_of(c)
                    .and_then(|i| probes[i].as_ref())
                    .map_or(serde_json::Value::Null, ProbeUse::json);
            }
        }
        println!(
            "{}",
            serde_json::to_string_pretty(&v).expect("JSON values serialize")
        );
    } else {
        if example {
            println!("Example: moverctl plan {}\n", EXAMPLE.join(" "));
        }
        let mut shown: Vec<&PathBuf> = Vec::new();
        for p in src_probe.iter().chain(probes.iter().flatten()) {
            if !shown.contains(&&p.file) {
                shown.push(&p.file);
                println!("{}", p.line());
            }
        }
        print!(
            "{}",
            render::text(&src, &r.corpus, best_assumptions, &ranked)
        );
    }
    // Credentials that would not last the move (issue 26).
    if let Some(best) = ranked.iter().find(|c| c.kind == Kind::Move) {
        let seconds = best.time.seconds.to_u64().unwrap_or(u64::MAX);
        if let Ok(remotes) = crate::store::config::Remotes::load(config) {
            for loc in [args.src.as_deref(), args.dst.as_deref()]
                .into_iter()
                .flatten()
            {
                if let Ok(l @ crate::store::location::Location::S3 { .. }) =
                    crate::store::location::Location::parse(loc, &remotes)
                    && let Some(n) = crate::store::creds::lifetime_note(
                        &l.shown(),
                        crate::store::remote_of(&l, &remotes),
                        seconds,
                    )
                {
                    eprintln!("moverctl: {n}");
                }
            }
        }
    }
    if let Some(path) = &args.report {
        let mut places: Vec<Place> = vec![src.clone()];
        places.extend(dests.iter().cloned());
        if let Some(r) = &r.assumptions.reads
            && r.compute.in_catalog
        {
            places.push(Place::resolve(catalog, &r.compute.canonical())?);
        }
        let generated = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        let page = crate::plan::report::html(
            &src,
            &places,
            &r.corpus,
            &r.assumptions,
            &ranked,
            &generated,
        );
        std::fs::write(path, page).map_err(|e| {
            CliError::Failure(format!("--report {}: cannot write it: {e}", path.display()))
        })?;
        let msg = format!("Report written to {}", path.display());
        if args.json {
            eprintln!("{msg}");
        } else {
            println!("{msg}");
        }
    }
    if let Some(name) = &args.save {
        let idx = match &args.pick {
            None => ranked
                .iter()
                .position(|c| c.kind == Kind::Move)
                .ok_or_else(|| usage("--save: no destination to move to"))?,
            Some(p) if p == "stay" => {
                return Err(usage(
                    "--pick stay: staying is not a move, so there is no plan to save; pick a destination",
                ));
            }
            Some(p) => ranked
                .iter()
                .position(|c| {
                    c.kind == Kind::Move
                        && (&c.destination == p || &c.resolved == p || c.provider == *p)
                })
                .ok_or_else(|| {
                    usage(format!(
                        "--pick {p:?} is not one of the destinations: {}",
                        ranked
                            .iter()
                            .map(|c| c.destination.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?,
        };
        let chosen = &ranked[idx];
        let dst_index = index_of(chosen).expect("a saved plan is a move");
        let dst_place = &dests[dst_index];
        let others: Vec<Candidate> = ranked
            .iter()
            .enumerate()
            .filter(|(i, c)| *i != idx && c.kind == Kind::Move)
            .map(|(_, c)| c.clone())
            .collect();
        let mut plan = PlanFile::build(PlanInputs {
            catalog,
            source: &src,
            source_location: args.src.clone(),
            destination: dst_place,
            destination_location: args.dst.clone(),
            corpus_bytes: r.corpus.total_bytes(),
            corpus_objects: r.corpus.total_objects(),
            corpus_origin: r.corpus.origin.clone(),
            assumptions: &assumed[dst_index],
            chosen,
            others: &others,
            created: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        })?;
        if let Some(split) = split {
            plan.shards = Some(super::shard_cmd::table(split, &plan, args.progress.clone()));
        }
        let name = name.trim_end_matches(".toml");
        if name.is_empty() || name.contains('/') || name.contains('\\') || name.starts_with('.') {
            return Err(usage(format!(
                "--save {name:?}: give a plain name (the file goes to {}/NAME.toml)",
                args.plans_dir.display()
            )));
        }
        let path = args.plans_dir.join(format!("{name}.toml"));
        plan.save(&path)?;
        let msg = match &plan.shards {
            None => format!(
                "Saved {} ({}) — run it with: moverctl exec {}",
                path.display(),
                chosen.resolved,
                path.display()
            ),
            Some(sh) => format!(
                "Saved {} ({}) in {} shards (plan id {}, predicted {} per shard with {} machine{}) — run each with: moverctl exec {} --shard K/{} (or --shard auto in a Kubernetes Indexed Job or a Slurm array); exec's --bwlimit and --tpslimit apply to each shard process, not to the move; watch it with: moverctl status {}",
                path.display(),
                chosen.resolved,
                sh.count,
                sh.id,
                crate::units::fmt_duration(sh.seconds_per_shard.parse().unwrap_or_default()),
                plan.transfer.workers.max(1),
                if plan.transfer.workers > 1 { "s" } else { "" },
                path.display(),
                sh.count,
                path.display()
            ),
        };
        if args.json {
            eprintln!("{msg}");
        } else {
            println!("{msg}");
        }
    }
    Ok(())
}
