//! `plan --tiering` output: the table a person reads and the JSON document (`moverctl.plan-tiering/1`,
//! documented in docs/json.md) scripts read.
//!
//! JSON: `object_store` (`place`, `read_bytes_per_second`, `write_bytes_per_second`,
//! `throughput_from`), `fast_tier` (`id`, `name`, `price_usd`, `price_unit_bytes`, `price_from`,
//! `throughput_from`, `per_tib` — whether the rates are per TiB provisioned — `read_bytes_per_second`,
//! `write_bytes_per_second`, and the catalog's `source`, `as_of`, `confidence`, `note` or null),
//! `datasets` (`name`, `bytes`, `objects`, `reads_per_month`), `checkpoints` (`bytes`,
//! `every_seconds`, `keep`, `per_month`, or null), `assumptions` (`gpu_hourly`,
//! `train_hours_per_month`, `read_rate_bytes_per_second`, `read_rate_given`, `jobs_per_month`),
//! `options` (in the order object-only, working-set-fast, checkpoints-fast, all-fast: `option`,
//! `label`, `fast_tier_bytes`, `fast_read_bytes_per_second`, `fast_write_bytes_per_second`,
//! `object_storage`, `fast_storage`, `object_reads`, `staging_fees`, `checkpoint_idle`,
//! `loading_idle`, `staging_idle` — each `{hours, usd}` — and `total`, all per month), and
//! `cheapest` (an option id).

use super::render::{compact, finish, trimmed};
use super::tiering::{FastThroughput, Idle, OptionCost, Plan};
use crate::money::Usd;
use crate::units::{fmt_bytes_si, fmt_count};
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;
use serde_json::{Value, json};

fn dec(d: Decimal) -> Value {
    let s = d.round_dp(3).normalize().to_string();
    Value::Number(s.parse().expect("decimal digits are a JSON number"))
}

/// `12.3 GB/s`.
pub fn rate(bytes_per_second: Decimal) -> String {
    format!(
        "{}/s",
        fmt_bytes_si(bytes_per_second.round().to_u64().unwrap_or(u64::MAX))
    )
}

/// `1.5 h $6,750`, or `-` when nothing idles.
pub fn idle(i: Idle) -> String {
    if i.seconds.is_zero() {
        return "-".into();
    }
    format!("{} h {}", i.hours.round_dp(1).normalize(), i.usd)
}

fn idle_json(i: Idle) -> Value {
    json!({"hours": dec(i.hours), "usd": i.usd.to_json()})
}

fn option_json(o: &OptionCost) -> Value {
    json!({
        "option": o.boundary.id(),
        "label": o.boundary.label(),
        "fast_tier_bytes": o.fast_bytes,
        "fast_read_bytes_per_second": dec(o.fast_rates.read),
        "fast_write_bytes_per_second": dec(o.fast_rates.write),
        "object_storage": o.object_storage.to_json(),
        "fast_storage": o.fast_storage.to_json(),
        "object_reads": o.object_reads.to_json(),
        "staging_fees": o.staging_fees.to_json(),
        "checkpoint_idle": idle_json(o.checkpoint_idle),
        "loading_idle": idle_json(o.loading_idle),
        "staging_idle": idle_json(o.staging_idle),
        "total": o.total().to_json(),
    })
}

pub fn json(p: &Plan) -> Value {
    let i = &p.inputs;
    let a = &p.about;
    let (per_tib, r) = match i.fast.throughput {
        FastThroughput::PerTib(r) => (true, r),
        FastThroughput::Fixed(r) => (false, r),
    };
    json!({
        "schema": "moverctl.plan-tiering/1",
        "object_store": {
            "place": a.object_place,
            "read_bytes_per_second": dec(i.object.rates.read),
            "write_bytes_per_second": dec(i.object.rates.write),
            "throughput_from": a.object_rates_from,
        },
        "fast_tier": {
            "id": a.fast_id, "name": a.fast_name,
            "price_usd": Usd(i.fast.price.usd).to_json(),
            "price_unit_bytes": i.fast.price.unit_bytes,
            "price_from": a.price_from, "throughput_from": a.throughput_from,
            "per_tib": per_tib,
            "read_bytes_per_second": dec(r.read), "write_bytes_per_second": dec(r.write),
            "source": a.source, "as_of": a.as_of, "confidence": a.confidence, "note": a.note,
        },
        "datasets": i.datasets.iter().map(|d| json!({
            "name": d.name, "bytes": d.bytes, "objects": d.objects,
            "reads_per_month": dec(d.reads_per_month),
        })).collect::<Vec<_>>(),
        "checkpoints": i.checkpoints.as_ref().map_or(Value::Null, |c| json!({
            "bytes": c.bytes, "every_seconds": dec(c.every_seconds), "keep": c.keep,
            "per_month": dec(i.checkpoints_per_month()),
        })),
        "assumptions": {
            "gpu_hourly": i.gpu_hourly.to_json(),
            "train_hours_per_month": dec(i.train_hours),
            "read_rate_bytes_per_second": dec(i.required_rate()),
            "read_rate_given": i.read_rate.is_some(),
            "jobs_per_month": i.jobs_per_month,
        },
        "options": p.options.iter().map(option_json).collect::<Vec<_>>(),
        "cheapest": p.best().boundary.id(),
    })
}

