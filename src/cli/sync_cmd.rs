//! `moverctl sync SRC DST`: the copy engine run from a scheduler. One run at a time (a lock in
//! the state folder), a journal that persists across runs (so an unchanged run is decided from
//! the two listings and the journal alone), deletes only behind guards ([`crate::transfer::sync`]),
//! a one-line summary or `--json`, a Prometheus textfile (`--metrics-file`), and a price for
//! every run from the catalog ([`crate::transfer::cost`]). The run itself is
//! [`crate::transfer::sync::run`]; this file resolves the flags, takes the lock and opens the
//! journal, and `sync_summary.rs` presents the outcome.

use super::CliError;
use super::copy_cmd::{EngineArgs, resolve, usage};
use super::exit::Exit;
use super::metrics::Metrics;
use super::progress::Progress;
use super::stores::{provider_of, region_of, resolve_storage_class};
use super::sync_summary::{
    dry_run_copy_line, dry_run_delete_line, messages, one_line, summary_json,
};
use crate::catalog::Catalog;
use crate::journal::Journal;
use crate::lock::RunLock;
use crate::store::Store;
use crate::store::config::Remotes;
use crate::transfer::cost::{RunCost, SidePricing, price_run};
use crate::transfer::sync::{DeletePolicy, DeleteReport, MaxDelete, MinDuration};
use crate::transfer::{Report, Run};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(Debug, Args)]
#[command(after_help = SYNC_HELP)]
pub struct SyncArgs {
    /// Where to read: s3://…, gs://…, az://…, a path, or REMOTE:bucket/prefix.
    pub src: String,
    /// The mirror to keep in step with SRC.
    pub dst: String,
    /// Delete destination objects that are no longer at the source (behind the guards below).
    #[arg(long)]
    pub delete: bool,
    /// Most objects one run may delete: a count (1000) or a percentage of the destination
    /// objects listed (5%). Above it nothing is deleted and the run exits 5.
    #[arg(long, value_name = "N|N%", default_value = "10%")]
    pub max_delete: String,
    /// Delete even when the source lists no object at all. Without it, an empty source (an
    /// unmounted volume, a wrong bucket) deletes nothing, whatever --max-delete says, and the run
    /// exits 5.
    #[arg(long)]
    pub allow_empty_source: bool,
    /// Also delete objects younger than the destination class's minimum storage duration
    /// (they are billed for the rest of it; the summary prices that).
    #[arg(long)]
    pub allow_early_delete: bool,
    /// Storage class written at the destination: a catalog class (`moverctl providers show
    /// PROVIDER`) or the store's own name (GLACIER_IR, Cool). Overrides the remote's.
    #[arg(long, value_name = "CLASS")]
    pub storage_class: Option<String>,
    /// Lock file that keeps runs apart (default: in the state folder, named after SRC and DST).
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// Print nothing when all is well; only problems otherwise.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Write run metrics here in Prometheus text format (node_exporter's textfile collector),
    /// atomically.
    #[arg(long, value_name = "PATH")]
    pub metrics_file: Option<PathBuf>,
    /// Also PUT the metrics to a Prometheus Pushgateway group URL after every run, e.g.
    /// http://pushgateway:9091/metrics/job/moverctl/mirror/corpus (needs --metrics-file, which
    /// keeps the last success time across runs).
    #[arg(long, value_name = "URL", requires = "metrics_file")]
    pub metrics_push: Option<String>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

const SYNC_HELP: &str = "\
sync copies new and changed objects (by size, the journal kept in the state folder, MD5 ETags
when both sides have them, and only then one HEAD), and with --delete removes what the source no
longer has: never after a run with a failed or refused object, never when the source listed
nothing (unless --allow-empty-source), never more than --max-delete, never an object younger
than the destination's minimum storage duration unless --allow-early-delete. --dry-run shows all
of it. With --json, sync prints one summary object (a dry run first prints one line per object it
would copy, delete or keep). Exit code 5 (delete guard) is sync's own; 6 means another run of the same pair (copy or sync) holds the lock.";

