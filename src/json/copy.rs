//! The `--json` documents of a copy or exec run (schema `moverctl.copy/1`; sync's reuse the
//! event lines and the failed/refused objects): one line per object event, then the summary.

use crate::plan::file::PlanFile;
use crate::transfer::{Event, Report};

/// One event line of `--json` output (`schema` is the command's).
pub fn event_json(ev: &Event, schema: &str) -> String {
    let v = match ev {
        Event::Copied {
            key,
            bytes,
            verified_by,
        } => {
            serde_json::json!({"event": "copied", "key": key, "bytes": bytes, "verified_by": verified_by})
        }
        Event::Skipped { key, bytes, reason } => {
            serde_json::json!({"event": "skipped", "key": key, "bytes": bytes, "reason": reason})
        }
        Event::WouldCopy { key, bytes, reason } => {
            serde_json::json!({"event": "would_copy", "key": key, "bytes": bytes, "reason": reason})
        }
        Event::Failed { key, error } => {
            serde_json::json!({"event": "failed", "key": key, "error": error})
        }
        Event::Refused { key, reason } => {
            serde_json::json!({"event": "refused", "key": key, "reason": reason})
        }
        Event::Stale {
            key,
            bytes,
            gone,
            reason,
        } => {
            let event = match gone {
                true => "gone_since_inventory",
                false => "changed_since_inventory",
            };
            serde_json::json!({"event": event, "key": key, "bytes": bytes, "reason": reason})
        }
    };
    super::stamp(schema, v).to_string()
}

/// The `failed` object of a JSON summary: counts and the first 100 keys with their errors.
pub fn failed_json(r: &Report) -> serde_json::Value {
    serde_json::json!({
        "objects": r.failed.len(),
        "bytes": r.failed_bytes,
        "keys": r.failed.iter().take(100).map(|f| serde_json::json!({"key": f.key, "error": f.error})).collect::<Vec<_>>(),
    })
}

/// The `refused` object of a JSON summary: the count and the first 100 keys a store refused,
/// with the reason.
pub fn refused_json(r: &Report) -> serde_json::Value {
    serde_json::json!({
        "objects": r.refused.len(),
        "keys": r
            .refused
            .iter()
            .take(100)
            .map(|f| serde_json::json!({"key": f.key, "reason": f.error}))
            .collect::<Vec<_>>(),
    })
}

/// The `since_inventory` object of a JSON summary (`--inventory` runs): objects changed or gone
/// at the source since the inventory, counts and the first 100 keys with what was found.
pub fn since_inventory_json(r: &Report) -> serde_json::Value {
    let keys = |v: &[crate::transfer::Failure]| {
        v.iter()
            .take(100)
            .map(|f| serde_json::json!({"key": f.key, "reason": f.error}))
            .collect::<Vec<_>>()
    };
    serde_json::json!({
        "changed": {"objects": r.changed_since_inventory.len(), "keys": keys(&r.changed_since_inventory)},
        "gone": {"objects": r.gone_since_inventory.len(), "keys": keys(&r.gone_since_inventory)},
    })
}

/// The copied (or, in a dry run, would-copy) objects of a summary, under the name that says
/// which.
pub fn copied_key(r: &Report) -> &'static str {
    if r.dry_run { "would_copy" } else { "copied" }
}

/// Where a copy or exec ran, for its summary.
pub struct RunIds<'a> {
    pub command: &'a str,
    pub source: &'a str,
    pub destination: &'a str,
    pub journal: &'a std::path::Path,
    pub exit: crate::exit::Exit,
}

pub fn summary_json(r: &Report, plan: Option<&PlanFile>, ids: &RunIds) -> String {
    let mut v = serde_json::json!({
        "event": "summary",
        "command": ids.command,
        "source": ids.source,
        "destination": ids.destination,
        "dry_run": r.dry_run,
        "interrupted": r.interrupted,
        "stopped_for_credentials": r.stopped_for_credentials,
        "exit_code": ids.exit as u8,
        "skipped": {"objects": r.skipped, "bytes": r.skipped_bytes},
        "failed": failed_json(r),
        "refused": refused_json(r),
        "since_inventory": since_inventory_json(r),
        "filtered": r.filtered,
        "verified_by": r.verified_by,
        "no_source_digest": r.no_source_digest,
        "unverified": {"objects": r.unverified.len(), "keys": r.unverified.iter().take(100).collect::<Vec<_>>()},
        "reasons": r.reasons,
        "requests": {"list_source": r.requests_list_src, "list_destination": r.requests_list_dst,
                     "get": r.requests_get, "put": r.requests_put, "head": r.requests_head,
                     "get_by_destination": r.fetched_by_destination},
        "bytes_read": r.read_bytes,
        "bytes_fetched_by_destination": r.fetched_by_destination_bytes,
        "bytes_written": r.written_bytes,
        "server_side": {"objects": r.server_side_objects, "bytes": r.server_side_bytes},
        "resumed_parts": r.resumed_parts,
        "aborted_uploads": r.aborted_uploads,
        "open_multipart_uploads": r.open_uploads,
        "retries": r.retries,
        "throttle_events": r.throttle_events,
        "seconds": super::number(rust_decimal::Decimal::from(r.elapsed.as_millis() as u64) / rust_decimal::Decimal::from(1000)),
        "predicted_seconds": plan.map(|p| super::number(&p.prediction.seconds)),
        "journal": (!r.dry_run).then(|| ids.journal.display().to_string()),
    });
    v[copied_key(r)] = serde_json::json!({"objects": r.copied, "bytes": r.copied_bytes});
    super::stamp(super::COPY, v).to_string()
}
