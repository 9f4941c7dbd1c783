//! What the model assumes and what it gives back: the assumptions (every flag that is not a
//! price), where the GPUs read the corpus, and each candidate's cost, time and request counts.

use crate::catalog::parts::PartRule;
use crate::money::Usd;
use rust_decimal::Decimal;

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
    pub reads: Option<Reads>,
    /// The restore tier chosen for archive-class source objects (`--restore-tier`); `None`: each
    /// class's default restore.
    pub restore: Option<super::restore::Restore>,
    /// What saved probes measured of the two ends and of this machine (see [`Measured`]); `None`
    /// without a probe: the bounds above alone time the run.
    pub measured: Option<Measured>,
    /// `exec` copies on the server where both ends are one S3 service (`--no-server-side`: false);
    /// see [`super::requests::server_side_copy`].
    pub server_side: bool,
    /// Whether the two locations are one S3 service (one endpoint), when both are known (`--src`
    /// and `--dst`); `None`: judged from the catalog places.
    pub same_service: Option<bool>,
    /// `--delete-source`, `--worker-hourly`, `--accept-policy-risk` (see [`super::extra_costs`]).
    pub extras: super::extras::ExtraFlags,
    /// What the GPUs need to read and what each store can give them.
    pub feed: super::options::FeedAssumptions,
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
    /// HEADs per second the source answers with the run's objects in flight, and its best at
    /// any number; None from a probe that did not measure them (HEADs are then timed as GETs).
    pub source_head_per_second: Option<Decimal>,
    pub source_head_peak_per_second: Option<Decimal>,
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
    /// The destination service's own copies (CopyObject / UploadPartCopy), which time a move
    /// copied on the server ([`super::server_copy`]).
    pub server_copy: Option<CopyRates>,
}

/// The service's own copies, as measured (see `probe::copy_rate::ServerCopy`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyRates {
    /// One CopyObject of a small object, one in flight: the fixed cost of a copy.
    pub copy_request_seconds: Decimal,
    /// Seconds per GiB one CopyObject adds beyond its fixed cost.
    pub copy_seconds_per_gib: Decimal,
    /// Small CopyObjects per second with 32 in flight.
    pub copies_per_second: Option<Decimal>,
    /// Small objects per second copied as exec copies each (a HEAD of the source, then the
    /// CopyObject), 32 in flight; None from an older probe.
    pub head_copies_per_second: Option<Decimal>,
    /// Bytes per second of CopyObjects of large objects in parallel.
    pub copy_bytes_per_second: Option<Decimal>,
    /// Bytes per second of one object copied by UploadPartCopy, its parts in parallel.
    pub part_copy_bytes_per_second: Option<Decimal>,
    /// What starting `exec` takes before its first copy: the probes' own processes' start (each
    /// opened one of the two stores exec opens), added to the move's time.
    pub start_seconds: Option<Decimal>,
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
            extras: Default::default(),
            feed: super::options::FeedAssumptions::default(),
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
    /// Source storage during the move, source early deletion, the restored copy, worker compute,
    /// GPU idle waiting for the restores of archive reads ([`super::extras::Extras`]).
    pub extras: super::extras::Extras,
    /// What the option chosen for the time of the move costs when it is not idling (reading the
    /// source for the move's duration, or the stall of a lazy migration's first pass). Paid once.
    pub during_move: Usd,
    /// GPU hours a month lost waiting for a store that cannot feed them, priced; over the
    /// horizon and for one month.
    pub read_stall: Usd,
    pub read_stall_per_month: Usd,
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
            + self.extras.total()
            + self.during_move
            + self.read_stall
    }

    /// What is paid once, before the horizon's months: the move and the GPUs idling through it.
    pub fn one_time(&self) -> Usd {
        self.egress
            + self.source_requests
            + self.destination_requests
            + self.retrieval
            + self.gpu_idle
            + self.extras.one_time()
            + self.during_move
    }

    /// What every month of the horizon costs: storage and reads.
    pub fn monthly(&self) -> Usd {
        self.storage_per_month
            + self.reads_per_month
            + self.extras.monthly()
            + self.read_stall_per_month
    }

    /// Named items, in report order (storage per month and exit egress are beside the total).
    pub fn items(&self) -> Vec<(&'static str, Usd)> {
        let mut items = vec![
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
        ];
        items.extend(self.extras.items());
        items.extend([
            ("during_move", self.during_move),
            ("read_stall", self.read_stall),
            ("read_stall_per_month", self.read_stall_per_month),
            ("total", self.total()),
        ]);
        items
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
    /// What the destination service copies on the server at once, as a probe measured.
    ServerCopy,
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
            Bound::ServerCopy => "server copy",
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
    /// A move copied on the server, with a probe's copy rates: what the service copies at once
    /// ([`super::server_copy`]); zero otherwise.
    pub server_copy_seconds: Decimal,
    /// A move copied on the server, with a probe's copy rates: exec's own start (see
    /// [`CopyRates::start_seconds`]), included in `seconds`; zero otherwise.
    pub start_seconds: Decimal,
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
    /// The largest object the destination cannot take (0: none).
    pub largest_unplaceable: u64,
    /// Objects (and their bytes) streamed through the workers although the move is copied on
    /// the server or fetched from the source's URL: they do not fit that path's limits.
    pub streamed_objects: u64,
    pub streamed_bytes: u64,
    pub largest_streamed: u64,
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
    pub reads: Option<ReadPlan>,
    /// First month from which this candidate has cost no more than staying, to the end of the
    /// horizon (0: from the start); `None` if never within the horizon, or for "stay" itself.
    pub break_even_month: Option<u32>,
    /// The move is priced and timed as a server-side copy ([`super::requests::server_side_copy`]).
    pub server_side: bool,
    /// The move is priced and timed as a copy the destination fetches from the source's URL
    /// ([`super::requests::from_url_copy`]).
    pub from_url: bool,
    /// The restore tier priced, and why (archive sources with `--restore-tier`).
    pub restore: Option<super::restore::Restore>,
    /// "Cannot take this corpus", policy risk, caveats by role ([`super::marking`]).
    pub marks: super::marks::Marks,
    /// The exit waiver checked against its conditions (with `--exit-waiver`).
    pub waiver: Option<super::options::WaiverCheck>,
    /// What the GPUs do while the move runs: each option priced, the cheapest chosen (moves only).
    pub during: Option<super::options::DuringMove>,
    /// Whether the store the GPUs read from can feed them (with `--compute-at`).
    pub feed: Option<super::options::Feed>,
}

