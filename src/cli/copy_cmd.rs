//! `moverctl copy SRC DST` and `moverctl exec PLAN`: the copy engine with flags resolved once.

use super::CliError;
use super::exit::Exit;
use crate::catalog::parts::{DEFAULT_MULTIPART_THRESHOLD, DEFAULT_PART_SIZE, MIB, PartRule};
use crate::catalog::{Catalog, Limits as StoreLimits};
use crate::journal::{self, Journal};
use crate::limit::Limits;
use crate::plan::file::PlanFile;
use crate::store::Store;
use crate::store::config::Remotes;
use crate::transfer::{CopyOptions, Event, Report, Run, Verify};
use crate::units::{fmt_bytes, fmt_duration, parse_bytes, parse_rate};
use clap::Args;
use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

#[derive(Debug, Args, Clone)]
pub struct EngineArgs {
    /// Objects copied at the same time.
    #[arg(long, default_value_t = 32)]
    pub transfers: usize,
    /// Parts of one large object in flight at the same time.
    #[arg(long, default_value_t = 4)]
    pub part_concurrency: usize,
    /// Preferred multipart part size (raised to fit the destination's limits).
    #[arg(long)]
    pub part_size: Option<String>,
    /// Objects above this size are uploaded in parts.
    #[arg(long)]
    pub multipart_threshold: Option<String>,
    /// Upper bound for part buffers held in memory across the run.
    #[arg(long, default_value = "1GiB")]
    pub max_buffer: String,
    /// Bandwidth limit over the whole run, e.g. 200MiB/s or 1Gbps.
    #[arg(long)]
    pub bwlimit: Option<String>,
    /// Requests per second over the whole run.
    #[arg(long)]
    pub tpslimit: Option<u32>,
    /// Attempts after the first for an object that failed.
    #[arg(long, default_value_t = 3)]
    pub retries: u32,
    /// auto: ETags, stored digests and HEAD; readback: read every object back and compare.
    #[arg(long, default_value = "auto")]
    pub verify: String,
    /// Show what would be copied and skipped, and why; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Only keys matching this glob (repeatable), e.g. 'ckpt/**/*.safetensors'.
    #[arg(long)]
    pub include: Vec<String>,
    /// Leave out keys matching this glob (repeatable).
    #[arg(long)]
    pub exclude: Vec<String>,
    /// Journal file (default: in the state folder, named after source and destination).
    #[arg(long, value_name = "FILE")]
    pub journal: Option<PathBuf>,
    /// One JSON object per line for each object, then a summary.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CopyArgs {
    /// Where to read: s3://…, gs://…, az://…, a path, or REMOTE:bucket/prefix.
    pub src: String,
    /// Where to write.
    pub dst: String,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// A plan file written by `moverctl plan --save`.
    pub plan: PathBuf,
    /// Source location, when the plan has none (or to override it).
    #[arg(long)]
    pub src: Option<String>,
    /// Destination location, when the plan has none (or to override it).
    #[arg(long)]
    pub dst: Option<String>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

fn usage(m: impl Into<String>) -> CliError {
    CliError::Usage(m.into())
}

fn globs(flag: &str, pats: &[String]) -> Result<Option<globset::GlobSet>, CliError> {
    if pats.is_empty() {
        return Ok(None);
    }
    let mut b = globset::GlobSetBuilder::new();
    for p in pats {
        let g = globset::GlobBuilder::new(p)
            .literal_separator(true)
            .build()
            .map_err(|e| usage(format!("{flag} {p:?}: {e}")))?;
        b.add(g);
    }
    b.build()
        .map(Some)
        .map_err(|e| usage(format!("{flag}: {e}")))
}

fn default_limits(catalog: &Catalog, dst: &Store) -> StoreLimits {
    let id = dst.provider.as_deref().unwrap_or("onprem");
    catalog
        .get(id)
        .or_else(|_| catalog.get("onprem"))
        .map(|p| p.file.limits.clone())
        .expect("the catalog has onprem")
}

struct Resolved {
    opts: CopyOptions,
    limits: Limits,
    journal_path: PathBuf,
    json: bool,
}

fn resolve(
    e: &EngineArgs,
    catalog: &Catalog,
    src: &Store,
    dst: &Store,
    plan: Option<&PlanFile>,
) -> Result<Resolved, CliError> {
    let size = |flag: &str, v: &str| parse_bytes(v).map_err(|m| usage(format!("{flag}: {m}")));
    if e.transfers == 0 || e.part_concurrency == 0 {
        return Err(usage(
            "--transfers and --part-concurrency must be at least 1",
        ));
    }
    let mut dst_limits = default_limits(catalog, dst);
    let mut rule = PartRule {
        threshold: DEFAULT_MULTIPART_THRESHOLD,
        preferred_part: DEFAULT_PART_SIZE,
    };
    if let Some(p) = plan {
        rule = p.part_rule();
        let t = &p.transfer;
        dst_limits.max_parts = t.max_parts;
        dst_limits.min_part_bytes = t.min_part_bytes;
        dst_limits.max_part_bytes = t.max_part_bytes;
        dst_limits.max_object_bytes = t.max_object_bytes;
        dst_limits.max_single_put_bytes = t.max_single_put_bytes;
        dst_limits.equal_part_sizes = t.equal_part_sizes;
    }
    if let Some(v) = &e.part_size {
        rule.preferred_part = size("--part-size", v)?;
        if rule.preferred_part < MIB {
            return Err(usage("--part-size must be at least 1MiB"));
        }
    }
    if let Some(v) = &e.multipart_threshold {
        rule.threshold = size("--multipart-threshold", v)?;
    }
    let max_buffer = size("--max-buffer", &e.max_buffer)?;
    if max_buffer < rule.preferred_part.max(dst_limits.min_part_bytes) {
        return Err(usage(format!(
            "--max-buffer {} is smaller than one part ({}); raise it or lower --part-size",
            e.max_buffer,
            fmt_bytes(rule.preferred_part)
        )));
    }
    let verify = match e.verify.as_str() {
        "auto" => Verify::Auto,
        "readback" => Verify::Readback,
        o => return Err(usage(format!("--verify {o:?}: use auto or readback"))),
    };
    let bw = match &e.bwlimit {
        Some(v) => {
            let r = parse_rate(v).map_err(|m| usage(format!("--bwlimit: {m}")))?;
            Some(r.round().to_u64().unwrap_or(u64::MAX).max(1))
        }
        None => None,
    };
    if e.tpslimit == Some(0) {
        return Err(usage("--tpslimit must be at least 1"));
    }
    let limits = Limits::new(bw, e.tpslimit).with_concurrency(e.transfers);
    let journal_path = e.journal.clone().unwrap_or_else(|| {
        journal::default_path(&journal::state_dir(), &src.shown(), &dst.shown())
    });
    Ok(Resolved {
        opts: CopyOptions {
            transfers: e.transfers,
            part_concurrency: e.part_concurrency,
            part_rule: rule,
            dst_limits,
            max_buffer,
            retries: e.retries,
            verify,
            dry_run: e.dry_run,
            include: globs("--include", &e.include)?,
            exclude: globs("--exclude", &e.exclude)?,
        },
        limits,
        journal_path,
        json: e.json,
    })
}

pub fn run_copy(catalog: &Catalog, remotes: &Remotes, args: CopyArgs) -> Result<Exit, CliError> {
    let src = Store::open(&args.src, remotes)?;
    let dst = Store::open(&args.dst, remotes)?;
    let r = resolve(&args.engine, catalog, &src, &dst, None)?;
    drive(src, dst, r, None)
}

pub fn run_exec(catalog: &Catalog, remotes: &Remotes, args: ExecArgs) -> Result<Exit, CliError> {
    let plan = PlanFile::load(&args.plan)?;
    let src_loc = args
        .src
        .clone()
        .or_else(|| plan.source.location.clone())
        .ok_or_else(|| {
            usage(format!(
                "{} has no source location: pass --src LOCATION",
                args.plan.display()
            ))
        })?;
    let dst_loc = args
        .dst
        .clone()
        .or_else(|| plan.destination.location.clone())
        .ok_or_else(|| {
            usage(format!(
                "{} has no destination location: pass --dst LOCATION",
                args.plan.display()
            ))
        })?;
    let src = Store::open(&src_loc, remotes)?;
    let dst = Store::open(&dst_loc, remotes)?;
    let r = resolve(&args.engine, catalog, &src, &dst, Some(&plan))?;
    drive(src, dst, r, Some(&plan))
}

fn drive(src: Store, dst: Store, r: Resolved, plan: Option<&PlanFile>) -> Result<Exit, CliError> {
    let rt = super::runtime()?;
    let journal = if r.opts.dry_run {
        None
    } else {
        Some(
            Journal::open(&r.journal_path, &src.shown(), &dst.shown())
                .map_err(|e| CliError::Failure(e.to_string()))?,
        )
    };
    let src_shown = src.shown();
    let dst_shown = dst.shown();
    let json = r.json;
    let stop = Arc::new(AtomicBool::new(false));
    let report = rt.block_on(async {
        let stop2 = stop.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!(
                    "moverctl: stopping after the objects in flight (Ctrl-C again to abort now)"
                );
                stop2.store(true, Relaxed);
                if tokio::signal::ctrl_c().await.is_ok() {
                    std::process::exit(130);
                }
            }
        });
        let progress = Progress::new(json, plan.map(|p| p.corpus.bytes));
        let run = Run {
            src,
            dst,
            opts: r.opts.clone(),
            limits: r.limits.clone(),
            journal,
            stop,
        };
        let out = std::io::stdout();
        let res = run
            .run(|ev| {
                progress.event(ev);
                if json {
                    let line = event_json(ev);
                    let mut o = out.lock();
                    let _ = writeln!(o, "{line}");
                }
            })
            .await;
        progress.finish();
        res
    });
    let report = report.map_err(|e| CliError::Failure(e.to_string()))?;
    if json {
        println!("{}", summary_json(&report, plan));
    } else {
        eprint!(
            "{}",
            summary_text(&report, &src_shown, &dst_shown, &r, plan)
        );
    }
    Ok(if report.interrupted {
        Exit::Interrupted
    } else if !report.failed.is_empty() || !report.refused.is_empty() {
        Exit::Partial
    } else {
        Exit::Success
    })
}

