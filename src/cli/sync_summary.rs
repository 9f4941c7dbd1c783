//! What `sync` prints: the one-line summary a cron mail shows, the problems and notes on stderr,
//! the `--json` summary object, and the lines of a dry run.

use super::args::SyncArgs;
use super::copy_summary::{copied_key, credentials_refused, event_json, failed_json, refused_json};
use super::engine::Resolved;
use moverctl::job::sync::SyncOutcome as Outcome;
use moverctl::transfer::Event;
use moverctl::transfer::Report;
use moverctl::transfer::sync::{Fate, MinDuration, Verdict};
use moverctl::units::{fmt_bytes, fmt_duration};
use rust_decimal::Decimal;

/// The line a dry run prints for a copy decision (none for events a dry run does not show).
pub(super) fn dry_run_copy_line(ev: &Event, json: bool) -> Option<String> {
    match ev {
        Event::WouldCopy { key, bytes, reason } => Some(if json {
            event_json(ev, super::json::SYNC)
        } else {
            format!("would copy   {key}  ({}, {reason})", fmt_bytes(*bytes))
        }),
        Event::Failed { .. } | Event::Refused { .. } if json => {
            Some(event_json(ev, super::json::SYNC))
        }
        _ => None,
    }
}

/// The line a dry run prints for a destination-only object.
pub(super) fn dry_run_delete_line(
    key: &str,
    bytes: u64,
    fate: &Fate,
    json: bool,
) -> Option<String> {
    let (event, extra) = match fate {
        Fate::WouldDelete => ("would_delete", String::new()),
        Fate::Kept(fee) => (
            "kept_min_duration",
            format!("younger than the minimum storage duration; deleting it now would cost {fee}"),
        ),
        Fate::Held => ("not_deleted", String::new()),
        Fate::Deleted | Fate::DeleteFailed(_) => return None,
    };
    if json {
        let mut v = super::json::stamp(
            super::json::SYNC,
            serde_json::json!({"event": event, "key": key, "bytes": bytes}),
        );
        if let Fate::Kept(fee) = fate {
            v["early_deletion_fee"] = fee.to_json();
        }
        return Some(v.to_string());
    }
    let verb = match fate {
        Fate::WouldDelete => "would delete",
        Fate::Kept(_) => "would keep  ",
        _ => "not deleted ",
    };
    let extra = if extra.is_empty() {
        extra
    } else {
        format!(", {extra}")
    };
    Some(format!("{verb} {key}  ({}{extra})", fmt_bytes(bytes)))
}

pub(super) fn secs(r: &Report) -> Decimal {
    Decimal::from(r.elapsed.as_millis() as u64) / Decimal::from(1000)
}

/// Run times as a cron line wants them: `0.3 s`, `42.0 s`, then `fmt_duration`'s `1 min 5 s`.
fn took(secs: Decimal) -> String {
    if secs < Decimal::from(60) {
        format!("{} s", secs.round_dp(1))
    } else {
        fmt_duration(secs)
    }
}

pub(super) fn one_line(o: &Outcome, src: &str, dst: &str) -> String {
    let r = &o.report;
    let d = &o.deletes;
    let dry = if r.dry_run { " (dry run)" } else { "" };
    let requests = format!(
        "LIST {}+{}, GET {}, PUT {}, HEAD {}, DELETE {}",
        r.requests_list_src,
        r.requests_list_dst,
        r.requests_get,
        r.requests_put,
        r.requests_head,
        d.requests_delete
    );
    let listing_only = r.requests_get + r.requests_put + r.requests_head + d.requests_delete == 0;
    let took = took(secs(r));
    let guard = matches!(
        d.verdict,
        Some(Verdict::GuardTripped | Verdict::EmptySource)
    );
    if r.copied == 0
        && d.deleted == 0
        && r.failed.is_empty()
        && r.refused.is_empty()
        && !r.dry_run
        && !guard
    {
        return format!(
            "sync {src} -> {dst}: up to date, {} objects unchanged; requests {}{}; est. cost {} in {took}",
            r.skipped,
            requests,
            if listing_only { " (listing only)" } else { "" },
            o.cost.total()
        );
    }
    let (copied, deleted) = if r.dry_run {
        ("would copy", "would delete")
    } else {
        ("copied", "deleted")
    };
    let would_delete = if r.dry_run && d.verdict == Some(Verdict::Deleted) {
        (d.deletable, d.deletable_bytes)
    } else {
        (d.deleted, d.deleted_bytes)
    };
    let held = match d.verdict {
        Some(Verdict::GuardTripped) => format!(
            ", delete guard tripped: {} to delete > {} allowed, nothing deleted",
            d.deletable, d.allowed
        ),
        Some(Verdict::EmptySource) => format!(
            ", delete guard tripped: the source listed no objects, {} kept, nothing deleted (--allow-empty-source)",
            d.deletable
        ),
        _ => String::new(),
    };
    format!(
        "sync {src} -> {dst}{dry}: {copied} {} ({}), {deleted} {} ({}){held}, unchanged {}, failed {}; requests {requests}; est. cost {} in {took}",
        r.copied,
        fmt_bytes(r.copied_bytes),
        would_delete.0,
        fmt_bytes(would_delete.1),
        r.skipped,
        r.failed.len() + r.refused.len() + d.failed.len(),
        o.cost.total()
    )
}

