//! Plan output: the ranked comfy-table a person reads, and the JSON document scripts read.
//!
//! JSON schema (`"schema": "moverctl.plan/1"`): `source`, `corpus`, `assumptions`, and
//! `candidates` (ranked, cheapest first), each with `rank`, `destination` (as given), `resolved`,
//! `cost` (USD numbers: `egress`, `egress_before_waiver`, `source_requests`,
//! `destination_requests`, `retrieval`, `storage_per_month`, `storage_horizon`, `early_deletion`,
//! `exit_egress`, `gpu_idle`, `total` — `total` is everything but `storage_per_month` and
//! `exit_egress`), `time` (`seconds`, `bound`, and the seconds of each bound: `bandwidth`,
//! `requests` (latency), `rate-limit`, `listing`, and with a saved probe `server request rate`,
//! `server throughput`, `client CPU`, and for a move copied on the server with a probe's copy
//! rates `server copy` (`server_copy_seconds`); `shared_hashing_seconds`: with both ends on this
//! machine, the engine's hashing over the cores, included in the two server bounds), `requests` (counts),
//! `upload` and `warnings` (strings). Each candidate also has `kind` (`move` or `stay`),
//! `break_even_month` (against staying; null when never within the horizon, for "stay" itself, or
//! without `--compute-at`), `horizon` (`one_time`, `monthly`, and `cumulative`: the cost at the end
//! of month 0 … `months`, the last equal to `total`) and `reads` (null without `--compute-at`:
//! `route`, `reads_per_month`, `gb_per_month`, `gets_per_month`, and the month's `egress`,
//! `requests`, `retrieval`, `over_free_multiple`). `assumptions` has `compute_at` and
//! `reads_per_month` (null without `--compute-at`), and `measured` (null without a probe): the
//! probed bounds applied (`source_get_per_second`, `destination_put_per_second` with the run's
//! objects in flight, `source_get_peak_per_second`, `destination_put_peak_per_second` at any
//! number in flight, `source_head_per_second` / `source_head_peak_per_second` (HEADs, null from
//! an older probe), `source_get_one_seconds`, `destination_put_one_seconds` with one in flight,
//! `source_get_bytes_per_second`, `destination_put_bytes_per_second`, `cpu_seconds_per_gib`,
//! `hash_cpu_seconds_per_gib`, `cores`, `shared_host`, and `server_copy`: the destination
//! service's copies — `copy_request_seconds`, `copy_seconds_per_gib`, `copies_per_second`,
//! `copy_bytes_per_second`, `part_copy_bytes_per_second` — or null). `restore` (null unless `--restore-tier` applies to
//! archive objects): `tier`, `auto`, `why`, `chosen` and `options` (`tier`, `fees`, `hours`,
//! `hours_assumed`, `gpu_idle`, `total`). Marks and extras: `cannot_take`, `policy_risk`
//! (`reason`, `accepted`), `caveats` (`role`, `provider`, `text`), `upload.streamed_objects` /
//! `streamed_bytes`, and the `cost` items of [`super::extras`] (see docs/json.md).
//! Each candidate's `during_move`, `waiver` and `read_feed`, the cost items `during_move`,
//! `read_stall` and `read_stall_per_month`, and the document's `verdict` are described in
//! [`super::render_during`].

use super::corpus::Corpus;
use super::horizon;
use super::model::{Assumptions, Candidate, Kind};
use crate::catalog::Place;
use crate::units::{fmt_bytes_si, fmt_count, fmt_duration, fmt_rate_bits};
use comfy_table::{CellAlignment, ContentArrangement, Table, presets::UTF8_HORIZONTAL_ONLY};
use rust_decimal::Decimal;
use serde_json::{Value, json};

fn dec(d: Decimal) -> Value {
    let s = d.round_dp(3).normalize().to_string();
    Value::Number(s.parse().expect("decimal digits are a JSON number"))
}

