//! `plan --report FILE.html`: one self-contained HTML page (no script, no external file, font or
//! network request) with the ranked table, a stacked bar of each candidate's cost items, the
//! cumulative cost month by month (one line per candidate, "stay" included, break-even points
//! marked), transfer time and GPU idle, every assumption and warning, and the price sources and
//! dates. Charts are inline SVG drawn here. Series differ by pattern, dash and marker shape, not by
//! colour alone (the colours are the Okabe–Ito palette), so they read in greyscale print and for
//! colour-blind readers.
//!
//! Every drawn value carries its exact amount: bar segments `data-candidate`, `data-item`,
//! `data-keys` (the JSON `cost` keys it sums) and `data-value`; line points `data-candidate`,
//! `data-month`, `data-value` — the same micro-dollar amounts as `plan --json`.

use super::corpus::Corpus;
use super::horizon::cumulative;
use super::model::{Assumptions, Candidate, Cost, Kind};
use crate::catalog::Place;
use crate::money::Usd;
use crate::units::{fmt_bytes_si, fmt_count, fmt_duration, fmt_rate_bits};
use rust_decimal::Decimal;
use rust_decimal::prelude::*;
use std::fmt::Write;

/// Escape text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

/// The cost items drawn as bar segments: label, JSON keys summed, amount.
type Item = (&'static str, &'static str, fn(&Cost) -> Usd);

const ITEMS: &[Item] = &[
    ("move egress", "egress", |k| k.egress),
    (
        "move requests",
        "source_requests destination_requests",
        |k| k.source_requests + k.destination_requests,
    ),
    ("retrieval / restore", "retrieval", |k| k.retrieval),
    ("storage", "storage_horizon", |k| k.storage_horizon),
    ("read egress", "read_egress", |k| k.read_egress),
    (
        "read requests & retrieval",
        "read_requests read_retrieval",
        |k| k.read_requests + k.read_retrieval,
    ),
    ("early deletion", "early_deletion", |k| k.early_deletion),
    (
        "GPU idle, stalls, reads during the move",
        "gpu_idle during_move read_stall",
        |k| k.gpu_idle + k.during_move + k.read_stall,
    ),
    (
        "source storage, workers, restores",
        "source_storage source_early_deletion restored_copy worker_compute restore_idle",
        |k| k.extras.total(),
    ),
];

/// Okabe–Ito colours, one per item, each with its own pattern.
const COLOURS: &[&str] = &[
    "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#999999",
    "#FFFFFF",
];

fn pattern_defs() -> String {
    // Black marks over each colour: solid, diagonal, horizontal, dots, cross-hatch, vertical,
    // reverse diagonal, checks.
    let marks = [
        "",
        r#"<path d="M0,8 L8,0" stroke="black" stroke-width="1.2"/>"#,
        r#"<path d="M0,4 L8,4" stroke="black" stroke-width="1.2"/>"#,
        r#"<circle cx="4" cy="4" r="1.6" fill="black"/>"#,
        r#"<path d="M0,0 L8,8 M0,8 L8,0" stroke="black" stroke-width="1"/>"#,
        r#"<path d="M4,0 L4,8" stroke="black" stroke-width="1.2"/>"#,
        r#"<path d="M0,0 L8,8" stroke="black" stroke-width="1.2"/>"#,
        r##"<rect width="4" height="4" fill="black" fill-opacity="0.45"/><rect x="4" y="4" width="4" height="4" fill="black" fill-opacity="0.45"/>"##,
        r#"<path d="M0,2 L8,2 M0,6 L8,6 M2,0 L2,8 M6,0 L6,8" stroke="black" stroke-width="0.8"/>"#,
    ];
    let mut s = String::from("<defs>");
    for (i, m) in marks.iter().enumerate() {
        let _ = write!(
            s,
            r#"<pattern id="p{i}" width="8" height="8" patternUnits="userSpaceOnUse"><rect width="8" height="8" fill="{}"/>{m}</pattern>"#,
            COLOURS[i]
        );
    }
    s.push_str("</defs>");
    s
}

fn name(c: &Candidate) -> String {
    let mark = c.marks.marker();
    match c.kind {
        Kind::Stay => format!("stay ({}){mark}", c.resolved),
        Kind::Move => format!("{}{mark}", c.destination),
    }
}

