//! Read bandwidth: can the store feed the GPUs? (issue 29)
//!
//! With `--compute-at`, every candidate is read by the GPUs from one store (the destination; the
//! source for "stay"). What the GPUs **need** is `--read-rate` when given, else the month's reads
//! spread over the training hours: `reads_per_month x corpus bytes / (--train-hours x 3600)`
//! (`--train-hours` at most a 30-day month, 720 h). What the store **gives** them, the first known
//! of:
//!
//! 1. `--store-read-rate [PROVIDER=]RATE` (a rate without a provider applies to every store);
//! 2. a saved `moverctl probe` of that provider: its multi-stream GET rate, measured from the
//!    machine the probe ran on (a stand-in for the compute site);
//! 3. the provider file's `[read_rate]` (a published account or bucket egress limit);
//!
//! otherwise it is **not modelled** and the output says so. A store slower than the need stalls
//! the GPUs: reading a month's passes takes `need / supply` times the training hours, so
//! `stall hours a month = train hours x (need / supply - 1)`, priced at `--gpu-hourly` every month
//! (`read_stall_per_month`, and `read_stall` over the horizon, both in the total).

use super::candidate::{Assumptions, Cost};
use super::corpus::Corpus;
use crate::catalog::Place;
use crate::money::Usd;
use crate::units::fmt_rate_bits;
use rust_decimal::Decimal;

pub use super::options::{Feed, FeedAssumptions, MONTH_HOURS};

impl FeedAssumptions {
    /// What the GPUs need, bytes/s, and where the figure comes from (`None` without reads).
    pub fn need_of(&self, corpus: &Corpus, a: &Assumptions) -> Option<(Decimal, String)> {
        let r = a.reads.as_ref()?;
        if let Some(n) = self.need {
            return Some((n, "--read-rate".to_string()));
        }
        let seconds = self.hours() * Decimal::from(3600);
        let need = Decimal::from(corpus.total_bytes()) * r.per_month / seconds;
        Some((
            need,
            format!(
                "{} {} a month x corpus / {} training hours",
                r.per_month.normalize(),
                crate::words::noun_dec(r.per_month, "read"),
                self.hours().normalize()
            ),
        ))
    }

    /// What `store` gives the GPUs, bytes/s, and where the figure comes from.
    pub fn supply_of(&self, store: &Place) -> Option<(Decimal, String)> {
        let id = store.provider_id();
        let given = (self.given.iter())
            .find(|(p, _)| p.as_deref() == Some(id))
            .or_else(|| self.given.iter().find(|(p, _)| p.is_none()));
        if let Some((p, r)) = given {
            let how = match p {
                Some(p) => format!("--store-read-rate {p}=…"),
                None => "--store-read-rate".to_string(),
            };
            return Some((*r, how));
        }
        if let Some((_, r, loc)) = self.probed.iter().find(|(p, _, _)| p == id) {
            return Some((
                *r,
                format!("probe of {loc} (multi-stream GET, from the machine it ran on)"),
            ));
        }
        store.provider.file.read_rate.as_ref().map(|rr| {
            (
                rr.gbit_per_second.0 * Decimal::from(125_000_000u64),
                format!(
                    "catalog: {} {} egress limit ({}, as of {})",
                    id,
                    rr.scope.as_str(),
                    rr.source,
                    rr.as_of
                ),
            )
        })
    }
}

/// The feed of `store` with the horizon's reads: stall hours and their cost, added to `cost`
/// (`None` without `--compute-at`). A warning says when a store stalls the GPUs.
pub fn apply(
    store: &Place,
    corpus: &Corpus,
    a: &Assumptions,
    cost: &mut Cost,
    warnings: &mut Vec<String>,
) -> Option<Feed> {
    let f = &a.feed;
    let (need, need_from) = f.need_of(corpus, a)?;
    let (supply, supply_from) = match f.supply_of(store) {
        Some((s, from)) => (Some(s), from),
        None => (
            None,
            "not modelled: no published rate, no probe, no --store-read-rate".to_string(),
        ),
    };
    let stall_hours = match supply {
        Some(s) if s < need && s > Decimal::ZERO => f.hours() * (need / s - Decimal::ONE),
        _ => Decimal::ZERO,
    };
    let stall = Usd(Usd(a.gpu_hourly.0 * stall_hours).micros());
    cost.read_stall_per_month = stall;
    cost.read_stall = stall * Decimal::from(a.months);
    if let Some(s) = supply.filter(|s| *s < need) {
        warnings.push(format!(
            "{}: gives the GPUs {} ({}) but they need {} ({}): {} GPU hours a month waiting, {} a month at {}/hour",
            store.provider_id(),
            fmt_rate_bits(s),
            supply_from,
            fmt_rate_bits(need),
            need_from,
            stall_hours.round_dp(1).normalize(),
            stall,
            a.gpu_hourly
        ));
    }
    Some(Feed {
        supply,
        supply_from,
        need,
        need_from,
        stall_hours_per_month: stall_hours,
        stall_per_month: stall,
    })
}

impl FeedAssumptions {
    /// From the flags: `--read-rate` (what the GPUs need), `--train-hours` (hours a month they
    /// train; `None`: the whole month) and `--store-read-rate [PROVIDER=]RATE,…` (what stores
    /// give them). Provider names are checked against the catalog, with a "did you mean".
    pub fn from_flags(
        catalog: &crate::catalog::Catalog,
        need: Option<&str>,
        train_hours: Option<&str>,
        given: Option<&str>,
    ) -> Result<FeedAssumptions, String> {
        let rate = |flag: &str, v: &str| -> Result<Decimal, String> {
            let r = crate::units::parse_rate(v).map_err(|e| format!("{flag}: {e}"))?;
            if r <= Decimal::ZERO {
                return Err(format!("{flag} {v:?}: must be above 0, e.g. 20Gbps"));
            }
            Ok(r)
        };
        let mut f = FeedAssumptions {
            need: need.map(|v| rate("--read-rate", v)).transpose()?,
            ..FeedAssumptions::default()
        };
        if let Some(h) = train_hours {
            let d: Decimal = h.trim().parse().map_err(|_| {
                format!("--train-hours {h:?}: give hours a month such as 720 or 500")
            })?;
            if d <= Decimal::ZERO || d > Decimal::from(744) {
                return Err(format!(
                    "--train-hours {h:?}: above 0 and at most 744 hours a month"
                ));
            }
            f.train_hours = Some(d);
        }
        for part in given.unwrap_or("").split(',').map(str::trim) {
            if part.is_empty() {
                continue;
            }
            let (p, v) = match part.split_once('=') {
                Some((p, v)) => (Some(p.trim()), v.trim()),
                None => (None, part),
            };
            let p = p
                .map(|p| {
                    catalog
                        .get(p)
                        .map(|x| x.file.id.clone())
                        .map_err(|e| format!("--store-read-rate {part:?}: {e}"))
                })
                .transpose()?;
            f.given.push((p, rate("--store-read-rate", v)?));
        }
        Ok(f)
    }
}
