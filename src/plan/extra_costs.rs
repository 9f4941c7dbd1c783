//! What a move costs besides moving and storing at the destination, and what staying on an
//! archive class costs besides its fees:
//!
//! - `source_storage`: the source keeps (and bills) the corpus until the copy is done: its
//!   storage a month × the move's time (30-day months), restore wait included.
//! - `source_early_deletion` (only with `--delete-source`): the source class's minimum storage
//!   duration, billed for the days left when the source is deleted at the end of the move. The
//!   objects' age is not known: they are assumed written at the start of the move (the worst
//!   case), and the plan says so; objects older than the minimum owe nothing.
//! - `restored_copy`: an archive-class source is restored into a temporary copy, billed at the
//!   provider's default class (S3 Standard, Azure Hot) from the end of the restore until the copy
//!   is done (whole days, at least one).
//! - `worker_compute`: `--worker-hourly` × workers × the copy's hours (the restore wait excluded:
//!   no worker runs while objects are restored).
//! - `restore_idle_per_month`, `restore_idle`: every read of an archive-class store needs a
//!   restore first, and the GPUs idle through it as they do through the move's restore:
//!   `reads_per_month` × the restore's hours × `--gpu-hourly` a month, and over the horizon. For
//!   "stay" on an archive source, `--restore-tier` sets the tier of those reads (their retrieval
//!   fees and hours), as it does for the move.
//!
//! All are exact decimals (USD), in `cost` under their names; the first four are paid once (in
//! `horizon.one_time`), the last monthly.

use super::candidate::{Assumptions, Candidate, Kind};
use super::corpus::Corpus;
use super::extras::Extras;
use super::price::{SECONDS_PER_MONTH, bucket_classes, gb, tiered};
use crate::catalog::{Place, RequestPrice, StorageClass};
use crate::money::Usd;
use crate::units::fmt_duration;
use rust_decimal::Decimal;

/// A month of `class` at `src` for `bytes` billed bytes (its tiers, or the region's price for
/// the place's own class; its free GB taken off).
fn class_month(src: &Place, class: &StorageClass, bytes: u128) -> Decimal {
    let tiers = if class.id == src.class.id {
        src.storage_tiers()
    } else {
        class
            .storage
            .iter()
            .map(|t| (t.up_to_gb.map(|d| d.0), t.per_gb_month.0))
            .collect()
    };
    let gb = Decimal::from_i128_with_scale(i128::try_from(bytes).unwrap_or(i128::MAX), 0)
        / Decimal::from(src.bytes_per_gb());
    tiered((gb - class.free_gb_month.0).max(Decimal::ZERO), &tiers)
}

/// The corpus at the source a month, by class (an inventory's classes, or the source's), with
/// each class's minimum object size and overhead: `(class, billed bytes, stored bytes)`.
fn by_class<'c>(src: &Place<'c>, corpus: &Corpus) -> Vec<(&'c StorageClass, u128, u64)> {
    let mut out: Vec<(&StorageClass, u128, u64)> = Vec::new();
    for (b, class) in corpus.buckets.iter().zip(bucket_classes(src, corpus)) {
        let mut billed = 0u128;
        for (n, size) in b.split() {
            let per = size.max(class.min_object_bytes) + class.overhead_bytes_per_object;
            billed += u128::from(n) * u128::from(per);
        }
        match out.iter_mut().find(|(c, _, _)| c.id == class.id) {
            Some(e) => {
                e.1 += billed;
                e.2 += b.bytes;
            }
            None => out.push((class, billed, b.bytes)),
        }
    }
    out
}

/// The extras of a move, from its time; warnings say what is assumed.
pub fn price_move(src: &Place, corpus: &Corpus, a: &Assumptions, c: &mut Candidate) {
    let seconds = c.time.seconds;
    let month = Decimal::from(SECONDS_PER_MONTH);
    let classes = by_class(src, corpus);
    let source_month: Decimal = classes
        .iter()
        .map(|(class, billed, _)| class_month(src, class, *billed))
        .sum();
    let source_month = if a.extras.source_already_stored {
        Decimal::ZERO
    } else {
        source_month
    };
    let mut e = Extras {
        source_storage: Usd(source_month * seconds / month),
        ..Extras::default()
    };
    if !e.source_storage.is_zero() {
        c.warnings.push(format!(
            "{} (source): the corpus stays billed at the source until the copy is done: {} a month for {}",
            src.provider_id(),
            Usd(source_month),
            fmt_duration(seconds)
        ));
    }
    early_deletion(src, &classes, seconds, a, c, &mut e);
    restored_copy(src, &classes, c, &mut e);
    let copy_seconds = (seconds - c.time.restore_seconds).max(Decimal::ZERO);
    if !a.extras.worker_hourly.is_zero() {
        e.worker_compute = Usd(a.extras.worker_hourly.0
            * Decimal::from(a.workers.max(1))
            * copy_seconds
            / Decimal::from(3600));
        c.warnings.push(format!(
            "workers: {} machine(s) at {}/hour for the {} of copying (not the restore wait): {}",
            a.workers.max(1),
            a.extras.worker_hourly,
            fmt_duration(copy_seconds),
            e.worker_compute
        ));
    }
    e.round_micros();
    c.cost.extras = e;
}

