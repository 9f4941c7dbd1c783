//! Move or stay: the corpus priced over the whole horizon, read by GPUs somewhere.
//!
//! With `--compute-at PROVIDER[:REGION]` and a read rate (`--reads-per-month R`, or `--epochs E
//! --over-months M` = E / M reads a month), every candidate pays each month, besides storage, for
//! `R` full reads of the corpus from its store to the compute location:
//!
//! - **egress** by the store's rules towards that place: the provider's `same_region_per_gb` when the
//!   compute is in the same provider and region (S3 to same-region EC2: free), its
//!   `inter_region_per_gb` for another region of the same provider, otherwise its internet egress
//!   for that month's bytes (free allowance, volume tiers, zero-egress multiples of the stored
//!   corpus: B2 free up to 3x then billed, Wasabi free up to 1x then a policy risk, flagged);
//! - **GET requests**: one per object per read, at the class's read price (monthly free allowance
//!   applied);
//! - **retrieval**: the class's per-GB (and per-request) retrieval fee on every byte read.
//!
//! "Stay" is the source itself: no move, no GPU idle, its storage and its reads every month.
//! The cumulative cost month by month is `one_time + m x monthly` (early deletion at the last month);
//! a candidate's break-even month is the first month from which it costs no more than staying.

use super::candidate::{Assumptions, Bound, Candidate, Cost, Counts, Kind, Time, rank};
pub use super::candidate::{ComputeAt, ReadPlan, Reads, Route};
use super::corpus::Corpus;
use super::price::{gb, internet_egress, storage_month};
use crate::catalog::{OverMultiple, Place, RequestPrice};
use crate::money::Usd;
use crate::units::{fmt_bytes_si, fmt_duration};
use rust_decimal::Decimal;
use rust_decimal::prelude::*;

/// Requests priced with their unit, a fractional count a month, less the monthly free allowance.
pub fn request_cost_month(p: &RequestPrice, count: Decimal) -> Usd {
    let billed = (count - Decimal::from(p.free_per_month)).max(Decimal::ZERO);
    Usd(billed * p.price.0 / Decimal::from(p.per))
}

/// A month of `r.per_month` full reads of `corpus` from `store` by the compute location.
pub fn read_month(
    store: &Place,
    corpus: &Corpus,
    r: &Reads,
    warnings: &mut Vec<String>,
) -> ReadPlan {
    let stored_gb = gb(corpus.total_bytes(), store.bytes_per_gb());
    let gb_month = stored_gb * r.per_month;
    let same_provider = r.compute.in_catalog && r.compute.provider == store.provider_id();
    let route = match &r.compute.region {
        Some(reg) if same_provider && *reg == store.region.id => Route::SameRegion,
        _ if same_provider => Route::InterRegion,
        _ => Route::Internet,
    };
    let mut over = false;
    let egress = match route {
        Route::SameRegion => {
            // Its caveat is the compute site's (see `super::marking`).
            let t = &store.provider.file.transfer;
            Usd(gb_month * t.same_region_per_gb.0)
        }
        Route::InterRegion => Usd(gb_month
            * r.compute
                .region
                .as_deref()
                .map_or(store.inter_region_per_gb(), |to| store.inter_region_to(to))),
        Route::Internet => {
            let e = store.egress();
            let (cost, o) = internet_egress(e, gb_month, stored_gb, 1);
            over = o;
            if o {
                let mult = e.free_multiple_of_stored.map(|m| m.0).unwrap_or_default();
                let read = format!(
                    "reads of {} a month to {} are {}x the stored corpus, above its free {}x",
                    fmt_bytes_si(
                        (Decimal::from(corpus.total_bytes()) * r.per_month)
                            .to_u64()
                            .unwrap_or(u64::MAX)
                    ),
                    r.compute.canonical(),
                    r.per_month.normalize(),
                    mult.normalize()
                );
                match e.over_multiple {
                    Some(OverMultiple::PolicyRisk) => warnings.push(format!(
                        "{}: {read}: nothing more is billed, but the provider may limit or suspend the account (flagged, not priced)",
                        store.provider_id()
                    )),
                    _ => warnings.push(format!(
                        "{}: {read}: the excess is billed at its egress price",
                        store.provider_id()
                    )),
                }
            }
            cost
        }
    };
    let class = store.class;
    let gets = Decimal::from(corpus.total_objects()) * r.per_month;
    let requests = request_cost_month(&class.get, gets);
    let mut retrieval = Usd(gb_month * class.retrieval_per_gb.0);
    if let Some(rp) = &class.retrieval_request {
        retrieval += request_cost_month(rp, gets);
    }
    if class.archive && !r.per_month.is_zero() {
        warnings.push(format!(
            "{}: class {} is an archive tier: every read needs a restore first (hours), priced at its retrieval fees",
            store.provider_id(),
            class.id
        ));
    }
    ReadPlan {
        route,
        per_month: r.per_month,
        gb_per_month: gb_month,
        gets_per_month: gets,
        egress,
        requests,
        retrieval,
        over_free_multiple: over,
    }
}