pub fn run_sync(catalog: &Catalog, remotes: &Remotes, args: SyncArgs) -> Result<Exit, CliError> {
    let started_at = std::time::SystemTime::now();
    if let Some(m) = &args.metrics_file {
        super::outputs::check_file("--metrics-file", m)?;
    }
    if let Some(u) = &args.metrics_push {
        super::metrics::check_push_url(u)?;
    }
    let (src, mut dst) = crate::job::trust::open_pair(catalog, &args.src, &args.dst, remotes)?;
    let max_delete =
        MaxDelete::parse(&args.max_delete).map_err(|m| usage(format!("--max-delete: {m}")))?;

    // The destination's class: the flag (validated), else the remote's (if the catalog knows it).
    let dst_class = resolve_storage_class(catalog, &mut dst, args.storage_class.as_deref())?;
    let src_pricing = provider_of(catalog, &src)
        .map(|p| SidePricing::new(p, region_of(remotes, &src).as_deref(), None));
    let dst_pricing = provider_of(catalog, &dst)
        .map(|p| SidePricing::new(p, region_of(remotes, &dst).as_deref(), dst_class.as_deref()));
    let min_duration = dst_pricing.as_ref().and_then(SidePricing::min_duration);

    let res = resolve(&args.engine, catalog, &src, &dst, None)?;
    let (src_shown, dst_shown) = (src.shown(), dst.shown());
    let dry_run = res.opts.dry_run;

    // One run at a time (a dry run changes nothing and takes no lock).
    let lock_path = args
        .lock
        .clone()
        .unwrap_or_else(|| crate::lock::default_path(&src.identity, &dst.identity));
    let mut notes: Vec<String> = Vec::new();
    let _lock = if dry_run {
        None
    } else {
        let (l, stale) = RunLock::acquire(&lock_path, &format!("sync {src_shown} {dst_shown}"))?;
        if let Some(s) = stale {
            notes.push(s);
        }
        Some(l)
    };
    let metrics = args.metrics_file.clone().map(|path| Metrics {
        path,
        push: args.metrics_push.clone(),
        src: src_shown.clone(),
        dst: dst_shown.clone(),
    });
    let outcome = sync_locked(SyncRun {
        src,
        dst,
        res: &res,
        args: &args,
        max_delete,
        min_duration,
        src_pricing: src_pricing.as_ref(),
        dst_pricing: dst_pricing.as_ref(),
        notes,
    });
    let finished = std::time::SystemTime::now();
    match outcome {
        Ok(o) => {
            if let Some(m) = &metrics
                && !dry_run
            {
                m.write(Some(&o), o.exit, started_at, finished)?;
            }
            Ok(o.exit)
        }
        Err(e) => {
            if let Some(m) = &metrics
                && !dry_run
            {
                // A failed run still says so (and keeps the last success's time).
                m.write(None, e.exit(), started_at, finished)?;
            }
            if res.json {
                // A scheduler reading --json gets a summary object however the run ended.
                println!(
                    "{}",
                    super::json::stamp(
                        super::json::SYNC,
                        serde_json::json!({
                            "event": "summary",
                            "command": "sync",
                            "source": src_shown,
                            "destination": dst_shown,
                            "dry_run": dry_run,
                            "error": e.to_string(),
                            "exit_code": e.exit() as u8,
                            "delete": {"verdict": "suppressed", "deleted": {"objects": 0, "bytes": 0}},
                        })
                    )
                );
            }
            Err(e)
        }
    }
}

struct SyncRun<'a> {
    src: Store,
    dst: Store,
    res: &'a super::copy_cmd::Resolved,
    args: &'a SyncArgs,
    max_delete: MaxDelete,
    min_duration: Option<MinDuration>,
    src_pricing: Option<&'a SidePricing>,
    dst_pricing: Option<&'a SidePricing>,
    notes: Vec<String>,
}