/// (problems, information): problems are printed even with --quiet.
pub(super) fn messages(
    o: &Outcome,
    args: &SyncArgs,
    res: &Resolved,
    min: &Option<MinDuration>,
    (src, dst): (&str, &str),
    notes: Vec<String>,
    credentials_hint: &str,
) -> (Vec<String>, Vec<String>) {
    let r = &o.report;
    let d = &o.deletes;
    let mut problems = notes;
    let mut info = Vec::new();
    for f in r.failed.iter().take(20) {
        problems.push(format!("failed: {}: {}", f.key, f.error));
    }
    if r.failed.len() > 20 {
        problems.push(format!(
            "… and {} more failures (see --json)",
            r.failed.len() - 20
        ));
    }
    for f in r.refused.iter().take(20) {
        problems.push(format!("refused: {:?}: {}", f.key, f.error));
    }
    for (_, e) in d.failed.iter().take(20) {
        problems.push(format!("delete failed: {e}"));
    }
    if let Some(m) = credentials_refused(r, src, dst, credentials_hint) {
        problems.push(format!("error: {m}"));
    }
    if let Some(n) = r
        .reasons
        .get(moverctl::transfer::diff::CHANGED_AT_DESTINATION)
        .filter(|n| **n > 0)
    {
        info.push(format!(
            "{n} objects were changed at the destination since moverctl verified its copy (another writer): {}",
            if r.dry_run { "they would be copied again" } else { "copied again" }
        ));
    }
    if r.no_source_digest > 0 {
        info.push(format!(
            "{} objects came from a source that states no digest for them: checked against the source by size only (--verify strict refuses them)",
            r.no_source_digest
        ));
    }
    if let Some(l) = super::copy_summary::unverified_line(r) {
        problems.push(l.trim_start_matches("! ").to_string());
    }
    if r.interrupted {
        problems.push("interrupted: nothing was deleted; run again to resume".into());
    }
    let candidates = format!(
        "{} objects ({}) only at the destination",
        d.deletable,
        fmt_bytes(d.deletable_bytes)
    );
    match d.verdict {
        Some(Verdict::Suppressed) if !r.interrupted => problems.push(format!(
            "{candidates} were not deleted: this run had {} failed and {} refused objects, and a run with any copy error never deletes",
            r.failed.len(),
            r.refused.len()
        )),
        Some(Verdict::EmptySource) => problems.push(format!(
            "delete guard: the source {src} listed no objects{}, so mirroring it would delete all {} objects ({}) at {dst}; nothing was deleted. \
             An unmounted volume, a wrong path or bucket, or missing permissions look like this. \
             If the source really is empty now, run once with --allow-empty-source",
            if r.filtered > 0 { " within --include/--exclude" } else { "" },
            d.deletable,
            fmt_bytes(d.deletable_bytes)
        )),
        Some(Verdict::GuardTripped) => problems.push(format!(
            "delete guard: this run would delete {candidates}, more than --max-delete {} allows ({} of the {} objects listed at {dst}); nothing was deleted. \
             First check that {src} and {dst} are the paths you meant and do not overlap (one store reached through two spellings of its endpoint, \
             a source inside the destination, a wrong bucket or prefix): deleting then would remove objects that are not extra. \
             Only if the source really lost them, run once with a higher --max-delete{}",
            args.max_delete,
            d.allowed,
            r.dest_objects,
            if res.opts.dry_run {
                String::new()
            } else {
                format!(
                    " (they are listed in {}: select key from sync_candidates where status = 'held')",
                    res.journal_path.display()
                )
            }
        )),
        Some(Verdict::NotAsked) => info.push(format!(
            "{candidates} were left alone (no --delete)"
        )),
        _ => {}
    }
    if d.kept_young > 0
        && let Some(m) = min
    {
        info.push(format!(
            "kept {} objects ({}) younger than {}'s {}-day minimum storage duration; deleting them now would cost {} (--allow-early-delete)",
            d.kept_young,
            fmt_bytes(d.kept_young_bytes),
            m.class,
            m.days,
            d.kept_fee
        ));
    }
    if !d.early_fees.is_zero() {
        info.push(format!(
            "deleting objects before their minimum storage duration {} {} in early-deletion fees",
            if r.dry_run { "would cost" } else { "cost" },
            d.early_fees
        ));
    }
    if r.dest_filtered > 0 && args.delete {
        info.push(format!(
            "{} objects only at the destination are outside --include/--exclude and were left alone",
            r.dest_filtered
        ));
    }
    if o.cost.source_priced_as.is_none() || o.cost.destination_priced_as.is_none() {
        info.push(
            "a side without a catalog provider is priced at $0 (set `provider` in its remote)"
                .into(),
        );
    }
    (problems, info)
}

pub(super) fn summary_json(
    o: &Outcome,
    src: &str,
    dst: &str,
    args: &SyncArgs,
    res: &Resolved,
    min: &Option<MinDuration>,
) -> serde_json::Value {
    let r = &o.report;
    let d = &o.deletes;
    let mut v = serde_json::json!({
        "event": "summary",
        "command": "sync",
        "source": src,
        "destination": dst,
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
            "asked": args.delete,
            "verdict": d.verdict.map(|v| v.as_str()),
            "max_delete": args.max_delete,
            "allow_empty_source": args.allow_empty_source,
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
        "seconds": secs(r).to_string().parse::<serde_json::Number>().ok(),
        "journal": (!r.dry_run).then(|| res.journal_path.display().to_string()),
    });
    v[copied_key(r)] = serde_json::json!({"objects": r.copied, "bytes": r.copied_bytes});
    super::json::stamp(super::json::SYNC, v)
}
