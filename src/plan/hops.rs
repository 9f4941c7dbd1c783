//! Multi-hop plans (issue 29): a corpus moved to one place and copied on from there (`plan --to
//! coreweave --then backblaze-b2`: a CoreWeave primary the GPUs read, and a B2 cold copy fed from
//! CoreWeave's free egress). Each leg is an ordinary move priced by [`super::model::evaluate`] from
//! the previous leg's destination, so its egress is that place's (CoreWeave's, not AWS's), its
//! requests are billed at both of its ends, and the storage of every place the data rests is priced
//! over the horizon (each leg's destination; the source is as in a one-leg plan).
//!
//! What differs after the first leg ([`later_leg`]): the GPUs wait for the first leg only (they
//! train from its destination while the next copies run, so a later leg idles no GPU), the exit
//! waiver is the first source's (a later leg leaves no provider), the reads of `--compute-at` are
//! the first destination's (the copy further on is not read), and the corpus's inventory classes
//! were the first source's (a later leg reads what the previous one wrote, in its place's class).
//!
//! Timing: **sequential**. A later leg starts when the previous one has finished (exec runs each
//! leg from a plan file of its own, listing the previous destination as its source, so it copies
//! only what is verified there); the chain takes the sum of the legs' times. Overlapping legs (a
//! second copy starting from objects as they land) would finish sooner, by up to the shorter legs'
//! time, but exec does not run legs that way.

use super::candidate::{Assumptions, Candidate, Cost};
use super::corpus::Corpus;
use super::render::{compact, finish, trimmed};
use crate::money::Usd;
use crate::units::fmt_duration;
use rust_decimal::Decimal;
use serde_json::{Value, json};

/// One leg: a move from `from` (the previous leg's destination, or the source) to its candidate's
/// destination.
#[derive(Debug, Clone)]
pub struct Leg {
    /// `provider:region/class` the leg reads from.
    pub from: String,
    pub candidate: Candidate,
}

/// The legs in order.
#[derive(Debug, Clone)]
pub struct Chain {
    pub legs: Vec<Leg>,
    pub months: u32,
}

/// The assumptions of a leg after the first (see the module comment).
pub fn later_leg(first: &Assumptions) -> Assumptions {
    Assumptions {
        gpu_hourly: Usd::ZERO,
        exit_waiver: false,
        reads: None,
        restore: None,
        measured: None,
        same_service: None,
        // The source of a later leg is the copy the first leg made: it stays.
        extras: super::extras::ExtraFlags {
            delete_source: false,
            source_already_stored: true,
            ..first.extras.clone()
        },
        ..first.clone()
    }
}

/// The corpus as a later leg reads it: the same objects, in its source place's own class.
pub fn later_corpus(c: &Corpus) -> Corpus {
    let mut c = c.clone();
    for b in &mut c.buckets {
        b.class = None;
    }
    c
}

/// Two costs added, item by item.
pub fn add(a: &Cost, b: &Cost) -> Cost {
    Cost {
        egress: a.egress + b.egress,
        egress_before_waiver: a.egress_before_waiver + b.egress_before_waiver,
        source_requests: a.source_requests + b.source_requests,
        destination_requests: a.destination_requests + b.destination_requests,
        retrieval: a.retrieval + b.retrieval,
        storage_per_month: a.storage_per_month + b.storage_per_month,
        storage_horizon: a.storage_horizon + b.storage_horizon,
        early_deletion: a.early_deletion + b.early_deletion,
        exit_egress: a.exit_egress + b.exit_egress,
        gpu_idle: a.gpu_idle + b.gpu_idle,
        read_egress: a.read_egress + b.read_egress,
        read_requests: a.read_requests + b.read_requests,
        read_retrieval: a.read_retrieval + b.read_retrieval,
        reads_per_month: a.reads_per_month + b.reads_per_month,
        extras: a.extras.add(&b.extras),
        during_move: a.during_move + b.during_move,
        read_stall: a.read_stall + b.read_stall,
        read_stall_per_month: a.read_stall_per_month + b.read_stall_per_month,
    }
}

impl Chain {
    /// Every leg's items added up.
    pub fn cost(&self) -> Cost {
        (self.legs.iter()).fold(Cost::default(), |t, l| add(&t, &l.candidate.cost))
    }

    /// The legs one after another.
    pub fn seconds(&self) -> Decimal {
        self.legs.iter().map(|l| l.candidate.time.seconds).sum()
    }

    /// When the GPUs can start: the end of the first leg.
    pub fn ready_seconds(&self) -> Decimal {
        self.legs
            .first()
            .map_or(Decimal::ZERO, |l| l.candidate.time.seconds)
    }

    /// `aws:us-east-1 → coreweave → backblaze-b2` (the places as given).
    pub fn route(&self) -> String {
        let mut r = self
            .legs
            .first()
            .map(|l| l.from.clone())
            .unwrap_or_default();
        for l in &self.legs {
            r.push_str(" → ");
            r.push_str(&l.candidate.destination);
        }
        r
    }
}

