//! What `copy` and `exec` print: the text summary on stderr, the `--json` summary and event
//! lines, and the run set against its plan.

use super::engine::Resolved;
use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use moverctl::job::pricing::VsPlan;
use moverctl::plan::file::PlanFile;
use moverctl::transfer::{Event, Report};
use moverctl::units::{fmt_bytes, fmt_duration};
use rust_decimal::Decimal;

/// When objects failed because a store refused the credentials (the run exits 4, not 3): what
/// to say, naming the locations and where their credentials came from (`hint`, see
/// [`super::stores::credentials_hint`]), never a value.
pub(super) fn credentials_refused(r: &Report, src: &str, dst: &str, hint: &str) -> Option<String> {
    let n = r.auth_failures();
    (n > 0 || r.stopped_for_credentials.is_some()).then(|| {
        let stopped = match &r.stopped_for_credentials {
            Some(why) => format!("the run stopped early: {why}. "),
            None => String::new(),
        };
        format!(
            "{stopped}{n} of {} failed objects failed because the store refused the credentials ({src} -> {dst}); \
             the failures name the request that was refused; {hint}. Fix or renew those credentials \
             and run again to resume",
            r.failed.len()
        )
    })
}

/// One event line of `--json` output (`schema` is the command's).
pub(super) fn event_json(ev: &Event, schema: &str) -> String {
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
    };
    super::json::stamp(schema, v).to_string()
}

/// The `failed` object of a JSON summary: counts and the first 100 keys with their errors.
pub(super) fn failed_json(r: &Report) -> serde_json::Value {
    serde_json::json!({
        "objects": r.failed.len(),
        "bytes": r.failed_bytes,
        "keys": r.failed.iter().take(100).map(|f| serde_json::json!({"key": f.key, "error": f.error})).collect::<Vec<_>>(),
    })
}

/// The `refused` object of a JSON summary: the count and the first 100 keys a store refused,
/// with the reason.
pub(super) fn refused_json(r: &Report) -> serde_json::Value {
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

/// The copied (or, in a dry run, would-copy) objects of a summary, under the name that says
/// which.
pub(super) fn copied_key(r: &Report) -> &'static str {
    if r.dry_run { "would_copy" } else { "copied" }
}

/// Where a copy or exec ran, for its summary.
pub(super) struct RunIds<'a> {
    pub command: &'a str,
    pub source: &'a str,
    pub destination: &'a str,
    pub journal: &'a std::path::Path,
    pub exit: super::exit::Exit,
}

pub(super) fn summary_json(r: &Report, plan: Option<&PlanFile>, ids: &RunIds) -> String {
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
        "seconds": super::json::number(rust_decimal::Decimal::from(r.elapsed.as_millis() as u64) / rust_decimal::Decimal::from(1000)),
        "predicted_seconds": plan.map(|p| super::json::number(&p.prediction.seconds)),
        "journal": (!r.dry_run).then(|| ids.journal.display().to_string()),
    });
    v[copied_key(r)] = serde_json::json!({"objects": r.copied, "bytes": r.copied_bytes});
    super::json::stamp(super::json::COPY, v).to_string()
}

/// `verified: source-md5+dest-md5: 3, …` (labels in order), or nothing when none was copied.
pub(super) fn verified_line(r: &Report) -> String {
    if r.verified_by.is_empty() {
        return String::new();
    }
    let v: Vec<String> = r
        .verified_by
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    let mut out = format!("verified: {}\n", v.join(", "));
    if r.server_side_objects > 0 {
        out.push_str(&format!(
            "server-side: {} objects, {} copied by the destination service (no bytes through this machine)\n",
            r.server_side_objects,
            fmt_bytes(r.server_side_bytes)
        ));
    }
    out
}

/// Objects whose destination was checked by size only.
pub(super) fn size_only(r: &Report) -> u64 {
    r.verified_by
        .iter()
        .filter(|(k, _)| k.write == moverctl::transfer::WriteCheck::DestSize)
        .map(|(_, v)| v)
        .sum()
}