/// Rank candidates: priced candidates first, then those with a policy risk not accepted, then
/// those that cannot take the corpus ([`super::marks::Marks::group`]); within each, cheapest
/// total first, then fastest, then by name.
pub fn rank(mut cands: Vec<Candidate>) -> Vec<Candidate> {
    cands.sort_by(|x, y| {
        (x.marks.group().cmp(&y.marks.group()))
            .then(x.cost.total().cmp(&y.cost.total()))
            .then(x.time.seconds.cmp(&y.time.seconds))
            .then(x.destination.cmp(&y.destination))
    });
    cands
}

/// Where the GPUs are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComputeAt {
    /// As the user wrote it.
    pub given: String,
    pub provider: String,
    /// The region (the provider's default when not given); for a place not in the catalog
    /// (`internet[:NAME]`, provider `internet`) the NAME, if given.
    pub region: Option<String>,
    /// False for a GPU cloud without a provider file (`internet:lambda`): every read is internet
    /// egress.
    pub in_catalog: bool,
}

impl ComputeAt {
    /// `provider:region` (`internet:lambda` for a place not in the catalog), or the provider.
    pub fn canonical(&self) -> String {
        match &self.region {
            Some(r) => format!("{}:{}", self.provider, r),
            None => self.provider.clone(),
        }
    }
}

/// Where training runs and how often it reads the whole corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reads {
    pub compute: ComputeAt,
    /// Full passes over the corpus per month (fractional allowed).
    pub per_month: Decimal,
}

/// The path reads take from a store to the compute location.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    SameRegion,
    InterRegion,
    Internet,
}

impl Route {
    pub fn as_str(self) -> &'static str {
        match self {
            Route::SameRegion => "same-region",
            Route::InterRegion => "inter-region",
            Route::Internet => "internet",
        }
    }
}

/// One month of reads from one store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadPlan {
    pub route: Route,
    pub per_month: Decimal,
    /// The store's billed GB read a month.
    pub gb_per_month: Decimal,
    pub gets_per_month: Decimal,
    pub egress: Usd,
    pub requests: Usd,
    pub retrieval: Usd,
    /// A month's reads are above a zero-egress multiple of the stored corpus.
    pub over_free_multiple: bool,
}

impl ReadPlan {
    pub fn month(&self) -> Usd {
        self.egress + self.requests + self.retrieval
    }
}
