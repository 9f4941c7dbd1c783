//! `moverctl plan`: flags → resolved options (validated once) → planner → table / JSON / plan file.

use super::CliError;
use crate::catalog::parts::{MIB, PartRule};
use crate::catalog::{Catalog, Place};
use crate::money::Usd;
use crate::plan::corpus::{Corpus, InventoryFormat};
use crate::plan::file::{PlanFile, PlanInputs};
use crate::plan::model::{Assumptions, Candidate, evaluate, rank};
use crate::plan::render;
use crate::units::{parse_bytes, parse_rate};
use clap::Args;
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
    /// Months of destination storage to price.
    #[arg(long, default_value_t = 12)]
    pub months: u32,
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
    /// Throughput one HTTP stream sustains.
    #[arg(long, default_value = "90MB/s")]
    pub stream_throughput: String,
    /// Time to first byte per request, in milliseconds.
    #[arg(long, default_value_t = 30)]
    pub latency_ms: u32,
    /// Key prefixes the corpus is spread over (per-prefix request limits scale with it).
    #[arg(long, default_value_t = 1)]
    pub prefixes: u32,
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
    /// Source location to record in the plan (s3://bucket/prefix, gs://…, az://…, a path).
    #[arg(long, value_name = "LOCATION")]
    pub src: Option<String>,
    /// Destination location to record in the plan.
    #[arg(long, value_name = "LOCATION")]
    pub dst: Option<String>,
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

fn resolve(mut args: PlanArgs) -> Result<(Resolved, PlanArgs), CliError> {
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
        Some(path) => {
            let format = match args.inventory_format.as_str() {
                "auto" => InventoryFormat::Auto,
                "csv" => InventoryFormat::Csv,
                "jsonl" | "json" => InventoryFormat::JsonLines,
                "s3" => InventoryFormat::S3Inventory(
                    args.s3_columns
                        .split(',')
                        .map(|s| s.trim().to_string())
                        .collect(),
                ),
                other => {
                    return Err(usage(format!(
                        "--inventory-format {other:?}: use auto, csv, jsonl or s3"
                    )));
                }
            };
            Corpus::from_inventory(path, format)?
        }
        None => Corpus::from_flags(
            args.bytes.as_deref(),
            args.objects.as_deref(),
            args.profile.as_deref(),
        )?,
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
    let assumptions = Assumptions {
        months: args.months,
        bandwidth: rate("--bandwidth", &args.bandwidth)?,
        workers: positive("--workers", args.workers)?,
        worker_nic: rate("--worker-nic", &args.worker_nic)?,
        concurrency: positive("--concurrency", args.concurrency)?,
        stream_throughput: rate("--stream-throughput", &args.stream_throughput)?,
        latency_ms: args.latency_ms,
        prefixes: positive("--prefixes", args.prefixes)?,
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

#[derive(clap::Parser)]
struct ExampleParser {
    #[command(flatten)]
    args: PlanArgs,
}

pub fn run(catalog: &Catalog, args: PlanArgs) -> Result<(), CliError> {
    let example = args.example;
    let (r, args) = resolve(args)?;
    let src = Place::resolve(catalog, &r.from)?;
    let dests: Vec<Place> =
        r.to.iter()
            .map(|d| Place::resolve(catalog, d))
            .collect::<Result<_, _>>()?;
    let cands: Vec<Candidate> = dests
        .iter()
        .map(|d| evaluate(&src, d, &r.corpus, &r.assumptions))
        .collect();
    let ranked = rank(cands);
    if args.json {
        let v = render::json(&src, &r.corpus, &r.assumptions, &ranked);
        println!(
            "{}",
            serde_json::to_string_pretty(&v).expect("JSON values serialize")
        );
    } else {
        if example {
            println!("Example: moverctl plan {}\n", EXAMPLE.join(" "));
        }
        print!("{}", render::text(&src, &r.corpus, &r.assumptions, &ranked));
    }
    if let Some(name) = &args.save {
        let idx = match &args.pick {
            None => 0,
            Some(p) => ranked
                .iter()
                .position(|c| &c.destination == p || &c.resolved == p || c.provider == *p)
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
        let dst_place = dests
            .iter()
            .find(|d| d.canonical() == chosen.resolved)
            .expect("every candidate comes from a destination");
        let others: Vec<Candidate> = ranked
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != idx)
            .map(|(_, c)| c.clone())
            .collect();
        let plan = PlanFile::build(PlanInputs {
            catalog,
            source: &src,
            source_location: args.src.clone(),
            destination: dst_place,
            destination_location: args.dst.clone(),
            corpus_bytes: r.corpus.total_bytes(),
            corpus_objects: r.corpus.total_objects(),
            corpus_origin: r.corpus.origin.clone(),
            assumptions: &r.assumptions,
            chosen,
            others: &others,
            created: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        })?;
        let name = name.trim_end_matches(".toml");
        if name.is_empty() || name.contains('/') || name.contains('\\') || name.starts_with('.') {
            return Err(usage(format!(
                "--save {name:?}: give a plain name (the file goes to {}/NAME.toml)",
                args.plans_dir.display()
            )));
        }
        let path = args.plans_dir.join(format!("{name}.toml"));
        plan.save(&path)?;
        let msg = format!(
            "Saved {} ({}) — run it with: moverctl exec {}",
            path.display(),
            chosen.resolved,
            path.display()
        );
        if args.json {
            eprintln!("{msg}");
        } else {
            println!("{msg}");
        }
    }
    Ok(())
}