pub(super) fn summary_text(
    r: &Report,
    src: &str,
    dst: &str,
    res: &Resolved,
    plan: Option<&PlanFile>,
) -> String {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    t.set_header(vec!["", "objects", "bytes"]);
    let verb = if r.dry_run { "would copy" } else { "copied" };
    t.add_row(vec![
        verb.to_string(),
        r.copied.to_string(),
        fmt_bytes(r.copied_bytes),
    ]);
    t.add_row(vec![
        "skipped".to_string(),
        r.skipped.to_string(),
        fmt_bytes(r.skipped_bytes),
    ]);
    t.add_row(vec![
        "failed".to_string(),
        r.failed.len().to_string(),
        fmt_bytes(r.failed_bytes),
    ]);
    if !r.refused.is_empty() {
        t.add_row(vec![
            "refused keys".to_string(),
            r.refused.len().to_string(),
            "-".into(),
        ]);
    }
    if r.filtered > 0 {
        t.add_row(vec![
            "filtered out".to_string(),
            r.filtered.to_string(),
            "-".into(),
        ]);
    }
    let secs = r.elapsed.as_secs_f64().max(0.001);
    let mut out = format!(
        "\n{src} -> {dst}{}\n{t}\n",
        if r.dry_run {
            " (dry run: nothing changed)"
        } else {
            ""
        }
    );
    if !r.reasons.is_empty() {
        let reasons: Vec<String> = r.reasons.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        out.push_str(&format!("why: {}\n", reasons.join(", ")));
    }
    out.push_str(&verified_line(r));
    out.push_str(&format!(
        "requests: LIST {} + {}, GET {}, PUT {} (parts and multipart calls included), HEAD {}{}\n",
        r.requests_list_src,
        r.requests_list_dst,
        r.requests_get,
        r.requests_put,
        r.requests_head,
        if r.resumed_parts > 0 {
            format!("; {} parts reused from an earlier run", r.resumed_parts)
        } else {
            String::new()
        }
    ));
    out.push_str(&format!(
        "time: {} at {}/s{}{}\n",
        fmt_duration(Decimal::from_f64_retain(secs).unwrap_or_default()),
        // Bytes the destination service copied itself count too (they passed no socket here).
        fmt_bytes(((r.written_bytes + r.server_side_bytes) as f64 / secs) as u64),
        if r.retries > 0 {
            format!("; {} retries", r.retries)
        } else {
            String::new()
        },
        if r.throttle_events > 0 {
            format!("; throttled {} times", r.throttle_events)
        } else {
            String::new()
        },
    ));
    if let Some(p) = plan
        && let Ok(pred) = p.prediction.seconds.parse::<Decimal>()
    {
        out.push_str(&format!(
            "plan: predicted {} for {}; this run took {} for {}\n",
            fmt_duration(pred),
            fmt_bytes(p.corpus.bytes),
            fmt_duration(Decimal::from_f64_retain(secs).unwrap_or_default()),
            fmt_bytes(r.copied_bytes + r.skipped_bytes)
        ));
    }
    for f in r.failed.iter().take(20) {
        out.push_str(&format!("failed: {}: {}\n", f.key, f.error));
    }
    if r.failed.len() > 20 {
        out.push_str(&format!(
            "… and {} more failures (see --json)\n",
            r.failed.len() - 20
        ));
    }
    for f in r.refused.iter().take(20) {
        out.push_str(&format!("refused: {:?}: {}\n", f.key, f.error));
    }
    let size_only = size_only(r);
    if size_only > 0 {
        out.push_str(&format!(
            "! {size_only} objects were checked at the destination by size only (its ETags are not content hashes); \
             --verify readback reads them back\n"
        ));
    }
    if r.no_source_digest > 0 {
        out.push_str(&format!(
            "! {} objects came from a source that states no digest for them (no MD5 ETag, multipart ETag, stored checksum or moverctl metadata): \
             their bytes were checked against the source by size only; --verify strict refuses such objects\n",
            r.no_source_digest
        ));
    }
    if let Some(l) = unverified_line(r) {
        out.push_str(&l);
        out.push('\n');
    }
    if r.open_uploads > 0 {
        out.push_str(&format!(
            "{} multipart uploads are left open for the next run to resume (they expire by the store's lifecycle rules if abandoned)\n",
            r.open_uploads
        ));
    }
    if r.aborted_uploads > 0 {
        out.push_str(&format!(
            "{} multipart uploads were abandoned and aborted (a changed source, or a part or completion that failed its check)\n",
            r.aborted_uploads
        ));
    }
    if r.interrupted {
        out.push_str("interrupted: run the same command again to resume\n");
    }
    if !r.dry_run {
        out.push_str(&format!("journal: {}\n", res.journal_path.display()));
    }
    out
}