/// The chain as one table: a row per leg and the total, then each leg's warnings.
pub fn text(chain: &Chain) -> String {
    let mut t = compact();
    let horizon = format!("{}-mo\nstorage", chain.months);
    let reads = chain.legs.iter().any(|l| l.candidate.reads.is_some());
    let mut header = vec![
        "leg",
        "from → to",
        "egress",
        "requests",
        "retrieval",
        horizon.as_str(),
    ];
    if reads {
        header.push("reads");
    }
    header.extend(["GPU idle", "total", "time"]);
    t.set_header(header);
    let row = |leg: String, route: String, k: &Cost, time: String| {
        let mut r = vec![
            leg,
            route,
            k.egress.to_string(),
            (k.source_requests + k.destination_requests).to_string(),
            k.retrieval.to_string(),
            (k.storage_horizon + k.early_deletion).to_string(),
        ];
        if reads {
            r.push((k.read_egress + k.read_requests + k.read_retrieval).to_string());
        }
        r.extend([k.gpu_idle.to_string(), k.total().to_string(), time]);
        r
    };
    for (i, l) in chain.legs.iter().enumerate() {
        let c = &l.candidate;
        let route = format!("{} →\n  {}", l.from, c.resolved);
        t.add_row(row(
            (i + 1).to_string(),
            route,
            &c.cost,
            fmt_duration(c.time.seconds),
        ));
    }
    t.add_row(row(
        "all".to_string(),
        format!("{} legs, one after another", chain.legs.len()),
        &chain.cost(),
        fmt_duration(chain.seconds()),
    ));
    finish(&mut t, 2);
    let mut out = format!("Multi-hop {}\n", chain.route());
    out.push_str(&trimmed(&t));
    out.push('\n');
    out.push_str(&format!(
        "  storage: each leg's destination over {} (not in the total: {} a month, {} to leave the last place later); the GPUs wait for leg 1 only ({}); each later leg starts when the one before it has finished\n",
        crate::words::count(chain.months.into(), "month"),
        chain.cost().storage_per_month,
        chain.legs.last().map_or(Usd::ZERO, |l| l.candidate.cost.exit_egress),
        fmt_duration(chain.ready_seconds()),
    ));
    for (i, l) in chain.legs.iter().enumerate().skip(1) {
        for w in &l.candidate.warnings {
            out.push_str(&format!("! leg {}: {w}\n", i + 1));
        }
    }
    out
}

fn dec(d: Decimal) -> Value {
    let s = d.round_dp(3).normalize().to_string();
    Value::Number(s.parse().expect("decimal digits are a JSON number"))
}

fn cost_json(k: &Cost) -> Value {
    let mut m = serde_json::Map::new();
    for (name, v) in k.items() {
        m.insert(name.to_string(), v.to_json());
    }
    Value::Object(m)
}

/// The chain in the plan's JSON (`hops`).
pub fn json(chain: &Chain) -> Value {
    let legs: Vec<Value> = (chain.legs.iter().enumerate())
        .map(|(i, l)| {
            let c = &l.candidate;
            json!({
                "leg": i + 1,
                "from": l.from,
                "to": c.resolved,
                "destination": c.destination,
                "server_side": c.server_side,
                "cost": cost_json(&c.cost),
                "time": {"seconds": dec(c.time.seconds), "bound": c.time.bound.as_str()},
                "requests": {
                    "source_list": c.counts.source_list,
                    "source_get": c.counts.source_get,
                    "source_head": c.counts.source_head,
                    "destination_list": c.counts.destination_list,
                    "destination_put": c.counts.destination_put,
                    "destination_head": c.counts.destination_head,
                },
                "warnings": c.warnings,
            })
        })
        .collect();
    json!({
        "route": chain.route(),
        "timing": "sequential",
        "legs": legs,
        "total": {
            "cost": cost_json(&chain.cost()),
            "seconds": dec(chain.seconds()),
            "gpu_ready_seconds": dec(chain.ready_seconds()),
        },
    })
}

/// The chain as a section of the HTML report.
pub fn html(chain: &Chain) -> String {
    use super::report::esc;
    let mut h = String::from(
        "<h2>Multi-hop: every leg</h2><p class=\"muted\">Each leg is priced from the previous leg's destination (its egress, its requests at both ends, storage where the data rests); legs run one after another; the GPUs wait for leg 1 only.</p><table id=\"hops\"><thead><tr><th>leg</th><th>from</th><th>to</th><th class=\"n\">egress</th><th class=\"n\">requests</th><th class=\"n\">retrieval</th><th class=\"n\">storage</th><th class=\"n\">GPU idle</th><th class=\"n\">total</th><th class=\"n\">time</th></tr></thead><tbody>",
    );
    let row = |h: &mut String, leg: &str, from: &str, to: &str, k: &Cost, s: Decimal| {
        h.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            esc(leg),
            esc(from),
            esc(to),
            k.egress,
            k.source_requests + k.destination_requests,
            k.retrieval,
            k.storage_horizon + k.early_deletion,
            k.gpu_idle,
            k.total(),
            esc(&fmt_duration(s)),
        ));
    };
    for (i, l) in chain.legs.iter().enumerate() {
        let c = &l.candidate;
        row(
            &mut h,
            &(i + 1).to_string(),
            &l.from,
            &c.resolved,
            &c.cost,
            c.time.seconds,
        );
    }
    row(&mut h, "all", "", "", &chain.cost(), chain.seconds());
    h.push_str("</tbody></table>");
    h
}

/// The report with the chain's section before the price sources (or at the end).
pub fn into_report(page: &str, chain: &Chain) -> String {
    let at = page
        .find("<h2>Price sources")
        .or_else(|| page.rfind("</body>"))
        .unwrap_or(page.len());
    format!("{}{}{}", &page[..at], html(chain), &page[at..])
}
