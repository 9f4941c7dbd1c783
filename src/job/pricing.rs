//! A finished run priced with the catalog: a copy or exec run set against its plan
//! ([`against_plan`]) and a sync run's cost ([`price_run`], from [`crate::transfer::cost`]), both
//! from the run's counted requests and bytes and the plan model's one pricing of a ledger.

use crate::catalog::Catalog;
use crate::plan::file::PlanFile;
use crate::transfer::Report;
use rust_decimal::Decimal;

pub use crate::transfer::cost::{RunCost, SidePricing, price_run};

/// How each side of a pair is priced (None: no catalog provider, priced at $0): the provider,
/// the remote's region and the destination's storage class.
pub type Sides = (Option<SidePricing>, Option<SidePricing>);

/// The [`Sides`] of `src` → `dst`.
pub fn sides(
    catalog: &Catalog,
    remotes: &crate::store::config::Remotes,
    src: &crate::store::Store,
    dst: &crate::store::Store,
) -> Sides {
    use super::trust::{provider_of, region_of};
    let side = |s: &crate::store::Store, class: Option<&str>| {
        provider_of(catalog, s)
            .map(|p| SidePricing::new(p, region_of(remotes, s).as_deref(), class))
    };
    (side(src, None), side(dst, dst.storage_class.as_deref()))
}

/// What a dry run's copy would cost (see [`price_run`]); None for a run that was not a dry run.
pub fn dry_run_cost(sides: &Sides, r: &Report) -> Option<RunCost> {
    r.dry_run
        .then(|| price_run(sides.0.as_ref(), sides.1.as_ref(), r, &Default::default()))
}

/// This run's requests and bytes priced with the catalog, beside what the plan predicted.
pub struct VsPlan {
    pub predicted_seconds: Decimal,
    pub seconds: Decimal,
    pub predicted: [(String, Decimal); 3],
    pub actual: [(String, crate::money::Usd); 3],
    pub corpus_bytes: u64,
    /// Bytes that left the source in this run (through this machine or read by the destination
    /// service).
    pub run_bytes: u64,
    /// Of them, read through this machine.
    pub read_bytes: u64,
    pub catalog_changed: bool,
}

pub fn against_plan(r: &Report, p: &PlanFile, catalog: &Catalog) -> Option<VsPlan> {
    use crate::catalog::Place;
    use crate::plan::model::price_ledger;
    let src = Place::resolve(catalog, &p.source.place).ok()?;
    let dst = Place::resolve(catalog, &p.destination.place).ok()?;
    let ledger = r.ledger();
    let (egress, sreq, dreq) = price_ledger(&src, &dst, &ledger, p.corpus.bytes);
    let pick = |k: &str| {
        p.prediction
            .cost
            .get(k)
            .and_then(|v| v.parse().ok())
            .unwrap_or_default()
    };
    let ids = [src.provider_id(), dst.provider_id()];
    Some(VsPlan {
        predicted_seconds: p.prediction.seconds.parse().unwrap_or_default(),
        seconds: Decimal::from_f64_retain(r.elapsed.as_secs_f64())
            .unwrap_or_default()
            .round_dp(3),
        predicted: [
            ("egress".into(), pick("egress")),
            ("source_requests".into(), pick("source_requests")),
            ("destination_requests".into(), pick("destination_requests")),
        ],
        actual: [
            ("egress".into(), egress),
            ("source_requests".into(), sreq),
            ("destination_requests".into(), dreq),
        ],
        corpus_bytes: p.corpus.bytes,
        run_bytes: ledger.bytes_moved,
        read_bytes: r.read_bytes,
        catalog_changed: catalog.digest_of(ids) != p.catalog.digest,
    })
}

impl VsPlan {
    /// This run's cost lines: egress, source requests, destination requests
    /// ([`super::shard::COST_ITEMS`]'s order).
    pub fn actual(&self) -> [crate::money::Usd; 3] {
        [self.actual[0].1, self.actual[1].1, self.actual[2].1]
    }

    pub fn json(&self) -> serde_json::Value {
        let mut predicted = serde_json::Map::new();
        let mut actual = serde_json::Map::new();
        for ((k, v), (_, a)) in self.predicted.iter().zip(&self.actual) {
            predicted.insert(k.clone(), crate::money::Usd(*v).to_json());
            actual.insert(k.clone(), a.to_json());
        }
        serde_json::json!({
            "predicted_seconds": self.predicted_seconds.to_string().parse::<f64>().unwrap_or(0.0),
            "seconds": self.seconds.to_string().parse::<f64>().unwrap_or(0.0),
            "predicted_cost": predicted,
            "actual_cost": actual,
            "corpus_bytes": self.corpus_bytes,
            "bytes_read": self.read_bytes,
            "bytes_moved": self.run_bytes,
            "catalog_changed": self.catalog_changed,
        })
    }
}
