//! The planner: pure functions from (source, destinations, corpus, assumptions) to priced, timed
//! candidates. No I/O here, so every line item can be checked by hand in tests.
//!
//! Line items (all exact decimals, USD):
//! - `egress`: bytes leaving the source. Same provider and region: `transfer.same_region_per_gb`;
//!   same provider, other region: `inter_region_per_gb`; otherwise internet egress, billed per
//!   month (the move's bytes are spread evenly over the months it takes), free allowance taken from
//!   the lowest tier, zero-egress multiples of the stored corpus applied. `--exit-waiver` credits what the
//!   waiver's conditions allow (see [`super::waiver`]).
//! - `source_requests`: LIST pages of 1,000 keys + one GET per object (as `exec` reads by default;
//!   one ranged GET per part of a multipart upload with `--ranged-reads`) + one HEAD of part 1 per
//!   object above the multipart threshold at an S3-API source (such an object is assumed to have
//!   been written in parts, so `exec` reads its part size to recompute the multipart ETag), and
//!   one HEAD per smaller object copied on the server (a CopyObject that replaces the metadata
//!   must know the source's content headers and user metadata).
//! - `retrieval`: per-GB and per-request fees of the source class (per object class from an inventory).
//! - `destination_requests`: LIST pages (the executor diffs against the destination) + one PUT, or
//!   create + parts + complete, + one verifying HEAD per multipart object on GCS and Azure (their
//!   answers to a multipart upload prove nothing; S3-API stores' answers — the MD5 ETag, the
//!   checked Content-MD5, the multipart ETag — verify every write without a HEAD).
//! - `storage_per_month`: the destination class's tiers over the billed size (minimum object size
//!   and per-object overhead applied, free GB removed, monthly minimum applied).
//! - `storage_horizon` = `storage_per_month` × `--months`.
//! - `early_deletion`: if the horizon is shorter than the class's minimum duration, the days left.
//! - `exit_egress`: what leaving the destination again would cost (internet egress of the corpus).
//! - `gpu_idle`: transfer hours × GPU cost per hour, when idling is the option chosen for the time
//!   of the move; `during_move`: the other options' cost (training from the source, a lazy
//!   migration's stall; see [`super::during`]).
//! - `read_stall` (with `--compute-at`): GPU hours lost to a store slower than the GPUs' need, priced
//!   every month of the horizon (see [`super::feed`]).
//!
//! - `read_egress`, `read_requests`, `read_retrieval` (only with `--compute-at`): every month of the
//!   horizon, the corpus read `reads_per_month` times from the destination by the compute location
//!   (see [`super::horizon`]); `reads_per_month` is their monthly sum.
//!
//! `total` = all of the above except `storage_per_month` (counted through `storage_horizon`),
//! `reads_per_month` (counted through the three `read_*` items), `read_stall_per_month`
//! (through `read_stall`) and `exit_egress` (reported
//! beside it).

use super::corpus::Corpus;
use super::price::{source_class_of, storage_month};
use super::requests::{CopyPath, count_requests};
use super::timing::transfer_time;
use crate::catalog::{OverMultiple, Place};
use crate::money::Usd;
use crate::units::{fmt_bytes_si, fmt_count};
use rust_decimal::Decimal;

pub use super::candidate::{
    Assumptions, Bound, Candidate, Cost, Counts, Kind, Measured, Time, rank,
};
pub use super::price::{
    Ledger, SECONDS_PER_MONTH, bucket_classes, gb, internet_egress, months_of, move_egress,
    price_ledger, request_cost, tiered,
};
pub use super::requests::{Api, FROM_URL_MAX_BLOCK, api_of, from_url_copy, server_side_copy};
pub use super::timing::{MeasuredSeconds, binding, measured_seconds};

