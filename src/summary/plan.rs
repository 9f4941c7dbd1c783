//! What `plan --save` says about the plan file it wrote: the `exec` command that runs it.

use crate::job::plan::ProbeUse;
use crate::plan::file::PlanFile;
use rust_decimal::prelude::ToPrimitive;
use std::path::Path;

/// The `moverctl exec PATH …` command that runs a saved plan, with `--src <SOURCE>` and
/// `--dst <DESTINATION>` for the locations the plan does not name (it was made from
/// `--from`/`--to` alone), and the sentence saying what to put in their place (empty when the
/// plan names both).
pub fn exec_command(path: &Path, plan: &PlanFile) -> (String, String) {
    let mut cmd = format!("moverctl exec {}", path.display());
    let mut missing = Vec::new();
    if plan.source.location.is_none() {
        cmd.push_str(" --src <SOURCE>");
        missing.push("<SOURCE>");
    }
    if plan.destination.location.is_none() {
        cmd.push_str(" --dst <DESTINATION>");
        missing.push("<DESTINATION>");
    }
    let fill = if missing.is_empty() {
        String::new()
    } else {
        format!(
            " (replace {} with the {} to move, e.g. s3://bucket/prefix, REMOTE:bucket/prefix or a \
             folder: the plan was made without --src/--dst, so it names no {})",
            missing.join(" and "),
            if missing.len() == 2 {
                "locations"
            } else {
                "location"
            },
            match (
                plan.source.location.is_none(),
                plan.destination.location.is_none()
            ) {
                (true, true) => "source or destination",
                (true, false) => "source",
                _ => "destination",
            }
        )
    };
    (cmd, fill)
}

fn probe_date(p: &ProbeUse) -> String {
    chrono::DateTime::parse_from_rfc3339(&p.timestamp)
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .format("%Y-%m-%d %H:%M UTC")
                .to_string()
        })
        .unwrap_or_else(|_| p.timestamp.clone())
}

/// "using probe of LOCATION (DATE): latency N ms, stream X/s".
pub fn probe_line(p: &ProbeUse) -> String {
    let mut parts = Vec::new();
    if let Some(ms) = p.latency_ms {
        parts.push(format!("latency {ms} ms"));
    }
    if let Some(s) = p.stream {
        parts.push(format!(
            "stream {}/s",
            crate::units::fmt_bytes_si(s.to_u64().unwrap_or(u64::MAX))
        ));
    }
    format!(
        "using probe of {} ({}): {}",
        p.location,
        probe_date(p),
        parts.join(", ")
    )
}

/// The probe a plan used, as its JSON says it.
pub fn probe_json(p: &ProbeUse) -> serde_json::Value {
    serde_json::json!({
        "location": p.location,
        "provider": p.provider,
        "timestamp": p.timestamp,
        "file": p.file.display().to_string(),
        "latency_ms": p.latency_ms,
        "stream_throughput_bytes_per_second": p.stream.and_then(|s| s.to_u64()),
    })
}
