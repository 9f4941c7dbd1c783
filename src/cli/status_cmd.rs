//! `moverctl status PLAN|JOURNAL` (or `--src/--dst`): a move's progress read from its journal,
//! without touching either store; with neither, the recent runs of the state folder. A sharded plan (`plan --shards N`) is read from its shards'
//! progress records on the store instead (see `shard_cmd::status`).

use super::CliError;
use super::engine::usage;
use super::exit::Exit;
use clap::Args;
use moverctl::plan::file::PlanFile;
use moverctl::store::config::Remotes;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// A plan file, or a journal file (`.sqlite`); none: the recent runs.
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
        _ => return recent(args.json),
    };
    let st = moverctl::job::inspect::journal_status(&path, corpus)?;
    if args.json {
        println!("{}", moverctl::json::status::status(&st));
    } else {
        print!("{}", moverctl::summary::status::text(&st));
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

/// `status` with no argument: the most recent runs of the state folder.
fn recent(json: bool) -> Result<Exit, CliError> {
    let (runs, more) = moverctl::job::inspect::recent_runs(20)?;
    if json {
        println!("{}", moverctl::json::status::runs(&runs, more));
    } else {
        let dir = moverctl::journal::state_dir();
        print!(
            "{}",
            moverctl::summary::status::runs_text(&runs, more, &dir)
        );
    }
    Ok(Exit::Success)
}
