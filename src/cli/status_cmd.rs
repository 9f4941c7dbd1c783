//! `moverctl status PLAN|JOURNAL` (or `--src/--dst`): a move's progress read from its journal,
//! without touching either store.

use super::CliError;
use super::copy_cmd::usage;
use super::exit::Exit;
use crate::journal::{self, Journal};
use crate::plan::file::PlanFile;
use crate::store::config::Remotes;
use crate::units::fmt_bytes;
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
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "journal": path.display().to_string(), "source": src, "destination": dst,
                "verified": {"objects": s.verified, "bytes": s.verified_bytes},
                "failed": s.failed, "in_progress": s.copying, "open_multipart_uploads": open.len(),
                "corpus": corpus.map(|(b, o)| serde_json::json!({"bytes": b, "objects": o})),
            })
        );
        return Ok(Exit::Success);
    }
    println!("{src} -> {dst}");
    let pct = corpus
        .filter(|(b, _)| *b > 0)
        .map(|(b, _)| {
            format!(
                " ({:.1} % of the planned {})",
                s.verified_bytes as f64 * 100.0 / b as f64,
                fmt_bytes(b)
            )
        })
        .unwrap_or_default();
    println!(
        "verified     {} objects, {}{pct}",
        s.verified,
        fmt_bytes(s.verified_bytes)
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
