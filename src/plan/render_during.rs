//! The plan's output of issue 29's checks: the options during the move, the exit waiver, the read
//! bandwidth and the verdict, in JSON (added to [`super::render::json`]'s document) and as the
//! lines of the text output.
//!
//! JSON: each candidate has `during_move` (null for "stay": `chosen` — `idle`,
//! `train-from-source` or `lazy` — `phrase`, `lazy_name`, and `options`: `option`, `available`,
//! `cost`, `note`), `waiver` (null without `--exit-waiver` or a waiver to check: `status` —
//! `credited`, `partial`, `refused` — `window_days`, `window_starts`, `bytes_total`,
//! `bytes_in_window`, `credited`, `charged`, `reason`) and `read_feed` (null without
//! `--compute-at`: `supply_bytes_per_second` (null: not modelled), `supply_from`,
//! `need_bytes_per_second`, `need_from`, `can_feed` (null: not known), `stall_hours_per_month`,
//! `stall_per_month`); the document has `verdict` (the sentence of [`super::verdict`]) and
//! `assumptions.train_hours_per_month` (null without `--compute-at`).

use super::candidate::{Assumptions, Candidate};
use super::verdict::verdict;
use crate::units::fmt_rate_bits;
use rust_decimal::Decimal;
use serde_json::{Value, json};

fn dec(d: Decimal) -> Value {
    let s = d.round_dp(3).normalize().to_string();
    Value::Number(s.parse().expect("decimal digits are a JSON number"))
}

/// Add `during_move`, `waiver` and `read_feed` to one candidate's JSON.
pub fn candidate_json(v: &mut Value, c: &Candidate) {
    v["during_move"] = c.during.as_ref().map_or(Value::Null, |d| {
        json!({
            "chosen": d.chosen.as_str(),
            "phrase": d.phrase(),
            "lazy_name": d.lazy_name,
            "options": d.options.iter().map(|o| json!({
                "option": o.option.as_str(),
                "available": o.available,
                "cost": o.cost.to_json(),
                "note": o.note,
            })).collect::<Vec<_>>(),
        })
    });
    v["waiver"] = c.waiver.as_ref().map_or(Value::Null, |w| {
        json!({
            "status": w.status.as_str(),
            "window_days": w.window_days,
            "window_starts": w.window_starts,
            "bytes_total": w.bytes_total,
            "bytes_in_window": w.bytes_in_window,
            "credited": w.credited.to_json(),
            "charged": w.charged.to_json(),
            "reason": w.reason,
        })
    });
    v["read_feed"] = c.feed.as_ref().map_or(Value::Null, |f| {
        json!({
            "supply_bytes_per_second": f.supply.map(dec),
            "supply_from": f.supply_from,
            "need_bytes_per_second": dec(f.need),
            "need_from": f.need_from,
            "can_feed": f.can_feed(),
            "stall_hours_per_month": dec(f.stall_hours_per_month),
            "stall_per_month": f.stall_per_month.to_json(),
        })
    });
}

/// Add `verdict` and `assumptions.train_hours_per_month` to the document.
pub fn document_json(v: &mut Value, a: &Assumptions, ranked: &[Candidate]) {
    v["verdict"] = Value::String(verdict(ranked, a.months));
    v["assumptions"]["train_hours_per_month"] = match a.reads {
        Some(_) => dec(a.feed.hours()),
        None => Value::Null,
    };
}

/// The text lines after "Reads": what the GPUs need and what each store gives them (with
/// `--compute-at`), saying what is assumed and what is not modelled.
pub fn feed_lines(ranked: &[Candidate]) -> String {
    let Some(need) = ranked.iter().find_map(|c| c.feed.as_ref()) else {
        return String::new();
    };
    let mut out = format!(
        "Feed     the GPUs need {} ({}; --read-rate sets it)\n",
        fmt_rate_bits(need.need),
        need.need_from
    );
    let mut unknown = Vec::new();
    for c in ranked {
        let Some(f) = &c.feed else { continue };
        match f.supply {
            Some(s) => out.push_str(&format!(
                "         {}: {} ({}){}\n",
                name(c),
                fmt_rate_bits(s),
                f.supply_from,
                if f.can_feed() == Some(false) {
                    format!(
                        ": stalls the GPUs {} h a month ({} a month)",
                        f.stall_hours_per_month.round_dp(1).normalize(),
                        f.stall_per_month
                    )
                } else {
                    String::new()
                }
            )),
            None => unknown.push(name(c)),
        }
    }
    if !unknown.is_empty() {
        out.push_str(&format!(
            "         read rate not modelled for {}: no published rate or probe; assumed to keep up (give --store-read-rate [PROVIDER=]RATE)\n",
            unknown.join(", ")
        ));
    }
    out
}

fn name(c: &Candidate) -> String {
    match c.kind {
        super::candidate::Kind::Stay => format!("stay ({})", c.resolved),
        super::candidate::Kind::Move => c.destination.clone(),
    }
}

/// What the GPUs do during the move, for the candidate cell of tables: `during: idle`,
/// `during: from source`, `during: lazy` (`None` for "stay").
pub fn during_line(c: &Candidate) -> Option<String> {
    let d = c.during.as_ref()?;
    Some(format!(
        "during: {}",
        match d.chosen {
            super::during::During::Idle => "idle",
            super::during::During::FromSource => "from source",
            super::during::During::Lazy => "lazy",
        }
    ))
}

/// What the move's time costs the GPUs under the option chosen (idle, reads of the source, a
/// lazy first pass's stall), for tables (`-` for "stay").
pub fn during_cell(c: &Candidate) -> String {
    match &c.during {
        Some(_) => (c.cost.gpu_idle + c.cost.during_move).to_string(),
        None => "-".to_string(),
    }
}

/// The verdict line of the terminal output.
pub fn verdict_line(a: &Assumptions, ranked: &[Candidate]) -> String {
    format!("Verdict: {}", verdict(ranked, a.months))
}