/// A finished run, for the summary and the metrics.
pub(super) struct Outcome {
    pub(super) report: Report,
    pub(super) deletes: DeleteReport,
    pub(super) cost: RunCost,
    pub(super) exit: Exit,
}

fn sync_locked(s: SyncRun) -> Result<Outcome, CliError> {
    let SyncRun {
        src,
        dst,
        res,
        args,
        max_delete,
        min_duration,
        src_pricing,
        dst_pricing,
        notes,
    } = s;
    let dry_run = res.opts.dry_run;
    let json = res.json;
    let quiet = args.quiet;
    let (src_shown, dst_shown) = (src.shown(), dst.shown());
    let hint = super::stores::credentials_hint(&[&src, &dst]);
    // A dry run reads the journal when there is one (so it decides as the real run would) but
    // never creates one.
    let journal = if dry_run && !res.journal_path.exists() {
        None
    } else {
        Some(Journal::open_pair(&res.journal_path, &src, &dst).map_err(CliError::Journal)?)
    };
    let policy = DeletePolicy {
        delete: args.delete,
        max_delete,
        allow_empty_source: args.allow_empty_source,
        allow_early_delete: args.allow_early_delete,
        min_duration: min_duration.clone(),
        now: chrono::Utc::now(),
        dry_run,
        concurrency: res.opts.transfers.max(1),
    };
    let rt = super::runtime()?;
    let stop = Arc::new(AtomicBool::new(false));
    let out = std::io::stdout();
    let print_line = |line: String| {
        let mut o = out.lock();
        let _ = writeln!(o, "{line}");
    };
    let (report, deletes) = rt
        .block_on(async {
            super::stop_on_ctrl_c(
                stop.clone(),
                "stopping: no new object starts, the objects in flight finish and are journaled, nothing will be deleted",
                res.opts.counters.clone(),
            );
            let run = Run {
                src,
                dst,
                opts: res.opts.clone(),
                limits: res.limits.clone(),
                journal,
                stop,
            };
            let spill_in = (!dry_run).then_some(res.journal_path.as_path());
            // --quiet is silent on success: no bar and no stats line.
            let mut display = res.display.clone();
            if quiet {
                display = Default::default();
            }
            let progress = Progress::new(display, res.opts.counters.clone().unwrap_or_default());
            let outcome = crate::transfer::sync::run(
                run,
                policy,
                spill_in,
                |ev| {
                    progress.event(ev);
                    if dry_run && let Some(line) = dry_run_copy_line(ev, json) {
                        print_line(line);
                    }
                },
                |key, bytes, fate| {
                    if dry_run && let Some(line) = dry_run_delete_line(key, bytes, fate, json) {
                        print_line(line);
                    }
                },
            )
            .await;
            progress.finish();
            let (report, deletes) = outcome?;
            Ok::<_, CliError>((report, deletes))
        })
        .map_err(|e| e.naming_credentials(&hint))?;
    let cost = price_run(src_pricing, dst_pricing, &report, &deletes);
    let exit = Exit::of_run(&report, Some(&deletes));
    let o = Outcome {
        report,
        deletes,
        cost,
        exit,
    };
    let (problems, info) = messages(
        &o,
        args,
        res,
        &min_duration,
        (&src_shown, &dst_shown),
        notes,
        &hint,
    );
    let line = one_line(&o, &src_shown, &dst_shown);
    if json {
        println!(
            "{}",
            summary_json(&o, &src_shown, &dst_shown, args, res, &min_duration)
        );
    } else if !quiet {
        println!("{line}");
    } else if exit != Exit::Success {
        eprintln!("{line}");
    }
    for p in &problems {
        eprintln!("moverctl: {p}");
    }
    if !quiet {
        for i in &info {
            eprintln!("moverctl: {i}");
        }
    }
    Ok(o)
}
