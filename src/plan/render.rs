//! Plan output: the ranked comfy-table a person reads, and the JSON document scripts read.
//!
//! JSON schema (`"schema": "moverctl.plan/1"`): `source`, `corpus`, `assumptions`, and
//! `candidates` (ranked, cheapest first), each with `rank`, `destination` (as given), `resolved`,
//! `cost` (USD numbers: `egress`, `egress_before_waiver`, `source_requests`,
//! `destination_requests`, `retrieval`, `storage_per_month`, `storage_horizon`, `early_deletion`,
//! `exit_egress`, `gpu_idle`, `total` — `total` is everything but `storage_per_month` and
//! `exit_egress`), `time` (`seconds`, `bound`, and the seconds of each bound), `requests` (counts),
//! `upload` and `warnings` (strings).

use super::corpus::Corpus;
use super::model::{Assumptions, Candidate};
use crate::catalog::Place;
use crate::units::{fmt_bytes, fmt_count, fmt_duration, fmt_rate_bits};
use comfy_table::{CellAlignment, ContentArrangement, Table, presets::UTF8_HORIZONTAL_ONLY};
use rust_decimal::Decimal;
use serde_json::{Value, json};

fn dec(d: Decimal) -> Value {
    let s = d.round_dp(3).normalize().to_string();
    Value::Number(s.parse().expect("decimal digits are a JSON number"))
}

pub fn json(src: &Place, corpus: &Corpus, a: &Assumptions, ranked: &[Candidate]) -> Value {
    let candidates: Vec<Value> = ranked
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut cost = serde_json::Map::new();
            for (k, v) in c.cost.items() {
                cost.insert(k.to_string(), v.to_json());
            }
            cost.insert(
                "egress_before_waiver".into(),
                c.cost.egress_before_waiver.to_json(),
            );
            json!({
                "rank": i + 1,
                "destination": c.destination,
                "resolved": c.resolved,
                "cost": cost,
                "time": {
                    "seconds": dec(c.time.seconds),
                    "bound": c.time.bound.as_str(),
                    "bandwidth_seconds": dec(c.time.bandwidth_seconds),
                    "request_seconds": dec(c.time.request_seconds),
                    "rate_limit_seconds": dec(c.time.rate_limit_seconds),
                    "listing_seconds": dec(c.time.listing_seconds),
                    "restore_seconds": dec(c.time.restore_seconds),
                    "effective_bandwidth_bytes_per_second": dec(c.time.effective_bandwidth),
                },
                "requests": {
                    "source_list": c.counts.source_list,
                    "source_get": c.counts.source_get,
                    "destination_list": c.counts.destination_list,
                    "destination_put": c.counts.destination_put,
                    "destination_head": c.counts.destination_head,
                },
                "upload": {
                    "multipart_objects": c.counts.multipart_objects,
                    "parts": c.counts.parts,
                    "max_part_size": c.counts.max_part_size,
                    "unplaceable_objects": c.counts.unplaceable_objects,
                },
                "warnings": c.warnings,
            })
        })
        .collect();
    json!({
        "schema": "moverctl.plan/1",
        "source": src.canonical(),
        "corpus": {
            "bytes": corpus.total_bytes(),
            "objects": corpus.total_objects(),
            "origin": corpus.origin,
            "skipped_lines": corpus.skipped_lines,
        },
        "assumptions": {
            "months": a.months,
            "bandwidth_bytes_per_second": dec(a.bandwidth),
            "workers": a.workers,
            "worker_nic_bytes_per_second": dec(a.worker_nic),
            "concurrency": a.concurrency,
            "stream_throughput_bytes_per_second": dec(a.stream_throughput),
            "latency_ms": a.latency_ms,
            "prefixes": a.prefixes,
            "gpu_hourly": a.gpu_hourly.to_json(),
            "exit_waiver": a.exit_waiver,
            "multipart_threshold": a.part_rule.threshold,
            "part_size": a.part_rule.preferred_part,
        },
        "candidates": candidates,
    })
}

/// The widest the ranked table is laid out to: it fits a 100-column terminal (and a log or mail
/// read at that width) with no number broken across lines.
pub const TABLE_WIDTH: u16 = 100;

