//! `moverctl ls LOCATION`: keys, sizes and totals, streamed in key order.

use super::CliError;
use super::json::{LS, stamp};
use clap::Args;
use moverctl::store::config::Remotes;
use moverctl::store::list::Listed;
use moverctl::units::fmt_bytes;
use std::io::Write;

#[derive(Debug, Args)]
pub struct LsArgs {
    /// s3://bucket/prefix, gs://…, az://…, a path, or REMOTE:bucket/prefix.
    pub location: String,
    /// One JSON object per line (objects, refused keys, then a summary).
    #[arg(long)]
    pub json: bool,
}

pub fn run(remotes: &Remotes, args: LsArgs) -> Result<super::exit::Exit, CliError> {
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    let n = moverctl::job::inspect::ls(remotes, &args.location, |item| {
        line(&mut out, item, args.json)
    })?;
    if args.json {
        let summary = serde_json::json!({"event": "summary", "objects": n.objects, "bytes": n.bytes,
                                         "refused": {"objects": n.refused}});
        writeln!(out, "{}", stamp(LS, summary)).map_err(io_err)?;
    } else {
        writeln!(
            out,
            "{} objects, {} ({} bytes){}",
            n.objects,
            fmt_bytes(n.bytes),
            n.bytes,
            if n.refused > 0 {
                format!(", {} keys refused", n.refused)
            } else {
                String::new()
            }
        )
        .map_err(io_err)?;
    }
    out.flush().map_err(io_err)?;
    Ok(if n.refused > 0 {
        super::exit::Exit::Partial
    } else {
        super::exit::Exit::Success
    })
}

/// One entry of the listing: a line on stdout (a refused key also on stderr).
fn line(out: &mut impl Write, item: &Listed, json: bool) -> Result<(), CliError> {
    match item {
        Listed::Object(e) => {
            let line = if json {
                stamp(
                    LS,
                    serde_json::json!({
                        "event": "object", "key": e.key, "bytes": e.size,
                        "last_modified": e.last_modified.to_rfc3339(), "etag": e.e_tag,
                    }),
                )
                .to_string()
            } else {
                format!(
                    "{:>14}  {}  {}",
                    e.size,
                    e.last_modified.format("%Y-%m-%d %H:%M:%S"),
                    e.key
                )
            };
            writeln!(out, "{line}").map_err(io_err)?;
        }
        Listed::Refused { key, reason } => {
            if json {
                let v = serde_json::json!({"event": "refused", "key": key, "reason": reason});
                writeln!(out, "{}", stamp(LS, v)).map_err(io_err)?;
            }
            eprintln!("moverctl: cannot handle key {key:?}: {reason}");
        }
    }
    Ok(())
}

fn io_err(e: std::io::Error) -> CliError {
    super::pipe::note(&e);
    CliError::Failure(format!("writing the listing: {e}"))
}
