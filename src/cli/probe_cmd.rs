//! `moverctl probe LOCATION`: what the store really does (checksum headers, ETags, metadata,
//! conditional create, listing order, part sizes) and how fast it is, as a table or JSON; the
//! result is saved for the planner unless `--no-save`.

use super::CliError;
use super::exit::Exit;
use crate::probe::{self, ProbeOpts};
use crate::store::Store;
use crate::store::config::Remotes;
use crate::units::parse_bytes;
use clap::Args;
use std::sync::Arc;

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

/// Whether the store is served from this machine: a local folder, or an endpoint whose host is a
/// loopback address (`127.0.0.0/8`, `::1`, `localhost`). Only the remote's own endpoint is read.
fn on_this_machine(store: &Store, remotes: &Remotes) -> bool {
    use crate::store::location::Location;
    let remote = match &store.location {
        Location::Local { .. } | Location::Memory { .. } => return true,
        Location::S3 { remote, .. }
        | Location::Gcs { remote, .. }
        | Location::Azure { remote, .. } => remote.as_deref(),
    };
    let Some(endpoint) = remote
        .and_then(|r| remotes.get(r))
        .and_then(|r| r.endpoint.as_deref())
    else {
        return false;
    };
    let Ok(url) = url::Url::parse(endpoint) else {
        return false;
    };
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

pub fn run(remotes: &Remotes, args: ProbeArgs) -> Result<Exit, CliError> {
    let usage = |m: String| CliError::Usage(m);
    let size = parse_bytes(&args.size).map_err(|e| usage(format!("--size: {e}")))?;
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
    // The probe writes (and removes) test objects: a missing local folder is created.
    let store = Store::open_destination(&args.location, remotes)?;
    let s3 = probe::s3raw::open_s3(&args.location, remotes)?;
    let rt = super::runtime()?;
    let report = rt.block_on(async {
        let cancel = Arc::new(tokio::sync::Notify::new());
        let c = cancel.clone();
        let watcher = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!(
                    "moverctl: interrupted; removing the probe's test objects (Ctrl-C again to stop at once)"
                );
                c.notify_one();
                if tokio::signal::ctrl_c().await.is_ok() {
                    eprintln!(
                        "moverctl: stopped; test objects may remain under a .moverctl-probe-* prefix"
                    );
                    std::process::exit(130);
                }
            }
        });
        let opts = ProbeOpts {
            stream_bytes: size,
            streams: args.streams,
            requests: args.requests,
            s3,
            cancel: Some(cancel),
        };
        let r = probe::probe(&store, opts).await;
        watcher.abort();
        r
    })?;
    let mut report = report;
    report.on_this_machine = on_this_machine(&store, remotes);
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