fn money(u: Usd) -> String {
    u.micros().to_string()
}

fn f(d: Decimal) -> f64 {
    d.to_f64().unwrap_or(0.0)
}

/// Stacked horizontal bars: one per candidate, one segment per non-zero cost item.
fn bars_svg(ranked: &[Candidate]) -> String {
    let label_w = 260.0;
    let plot_w = 560.0;
    let value_w = 110.0;
    let row_h = 34.0;
    let legend_h = 26.0 * ITEMS.len().div_ceil(2) as f64;
    let height = 20.0 + row_h * ranked.len() as f64 + 20.0 + legend_h;
    let width = label_w + plot_w + value_w;
    let max = ranked
        .iter()
        .map(|c| c.cost.total())
        .max()
        .unwrap_or(Usd::ZERO);
    let scale = if max.is_zero() {
        0.0
    } else {
        plot_w / f(max.0)
    };
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg id="bars" role="img" aria-labelledby="bars-title" viewBox="0 0 {width} {height}" width="{width}" height="{height}" data-scale="{scale}"><title id="bars-title">Total cost over the horizon by item, per candidate</title>{}"#,
        pattern_defs()
    );
    for (r, c) in ranked.iter().enumerate() {
        let y = 20.0 + row_h * r as f64;
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end" class="lbl">{}. {}</text>"#,
            label_w - 8.0,
            y + row_h / 2.0 + 4.0,
            r + 1,
            esc(&name(c))
        );
        let mut x = label_w;
        for (i, (label, keys, get)) in ITEMS.iter().enumerate() {
            let v = get(&c.cost);
            if v.is_zero() {
                continue;
            }
            let w = f(v.0) * scale;
            let _ = write!(
                s,
                r#"<rect class="seg" x="{x:.3}" y="{:.1}" width="{w:.3}" height="{:.1}" fill="url(#p{i})" stroke="black" stroke-width="0.5" data-candidate="{}" data-item="{label}" data-keys="{keys}" data-value="{}"><title>{}: {label} {}</title></rect>"#,
                y + 4.0,
                row_h - 8.0,
                esc(&c.destination),
                money(v),
                esc(&name(c)),
                v
            );
            x += w;
        }
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{}" class="val" data-candidate="{}" data-total="{}">{}</text>"#,
            x + 6.0,
            y + row_h / 2.0 + 4.0,
            esc(&c.destination),
            money(c.cost.total()),
            c.cost.total()
        );
    }
    // Legend: the same swatches as the bars.
    let ly = 20.0 + row_h * ranked.len() as f64 + 16.0;
    for (i, (label, _, _)) in ITEMS.iter().enumerate() {
        let col = (i % 2) as f64;
        let row = (i / 2) as f64;
        let x = label_w + col * 300.0;
        let y = ly + row * 26.0;
        let _ = write!(
            s,
            r#"<rect x="{x}" y="{y}" width="22" height="16" fill="url(#p{i})" stroke="black" stroke-width="0.5"/><text x="{}" y="{}" class="lbl">{label}</text>"#,
            x + 28.0,
            y + 13.0
        );
    }
    s.push_str("</svg>");
    s
}

const DASHES: &[&str] = &[
    "", "8 4", "2 3", "10 3 2 3", "5 5", "12 2", "1 2", "6 2 2 2",
];

