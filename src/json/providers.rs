//! The price catalog as documents (`moverctl.providers/1`): `providers --json` (a summary per
//! provider) and `providers show NAME --json` (one provider file as data). Beside
//! [`crate::summary::providers`], the same in words.

use super::{PROVIDERS, number, stamp};
use crate::catalog::{Catalog, Provider, RequestPrice, price_dates};
use serde_json::{Value, json};

/// `providers --json`: a summary per provider.
pub fn list(catalog: &Catalog) -> Value {
    let v: Vec<_> = catalog
        .providers()
        .map(|p| {
            let (oldest, newest) = price_dates(&p.file);
            json!({
                "id": p.file.id, "name": p.file.name, "kind": p.file.kind.as_str(),
                "regions": p.file.regions.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
                "classes": p.file.classes.iter().map(|c| c.id.clone()).collect::<Vec<_>>(),
                "origin": p.origin, "oldest_price": oldest, "newest_price": newest,
            })
        })
        .collect();
    stamp(PROVIDERS, json!({"providers": v}))
}

/// A request price as data: `{"price": 0.005, "per": 1000, "free_per_month": 0}` (US dollars).
fn req_json(r: &RequestPrice) -> Value {
    json!({"price": number(r.price.0.normalize()), "per": r.per, "free_per_month": r.free_per_month})
}

/// `providers show NAME --json`: the provider file as data.
pub fn show(p: &Provider) -> Value {
    let f = &p.file;
    let classes: Vec<_> = f
        .classes
        .iter()
        .map(|c| {
            json!({
                "id": c.id, "name": c.name,
                "storage_per_gb_month": c.storage.iter().map(|t| json!({
                    "up_to_gb": t.up_to_gb.map(|d| number(d.0)),
                    "price": number(t.per_gb_month.0)})).collect::<Vec<_>>(),
                "min_duration_days": c.min_duration_days, "min_object_bytes": c.min_object_bytes,
                "retrieval_per_gb": number(c.retrieval_per_gb.0), "archive": c.archive,
                "put": req_json(&c.put), "get": req_json(&c.get), "list": req_json(&c.list),
                "source": c.source, "as_of": c.as_of.to_string(),
            })
        })
        .collect();
    let v = json!({
        "id": f.id, "name": f.name, "kind": f.kind.as_str(), "origin": p.origin,
        "bytes_per_gb": f.billing.bytes_per_gb, "notes": f.notes,
        "egress": {
            "free_gb_per_month": number(f.egress.free_gb_per_month.0),
            "tiers": f.egress.tiers.iter().map(|t| json!({"up_to_gb": t.up_to_gb.map(|d| number(d.0)), "per_gb": number(t.per_gb.0)})).collect::<Vec<_>>(),
            "free_multiple_of_stored": f.egress.free_multiple_of_stored.map(|d| number(d.0)),
            "caveats": f.egress.caveats, "source": f.egress.source, "as_of": f.egress.as_of.to_string(),
        },
        "classes": classes,
        "regions": f.regions.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
        "limits": {
            "max_parts": f.limits.max_parts, "min_part_bytes": f.limits.min_part_bytes,
            "max_part_bytes": f.limits.max_part_bytes, "max_object_bytes": f.limits.max_object_bytes,
            "equal_part_sizes": f.limits.equal_part_sizes, "checksum_headers": f.limits.checksum_headers,
            "source": f.limits.source, "as_of": f.limits.as_of.to_string(),
        },
        "exit_waiver": f.exit_waiver.as_ref().map(|w| json!({
            "window_days": w.window_days, "requires_full_exit": w.requires_full_exit,
            "window_starts": w.window_starts.as_str(), "notice": w.notice,
            "credit_covers": w.credit_covers,
            "conditions": w.conditions, "source": w.source, "as_of": w.as_of.to_string()})),
        "lazy_migration": f.lazy_migration.as_ref().map(|l| json!({
            "name": l.name, "sources": l.sources, "any_s3_source": l.any_s3_source,
            "note": l.note, "source": l.source, "as_of": l.as_of.to_string()})),
        "read_rate": f.read_rate.as_ref().map(|r| json!({
            "gbit_per_second": number(r.gbit_per_second.0), "scope": r.scope.as_str(),
            "note": r.note, "source": r.source, "as_of": r.as_of.to_string()})),
    });
    stamp(PROVIDERS, v)
}
