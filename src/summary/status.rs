//! `status` in words: one move's progress from its journal, and the recent runs of the state
//! folder (`status` with no argument).

use crate::job::inspect::{JournalStatus, RecentRun};
use crate::units::{fmt_bytes, fmt_duration};
use crate::words::count;

/// One move's progress, a line per fact.
pub fn text(st: &JournalStatus) -> String {
    let s = &st.summary;
    let (parts_objects, parts_bytes) = st.in_flight;
    let pct = st
        .total
        .filter(|(b, _)| *b > 0)
        .map(|(b, o)| {
            format!(
                " of {} in {} ({:.1} %{})",
                fmt_bytes(b),
                count(o, "object"),
                s.verified_bytes as f64 * 100.0 / b as f64,
                if st.corpus.is_some() {
                    ", as planned"
                } else {
                    ""
                }
            )
        })
        .unwrap_or_default();
    let eta = match (&st.running, st.eta) {
        (None, _) => ", not running (no ETA)".to_string(),
        (Some(_), Some(d)) => format!(
            ", ETA {}",
            fmt_duration(rust_decimal::Decimal::from(d.as_secs()))
        ),
        (Some(_), None) if st.total.is_none() => {
            ", total unknown (no plan, and no complete listing yet)".into()
        }
        (Some(_), None) => String::new(),
    };
    let mut out = format!("{} -> {}\n", st.source, st.destination);
    out.push_str(&format!(
        "verified     {}, {}{pct}\n",
        count(s.verified, "object"),
        fmt_bytes(s.verified_bytes)
    ));
    if parts_objects > 0 {
        out.push_str(&format!(
            "uploading    {} in parts of {} not yet complete\n",
            fmt_bytes(parts_bytes),
            count(parts_objects, "multipart upload")
        ));
    }
    out.push_str(&format!(
        "rate         {}/s over the last 5 minutes{eta}\n",
        fmt_bytes(st.rate as u64)
    ));
    out.push_str(&format!(
        "run          {}\n",
        match &st.running {
            Some(h) => format!("running now ({h})"),
            None => "none running".into(),
        }
    ));
    out.push_str(&format!(
        "failed       {} (copied again on the next run)\n",
        count(s.failed, "object")
    ));
    out.push_str(&format!(
        "in progress  {}, {} open for resume\n",
        count(s.copying, "object"),
        count(st.open_uploads as u64, "multipart upload")
    ));
    out.push_str(&format!("journal      {}\n", st.path.display()));
    out
}

/// The recent runs, newest first: when, how it stands, what is verified, the pair, the journal.
pub fn runs_text(runs: &[RecentRun], more: usize, state_dir: &std::path::Path) -> String {
    if runs.is_empty() {
        return format!(
            "no runs yet: no journal in {} (a copy, exec or sync keeps one there; status PLAN|JOURNAL \
             or --src/--dst shows one move)\n",
            state_dir.join("journals").display()
        );
    }
    let mut out = String::from("recent runs, newest first (moverctl status JOURNAL for one):\n");
    for r in runs {
        let st = &r.status;
        let s = &st.summary;
        let when = chrono::DateTime::<chrono::Local>::from(r.updated).format("%Y-%m-%d %H:%M");
        let of = st
            .total
            .map(|(b, _)| format!(" of {}", fmt_bytes(b)))
            .unwrap_or_default();
        let flight = if st.in_flight.1 > 0 {
            format!(" (+{} uploading)", fmt_bytes(st.in_flight.1))
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{when}  {:<8} {}, {}{of}{flight}{}  {} -> {}\n    {}\n",
            r.state.as_str(),
            count(s.verified, "object"),
            fmt_bytes(s.verified_bytes),
            if s.failed > 0 {
                format!(", {} failed", s.failed)
            } else {
                String::new()
            },
            st.source,
            st.destination,
            r.journal.display()
        ));
    }
    if more > 0 {
        out.push_str(&format!(
            "{} older not shown ({})\n",
            count(more as u64, "run"),
            state_dir.join("journals").display()
        ));
    }
    out
}