/// A run against its plan, as the table after the summary.
pub(super) fn vs_plan_text(v: &VsPlan) -> String {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    t.set_header(vec!["", "plan (whole corpus)", "this run"]);
    t.add_row(vec![
        "time".to_string(),
        fmt_duration(v.predicted_seconds),
        fmt_duration(v.seconds),
    ]);
    t.add_row(vec![
        "bytes".to_string(),
        fmt_bytes(v.corpus_bytes),
        fmt_bytes(v.run_bytes),
    ]);
    for ((k, planned), (_, a)) in v.predicted.iter().zip(&v.actual) {
        t.add_row(vec![
            k.replace('_', " "),
            moverctl::money::Usd(*planned).to_string(),
            a.to_string(),
        ]);
    }
    let mut out = format!("\nAgainst the plan (this run priced with the same catalog):\n{t}\n");
    if v.catalog_changed {
        out.push_str("! the price catalog changed since the plan was made; this run is priced with today's catalog\n");
    }
    out
}

/// The summary's line on unverified objects (exit 9), naming up to 20.
pub(super) fn unverified_line(r: &Report) -> Option<String> {
    if r.unverified.is_empty() {
        return None;
    }
    let shown: Vec<String> = r
        .unverified
        .iter()
        .take(20)
        .map(|k| format!("{k:?}"))
        .collect();
    Some(format!(
        "! {} objects are unverified: their source states no digest for them and no read of them could be checked, so only their size was; they were written without moverctl's CRC64 and are not recorded as done (exit 9; --verify size accepts them): {}{}",
        r.unverified.len(),
        shown.join(", "),
        if r.unverified.len() > 20 { ", ..." } else { "" }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use moverctl::transfer::{ReadCheck as R, Verification, WriteCheck as W};

    fn report() -> Report {
        let mut r = Report::default();
        for (read, write, n) in [
            (R::SourceSize, W::DestSize, 2),
            (R::SourceMd5, W::DestMultipartEtag, 3),
            (R::SourceCrc64, W::DestSize, 1),
            (R::SourceMd5, W::DestMd5, 4),
            (R::SourcePartsEtag, W::ReadbackCrc64, 5),
        ] {
            r.verified_by.insert(Verification::new(read, write), n);
        }
        r
    }

    /// The typed labels print exactly as the strings did (text summary, JSON summary, events).
    #[test]
    fn verification_labels_print_as_before() {
        let r = report();
        assert_eq!(
            verified_line(&r),
            "verified: source-crc64+dest-size: 1, source-md5+dest-md5: 4, \
             source-md5+dest-multipart-etag: 3, source-parts-etag+readback-crc64: 5, \
             source-size+dest-size: 2\n"
        );
        assert_eq!(size_only(&r), 3);
        let ids = RunIds {
            command: "copy",
            source: "a",
            destination: "b",
            journal: std::path::Path::new("j"),
            exit: crate::cli::exit::Exit::Success,
        };
        let v: serde_json::Value = serde_json::from_str(&summary_json(&r, None, &ids)).unwrap();
        assert_eq!(
            v["verified_by"].to_string(),
            r#"{"source-crc64+dest-size":1,"source-md5+dest-md5":4,"source-md5+dest-multipart-etag":3,"source-parts-etag+readback-crc64":5,"source-size+dest-size":2}"#
        );
        let ev = Event::Copied {
            key: "k".into(),
            bytes: 3,
            verified_by: Verification::new(R::SourceSize, W::DestContentMd5),
        };
        assert_eq!(
            event_json(&ev, crate::cli::json::COPY),
            r#"{"bytes":3,"event":"copied","key":"k","schema":"moverctl.copy/1","verified_by":"source-size+dest-content-md5"}"#
        );
        assert_eq!(verified_line(&Report::default()), "");
    }
}
