//! What `copy` and `exec` print: the text summary on stderr, the `--json` summary and event
//! lines, and the run set against its plan.

use crate::job::pricing::VsPlan;
use crate::plan::file::PlanFile;
use crate::transfer::Report;
use crate::units::{fmt_bytes, fmt_duration};
use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use rust_decimal::Decimal;

/// When objects failed because a store refused the credentials (the run exits 4, not 3): what
/// to say, naming the locations and where their credentials came from (`hint`, see
/// [`crate::job::trust::credentials_hint`]), never a value.
pub fn credentials_refused(r: &Report, src: &str, dst: &str, hint: &str) -> Option<String> {
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

/// `verified: source-md5+dest-md5: 3, …` (labels in order), or nothing when none was copied.
pub fn verified_line(r: &Report) -> String {
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
pub fn size_only(r: &Report) -> u64 {
    r.verified_by
        .iter()
        .filter(|(k, _)| k.write == crate::transfer::WriteCheck::DestSize)
        .map(|(_, v)| v)
        .sum()
}

/// The objects table of a copy or exec summary: copied, skipped, failed (refused and filtered
/// when there are any).
fn counts_table(r: &Report) -> Table {
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
    for (label, v) in [
        ("changed since inventory", &r.changed_since_inventory),
        ("gone since inventory", &r.gone_since_inventory),
    ] {
        if !v.is_empty() {
            t.add_row(vec![label.to_string(), v.len().to_string(), "-".into()]);
        }
    }
    if r.filtered > 0 {
        t.add_row(vec![
            "filtered out".to_string(),
            r.filtered.to_string(),
            "-".into(),
        ]);
    }
    t
}

/// Why objects were skipped, how they were verified, the requests and the time (against the
/// plan's prediction with one).
fn run_lines(r: &Report, plan: Option<&PlanFile>, out: &mut String) {
    let secs = r.elapsed.as_secs_f64().max(0.001);
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
}

/// The failures, refusals and what a user must know about how objects were checked.
fn problem_lines(r: &Report, out: &mut String) {
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
    for f in r
        .changed_since_inventory
        .iter()
        .chain(&r.gone_since_inventory)
        .take(20)
    {
        out.push_str(&format!("not copied: {}: {}\n", f.key, f.error));
    }
    if !r.changed_since_inventory.is_empty() {
        out.push_str(
            "! objects changed at the source since the inventory were not copied: copy them from a newer inventory or without --inventory\n",
        );
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
}

pub fn summary_text(
    r: &Report,
    src: &str,
    dst: &str,
    journal: &std::path::Path,
    plan: Option<&PlanFile>,
) -> String {
    let mut out = format!(
        "\n{src} -> {dst}{}\n{}\n",
        if r.dry_run {
            " (dry run: nothing changed)"
        } else {
            ""
        },
        counts_table(r)
    );
    run_lines(r, plan, &mut out);
    problem_lines(r, &mut out);
    if !r.dry_run {
        out.push_str(&format!("journal: {}\n", journal.display()));
    }
    out
}

/// A run against its plan, as the table after the summary.
pub fn vs_plan_text(v: &VsPlan) -> String {
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
            crate::money::Usd(*planned).to_string(),
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
pub fn unverified_line(r: &Report) -> Option<String> {
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
    use crate::json::copy::{RunIds, event_json, summary_json};
    use crate::transfer::{Event, ReadCheck as R, Verification, WriteCheck as W};

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
            exit: crate::exit::Exit::Success,
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
            event_json(&ev, crate::json::COPY),
            r#"{"bytes":3,"event":"copied","key":"k","schema":"moverctl.copy/1","verified_by":"source-size+dest-content-md5"}"#
        );
        assert_eq!(verified_line(&Report::default()), "");
    }
}
