//! The `--json` summary of a sync run (schema `moverctl.sync/1`).

use super::copy::{copied_key, failed_json, refused_json};
use crate::job::sync::SyncOutcome;
use crate::transfer::Report;
use rust_decimal::Decimal;

/// What a sync run was asked, for its summary.
pub struct SyncIds<'a> {
    pub source: &'a str,
    pub destination: &'a str,
    /// `--delete`, `--max-delete` as given, `--allow-empty-source`.
    pub delete: bool,
    pub max_delete: &'a str,
    pub allow_empty_source: bool,
    /// The journal (left out of a dry run's summary).
    pub journal: &'a std::path::Path,
}

/// A run's seconds, to the millisecond.
fn seconds(r: &Report) -> Decimal {
    Decimal::from(r.elapsed.as_millis() as u64) / Decimal::from(1000)
}

pub fn summary_json(o: &SyncOutcome, ids: &SyncIds) -> serde_json::Value {
    let min = &o.min_duration;
    let r = &o.report;
    let d = &o.deletes;
    let mut v = serde_json::json!({
        "event": "summary",
        "command": "sync",
        "source": ids.source,
        "destination": ids.destination,
        "dry_run": r.dry_run,
        "interrupted": r.interrupted,
        "stopped_for_credentials": r.stopped_for_credentials,
        "exit_code": o.exit as u8,
        "skipped": {"objects": r.skipped, "bytes": r.skipped_bytes},
        "failed": failed_json(r),
        "refused": refused_json(r),
        "filtered": r.filtered,
        "reasons": r.reasons,
        "verified_by": r.verified_by,
        "no_source_digest": r.no_source_digest,
        "unverified": {"objects": r.unverified.len(), "keys": r.unverified.iter().take(100).collect::<Vec<_>>()},
        "source_objects": r.src_objects,
        "destination_objects": r.dest_objects,
        "delete": {
            "asked": ids.delete,
            "verdict": d.verdict.map(|v| v.as_str()),
            "max_delete": ids.max_delete,
            "allow_empty_source": ids.allow_empty_source,
            "allowed": d.allowed,
            "candidates": {"objects": d.deletable, "bytes": d.deletable_bytes},
            "deleted": {"objects": d.deleted, "bytes": d.deleted_bytes},
            "failed": {"objects": d.failed.len(),
                       "keys": d.failed.iter().take(100).map(|(k, e)| serde_json::json!({"key": k, "error": e})).collect::<Vec<_>>()},
            "kept_min_duration": {"objects": d.kept_young, "bytes": d.kept_young_bytes,
                                  "early_deletion_fee": d.kept_fee.to_json(),
                                  "class": min.as_ref().map(|m| m.class.clone()),
                                  "days": min.as_ref().map(|m| m.days)},
            "protected_by_filters": r.dest_filtered,
        },
        "requests": {"list_source": r.requests_list_src, "list_destination": r.requests_list_dst,
                     "get": r.requests_get, "put": r.requests_put, "head": r.requests_head,
                     "delete": d.requests_delete,
                     "get_by_destination": r.fetched_by_destination},
        "bytes_read": r.read_bytes,
        "bytes_fetched_by_destination": r.fetched_by_destination_bytes,
        "bytes_written": r.written_bytes,
        "server_side": {"objects": r.server_side_objects, "bytes": r.server_side_bytes},
        "retries": r.retries,
        "cost": o.cost.json(),
        "seconds": seconds(r).to_string().parse::<serde_json::Number>().ok(),
        "journal": (!r.dry_run).then(|| ids.journal.display().to_string()),
    });
    v[copied_key(r)] = serde_json::json!({"objects": r.copied, "bytes": r.copied_bytes});
    super::stamp(super::SYNC, v)
}