/// The ranked table in at most [`TABLE_WIDTH`] columns, numbers never broken across lines:
/// horizontal rules only, one space between columns, headers on two lines. When all twelve
/// columns do not fit, the two that are not part of the move's total (storage per month, and
/// leaving again later) go to a second table below; when that is still too wide (very large
/// amounts, long destination names), requests, retrieval and early deletion join them.
fn ranked_table(ranked: &[Candidate], months: u32) -> String {
    let moved: [&[Col]; 3] = [
        &[],
        &[Col::StoragePerMonth, Col::LeaveLater],
        &[
            Col::Requests,
            Col::Retrieval,
            Col::EarlyDelete,
            Col::StoragePerMonth,
            Col::LeaveLater,
        ],
    ];
    let mut out = String::new();
    for later in moved {
        let main: Vec<Col> = COLUMNS
            .iter()
            .copied()
            .filter(|c| !later.contains(c))
            .collect();
        out = layout(ranked, months, &main);
        if !later.is_empty() {
            let mut after = vec![Col::Rank, Col::Destination];
            after.extend_from_slice(later);
            let caption = if later.len() > 2 {
                "more costs (storage/mo and leave later are not in the total):"
            } else {
                "not in the total:"
            };
            out = format!("{out}\n\n{caption}\n{}", layout(ranked, months, &after));
        }
        if width(&out) <= usize::from(TABLE_WIDTH) {
            break;
        }
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Col {
    Rank,
    Destination,
    Egress,
    Requests,
    Retrieval,
    StoragePerMonth,
    StorageHorizon,
    EarlyDelete,
    GpuIdle,
    Total,
    Time,
    LeaveLater,
}

const COLUMNS: [Col; 12] = [
    Col::Rank,
    Col::Destination,
    Col::Egress,
    Col::Requests,
    Col::Retrieval,
    Col::StoragePerMonth,
    Col::StorageHorizon,
    Col::EarlyDelete,
    Col::GpuIdle,
    Col::Total,
    Col::Time,
    Col::LeaveLater,
];

/// The widest line, in characters.
fn width(table: &str) -> usize {
    table.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

fn layout(ranked: &[Candidate], months: u32, cols: &[Col]) -> String {
    use comfy_table::TableComponent;
    let mut table = Table::new();
    table
        .load_preset(UTF8_HORIZONTAL_ONLY)
        .remove_style(TableComponent::VerticalLines)
        .remove_style(TableComponent::LeftBorder)
        .remove_style(TableComponent::RightBorder)
        .remove_style(TableComponent::TopBorder)
        .remove_style(TableComponent::BottomBorder)
        .remove_style(TableComponent::TopBorderIntersections)
        .remove_style(TableComponent::BottomBorderIntersections)
        .remove_style(TableComponent::TopLeftCorner)
        .remove_style(TableComponent::TopRightCorner)
        .remove_style(TableComponent::BottomLeftCorner)
        .remove_style(TableComponent::BottomRightCorner)
        .remove_style(TableComponent::HorizontalLines)
        .remove_style(TableComponent::MiddleIntersections)
        .remove_style(TableComponent::LeftBorderIntersections)
        .remove_style(TableComponent::RightBorderIntersections)
        .remove_style(TableComponent::LeftHeaderIntersection)
        .remove_style(TableComponent::RightHeaderIntersection)
        .set_content_arrangement(ContentArrangement::Disabled);
    let horizon = format!("{months}-mo\nstorage");
    table.set_header(cols.iter().map(|c| match c {
        Col::Rank => "#",
        Col::Destination => "destination",
        Col::Egress => "egress",
        Col::Requests => "requests",
        Col::Retrieval => "retrieval",
        Col::StoragePerMonth => "storage\n/mo",
        Col::StorageHorizon => horizon.as_str(),
        Col::EarlyDelete => "early\ndelete",
        Col::GpuIdle => "GPU idle",
        Col::Total => "total",
        Col::Time => "time",
        Col::LeaveLater => "leave\nlater",
    }));
    for (i, c) in ranked.iter().enumerate() {
        let k = &c.cost;
        table.add_row(cols.iter().map(|col| match col {
            Col::Rank => (i + 1).to_string(),
            Col::Destination => c.destination.clone(),
            Col::Egress => k.egress.to_string(),
            Col::Requests => (k.source_requests + k.destination_requests).to_string(),
            Col::Retrieval => k.retrieval.to_string(),
            Col::StoragePerMonth => k.storage_per_month.to_string(),
            Col::StorageHorizon => k.storage_horizon.to_string(),
            Col::EarlyDelete => k.early_deletion.to_string(),
            Col::GpuIdle => k.gpu_idle.to_string(),
            Col::Total => k.total().to_string(),
            Col::Time => fmt_duration(c.time.seconds),
            Col::LeaveLater => k.exit_egress.to_string(),
        }));
    }
    for (i, col) in table.column_iter_mut().enumerate() {
        // Columns are one space apart: comfy-table draws a missing vertical line as a space.
        col.set_padding((0, 0));
        if i >= 2 {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    table
        .lines()
        .map(|l| l.trim_end().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The human report: a header, the ranked table, then warnings per destination.
pub fn text(src: &Place, corpus: &Corpus, a: &Assumptions, ranked: &[Candidate]) -> String {
    let mut out = String::new();
    let bytes = corpus.total_bytes();
    let objects = corpus.total_objects();
    let avg = bytes.checked_div(objects).unwrap_or(0);
    out.push_str(&format!(
        "Corpus   {} in {} objects (avg {}), {}; horizon {} months\n",
        fmt_bytes(bytes),
        fmt_count(objects),
        fmt_bytes(avg),
        src.canonical(),
        a.months
    ));
    if corpus.origin != "flags" {
        out.push_str(&format!("         from {}", corpus.origin));
        if corpus.skipped_lines > 0 {
            out.push_str(&format!(
                " ({} directory markers / delete markers skipped)",
                corpus.skipped_lines
            ));
        }
        out.push('\n');
    }
    if let Some(best) = ranked.first() {
        let t = &best.time;
        out.push_str(&format!(
            "Transfer {} to {}, {}-bound at {} ({} worker(s) x {} in flight, {} ms per request{})\n",
            fmt_duration(t.seconds),
            best.provider,
            t.bound.as_str(),
            fmt_rate_bits(t.effective_bandwidth),
            a.workers,
            a.concurrency,
            a.latency_ms,
            if t.restore_seconds > Decimal::ZERO {
                format!(", plus {} of archive restore", fmt_duration(t.restore_seconds))
            } else {
                String::new()
            }
        ));
    }
    out.push('\n');
    out.push_str(&ranked_table(ranked, a.months));
    out.push('\n');
    let mut seen = std::collections::BTreeSet::new();
    let mut lines = Vec::new();
    for c in ranked {
        for w in &c.warnings {
            if seen.insert(w.clone()) {
                lines.push(format!("! {w}"));
            }
        }
    }
    if !lines.is_empty() {
        out.push('\n');
        out.push_str(&lines.join("\n"));
        out.push('\n');
    }
    out
}
