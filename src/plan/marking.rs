//! What a candidate's price does not say, made visible and ranked:
//!
//! - **Cannot take this corpus**: an object is over the destination's object limit, or needs more
//!   parts than its part limits allow (`catalog::parts::part_plan` fails, as it would in `exec`).
//!   The mark names the limit and the largest object; the candidate is ranked last.
//! - **Policy risk**: the price relies on a provider's reasonable-use rule (Wasabi's free egress
//!   up to its stored volume a month, `over_multiple = "policy-risk"`) that this move or these
//!   reads exceed: nothing more is billed, but the provider may limit or suspend the account. The
//!   candidate is ranked after every priced candidate, unless `--accept-policy-risk`.
//! - **Caveats** of the source, the destination and the compute site (the catalog's `caveats`
//!   and `same_region_caveat`), each with its role, printed with the warnings.
//!
//! Text: the destination cell carries `[x]` (cannot take) or `[risk]`, explained in footnotes
//! under the table. JSON: `cannot_take`, `policy_risk`, `caveats`. Report: the same markers and a
//! "Marks" section.

use super::candidate::{Candidate, Counts, Kind, Route};
use super::marks::{Caveat, Marks, Role};
use crate::catalog::{OverMultiple, Place};
use crate::units::{fmt_bytes, fmt_count};

