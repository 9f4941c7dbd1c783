//! The planner: pure functions from (source, destinations, corpus, assumptions) to priced, timed
//! candidates. No I/O here, so every line item can be checked by hand in tests.
//!
//! Line items (all exact decimals, USD):
//! - `egress`: bytes leaving the source. Same provider and region: `transfer.same_region_per_gb`;
//!   same provider, other region: `inter_region_per_gb`; otherwise internet egress, billed per
//!   month (the move's bytes are spread evenly over the months it takes), free allowance taken from
//!   the lowest tier, zero-egress multiples of the stored corpus applied. `--exit-waiver` credits it.
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
//! - `gpu_idle`: transfer hours × GPU cost per hour.
//!
//! - `read_egress`, `read_requests`, `read_retrieval` (only with `--compute-at`): every month of the
//!   horizon, the corpus read `reads_per_month` times from the destination by the compute location
//!   (see [`super::horizon`]); `reads_per_month` is their monthly sum.
//!
//! `total` = all of the above except `storage_per_month` (counted through `storage_horizon`),
//! `reads_per_month` (counted through the three `read_*` items) and `exit_egress` (reported
//! beside it).

use super::corpus::Corpus;
use crate::catalog::parts::{PartRule, Upload, part_plan};
use crate::catalog::{Egress, OverMultiple, Place, RateScope, RequestPrice, StorageClass};
use crate::money::Usd;
use crate::units::{fmt_bytes, fmt_count, fmt_duration};
use rust_decimal::Decimal;
use rust_decimal::prelude::*;

pub const SECONDS_PER_MONTH: u64 = 30 * 86_400;

/// Everything the model assumes that is not a price; each is a flag.
#[derive(Debug, Clone)]
pub struct Assumptions {
    pub months: u32,
    /// Path bandwidth between the two providers, bytes/s.
    pub bandwidth: Decimal,
    pub workers: u32,
    /// NIC of one worker, bytes/s.
    pub worker_nic: Decimal,
    /// Objects in flight per worker.
    pub concurrency: u32,
    /// What one HTTP stream sustains, bytes/s.
    pub stream_throughput: Decimal,
    /// Time to first byte of one request, milliseconds.
    pub latency_ms: u32,
    /// Key prefixes the corpus is spread over (per-prefix request limits scale with it).
    pub prefixes: u32,
    /// Read each part of a large object with its own ranged GET (`exec --ranged-reads`) instead of
    /// one GET per object.
    pub ranged_reads: bool,
    pub gpu_hourly: Usd,
    pub exit_waiver: bool,
    pub part_rule: PartRule,
    /// Where training runs and how often it reads the corpus (`--compute-at`, `--reads-per-month`).
    pub reads: Option<super::horizon::Reads>,
    /// The restore tier chosen for archive-class source objects (`--restore-tier`); `None`: each
    /// class's default restore.
    pub restore: Option<super::restore::Restore>,
    /// What saved probes measured of the two ends and of this machine (see [`Measured`]); `None`
    /// without a probe: the bounds above alone time the run.
    pub measured: Option<Measured>,
    /// `exec` copies on the server where both ends are one S3 service (`--no-server-side`: false);
    /// see [`server_side_copy`].
    pub server_side: bool,
    /// Whether the two locations are one S3 service (one endpoint), when both are known (`--src`
    /// and `--dst`); `None`: judged from the catalog places.
    pub same_service: Option<bool>,
}

/// Bounds a probe measured. Each is optional: a bound that was not measured does not bind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Measured {
    /// Requests per second the source serves with the run's objects in flight (small GETs).
    pub source_get_per_second: Option<Decimal>,
    /// Requests per second the destination takes with the run's objects in flight (small PUTs).
    pub destination_put_per_second: Option<Decimal>,
    /// The best small-GET rate the source reached at any number in flight: its capacity, which
    /// on a shared host is a share of this machine's cores.
    pub source_get_peak_per_second: Option<Decimal>,
    /// The best small-PUT rate the destination reached at any number in flight.
    pub destination_put_peak_per_second: Option<Decimal>,
    /// Seconds of one small GET with nothing else in flight (1 / the rate at one in flight):
    /// what each object waits for its GET, whatever else runs.
    pub source_get_one_seconds: Option<Decimal>,
    /// Seconds of one small PUT with nothing else in flight.
    pub destination_put_one_seconds: Option<Decimal>,
    /// Aggregate bytes/s the source serves to parallel streams (GET).
    pub source_get_bytes_per_second: Option<Decimal>,
    /// Aggregate bytes/s the destination takes from parallel streams (PUT).
    pub destination_put_bytes_per_second: Option<Decimal>,
    /// The engine's CPU seconds per GiB copied (read, hash, write) on this machine.
    pub cpu_seconds_per_gib: Option<Decimal>,
    /// The part of it spent hashing (MD5 + CRC64) and copying the bytes in memory: work the
    /// probe's request-rate and throughput measurements did not include (they only send and
    /// receive).
    pub hash_cpu_seconds_per_gib: Option<Decimal>,
    /// Cores the engine can use.
    pub cores: u32,
    /// Both ends are served from this machine (loopback endpoints or local folders): serving the
    /// GETs, taking the PUTs and the engine's own hashing compete for the same cores, so their
    /// seconds add up instead of overlapping.
    pub shared_host: bool,
}

