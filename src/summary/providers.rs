//! The price catalog in words: `moverctl providers` (a row per provider) and `providers show NAME`
//! (one provider's prices with their sources and dates). Beside [`crate::json::providers`], the
//! same as documents.

use crate::catalog::{Catalog, Provider, ProviderFile, RequestPrice, Tristate, price_dates};
use crate::money::Usd;
use crate::units::fmt_bytes;
use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use std::fmt::Write;

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

/// `moverctl providers`: a row per provider, then how to show one.
pub fn list(catalog: &Catalog) -> String {
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
        let id = match f.aliases.is_empty() {
            true => f.id.clone(),
            false => format!("{} (also {})", f.id, f.aliases.join(", ")),
        };
        t.add_row(vec![
            id,
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
    format!("{t}\nShow one with: moverctl providers show NAME\n")
}

fn req(r: &RequestPrice) -> String {
    let mut s = format!("${} per {}", r.price.0.normalize(), group(r.per));
    if r.free_per_month > 0 {
        s.push_str(&format!(" ({} free/month)", group(r.free_per_month)));
    }
    s
}

fn group(n: u64) -> String {
    crate::money::group_thousands(&n.to_string())
}

/// `moverctl providers show NAME`: one provider's prices, limits and waiver, each with its source
/// and date.
pub fn show(p: &Provider) -> String {
    let f = &p.file;
    let mut out = String::new();
    let _ = writeln!(out, "{} — {} ({})", f.id, f.name, f.kind.as_str());
    let _ = writeln!(
        out,
        "from {}; a billed GB is {} bytes ({}, {})",
        p.origin, f.billing.bytes_per_gb, f.billing.source, f.billing.as_of
    );
    if let Some(c) = &f.currency {
        let _ = writeln!(
            out,
            "prices in {} converted at {} USD each ({}, {})",
            c.code, c.usd_per_unit.0, c.source, c.as_of
        );
    }
    for n in &f.notes {
        let _ = writeln!(out, "* {n}");
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "{}", classes_table(f));
    egress_lines(&mut out, f);
    limits_lines(&mut out, f);
    out.push_str(&crate::plan::render_tiering::catalog_lines(f));
    out
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
fn egress_lines(out: &mut String, f: &ProviderFile) {
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
    let _ = writeln!(
        out,
        "\nInternet egress: {egress} ({}, {})",
        e.source, e.as_of
    );
    for c in &e.caveats {
        let _ = writeln!(out, "  ! {c}");
    }
    let _ = writeln!(
        out,
        "Inside {}: same region ${}/GB, between regions ${}/GB ({}, {})",
        f.id,
        f.transfer.same_region_per_gb.0.normalize(),
        f.transfer.inter_region_per_gb.0.normalize(),
        f.transfer.source,
        f.transfer.as_of
    );
    let regions: Vec<&str> = f.regions.iter().map(|r| r.id.as_str()).collect();
    let _ = writeln!(out, "Regions: {}", regions.join(", "));
    if let Some(m) = &f.minimum_monthly {
        let _ = writeln!(
            out,
            "Monthly minimum: {} ({}, {})",
            Usd(m.amount.0),
            m.source,
            m.as_of
        );
    }
}

/// Upload limits, request rates and the exit waiver.
fn limits_lines(out: &mut String, f: &ProviderFile) {
    let l = &f.limits;
    let _ = writeln!(
        out,
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
        let _ = writeln!(
            out,
            "  about {w} writes/s and {} reads/s per {}",
            l.read_requests_per_second.unwrap_or(0),
            scope.as_str()
        );
    }
    if let Some(w) = &f.exit_waiver {
        let _ = writeln!(
            out,
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