/// One ranked candidate (`i` from 0) of the JSON, its cumulative cost over `months`.
fn candidate_json(i: usize, c: &Candidate, months: u32) -> Value {
    let mut cost = serde_json::Map::new();
    for (k, v) in c.cost.items() {
        cost.insert(k.to_string(), v.to_json());
    }
    cost.insert(
        "egress_before_waiver".into(),
        c.cost.egress_before_waiver.to_json(),
    );
    let reads = c.reads.as_ref().map_or(Value::Null, |p| {
        json!({
            "route": p.route.as_str(),
            "reads_per_month": dec(p.per_month),
            "gb_per_month": dec(p.gb_per_month),
            "gets_per_month": dec(p.gets_per_month),
            "egress": p.egress.to_json(),
            "requests": p.requests.to_json(),
            "retrieval": p.retrieval.to_json(),
            "over_free_multiple": p.over_free_multiple,
        })
    });
    let restore = c.restore.as_ref().map_or(Value::Null, |r| {
        let opt = |o: &super::restore::TierOption| {
            json!({
                "tier": o.tier,
                "fees": o.fees.to_json(),
                "hours": o.hours,
                "hours_assumed": o.hours_assumed,
                "gpu_idle": o.gpu_idle.to_json(),
                "total": o.total().to_json(),
            })
        };
        json!({
            "tier": r.chosen.tier,
            "auto": r.auto,
            "why": r.why,
            "chosen": opt(&r.chosen),
            "options": r.options.iter().map(opt).collect::<Vec<_>>(),
        })
    });
    let (cannot_take, policy_risk, caveats) = c.marks.json();
    let cumulative: Vec<Value> = horizon::cumulative(c, months)
        .into_iter()
        .map(|u| u.to_json())
        .collect();
    let mut v = json!({
        "rank": i + 1,
        "kind": c.kind.as_str(),
        "break_even_month": c.break_even_month,
        "server_side": c.server_side,
        "from_url": c.from_url,
        "cannot_take": cannot_take,
        "policy_risk": policy_risk,
        "caveats": caveats,
        "horizon": {
            "one_time": c.cost.one_time().to_json(),
            "monthly": c.cost.monthly().to_json(),
            "cumulative": cumulative,
        },
        "reads": reads,
        "restore": restore,
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
            "server_request_seconds": dec(c.time.server_request_seconds),
            "server_throughput_seconds": dec(c.time.server_throughput_seconds),
            "client_cpu_seconds": dec(c.time.client_cpu_seconds),
            "shared_hashing_seconds": dec(c.time.shared_hashing_seconds),
            "server_copy_seconds": dec(c.time.server_copy_seconds),
            "start_seconds": dec(c.time.start_seconds),
            "effective_bandwidth_bytes_per_second": dec(c.time.effective_bandwidth),
        },
        "requests": {
            "source_list": c.counts.source_list,
            "source_get": c.counts.source_get,
            "source_head": c.counts.source_head,
            "destination_list": c.counts.destination_list,
            "destination_put": c.counts.destination_put,
            "destination_head": c.counts.destination_head,
        },
        "upload": {
            "multipart_objects": c.counts.multipart_objects,
            "parts": c.counts.parts,
            "max_part_size": c.counts.max_part_size,
            "unplaceable_objects": c.counts.unplaceable_objects,
            "streamed_objects": c.counts.streamed_objects,
            "streamed_bytes": c.counts.streamed_bytes,
        },
        "warnings": c.warnings,
    });
    super::render_during::candidate_json(&mut v, c);
    v
}

pub fn json(src: &Place, corpus: &Corpus, a: &Assumptions, ranked: &[Candidate]) -> Value {
    let candidates: Vec<Value> = ranked
        .iter()
        .enumerate()
        .map(|(i, c)| candidate_json(i, c, a.months))
        .collect();
    let mut v = json!({
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
            "ranged_reads": a.ranged_reads,
            "gpu_hourly": a.gpu_hourly.to_json(),
            "exit_waiver": a.exit_waiver,
            "delete_source": a.extras.delete_source,
            "worker_hourly": a.extras.worker_hourly.to_json(),
            "accept_policy_risk": a.extras.accept_policy_risk,
            "multipart_threshold": a.part_rule.threshold,
            "part_size": a.part_rule.preferred_part,
            "compute_at": a.reads.as_ref().map(|r| r.compute.canonical()),
            "reads_per_month": a.reads.as_ref().map(|r| dec(r.per_month)),
            "measured": a.measured.as_ref().map(measured_json),
        },
        "candidates": candidates,
    });
    super::render_during::document_json(&mut v, a, ranked);
    v
}

