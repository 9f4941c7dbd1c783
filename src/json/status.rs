//! `status --json`: one move's progress (`moverctl.status/1`) and the recent runs of the state
//! folder (`moverctl.status-runs/1`, `status --json` with no argument).

use super::{STATUS, STATUS_RUNS, stamp};
use crate::job::inspect::{JournalStatus, RecentRun};
use serde_json::{Value, json};

/// One move's progress, as docs/json.md documents `moverctl.status/1`.
pub fn status(st: &JournalStatus) -> Value {
    stamp(STATUS, body(st))
}

fn body(st: &JournalStatus) -> Value {
    let s = &st.summary;
    let (corpus, total) = (st.corpus, st.total);
    json!({
        "journal": st.path.display().to_string(), "source": st.source, "destination": st.destination,
        "verified": {"objects": s.verified, "bytes": s.verified_bytes},
        "failed": s.failed, "in_progress": s.copying, "open_multipart_uploads": st.open_uploads,
        "uploading": {"objects": st.in_flight.0, "bytes": st.in_flight.1},
        "corpus": corpus.map(|(b, o)| json!({"bytes": b, "objects": o})),
        "total": total.map(|(b, o)| json!({"bytes": b, "objects": o})),
        "percent": total.filter(|(b, _)| *b > 0).map(|(b, _)| (s.verified_bytes as f64 * 1000.0 / b as f64).round() / 10.0),
        "bytes_per_second_last_5_min": st.rate.round() as u64,
        "eta_seconds": st.eta.map(|d| d.as_secs()),
        "running": st.running.is_some(),
        "run": st.running,
    })
}

/// The recent runs, newest first, and how many older ones were left out.
pub fn runs(runs: &[RecentRun], more: usize) -> Value {
    let list: Vec<Value> = runs
        .iter()
        .map(|r| {
            let mut v = body(&r.status);
            v["state"] = json!(r.state.as_str());
            v["updated"] = json!(chrono::DateTime::<chrono::Utc>::from(r.updated).to_rfc3339());
            v
        })
        .collect();
    stamp(STATUS_RUNS, json!({"runs": list, "more": more}))
}