/// Fill a candidate's read items over `months` from one month of reads.
pub fn apply_reads(cost: &mut Cost, plan: &ReadPlan, months: u32) {
    let m = Decimal::from(months);
    cost.read_egress = plan.egress * m;
    cost.read_requests = plan.requests * m;
    cost.read_retrieval = plan.retrieval * m;
    cost.reads_per_month = plan.month();
}

/// Staying: the source keeps the corpus for the horizon and is read from where it is.
pub fn stay(src: &Place, corpus: &Corpus, a: &Assumptions) -> Candidate {
    let mut warnings = Vec::new();
    let storage_per_month = storage_month(src, corpus, &mut warnings);
    let mut cost = Cost {
        storage_per_month,
        storage_horizon: storage_per_month * Decimal::from(a.months),
        ..Cost::default()
    };
    let reads = a.reads.as_ref().map(|r| {
        let p = read_month(src, corpus, r, &mut warnings);
        apply_reads(&mut cost, &p, a.months);
        p
    });
    let feed = super::feed::apply(src, corpus, a, &mut cost, &mut warnings);
    let mut c = Candidate {
        kind: Kind::Stay,
        destination: "stay".to_string(),
        resolved: src.canonical(),
        provider: src.provider_id().to_string(),
        cost,
        time: Time {
            seconds: Decimal::ZERO,
            bound: Bound::Bandwidth,
            bandwidth_seconds: Decimal::ZERO,
            request_seconds: Decimal::ZERO,
            rate_limit_seconds: Decimal::ZERO,
            listing_seconds: Decimal::ZERO,
            restore_seconds: Decimal::ZERO,
            effective_bandwidth: Decimal::ZERO,
            ..Time::default()
        },
        counts: Counts::default(),
        warnings,
        reads,
        break_even_month: None,
        server_side: false,
        from_url: false,
        restore: None,
        marks: Default::default(),
        waiver: None,
        during: None,
        feed,
    };
    super::extra_costs::archive_reads(src, corpus, a, true, &mut c);
    super::marking::mark(&mut c, src, src, false, a);
    c
}

/// Cumulative cost at the end of month 0 (the move) through `months`: `one_time + m x monthly`,
/// early deletion added at the last month. The last value is the candidate's total.
pub fn cumulative(c: &Candidate, months: u32) -> Vec<Usd> {
    let k = &c.cost;
    (0..=months)
        .map(|m| {
            let mut v = k.one_time() + k.monthly() * Decimal::from(m);
            if m == months {
                v += k.early_deletion;
            }
            v
        })
        .collect()
}

/// The first month from which `c` costs no more than `stay` through the end of the horizon.
pub fn break_even(c: &Candidate, stay: &Candidate, months: u32) -> Option<u32> {
    let a = cumulative(c, months);
    let b = cumulative(stay, months);
    let mut first = None;
    for m in (0..=months).rev() {
        if a[m as usize] <= b[m as usize] {
            first = Some(m);
        } else {
            break;
        }
    }
    first
}

/// Rank the moves with "stay", each move carrying its break-even month against staying.
pub fn move_or_stay(moves: Vec<Candidate>, stay: Candidate, months: u32) -> Vec<Candidate> {
    let mut all: Vec<Candidate> = moves
        .into_iter()
        .map(|mut c| {
            c.break_even_month = break_even(&c, &stay, months);
            c
        })
        .collect();
    all.push(stay);
    rank(all)
}

/// One line saying how a candidate's reads are priced, for the text report.
pub fn describe(c: &Candidate) -> Option<String> {
    let p = c.reads.as_ref()?;
    Some(format!(
        "{}: {} {} a month over {}: {} billed GB, egress {}, {} {} {}, retrieval {} a month",
        c.destination,
        p.per_month.normalize(),
        crate::words::noun_dec(p.per_month, "read"),
        p.route.as_str(),
        crate::money::group_thousands(&p.gb_per_month.round_dp(0).to_string()),
        p.egress,
        crate::money::group_thousands(&p.gets_per_month.round_dp(0).to_string()),
        crate::words::noun_dec(p.gets_per_month.round_dp(0), "GET"),
        p.requests,
        p.retrieval
    ))
}

/// The move's duration in words, for "stay" nothing.
pub fn move_time(c: &Candidate) -> String {
    match c.kind {
        Kind::Stay => "-".to_string(),
        Kind::Move => fmt_duration(c.time.seconds),
    }
}
