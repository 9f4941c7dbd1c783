//! The probe report for people: a header line, then one table of findings and measurements.

use super::ProbeReport;
use crate::units::fmt_bytes;
use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};

fn rate(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() && v >= 0.0 => format!("{}/s", fmt_bytes(v.round() as u64)),
        _ => "-".into(),
    }
}

fn ms(v: Option<f64>) -> String {
    match v {
        Some(v) if v < 10.0 => format!("{v:.2} ms"),
        Some(v) => format!("{v:.1} ms"),
        None => "-".into(),
    }
}

pub fn render_table(r: &ProbeReport) -> String {
    let mut out = format!(
        "Probe of {} ({}{}) at {}\n",
        r.location,
        r.kind,
        r.provider
            .as_deref()
            .map(|p| format!(", provider {p}"))
            .unwrap_or_default(),
        r.timestamp
    );
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(vec!["check", "result", "detail"]);
    for f in &r.findings {
        t.add_row(vec![
            f.check.clone(),
            f.status.as_str().to_string(),
            f.detail.clone(),
        ]);
    }
    let by = &r.latency_ms_by_request;
    t.add_row(vec![
        "latency per request (median)".to_string(),
        ms(r.latency_ms),
        format!(
            "PUT {}, HEAD {}, GET {}; {} small requests of each",
            ms(by.put),
            ms(by.head),
            ms(by.get),
            r.latency_samples
        ),
    ]);
    t.add_row(vec![
        "throughput, 1 stream".to_string(),
        rate(r.single_stream_bytes_per_sec),
        format!(
            "PUT of {}; GET {}",
            fmt_bytes(r.stream_bytes),
            rate(r.single_stream_get_bytes_per_sec)
        ),
    ]);
    t.add_row(vec![
        format!("throughput, {} streams", r.streams),
        rate(r.multi_stream_bytes_per_sec),
        format!(
            "{} PUTs of {} in parallel ({} per stream); GET {}",
            r.streams,
            fmt_bytes(r.stream_bytes),
            rate(r.per_stream_bytes_per_sec()),
            rate(r.multi_stream_get_bytes_per_sec)
        ),
    ]);
    if let Some(row) = request_rate_row(r) {
        t.add_row(row);
    }
    if let Some(c) = &r.client_cpu {
        let s = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.2} s"));
        t.add_row(vec![
            "engine CPU per GiB copied".to_string(),
            s(c.copy_seconds_per_gib),
            format!(
                "hashing (CRC64+MD5) and a copy {} per GiB, HTTP {} per GiB each way; {} cores",
                s(c.hash_copy_seconds_per_gib),
                s(c.transfer_seconds_per_gib),
                c.cores
            ),
        ]);
    }
    if let Some(row) = server_copy_row(r) {
        t.add_row(row);
    }
    t.add_row(vec![
        "smallest part size accepted".to_string(),
        r.min_part_size_accepted
            .map(|b| format!("{} MiB", b >> 20))
            .unwrap_or_else(|| "-".into()),
        "of 1 MiB and 5 MiB first parts".to_string(),
    ]);
    out.push_str(&t.to_string());
    out.push('\n');
    if r.cleanup.left.is_empty() {
        out.push_str(&format!(
            "Scratch prefix {} removed ({} objects deleted)\n",
            r.scratch_prefix, r.cleanup.deleted
        ));
    } else {
        out.push_str(&format!(
            "! {} objects could not be removed under {}: {}\n",
            r.cleanup.left.len(),
            r.scratch_prefix,
            r.cleanup.left.join(", ")
        ));
    }
    out
}

/// The request rates measured at each number of requests in flight, and the best at the most;
/// `None` when none were measured.
fn request_rate_row(r: &ProbeReport) -> Option<Vec<String>> {
    if r.request_rate.is_empty() {
        return None;
    }
    let per = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.0}/s"));
    let levels: Vec<String> = r
        .request_rate
        .iter()
        .map(|p| {
            format!(
                "{}: PUT {} GET {}{}",
                p.in_flight,
                per(p.put_per_sec),
                per(p.get_per_sec),
                p.head_per_sec
                    .map_or(String::new(), |h| format!(" HEAD {h:.0}/s"))
            )
        })
        .collect();
    let top = r
        .request_rate
        .iter()
        .map(|p| p.in_flight)
        .max()
        .unwrap_or(1);
    Some(vec![
        "request rate under concurrency".to_string(),
        match r.head_rate_at(top) {
            Some(h) => format!(
                "PUT {}, GET {}, HEAD {}",
                per(r.put_rate_at(top)),
                per(r.get_rate_at(top)),
                per(Some(h))
            ),
            None => format!(
                "PUT {}, GET {}",
                per(r.put_rate_at(top)),
                per(r.get_rate_at(top))
            ),
        },
        format!(
            "best objects/s of {} objects; in flight {}",
            fmt_bytes(r.request_rate_object_bytes.unwrap_or(0)),
            levels.join(", ")
        ),
    ])
}

/// The server-side copy measured (S3 with a signer), as one row.
fn server_copy_row(r: &ProbeReport) -> Option<Vec<String>> {
    let c = r.server_copy.as_ref()?;
    let s = |v: Option<f64>| v.map_or("-".to_string(), |x| ms(Some(x * 1000.0)));
    let per = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.0}/s"));
    Some(vec![
        "server-side copy (CopyObject)".to_string(),
        rate(c.parallel_bytes_per_second),
        format!(
            "{} copies of {}{} at once; one copy of {} {}, of {} {}; {} small copies ({} in flight), {} each after a HEAD as exec copies; UploadPartCopy in parts of {}: {}",
            c.parallel,
            fmt_bytes(c.object_bytes),
            if c.source_crc64 {
                " (multipart, stored CRC64)"
            } else {
                ""
            },
            fmt_bytes(c.object_bytes),
            s(c.copy_seconds),
            fmt_bytes(c.small_object_bytes),
            s(c.small_copy_seconds),
            per(c.small_copies_per_second),
            32,
            per(c.small_head_copies_per_second),
            fmt_bytes(c.part_bytes),
            rate(c.part_copy_bytes_per_second)
        ),
    ])
}
