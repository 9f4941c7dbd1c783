//! What the GPUs do while the move runs (issue 29): each option priced, the cheapest chosen.
//!
//! - **idle** (always possible): the cluster waits for the whole move, `hours x --gpu-hourly`
//!   (`gpu_idle`).
//! - **train from the source** (with `--compute-at`, the source not in an archive class): no idle;
//!   the GPUs read the corpus from the source at `--reads-per-month` for the move's duration, priced
//!   by the source's rules towards the compute site (as "stay" is priced) for each whole month of
//!   the move and a share of a month for the rest: `w` whole months of
//!   `read_month(R)` plus `read_month(R x f)` for the fraction `f` left. A source that cannot feed
//!   the GPUs ([`super::feed`]) adds its stall: `move hours x (1 - supply / need)` GPU hours.
//! - **lazy** (read-through) migration where the destination offers it for this source (its
//!   `[lazy_migration]`: Cloudflare Sippy, Tigris shadow buckets), with `--compute-at`: training
//!   starts at once against the destination, and each object's first read pulls it over from the
//!   source, paying the same egress and requests as the move (already priced), so nothing is added
//!   but a stall when the move's path (`--bandwidth`) is slower than the GPUs' need during that
//!   first pass: `corpus / bandwidth - corpus / need` hours. Caveat, printed: the copy is not
//!   verified until the tail is forced (objects never read are never copied).
//!
//! The chosen option's cost is `gpu_idle` (idle) or `during_move` (the other two); the other stays
//! zero. Ties go to idle, then training from the source.

use super::candidate::{Assumptions, Cost, Reads, Time};
use super::corpus::Corpus;
use super::horizon::read_month;
pub use super::options::{During, DuringMove, DuringOption};
use super::price::SECONDS_PER_MONTH;
use super::requests::{Api, api_of};
use crate::catalog::Place;
use crate::money::Usd;
use crate::units::{fmt_bytes, fmt_duration};
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;

/// Price each option for the move of `corpus` from `src` to `dst` taking `time`, choose the
/// cheapest, and put its cost in `cost` (`gpu_idle` is zeroed unless idle is chosen).
pub fn choose(
    src: &Place,
    dst: &Place,
    corpus: &Corpus,
    a: &Assumptions,
    time: &Time,
    cost: &mut Cost,
    warnings: &mut Vec<String>,
) -> DuringMove {
    let idle = DuringOption {
        option: During::Idle,
        available: true,
        cost: cost.gpu_idle,
        note: format!(
            "{} at {}/hour for {}",
            cost.gpu_idle,
            a.gpu_hourly,
            fmt_duration(time.seconds)
        ),
    };
    let lazy = dst.provider.file.lazy_migration.as_ref().filter(|l| {
        l.sources.iter().any(|s| s == src.provider_id())
            || (l.any_s3_source && api_of(src) == Api::S3)
    });
    let options = vec![
        idle,
        from_source(src, corpus, a, time),
        lazy_option(src, dst, corpus, a, lazy.map(|l| l.name.as_str())),
    ];
    let best = (options.iter())
        .filter(|o| o.available)
        .min_by_key(|o| (o.cost, o.option))
        .expect("idle is always available");
    let chosen = best.option;
    match chosen {
        During::Idle => {
            if !a.gpu_hourly.is_zero() {
                warnings.push(format!(
                    "the GPU cluster idles for the whole transfer ({}): {} at {}/hour",
                    fmt_duration(time.seconds),
                    cost.gpu_idle,
                    a.gpu_hourly
                ));
            }
        }
        During::FromSource => {
            warnings.push(format!(
                "{}: during the move ({}) the GPUs train from the source ({}): {} instead of {} idle",
                dst.provider_id(),
                fmt_duration(time.seconds),
                best.note,
                best.cost,
                cost.gpu_idle
            ));
        }
        During::Lazy => {
            let l = lazy.expect("lazy is available only where offered");
            warnings.push(format!(
                "{}: lazy migration ({}) from {}: training starts at once and each object is copied by its first read ({}); the copy is not verified until the tail is forced: objects never read are never copied, so run `moverctl exec` for the rest (it skips what is there and verifies every object) before deleting the source",
                dst.provider_id(),
                l.name,
                src.provider_id(),
                best.note
            ));
        }
    }
    cost.during_move = if chosen == During::Idle {
        Usd::ZERO
    } else {
        best.cost
    };
    if chosen != During::Idle {
        cost.gpu_idle = Usd::ZERO;
    }
    DuringMove {
        chosen,
        options,
        lazy_name: lazy.map(|l| l.name.clone()),
    }
}

