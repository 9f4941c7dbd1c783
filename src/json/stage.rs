//! `stage --json` (`moverctl.stage/1`): a stage's one document (`event` `staged` or
//! `not_ready`), an evict's line per kept file then its summary (`evicted`), a wait's one
//! document (`ready` or `timeout`).

use crate::job::stage::evict::{EvictOutcome, Kept};
use crate::job::stage::ready::Ready;
use crate::job::stage::{NodeShare, StageOutcome};
use serde_json::{Value, json};

fn line(v: Value) -> String {
    super::stamp(super::STAGE, v).to_string()
}

fn node(n: Option<&NodeShare>) -> Value {
    match n {
        Some(n) => json!({"index": n.index, "count": n.count, "start": n.start, "end": n.end,
            "split": n.split}),
        None => Value::Null,
    }
}

pub fn stage_line(o: &StageOutcome) -> String {
    let r = &o.report;
    let keys = |f: &[crate::transfer::Failure]| f.iter().map(|f| f.key.clone()).collect::<Vec<_>>();
    line(json!({
        "event": if o.marker.is_some() { "staged" } else { "not_ready" },
        "source": o.source,
        "fast_dir": o.fast_dir.display().to_string(),
        "node": node(o.node.as_ref()),
        "objects": r.copied + r.skipped,
        "bytes": r.copied_bytes + r.skipped_bytes,
        "copied": r.copied,
        "copied_bytes": r.copied_bytes,
        "skipped": r.skipped,
        "failed": {"objects": r.failed.len(), "bytes": r.failed_bytes, "keys": keys(&r.failed)},
        "refused": {"objects": r.refused.len(), "keys": keys(&r.refused)},
        "unverified": r.unverified.len(),
        "seconds": r.elapsed.as_secs_f64(),
        "marker": o.marker.as_ref().map(|(p, _)| p.display().to_string()),
        "manifest_files": o.manifest.as_ref().map(|(_, n)| *n),
        "exit_code": o.exit as u8,
    }))
}

/// A staged file evict kept.
pub fn kept_line(key: &str, k: &Kept) -> String {
    line(json!({"event": "kept", "key": key, "reason": k.reason(), "only_copy": k.only_copy()}))
}

/// The evict's summary.
pub fn evict_line(o: &EvictOutcome) -> String {
    line(json!({
        "event": "evicted",
        "fast_dir": o.fast_dir.display().to_string(),
        "removed": o.removed,
        "removed_bytes": o.removed_bytes,
        "kept": o.kept,
        "kept_only_copy": o.kept_only_copy,
        "gone": o.gone,
        "others": o.others,
        "folders_removed": o.folders_removed,
        "fast_dir_removed": o.fast_dir_removed,
        "exit_code": o.exit() as u8,
    }))
}

pub fn ready_line(r: &Ready) -> String {
    let (objects, bytes) = r
        .markers
        .iter()
        .filter_map(|(_, m)| m.as_ref())
        .fold((0u64, 0u64), |(o, b), m| (o + m.objects, b + m.bytes));
    line(json!({
        "event": if r.ready() { "ready" } else { "timeout" },
        "fast_dir": r.fast_dir.display().to_string(),
        "markers": r.markers.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
        "missing": r.markers.iter().filter(|(_, m)| m.is_none()).map(|(n, _)| n.clone()).collect::<Vec<_>>(),
        "objects": objects,
        "bytes": bytes,
        "seconds": r.waited.as_secs_f64(),
        "exit_code": r.exit() as u8,
    }))
}
