//! `plan --tiering --report FILE.html`: one self-contained page (no script, no external file)
//! with the four options' monthly cost as a table and as stacked bars, the model's assumptions
//! and the fast tier's price source. Bar segments carry `data-option`, `data-item` (the JSON key)
//! and `data-value` (the same micro-dollar amounts as `plan --tiering --json`); segments differ by
//! pattern as well as colour (the Okabe–Ito palette).

use super::render_tiering::{fast_line, idle, rate};
use super::report::{STYLE, esc};
use super::tiering::{OptionCost, Plan};
use crate::money::Usd;
use crate::units::fmt_bytes_si;
use rust_decimal::prelude::ToPrimitive;
use std::fmt::Write;

type Item = (&'static str, &'static str, fn(&OptionCost) -> Usd);

const ITEMS: &[Item] = &[
    ("object storage", "object_storage", |o| o.object_storage),
    ("fast tier storage", "fast_storage", |o| o.fast_storage),
    ("object reads", "object_reads", |o| o.object_reads),
    ("staging fees", "staging_fees", |o| o.staging_fees),
    ("checkpoint idle", "checkpoint_idle", |o| {
        o.checkpoint_idle.usd
    }),
    ("loading stall", "loading_idle", |o| o.loading_idle.usd),
    ("staging idle", "staging_idle", |o| o.staging_idle.usd),
];

const COLOURS: &[&str] = &[
    "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7",
];

fn patterns() -> String {
    let marks = [
        "",
        r#"<path d="M0,8 L8,0" stroke="black" stroke-width="1.2"/>"#,
        r#"<path d="M0,4 L8,4" stroke="black" stroke-width="1.2"/>"#,
        r#"<circle cx="4" cy="4" r="1.6" fill="black"/>"#,
        r#"<path d="M0,0 L8,8 M0,8 L8,0" stroke="black" stroke-width="1"/>"#,
        r#"<path d="M4,0 L4,8" stroke="black" stroke-width="1.2"/>"#,
        r#"<path d="M0,0 L8,8" stroke="black" stroke-width="1.2"/>"#,
    ];
    let mut s = String::from("<defs>");
    for (i, m) in marks.iter().enumerate() {
        let _ = write!(
            s,
            r#"<pattern id="t{i}" width="8" height="8" patternUnits="userSpaceOnUse"><rect width="8" height="8" fill="{}"/>{m}</pattern>"#,
            COLOURS[i]
        );
    }
    s + "</defs>"
}

/// One bar per option, one segment per non-zero item, widths proportional to the amounts.
fn bars(p: &Plan) -> String {
    let (label_w, plot_w, row_h) = (250.0, 560.0, 34.0);
    let max = p
        .options
        .iter()
        .map(|o| o.total().0.to_f64().unwrap_or(0.0))
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    let scale = plot_w / max;
    let legend_h = 24.0;
    let h = legend_h + row_h * p.options.len() as f64 + 10.0;
    let mut s = format!(
        r#"<svg class="chart" role="img" aria-label="Monthly cost of each option, by item" width="{w}" height="{h}" viewBox="0 0 {w} {h}" data-scale="{scale}" xmlns="http://www.w3.org/2000/svg">{}"#,
        patterns(),
        w = label_w + plot_w + 120.0,
    );
    for (k, (label, _, _)) in ITEMS.iter().enumerate() {
        let x = k as f64 * 130.0;
        let _ = write!(
            s,
            r#"<rect x="{x}" y="4" width="12" height="12" fill="url(#t{k})" stroke="black" stroke-width="0.5"/><text x="{}" y="14" font-size="11">{}</text>"#,
            x + 16.0,
            esc(label)
        );
    }
    for (r, o) in p.options.iter().enumerate() {
        let y = legend_h + r as f64 * row_h + 6.0;
        let _ = write!(
            s,
            r#"<text x="0" y="{}" font-size="13">{}</text>"#,
            y + 16.0,
            esc(o.boundary.label())
        );
        let mut x = label_w;
        for (k, (_, key, get)) in ITEMS.iter().enumerate() {
            let v = get(o);
            if v.is_zero() {
                continue;
            }
            let w = v.0.to_f64().unwrap_or(0.0) * scale;
            let _ = write!(
                s,
                r#"<rect class="seg" x="{x:.2}" y="{y}" width="{w:.2}" height="22" fill="url(#t{k})" stroke="black" stroke-width="0.5" data-option="{}" data-item="{key}" data-value="{}"><title>{}: {}</title></rect>"#,
                o.boundary.id(),
                v.micros(),
                esc(key),
                esc(&v.to_string())
            );
            x += w;
        }
        let _ = write!(
            s,
            r#"<text x="{:.2}" y="{}" font-size="13">{}</text>"#,
            x + 6.0,
            y + 16.0,
            esc(&o.total().to_string())
        );
    }
    s + "</svg>"
}