fn unavailable(option: During, note: String) -> DuringOption {
    DuringOption {
        option,
        available: false,
        cost: Usd::ZERO,
        note,
    }
}

/// Training from the source for the move's duration: its reads, and its stall.
fn from_source(src: &Place, corpus: &Corpus, a: &Assumptions, time: &Time) -> DuringOption {
    let Some(r) = &a.reads else {
        return unavailable(
            During::FromSource,
            "needs --compute-at and the reads (where the GPUs run)".to_string(),
        );
    };
    if src.class.archive {
        return unavailable(
            During::FromSource,
            format!(
                "the source class {} is an archive tier: every read needs a restore",
                src.class.id
            ),
        );
    }
    let month = Decimal::from(SECONDS_PER_MONTH);
    let whole = (time.seconds / month).floor();
    let frac = time.seconds / month - whole;
    let mut scratch = Vec::new();
    let one = read_month(src, corpus, r, &mut scratch).month();
    let part = Reads {
        compute: r.compute.clone(),
        per_month: r.per_month * frac,
    };
    let rest = read_month(src, corpus, &part, &mut scratch).month();
    // Rounded to the micro-dollar, as every amount the JSON prints, so items add up exactly.
    let reads = Usd((one * whole + rest).micros());
    let stall = stall_during(src, corpus, a, time);
    let mut note = format!(
        "{} of reads from {} over {}",
        reads,
        src.provider_id(),
        fmt_duration(time.seconds)
    );
    if let Some((hours, usd)) = stall {
        note.push_str(&format!(
            ", plus {} GPU hours stalled on the source ({usd})",
            hours.round_dp(1).normalize()
        ));
    }
    DuringOption {
        option: During::FromSource,
        available: true,
        cost: reads + stall.map_or(Usd::ZERO, |s| s.1),
        note,
    }
}

/// GPU hours lost while training from a source slower than the need, over the move.
fn stall_during(
    src: &Place,
    corpus: &Corpus,
    a: &Assumptions,
    time: &Time,
) -> Option<(Decimal, Usd)> {
    let (need, _) = a.feed.need_of(corpus, a)?;
    let (supply, _) = a.feed.supply_of(src)?;
    if supply >= need || need.is_zero() {
        return None;
    }
    let hours = time.seconds / Decimal::from(3600) * (Decimal::ONE - supply / need);
    Some((hours, Usd(Usd(a.gpu_hourly.0 * hours).micros())))
}

/// Lazy migration: nothing added to the move's own fees but the first pass's stall on the path.
fn lazy_option(
    src: &Place,
    dst: &Place,
    corpus: &Corpus,
    a: &Assumptions,
    name: Option<&str>,
) -> DuringOption {
    let Some(name) = name else {
        return unavailable(
            During::Lazy,
            format!(
                "{} offers no lazy (read-through) migration from {}",
                dst.provider_id(),
                src.provider_id()
            ),
        );
    };
    if a.reads.is_none() {
        return unavailable(
            During::Lazy,
            "needs --compute-at and the reads (where the GPUs run)".to_string(),
        );
    }
    if src.class.archive {
        return unavailable(
            During::Lazy,
            format!(
                "the source class {} is an archive tier: a read-through cannot restore it",
                src.class.id
            ),
        );
    }
    let bytes = Decimal::from(corpus.total_bytes());
    let stall_hours = match a.feed.need_of(corpus, a) {
        Some((need, _)) if need > a.bandwidth && !need.is_zero() && !a.bandwidth.is_zero() => {
            (bytes / a.bandwidth - bytes / need) / Decimal::from(3600)
        }
        _ => Decimal::ZERO,
    };
    let stall = Usd(Usd(a.gpu_hourly.0 * stall_hours).micros());
    let note = if stall_hours.is_zero() {
        format!(
            "{name}: the first reads pull the {} over at the move's egress and request fees (priced as the move); no idle",
            fmt_bytes(bytes.to_u64().unwrap_or(u64::MAX))
        )
    } else {
        format!(
            "{name}: the first reads pull the {} over at the move's fees; the first pass is held to --bandwidth: {} GPU hours stalled ({stall})",
            fmt_bytes(bytes.to_u64().unwrap_or(u64::MAX)),
            stall_hours.round_dp(1).normalize()
        )
    };
    DuringOption {
        option: During::Lazy,
        available: true,
        cost: stall,
        note,
    }
}
