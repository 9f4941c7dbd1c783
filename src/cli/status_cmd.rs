//! `moverctl status PLAN|JOURNAL` (or `--src/--dst`): a move's progress read from its journal,
//! without touching either store. A sharded plan (`plan --shards N`) is read from its shards'
//! progress records on the store instead (see `shard_cmd::status`).

use super::CliError;
use super::copy_cmd::usage;
use super::exit::Exit;
use crate::journal::{self, Journal};
use crate::plan::file::PlanFile;
use crate::store::config::Remotes;
use crate::units::{fmt_bytes, fmt_duration};
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// A plan file, or a journal file (`.sqlite`).
    pub target: Option<PathBuf>,
    /// Source and destination of a `copy` run (instead of a plan).
    #[arg(long, requires = "dst")]
    pub src: Option<String>,
    #[arg(long, requires = "src")]
    pub dst: Option<String>,
    #[arg(long)]
    pub json: bool,
    /// A sharded plan: a running shard with no update for this long is shown as stale.
    #[arg(long, default_value = "10m", value_name = "DURATION")]
    pub stale_after: String,
    /// A sharded plan: where its shards keep their progress records (as given to `exec`).
    #[arg(long = "progress-location", value_name = "LOCATION")]
    pub progress: Option<String>,
}

/// `moverctl status PLAN|JOURNAL` (or `--src/--dst`): progress from the journal, no store access.
pub fn run_status(remotes: &Remotes, args: StatusArgs) -> Result<Exit, CliError> {
    // Keyed by identity; a journal an earlier version kept under the spelled locations is found
    // too (the next copy or exec moves it).
    let journal_of = |s: &str, d: &str| -> Result<std::path::PathBuf, CliError> {
        let state = journal::state_dir();
        let id = |l: &str| crate::store::identity_of(l, remotes);
        let shown =
            |l: &str| crate::store::location::Location::parse(l, remotes).map(|l| l.shown());
        let path = journal::default_path(&state, &id(s)?, &id(d)?);
        let old = journal::default_path(&state, &shown(s)?, &shown(d)?);
        Ok(if !path.exists() && old.exists() {
            old
        } else {
            path
        })
    };
    let (path, corpus) = match (&args.target, &args.src, &args.dst) {
        (Some(t), _, _) if t.extension().is_some_and(|e| e == "sqlite") => (t.clone(), None),
        (Some(t), _, _) => {
            let p = PlanFile::load(t)?;
            if p.shards.is_some() {
                // Every shard's record, read from the progress location on the store.
                let stale = humantime::parse_duration(&args.stale_after)
                    .map_err(|e| usage(format!("--stale-after {:?}: {e}", args.stale_after)))?;
                let dst = args
                    .dst
                    .clone()
                    .or(p.destination.location.clone())
                    .ok_or_else(|| {
                        usage(format!("{} has no destination: pass --dst", t.display()))
                    })?;
                return super::shard_cmd::status(
                    remotes,
                    &p,
                    &dst,
                    args.progress.as_deref(),
                    stale,
                    args.json,
                );
            }
            let (Some(s), Some(d)) = (
                args.src.clone().or(p.source.location.clone()),
                args.dst.clone().or(p.destination.location.clone()),
            ) else {
                return Err(usage(format!(
                    "{} has no locations: pass --src and --dst",
                    t.display()
                )));
            };
            let path = journal_of(&s, &d)?;
            (path, Some((p.corpus.bytes, p.corpus.objects)))
        }
        (None, Some(s), Some(d)) => (journal_of(s, d)?, None),
        _ => {
            return Err(usage(
                "give a plan file, a journal file, or --src and --dst",
            ));
        }
    };
    if !path.exists() {
        return Err(CliError::Failure(format!(
            "no journal at {}: this move has not started (or ran with another --journal)",
            path.display()
        )));
    }
    let j = Journal::open_existing(&path)?;
    let (src, dst) = (j.source().to_string(), j.destination().to_string());
    let s = j.summary()?;
    let open = j.open_uploads()?;
    // The whole move: the plan's corpus, else what a complete listing of the source counted.
    let total = corpus.or(j.totals()?.map(|(o, b)| (b, o)));
    // The recent rate: what was verified in the last five minutes.
    let window = std::time::Duration::from_secs(300);
    let since =
        humantime::format_rfc3339_seconds(std::time::SystemTime::now() - window).to_string();
    let (_, recent_bytes) = j.verified_since(&since)?;
    let rate = recent_bytes as f64 / window.as_secs_f64();
    let remaining = total.map(|(b, _)| b.saturating_sub(s.verified_bytes));
    let eta = remaining
        .filter(|_| rate > 0.0)
        .map(|r| std::time::Duration::from_secs_f64(r as f64 / rate));
    let running = j
        .identities()?
        .and_then(|(si, di)| crate::lock::RunLock::held_by(&crate::lock::default_path(&si, &di)));
    if args.json {
        println!(
            "{}",
            super::json::stamp(
                super::json::STATUS,
                serde_json::json!({
                    "journal": path.display().to_string(), "source": src, "destination": dst,
                    "verified": {"objects": s.verified, "bytes": s.verified_bytes},
                    "failed": s.failed, "in_progress": s.copying, "open_multipart_uploads": open.len(),
                    "corpus": corpus.map(|(b, o)| serde_json::json!({"bytes": b, "objects": o})),
                    "total": total.map(|(b, o)| serde_json::json!({"bytes": b, "objects": o})),
                    "percent": total.filter(|(b, _)| *b > 0).map(|(b, _)| (s.verified_bytes as f64 * 1000.0 / b as f64).round() / 10.0),
                    "bytes_per_second_last_5_min": rate.round() as u64,
                    "eta_seconds": eta.map(|d| d.as_secs()),
                    "running": running.is_some(),
                    "run": running,
                })
            )
        );
        return Ok(Exit::Success);
    }
    println!("{src} -> {dst}");
    let pct = total
        .filter(|(b, _)| *b > 0)
        .map(|(b, o)| {
            format!(
                " of {} in {o} objects ({:.1} %{})",
                fmt_bytes(b),
                s.verified_bytes as f64 * 100.0 / b as f64,
                if corpus.is_some() { ", as planned" } else { "" }
            )
        })
        .unwrap_or_default();
    println!(
        "verified     {} objects, {}{pct}",
        s.verified,
        fmt_bytes(s.verified_bytes)
    );
    println!(
        "rate         {}/s over the last 5 minutes{}",
        fmt_bytes(rate as u64),
        match eta {
            Some(d) => format!(
                ", ETA {}",
                fmt_duration(rust_decimal::Decimal::from(d.as_secs()))
            ),
            None if total.is_none() =>
                ", total unknown (no plan, and no complete listing yet)".into(),
            None => String::new(),
        }
    );
    println!(
        "run          {}",
        match &running {
            Some(h) => format!("running now ({h})"),
            None => "none running".into(),
        }
    );
    println!(
        "failed       {} objects (copied again on the next run)",
        s.failed
    );
    println!(
        "in progress  {} objects, {} multipart uploads open for resume",
        s.copying,
        open.len()
    );
    println!("journal      {}", path.display());
    Ok(Exit::Success)
}