/// The probe figures a plan applied (`assumptions.measured`).
fn measured_json(m: &super::candidate::Measured) -> serde_json::Value {
    json!({
        "source_get_per_second": m.source_get_per_second.map(dec),
        "destination_put_per_second": m.destination_put_per_second.map(dec),
        "source_get_peak_per_second": m.source_get_peak_per_second.map(dec),
        "source_head_per_second": m.source_head_per_second.map(dec),
        "source_head_peak_per_second": m.source_head_peak_per_second.map(dec),
        "destination_put_peak_per_second": m.destination_put_peak_per_second.map(dec),
        "source_get_one_seconds": m.source_get_one_seconds.map(dec),
        "destination_put_one_seconds": m.destination_put_one_seconds.map(dec),
        "source_get_bytes_per_second": m.source_get_bytes_per_second.map(dec),
        "destination_put_bytes_per_second": m.destination_put_bytes_per_second.map(dec),
        "cpu_seconds_per_gib": m.cpu_seconds_per_gib.map(dec),
        "hash_cpu_seconds_per_gib": m.hash_cpu_seconds_per_gib.map(dec),
        "cores": m.cores,
        "shared_host": m.shared_host,
        "server_copy": m.server_copy.as_ref().map(|r| json!({
            "copy_request_seconds": dec(r.copy_request_seconds),
            "copy_seconds_per_gib": dec(r.copy_seconds_per_gib),
            "copies_per_second": r.copies_per_second.map(dec),
            "head_copies_per_second": r.head_copies_per_second.map(dec),
            "copy_bytes_per_second": r.copy_bytes_per_second.map(dec),
            "part_copy_bytes_per_second": r.part_copy_bytes_per_second.map(dec),
            "start_seconds": r.start_seconds.map(dec),
        })),
    })
}

