//! Restore tiers for archive-class sources (`plan --restore-tier bulk|standard|expedited|auto`).
//!
//! An archive class lists the speeds it offers (`restore_tiers` in the provider file), each with its
//! per-GB and per-request fee and the hours until the objects can be read. A named tier prices every
//! archive object of the corpus at that tier (an error if a class does not offer it). `auto` prices
//! each tier offered by every archive class in the corpus as its fees plus the GPUs idling for its
//! restore time (`--gpu-hourly`), and picks the cheapest (ties: the faster). When a tier's time is
//! not known, the class's `restore_hours` (or 12 h) is assumed and the plan says so.

use super::corpus::Corpus;
use super::price::gb;
use crate::catalog::{Place, RESTORE_TIERS, RestoreTier, StorageClass};
use crate::money::Usd;
use rust_decimal::Decimal;

/// What `--restore-tier` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TierChoice {
    Named(&'static str),
    Auto,
}

impl TierChoice {
    pub fn parse(s: &str) -> Result<TierChoice, String> {
        let s = s.trim().to_ascii_lowercase();
        if s == "auto" {
            return Ok(TierChoice::Auto);
        }
        RESTORE_TIERS
            .iter()
            .find(|t| **t == s)
            .map(|t| TierChoice::Named(t))
            .ok_or_else(|| format!("--restore-tier {s:?}: use bulk, standard, expedited or auto"))
    }
}

/// One tier priced for the corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TierOption {
    pub tier: String,
    pub fees: Usd,
    pub hours: u32,
    /// The hours are an assumption (no source gives this tier's time).
    pub hours_assumed: bool,
    pub gpu_idle: Usd,
}

impl TierOption {
    pub fn total(&self) -> Usd {
        self.fees + self.gpu_idle
    }
}

/// The tier a plan uses, the ones it was weighed against, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restore {
    pub chosen: TierOption,
    pub auto: bool,
    pub options: Vec<TierOption>,
    pub why: String,
}

fn tier_of<'c>(class: &'c StorageClass, id: &str) -> Option<&'c RestoreTier> {
    class.restore_tiers.iter().find(|t| t.id == id)
}

/// Price `tier` for every archive bucket of the corpus; `None` if some archive class lacks it.
fn price_tier(
    archive: &[(&StorageClass, u64, u64)],
    tier: &str,
    bytes_per_gb: u64,
    gpu_hourly: Usd,
) -> Option<TierOption> {
    let mut fees = Usd::ZERO;
    let mut hours = 0u32;
    let mut assumed = false;
    for (class, bytes, count) in archive {
        let t = tier_of(class, tier)?;
        fees += Usd(gb(*bytes, bytes_per_gb) * t.retrieval_per_gb.0);
        if let Some(rp) = &t.retrieval_request {
            fees += Usd(Decimal::from(*count) * rp.price.0 / Decimal::from(rp.per));
        }
        let h = match t.hours {
            Some(h) => h,
            None => {
                assumed = true;
                class.restore_hours.unwrap_or(12)
            }
        };
        hours = hours.max(h);
    }
    Some(TierOption {
        tier: tier.to_string(),
        fees,
        hours,
        hours_assumed: assumed,
        gpu_idle: Usd(gpu_hourly.0 * Decimal::from(hours)),
    })
}

/// Choose the restore tier for the archive objects of `corpus` at `src`. `classes` gives each
/// bucket's class (already resolved from an inventory's names). `Ok(None)`: nothing to restore.
pub fn choose(
    src: &Place,
    corpus: &Corpus,
    classes: &[&StorageClass],
    choice: TierChoice,
    gpu_hourly: Usd,
) -> Result<Option<Restore>, String> {
    let mut archive: Vec<(&StorageClass, u64, u64)> = Vec::new();
    for (b, class) in corpus.buckets.iter().zip(classes) {
        if !class.archive || b.count == 0 {
            continue;
        }
        match archive.iter_mut().find(|(c, _, _)| c.id == class.id) {
            Some(e) => {
                e.1 += b.bytes;
                e.2 += b.count;
            }
            None => archive.push((class, b.bytes, b.count)),
        }
    }
    if archive.is_empty() {
        return Ok(None);
    }
    if let Some((c, _, _)) = archive.iter().find(|(c, _, _)| c.restore_tiers.is_empty()) {
        return Err(format!(
            "--restore-tier: {} class {} lists no restore tiers in the catalog; leave the flag out to price its default restore",
            src.provider_id(),
            c.id
        ));
    }
    let options: Vec<TierOption> = RESTORE_TIERS
        .iter()
        .filter_map(|t| price_tier(&archive, t, src.bytes_per_gb(), gpu_hourly))
        .collect();
    let offered = || {
        options
            .iter()
            .map(|o| o.tier.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let line = |o: &TierOption| {
        format!(
            "{} {} + {} h{} of GPU idle {} = {}",
            o.tier,
            o.fees,
            o.hours,
            if o.hours_assumed { " (assumed)" } else { "" },
            o.gpu_idle,
            o.total()
        )
    };
    match choice {
        TierChoice::Named(t) => {
            let chosen = options.iter().find(|o| o.tier == t).cloned().ok_or_else(|| {
                format!(
                    "--restore-tier {t}: not offered by {} for this corpus's archive classes; offered: {}",
                    src.provider_id(),
                    offered()
                )
            })?;
            let why = format!("restore tier {t} (as asked): {}", line(&chosen));
            Ok(Some(Restore {
                chosen,
                auto: false,
                options,
                why,
            }))
        }
        TierChoice::Auto => {
            let chosen = options
                .iter()
                .min_by(|a, b| {
                    a.total()
                        .cmp(&b.total())
                        .then(a.hours.cmp(&b.hours))
                        .then(a.fees.cmp(&b.fees))
                })
                .cloned()
                .ok_or_else(|| {
                    format!(
                        "--restore-tier auto: no tier is offered by every archive class of {}",
                        src.provider_id()
                    )
                })?;
            let others: Vec<String> = options
                .iter()
                .filter(|o| o.tier != chosen.tier)
                .map(line)
                .collect();
            let mut why = format!(
                "restore tier {} (auto: the lowest retrieval fees + GPU idle during the restore): {}",
                chosen.tier,
                line(&chosen)
            );
            if !others.is_empty() {
                why.push_str(&format!("; against {}", others.join("; ")));
            }
            if gpu_hourly.is_zero() {
                why.push_str(
                    "; no --gpu-hourly given, so waiting costs nothing and the lowest fees win",
                );
            }
            Ok(Some(Restore {
                chosen,
                auto: true,
                options,
                why,
            }))
        }
    }
}

/// The tier a class's own retrieval prices are (the restore priced without `--restore-tier`):
/// "the standard tier" where a listed tier has the class's per-GB fee, else "the class's
/// default restore".
pub fn default_tier(src: &Place) -> String {
    let c = src.class;
    c.restore_tiers
        .iter()
        .find(|t| t.retrieval_per_gb.0 == c.retrieval_per_gb.0)
        .map_or("the class's default restore".to_string(), |t| {
            format!("the {} tier", t.id)
        })
}
