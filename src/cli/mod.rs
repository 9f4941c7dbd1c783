//! The command line: clap definitions, turning flags into resolved options once, and dispatch.
//! Every error is printed once, here, and becomes an exit code from [`exit::TABLE`].

// Every command returns the library's `JobError` once, to `main`: its size is the library's
// choice (clippy skips it there, in the exported API) and costs nothing on this path.
#![allow(clippy::result_large_err)]

mod args;
mod copy_cmd;
mod docs_cmd;
mod drain_cmd;
mod engine;
pub use moverctl::exit;
pub use moverctl::json;
pub mod log;
mod ls_cmd;
mod outputs;
mod pipe;
mod plan_cmd;
mod probe_cmd;
mod progress;
mod providers_cmd;
mod shard_cmd;
mod stage_cmd;
mod status_cmd;
mod sync_cmd;

use clap::{Args, Parser, Subcommand};
use exit::Exit;
use moverctl::catalog::Catalog;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "moverctl",
    version = docs_cmd::VERSION,
    about = "Price, plan, run and verify large object-storage moves between clouds",
    after_help = exit_help()
)]
pub struct Cli {
    /// Folder of provider files that replace or extend the built-in catalog.
    #[arg(long, global = true, env = "MOVERCTL_PROVIDERS", value_name = "DIR")]
    pub providers: Option<PathBuf>,
    /// Remotes file (default ~/.config/moverctl/remotes.toml; also MOVERCTL_CONFIG).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// AWS profile for every S3 location whose remote names no credentials of its own; it wins
    /// over AWS_ACCESS_KEY_ID, as the AWS CLI's --profile does (AWS_PROFILE is also honoured,
    /// after the environment's keys). Role, SSO and credential_process profiles are renewed as
    /// a run goes on.
    #[arg(long, global = true, value_name = "NAME")]
    pub profile: Option<String>,
    /// S3 endpoint for every S3 location whose remote names none (as the AWS CLI's; it wins
    /// over AWS_ENDPOINT_URL), e.g. http://127.0.0.1:3900.
    #[arg(long, global = true, value_name = "URL")]
    pub endpoint_url: Option<String>,
    /// How long one failed request (LIST, HEAD, GET, PUT, part, DELETE) is retried with backoff
    /// before it is reported, e.g. 4m or 30s.
    #[arg(
        long,
        global = true,
        env = "MOVERCTL_RETRY_TIMEOUT",
        value_name = "DURATION",
        default_value = "4m"
    )]
    pub retry_timeout: String,
    #[command(flatten)]
    pub log: log::LogArgs,
    #[command(subcommand)]
    pub command: Command,
}

