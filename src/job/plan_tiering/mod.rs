//! The `plan --tiering` job: flags → the model's inputs (the object store from the catalog and a
//! saved probe or `--object-throughput`; the fast tier from the catalog or `onprem` with its
//! price and throughput given) → [`crate::plan::tiering::Plan`], and the HTML report when asked.
//! Never prints.

mod args;

pub use args::TieringArgs;

use crate::catalog::{CapacityUnit, Catalog, Place};
use crate::job::JobError;
use crate::money::Usd;
use crate::plan::tiering::{
    About, CapacityPrice, FastThroughput, FastTier, Inputs, ObjectStore, Plan, Rates,
};
use rust_decimal::Decimal;
use rust_decimal::prelude::FromPrimitive;
use std::path::{Path, PathBuf};

fn usage(m: impl Into<String>) -> JobError {
    JobError::Usage(m.into())
}

/// What the idle GPU fleet costs an hour: `--gpu-hourly`, or `--gpus` × `--gpu-rate`, else zero.
pub fn gpu_hourly(
    hourly: Option<&str>,
    gpus: Option<u32>,
    rate: Option<&str>,
) -> Result<Usd, JobError> {
    let usd = |flag: &str, v: &str| Usd::parse(v).map_err(|e| usage(format!("{flag}: {e}")));
    Ok(match (hourly, gpus, rate) {
        (Some(h), _, _) => usd("--gpu-hourly", h)?,
        (None, Some(n), Some(r)) => usd("--gpu-rate", r)? * Decimal::from(n),
        _ => Usd::ZERO,
    })
}

/// The flags `plan --tiering` shares with `plan`: `--from` (the object store,
/// PROVIDER[:REGION][/CLASS]), the GPU price, `--no-probe` (never read a saved probe) and
/// `--report FILE`.
#[derive(Debug, Clone, Copy)]
struct Shared<'a> {
    from: &'a str,
    gpu_hourly: Usd,
    no_probe: bool,
}

/// What the job did: the plan, and the report written (or why not).
pub struct TieringOutcome {
    pub plan: Plan,
    pub report: Option<Result<PathBuf, JobError>>,
}

/// Resolve the flags, evaluate every option, write the report when asked.
pub fn run(
    catalog: &Catalog,
    a: &TieringArgs,
    from: &str,
    gpu_hourly: Usd,
    no_probe: bool,
    report: Option<&Path>,
) -> Result<TieringOutcome, JobError> {
    let s = Shared {
        from,
        gpu_hourly,
        no_probe,
    };
    let plan = resolve(catalog, a, s)?;
    let report = report.map(|path| {
        let generated = chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string();
        let html = crate::plan::report_tiering::html(&plan, &generated);
        std::fs::write(path, html)
            .map(|()| path.to_path_buf())
            .map_err(|e| {
                JobError::Failure(format!("cannot write the report {}: {e}", path.display()))
            })
    });
    Ok(TieringOutcome { plan, report })
}

/// The flags → the plan.
fn resolve(catalog: &Catalog, a: &TieringArgs, s: Shared) -> Result<Plan, JobError> {
    if a.dataset.is_empty() {
        return Err(usage(
            "--tiering needs at least one --dataset name=NAME,size=SIZE,objects=N,reads=R",
        ));
    }
    let datasets = (a.dataset.iter().enumerate())
        .map(|(i, d)| args::dataset(d, i))
        .collect::<Result<Vec<_>, _>>()?;
    let checkpoints = a.checkpoint.as_deref().map(args::checkpoints).transpose()?;
    let place = Place::resolve(catalog, s.from)?;
    let (object, object_rates_from) = object_store(&place, a, s.no_probe)?;
    let (fast, mut about) = fast_tier(catalog, a)?;
    about.object_place = place.canonical();
    about.object_rates_from = object_rates_from;
    let train_hours = args::number("--train-hours", "hours", &a.train_hours)?;
    if train_hours.is_zero() || train_hours > Decimal::from(744) {
        return Err(usage(
            "--train-hours must be above 0 and at most 744 (31 days)",
        ));
    }
    if a.jobs_per_month == 0 || a.nodes == 0 {
        return Err(usage("--jobs-per-month and --nodes must be at least 1"));
    }
    let read_rate = (a.read_rate.as_deref())
        .map(|r| crate::units::parse_rate(r).map_err(|e| usage(format!("--read-rate: {e}"))))
        .transpose()?;
    let inputs = Inputs {
        datasets,
        checkpoints,
        gpu_hourly: s.gpu_hourly,
        train_hours,
        read_rate,
        jobs_per_month: a.jobs_per_month,
        fast,
        object,
    };
    Ok(Plan::new(inputs, about))
}

/// The object store: prices from the catalog, throughput from `--object-throughput` or the
/// newest saved probe of its provider (× `--nodes`).
fn object_store(
    place: &Place,
    a: &TieringArgs,
    no_probe: bool,
) -> Result<(ObjectStore, String), JobError> {
    let (rates, from) = match &a.object_throughput {
        Some(v) => (
            args::rates("--object-throughput", v)?,
            "--object-throughput".to_string(),
        ),
        None => probed(place, a.nodes, no_probe)?,
    };
    let class = place.class;
    Ok((
        ObjectStore {
            storage: place.storage_tiers(),
            bytes_per_gb: place.bytes_per_gb(),
            get_each: class.get.price.0 / Decimal::from(class.get.per.max(1)),
            retrieval_per_gb: class.retrieval_per_gb.0,
            rates,
        },
        from,
    ))
}