/// One marker shape per series, centred on (x, y).
fn marker(shape: usize, x: f64, y: f64, attrs: &str) -> String {
    match shape % 6 {
        0 => format!(r#"<circle cx="{x:.2}" cy="{y:.2}" r="4" {attrs}/>"#),
        1 => format!(
            r#"<rect x="{:.2}" y="{:.2}" width="8" height="8" {attrs}/>"#,
            x - 4.0,
            y - 4.0
        ),
        2 => format!(
            r#"<path d="M{x:.2},{:.2} L{:.2},{:.2} L{:.2},{:.2} Z" {attrs}/>"#,
            y - 5.0,
            x + 5.0,
            y + 4.0,
            x - 5.0,
            y + 4.0
        ),
        3 => format!(
            r#"<path d="M{x:.2},{:.2} L{:.2},{y:.2} L{x:.2},{:.2} L{:.2},{y:.2} Z" {attrs}/>"#,
            y - 5.0,
            x + 5.0,
            y + 5.0,
            x - 5.0
        ),
        4 => format!(
            r#"<path d="M{:.2},{:.2} L{:.2},{:.2} M{:.2},{:.2} L{:.2},{:.2}" stroke-width="2" {attrs}/>"#,
            x - 4.0,
            y - 4.0,
            x + 4.0,
            y + 4.0,
            x - 4.0,
            y + 4.0,
            x + 4.0,
            y - 4.0
        ),
        _ => format!(
            r#"<path d="M{x:.2},{:.2} L{x:.2},{:.2} M{:.2},{y:.2} L{:.2},{y:.2}" stroke-width="2" {attrs}/>"#,
            y - 5.0,
            y + 5.0,
            x - 5.0,
            x + 5.0
        ),
    }
}

/// Round amounts for the chart's axis, from 0 to the first at or above `max`: steps of 1, 2,
/// 2.5 or 5 times a power of ten, the smallest that reaches `max` in at most four steps.
pub fn nice_ticks(max: Decimal) -> Vec<Decimal> {
    if max <= Decimal::ZERO {
        return vec![Decimal::ZERO, Decimal::ONE];
    }
    let raw = max / Decimal::from(4);
    let ten = Decimal::TEN;
    let mut p = Decimal::ONE;
    while p * ten <= raw {
        p *= ten;
    }
    while p > raw && p > Decimal::new(1, 6) {
        p /= ten;
    }
    let step = [
        Decimal::ONE,
        Decimal::TWO,
        Decimal::new(25, 1),
        Decimal::from(5),
        ten,
    ]
    .into_iter()
    .map(|m| m * p)
    .find(|s| *s >= raw)
    .unwrap_or(ten * p);
    let mut ticks = vec![Decimal::ZERO];
    while *ticks.last().expect("one tick") < max {
        let next = *ticks.last().expect("one tick") + step;
        ticks.push(next.normalize());
    }
    ticks
}

/// The axes and grid of the cumulative chart: a horizontal line at each round amount of
/// `ticks` (see [`nice_ticks`]), month ticks.
fn lines_axes(
    ticks: &[Decimal],
    months: u32,
    (left, top, pw, ph): (f64, f64, f64, f64),
    xm: impl Fn(u32) -> f64,
    yv: impl Fn(Usd) -> f64,
) -> String {
    let mut s = String::new();
    for t in ticks {
        let v = Usd(*t);
        let y = yv(v);
        let _ = write!(
            s,
            "<line x1=\"{left}\" y1=\"{y:.2}\" x2=\"{}\" y2=\"{y:.2}\" stroke=\"silver\" stroke-width=\"0.6\"/><text x=\"{}\" y=\"{:.2}\" text-anchor=\"end\" class=\"tick\">{}</text>",
            left + pw,
            left - 6.0,
            y + 4.0,
            esc(&v.human())
        );
    }
    let step = (months / 12).max(1);
    let mut m = 0;
    while m <= months {
        let x = xm(m);
        let _ = write!(
            s,
            "<line x1=\"{x:.2}\" y1=\"{}\" x2=\"{x:.2}\" y2=\"{}\" stroke=\"black\"/><text x=\"{x:.2}\" y=\"{}\" text-anchor=\"middle\" class=\"tick\">{m}</text>",
            top + ph,
            top + ph + 5.0,
            top + ph + 18.0
        );
        m += step;
    }
    let _ = write!(
        s,
        "<line x1=\"{left}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/><line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{}\" stroke=\"black\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"tick\">month (0 = the move)</text>",
        top + ph,
        left + pw,
        top + ph,
        top + ph,
        left + pw / 2.0,
        top + ph + 36.0
    );
    s
}

/// Cumulative cost month by month, one line per candidate; break-even points ringed.
fn lines_svg(ranked: &[Candidate], months: u32) -> String {
    let (left, top, pw, ph) = (90.0, 20.0, 640.0, 340.0);
    let legend_w = 300.0;
    let width = left + pw + legend_w;
    let height = top + ph + 50.0;
    let series: Vec<(usize, &Candidate, Vec<Usd>)> = ranked
        .iter()
        .enumerate()
        .map(|(i, c)| (i, c, cumulative(c, months)))
        .collect();
    let max = series
        .iter()
        .flat_map(|(_, _, v)| v.iter().copied())
        .max()
        .unwrap_or(Usd::ZERO);
    let ticks = nice_ticks(max.0);
    let maxf = f(*ticks.last().expect("nice_ticks gives two or more"));
    let xm = |m: u32| left + pw * f64::from(m) / f64::from(months.max(1));
    let yv = |v: Usd| top + ph - ph * f(v.0) / maxf;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg id="lines" role="img" aria-labelledby="lines-title" viewBox="0 0 {width} {height}" width="{width}" height="{height}" data-max="{}" data-months="{months}"><title id="lines-title">Cumulative cost month by month</title>"#,
        money(Usd(*ticks.last().expect("nice_ticks gives two or more")))
    );
    s.push_str(&lines_axes(&ticks, months, (left, top, pw, ph), xm, yv));
    for (i, c, values) in &series {
        let stay = c.kind == Kind::Stay;
        let colour = if stay {
            "#000"
        } else {
            COLOURS[(i + 4) % 8] // the eight Okabe–Ito colours, never the white
        };
        let dash = if stay { "" } else { DASHES[i % DASHES.len()] };
        let width = if stay { 3.5 } else { 2.0 };
        let pts: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(m, v)| format!("{:.2},{:.2}", xm(m as u32), yv(*v)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline class="series" data-candidate="{}" fill="none" stroke="{colour}" stroke-width="{width}" stroke-dasharray="{dash}" points="{}"/>"#,
            esc(&c.destination),
            pts.join(" ")
        );
        let shape = if stay { 1 } else { *i };
        for (m, v) in values.iter().enumerate() {
            let attrs = format!(
                r#"class="pt" fill="{colour}" stroke="{colour}" data-candidate="{}" data-month="{m}" data-value="{}""#,
                esc(&c.destination),
                money(*v)
            );
            let _ = write!(s, "{}", marker(shape, xm(m as u32), yv(*v), &attrs));
        }
        if let Some(be) = c.break_even_month {
            let v = values[be as usize];
            let _ = write!(
                s,
                r#"<circle class="breakeven" cx="{:.2}" cy="{:.2}" r="9" fill="none" stroke="black" stroke-width="1.5" data-candidate="{}" data-month="{be}"><title>{} breaks even with staying at month {be}</title></circle>"#,
                xm(be),
                yv(v),
                esc(&c.destination),
                esc(&name(c))
            );
        }
        // Legend entry: line sample with its marker and the name.
        let ly = top + 10.0 + 24.0 * *i as f64;
        let lx = left + pw + 20.0;
        let _ = write!(
            s,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="{width}" stroke-dasharray="{dash}"/>{}<text x="{}" y="{}" class="lbl">{}{}</text>"#,
            lx + 40.0,
            marker(
                shape,
                lx + 20.0,
                ly,
                &format!(r#"fill="{colour}" stroke="{colour}""#)
            ),
            lx + 48.0,
            ly + 4.0,
            esc(&name(c)),
            match c.break_even_month {
                Some(m) if c.kind == Kind::Move => format!(" (break-even month {m})"),
                None if c.kind == Kind::Move && ranked.iter().any(|x| x.kind == Kind::Stay) => {
                    " (never breaks even)".to_string()
                }
                _ => String::new(),
            }
        );
    }
    s.push_str("</svg>");
    s
}

fn price_sources(places: &[Place]) -> String {
    let mut rows = String::new();
    let mut seen = std::collections::BTreeSet::new();
    for p in places {
        let f = &p.provider.file;
        let mut add = |section: String, source: &str, as_of: String| {
            if seen.insert((f.id.clone(), section.clone())) {
                let _ = write!(
                    rows,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&f.id),
                    esc(&section),
                    esc(source),
                    esc(&as_of)
                );
            }
        };
        add(
            "billing unit".into(),
            &f.billing.source,
            f.billing.as_of.to_string(),
        );
        let e = p.egress();
        add(
            format!("internet egress ({})", p.region.id),
            &e.source,
            e.as_of.to_string(),
        );
        add(
            "same-region / inter-region transfer".into(),
            &f.transfer.source,
            f.transfer.as_of.to_string(),
        );
        add(
            format!("class {}", p.class.id),
            &p.class.source,
            p.class.as_of.to_string(),
        );
        for t in &p.class.restore_tiers {
            add(
                format!("class {} restore {}", p.class.id, t.id),
                &t.source,
                t.as_of.to_string(),
            );
        }
        if let Some(m) = &f.minimum_monthly {
            add("monthly minimum".into(), &m.source, m.as_of.to_string());
        }
    }
    rows
}