/// Price and time one move of `corpus` from `src` to `dst`.
pub fn evaluate(src: &Place, dst: &Place, corpus: &Corpus, a: &Assumptions) -> Candidate {
    let mut warnings = Vec::new();
    let total_bytes = corpus.total_bytes();
    let objects = corpus.total_objects();
    let server_side = server_side_copy(src, dst, a);
    let from_url = !server_side && from_url_copy(src, dst, a);
    let path = if server_side {
        CopyPath::ServerSide
    } else if from_url {
        CopyPath::FromUrl
    } else {
        CopyPath::Streamed
    };
    let counts = count_requests(src, dst, corpus, a, path);
    if let Some(why) = super::marking::cannot_take(dst, &counts) {
        warnings.push(format!(
            "{}: {why}: objects like that cannot be copied, whichever way exec sends them",
            dst.provider_id()
        ));
    }
    warnings.extend(super::marking::streamed_note(dst, &counts, from_url));

    let time = time_of(src, dst, corpus, &counts, a, path, &mut warnings);
    let months_moving = months_of(time.seconds);
    let (egress, egress_before_waiver, waiver) =
        source_egress(src, dst, total_bytes, &time, a, &mut warnings);
    let (source_requests, destination_requests) = requests_cost(src, dst, &counts, months_moving);
    let retrieval = retrieval_of(src, corpus, a, &mut warnings);
    let (storage_per_month, storage_horizon, early_deletion) =
        destination_storage(dst, corpus, a, &mut warnings);

    // Leaving the destination later: the whole corpus out over the internet.
    let dst_gb = gb(total_bytes, dst.bytes_per_gb());
    let (exit_egress, _) = internet_egress(dst.egress(), dst_gb, dst_gb, months_moving);
    for c in &dst.egress().caveats {
        warnings.push(format!("{}: {}", dst.provider_id(), c));
    }

    let gpu_idle = Usd(a.gpu_hourly.0 * time.seconds / Decimal::from(3600));
    if objects > 0 && total_bytes / objects.max(1) < 1_000_000 && objects >= 1_000_000 {
        warnings.push(format!(
            "{} objects averaging {}: per-request fees and latency dominate; packing them into shards would cut both",
            fmt_count(objects),
            fmt_bytes_si(total_bytes / objects)
        ));
    }

    let over_move = move_egress(src, dst, total_bytes, total_bytes, months_moving).1;
    let mut cost = Cost {
        egress,
        egress_before_waiver,
        source_requests,
        destination_requests,
        retrieval,
        storage_per_month,
        storage_horizon,
        early_deletion,
        exit_egress,
        gpu_idle,
        ..Cost::default()
    };
    let reads = a.reads.as_ref().map(|r| {
        let p = super::horizon::read_month(dst, corpus, r, &mut warnings);
        super::horizon::apply_reads(&mut cost, &p, a.months);
        p
    });
    let feed = super::feed::apply(dst, corpus, a, &mut cost, &mut warnings);
    let during = super::during::choose(src, dst, corpus, a, &time, &mut cost, &mut warnings);

    let mut c = Candidate {
        kind: Kind::Move,
        destination: dst.given.clone(),
        resolved: dst.canonical(),
        provider: dst.provider_id().to_string(),
        cost,
        time,
        counts,
        warnings,
        reads,
        break_even_month: None,
        server_side,
        from_url,
        restore: a.restore.clone(),
        marks: Default::default(),
        waiver,
        during: Some(during),
        feed,
    };
    super::extra_costs::price_move(src, corpus, a, &mut c);
    super::extra_costs::archive_reads(dst, corpus, a, false, &mut c);
    super::marking::mark(&mut c, src, dst, over_move, a);
    c
}

/// The move's time: the binding bound of its path (requests alone for a copy on the server) and
/// the restore of archive objects at the chosen tier.
fn time_of(
    src: &Place,
    dst: &Place,
    corpus: &Corpus,
    counts: &Counts,
    a: &Assumptions,
    path: CopyPath,
    warnings: &mut Vec<String>,
) -> Time {
    let mut time = transfer_time(src, dst, corpus, counts, a, path);
    if path == CopyPath::FromUrl {
        warnings.push(format!(
            "copied by {} from the source's URL (Put Block From URL: the blob service reads each block of up to {} MiB from a signed source URL; only requests pass through the workers): source GETs are per block, destination PUT-class requests are the blocks and one block list per object, and the workers' NICs and CPU do not bound the time; objects whose source states neither an MD5 nor a CRC64 stream through the workers; plan with --no-server-side for a streamed move",
            dst.provider_id(),
            FROM_URL_MAX_BLOCK >> 20
        ));
    }
    if path == CopyPath::ServerSide {
        // No byte passes through the workers: the path, the NICs and this machine's CPU do not
        // bound the run; its requests do, and the service's own copying where a probe of the
        // destination measured it (otherwise the provider's internal copy rate is unknown).
        let measured = super::server_copy::seconds(dst, corpus, counts, a);
        if let Some(m) = measured {
            time.request_seconds = m.request_seconds;
            time.server_copy_seconds = m.copy_seconds;
            time.start_seconds = m.start_seconds;
            // The small-PUT rate says nothing of copies: the copy rate replaces it.
            time.server_request_seconds = Decimal::ZERO;
        }
        let (bound, seconds) = binding(&[
            (Bound::Requests, time.request_seconds),
            (Bound::RateLimit, time.rate_limit_seconds),
            (Bound::Listing, time.listing_seconds),
            (Bound::ServerRequestRate, time.server_request_seconds),
            (Bound::ServerCopy, time.server_copy_seconds),
        ]);
        time.seconds = seconds + time.start_seconds + time.restore_seconds;
        time.bound = bound;
        let how = if measured.is_some() {
            "the time is the service's copy rate as probed at the destination".to_string()
        } else {
            format!(
                "the time counts requests only, as {} publishes no internal copy rate (`moverctl probe` of the destination measures it)",
                src.provider_id()
            )
        };
        warnings.push(format!(
            "copied server-side ({} to {}, one service: CopyObject / UploadPartCopy, no bytes through the workers, no GETs); {how}; plan with --no-server-side for a streamed move",
            src.provider_id(),
            dst.provider_id(),
        ));
    }
    if let Some(r) = &a.restore {
        let restore = Decimal::from(r.chosen.hours) * Decimal::from(3600);
        time.seconds = time.seconds - time.restore_seconds + restore;
        time.restore_seconds = restore;
    }
    time
}

