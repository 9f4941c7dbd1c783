//! What one copy or sync run cost, from its counted requests and bytes and the catalog's prices.
//!
//! Costs are list prices *before* monthly free allowances: a cron job runs many times a month
//! and cannot know what earlier runs (or other tools) already used of an allowance, so pricing
//! each run as if it were the month's first would understate it. DELETE requests are free at
//! every provider in the catalog and are counted but not priced.

use super::Report;
use super::sync::{DeleteReport, MinDuration};
use crate::catalog::{Place, Provider};
use crate::money::Usd;
use crate::plan::model::price_ledger;

/// A provider with every monthly free allowance removed (see the module docs).
fn at_list_price(p: &Provider) -> Provider {
    let mut p = p.clone();
    let f = &mut p.file;
    f.egress.free_gb_per_month = Default::default();
    for r in &mut f.regions {
        if let Some(e) = &mut r.egress {
            e.free_gb_per_month = Default::default();
        }
    }
    for c in &mut f.classes {
        c.free_gb_month = Default::default();
        for rp in [&mut c.put, &mut c.get, &mut c.list] {
            rp.free_per_month = 0;
        }
    }
    p
}

/// Provider, region and class one side of a run is priced as.
#[derive(Debug, Clone)]
pub struct SidePricing {
    provider: Provider,
    region: String,
    class: String,
}

impl SidePricing {
    /// `region` and `class` fall back to the provider's defaults when absent or unknown.
    pub fn new(p: &Provider, region: Option<&str>, class: Option<&str>) -> SidePricing {
        let region = region
            .filter(|r| p.file.regions.iter().any(|x| x.id == *r))
            .unwrap_or(&p.file.default_region)
            .to_string();
        SidePricing {
            provider: at_list_price(p),
            region,
            class: class.unwrap_or(&p.file.default_class).to_string(),
        }
    }

    fn place(&self) -> Option<Place<'_>> {
        let f = &self.provider.file;
        Some(Place {
            given: format!("{}:{}/{}", f.id, self.region, self.class),
            provider: &self.provider,
            region: f.regions.iter().find(|r| r.id == self.region)?,
            class: f.classes.iter().find(|c| c.id == self.class)?,
        })
    }

    /// The minimum storage duration of this side's class, for the delete guard (none when the
    /// class bills no minimum).
    pub fn min_duration(&self) -> Option<MinDuration> {
        let place = self.place()?;
        (place.class.min_duration_days > 0).then(|| MinDuration {
            class: format!("{}/{}", place.provider_id(), place.class.id),
            days: place.class.min_duration_days,
            per_gb_month: place
                .storage_tiers()
                .first()
                .map(|t| t.1)
                .unwrap_or_default(),
            bytes_per_gb: place.bytes_per_gb(),
            min_object_bytes: place.class.min_object_bytes,
        })
    }
}

/// What one run cost at list prices.
#[derive(Debug, Clone, Default)]
pub struct RunCost {
    pub egress: Usd,
    pub source_requests: Usd,
    pub destination_requests: Usd,
    pub early_deletion: Usd,
    /// `provider:region/class`, or none when the side has no catalog provider (priced at $0).
    pub source_priced_as: Option<String>,
    pub destination_priced_as: Option<String>,
}

impl RunCost {
    pub fn total(&self) -> Usd {
        self.egress + self.source_requests + self.destination_requests + self.early_deletion
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "total": self.total().to_json(),
            "egress": self.egress.to_json(),
            "source_requests": self.source_requests.to_json(),
            "destination_requests": self.destination_requests.to_json(),
            "early_deletion": self.early_deletion.to_json(),
            "priced_as": {"source": self.source_priced_as, "destination": self.destination_priced_as},
            "basis": "catalog list prices before monthly free allowances; DELETE requests free",
        })
    }
}

