//! Managed fast tiers: the parallel file systems a provider sells next to its object storage
//! (FSx for Lustre, Azure Managed Lustre, Google Cloud Managed Lustre, Parallelstore), as
//! `[[fast_tiers]]` sections of its provider file. `plan --tiering --fast-tier ID` prices one.
//!
//! A tier's throughput is bought with its capacity: `read_mb_per_s_per_tib` MB/s (10^6 bytes/s)
//! for every TiB provisioned. A tier may carry no price (`price` absent) when no source was found
//! for it; `plan --tiering` then asks for `--fast-tier-price`.

use super::load::{Catalog, CatalogError, Invalid, check_date};
use crate::money::Dec;
use serde::Deserialize;
use std::collections::BTreeSet;
use toml::value::Datetime;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FastTier {
    /// Starts with the provider's id and '-' (`aws-fsx-lustre-persistent-ssd-125`), so ids are
    /// unique across the catalog.
    pub id: String,
    pub name: String,
    /// The region the price was read for.
    pub region: String,
    /// USD per `unit` of provisioned capacity. Absent: no sourced price (give one on the command
    /// line).
    #[serde(default)]
    pub price: Option<Dec>,
    /// What one `price` buys for a month: `gb-month` (10^9 bytes), `gib-month` (2^30),
    /// `tb-month` (10^12) or `tib-month` (2^40). Required with `price`.
    #[serde(default)]
    pub unit: Option<CapacityUnit>,
    /// Read throughput per TiB provisioned, in MB/s (10^6 bytes per second).
    pub read_mb_per_s_per_tib: Dec,
    /// Write throughput per TiB provisioned, in MB/s.
    pub write_mb_per_s_per_tib: Dec,
    /// How the price was confirmed: `primary` (the provider's own page), `third-party` (a
    /// transcription; check it), `unverified`.
    pub confidence: Confidence,
    #[serde(default)]
    pub note: Option<String>,
    pub source: String,
    pub as_of: Datetime,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CapacityUnit {
    GbMonth,
    GibMonth,
    TbMonth,
    TibMonth,
}

impl CapacityUnit {
    pub fn bytes(self) -> u64 {
        match self {
            CapacityUnit::GbMonth => 1_000_000_000,
            CapacityUnit::GibMonth => 1 << 30,
            CapacityUnit::TbMonth => 1_000_000_000_000,
            CapacityUnit::TibMonth => 1 << 40,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CapacityUnit::GbMonth => "GB-month",
            CapacityUnit::GibMonth => "GiB-month",
            CapacityUnit::TbMonth => "TB-month",
            CapacityUnit::TibMonth => "TiB-month",
        }
    }

    /// `GB-month`, `gib-month`, `TB`, `TiB-month` (case-insensitive, `-month` optional).
    pub fn parse(s: &str) -> Option<CapacityUnit> {
        let l = s.trim().to_ascii_lowercase();
        let l = l.strip_suffix("-month").unwrap_or(&l);
        match l {
            "gb" => Some(CapacityUnit::GbMonth),
            "gib" => Some(CapacityUnit::GibMonth),
            "tb" => Some(CapacityUnit::TbMonth),
            "tib" => Some(CapacityUnit::TibMonth),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Confidence {
    Primary,
    ThirdParty,
    Unverified,
}

impl Confidence {
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Primary => "primary",
            Confidence::ThirdParty => "third-party",
            Confidence::Unverified => "unverified",
        }
    }
}

/// The fast tiers of provider `provider`: ids unique and prefixed, a unit with every price,
/// prices and throughputs above zero, plain dates.
pub(super) fn check(provider: &str, tiers: &[FastTier]) -> Result<(), Invalid> {
    let mut ids = BTreeSet::new();
    for (i, t) in tiers.iter().enumerate() {
        let at = format!("fast_tiers[{i}]");
        let bad = |field: &str, m: String| Err((format!("{at}.{field}"), m));
        if !t.id.starts_with(&format!("{provider}-")) {
            return bad(
                "id",
                format!(
                    "{:?} must start with the provider id {provider:?} and '-'",
                    t.id
                ),
            );
        }
        if !ids.insert(t.id.as_str()) {
            return bad("id", format!("fast tier {:?} appears twice", t.id));
        }
        match (&t.price, &t.unit) {
            (Some(p), Some(_)) if p.0.is_sign_negative() || p.0.is_zero() => {
                return bad("price", "must be above zero".into());
            }
            (Some(_), None) => {
                return bad(
                    "unit",
                    "a price needs its unit: gb-month, gib-month, tb-month or tib-month".into(),
                );
            }
            _ => {}
        }
        for (field, v) in [
            ("read_mb_per_s_per_tib", &t.read_mb_per_s_per_tib),
            ("write_mb_per_s_per_tib", &t.write_mb_per_s_per_tib),
        ] {
            if v.0.is_sign_negative() || v.0.is_zero() {
                return bad(
                    field,
                    "must be above zero (MB/s per TiB provisioned)".into(),
                );
            }
        }
        check_date(&format!("{at}.as_of"), &t.as_of)?;
    }
    Ok(())
}

impl Catalog {
    /// Every fast tier of every provider, by id.
    pub fn fast_tiers(&self) -> Vec<&FastTier> {
        self.providers()
            .flat_map(|p| p.file.fast_tiers.iter())
            .collect()
    }

    /// The fast tier `id`; an unknown id lists the known ones.
    pub fn fast_tier(&self, id: &str) -> Result<&FastTier, CatalogError> {
        let all = self.fast_tiers();
        all.iter()
            .find(|t| t.id == id.trim())
            .copied()
            .ok_or_else(|| CatalogError::UnknownFastTier {
                name: id.to_string(),
                known: all
                    .iter()
                    .map(|t| t.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}
