//! Prices from the catalog: billed GB, volume tiers, internet egress with its free allowance
//! and zero-egress multiples, request fees, the egress of a move, destination storage a month,
//! and the catalog class of each object at the source. Exact decimals, no I/O.

use super::corpus::Corpus;
use crate::catalog::{Egress, OverMultiple, Place, RequestPrice, StorageClass};
use crate::money::Usd;
use crate::units::fmt_bytes_si;
use rust_decimal::Decimal;
use rust_decimal::prelude::*;

pub const SECONDS_PER_MONTH: u64 = 30 * 86_400;

/// Bytes as the provider's billed GB, exact.
pub fn gb(bytes: u64, bytes_per_gb: u64) -> Decimal {
    Decimal::from(bytes) / Decimal::from(bytes_per_gb)
}

/// Months a transfer of `seconds` spans (at least one).
pub fn months_of(seconds: Decimal) -> u32 {
    let m = (seconds / Decimal::from(SECONDS_PER_MONTH)).ceil();
    m.to_u32().unwrap_or(u32::MAX).max(1)
}

/// Cost of volume-tiered pricing for `gb` in one month. Tiers are `(up_to, price)`, ascending.
pub fn tiered(gb: Decimal, tiers: &[(Option<Decimal>, Decimal)]) -> Decimal {
    let mut cost = Decimal::ZERO;
    let mut floor = Decimal::ZERO;
    for (up_to, price) in tiers {
        if gb <= floor {
            break;
        }
        let top = up_to.map_or(gb, |u| u.min(gb));
        cost += (top - floor) * price;
        floor = top;
        if up_to.is_none() {
            break;
        }
    }
    cost
}

/// Internet egress of `gb_total` spread over `months`, with `stored_gb` stored at the provider.
/// Returns the cost and whether any month went over a zero-egress multiple.
pub fn internet_egress(
    e: &Egress,
    gb_total: Decimal,
    stored_gb: Decimal,
    months: u32,
) -> (Usd, bool) {
    let tiers: Vec<_> = e
        .tiers
        .iter()
        .map(|t| (t.up_to_gb.map(|d| d.0), t.per_gb.0))
        .collect();
    let per_month = gb_total / Decimal::from(months);
    let mut over = false;
    let month_cost = match (e.free_multiple_of_stored, e.over_multiple) {
        (Some(mult), Some(rule)) => {
            let excess = (per_month - mult.0 * stored_gb).max(Decimal::ZERO);
            if excess > Decimal::ZERO {
                over = true;
            }
            match rule {
                OverMultiple::Billed => tiered(excess, &tiers),
                OverMultiple::PolicyRisk => Decimal::ZERO,
            }
        }
        _ => {
            let free = e.free_gb_per_month.0.min(per_month);
            tiered(per_month, &tiers) - tiered(free, &tiers)
        }
    };
    (Usd(month_cost * Decimal::from(months)), over)
}

/// Requests priced with their unit, less a monthly free allowance over `months`.
pub fn request_cost(p: &RequestPrice, count: u64, months: u32) -> Usd {
    let free = p.free_per_month.saturating_mul(u64::from(months));
    let billed = count.saturating_sub(free);
    Usd(Decimal::from(billed) * p.price.0 / Decimal::from(p.per))
}