/// The fast tier's price and speed in words.
pub fn fast_line(p: &Plan) -> String {
    let i = &p.inputs;
    let a = &p.about;
    let unit = match i.fast.price.unit_bytes {
        1_000_000_000 => "GB",
        1_073_741_824 => "GiB",
        1_000_000_000_000 => "TB",
        _ => "TiB",
    };
    let speed = match i.fast.throughput {
        FastThroughput::PerTib(r) => format!(
            "{} read, {} write per TiB provisioned",
            rate(r.read),
            rate(r.write)
        ),
        FastThroughput::Fixed(r) => format!("{} read, {} write", rate(r.read), rate(r.write)),
    };
    let mut s = format!(
        "Fast tier {} ({}): ${} per {unit}-month ({}), {speed} ({})",
        a.fast_id,
        a.fast_name,
        i.fast.price.usd.normalize(),
        a.price_from,
        a.throughput_from
    );
    if let (Some(src), Some(d), Some(c)) = (&a.source, &a.as_of, &a.confidence) {
        s.push_str(&format!("\n  price source ({c}, as of {d}): {src}"));
    }
    s
}

/// The lines above the table: what was priced, with what.
fn header(p: &Plan) -> String {
    let i = &p.inputs;
    let a = &p.about;
    let mut s = format!(
        "Object store {}: {} read, {} write ({})\n{}\n",
        a.object_place,
        rate(i.object.rates.read),
        rate(i.object.rates.write),
        a.object_rates_from,
        fast_line(p)
    );
    for d in &i.datasets {
        s.push_str(&format!(
            "Data set {}: {} in {} {}, read {} {} a month\n",
            d.name,
            fmt_bytes_si(d.bytes),
            fmt_count(d.objects),
            crate::words::noun(d.objects, "object"),
            d.reads_per_month.round_dp(3).normalize(),
            crate::words::noun_dec(d.reads_per_month.round_dp(3), "time")
        ));
    }
    if let Some(c) = &i.checkpoints {
        s.push_str(&format!(
            "Checkpoints: {} every {} of training, {} kept ({} a month)\n",
            fmt_bytes_si(c.bytes),
            crate::units::fmt_duration(c.every_seconds),
            c.keep,
            i.checkpoints_per_month().round_dp(1).normalize()
        ));
    }
    s.push_str(&format!(
        "GPUs {} an hour idle, training {} h a month, reading at {} ({}); {} a month\n\n",
        i.gpu_hourly,
        i.train_hours.normalize(),
        rate(i.required_rate()),
        if i.read_rate.is_some() {
            "--read-rate"
        } else {
            "the month's reads over the training hours"
        },
        crate::words::count(i.jobs_per_month.into(), "job")
    ));
    s
}

pub fn text(p: &Plan) -> String {
    let mut table = compact();
    table.set_header(vec![
        "#",
        "option",
        "on fast\ntier",
        "storage\n/mo",
        "read &\nstage fees",
        "checkpoint\nidle",
        "loading\nstall",
        "staging\nidle",
        "total\n/mo",
    ]);
    for (k, o) in p.options.iter().enumerate() {
        table.add_row(vec![
            if k == p.cheapest {
                format!("{}*", k + 1)
            } else {
                (k + 1).to_string()
            },
            o.boundary.id().to_string(),
            fmt_bytes_si(o.fast_bytes),
            o.storage().to_string(),
            (o.object_reads + o.staging_fees).to_string(),
            idle(o.checkpoint_idle),
            idle(o.loading_idle),
            idle(o.staging_idle),
            o.total().to_string(),
        ]);
    }
    finish(&mut table, 2);
    let best = p.best();
    let base = &p.options[0];
    let saving = if p.cheapest == 0 {
        String::new()
    } else {
        format!(
            ", {} a month less than all on object storage",
            Usd(base.total().0 - best.total().0)
        )
    };
    format!(
        "{}{}\n\nCheapest boundary: {} ({}) at {} a month{saving}.\n",
        header(p),
        trimmed(&table),
        best.boundary.label(),
        best.boundary.id(),
        best.total(),
    )
}

/// What `plan --tiering` prints on stdout (the JSON document with `json`, else the table) and
/// on stderr (where the report was written).
pub fn output(p: &Plan, json: bool, report: Option<&std::path::Path>) -> (String, String) {
    let out = if json {
        format!("{:#}\n", self::json(p))
    } else {
        text(p)
    };
    let err = report.map_or(String::new(), |w| {
        format!("Report written to {}\n", w.display())
    });
    (out, err)
}

/// `providers show`: a provider's fast tiers, one line each (nothing when it has none).
pub fn catalog_lines(f: &crate::catalog::ProviderFile) -> String {
    let mut s = String::new();
    for t in &f.fast_tiers {
        let price = match (&t.price, t.unit) {
            (Some(p), Some(u)) => format!("${} per {}", p.0.normalize(), u.as_str()),
            _ => "no sourced price (give --fast-tier-price)".to_string(),
        };
        s.push_str(&format!(
            "Fast tier {} ({}, {}): {price}; {} MB/s read, {} MB/s write per TiB ({}; {}, {})\n",
            t.id,
            t.name,
            t.region,
            t.read_mb_per_s_per_tib.0.normalize(),
            t.write_mb_per_s_per_tib.0.normalize(),
            t.confidence.as_str(),
            t.source,
            t.as_of
        ));
    }
    s
}