fn event_json(ev: &Event) -> String {
    let v = match ev {
        Event::Copied {
            key,
            bytes,
            verified_by,
        } => {
            serde_json::json!({"event": "copied", "key": key, "bytes": bytes, "verified_by": verified_by})
        }
        Event::Skipped { key, bytes, reason } => {
            serde_json::json!({"event": "skipped", "key": key, "bytes": bytes, "reason": reason})
        }
        Event::WouldCopy { key, bytes, reason } => {
            serde_json::json!({"event": "would_copy", "key": key, "bytes": bytes, "reason": reason})
        }
        Event::Failed { key, error } => {
            serde_json::json!({"event": "failed", "key": key, "error": error})
        }
        Event::Refused { key, reason } => {
            serde_json::json!({"event": "refused", "key": key, "reason": reason})
        }
    };
    v.to_string()
}

fn summary_json(r: &Report, plan: Option<&PlanFile>) -> String {
    serde_json::json!({
        "event": "summary",
        "dry_run": r.dry_run,
        "interrupted": r.interrupted,
        "copied": {"objects": r.copied, "bytes": r.copied_bytes},
        "skipped": {"objects": r.skipped, "bytes": r.skipped_bytes},
        "failed": {"objects": r.failed.len(), "bytes": r.failed_bytes,
                   "keys": r.failed.iter().take(100).map(|f| serde_json::json!({"key": f.key, "error": f.error})).collect::<Vec<_>>()},
        "refused": r.refused.iter().take(100).map(|f| serde_json::json!({"key": f.key, "reason": f.error})).collect::<Vec<_>>(),
        "filtered": r.filtered,
        "verified_by": r.verified_by,
        "reasons": r.reasons,
        "requests": {"list_source": r.requests_list_src, "list_destination": r.requests_list_dst,
                     "get": r.requests_get, "put": r.requests_put, "head": r.requests_head},
        "resumed_parts": r.resumed_parts,
        "retries": r.retries,
        "throttle_events": r.throttle_events,
        "seconds": r.elapsed.as_secs_f64(),
        "predicted_seconds": plan.map(|p| p.prediction.seconds.clone()),
    })
    .to_string()
}