pub(crate) const STYLE: &str = r#"
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #000; background: #fff; margin: 24px; max-width: 1200px; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #000; }
table { border-collapse: collapse; font-size: 0.9em; } th, td { border: 1px solid #888; padding: 3px 7px; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.stay td { font-weight: bold; }
svg { max-width: 100%; height: auto; } svg text { font-family: inherit; } .lbl { font-size: 12px; } .val { font-size: 12px; font-weight: bold; } .tick { font-size: 11px; }
.muted { color: #333; } ul.warn li { margin-bottom: 3px; }
@media print { body { margin: 10mm; } h2 { break-after: avoid; } svg, table { break-inside: avoid; } }
"#;

/// The whole page. `places` are the source, the destinations and (when in the catalog) the compute
/// location, for the price sources; `generated` is the time to print.
/// The ranked candidates: what the move costs once, a month, in total, and when it breaks even.
fn ranked_table(ranked: &[Candidate], a: &Assumptions) -> String {
    let mut h = String::new();
    h.push_str("<h2>Ranked candidates</h2><table id=\"ranked\"><thead><tr><th>#</th><th>candidate</th><th class=\"n\">move (once)</th><th class=\"n\">storage / month</th><th class=\"n\">reads / month</th><th>read path</th><th class=\"n\">total</th><th>break-even vs stay</th><th>during the move</th><th>read rate</th><th class=\"n\">leave later</th></tr></thead><tbody>");
    for (i, c) in ranked.iter().enumerate() {
        let k = &c.cost;
        let be = match (c.kind, c.break_even_month) {
            (Kind::Stay, _) => "—".to_string(),
            (Kind::Move, Some(0)) => "at once".to_string(),
            (Kind::Move, Some(m)) => format!("month {m}"),
            (Kind::Move, None) if a.reads.is_some() => "never (within the horizon)".to_string(),
            (Kind::Move, None) => "— (no --compute-at)".to_string(),
        };
        let _ = write!(
            h,
            "<tr class=\"{}\" data-candidate=\"{}\" data-total=\"{}\"><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td><td data-during=\"{}\">{}</td><td>{}</td><td class=\"n\">{}</td></tr>",
            c.kind.as_str(),
            esc(&c.destination),
            money(k.total()),
            i + 1,
            esc(&name(c)),
            k.one_time(),
            k.storage_per_month,
            k.reads_per_month,
            c.reads.as_ref().map_or("—", |p| p.route.as_str()),
            k.total(),
            esc(&be),
            c.during.as_ref().map_or("", |d| d.chosen.as_str()),
            esc(&c.during.as_ref().map_or("—".to_string(), |d| format!(
                "{}: {}",
                d.phrase(),
                c.cost.gpu_idle + c.cost.during_move
            ))),
            esc(
                &c.feed.as_ref().map_or("—".to_string(), |f| match f.supply {
                    Some(s) => format!(
                        "{} for {} needed{}",
                        fmt_rate_bits(s),
                        fmt_rate_bits(f.need),
                        if f.can_feed() == Some(false) {
                            format!(": stalls {} h a month", f.stall_hours_per_month.round_dp(1))
                        } else {
                            String::new()
                        }
                    ),
                    None => "not modelled".to_string(),
                })
            ),
            if c.kind == Kind::Stay {
                "—".to_string()
            } else {
                k.exit_egress.to_string()
            }
        );
    }
    h.push_str("</tbody></table>");
    h
}

/// Transfer time, its bound, the archive restore and GPU idle of each candidate.
fn time_table(ranked: &[Candidate]) -> String {
    let mut h = String::new();
    h.push_str("<h2>Transfer time and GPU idle</h2><table id=\"time\"><thead><tr><th>candidate</th><th class=\"n\">time</th><th>bound</th><th class=\"n\">archive restore</th><th class=\"n\">GPU idle</th></tr></thead><tbody>");
    for c in ranked {
        let (t, bound, restore) = match c.kind {
            Kind::Stay => ("—".to_string(), "no move".to_string(), "—".to_string()),
            Kind::Move => (
                fmt_duration(c.time.seconds),
                format!(
                    "{} at {}",
                    c.time.bound.as_str(),
                    fmt_rate_bits(c.time.effective_bandwidth)
                ),
                if c.time.restore_seconds.is_zero() {
                    "—".to_string()
                } else {
                    fmt_duration(c.time.restore_seconds)
                },
            ),
        };
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            esc(&name(c)),
            esc(&t),
            esc(&bound),
            esc(&restore),
            c.cost.gpu_idle
        );
    }
    h.push_str("</tbody></table>");
    h
}

/// The assumptions behind every candidate.
fn assumptions_list(src: &Place, a: &Assumptions, ranked: &[Candidate]) -> String {
    let mut h = String::new();
    h.push_str("<h2>Assumptions</h2><ul>");
    let mut assume = vec![
        format!(
            "horizon: {} (30 days each)",
            crate::words::count(a.months.into(), "month")
        ),
        format!(
            "path bandwidth {}, {} with {} NICs, {} in flight per worker, {} per stream, {} ms per request, {}",
            fmt_rate_bits(a.bandwidth),
            crate::words::count(a.workers.into(), "worker"),
            fmt_rate_bits(a.worker_nic),
            crate::words::count(a.concurrency.into(), "object"),
            fmt_rate_bits(a.stream_throughput),
            a.latency_ms,
            crate::words::count_as(a.prefixes.into(), "key prefix", "key prefixes")
        ),
        format!("GPU cluster idle cost: {}/hour", a.gpu_hourly),
        format!(
            "multipart above {}, parts of {} (raised to each store's limits)",
            crate::units::fmt_bytes(a.part_rule.threshold),
            crate::units::fmt_bytes(a.part_rule.preferred_part)
        ),
        format!(
            "exit waiver assumed: {}",
            if a.exit_waiver {
                "yes, as far as its conditions allow: only the bytes copied within its window at the predicted rate, never when the GPUs stay at the source"
            } else {
                "no"
            }
        ),
    ];
    match &a.reads {
        Some(r) => assume.push(format!(
            "GPUs at {}; {} {} of the corpus a month, one GET per object per read; reads start after the move; \"stay\" keeps the data at {} and pays no move and no GPU idle",
            r.compute.canonical(),
            r.per_month.normalize(),
            crate::words::noun_dec(r.per_month, "full read"),
            src.canonical()
        )),
        None => assume.push(
            "no --compute-at: reads are not priced and \"stay\" is not ranked".to_string(),
        ),
    }
    if let Some(r) = ranked.iter().find_map(|c| c.restore.as_ref()) {
        assume.push(r.why.clone());
    }
    // What the GPUs need and what each store gives them ("not modelled" where nothing says).
    assume.extend(
        super::render_during::feed_lines(ranked)
            .lines()
            .map(|l| l.trim().trim_start_matches("Feed").trim().to_string()),
    );
    for x in assume {
        let _ = write!(h, "<li>{}</li>", esc(&x));
    }
    h.push_str("</ul>");
    h
}

/// The warnings of all candidates, each once.
fn warnings_list(ranked: &[Candidate]) -> String {
    let mut h = String::new();
    h.push_str("<h2>Warnings</h2><ul class=\"warn\">");
    let mut seen = std::collections::BTreeSet::new();
    let mut any = false;
    for c in ranked {
        for w in &c.warnings {
            if seen.insert(w.clone()) {
                any = true;
                let _ = write!(h, "<li>{}</li>", esc(w));
            }
        }
    }
    if !any {
        h.push_str("<li>none</li>");
    }
    h.push_str("</ul>");
    h
}

pub fn html(
    src: &Place,
    places: &[Place],
    corpus: &Corpus,
    a: &Assumptions,
    ranked: &[Candidate],
    generated: &str,
) -> String {
    let mut h = String::new();
    let bytes = corpus.total_bytes();
    let objects = corpus.total_objects();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>moverctl plan: {}</title><style>{STYLE}</style></head><body>",
        esc(&src.canonical())
    );
    let question = match &a.reads {
        Some(r) => format!(
            "Where should the corpus live while GPUs at {} read it {} {} a month for {}?",
            r.compute.canonical(),
            r.per_month.normalize(),
            crate::words::noun_dec(r.per_month, "time"),
            crate::words::count(a.months.into(), "month")
        ),
        None => format!(
            "What does moving the corpus cost, with {} of storage?",
            crate::words::count(a.months.into(), "month")
        ),
    };
    let _ = write!(
        h,
        "<h1>moverctl plan</h1><p class=\"muted\">{}</p><p>Corpus: <b>{}</b> in <b>{}</b> {} at <b>{}</b> ({}). Generated {} by moverctl {}.</p>",
        esc(&question),
        esc(&fmt_bytes_si(bytes)),
        esc(&fmt_count(objects)),
        crate::words::noun(objects, "object"),
        esc(&src.canonical()),
        esc(&corpus.origin),
        esc(generated),
        env!("CARGO_PKG_VERSION")
    );
    if !ranked.is_empty() {
        let _ = write!(
            h,
            "<p id=\"verdict\"><b>Verdict: {}</b></p>",
            esc(&super::verdict::verdict(ranked, a.months))
        );
    }

    h.push_str(&ranked_table(ranked, a));

    h.push_str("<h2>What each candidate pays, by item</h2><p class=\"muted\">Totals over the horizon. Each item has its own pattern as well as its own colour.</p>");
    h.push_str(&bars_svg(ranked));
    h.push_str(if a.reads.is_some() {
        "<h2>Cumulative cost, month by month</h2><p class=\"muted\">Month 0 is the move (and the GPUs idling through it); every later month adds storage and reads. The thick black line is staying; a ring marks the month a move breaks even with staying.</p>"
    } else {
        "<h2>Cumulative cost, month by month</h2><p class=\"muted\">Month 0 is the move (and the GPUs idling through it); every later month adds storage. Staying is ranked, with break-even months, when <code>--compute-at</code> says where the data is read.</p>"
    });
    h.push_str(&lines_svg(ranked, a.months));

    h.push_str(&time_table(ranked));

    h.push_str(&assumptions_list(src, a, ranked));

    h.push_str(&super::marking::report_section(ranked, esc));

    h.push_str(&warnings_list(ranked));

    h.push_str("<h2>Price sources and dates</h2><table id=\"sources\"><thead><tr><th>provider</th><th>price</th><th>source</th><th>as of</th></tr></thead><tbody>");
    h.push_str(&price_sources(places));
    h.push_str("</tbody></table>");
    h.push_str("<p class=\"muted\">Amounts are exact decimals (USD); the charts' values are in each shape's data-value attribute, the same as <code>moverctl plan --json</code>.</p></body></html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    /// Fails on the main of 2026-12-08, whose axis showed max × g / 4 ($115,958, $231,915, …).
    #[test]
    fn axis_ticks_are_round_and_reach_the_top() {
        let shown = |max: &str| -> Vec<String> {
            nice_ticks(d(max))
                .into_iter()
                .map(|t| Usd(t).human())
                .collect()
        };
        assert_eq!(shown("463830"), ["$0", "$200,000", "$400,000", "$600,000"]);
        assert_eq!(shown("1662"), ["$0", "$500", "$1,000", "$1,500", "$2,000"]);
        assert_eq!(shown("100"), ["$0", "$25", "$50", "$75", "$100"]);
        assert_eq!(
            shown("0.004"),
            ["$0", "$0.001", "$0.002", "$0.003", "$0.004"]
        );
        assert_eq!(shown("0"), ["$0", "$1"]);
        for max in ["1", "7.3", "99", "12345.67", "2000000", "31415926"] {
            let t = nice_ticks(d(max));
            assert!(t.len() <= 5 && t.len() >= 2, "{max}: {t:?}");
            assert!(*t.last().unwrap() >= d(max), "{max}: {t:?}");
            let step = t[1];
            let mut m = step;
            while m >= Decimal::TEN {
                m /= Decimal::TEN;
            }
            while m < Decimal::ONE {
                m *= Decimal::TEN;
            }
            assert!(
                [d("1"), d("2"), d("2.5"), d("5")].contains(&m.normalize()),
                "{max}: step {step}"
            );
        }
    }
}
