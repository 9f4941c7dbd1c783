//! `moverctl ls LOCATION`: keys, sizes and totals, streamed in key order.

use super::CliError;
use super::json::{LS, stamp};
use crate::store::Store;
use crate::store::config::Remotes;
use crate::store::list::{Listed, list};
use crate::units::fmt_bytes;
use clap::Args;
use futures::StreamExt;
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
    let store = Store::open(&args.location, remotes)?;
    let hint = super::stores::credentials_hint(&[&store]);
    let rt = super::runtime()?;
    let listed = rt.block_on(async move {
        let mut stream = list(&store);
        let out = std::io::stdout();
        let mut out = std::io::BufWriter::new(out.lock());
        let (mut objects, mut bytes, mut refused) = (0u64, 0u64, 0u64);
        while let Some(item) = stream.next().await {
            match item? {
                Listed::Object(e) => {
                    objects += 1;
                    bytes += e.size;
                    let line = if args.json {
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
                    refused += 1;
                    if args.json {
                        writeln!(
                            out,
                            "{}",
                            stamp(
                                LS,
                                serde_json::json!({"event": "refused", "key": key, "reason": reason})
                            )
                        )
                        .map_err(io_err)?;
                    }
                    eprintln!("moverctl: cannot handle key {key:?}: {reason}");
                }
            }
        }
        if args.json {
            writeln!(
                out,
                "{}",
                stamp(
                    LS,
                    serde_json::json!({"event": "summary", "objects": objects, "bytes": bytes,
                                       "refused": {"objects": refused}})
                )
            )
            .map_err(io_err)?;
        } else {
            writeln!(
                out,
                "{objects} objects, {} ({bytes} bytes){}",
                fmt_bytes(bytes),
                if refused > 0 {
                    format!(", {refused} keys refused")
                } else {
                    String::new()
                }
            )
            .map_err(io_err)?;
        }
        out.flush().map_err(io_err)?;
        Ok(if refused > 0 {
            super::exit::Exit::Partial
        } else {
            super::exit::Exit::Success
        })
    });
    listed.map_err(|e: CliError| e.naming_credentials(&hint))
}

fn io_err(e: std::io::Error) -> CliError {
    super::pipe::note(&e);
    CliError::Failure(format!("writing the listing: {e}"))
}
