//! `moverctl drain CKPT_DIR DST`: complete checkpoints copied to durable storage, newest first,
//! each with a durability receipt ([`moverctl::job::drain`]); one pass (for cron) or a pass every
//! `--every` until Ctrl-C.

use super::CliError;
use super::args::EngineArgs;
use super::engine::{resolve, usage};
use super::exit::Exit;
use clap::Args;
use moverctl::catalog::Catalog;
use moverctl::job::drain::retain::KeepRemote;
use moverctl::job::drain::watch::Watch;
use moverctl::job::drain::{Complete, DrainJob, DrainPass};
use moverctl::store::config::Remotes;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct DrainArgs {
    /// The folder the trainer writes checkpoints into: each folder directly under it is one
    /// checkpoint.
    pub dir: PathBuf,
    /// Where checkpoints go (each to DST/NAME): s3://…, gs://…, az://…, a path, or REMOTE:….
    pub dst: String,
    /// When a checkpoint is complete: dcp (PyTorch DCP's .metadata exists, the default),
    /// quiet=DURATION (no file changed for that long), or a marker file's name or glob
    /// ('COMPLETE', '*.done') at the checkpoint's top level.
    #[arg(long, default_value = "dcp", value_name = "RULE")]
    pub complete_when: String,
    /// Keep draining: a pass every DURATION (30s, 5m) at the latest, until Ctrl-C. Without it
    /// (and without --watch), one pass.
    #[arg(long, value_name = "DURATION")]
    pub every: Option<String>,
    /// Keep draining, and start a pass as soon as the file system reports a change under
    /// CKPT_DIR (inotify; a mount that does not deliver notifications from other nodes, such as
    /// Lustre, GPFS or NFS, is still polled every --every, default 1m).
    #[arg(long)]
    pub watch: bool,
    /// Run this shell command after each receipt is written, with MOVERCTL_CHECKPOINT,
    /// MOVERCTL_RECEIPT (the receipt beside the checkpoint) and MOVERCTL_DESTINATION set.
    #[arg(long, value_name = "CMD")]
    pub on_durable: Option<String>,
    /// Keep the newest N checkpoints on the fast tier and remove older ones, each only when its
    /// receipt still describes it and the destination holds the same receipt.
    #[arg(long, value_name = "N")]
    pub keep_local: Option<usize>,
    /// Keep the newest M checkpoints at the destination and delete older ones moverctl drained,
    /// behind sync's delete guards; never one without a newer durable one (README: drain).
    #[arg(long, value_name = "M")]
    pub keep_remote: Option<usize>,
    /// With --keep-remote: also keep each checkpoint whose step number is a multiple of K.
    #[arg(long, value_name = "K", requires = "keep_remote")]
    pub keep_every: Option<u64>,
    /// With --keep-remote: most objects one pass may delete (a count, or N% of the destination's).
    #[arg(long, value_name = "N|N%", default_value = "50%")]
    pub max_delete: String,
    /// With --keep-remote: also delete checkpoints younger than the destination class's minimum
    /// storage duration (the fee is reported).
    #[arg(long)]
    pub allow_early_delete: bool,
    /// Print only problems.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Notes from the drain (a checkpoint drained again, a hook that failed), on stderr.
struct Notes;

impl moverctl::job::Observer for Notes {
    fn note(&self, message: &str) {
        eprintln!("moverctl: {message}");
    }
}

pub fn run_drain(catalog: &Catalog, remotes: &Remotes, args: DrainArgs) -> Result<Exit, CliError> {
    let complete = Complete::parse(&args.complete_when).map_err(usage)?;
    if args.engine.journal.is_some() || args.engine.dry_run {
        return Err(usage(
            "drain keeps one journal per checkpoint and has no --dry-run yet: leave out --journal and --dry-run",
        ));
    }
    let watch = Watch::from_flags(args.every.as_deref(), args.watch).map_err(usage)?;
    let (m, k) = (args.max_delete.as_str(), args.allow_early_delete);
    let keep_remote = KeepRemote::from_flags(args.keep_remote, args.keep_every, m, k);
    let keep_remote = keep_remote.map_err(usage)?;
    if !args.dir.is_dir() {
        return Err(usage(format!(
            "{} is not a folder of checkpoints",
            args.dir.display()
        )));
    }
    let dir = args.dir.to_string_lossy().into_owned();
    let (src, dst) = moverctl::job::trust::open_pair(catalog, &dir, &args.dst, remotes)?;
    let r = resolve(&args.engine, catalog, &src, &dst, None)?;
    let job = DrainJob {
        dir: args.dir.clone(),
        dst: args.dst.clone(),
        complete,
        opts: r.opts,
        limits: r.limits,
        on_durable: args.on_durable.clone(),
        keep_local: args.keep_local,
        keep_remote,
    };
    let show = |p: &DrainPass| {
        for (problem, text) in moverctl::summary::drain::output(p, args.quiet, args.engine.json) {
            match problem {
                true => eprintln!("moverctl: {text}"),
                false => println!("{text}"),
            }
        }
    };
    let Some(watch) = watch else {
        let pass = moverctl::job::drain::pass(catalog, remotes, &job, &Notes)?;
        show(&pass);
        return Ok(pass.exit());
    };
    moverctl::job::drain::watch::run(catalog, remotes, &job, watch, &Notes, show)?;
    Ok(Exit::Success)
}
