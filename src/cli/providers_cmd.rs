//! `moverctl providers` and `moverctl providers show NAME`.

use super::json::{PROVIDERS, number, stamp};
use super::{CliError, ProvidersAction, ProvidersArgs};
use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use moverctl::catalog::{Catalog, Provider, ProviderFile, RequestPrice, Tristate, price_dates};
use moverctl::money::Usd;
use moverctl::units::fmt_bytes;
use serde_json::json;

pub fn run(catalog: &Catalog, args: ProvidersArgs) -> Result<(), CliError> {
    match args.action {
        None => list(catalog, args.json),
        Some(ProvidersAction::Show { name, json }) => show(catalog.get(&name)?, json || args.json),
    }
    Ok(())
}

fn new_table() -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    t
}

fn egress_summary(p: &Provider) -> String {
    let e = &p.file.egress;
    if let (Some(m), Some(_)) = (e.free_multiple_of_stored, e.over_multiple) {
        return format!("free up to {}x stored", m.0.normalize());
    }
    match e.tiers.first() {
        None => "free".to_string(),
        Some(t) => format!("from ${}/GB", t.per_gb.0.normalize()),
    }
}

fn list(catalog: &Catalog, as_json: bool) {
    if as_json {
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
        let v = stamp(PROVIDERS, json!({"providers": v}));
        println!("{}", serde_json::to_string_pretty(&v).expect("serializes"));
        return;
    }
    let mut t = new_table();
    t.set_header(vec![
        "provider",
        "name",
        "kind",
        "default",
        "classes",
        "egress",
        "prices as of",
    ]);
    for p in catalog.providers() {
        let f = &p.file;
        let (oldest, newest) = price_dates(f);
        t.add_row(vec![
            f.id.clone(),
            f.name.clone(),
            f.kind.as_str().to_string(),
            format!("{}/{}", f.default_region, f.default_class),
            f.classes
                .iter()
                .map(|c| c.id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            egress_summary(p),
            if oldest == newest {
                newest
            } else {
                format!("{oldest} .. {newest}")
            },
        ]);
    }
    println!("{t}");
    println!("Show one with: moverctl providers show NAME");
}

fn req(r: &RequestPrice) -> String {
    let mut s = format!("${} per {}", r.price.0.normalize(), group(r.per));
    if r.free_per_month > 0 {
        s.push_str(&format!(" ({} free/month)", group(r.free_per_month)));
    }
    s
}

/// A request price as data: `{"price": 0.005, "per": 1000, "free_per_month": 0}` (US dollars).
fn req_json(r: &RequestPrice) -> serde_json::Value {
    json!({"price": number(r.price.0.normalize()), "per": r.per, "free_per_month": r.free_per_month})
}

fn group(n: u64) -> String {
    moverctl::money::group_thousands(&n.to_string())
}

fn show(p: &Provider, as_json: bool) {
    if as_json {
        let v = show_json(p);
        println!("{}", serde_json::to_string_pretty(&v).expect("serializes"));
        return;
    }
    let f = &p.file;
    println!("{} — {} ({})", f.id, f.name, f.kind.as_str());
    println!(
        "from {}; a billed GB is {} bytes ({}, {})",
        p.origin, f.billing.bytes_per_gb, f.billing.source, f.billing.as_of
    );
    if let Some(c) = &f.currency {
        println!(
            "prices in {} converted at {} USD each ({}, {})",
            c.code, c.usd_per_unit.0, c.source, c.as_of
        );
    }
    for n in &f.notes {
        println!("* {n}");
    }
    println!();
    println!("{}", classes_table(f));
    egress_lines(f);
    limits_lines(f);
    print!("{}", moverctl::plan::render_tiering::catalog_lines(f));
}

/// The storage classes and their prices.
fn classes_table(f: &ProviderFile) -> Table {
    let mut t = new_table();
    t.set_header(vec![
        "class",
        "storage $/GB-month",
        "min days",
        "min size",
        "retrieval $/GB",
        "PUT",
        "GET",
        "LIST",
        "source",
        "as of",
    ]);
    for c in &f.classes {
        let storage = c
            .storage
            .iter()
            .map(|t| match t.up_to_gb {
                Some(u) => format!("{} to {} GB", t.per_gb_month.0.normalize(), u.0.normalize()),
                None => t.per_gb_month.0.normalize().to_string(),
            })
            .collect::<Vec<_>>()
            .join("; ");
        t.add_row(vec![
            format!("{}{}", c.id, if c.archive { " (archive)" } else { "" }),
            storage,
            c.min_duration_days.to_string(),
            if c.min_object_bytes > 0 {
                fmt_bytes(c.min_object_bytes)
            } else {
                "-".into()
            },
            c.retrieval_per_gb.0.normalize().to_string(),
            req(&c.put),
            req(&c.get),
            req(&c.list),
            c.source.clone(),
            c.as_of.to_string(),
        ]);
    }
    t
}

/// Internet egress, transfer inside the provider, regions and the monthly minimum.
fn egress_lines(f: &ProviderFile) {
    let e = &f.egress;
    let mut egress = match (e.free_multiple_of_stored, e.over_multiple) {
        (Some(m), Some(o)) => format!(
            "free up to {}x the stored data per month, above that {:?}",
            m.0.normalize(),
            o
        ),
        _ => format!("{} GB/month free", e.free_gb_per_month.0.normalize()),
    };
    for tier in &e.tiers {
        egress.push_str(&match tier.up_to_gb {
            Some(u) => format!(
                "; ${}/GB up to {} GB",
                tier.per_gb.0.normalize(),
                u.0.normalize()
            ),
            None => format!("; ${}/GB above", tier.per_gb.0.normalize()),
        });
    }
    if e.tiers.is_empty() && e.free_multiple_of_stored.is_none() {
        egress = "free".into();
    }
    println!("\nInternet egress: {egress} ({}, {})", e.source, e.as_of);
    for c in &e.caveats {
        println!("  ! {c}");
    }
    println!(
        "Inside {}: same region ${}/GB, between regions ${}/GB ({}, {})",
        f.id,
        f.transfer.same_region_per_gb.0.normalize(),
        f.transfer.inter_region_per_gb.0.normalize(),
        f.transfer.source,
        f.transfer.as_of
    );
    println!(
        "Regions: {}",
        f.regions
            .iter()
            .map(|r| r.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(m) = &f.minimum_monthly {
        println!(
            "Monthly minimum: {} ({}, {})",
            Usd(m.amount.0),
            m.source,
            m.as_of
        );
    }
}

/// Upload limits, request rates and the exit waiver.
fn limits_lines(f: &ProviderFile) {
    let l = &f.limits;
    println!(
        "Limits: {} parts of {} to {}; objects up to {}; single PUT up to {}{}; single-part ETag is MD5: {}; checksum headers: {} ({}, {})",
        l.max_parts,
        fmt_bytes(l.min_part_bytes),
        fmt_bytes(l.max_part_bytes),
        fmt_bytes(l.max_object_bytes),
        fmt_bytes(l.max_single_put_bytes),
        if l.equal_part_sizes {
            "; all parts but the last must be equal"
        } else {
            ""
        },
        match l.single_part_etag_is_md5 {
            Tristate::Yes => "yes",
            Tristate::No => "no",
            Tristate::Unknown => "unknown",
        },
        if l.checksum_headers.is_empty() {
            "none".to_string()
        } else {
            l.checksum_headers.join(", ")
        },
        l.source,
        l.as_of
    );
    if let (Some(w), Some(scope)) = (l.write_requests_per_second, l.rate_scope) {
        println!(
            "  about {w} writes/s and {} reads/s per {}",
            l.read_requests_per_second.unwrap_or(0),
            scope.as_str()
        );
    }
    if let Some(w) = &f.exit_waiver {
        println!(
            "Exit waiver (announced {}): {} days{}{}; {} ({}, {})",
            w.announced,
            w.window_days,
            if w.requires_full_exit {
                ", full exit"
            } else {
                ""
            },
            if w.credit_not_waiver {
                ", paid as credit"
            } else {
                ""
            },
            w.conditions.join("; "),
            w.source,
            w.as_of
        );
    }
}

/// `providers show NAME --json`: the provider file as data.
fn show_json(p: &Provider) -> serde_json::Value {
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
            "conditions": w.conditions, "source": w.source, "as_of": w.as_of.to_string()})),
    });
    stamp(PROVIDERS, v)
}