/// Egress for moving `bytes` out of `src` towards `dst` over `months`, with `stored` bytes kept
/// at the source: same region, between regions of one provider, or over the internet. The second
/// value says whether a zero-egress multiple was exceeded.
pub fn move_egress(src: &Place, dst: &Place, bytes: u64, stored: u64, months: u32) -> (Usd, bool) {
    let src_gb = gb(bytes, src.bytes_per_gb());
    if src.provider_id() == dst.provider_id() {
        let rate = if src.region.id == dst.region.id {
            src.provider.file.transfer.same_region_per_gb.0
        } else {
            src.inter_region_to(&dst.region.id)
        };
        return (Usd(src_gb * rate), false);
    }
    internet_egress(src.egress(), src_gb, gb(stored, src.bytes_per_gb()), months)
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ledger {
    pub source_list: u64,
    pub source_get: u64,
    pub destination_list: u64,
    pub destination_put: u64,
    pub destination_head: u64,
    pub bytes_moved: u64,
}

pub fn price_ledger(src: &Place, dst: &Place, l: &Ledger, stored: u64) -> (Usd, Usd, Usd) {
    let (egress, _) = move_egress(src, dst, l.bytes_moved, stored.max(l.bytes_moved), 1);
    let src_req = request_cost(&src.class.list, l.source_list, 1)
        + request_cost(&src.class.get, l.source_get, 1);
    let dst_req = request_cost(&dst.class.list, l.destination_list, 1)
        + request_cost(&dst.class.put, l.destination_put, 1)
        + request_cost(&dst.class.get, l.destination_head, 1);
    (egress, src_req, dst_req)
}

/// The catalog class of each corpus bucket at the source (an inventory's class names resolved;
/// unknown names and flag-built corpora take the source's class).
pub fn bucket_classes<'c>(src: &Place<'c>, corpus: &Corpus) -> Vec<&'c StorageClass> {
    corpus
        .buckets
        .iter()
        .map(|b| {
            b.class
                .as_deref()
                .and_then(|n| inventory_class(src, n))
                .unwrap_or(src.class)
        })
        .collect()
}

/// The catalog class an inventory's storage-class name means (`GLACIER` → `glacier-flexible`).
pub(super) fn inventory_class<'c>(src: &Place<'c>, name: &str) -> Option<&'c StorageClass> {
    let norm = name.trim().to_ascii_lowercase().replace('_', "-");
    let id = match norm.as_str() {
        "glacier" => "glacier-flexible",
        "reduced-redundancy" | "intelligent-tiering" => "standard",
        other => other,
    };
    src.provider.file.classes.iter().find(|c| c.id == id)
}

pub(super) fn source_class_of<'c>(
    src: &Place<'c>,
    inv: Option<&str>,
    warnings: &mut Vec<String>,
) -> &'c StorageClass {
    let Some(name) = inv else { return src.class };
    inventory_class(src, name).unwrap_or_else(|| {
        let w = format!(
            "inventory storage class {name:?} is not a class of {}; priced as {}",
            src.provider_id(),
            src.class.id
        );
        if !warnings.contains(&w) {
            warnings.push(w);
        }
        src.class
    })
}

pub(super) fn storage_month(dst: &Place, corpus: &Corpus, warnings: &mut Vec<String>) -> Usd {
    let class = dst.class;
    let mut billed: u128 = 0;
    let mut raw: u128 = 0;
    for b in &corpus.buckets {
        for (n, size) in b.split() {
            let per = size.max(class.min_object_bytes) + class.overhead_bytes_per_object;
            billed += u128::from(n) * u128::from(per);
            raw += u128::from(n) * u128::from(size);
        }
    }
    let gb_of = |bytes: u128| {
        Decimal::from_u128(bytes).unwrap_or(Decimal::MAX) / Decimal::from(dst.bytes_per_gb())
    };
    let tiers = dst.storage_tiers();
    let price = |bytes: u128| {
        tiered(
            (gb_of(bytes) - class.free_gb_month.0).max(Decimal::ZERO),
            &tiers,
        )
    };
    let mut month = Usd(price(billed));
    if billed > raw {
        let extra = Usd(price(billed) - price(raw));
        let why = if class.min_object_bytes > 0 {
            format!(
                "objects under {} are billed as {}",
                crate::units::fmt_bytes(class.min_object_bytes),
                crate::units::fmt_bytes(class.min_object_bytes)
            )
        } else {
            format!(
                "{} of overhead is billed per object",
                crate::units::fmt_bytes(class.overhead_bytes_per_object)
            )
        };
        warnings.push(format!(
            "{}: {why}, adding {} of billed size and {}/month",
            dst.provider_id(),
            fmt_bytes_si(u64::try_from(billed - raw).unwrap_or(u64::MAX)),
            extra
        ));
    }
    if let Some(m) = &dst.provider.file.minimum_monthly
        && month < Usd(m.amount.0)
    {
        warnings.push(format!(
            "{}: the monthly minimum of {} applies",
            dst.provider_id(),
            Usd(m.amount.0)
        ));
        month = Usd(m.amount.0);
    }
    month
}