fn summary_text(
    r: &Report,
    src: &str,
    dst: &str,
    res: &Resolved,
    plan: Option<&PlanFile>,
) -> String {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    t.set_header(vec!["", "objects", "bytes"]);
    let verb = if r.dry_run { "would copy" } else { "copied" };
    t.add_row(vec![
        verb.to_string(),
        r.copied.to_string(),
        fmt_bytes(r.copied_bytes),
    ]);
    t.add_row(vec![
        "skipped".to_string(),
        r.skipped.to_string(),
        fmt_bytes(r.skipped_bytes),
    ]);
    t.add_row(vec![
        "failed".to_string(),
        r.failed.len().to_string(),
        fmt_bytes(r.failed_bytes),
    ]);
    if !r.refused.is_empty() {
        t.add_row(vec![
            "refused keys".to_string(),
            r.refused.len().to_string(),
            "-".into(),
        ]);
    }
    if r.filtered > 0 {
        t.add_row(vec![
            "filtered out".to_string(),
            r.filtered.to_string(),
            "-".into(),
        ]);
    }
    let secs = r.elapsed.as_secs_f64().max(0.001);
    let mut out = format!(
        "\n{src} -> {dst}{}\n{t}\n",
        if r.dry_run {
            " (dry run: nothing changed)"
        } else {
            ""
        }
    );
    if !r.reasons.is_empty() {
        let reasons: Vec<String> = r.reasons.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        out.push_str(&format!("why: {}\n", reasons.join(", ")));
    }
    if !r.verified_by.is_empty() {
        let v: Vec<String> = r
            .verified_by
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        out.push_str(&format!("verified: {}\n", v.join(", ")));
    }
    out.push_str(&format!(
        "requests: LIST {} + {}, GET {}, PUT {} (parts and multipart calls included), HEAD {}{}\n",
        r.requests_list_src,
        r.requests_list_dst,
        r.requests_get,
        r.requests_put,
        r.requests_head,
        if r.resumed_parts > 0 {
            format!("; {} parts reused from an earlier run", r.resumed_parts)
        } else {
            String::new()
        }
    ));
    out.push_str(&format!(
        "time: {} at {}/s{}{}\n",
        fmt_duration(Decimal::from_f64_retain(secs).unwrap_or_default()),
        fmt_bytes((r.written_bytes as f64 / secs) as u64),
        if r.retries > 0 {
            format!("; {} retries", r.retries)
        } else {
            String::new()
        },
        if r.throttle_events > 0 {
            format!("; throttled {} times", r.throttle_events)
        } else {
            String::new()
        },
    ));
    if let Some(p) = plan
        && let Ok(pred) = p.prediction.seconds.parse::<Decimal>()
    {
        out.push_str(&format!(
            "plan: predicted {} for {}; this run took {} for {}\n",
            fmt_duration(pred),
            fmt_bytes(p.corpus.bytes),
            fmt_duration(Decimal::from_f64_retain(secs).unwrap_or_default()),
            fmt_bytes(r.copied_bytes + r.skipped_bytes)
        ));
    }
    for f in r.failed.iter().take(20) {
        out.push_str(&format!("failed: {}: {}\n", f.key, f.error));
    }
    if r.failed.len() > 20 {
        out.push_str(&format!(
            "… and {} more failures (see --json)\n",
            r.failed.len() - 20
        ));
    }
    for f in r.refused.iter().take(20) {
        out.push_str(&format!("refused: {:?}: {}\n", f.key, f.error));
    }
    if !r.dry_run {
        out.push_str(&format!("journal: {}\n", res.journal_path.display()));
    }
    out
}