/// A limit in decimal and binary units, as providers publish either: `5.49 TB (4.995 TiB)`.
fn both(b: u64) -> String {
    let units = [
        (1u64 << 40, "TiB"),
        (1 << 30, "GiB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
    ];
    let Some((u, name)) = units.iter().find(|(u, _)| b >= *u) else {
        return fmt_bytes(b);
    };
    let v = rust_decimal::Decimal::from(b) / rust_decimal::Decimal::from(*u);
    format!("{} ({} {name})", fmt_bytes(b), v.round_dp(3).normalize())
}

/// Why `dst` cannot take the corpus, from the request counts (`None`: it can).
pub fn cannot_take(dst: &Place, counts: &Counts) -> Option<String> {
    if counts.unplaceable_objects == 0 {
        return None;
    }
    let l = dst.limits();
    let largest = counts.largest_unplaceable;
    let limit = if largest > l.max_object_bytes {
        format!("its {} object limit", both(l.max_object_bytes))
    } else {
        format!(
            "its part limits ({} parts of at most {}, {} in all)",
            thousands(u64::from(l.max_parts)),
            both(l.max_part_bytes),
            both(u64::from(l.max_parts).saturating_mul(l.max_part_bytes))
        )
    };
    Some(format!(
        "cannot take this corpus: {} object{} (the largest {}) {} over {limit}",
        fmt_count(counts.unplaceable_objects),
        if counts.unplaceable_objects == 1 {
            ""
        } else {
            "s"
        },
        fmt_bytes(largest),
        if counts.unplaceable_objects == 1 {
            "is"
        } else {
            "are"
        },
    ))
}

fn thousands(n: u64) -> String {
    crate::money::group_thousands(&n.to_string())
}

/// The sentence for objects a server-side or from-URL move streams through the workers instead.
pub fn streamed_note(dst: &Place, counts: &Counts, from_url: bool) -> Option<String> {
    if counts.streamed_objects == 0 || counts.streamed_bytes == 0 || !from_url {
        return None;
    }
    let l = dst.limits();
    let block = crate::catalog::parts::from_url_max_block(l);
    Some(format!(
        "{}: {} object{} (the largest {}) cannot be fetched from the source's URL: Put Block From URL takes blocks of at most {} MiB and {} blocks, {} in all; exec streams {} through the workers (GET at the source, Put Block at {}), and so {} priced and timed",
        dst.provider_id(),
        fmt_count(counts.streamed_objects),
        if counts.streamed_objects == 1 {
            ""
        } else {
            "s"
        },
        fmt_bytes(counts.largest_streamed),
        block >> 20,
        thousands(u64::from(l.max_parts)),
        both(u64::from(l.max_parts).saturating_mul(block)),
        if counts.streamed_objects == 1 {
            "it"
        } else {
            "them"
        },
        dst.provider_id(),
        if counts.streamed_objects == 1 {
            "it is"
        } else {
            "they are"
        },
    ))
}

/// Mark a candidate: `store` is where it keeps the corpus (the destination, or the source for
/// "stay"); `over_move` whether the move's egress went over the source's free multiple.
pub fn mark(
    c: &mut Candidate,
    src: &Place,
    store: &Place,
    over_move: bool,
    a: &super::candidate::Assumptions,
) {
    let mut m = Marks {
        policy_risk_accepted: a.extras.accept_policy_risk,
        ..Marks::default()
    };
    let risky = |p: &Place| p.egress().over_multiple == Some(OverMultiple::PolicyRisk);
    let mut risks = Vec::new();
    if c.kind == Kind::Move && over_move && risky(src) {
        risks.push(format!(
            "moving the corpus out of {} is above its free egress multiple of the stored data",
            src.provider_id()
        ));
    }
    if let Some(p) = &c.reads
        && p.over_free_multiple
        && risky(store)
    {
        let mult = store
            .egress()
            .free_multiple_of_stored
            .map(|d| d.0.normalize().to_string())
            .unwrap_or_default();
        risks.push(format!(
            "reads of {}x the stored corpus a month from {} are above its free {mult}x",
            p.per_month.normalize(),
            store.provider_id()
        ));
    }
    if !risks.is_empty() {
        m.policy_risk = Some(format!(
            "policy risk: {}; nothing more is billed, but the provider may limit or suspend the account: the price holds only as long as it tolerates that",
            risks.join("; ")
        ));
    }
    if c.kind == Kind::Move {
        m.cannot_take = cannot_take(store, &c.counts);
    }
    m.caveats = caveats(c, src, store, a);
    for cv in &m.caveats {
        let line = cv.line();
        if !c.warnings.contains(&line) {
            c.warnings.push(line);
        }
    }
    c.marks = m;
}

/// The caveats of the source (when its egress or its reads are priced), of the destination
/// (its egress caveats: leaving later and reads), and of the compute site.
fn caveats(
    c: &Candidate,
    src: &Place,
    store: &Place,
    a: &super::candidate::Assumptions,
) -> Vec<Caveat> {
    let mut out = Vec::new();
    let mut add = |role: Role, p: &Place, texts: &[String]| {
        for t in texts {
            let cv = Caveat {
                role,
                provider: p.provider_id().to_string(),
                text: t.clone(),
            };
            if !out.contains(&cv) {
                out.push(cv);
            }
        }
    };
    let route = c.reads.as_ref().map(|p| p.route);
    match c.kind {
        Kind::Move => {
            // The move's bytes leave the source over the internet (another provider).
            if src.provider_id() != store.provider_id() && !c.cost.egress_before_waiver.is_zero() {
                add(Role::Source, src, &src.egress().caveats);
            }
            add(Role::Destination, store, &store.egress().caveats);
        }
        Kind::Stay => {
            if route == Some(Route::Internet) {
                add(Role::Source, src, &src.egress().caveats);
            }
        }
    }
    if let Some(r) = &a.reads {
        let at = &r.compute;
        if !at.in_catalog {
            out.push(Caveat {
                role: Role::Compute,
                provider: at.canonical(),
                text: "not in the catalog: reads from every store are priced as internet egress, and its ingress and read bandwidth are not modelled".into(),
            });
        } else if route == Some(Route::SameRegion)
            && let Some(t) = &store.provider.file.transfer.same_region_caveat
        {
            out.push(Caveat {
                role: Role::Compute,
                provider: at.canonical(),
                text: t.clone(),
            });
        }
    }
    out
}

/// The footnotes under the table: each marked candidate's mark, once.
pub fn footnotes(ranked: &[Candidate]) -> Vec<String> {
    let mut out = Vec::new();
    for c in ranked {
        let name = match c.kind {
            Kind::Stay => format!("stay ({})", c.resolved),
            Kind::Move => c.destination.clone(),
        };
        if let Some(w) = &c.marks.cannot_take {
            out.push(format!("[x] {name}: {w} (ranked last)"));
        }
        if let Some(r) = &c.marks.policy_risk {
            out.push(format!(
                "[risk] {name}: {r} ({})",
                if c.marks.policy_risk_accepted {
                    "ranked by price: --accept-policy-risk"
                } else {
                    "ranked after every priced candidate; --accept-policy-risk ranks it by price"
                }
            ));
        }
    }
    out
}

/// The report's "Marks" section: the footnotes of the table, and every caveat by role.
pub fn report_section(ranked: &[Candidate], esc: fn(&str) -> String) -> String {
    let mut h = String::from("<h2 id=\"marks\">Marks and caveats</h2><ul class=\"marks\">");
    let notes = footnotes(ranked);
    let mut seen = std::collections::BTreeSet::new();
    let mut any = false;
    for n in &notes {
        any = true;
        h.push_str(&format!("<li class=\"mark\">{}</li>", esc(n)));
    }
    for c in ranked {
        for cv in &c.marks.caveats {
            if seen.insert(cv.line()) {
                any = true;
                h.push_str(&format!(
                    "<li class=\"caveat\" data-role=\"{}\">{}</li>",
                    esc(cv.role.as_str()),
                    esc(&cv.line())
                ));
            }
        }
    }
    if !any {
        h.push_str("<li>none</li>");
    }
    h.push_str("</ul>");
    h
}
