//! `moverctl stage SRC FAST_DIR`: a dataset (or a node's share) onto a fast tier with a ready
//! marker; `--evict` at job end; `--wait-ready FAST_DIR` for a job to wait on
//! ([`moverctl::job::stage`]).

use super::CliError;
use super::args::EngineArgs;
use super::engine::{resolve, usage};
use super::exit::Exit;
use clap::Args;
use moverctl::catalog::Catalog;
use moverctl::job::stage::{self, ready::Which};
use moverctl::store::config::Remotes;
use moverctl::summary::stage::Line;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct StageArgs {
    /// What to stage: s3://…, gs://…, az://…, a path, or REMOTE:….
    #[arg(required_unless_present = "wait_ready")]
    pub src: Option<String>,
    /// The fast-tier folder (a parallel file system mount, node-local NVMe).
    #[arg(required_unless_present = "wait_ready")]
    pub fast_dir: Option<PathBuf>,
    /// Stage only node K's share of N (contiguous key ranges balanced by bytes, as `plan
    /// --shards`; every node computes the same split), or `auto` (SLURM_NODEID/SLURM_NNODES).
    #[arg(long, value_name = "K/N")]
    pub node: Option<String>,
    /// With --node: take the shares from this plan's split (`plan --shards N --save`) instead
    /// of listing the whole source on every node.
    #[arg(long, value_name = "PLAN", requires = "node")]
    pub plan: Option<PathBuf>,
    /// At job end: remove the files this stage put in FAST_DIR that are unchanged there and
    /// whose original the source still holds (same size and ETag); keep and name the others.
    #[arg(long, conflicts_with = "wait_ready")]
    pub evict: bool,
    /// Wait until FAST_DIR's ready marker exists (with --node, that node's; with --nodes N, all
    /// N nodes'), up to --timeout; exit 10 if it does not appear.
    #[arg(long, value_name = "FAST_DIR")]
    pub wait_ready: Option<PathBuf>,
    /// With --wait-ready: wait for the markers of all N nodes' shares.
    #[arg(
        long,
        value_name = "N",
        requires = "wait_ready",
        conflicts_with = "node"
    )]
    pub nodes: Option<u32>,
    /// With --wait-ready: how long to wait.
    #[arg(long, default_value = "10m", value_name = "DURATION")]
    pub timeout: String,
    /// Print only problems.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
}

pub fn run_stage(catalog: &Catalog, remotes: &Remotes, args: StageArgs) -> Result<Exit, CliError> {
    let node = match args.node.as_deref() {
        Some(spec) => Some(stage::parse_node(spec, |v| std::env::var(v).ok()).map_err(usage)?),
        None => None,
    };
    let json = args.engine.json;
    if let Some(dir) = &args.wait_ready {
        let timeout = humantime::parse_duration(&args.timeout)
            .map_err(|e| usage(format!("--timeout {:?}: {e}", args.timeout)))?;
        let which = match (node, args.nodes) {
            (Some(n), _) => Which::Node(n),
            (None, Some(0)) => return Err(usage("--nodes must be at least 1")),
            (None, Some(n)) => Which::All(n),
            (None, None) => Which::Whole,
        };
        let poll = std::time::Duration::from_millis(500);
        let r = stage::ready::wait(dir, which, timeout, poll)?;
        show(moverctl::summary::stage::ready_lines(&r), args.quiet, json);
        if json {
            println!("{}", moverctl::json::stage::ready_line(&r));
        }
        return Ok(r.exit());
    }
    let (src, dir) = (
        args.src.as_deref().unwrap_or(""),
        args.fast_dir.unwrap_or_default(),
    );
    let pair = stage::open(catalog, src, &dir, remotes)?;
    if args.evict {
        let mut kept = |key: &str, k: &stage::evict::Kept| match json {
            true => println!("{}", moverctl::json::stage::kept_line(key, k)),
            false => show(
                vec![moverctl::summary::stage::kept_line(key, k)],
                args.quiet,
                json,
            ),
        };
        let o = stage::evict::evict(&pair.src, &dir, node, &mut kept)?;
        show(moverctl::summary::stage::evict_lines(&o), args.quiet, json);
        if json {
            println!("{}", moverctl::json::stage::evict_line(&o));
        }
        return Ok(o.exit());
    }
    let r = resolve(&args.engine, catalog, &pair.src, &pair.dst, None)?;
    let job =
        stage::StageJob {
            opts: r.opts,
            limits: r.limits,
            journal: args.engine.journal.clone(),
            node,
            plan_shards: match &args.plan {
                Some(p) => Some(moverctl::plan::file::PlanFile::load(p)?.shards.ok_or_else(
                    || {
                        usage(format!(
                            "{} has no shards: make it with plan … --shards N",
                            p.display()
                        ))
                    },
                )?),
                None => None,
            },
        };
    let o = stage::run(catalog, pair, job, &Notes)?;
    show(moverctl::summary::stage::stage_lines(&o), args.quiet, json);
    if json {
        println!("{}", moverctl::json::stage::stage_line(&o));
    }
    Ok(o.exit)
}

/// Notes from the run (a stale lock taken over, Ctrl-C), on stderr.
struct Notes;

impl moverctl::job::Observer for Notes {
    fn note(&self, message: &str) {
        eprintln!("moverctl: {message}");
    }
}

/// Problems on stderr always; the rest on stdout unless --quiet or --json (stdout is the JSON's).
fn show(lines: Vec<Line>, quiet: bool, json: bool) {
    for l in lines {
        match l.problem {
            true => eprintln!("moverctl: {}", l.text),
            false if !quiet && !json => println!("{}", l.text),
            false => {}
        }
    }
}
