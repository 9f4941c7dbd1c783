//! `stage` in words: what a stage put on the fast tier and whether it is ready, what an evict
//! removed and kept, and what a wait found. Lines marked `problem` go to stderr.

use crate::job::stage::evict::{EvictOutcome, Kept};
use crate::job::stage::ready::Ready;
use crate::job::stage::{NodeShare, StageOutcome};
pub use crate::summary::drain::Line;
use crate::units::fmt_bytes;

fn info(text: String) -> Line {
    Line {
        problem: false,
        text,
    }
}

fn problem(text: String) -> Line {
    Line {
        problem: true,
        text,
    }
}

/// "node 1/4 (keys after "a" up to "m")", or "the whole set".
pub fn share_text(node: Option<&NodeShare>) -> String {
    let Some(n) = node else {
        return "the whole set".into();
    };
    let start = match &n.start {
        Some(s) => format!("after {s:?}"),
        None => "from the first".into(),
    };
    let end = match &n.end {
        Some(e) => format!("up to {e:?}"),
        None => "to the last".into(),
    };
    format!("node {}/{} (keys {start} {end})", n.index, n.count)
}

pub fn stage_lines(o: &StageOutcome) -> Vec<Line> {
    let r = &o.report;
    let share = share_text(o.node.as_ref());
    let secs = r.elapsed.as_secs_f64();
    let rate = match secs > 0.0 {
        true => format!(", {}/s", fmt_bytes((r.copied_bytes as f64 / secs) as u64)),
        false => String::new(),
    };
    let mut out = vec![info(format!(
        "staged {share} of {} into {}: {} ({}), {} copied ({}), {} already staged, {secs:.1} s{rate}",
        o.source,
        o.fast_dir.display(),
        crate::words::count(r.copied + r.skipped, "object"),
        fmt_bytes(r.copied_bytes + r.skipped_bytes),
        r.copied,
        fmt_bytes(r.copied_bytes),
        r.skipped,
    ))];
    if r.dry_run {
        out.push(info("dry run: nothing was written, no marker".into()));
        return out;
    }
    for f in r.failed.iter().chain(&r.refused).take(20) {
        out.push(problem(format!("not staged  {}: {}", f.key, f.error)));
    }
    for k in r.unverified.iter().take(20) {
        out.push(problem(format!("unverified  {k}")));
    }
    match &o.marker {
        Some((path, _)) => out.push(info(format!("ready: {}", path.display()))),
        None => out.push(problem(format!(
            "{share} is not ready: {} failed, {} refused, {} unverified{}; no ready marker was written (run the same command again to finish it)",
            r.failed.len(),
            r.refused.len(),
            r.unverified.len(),
            if r.interrupted { ", interrupted" } else { "" }
        ))),
    }
    out
}

/// A staged file evict kept: a problem when the fast-tier copy may be the only one left.
pub fn kept_line(key: &str, k: &Kept) -> Line {
    let text = format!("kept        {key}: {}", k.reason());
    match k.only_copy() {
        true => problem(text),
        false => info(text),
    }
}

pub fn evict_lines(o: &EvictOutcome) -> Vec<Line> {
    let mut out = Vec::new();
    if o.others > 0 {
        out.push(info(format!(
            "kept        {} other files (not staged by this stage: yours, or another node's share){}",
            o.others,
            match o.others_named.is_empty() {
                true => String::new(),
                false => format!(
                    ": {}{}",
                    o.others_named.join(", "),
                    if o.others as usize > o.others_named.len() { ", …" } else { "" }
                ),
            }
        )));
    }
    out.push(info(format!(
        "evicted {} files ({}) from {}; kept {} ({} whose original is missing or changed); {} already gone; {} empty folders removed{}",
        o.removed,
        fmt_bytes(o.removed_bytes),
        o.fast_dir.display(),
        o.kept,
        o.kept_only_copy,
        o.gone,
        o.folders_removed,
        if o.fast_dir_removed { ", and the folder itself" } else { "" }
    )));
    out
}

pub fn ready_lines(r: &Ready) -> Vec<Line> {
    let missing: Vec<&str> = r
        .markers
        .iter()
        .filter(|(_, m)| m.is_none())
        .map(|(n, _)| n.as_str())
        .collect();
    if missing.is_empty() {
        let (objects, bytes) = r
            .markers
            .iter()
            .filter_map(|(_, m)| m.as_ref())
            .fold((0, 0), |(o, b), m| (o + m.objects, b + m.bytes));
        return vec![info(format!(
            "ready: {} ({}, {}, {}) after {:.1} s",
            r.fast_dir.display(),
            crate::words::count(r.markers.len() as u64, "marker"),
            crate::words::count(objects, "object"),
            fmt_bytes(bytes),
            r.waited.as_secs_f64()
        ))];
    }
    vec![problem(format!(
        "not ready after {:.1} s: {} has no {}",
        r.waited.as_secs_f64(),
        r.fast_dir.display(),
        missing.join(", ")
    ))]
}