/// A progress bar on stderr when it is a terminal (and not --json); nothing otherwise.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    objects: AtomicU64,
}

impl Progress {
    fn new(json: bool, total: Option<u64>) -> Progress {
        let bar = (!json && std::io::stderr().is_terminal()).then(|| {
            let b = match total {
                Some(t) => indicatif::ProgressBar::new(t),
                None => indicatif::ProgressBar::no_length(),
            };
            let style = indicatif::ProgressStyle::with_template(
                "{bytes:>10} {bar:30} {bytes_per_sec:>12}  eta {eta}  {msg}",
            )
            .expect("a valid template");
            b.set_style(style);
            b.enable_steady_tick(std::time::Duration::from_millis(200));
            b
        });
        Progress {
            bar,
            objects: AtomicU64::new(0),
        }
    }

    fn event(&self, ev: &Event) {
        let Some(b) = &self.bar else { return };
        match ev {
            Event::Copied { bytes, .. }
            | Event::Skipped { bytes, .. }
            | Event::WouldCopy { bytes, .. } => {
                b.inc(*bytes);
                let n = self.objects.fetch_add(1, Relaxed) + 1;
                b.set_message(format!("{n} objects"));
            }
            Event::Failed { key, .. } => b.println(format!("failed: {key}")),
            Event::Refused { .. } => {}
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
