//! `moverctl probe LOCATION`: what the store really does (checksum headers, ETags, metadata,
//! conditional create, listing order, part sizes) and how fast it is, as a table or JSON; the
//! result is saved for the planner unless `--no-save`.

use super::CliError;
use super::exit::Exit;
use clap::Args;
use moverctl::probe::{self, ProbeOpts};
use moverctl::store::config::Remotes;
use moverctl::units::parse_size;

#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// s3://bucket/prefix, gs://…, az://…, a path, or REMOTE:bucket/prefix. Test objects go under
    /// PREFIX.moverctl-probe-RANDOM/ and are removed at the end.
    pub location: String,
    /// Print the report as JSON (schema moverctl.probe/1) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Bytes per object in the throughput measurements (one stream, then --streams in parallel).
    #[arg(long, default_value = "16MiB", value_name = "SIZE")]
    pub size: String,
    /// Parallel streams for the multi-stream throughput measurement.
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub streams: usize,
    /// Small requests of each kind (PUT, HEAD, GET) for the latency median.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub requests: usize,
    /// Do not save the result in the state folder (MOVERCTL_STATE_DIR, XDG_STATE_HOME/moverctl or
    /// ~/.local/state/moverctl, under probes/PROVIDER/).
    #[arg(long)]
    pub no_save: bool,
}

/// Notes from the probe (Ctrl-C taken), on stderr.
struct Notes;

impl moverctl::job::Observer for Notes {
    fn note(&self, message: &str) {
        eprintln!("moverctl: {message}");
    }
}

pub fn run(remotes: &Remotes, args: ProbeArgs) -> Result<Exit, CliError> {
    let usage = |m: String| CliError::Usage(m);
    let size = parse_size(&args.size).map_err(|e| usage(format!("--size: {e}")))?;
    if size == 0 || size > 5 << 30 {
        return Err(usage(format!(
            "--size {}: give a size from 1 byte to 5GiB",
            args.size
        )));
    }
    if args.streams == 0 || args.streams > 256 {
        return Err(usage("--streams must be from 1 to 256".into()));
    }
    if args.requests == 0 || args.requests > 10_000 {
        return Err(usage("--requests must be from 1 to 10000".into()));
    }
    let opts = ProbeOpts {
        stream_bytes: size,
        streams: args.streams,
        requests: args.requests,
        s3: None,
        cancel: None,
    };
    let report = moverctl::job::inspect::probe(remotes, &args.location, opts, &Notes)?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("reports serialize")
        );
    } else {
        print!("{}", probe::render_table(&report));
    }
    if !args.no_save {
        let path = probe::saved::save(&report)?;
        let msg = format!("Saved {}", path.display());
        if args.json {
            eprintln!("{msg}");
        } else {
            println!("{msg}");
        }
    }
    if report.cleanup.left.is_empty() {
        Ok(Exit::Success)
    } else {
        for k in &report.cleanup.left {
            eprintln!("moverctl: could not remove probe object {k}");
        }
        Ok(Exit::Partial)
    }
}
