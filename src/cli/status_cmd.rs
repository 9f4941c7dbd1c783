//! `moverctl status PLAN|JOURNAL` (or `--src/--dst`): a move's progress read from its journal,
//! without touching either store. A sharded plan (`plan --shards N`) is read from its shards'
//! progress records on the store instead (see `shard_cmd::status`).

use super::CliError;
use super::engine::usage;
use super::exit::Exit;
use clap::Args;
use moverctl::job::inspect::JournalStatus;
use moverctl::plan::file::PlanFile;
use moverctl::store::config::Remotes;
use moverctl::units::{fmt_bytes, fmt_duration};
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
    let journal_of = |s: &str, d: &str| moverctl::job::inspect::journal_of(s, d, remotes);
    let (path, corpus) = match (&args.target, &args.src, &args.dst) {
        (Some(t), _, _) if t.extension().is_some_and(|e| e == "sqlite") => (t.clone(), None),
        (Some(t), _, _) => {
            let p = PlanFile::load(t)?;
            if p.shards.is_some() {
                return sharded(remotes, &args, t, &p);
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
    let st = moverctl::job::inspect::journal_status(&path, corpus)?;
    if args.json {
        println!("{}", status_json(&st));
    } else {
        status_text(&st);
    }
    Ok(Exit::Success)
}

/// Every shard's record of a sharded plan, read from the progress location on the store.
fn sharded(
    remotes: &Remotes,
    args: &StatusArgs,
    t: &std::path::Path,
    p: &PlanFile,
) -> Result<Exit, CliError> {
    let stale = humantime::parse_duration(&args.stale_after)
        .map_err(|e| usage(format!("--stale-after {:?}: {e}", args.stale_after)))?;
    let dst = args
        .dst
        .clone()
        .or(p.destination.location.clone())
        .ok_or_else(|| usage(format!("{} has no destination: pass --dst", t.display())))?;
    super::shard_cmd::status(remotes, p, &dst, args.progress.as_deref(), stale, args.json)
}

fn status_json(st: &JournalStatus) -> serde_json::Value {
    let s = &st.summary;
    let (corpus, total) = (st.corpus, st.total);
    super::json::stamp(
        super::json::STATUS,
        serde_json::json!({
            "journal": st.path.display().to_string(), "source": st.source, "destination": st.destination,
            "verified": {"objects": s.verified, "bytes": s.verified_bytes},
            "failed": s.failed, "in_progress": s.copying, "open_multipart_uploads": st.open_uploads,
            "corpus": corpus.map(|(b, o)| serde_json::json!({"bytes": b, "objects": o})),
            "total": total.map(|(b, o)| serde_json::json!({"bytes": b, "objects": o})),
            "percent": total.filter(|(b, _)| *b > 0).map(|(b, _)| (s.verified_bytes as f64 * 1000.0 / b as f64).round() / 10.0),
            "bytes_per_second_last_5_min": st.rate.round() as u64,
            "eta_seconds": st.eta.map(|d| d.as_secs()),
            "running": st.running.is_some(),
            "run": st.running,
        }),
    )
}

fn status_text(st: &JournalStatus) {
    let s = &st.summary;
    println!("{} -> {}", st.source, st.destination);
    let pct = st
        .total
        .filter(|(b, _)| *b > 0)
        .map(|(b, o)| {
            format!(
                " of {} in {o} objects ({:.1} %{})",
                fmt_bytes(b),
                s.verified_bytes as f64 * 100.0 / b as f64,
                if st.corpus.is_some() {
                    ", as planned"
                } else {
                    ""
                }
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
        fmt_bytes(st.rate as u64),
        match st.eta {
            Some(d) => format!(
                ", ETA {}",
                fmt_duration(rust_decimal::Decimal::from(d.as_secs()))
            ),
            None if st.total.is_none() =>
                ", total unknown (no plan, and no complete listing yet)".into(),
            None => String::new(),
        }
    );
    println!(
        "run          {}",
        match &st.running {
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
        s.copying, st.open_uploads
    );
    println!("journal      {}", st.path.display());
}