/// `--delete-source`: the days left of the source class's minimum when the move ends.
fn early_deletion(
    src: &Place,
    classes: &[(&StorageClass, u128, u64)],
    seconds: Decimal,
    a: &Assumptions,
    c: &mut Candidate,
    e: &mut Extras,
) {
    let longest = classes
        .iter()
        .map(|(cl, _, _)| cl.min_duration_days)
        .max()
        .unwrap_or(0);
    if !a.extras.delete_source {
        if longest > 0 {
            c.warnings.push(format!(
                "{} (source): a {longest}-day minimum storage duration; deleting the source early is billed for the days left (priced with --delete-source)",
                src.provider_id()
            ));
        }
        return;
    }
    let days_moving = seconds / Decimal::from(86_400);
    for (class, billed, _) in classes {
        let left = (Decimal::from(class.min_duration_days) - days_moving).max(Decimal::ZERO);
        e.source_early_deletion += Usd(class_month(src, class, *billed) * left / Decimal::from(30));
    }
    if longest > 0 {
        c.warnings.push(format!(
            "--delete-source: {} at {} is deleted when the copy is done, {} after it starts; its objects are assumed written when the move starts (their age is not known), so the rest of the {longest}-day minimum is billed: {} (objects older than {longest} days owe nothing)",
            src.class.id,
            src.provider_id(),
            fmt_duration(seconds),
            e.source_early_deletion
        ));
    }
}

/// The temporary restored copy of archive-class objects, at the provider's default class.
fn restored_copy(
    src: &Place,
    classes: &[(&StorageClass, u128, u64)],
    c: &mut Candidate,
    e: &mut Extras,
) {
    let restored: u64 = classes
        .iter()
        .filter(|(cl, _, _)| cl.archive)
        .map(|(_, _, bytes)| *bytes)
        .sum();
    if restored == 0 {
        return;
    }
    let f = &src.provider.file;
    let Some(online) = f.classes.iter().find(|cl| cl.id == f.default_class) else {
        return;
    };
    let copy_seconds = (c.time.seconds - c.time.restore_seconds).max(Decimal::ZERO);
    let days = (copy_seconds / Decimal::from(86_400))
        .ceil()
        .max(Decimal::ONE);
    let month = class_month(src, online, u128::from(restored));
    e.restored_copy = Usd(month * days / Decimal::from(30));
    c.warnings.push(format!(
        "{} (source): restored objects are a temporary copy billed at {} ({} a month) until the copy is done: {days} day(s), {}",
        src.provider_id(),
        online.id,
        Usd(month),
        e.restored_copy
    ));
}

/// A month of restores for reads of an archive-class `store`: the retrieval fees at the tier
/// `--restore-tier` chose (for the source), and the GPU idle of `reads_per_month` restores.
/// Updates the candidate's read items; `is_source`: the store is the source.
pub fn archive_reads(
    store: &Place,
    corpus: &Corpus,
    a: &Assumptions,
    is_source: bool,
    c: &mut Candidate,
) {
    let Some(plan) = c.reads.as_mut() else { return };
    let class = store.class;
    if !class.archive || plan.per_month.is_zero() {
        return;
    }
    let mut hours = class.restore_hours;
    let mut tier_name = "the class's default".to_string();
    if is_source
        && let Some(r) = &a.restore
        && let Some(t) = class.restore_tiers.iter().find(|t| t.id == r.chosen.tier)
    {
        let gb_month = gb(corpus.total_bytes(), store.bytes_per_gb()) * plan.per_month;
        let mut retrieval = Usd(gb_month * t.retrieval_per_gb.0);
        if let Some(rp) = &t.retrieval_request {
            retrieval += request_month(rp, plan.gets_per_month);
        }
        plan.retrieval = retrieval;
        hours = t.hours.or(hours);
        tier_name = format!("the {} tier (--restore-tier)", t.id);
    }
    let assumed = hours.is_none();
    let hours = hours.unwrap_or(12);
    let idle = Usd(a.gpu_hourly.0 * Decimal::from(hours) * plan.per_month);
    let m = Decimal::from(a.months);
    c.cost.read_retrieval = plan.retrieval * m;
    c.cost.reads_per_month = plan.month();
    c.cost.extras.restore_idle_per_month = Usd(idle.micros());
    c.cost.extras.restore_idle = Usd(idle.micros()) * m;
    c.warnings.push(format!(
        "{}: each of the {} reads a month from {} waits for a restore at {tier_name} ({hours} h{}): retrieval {} a month{}",
        if c.kind == Kind::Stay { "stay" } else { c.destination.as_str() },
        plan.per_month.normalize(),
        class.id,
        if assumed { ", assumed: no source gives it" } else { "" },
        plan.retrieval,
        if a.gpu_hourly.is_zero() {
            String::new()
        } else {
            format!(", and the GPUs idle through it: {idle} a month")
        }
    ));
}

/// Requests a month (a fractional count) less the monthly free allowance, as `horizon` prices
/// reads.
fn request_month(p: &RequestPrice, count: Decimal) -> Usd {
    let billed = (count - Decimal::from(p.free_per_month)).max(Decimal::ZERO);
    Usd(billed * p.price.0 / Decimal::from(p.per))
}