/// The multi-stream read and write rates of the newest saved probe of the place's provider.
fn probed(place: &Place, nodes: u32, no_probe: bool) -> Result<(Rates, String), JobError> {
    let missing = || {
        usage(format!(
            "no read/write throughput for the object store {}: run `moverctl probe LOCATION` on one of the GPU nodes (a location at {}), or give --object-throughput READ[,WRITE] (e.g. 20GB/s,10GB/s)",
            place.canonical(),
            place.provider_id()
        ))
    };
    if no_probe {
        return Err(missing());
    }
    let (file, r) = crate::probe::saved::newest(place.provider_id()).ok_or_else(missing)?;
    let dec = |v: Option<f64>| {
        v.filter(|x| x.is_finite() && *x >= 1.0)
            .and_then(|x| Decimal::from_f64(x.round()))
    };
    let (Some(read), Some(write)) = (
        dec(r.multi_stream_get_bytes_per_sec),
        dec(r.multi_stream_bytes_per_sec),
    ) else {
        return Err(missing());
    };
    let n = Decimal::from(nodes);
    Ok((
        Rates {
            read: read * n,
            write: write * n,
        },
        format!(
            "probe of {} ({}, {}) × {nodes} node{}",
            r.location,
            r.timestamp,
            file.display(),
            if nodes == 1 { "" } else { "s" }
        ),
    ))
}

/// `120` (USD per TB-month) or `0.145/GiB-month`.
fn price_flag(v: &str) -> Result<CapacityPrice, JobError> {
    let (amount, unit) = match v.split_once('/') {
        Some((a, u)) => (
            a,
            CapacityUnit::parse(u).ok_or_else(|| {
                usage(format!(
                    "--fast-tier-price {v:?}: unknown unit {u:?} (GB-month, GiB-month, TB-month, TiB-month)"
                ))
            })?,
        ),
        None => (v, CapacityUnit::TbMonth),
    };
    let usd = Usd::parse(amount).map_err(|e| usage(format!("--fast-tier-price: {e}")))?;
    if usd.is_zero() {
        return Err(usage("--fast-tier-price must be above zero"));
    }
    Ok(CapacityPrice {
        usd: usd.0,
        unit_bytes: unit.bytes(),
    })
}

/// The fast tier: `onprem` from the flags, else the catalog entry with the flags' overrides.
fn fast_tier(catalog: &Catalog, a: &TieringArgs) -> Result<(FastTier, About), JobError> {
    let id = a.fast_tier.as_deref().map(str::trim).ok_or_else(|| {
        let known: Vec<String> = catalog.fast_tiers().iter().map(|t| t.id.clone()).collect();
        usage(format!(
            "--tiering needs --fast-tier ID: one of {}, or onprem (with --fast-tier-price and --fast-tier-throughput)",
            known.join(", ")
        ))
    })?;
    let price = a.fast_tier_price.as_deref().map(price_flag).transpose()?;
    let given = (a.fast_tier_throughput.as_deref())
        .map(|v| args::rates("--fast-tier-throughput", v))
        .transpose()?;
    let mut about = About {
        fast_id: id.to_string(),
        price_from: if price.is_some() {
            "--fast-tier-price"
        } else {
            "catalog"
        }
        .into(),
        throughput_from: if given.is_some() {
            "--fast-tier-throughput".into()
        } else {
            "catalog".into()
        },
        ..About::default()
    };
    if id == "onprem" {
        let price = price.ok_or_else(|| usage("--fast-tier onprem needs --fast-tier-price: what your file system costs per TB a month (e.g. 120, or 0.12/GB-month)"))?;
        let rates = given.ok_or_else(|| usage("--fast-tier onprem needs --fast-tier-throughput READ[,WRITE]: your file system's aggregate throughput (e.g. 200GB/s,100GB/s)"))?;
        about.fast_name = "on-premises fast tier (WEKA, VAST, DDN, Lustre, NVMe)".into();
        let fast = FastTier {
            price,
            throughput: FastThroughput::Fixed(rates),
        };
        return Ok((fast, about));
    }
    let t = catalog.fast_tier(id)?;
    let catalog_price = match (&t.price, t.unit) {
        (Some(p), Some(u)) => Some(CapacityPrice {
            usd: p.0,
            unit_bytes: u.bytes(),
        }),
        _ => None,
    };
    let price = price.or(catalog_price).ok_or_else(|| {
        usage(format!(
            "the fast tier {id} has no sourced price in the catalog: give --fast-tier-price (USD per TB-month, e.g. 150, or 0.15/GiB-month)"
        ))
    })?;
    let mb = Decimal::from(1_000_000u64);
    let throughput = match given {
        Some(r) => FastThroughput::Fixed(r),
        None => FastThroughput::PerTib(Rates {
            read: t.read_mb_per_s_per_tib.0 * mb,
            write: t.write_mb_per_s_per_tib.0 * mb,
        }),
    };
    about.fast_name = t.name.clone();
    about.source = Some(t.source.clone());
    about.as_of = Some(t.as_of.to_string());
    about.confidence = Some(t.confidence.as_str().to_string());
    about.note = t.note.clone();
    Ok((FastTier { price, throughput }, about))
}