/// Prices a finished run's requests and bytes (and a sync's early-deletion fees). A dry run is
/// priced as the run it stands for: its listings, plus the GETs, PUTs and bytes its would-copy
/// objects would take (read through this machine; a server-side copy would cost less egress).
pub fn price_run(
    src: Option<&SidePricing>,
    dst: Option<&SidePricing>,
    r: &Report,
    d: &DeleteReport,
) -> RunCost {
    let projected;
    let r = if r.dry_run {
        projected = Report {
            requests_get: r.requests_get + r.would_get,
            requests_put: r.requests_put + r.would_put,
            read_bytes: r.read_bytes + r.copied_bytes,
            ..r.clone()
        };
        &projected
    } else {
        r
    };
    let mut c = RunCost {
        early_deletion: d.early_fees,
        ..Default::default()
    };
    let (sp, dp) = (
        src.and_then(SidePricing::place),
        dst.and_then(SidePricing::place),
    );
    c.source_priced_as = sp.as_ref().map(|p| p.canonical());
    c.destination_priced_as = dp.as_ref().map(|p| p.canonical());
    let ledger = r.ledger();
    let stored = r.copied_bytes + r.skipped_bytes + r.failed_bytes;
    match (&sp, &dp) {
        (Some(s), Some(d)) => {
            let (e, sr, dr) = price_ledger(s, d, &ledger, stored);
            c.egress = e;
            c.source_requests = sr;
            c.destination_requests = dr;
        }
        // One side unknown: price what can be priced, the unknown side's own requests at $0.
        (Some(s), None) => {
            let (_, sr, _) = price_ledger(s, s, &ledger, stored);
            c.source_requests = sr;
        }
        (None, Some(d)) => {
            let (_, _, dr) = price_ledger(d, d, &ledger, stored);
            c.destination_requests = dr;
        }
        (None, None) => {}
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    #[test]
    fn a_run_is_priced_at_list_prices_without_free_allowances() {
        let catalog = Catalog::embedded().unwrap();
        let aws = SidePricing::new(catalog.get("aws").unwrap(), None, None);
        let r2 = SidePricing::new(catalog.get("cloudflare-r2").unwrap(), None, None);
        const GIB: u64 = 1 << 30; // AWS's bytes_per_gb
        let report = Report {
            requests_get: 1_000,
            requests_put: 1_000,
            read_bytes: 10 * GIB,
            copied_bytes: 10 * GIB,
            ..Default::default()
        };
        let cost = price_run(Some(&aws), Some(&r2), &report, &DeleteReport::default());
        let usd = |s| Usd::parse(s).unwrap();
        // AWS internet egress with the 100 GB monthly allowance removed: 10 GB x $0.09.
        assert_eq!(cost.egress, usd("0.90"));
        // 1,000 GETs at $0.0004 per 1,000.
        assert_eq!(cost.source_requests, usd("0.0004"));
        // 1,000 R2 class A writes at $4.50 per million, its free million removed.
        assert_eq!(cost.destination_requests, usd("0.0045"));
        assert_eq!(cost.total(), usd("0.9049"));
        assert_eq!(
            cost.source_priced_as.as_deref(),
            Some("aws:us-east-1/standard")
        );
        // Blocks the destination service read from the source's URL (Azure Put Block From URL)
        // are the source's GETs and egress though no byte passed through this machine: 16
        // blocks of 64 MiB (1 GiB) from AWS into Azure = 1 GB x $0.09 egress and 16 GETs x
        // $0.0004 / 1,000 = $0.0000064.
        let azure = SidePricing::new(catalog.get("azure").unwrap(), None, None);
        let fetched = Report {
            fetched_by_destination: 16,
            fetched_by_destination_bytes: GIB,
            copied_bytes: GIB,
            ..Default::default()
        };
        let c = price_run(Some(&aws), Some(&azure), &fetched, &DeleteReport::default());
        assert_eq!(c.egress, usd("0.09"));
        assert_eq!(c.source_requests, usd("0.0000064"));
        // An unknown side is priced at $0 and named as such.
        let half = price_run(Some(&aws), None, &report, &DeleteReport::default());
        assert_eq!(half.destination_priced_as, None);
        assert_eq!(half.egress, Usd::ZERO);
        assert_eq!(half.source_requests, cost.source_requests);
    }
}
