//! `moverctl sync SRC DST`: the copy engine run from a scheduler. One run at a time (a lock in
//! the state folder), a journal that persists across runs (so an unchanged run is decided from
//! the two listings and the journal alone), deletes only behind guards ([`moverctl::transfer::sync`]),
//! a one-line summary or `--json`, a Prometheus textfile (`--metrics-file`), and a price for
//! every run from the catalog ([`moverctl::transfer::cost`]). The job is [`moverctl::job::sync`]
//! (lock, journal, run, price); this file resolves the flags and shows the run, and
//! `sync_summary.rs` presents the outcome.

use super::CliError;
use super::args::SyncArgs;
use super::engine::{resolve, usage};
use super::exit::Exit;
use super::progress::Progress;
use moverctl::catalog::Catalog;
use moverctl::job::sync::metrics::Metrics;
use moverctl::job::sync::{SyncJob, SyncOutcome as Outcome};
use moverctl::job::trust::resolve_storage_class;
use moverctl::json::sync::SyncIds;
use moverctl::store::Store;
use moverctl::store::config::Remotes;
use moverctl::summary::sync::{dry_run_copy_line, dry_run_delete_line, messages, one_line};
use moverctl::transfer::sync::MaxDelete;
use std::io::Write;

pub fn run_sync(catalog: &Catalog, remotes: &Remotes, args: SyncArgs) -> Result<Exit, CliError> {
    let started_at = std::time::SystemTime::now();
    if let Some(m) = &args.metrics_file {
        super::outputs::check_file("--metrics-file", m)?;
    }
    if let Some(u) = &args.metrics_push {
        moverctl::job::sync::metrics::check_push_url(u)?;
    }
    let (src, mut dst) = moverctl::job::trust::open_pair(catalog, &args.src, &args.dst, remotes)?;
    let max_delete =
        MaxDelete::parse(&args.max_delete).map_err(|m| usage(format!("--max-delete: {m}")))?;
    // The destination's class: the flag (validated), else the remote's (if the catalog knows it).
    let storage_class = resolve_storage_class(catalog, &mut dst, args.storage_class.as_deref())?;
    super::engine::first_use_probe(catalog, remotes, &mut dst, &args.engine, args.quiet)?;
    let res = resolve(&args.engine, catalog, &src, &dst, None)?;
    let shown = (src.shown(), dst.shown());
    let dry_run = res.opts.dry_run;
    let metrics = args.metrics_file.clone().map(|path| Metrics {
        path,
        push: args.metrics_push.clone(),
        src: shown.0.clone(),
        dst: shown.1.clone(),
    });
    let job = SyncJob {
        opts: res.opts.clone(),
        limits: res.limits.clone(),
        journal_path: res.journal_path.clone(),
        lock: args.lock.clone(),
        delete: args.delete,
        max_delete,
        allow_empty_source: args.allow_empty_source,
        allow_early_delete: args.allow_early_delete,
        storage_class,
    };
    let outcome = run_and_show(catalog, remotes, (src, dst), job, &args, &res);
    let finished = std::time::SystemTime::now();
    if let Some(m) = &metrics
        && !dry_run
    {
        let pushed = match &outcome {
            Ok(o) => m.write(Some(o), o.exit, started_at, finished)?,
            // A failed run still says so (and keeps the last success's time).
            Err(e) => m.write(None, e.exit(), started_at, finished)?,
        };
        if let Some(e) = pushed {
            eprintln!("moverctl: warning: --metrics-push: {e}");
        }
    }
    match outcome {
        Ok(o) => Ok(o.exit),
        Err(e) => {
            if res.json {
                // A scheduler reading --json gets a summary object however the run ended.
                println!("{}", error_json(&e, &shown, dry_run));
            }
            Err(e)
        }
    }
}

/// The --json summary of a run that ended in an error.
fn error_json(e: &CliError, (src, dst): &(String, String), dry_run: bool) -> serde_json::Value {
    super::json::stamp(
        super::json::SYNC,
        serde_json::json!({
            "event": "summary",
            "command": "sync",
            "source": src,
            "destination": dst,
            "dry_run": dry_run,
            "error": e.to_string(),
            "exit_code": e.exit() as u8,
            "delete": {"verdict": "suppressed", "deleted": {"objects": 0, "bytes": 0}},
        }),
    )
}

/// What sync shows while it runs: the progress display, and with --dry-run each object it would
/// copy or delete on stdout.
struct Shown<'a> {
    progress: &'a Progress,
    json: bool,
    dry_run: bool,
}

impl moverctl::job::Observer for Shown<'_> {
    fn event(&self, ev: &moverctl::transfer::Event) {
        self.progress.event(ev);
        if self.dry_run
            && let Some(line) = dry_run_copy_line(ev, self.json)
        {
            let _ = writeln!(std::io::stdout().lock(), "{line}");
        }
    }

    fn delete(&self, key: &str, bytes: u64, fate: &moverctl::transfer::sync::Fate) {
        if self.dry_run
            && let Some(line) = dry_run_delete_line(key, bytes, fate, self.json)
        {
            let _ = writeln!(std::io::stdout().lock(), "{line}");
        }
    }

    fn note(&self, message: &str) {
        super::log::above_bar(&format!("moverctl: {message}"));
    }

    fn last_words(&self, message: &str) {
        super::log::last_words(&format!("moverctl: {message}"));
    }
}

fn run_and_show(
    catalog: &Catalog,
    remotes: &Remotes,
    (src, dst): (Store, Store),
    job: SyncJob,
    args: &SyncArgs,
    res: &super::engine::Resolved,
) -> Result<Outcome, CliError> {
    let (src_shown, dst_shown) = (src.shown(), dst.shown());
    // --quiet is silent on success: no bar and no stats line.
    let display = match args.quiet {
        true => Default::default(),
        false => res.display.clone(),
    };
    let progress = Progress::new(display, res.opts.counters.clone().unwrap_or_default());
    let shown = Shown {
        progress: &progress,
        json: res.json,
        // --quiet: a dry run's summary line only (as copy's).
        dry_run: res.opts.dry_run && (res.json || !args.quiet),
    };
    let outcome = moverctl::job::sync::run(catalog, remotes, src, dst, job, &shown);
    progress.finish();
    let mut o = outcome?;
    let notes: Vec<String> = o.stale_lock.take().into_iter().collect();
    let ids = SyncIds {
        source: &src_shown,
        destination: &dst_shown,
        delete: args.delete,
        max_delete: &args.max_delete,
        allow_empty_source: args.allow_empty_source,
        journal: &res.journal_path,
    };
    let (problems, info) = messages(&o, &ids, notes);
    let line = one_line(&o, &src_shown, &dst_shown);
    if res.json {
        println!("{}", moverctl::json::sync::summary_json(&o, &ids));
    } else if !args.quiet {
        println!("{line}");
    } else if o.exit != Exit::Success || res.opts.dry_run {
        eprintln!("{line}");
    }
    for p in &problems {
        eprintln!("moverctl: {p}");
    }
    if !args.quiet {
        for i in &info {
            eprintln!("moverctl: {i}");
        }
    }
    Ok(o)
}