impl Default for Assumptions {
    fn default() -> Self {
        Assumptions {
            months: 12,
            bandwidth: Decimal::from(1_250_000_000u64), // 10 Gbit/s
            workers: 1,
            worker_nic: Decimal::from(3_125_000_000u64), // 25 Gbit/s
            concurrency: 64,
            stream_throughput: Decimal::from(90_000_000u64), // 90 MB/s
            latency_ms: 30,
            prefixes: 1,
            ranged_reads: false,
            gpu_hourly: Usd::ZERO,
            exit_waiver: false,
            part_rule: PartRule::default(),
            reads: None,
            restore: None,
            measured: None,
            server_side: true,
            same_service: None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cost {
    pub egress: Usd,
    /// Egress before an exit waiver's credit (equal to `egress` without `--exit-waiver`).
    pub egress_before_waiver: Usd,
    pub source_requests: Usd,
    pub destination_requests: Usd,
    pub retrieval: Usd,
    pub storage_per_month: Usd,
    pub storage_horizon: Usd,
    pub early_deletion: Usd,
    pub exit_egress: Usd,
    pub gpu_idle: Usd,
    /// Reads over the horizon: egress to the compute location, GET requests, retrieval fees.
    pub read_egress: Usd,
    pub read_requests: Usd,
    pub read_retrieval: Usd,
    /// The three read items of one month.
    pub reads_per_month: Usd,
}

impl Cost {
    pub fn total(&self) -> Usd {
        self.egress
            + self.source_requests
            + self.destination_requests
            + self.retrieval
            + self.storage_horizon
            + self.early_deletion
            + self.gpu_idle
            + self.read_egress
            + self.read_requests
            + self.read_retrieval
    }

    /// What is paid once, before the horizon's months: the move and the GPUs idling through it.
    pub fn one_time(&self) -> Usd {
        self.egress
            + self.source_requests
            + self.destination_requests
            + self.retrieval
            + self.gpu_idle
    }

    /// What every month of the horizon costs: storage and reads.
    pub fn monthly(&self) -> Usd {
        self.storage_per_month + self.reads_per_month
    }

    /// Named items, in report order (storage per month and exit egress are beside the total).
    pub fn items(&self) -> [(&'static str, Usd); 14] {
        [
            ("egress", self.egress),
            ("source_requests", self.source_requests),
            ("destination_requests", self.destination_requests),
            ("retrieval", self.retrieval),
            ("storage_per_month", self.storage_per_month),
            ("storage_horizon", self.storage_horizon),
            ("early_deletion", self.early_deletion),
            ("exit_egress", self.exit_egress),
            ("gpu_idle", self.gpu_idle),
            ("read_egress", self.read_egress),
            ("read_requests", self.read_requests),
            ("read_retrieval", self.read_retrieval),
            ("reads_per_month", self.reads_per_month),
            ("total", self.total()),
        ]
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Bound {
    /// Path bandwidth, NICs and per-stream throughput.
    #[default]
    Bandwidth,
    /// Each object's request latencies over the slots in flight.
    Requests,
    /// A provider's published request-rate limit.
    RateLimit,
    Listing,
    /// Objects/s the source (GET) or destination (PUT) served under concurrency in a probe.
    ServerRequestRate,
    /// Aggregate bytes/s the source or destination sustained under concurrency in a probe.
    ServerThroughput,
    /// The engine's CPU seconds per GiB (hashing, copies, HTTP) over this machine's cores.
    ClientCpu,
}

impl Bound {
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Bandwidth => "bandwidth",
            Bound::Requests => "requests",
            Bound::RateLimit => "rate-limit",
            Bound::Listing => "listing",
            Bound::ServerRequestRate => "server request rate",
            Bound::ServerThroughput => "server throughput",
            Bound::ClientCpu => "client CPU",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Time {
    pub seconds: Decimal,
    pub bound: Bound,
    pub bandwidth_seconds: Decimal,
    pub request_seconds: Decimal,
    pub rate_limit_seconds: Decimal,
    pub listing_seconds: Decimal,
    /// Hours waiting for archive restores before the copy can read (added to `seconds`).
    pub restore_seconds: Decimal,
    /// The bandwidth actually assumed: the lowest of path, NICs and streams (bytes/s).
    pub effective_bandwidth: Decimal,
    /// Measured bounds (zero without a probe): objects over the slower end's request rate,
    /// bytes over the slower end's aggregate throughput, and the engine's CPU over the cores.
    pub server_request_seconds: Decimal,
    pub server_throughput_seconds: Decimal,
    pub client_cpu_seconds: Decimal,
    /// With both ends on this machine (`Measured::shared_host`): the engine's hashing and copying
    /// CPU over the cores, which takes cores from the servers; included in
    /// `server_request_seconds` and `server_throughput_seconds` (zero otherwise).
    pub shared_hashing_seconds: Decimal,
}

/// Request counts by end and billing class.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub source_list: u64,
    pub source_get: u64,
    /// HEADs of part 1 of objects written in parts at an S3-API source.
    pub source_head: u64,
    pub retrieval_requests: u64,
    pub destination_list: u64,
    pub destination_put: u64,
    pub destination_head: u64,
    pub multipart_objects: u64,
    pub parts: u64,
    /// Objects the destination cannot take (too large).
    pub unplaceable_objects: u64,
    pub billed_bytes: u64,
    /// Largest part size chosen for any object (0 when nothing is multipart).
    pub max_part_size: u64,
}

/// A candidate is a move to a destination, or staying where the data is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Move,
    Stay,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Move => "move",
            Kind::Stay => "stay",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Candidate {
    pub kind: Kind,
    pub destination: String,
    pub resolved: String,
    pub provider: String,
    pub cost: Cost,
    pub time: Time,
    pub counts: Counts,
    pub warnings: Vec<String>,
    /// How the compute location reads from this candidate's store (with `--compute-at`).
    pub reads: Option<super::horizon::ReadPlan>,
    /// First month from which this candidate has cost no more than staying, to the end of the
    /// horizon (0: from the start); `None` if never within the horizon, or for "stay" itself.
    pub break_even_month: Option<u32>,
    /// The move is priced and timed as a server-side copy ([`server_side_copy`]).
    pub server_side: bool,
    /// The move is priced and timed as a copy the destination fetches from the source's URL
    /// ([`from_url_copy`]).
    pub from_url: bool,
    /// The restore tier priced, and why (archive sources with `--restore-tier`).
    pub restore: Option<super::restore::Restore>,
}

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
    if counts.unplaceable_objects > 0 {
        warnings.push(format!(
            "{}: {} objects are larger than its {} object limit (or need more than {} parts) and cannot be copied",
            dst.provider_id(),
            fmt_count(counts.unplaceable_objects),
            fmt_bytes(dst.limits().max_object_bytes),
            dst.limits().max_parts
        ));
    }

    let mut time = transfer_time(src, dst, corpus, &counts, a, path);
    if from_url {
        warnings.push(format!(
            "copied by {} from the source's URL (Put Block From URL: the blob service reads each block of up to {} MiB from a signed source URL; only requests pass through the workers): source GETs are per block, destination PUT-class requests are the blocks and one block list per object, and the workers' NICs and CPU do not bound the time; objects whose source states neither an MD5 nor a CRC64 stream through the workers; plan with --no-server-side for a streamed move",
            dst.provider_id(),
            FROM_URL_MAX_BLOCK >> 20
        ));
    }
    if server_side {
        // No byte passes through the workers: the path, the NICs and this machine's CPU do not
        // bound the run; its requests do (the provider's internal copy rate is not published).
        let (bound, seconds) = binding(&[
            (Bound::Requests, time.request_seconds),
            (Bound::RateLimit, time.rate_limit_seconds),
            (Bound::Listing, time.listing_seconds),
            (Bound::ServerRequestRate, time.server_request_seconds),
        ]);
        time.seconds = seconds + time.restore_seconds;
        time.bound = bound;
        warnings.push(format!(
            "copied server-side ({} to {}, one service: CopyObject / UploadPartCopy, no bytes through the workers, no GETs); the time counts requests only, as {} publishes no internal copy rate; plan with --no-server-side for a streamed move",
            src.provider_id(),
            dst.provider_id(),
            src.provider_id()
        ));
    }
    if let Some(r) = &a.restore {
        let restore = Decimal::from(r.chosen.hours) * Decimal::from(3600);
        time.seconds = time.seconds - time.restore_seconds + restore;
        time.restore_seconds = restore;
    }
    let months_moving = months_of(time.seconds);

    // Egress out of the source.
    let same_provider = src.provider_id() == dst.provider_id();
    let (egress_before_waiver, over) =
        move_egress(src, dst, total_bytes, total_bytes, months_moving);
    if over && src.egress().over_multiple == Some(OverMultiple::PolicyRisk) {
        warnings.push(format!(
            "{}: this egress is above its free multiple of stored data; the provider may limit or suspend the account",
            src.provider_id()
        ));
    }
    let mut egress = egress_before_waiver;
    if a.exit_waiver && !same_provider {
        match &src.provider.file.exit_waiver {
            Some(w) if !egress_before_waiver.is_zero() => {
                egress = Usd::ZERO;
                warnings.push(format!(
                    "exit waiver: {} of egress from {} is assumed credited; conditions: {}",
                    egress_before_waiver,
                    src.provider_id(),
                    waiver_conditions(w)
                ));
            }
            Some(_) => {}
            None => warnings.push(format!(
                "--exit-waiver: {} has no exit waiver in the catalog; egress is charged in full",
                src.provider_id()
            )),
        }
    }

    // Requests at both ends.
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

    // Retrieval out of cold source classes, per object class when an inventory says.
    let mut retrieval = Usd::ZERO;
    let mut archive_objects = 0u64;
    let mut restore_hours = 0u32;
    for b in &corpus.buckets {
        let class = source_class_of(src, b.class.as_deref(), &mut warnings);
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
        warnings.push(format!(
            "{} objects are in archive classes at the source and must be restored first (about {} h); the restore is priced under retrieval",
            fmt_count(archive_objects),
            restore_hours
        ));
    }

    // Destination storage.
    let storage_per_month = storage_month(dst, corpus, &mut warnings);
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

    // Leaving the destination later: the whole corpus out over the internet.
    let dst_gb = gb(total_bytes, dst.bytes_per_gb());
    let (exit_egress, _) = internet_egress(dst.egress(), dst_gb, dst_gb, months_moving);
    for c in &dst.egress().caveats {
        warnings.push(format!("{}: {}", dst.provider_id(), c));
    }

    let gpu_idle = Usd(a.gpu_hourly.0 * time.seconds / Decimal::from(3600));
    if !a.gpu_hourly.is_zero() {
        warnings.push(format!(
            "the GPU cluster idles for the whole transfer ({}): {} at {}/hour",
            fmt_duration(time.seconds),
            gpu_idle,
            a.gpu_hourly
        ));
    }
    if objects > 0 && total_bytes / objects.max(1) < 1_000_000 && objects >= 1_000_000 {
        warnings.push(format!(
            "{} objects averaging {}: per-request fees and latency dominate; packing them into shards would cut both",
            fmt_count(objects),
            fmt_bytes(total_bytes / objects)
        ));
    }

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

    Candidate {
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
    }
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

fn waiver_conditions(w: &crate::catalog::ExitWaiver) -> String {
    let mut c = Vec::new();
    if w.requires_full_exit {
        c.push("move all data and workloads off the provider".to_string());
    }
    c.push(format!("finish within {} days", w.window_days));
    if w.requires_approval {
        c.push("needs the provider's approval first".to_string());
    }
    if w.credit_not_waiver {
        c.push("paid back as a credit, not waived up front".to_string());
    }
    if w.premium_tier_only {
        c.push("premium network tier only".to_string());
    }
    if w.storage_egress_only {
        c.push("storage egress only".to_string());
    }
    c.extend(w.conditions.iter().cloned());
    c.join("; ")
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
            src.inter_region_per_gb()
        };
        return (Usd(src_gb * rate), false);
    }
    internet_egress(src.egress(), src_gb, gb(stored, src.bytes_per_gb()), months)
}

/// What a run's counted requests and bytes cost, priced with the same catalog a plan used.
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

/// The API a provider's stores speak, as far as the executor's requests differ by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    S3,
    Gcs,
    Azure,
}

/// `gcp` is GCS, `azure` is Azure Blob; every other provider (`onprem` included: an S3-compatible
/// server; a local folder costs no requests and no fees either way) speaks S3.
pub fn api_of(p: &Place) -> Api {
    match p.provider_id() {
        "gcp" => Api::Gcs,
        "azure" => Api::Azure,
        _ => Api::S3,
    }
}

/// Whether `exec` would copy this move on the server: both ends S3-API stores of one provider
/// in one region (one endpoint; `exec` also needs one set of credentials), not an archive
/// class, and not the generic `onprem` provider (two on-prem clusters are two services).
/// Between regions `exec` streams (its server-side copy needs one endpoint), and so does the plan.
/// Where both locations are known, whether they are one service decides instead of the catalog
/// (an on-prem cluster's two buckets are one service).
pub fn server_side_copy(src: &Place, dst: &Place, a: &Assumptions) -> bool {
    let one_service = match a.same_service {
        Some(same) => same,
        None => {
            src.provider_id() == dst.provider_id()
                && src.region.id == dst.region.id
                && src.provider.file.kind != crate::catalog::ProviderKind::Onprem
        }
    };
    a.server_side
        && one_service
        && api_of(src) == Api::S3
        && api_of(dst) == Api::S3
        && !src.class.archive
}

/// Whether `exec` would have the destination fetch each block from the source's URL (Put Block
/// From URL): an Azure Blob destination and an S3-API or Azure source of a cloud provider (a
/// signed URL the blob service can reach; not `onprem`, not an archive class), copies on the
/// server allowed. Objects whose source states no digest stream (the plan cannot tell them).
pub fn from_url_copy(src: &Place, dst: &Place, a: &Assumptions) -> bool {
    a.server_side
        && api_of(dst) == Api::Azure
        && matches!(api_of(src), Api::S3 | Api::Azure)
        && src.provider.file.kind != crate::catalog::ProviderKind::Onprem
        && !src.class.archive
}

/// The largest block the blob service fetches from a URL (`exec`'s limit for Put Block From URL).
pub const FROM_URL_MAX_BLOCK: u64 = crate::catalog::parts::MAX_FROM_URL_BLOCK;

/// How `exec` moves the bytes of a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CopyPath {
    /// Through the workers: GET at the source, PUT at the destination.
    Streamed,
    /// CopyObject / UploadPartCopy within one S3 service: nothing read at the source.
    ServerSide,
    /// Put Block From URL: the destination reads each block from the source.
    FromUrl,
}

/// The requests `exec` makes with its defaults (see the module comment). A server-side copy of
/// a multipart object is one CopyObject where the destination keeps a copied object's parts
/// (`copy_keeps_multipart_etag`), up to its single-PUT limit.
fn count_requests(
    src: &Place,
    dst: &Place,
    corpus: &Corpus,
    a: &Assumptions,
    path: CopyPath,
) -> Counts {
    let whole_copy = path == CopyPath::ServerSide
        && dst.limits().copy_keeps_multipart_etag == crate::catalog::Tristate::Yes;
    let mut c = Counts::default();
    let objects = corpus.total_objects();
    c.source_list = objects.div_ceil(1000).max(1);
    c.destination_list = c.source_list;
    let s3_source = api_of(src) == Api::S3;
    let head_after_multipart = matches!(api_of(dst), Api::Gcs | Api::Azure);
    for b in &corpus.buckets {
        for (n, size) in b.split() {
            if n == 0 {
                continue;
            }
            if s3_source && size > a.part_rule.threshold {
                c.source_head += n;
            } else if path == CopyPath::ServerSide {
                // A single CopyObject replaces the metadata (to add moverctl's keys), so one
                // HEAD first learns the source's content headers and user metadata.
                c.source_head += n;
            }
            if path == CopyPath::FromUrl {
                // One Put Block From URL per block (the service GETs its range at the source),
                // blocks of the streamed copy's part size up to the call's limit, and a block
                // list per object.
                let mut limits = dst.limits().clone();
                limits.max_part_bytes = limits.max_part_bytes.min(FROM_URL_MAX_BLOCK);
                let block = match part_plan(size, &limits, a.part_rule) {
                    Ok(Upload::Single) => size.clamp(1, FROM_URL_MAX_BLOCK),
                    Ok(Upload::Multipart { part_size, .. }) => part_size,
                    Err(_) => {
                        c.unplaceable_objects += n;
                        continue;
                    }
                };
                let blocks = size.div_ceil(block).max(1);
                if blocks > 1 {
                    c.multipart_objects += n;
                    c.parts += n * blocks;
                    c.max_part_size = c.max_part_size.max(block);
                }
                c.source_get += n * blocks;
                c.destination_put += n * (blocks + 1);
                continue;
            }
            match part_plan(size, dst.limits(), a.part_rule) {
                Ok(Upload::Single) => {
                    c.source_get += n;
                    c.destination_put += n;
                }
                Ok(Upload::Multipart { .. })
                    if whole_copy && size <= dst.limits().max_single_put_bytes =>
                {
                    c.source_get += n;
                    c.destination_put += n;
                }
                Ok(Upload::Multipart { part_size, parts }) => {
                    c.multipart_objects += n;
                    c.parts += n * parts;
                    c.source_get += if a.ranged_reads { n * parts } else { n };
                    c.destination_put += n * (parts + 2);
                    if head_after_multipart {
                        c.destination_head += n;
                    }
                    c.max_part_size = c.max_part_size.max(part_size);
                }
                Err(_) => c.unplaceable_objects += n,
            }
        }
    }
    if path == CopyPath::ServerSide {
        // CopyObject / UploadPartCopy at the destination; nothing is read from the source.
        c.source_get = 0;
    }
    c
}

/// The catalog class an inventory's storage-class name means (`GLACIER` → `glacier-flexible`).
fn inventory_class<'c>(src: &Place<'c>, name: &str) -> Option<&'c StorageClass> {
    let norm = name.trim().to_ascii_lowercase().replace('_', "-");
    let id = match norm.as_str() {
        "glacier" => "glacier-flexible",
        "reduced-redundancy" | "intelligent-tiering" => "standard",
        other => other,
    };
    src.provider.file.classes.iter().find(|c| c.id == id)
}