/// Egress out of the source, the same before an exit waiver's credit, and the waiver checked
/// against its conditions ([`super::waiver`]).
fn source_egress(
    src: &Place,
    dst: &Place,
    total_bytes: u64,
    time: &Time,
    a: &Assumptions,
    warnings: &mut Vec<String>,
) -> (Usd, Usd, Option<super::waiver::WaiverCheck>) {
    let months_moving = months_of(time.seconds);
    let (egress_before_waiver, over) =
        move_egress(src, dst, total_bytes, total_bytes, months_moving);
    if over && src.egress().over_multiple == Some(OverMultiple::PolicyRisk) {
        warnings.push(format!(
            "{}: this egress is above its free multiple of stored data; the provider may limit or suspend the account",
            src.provider_id()
        ));
    }
    let (egress, waiver) = super::waiver::check(
        src,
        dst,
        total_bytes,
        time,
        egress_before_waiver,
        a,
        warnings,
    );
    (egress, egress_before_waiver, waiver)
}

/// Requests at both ends: the source's, the destination's.
fn requests_cost(src: &Place, dst: &Place, counts: &Counts, months_moving: u32) -> (Usd, Usd) {
    let src_class = src.class;
    let source_requests = request_cost(&src_class.list, counts.source_list, months_moving)
        + request_cost(
            &src_class.get,
            counts.source_get + counts.source_head,
            months_moving,
        );
    let dst_class = dst.class;
    let destination_requests =
        request_cost(&dst_class.list, counts.destination_list, months_moving)
            + request_cost(&dst_class.put, counts.destination_put, months_moving)
            + request_cost(&dst_class.get, counts.destination_head, months_moving);

    (source_requests, destination_requests)
}

/// Retrieval out of cold source classes, per object class when an inventory says, and the
/// restore tier's fees.
fn retrieval_of(src: &Place, corpus: &Corpus, a: &Assumptions, warnings: &mut Vec<String>) -> Usd {
    let mut retrieval = Usd::ZERO;
    let mut archive_objects = 0u64;
    let mut restore_hours = 0u32;
    for b in &corpus.buckets {
        let class = source_class_of(src, b.class.as_deref(), warnings);
        if class.archive && a.restore.is_some() {
            // Priced below at the chosen restore tier.
            archive_objects += b.count;
            continue;
        }
        retrieval += Usd(gb(b.bytes, src.bytes_per_gb()) * class.retrieval_per_gb.0);
        if let Some(rp) = &class.retrieval_request {
            retrieval += request_cost(rp, b.count, 1);
        }
        if class.archive {
            archive_objects += b.count;
            restore_hours = restore_hours.max(class.restore_hours.unwrap_or(12));
        }
    }
    if let Some(r) = &a.restore {
        retrieval += r.chosen.fees;
        restore_hours = restore_hours.max(r.chosen.hours);
        warnings.push(r.why.clone());
        if r.chosen.hours_assumed {
            warnings.push(format!(
                "no source gives how long a {} restore takes at {}; {} h is assumed",
                r.chosen.tier,
                src.provider_id(),
                r.chosen.hours
            ));
        }
    }
    if archive_objects > 0 {
        let how = match &a.restore {
            Some(r) => format!("at the {} tier (--restore-tier)", r.chosen.tier),
            None => format!(
                "at {} ({} h{}; choose with --restore-tier bulk, standard, expedited or auto)",
                super::restore::default_tier(src),
                restore_hours,
                if src.class.restore_hours.is_none() {
                    ", assumed: no source gives it"
                } else {
                    ""
                }
            ),
        };
        warnings.push(format!(
            "{} objects are in archive classes at the source and must be restored first, {how}; the restore is priced under retrieval",
            fmt_count(archive_objects),
        ));
    }

    retrieval
}

/// Destination storage: a month, over the horizon, and early deletion before the class's
/// minimum duration.
fn destination_storage(
    dst: &Place,
    corpus: &Corpus,
    a: &Assumptions,
    warnings: &mut Vec<String>,
) -> (Usd, Usd, Usd) {
    let storage_per_month = storage_month(dst, corpus, warnings);
    let storage_horizon = storage_per_month * Decimal::from(a.months);
    let horizon_days = a.months * 30;
    let min_days = dst.class.min_duration_days;
    let early_deletion = if min_days > horizon_days {
        storage_per_month * (Decimal::from(min_days - horizon_days) / Decimal::from(30))
    } else {
        Usd::ZERO
    };
    if min_days > 0 {
        warnings.push(format!(
            "{}: {}-day minimum storage duration; objects deleted or overwritten sooner are billed for the full {} days",
            dst.provider_id(),
            min_days,
            min_days
        ));
    }
    if dst.class.archive {
        warnings.push(format!(
            "{}: class {} is an archive tier; reading the data back needs a restore that takes hours",
            dst.provider_id(),
            dst.class.id
        ));
    }

    (storage_per_month, storage_horizon, early_deletion)
}
