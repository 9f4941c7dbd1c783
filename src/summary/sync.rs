//! What `sync` prints: the one-line summary a cron mail shows, the problems and notes on stderr,
//! the `--json` summary object, and the lines of a dry run.

use super::copy::credentials_refused;
use crate::job::sync::SyncOutcome as Outcome;
use crate::json::copy::event_json;
use crate::json::sync::SyncIds;
use crate::transfer::Event;
use crate::transfer::Report;
use crate::transfer::sync::{Fate, Verdict};
use crate::units::{fmt_bytes, fmt_duration};
use rust_decimal::Decimal;

/// The line a dry run prints for a copy decision (none for events a dry run does not show).
pub fn dry_run_copy_line(ev: &Event, json: bool) -> Option<String> {
    match ev {
        Event::WouldCopy { key, bytes, reason } => Some(if json {
            event_json(ev, crate::json::SYNC)
        } else {
            format!("would copy   {key}  ({}, {reason})", fmt_bytes(*bytes))
        }),
        Event::Failed { .. } | Event::Refused { .. } if json => {
            Some(event_json(ev, crate::json::SYNC))
        }
        _ => None,
    }
}

/// The line a dry run prints for a destination-only object.
pub fn dry_run_delete_line(key: &str, bytes: u64, fate: &Fate, json: bool) -> Option<String> {
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
        let mut v = crate::json::stamp(
            crate::json::SYNC,
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

pub fn secs(r: &Report) -> Decimal {
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

pub fn one_line(o: &Outcome, src: &str, dst: &str) -> String {
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
            "sync {src} -> {dst}: up to date, {} unchanged; requests {}{}; est. cost {} in {took}",
            crate::words::count(r.skipped, "object"),
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
pub fn messages(o: &Outcome, ids: &SyncIds, notes: Vec<String>) -> (Vec<String>, Vec<String>) {
    let (src, dst) = (ids.source, ids.destination);
    let (min, credentials_hint) = (&o.min_duration, o.credentials_hint.as_str());
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
        .get(crate::transfer::diff::CHANGED_AT_DESTINATION)
        .filter(|n| **n > 0)
    {
        info.push(format!(
            "{} changed at the destination since moverctl verified its copy (another writer): {}",
            crate::words::were(*n, "object"),
            if r.dry_run {
                "they would be copied again"
            } else {
                "copied again"
            }
        ));
    }
    if r.no_source_digest > 0 {
        info.push(format!(
            "{} came from a source that states no digest for {}: checked against the source by size only (--verify strict refuses {})",
            crate::words::count(r.no_source_digest, "object"),
            if r.no_source_digest == 1 { "it" } else { "them" },
            if r.no_source_digest == 1 { "it" } else { "them" }
        ));
    }
    if let Some(l) = super::copy::unverified_line(r) {
        problems.push(l.trim_start_matches("! ").to_string());
    }
    if r.interrupted {
        problems.push("interrupted: nothing was deleted; run again to resume".into());
    }
    delete_verdict(o, ids, (&mut problems, &mut info));
    if d.kept_young > 0
        && let Some(m) = min
    {
        info.push(format!(
            "kept {} ({}) younger than {}'s {}-day minimum storage duration; deleting {} now would cost {} (--allow-early-delete)",
            crate::words::count(d.kept_young, "object"),
            fmt_bytes(d.kept_young_bytes),
            m.class,
            m.days,
            if d.kept_young == 1 { "it" } else { "them" },
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
    if r.dest_filtered > 0 && ids.delete {
        info.push(format!(
            "{} only at the destination {} outside --include/--exclude and left alone",
            crate::words::count(r.dest_filtered, "object"),
            if r.dest_filtered == 1 { "is" } else { "are" }
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

/// What the delete phase's verdict means for the user: a problem when a guard held deletes
/// back, a note when --delete was not given.
fn delete_verdict(
    o: &Outcome,
    ids: &SyncIds,
    (problems, info): (&mut Vec<String>, &mut Vec<String>),
) {
    let (src, dst) = (ids.source, ids.destination);
    let (r, d) = (&o.report, &o.deletes);
    let candidates = format!(
        "{} ({}) only at the destination",
        crate::words::count(d.deletable, "object"),
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
            ids.max_delete,
            d.allowed,
            r.dest_objects,
            if o.report.dry_run {
                String::new()
            } else {
                format!(
                    " (they are listed in {}: select key from sync_candidates where status = 'held')",
                    ids.journal.display()
                )
            }
        )),
        Some(Verdict::NotAsked) => info.push(format!(
            "{candidates} were left alone (no --delete)"
        )),
        _ => {}
    }
}