fn source_class_of<'c>(
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
                fmt_bytes(class.min_object_bytes),
                fmt_bytes(class.min_object_bytes)
            )
        } else {
            format!(
                "{} of overhead is billed per object",
                fmt_bytes(class.overhead_bytes_per_object)
            )
        };
        warnings.push(format!(
            "{}: {why}, adding {} of billed size and {}/month",
            dst.provider_id(),
            fmt_bytes(u64::try_from(billed - raw).unwrap_or(u64::MAX)),
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

fn transfer_time(
    src: &Place,
    dst: &Place,
    corpus: &Corpus,
    c: &Counts,
    a: &Assumptions,
    path: CopyPath,
) -> Time {
    let bytes = Decimal::from(corpus.total_bytes());
    let objects = corpus.total_objects();
    let workers = Decimal::from(a.workers.max(1));
    let slots = Decimal::from(a.concurrency.max(1)) * workers;
    // Copied from the source's URL, the bytes cross the path between the two providers, not the
    // workers' NICs.
    let through_host = path == CopyPath::Streamed;
    let nics = if through_host {
        a.worker_nic * workers
    } else {
        a.bandwidth
    };
    let effective_bandwidth = a.bandwidth.min(nics).min(a.stream_throughput * slots);
    let bandwidth_seconds = bytes / effective_bandwidth;

    // Each object holds a slot for its requests' latencies: GET, PUT (or create, parts, complete —
    // parts run in parallel), HEAD.
    // A probe's rates with one in flight give a small GET's and a small PUT's own time (they can
    // differ by 30x: a server that holds a small GET answer for a delayed ACK); HEADs and
    // the rest take the latency assumption.
    let latency = Decimal::from(a.latency_ms) / Decimal::from(1000);
    let own = |t: Option<Decimal>| t.filter(|t| *t > Decimal::ZERO).unwrap_or(latency);
    let m = a.measured.as_ref();
    let get = own(m.and_then(|m| m.source_get_one_seconds));
    let put = own(m.and_then(|m| m.destination_put_one_seconds));
    let single = objects - c.multipart_objects - c.unplaceable_objects.min(objects);
    // Single: GET, PUT, HEAD. Multipart: GET, HEAD, create, parts (in parallel), complete.
    let slot_seconds = Decimal::from(single) * (get + put + latency)
        + Decimal::from(c.multipart_objects) * (get + latency + put * Decimal::from(3));
    let request_seconds = slot_seconds / slots;

    let scale = |scope: Option<RateScope>| match scope {
        Some(RateScope::Prefix) => Decimal::from(a.prefixes.max(1)),
        _ => Decimal::ONE,
    };
    let mut rate_limit_seconds = Decimal::ZERO;
    if let Some(w) = dst.limits().write_requests_per_second {
        let rate = Decimal::from(w) * scale(dst.limits().rate_scope);
        rate_limit_seconds = rate_limit_seconds.max(Decimal::from(c.destination_put) / rate);
    }
    if let Some(r) = src.limits().read_requests_per_second {
        let rate = Decimal::from(r) * scale(src.limits().rate_scope);
        rate_limit_seconds = rate_limit_seconds.max(Decimal::from(c.source_get) / rate);
    }
    // Listing pages follow each other within one key range; ranges split across workers.
    let listing_seconds = Decimal::from(c.source_list) * latency / workers;

    let mut m = measured_seconds(corpus, c, a.measured.as_ref());
    if !through_host {
        // The probe measured throughput and CPU through this machine, which these bytes skip.
        m.throughput = Decimal::ZERO;
        m.cpu = Decimal::ZERO;
    }
    let (bound, seconds) = binding(&[
        (Bound::Bandwidth, bandwidth_seconds),
        (Bound::Requests, request_seconds),
        (Bound::RateLimit, rate_limit_seconds),
        (Bound::Listing, listing_seconds),
        (Bound::ServerRequestRate, m.requests),
        (Bound::ServerThroughput, m.throughput),
        (Bound::ClientCpu, m.cpu),
    ]);
    let mut restore_seconds = Decimal::ZERO;
    for b in &corpus.buckets {
        let cl = b
            .class
            .as_deref()
            .and_then(|n| inventory_class(src, n))
            .unwrap_or(src.class);
        if cl.archive {
            restore_seconds =
                restore_seconds.max(Decimal::from(cl.restore_hours.unwrap_or(12) * 3600));
        }
    }
    Time {
        seconds: seconds + restore_seconds,
        bound,
        bandwidth_seconds,
        request_seconds,
        rate_limit_seconds,
        listing_seconds,
        restore_seconds,
        effective_bandwidth,
        server_request_seconds: m.requests,
        server_throughput_seconds: m.throughput,
        client_cpu_seconds: m.cpu,
        shared_hashing_seconds: m.shared_hashing,
    }
}

/// The bound that takes longest, and its seconds (the first listed wins a tie).
pub fn binding(bounds: &[(Bound, Decimal)]) -> (Bound, Decimal) {
    let mut best = (Bound::Bandwidth, Decimal::ZERO);
    for (i, &(b, s)) in bounds.iter().enumerate() {
        if i == 0 || s > best.1 {
            best = (b, s);
        }
    }
    best
}

/// Seconds of the measured bounds (all zero without a probe).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MeasuredSeconds {
    /// Server request rate: the source's GETs (and part-1 HEADs) over its GET rate, the
    /// destination's PUTs (parts and completes included) over its PUT rate.
    pub requests: Decimal,
    /// Server throughput: the bytes over the source's aggregate GET and the destination's
    /// aggregate PUT throughput.
    pub throughput: Decimal,
    /// Client CPU: GiB × the engine's CPU seconds per GiB / cores.
    pub cpu: Decimal,
    /// On a shared host: GiB × the engine's hashing-and-copying CPU seconds per GiB / cores,
    /// included in `requests` and `throughput`.
    pub shared_hashing: Decimal,
}

/// The measured bounds' seconds. Between machines the slower end binds each server bound. When
/// both ends share this machine's cores (`shared_host`) everything the run does is work on the
/// same cores, so the seconds add: the source's and the destination's (each measured by the
/// probe with the client only sending or receiving), plus what the engine does that the probe's
/// transfers did not — hashing every byte (MD5 + CRC64) and copying it — spread over the cores.
pub fn measured_seconds(corpus: &Corpus, c: &Counts, m: Option<&Measured>) -> MeasuredSeconds {
    let Some(m) = m else {
        return MeasuredSeconds::default();
    };
    let per = |n: u64, rate: Option<Decimal>| match rate {
        Some(r) if r > Decimal::ZERO => Decimal::from(n) / r,
        _ => Decimal::ZERO,
    };
    let bytes = Decimal::from(corpus.total_bytes());
    let gets = per(c.source_get + c.source_head, m.source_get_per_second);
    let puts = per(c.destination_put, m.destination_put_per_second);
    let through = |rate: Option<Decimal>| match rate {
        Some(r) if r > Decimal::ZERO => bytes / r,
        _ => Decimal::ZERO,
    };
    let (read, write) = (
        through(m.source_get_bytes_per_second),
        through(m.destination_put_bytes_per_second),
    );
    let over_cores = |per_gib: Option<Decimal>| match per_gib {
        Some(s) if s > Decimal::ZERO => {
            bytes / Decimal::from(1u64 << 30) * s / Decimal::from(m.cores.max(1))
        }
        _ => Decimal::ZERO,
    };
    let cpu = over_cores(m.cpu_seconds_per_gib);
    if m.shared_host {
        let hashing = over_cores(m.hash_cpu_seconds_per_gib);
        // Serving GETs and taking PUTs use the same cores: at each end's capacity (its best
        // rate at any number in flight) their seconds add. Each end alone still cannot go
        // faster than with the run's objects in flight. A phase bound by latency (its rate
        // grows with what is in flight) costs the cores little and overlaps the other.
        let capacity = per(
            c.source_get + c.source_head,
            m.source_get_peak_per_second.or(m.source_get_per_second),
        ) + per(
            c.destination_put,
            m.destination_put_peak_per_second
                .or(m.destination_put_per_second),
        );
        MeasuredSeconds {
            requests: (capacity + hashing).max(gets.max(puts)),
            throughput: read + write + hashing,
            cpu,
            shared_hashing: hashing,
        }
    } else {
        MeasuredSeconds {
            requests: gets.max(puts),
            throughput: read.max(write),
            cpu,
            shared_hashing: Decimal::ZERO,
        }
    }
}

/// Rank candidates: cheapest total first, then fastest, then by name.
pub fn rank(mut cands: Vec<Candidate>) -> Vec<Candidate> {
    cands.sort_by(|x, y| {
        x.cost
            .total()
            .cmp(&y.cost.total())
            .then(x.time.seconds.cmp(&y.time.seconds))
            .then(x.destination.cmp(&y.destination))
    });
    cands
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus(n: u64, size: u64) -> Corpus {
        Corpus {
            buckets: vec![super::super::corpus::SizeBucket {
                class: None,
                count: n,
                bytes: n * size,
            }],
            origin: "test".into(),
            skipped_lines: 0,
        }
    }

    fn probed() -> Measured {
        Measured {
            source_get_per_second: Some(Decimal::from(800)),
            destination_put_per_second: Some(Decimal::from(400)),
            source_get_bytes_per_second: Some(Decimal::from(400_000_000u64)),
            destination_put_bytes_per_second: Some(Decimal::from(200_000_000u64)),
            cpu_seconds_per_gib: Some(Decimal::from(3)),
            hash_cpu_seconds_per_gib: Some(Decimal::from(2)),
            cores: 2,
            shared_host: false,
            ..Measured::default()
        }
    }

    #[test]
    fn small_objects_are_bound_by_the_slower_ends_request_rate() {
        // 2,000 × 16 KiB: 2,000 GETs / 800 per s = 2.5 s at the source; 2,000 PUTs / 400 per s
        // = 5 s at the destination. Bytes 32,768,000 / 200 MB/s = 0.16384 s; CPU 32,768,000 /
        // 2^30 GiB × 3 s / 2 cores = 0.0457763671875 s. The PUT rate binds: 5 s.
        let c = corpus(2_000, 16_384);
        let counts = Counts {
            source_get: 2_000,
            destination_put: 2_000,
            ..Counts::default()
        };
        let MeasuredSeconds {
            requests: req,
            throughput: thr,
            cpu,
            shared_hashing,
        } = measured_seconds(&c, &counts, Some(&probed()));
        assert_eq!(shared_hashing, Decimal::ZERO, "not a shared host");
        assert_eq!(req, Decimal::from(5));
        assert_eq!(thr, Decimal::new(16384, 5));
        assert_eq!(cpu, Decimal::new(457763671875, 13));
        let (b, s) = binding(&[
            (Bound::Bandwidth, Decimal::new(26, 3)),
            (Bound::Requests, Decimal::new(94, 3)),
            (Bound::ServerRequestRate, req),
            (Bound::ServerThroughput, thr),
            (Bound::ClientCpu, cpu),
        ]);
        assert_eq!((b.as_str(), s), ("server request rate", Decimal::from(5)));
    }

    #[test]
    fn large_objects_are_bound_by_throughput_or_cpu() {
        // 4 × 256 MiB = 1 GiB = 1,073,741,824 bytes: / 200 MB/s = 5.36870912 s at the
        // destination; CPU 1 GiB × 3 s / 2 cores = 1.5 s; requests 4 GETs + 4 HEADs / 800 =
        // 0.01 s, 4 × (2 parts + 2) PUTs / 400 = 0.04 s. Throughput binds.
        let c = corpus(4, 256 << 20);
        let counts = Counts {
            source_get: 4,
            source_head: 4,
            destination_put: 16,
            ..Counts::default()
        };
        let m = probed();
        let MeasuredSeconds {
            requests: req,
            throughput: thr,
            cpu,
            ..
        } = measured_seconds(&c, &counts, Some(&m));
        assert_eq!(req, Decimal::new(4, 2));
        assert_eq!(thr, Decimal::new(536870912, 8));
        assert_eq!(cpu, Decimal::new(15, 1));
        let (b, _) = binding(&[
            (Bound::ServerRequestRate, req),
            (Bound::ServerThroughput, thr),
            (Bound::ClientCpu, cpu),
        ]);
        assert_eq!(b, Bound::ServerThroughput);
        // A slower machine: 12 s per GiB over 2 cores = 6 s > 5.37 s; the client CPU binds.
        let slow = Measured {
            cpu_seconds_per_gib: Some(Decimal::from(12)),
            ..m
        };
        let MeasuredSeconds {
            requests: req,
            throughput: thr,
            cpu,
            ..
        } = measured_seconds(&c, &counts, Some(&slow));
        assert_eq!(cpu, Decimal::from(6));
        let (b, s) = binding(&[
            (Bound::ServerRequestRate, req),
            (Bound::ServerThroughput, thr),
            (Bound::ClientCpu, cpu),
        ]);
        assert_eq!((b.as_str(), s), ("client CPU", Decimal::from(6)));
    }

    #[test]
    fn ends_on_one_machine_add_their_seconds() {
        // Both servers and the engine on this machine's cores: 2,000 GETs / 800 + 2,000 PUTs /
        // 400 = 2.5 + 5 = 7.5 s, plus the engine's hashing of 32,768,000 bytes: / 2^30 GiB × 2 s
        // / 2 cores = 0.030517578125 s; 1 GiB / 400 MB/s + 1 GiB / 200 MB/s = 2.68435456 +
        // 5.36870912 = 8.05306368 s, plus hashing 1 GiB × 2 s / 2 cores = 1 s.
        let m = Measured {
            shared_host: true,
            ..probed()
        };
        let counts = Counts {
            source_get: 2_000,
            destination_put: 2_000,
            ..Counts::default()
        };
        let small = measured_seconds(&corpus(2_000, 16_384), &counts, Some(&m));
        assert_eq!(small.shared_hashing, Decimal::new(30517578125, 12));
        assert_eq!(small.requests, Decimal::new(7530517578125, 12));
        let large = measured_seconds(&corpus(4, 256 << 20), &Counts::default(), Some(&m));
        assert_eq!(large.shared_hashing, Decimal::ONE);
        assert_eq!(large.throughput, Decimal::new(905306368, 8));
        // The client CPU bound stays its own (3 s per GiB / 2 cores), not added.
        assert_eq!(large.cpu, Decimal::new(15, 1));
    }

    #[test]
    fn a_phase_bound_by_latency_overlaps_the_other_on_a_shared_host() {
        // The calibration's shape (issue 16): a source whose small GETs are bound by latency
        // (640/s with the run's 32 in flight, 2,000/s at best with more), a destination whose
        // PUTs are bound by its cores (1,000/s at 32, 1,250/s at best). At capacity the two
        // ends' seconds add: 2,000 / 2,000 + 2,000 / 1,250 = 1 + 1.6 = 2.6 s, plus hashing
        // 32,768,000 / 2^30 GiB × 2 s / 2 cores = 0.030517578125 s = 2.630517578125 s. But the
        // GETs alone need 2,000 / 640 = 3.125 s with 32 in flight: that binds, and the PUTs run
        // beside it. (Adding the rates at 32 in flight, as before, said 3.125 + 2 + 0.0305 =
        // 5.1555 s; exec took about the GET phase alone.)
        let m = Measured {
            source_get_per_second: Some(Decimal::from(640)),
            destination_put_per_second: Some(Decimal::from(1_000)),
            source_get_peak_per_second: Some(Decimal::from(2_000)),
            destination_put_peak_per_second: Some(Decimal::from(1_250)),
            shared_host: true,
            ..probed()
        };
        let counts = Counts {
            source_get: 2_000,
            destination_put: 2_000,
            ..Counts::default()
        };
        let c = corpus(2_000, 16_384);
        assert_eq!(
            measured_seconds(&c, &counts, Some(&m)).requests,
            Decimal::new(3125, 3)
        );
        // A source at its capacity already with 32 in flight (2,000 GETs / 800 per s = 2.5 s at
        // best): now the cores bind, 2.5 + 1.6 + 0.030517578125 = 4.130517578125 s.
        let busy = Measured {
            source_get_per_second: Some(Decimal::from(800)),
            source_get_peak_per_second: Some(Decimal::from(800)),
            ..m
        };
        assert_eq!(
            measured_seconds(&c, &counts, Some(&busy)).requests,
            Decimal::new(4130517578125, 12)
        );
    }

    #[test]
    fn hashing_competes_with_the_servers_only_on_a_shared_host() {
        // Between machines the engine's hashing runs on other cores than the servers' work: the
        // slower end's 5.36870912 s binds, nothing added; on one machine it is added (1 s), and
        // without a hashing figure (an older probe) nothing is.
        let c = corpus(4, 256 << 20);
        let apart = measured_seconds(&c, &Counts::default(), Some(&probed()));
        assert_eq!(apart.throughput, Decimal::new(536870912, 8));
        let shared = Measured {
            shared_host: true,
            ..probed()
        };
        let together = measured_seconds(&c, &Counts::default(), Some(&shared));
        assert_eq!(
            together.throughput - Decimal::new(805306368, 8),
            Decimal::ONE
        );
        let old_probe = Measured {
            hash_cpu_seconds_per_gib: None,
            ..shared
        };
        let s = measured_seconds(&c, &Counts::default(), Some(&old_probe));
        assert_eq!(s.throughput, Decimal::new(805306368, 8));
        assert_eq!(s.shared_hashing, Decimal::ZERO);
    }

    #[test]
    fn without_a_probe_the_measured_bounds_are_zero_and_never_bind() {
        let c = corpus(2_000, 16_384);
        let counts = Counts {
            source_get: 2_000,
            destination_put: 2_000,
            ..Counts::default()
        };
        let z = measured_seconds(&c, &counts, None);
        assert_eq!(z, MeasuredSeconds::default());
        let (b, s) = binding(&[
            (Bound::Bandwidth, Decimal::new(26, 3)),
            (Bound::Requests, Decimal::new(94, 3)),
            (Bound::ServerRequestRate, z.requests),
            (Bound::ServerThroughput, z.throughput),
            (Bound::ClientCpu, z.cpu),
        ]);
        assert_eq!((b, s), (Bound::Requests, Decimal::new(94, 3)));
    }
}