/// The human report: a header, the ranked table, then warnings per destination.
pub fn text(src: &Place, corpus: &Corpus, a: &Assumptions, ranked: &[Candidate]) -> String {
    let mut out = String::new();
    let bytes = corpus.total_bytes();
    let objects = corpus.total_objects();
    let avg = bytes.checked_div(objects).unwrap_or(0);
    out.push_str(&format!(
        "Corpus   {} in {} {} (avg {}), {}; horizon {}\n",
        fmt_bytes_si(bytes),
        fmt_count(objects),
        crate::words::noun(objects, "object"),
        fmt_bytes_si(avg),
        src.canonical(),
        crate::words::count(a.months.into(), "month")
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
    if let Some(best) = ranked.iter().find(|c| c.kind == Kind::Move) {
        let t = &best.time;
        out.push_str(&format!(
            "Transfer {} to {}, {}-bound at {} ({} x {} in flight, {} ms per request{})\n",
            fmt_duration(t.seconds),
            best.provider,
            t.bound.as_str(),
            fmt_rate_bits(t.effective_bandwidth),
            crate::words::count(a.workers.into(), "worker"),
            a.concurrency,
            a.latency_ms,
            if t.restore_seconds > Decimal::ZERO {
                format!(
                    ", plus {} of archive restore",
                    fmt_duration(t.restore_seconds)
                )
            } else {
                String::new()
            }
        ));
    }
    if let Some(r) = &a.reads {
        out.push_str(&format!(
            "Reads    {} {} a month from {} for {}; \"stay\" keeps the data at {}\n",
            r.per_month.normalize(),
            crate::words::noun_dec(r.per_month, "full read"),
            r.compute.canonical(),
            crate::words::count(a.months.into(), "month"),
            src.canonical()
        ));
        out.push_str(&super::render_during::feed_lines(ranked));
        out.push('\n');
        out.push_str(&horizon_table(a, ranked));
    } else {
        out.push('\n');
        out.push_str(&move_table(a, ranked));
    }
    let notes = super::marking::footnotes(ranked);
    if !notes.is_empty() {
        out.push('\n');
        out.push_str(&notes.join("\n"));
        out.push('\n');
    }
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

/// Move or stay: what each candidate costs once, every month, over the horizon, and from which
/// month moving pays.
fn horizon_table(a: &Assumptions, ranked: &[Candidate]) -> String {
    let mut out = String::new();
    let mut table = compact();
    let horizon = format!("{}-mo\ntotal", a.months);
    table.set_header(vec![
        "#",
        "candidate",
        "move\n(once)",
        "storage\n/mo",
        "reads/mo",
        horizon.as_str(),
        "break-\neven",
        "time",
        "during\nmove",
        "leave\nlater",
    ]);
    for (i, c) in ranked.iter().enumerate() {
        let k = &c.cost;
        let be = match (c.kind, c.break_even_month) {
            (Kind::Stay, _) => "-".to_string(),
            (Kind::Move, Some(0)) => "at once".to_string(),
            (Kind::Move, Some(m)) => format!("month {m}"),
            (Kind::Move, None) => "never".to_string(),
        };
        // How the GPUs read it goes on a second line (the table fits 100 columns; see
        // `ranked_table`): the stay row also names the source.
        let feed = match c.feed.as_ref().map(|f| f.mark()) {
            Some(m) if m != "ok" => format!(", {m}"),
            _ => String::new(),
        };
        let path = c
            .reads
            .as_ref()
            .map(|p| format!("reads: {}{feed}", p.route.as_str()));
        let mark = c.marks.marker();
        let mut name = match (c.kind, path) {
            (Kind::Stay, Some(p)) => format!("stay{mark}\n({})\n{p}", c.resolved),
            (Kind::Stay, None) => format!("stay{mark}\n({})", c.resolved),
            (Kind::Move, Some(p)) => format!("{}{mark}\n{p}", c.destination),
            (Kind::Move, None) => format!("{}{mark}", c.destination),
        };
        if let Some(l) = super::render_during::during_line(c) {
            name = format!("{name}\n{l}");
        }
        table.add_row(vec![
            (i + 1).to_string(),
            name,
            k.one_time().to_string(),
            k.storage_per_month.to_string(),
            k.reads_per_month.to_string(),
            k.total().to_string(),
            be,
            horizon::move_time(c),
            super::render_during::during_cell(c),
            match c.kind {
                Kind::Stay => "-".to_string(),
                Kind::Move => k.exit_egress.to_string(),
            },
        ]);
    }
    finish(&mut table, usize::MAX);
    for col in [2, 3, 4, 5, 8, 9] {
        if let Some(c) = table.column_mut(col) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    out.push_str(&trimmed(&table));
    out.push('\n');
    out.push_str(
        "\nbreak-even: the first month from which the candidate has cost no more than staying, to the end of the horizon\n",
    );
    for c in ranked {
        if let Some(l) = horizon::describe(c) {
            out.push_str(&format!("  {l}\n"));
        }
    }
    out
}

/// The one-move table (no `--compute-at`): see [`ranked_table`].
fn move_table(a: &Assumptions, ranked: &[Candidate]) -> String {
    let mut out = ranked_table(ranked, a.months);
    out.push('\n');
    out
}

/// A table in the compact style of the plan's tables: horizontal rules only, columns one space
/// apart (comfy-table draws a missing vertical line as a space; cells get no padding), never
/// wrapped (so no number is broken across lines).
pub(crate) fn compact() -> Table {
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
    table
}

/// Right-aligns columns `from..` and takes the padding off every cell (see [`compact`]).
pub(crate) fn finish(table: &mut Table, from: usize) {
    for (i, col) in table.column_iter_mut().enumerate() {
        col.set_padding((0, 0));
        if i >= from {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
}

/// The lines of a table without trailing blanks.
pub(crate) fn trimmed(table: &Table) -> String {
    table
        .lines()
        .map(|l| l.trim_end().to_string())
        .collect::<Vec<_>>()
        .join("\n")
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
            Col::Other,
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
    /// Whatever else is in the total (the source billed during the move, its early deletion,
    /// a restored copy, workers, the option during the move, read stalls), so a row adds up.
    Other,
    GpuIdle,
    Total,
    Time,
    LeaveLater,
}

const COLUMNS: [Col; 13] = [
    Col::Rank,
    Col::Destination,
    Col::Egress,
    Col::Requests,
    Col::Retrieval,
    Col::StoragePerMonth,
    Col::StorageHorizon,
    Col::EarlyDelete,
    Col::Other,
    Col::GpuIdle,
    Col::Total,
    Col::Time,
    Col::LeaveLater,
];

/// What the total holds besides the table's own columns.
fn other(k: &super::candidate::Cost) -> crate::money::Usd {
    k.total()
        - (k.egress
            + k.source_requests
            + k.destination_requests
            + k.retrieval
            + k.storage_horizon
            + k.early_deletion
            + k.gpu_idle)
}

/// The widest line, in characters.
fn width(table: &str) -> usize {
    table.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

fn layout(ranked: &[Candidate], months: u32, cols: &[Col]) -> String {
    let mut table = compact();
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
        Col::Other => "other",
        Col::GpuIdle => "GPU idle",
        Col::Total => "total",
        Col::Time => "time",
        Col::LeaveLater => "leave\nlater",
    }));
    for (i, c) in ranked.iter().enumerate() {
        let k = &c.cost;
        table.add_row(cols.iter().map(|col| match col {
            Col::Rank => (i + 1).to_string(),
            Col::Destination => format!("{}{}", c.destination, c.marks.marker()),
            Col::Egress => k.egress.to_string(),
            Col::Requests => (k.source_requests + k.destination_requests).to_string(),
            Col::Retrieval => k.retrieval.to_string(),
            Col::StoragePerMonth => k.storage_per_month.to_string(),
            Col::StorageHorizon => k.storage_horizon.to_string(),
            Col::EarlyDelete => k.early_deletion.to_string(),
            Col::Other => other(k).to_string(),
            Col::GpuIdle => k.gpu_idle.to_string(),
            Col::Total => k.total().to_string(),
            Col::Time => fmt_duration(c.time.seconds),
            Col::LeaveLater => k.exit_egress.to_string(),
        }));
    }
    finish(&mut table, 2);
    trimmed(&table)
}