fn exit_help() -> String {
    exit::table_text()
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Price and time a move to one or more destinations, ranked; optionally save a plan file.
    Plan(Box<plan_cmd::PlanArgs>),
    /// List the providers in the catalog, or show one with its prices, sources and dates.
    Providers(ProvidersArgs),
    /// List the objects at a location, in key order, with sizes and totals.
    Ls(ls_cmd::LsArgs),
    /// Find out what a store really does (checksums, ETags, metadata, conditional create,
    /// listing order, part sizes) and measure latency and throughput; saved for the planner.
    Probe(probe_cmd::ProbeArgs),
    /// Copy everything under SRC to DST: parallel, rate-limited, verified, resumable.
    Copy(Box<args::CopyArgs>),
    /// Run a plan file written by `plan --save`.
    Exec(Box<args::ExecArgs>),
    /// Keep DST a mirror of SRC from cron: copy new and changed objects, delete behind guards
    /// (--delete, --max-delete, minimum storage durations), one run at a time, a one-line
    /// summary, --json and a Prometheus --metrics-file, each run priced.
    Sync(Box<args::SyncArgs>),
    /// Copy complete checkpoints from a fast tier to durable storage, newest first, each with a
    /// durability receipt (beside it and at the destination) once every file is verified; one
    /// pass for cron, or --every DURATION.
    Drain(Box<drain_cmd::DrainArgs>),
    /// Copy a dataset (or node K's share of it) onto a fast tier with a ready marker a job can
    /// wait on (--wait-ready); --evict at job end removes only what it staged, only where the
    /// source still holds the original.
    Stage(Box<stage_cmd::StageArgs>),
    /// Progress of a plan or copy from its journal (no store is contacted); of a sharded plan,
    /// every shard's record read from its progress location on the store.
    Status(status_cmd::StatusArgs),
    /// Print a shell completion script: bash, zsh, fish, elvish or powershell
    /// (e.g. `moverctl completions bash > /etc/bash_completion.d/moverctl`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write man pages (moverctl.1 and one per command) into DIR, e.g. `moverctl man
    /// /usr/local/share/man/man1`.
    Man {
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
}

#[derive(Debug, Args)]
pub struct ProvidersArgs {
    #[command(subcommand)]
    pub action: Option<ProvidersAction>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum ProvidersAction {
    /// Show one provider: classes, egress, limits, waivers, each with source and date.
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
}

pub use moverctl::job::JobError as CliError;

pub fn load_catalog(dir: Option<&std::path::Path>) -> Result<Catalog, CliError> {
    Ok(Catalog::load(dir)?)
}

/// Parse arguments, run, print any error once, and return the exit code.
pub fn main() -> std::process::ExitCode {
    pipe::install_hook();
    use clap::{CommandFactory, FromArgMatches};
    let matches = moverctl::help::matches(Cli::command());
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match run(cli) {
        Ok(code) => code.into(),
        // The reader of stdout went away (`| head`): nothing more to say to anyone.
        Err(_) if pipe::broken() => Exit::Success.into(),
        Err(e) => {
            eprintln!("moverctl: error: {e}");
            e.exit().into()
        }
    }
}

pub fn run(mut cli: Cli) -> Result<Exit, CliError> {
    log::init(&cli.log)?;
    let window = humantime::parse_duration(&cli.retry_timeout)
        .map_err(|e| CliError::Usage(format!("--retry-timeout {:?}: {e}", cli.retry_timeout)))?;
    moverctl::store::retry::set_timeout(window);
    // `plan --profile 70%:256KiB,…` is the older spelling of --size-profile (no AWS profile
    // name holds a '%').
    if let Command::Plan(a) = &mut cli.command
        && a.profile.is_none()
        && cli.profile.as_deref().is_some_and(|p| p.contains('%'))
    {
        a.profile = cli.profile.take();
    }
    moverctl::store::creds::set_cli_profile(cli.profile.clone());
    moverctl::store::set_cli_endpoint(cli.endpoint_url.clone());
    let catalog = load_catalog(cli.providers.as_deref())?;
    let load_remotes = || -> Result<moverctl::store::config::Remotes, CliError> {
        let r = moverctl::store::config::Remotes::load(cli.config.as_deref())?;
        moverctl::job::trust::remotes::check(&catalog, &r)?;
        Ok(r)
    };
    // copy, sync and exec leave no destination folder they created behind when they change
    // nothing: a dry run, or a run that failed (still empty folders only).
    let dry_run = match &cli.command {
        Command::Copy(a) => Some(a.engine.dry_run),
        Command::Sync(a) => Some(a.engine.dry_run),
        Command::Exec(a) => Some(a.engine.dry_run),
        _ => None,
    };
    let done = dispatch(cli.command, &catalog, cli.config.as_deref(), load_remotes);
    if dry_run.is_some_and(|d| d || done.is_err()) {
        moverctl::store::remove_created_if_empty();
    }
    done
}

/// Runs one command (after `run` has set up logging, the catalog and the remotes).
fn dispatch(
    command: Command,
    catalog: &Catalog,
    config: Option<&std::path::Path>,
    load_remotes: impl Fn() -> Result<moverctl::store::config::Remotes, CliError>,
) -> Result<Exit, CliError> {
    match command {
        Command::Plan(args) => plan_cmd::run(catalog, config, *args).map(|()| Exit::Success),
        Command::Providers(args) => providers_cmd::run(catalog, args).map(|()| Exit::Success),
        Command::Ls(args) => {
            let remotes = load_remotes()?;
            ls_cmd::run(&remotes, args)
        }
        Command::Probe(args) => {
            let remotes = load_remotes()?;
            probe_cmd::run(&remotes, args)
        }
        Command::Copy(args) => {
            let remotes = load_remotes()?;
            copy_cmd::run_copy(catalog, &remotes, *args)
        }
        Command::Sync(args) => {
            let remotes = load_remotes()?;
            sync_cmd::run_sync(catalog, &remotes, *args)
        }
        Command::Drain(args) => {
            let remotes = load_remotes()?;
            drain_cmd::run_drain(catalog, &remotes, *args)
        }
        Command::Stage(args) => stage_cmd::run_stage(catalog, &load_remotes()?, *args),
        Command::Exec(args) => {
            let remotes = load_remotes()?;
            copy_cmd::run_exec(catalog, &remotes, *args)
        }
        Command::Completions { shell } => docs_cmd::completions(shell).map(|()| Exit::Success),
        Command::Man { dir } => docs_cmd::man(&dir).map(|()| Exit::Success),
        Command::Status(args) => {
            let remotes = load_remotes()?;
            status_cmd::run_status(&remotes, args)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use moverctl::store::list::ListError;
    use moverctl::transfer::RunError;
    use moverctl::transfer::diff::DiffError;

    fn listing(source: object_store::Error) -> CliError {
        CliError::Run(RunError::Diff(DiffError::List(ListError::Store {
            location: "garage:b/p".into(),
            source,
        })))
    }

    /// A run error keeps its type to the exit code: a listing refused for its credentials is 4
    /// (it was 1 when the run error became text), anything else a run or journal hits is 1.
    #[test]
    fn run_and_journal_errors_choose_the_exit_code_by_type() {
        let denied = object_store::Error::PermissionDenied {
            path: "p".into(),
            source: "the store answered LIST with 403".into(),
        };
        assert_eq!(listing(denied).exit(), Exit::Credentials);
        let broken = object_store::Error::Generic {
            store: "S3",
            source: "connection reset".into(),
        };
        assert_eq!(listing(broken).exit(), Exit::Failure);
        let journal = || moverctl::journal::JournalError::Db {
            path: "j".into(),
            message: "disk full".into(),
        };
        assert_eq!(
            CliError::Run(RunError::Journal(journal())).exit(),
            Exit::Failure
        );
        assert_eq!(CliError::Journal(journal()).exit(), Exit::Failure);
    }

    /// copy, exec and sync keep 64 objects in flight by default, the number `plan` assumes
    /// (small objects are bound by latency: 32 took 30 s for 20,000 on Garage, 64 took 23 s).
    #[test]
    fn the_runs_default_window_is_the_one_plan_assumes() {
        use clap::Parser;
        let parse = |argv: &[&str]| Cli::try_parse_from(argv).expect("parses");
        let plan = match parse(&[
            "moverctl",
            "plan",
            "--from",
            "aws:us-east-1",
            "--bytes",
            "1TB",
            "--to",
            "onprem",
        ])
        .command
        {
            Command::Plan(a) => a.concurrency as usize,
            _ => unreachable!(),
        };
        assert_eq!(plan, 64);
        let runs = [
            parse(&["moverctl", "copy", "a", "b"]),
            parse(&["moverctl", "exec", "p.toml"]),
            parse(&["moverctl", "sync", "a", "b"]),
        ];
        for cli in runs {
            let transfers = match cli.command {
                Command::Copy(a) => a.engine.transfers,
                Command::Exec(a) => a.engine.transfers,
                Command::Sync(a) => a.engine.transfers,
                _ => unreachable!(),
            };
            assert_eq!(transfers, plan);
        }
    }
}