fn table(p: &Plan) -> String {
    let mut s = String::from(
        "<table id=\"options\"><thead><tr><th>option</th><th>on fast tier</th><th>fast tier read / write</th><th>storage /mo</th><th>read &amp; stage fees</th><th>checkpoint idle</th><th>loading stall</th><th>staging idle</th><th>total /mo</th></tr></thead><tbody>",
    );
    for (k, o) in p.options.iter().enumerate() {
        let rw = if o.fast_bytes == 0 {
            "-".to_string()
        } else {
            format!("{} / {}", rate(o.fast_rates.read), rate(o.fast_rates.write))
        };
        let _ = write!(
            s,
            "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td data-option=\"{}\" data-value=\"{}\">{}</td></tr>",
            if k == p.cheapest {
                " class=\"best\""
            } else {
                ""
            },
            esc(o.boundary.label()),
            esc(&fmt_bytes_si(o.fast_bytes)),
            esc(&rw),
            o.storage(),
            o.object_reads + o.staging_fees,
            esc(&idle(o.checkpoint_idle)),
            esc(&idle(o.loading_idle)),
            esc(&idle(o.staging_idle)),
            o.boundary.id(),
            o.total().micros(),
            o.total()
        );
    }
    s + "</tbody></table>"
}

const ASSUMPTIONS: &[&str] = &[
    "Object storage is the system of record: it keeps the data sets and the kept checkpoints in every option; the fast tier holds a second copy of what the option puts there, sized exactly to it.",
    "A managed tier's throughput is bought with capacity: MB/s per TiB × the TiB the option keeps on it (unless --fast-tier-throughput fixes it).",
    "Each checkpoint stops training for its size ÷ the write throughput of the tier it is written to; with a drain, only the fast-tier write counts.",
    "Reads stall only beyond what training overlaps: the month's bytes take bytes ÷ throughput to read, and the GPUs idle for what that exceeds bytes ÷ the required read rate.",
    "Each job stages the working set onto the fast tier before it starts (GPUs waiting), at the slower of the store's read and the tier's write, paying one GET per object.",
    "Not counted: checkpoint PUTs and drain traffic (the same in every option), egress (one region assumed), reads and writes competing for a tier, a tier's minimum size.",
];

pub fn html(p: &Plan, generated: &str) -> String {
    let mut h = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>moverctl plan --tiering: {}</title><style>{STYLE}</style></head><body>",
        esc(&p.about.object_place)
    );
    let best = p.best();
    let _ = write!(
        h,
        "<h1>moverctl plan --tiering</h1><p class=\"muted\">Which data belongs on the fast tier, given what the GPUs cost while they wait? Generated {} by moverctl {}.</p><p><b>Cheapest boundary: {}</b>, {} a month.</p>",
        esc(generated),
        env!("CARGO_PKG_VERSION"),
        esc(best.boundary.label()),
        best.total()
    );
    h.push_str(&table(p));
    h.push_str("<h2>What each option pays a month, by item</h2><p class=\"muted\">Each item has its own pattern as well as its own colour.</p>");
    h.push_str(&bars(p));
    h.push_str("<h2>Inputs</h2><pre style=\"white-space:pre-wrap\">");
    h.push_str(&esc(&super::render_tiering::text(p)));
    h.push_str("</pre><h2>Assumptions</h2><ul>");
    for a in ASSUMPTIONS {
        let _ = write!(h, "<li>{}</li>", esc(a));
    }
    h.push_str("</ul><h2>Price sources and dates</h2><p>");
    h.push_str(&esc(&fast_line(p)));
    if let Some(n) = &p.about.note {
        let _ = write!(h, "<br>{}", esc(n));
    }
    h.push_str("</p><p class=\"muted\">Amounts are exact decimals (USD); the chart's values are in each segment's data-value attribute, the same as <code>moverctl plan --tiering --json</code>.</p></body></html>\n");
    h
}
