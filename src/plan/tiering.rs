//! The tiering boundary (`plan --tiering`): which data belongs on the fast tier (a parallel file
//! system or node-local NVMe next to the GPUs) and which on object storage, given what the GPUs
//! cost while they wait. Pure functions, no I/O; money in exact decimals.
//!
//! Four options are priced for one month:
//! - `object-only`: data sets and checkpoints on object storage only;
//! - `working-set-fast`: the data sets staged onto the fast tier (once per job), read from there;
//! - `checkpoints-fast`: checkpoints written to the fast tier and drained to object storage in
//!   the background (training waits only for the fast-tier write);
//! - `all-fast`: both.
//!
//! The model, stated plainly:
//! - Object storage is the system of record: it holds the data sets and the kept checkpoints in
//!   every option. The fast tier holds a second copy of what the option puts there, and its
//!   capacity is exactly that (no minimum size, no headroom).
//! - A fast tier's throughput is either given (`onprem`, or `--fast-tier-throughput`) or bought
//!   with its capacity: MB/s per TiB × the TiB the option keeps on it.
//! - **Checkpoint writes stall training**: each checkpoint blocks the GPUs for its size ÷ the
//!   write throughput of the tier it is written to; checkpoints per month = training hours ÷
//!   the interval.
//! - **Data loading stalls only beyond what training overlaps**: training consumes the month's
//!   reads (Σ size × reads) at the required rate (`--read-rate`, else those bytes spread evenly
//!   over the training hours). A tier at least that fast never stalls; a slower one stretches the
//!   reading to bytes ÷ throughput, and the GPUs idle for the difference:
//!   `max(0, B/T − B/Q)` seconds.
//! - **Staging** (options with the working set on the fast tier): every job copies the data sets
//!   from object storage onto the fast tier before it starts, at the slower of the store's read
//!   and the tier's write throughput, with the GPUs waiting; it also pays the store's GET
//!   requests (one per object) and retrieval fees.
//! - Reading from object storage pays its GET requests (one per object per read) and retrieval.
//! - Not counted: checkpoint PUT requests and drain traffic (the same in every option), egress
//!   (the store and the GPUs are assumed in one region), reads and writes competing for the same
//!   tier, a tier's minimum capacity.

use crate::money::Usd;
use rust_decimal::Decimal;

/// One data set the training reads.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub name: String,
    pub bytes: u64,
    /// Full reads a month (epochs ÷ months).
    pub reads_per_month: Decimal,
    pub objects: u64,
}

/// Checkpoints: one of `bytes` every `every_seconds` of training, `keep` of them kept.
#[derive(Debug, Clone)]
pub struct Checkpoints {
    pub bytes: u64,
    pub every_seconds: Decimal,
    pub keep: u32,
}

/// Read and write throughput, bytes per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    pub read: Decimal,
    pub write: Decimal,
}

/// How fast a fast tier is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FastThroughput {
    /// Bought with capacity: bytes per second for every TiB provisioned.
    PerTib(Rates),
    /// A fixed aggregate (a file system already built, `onprem`).
    Fixed(Rates),
}

/// A price per month of `unit_bytes` of capacity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CapacityPrice {
    pub usd: Decimal,
    pub unit_bytes: u64,
}

impl CapacityPrice {
    pub fn month(self, bytes: u64) -> Usd {
        Usd(self.usd * Decimal::from(bytes) / Decimal::from(self.unit_bytes))
    }
}

#[derive(Debug, Clone)]
pub struct FastTier {
    pub price: CapacityPrice,
    pub throughput: FastThroughput,
}

impl FastTier {
    /// Throughput with `bytes` on the tier.
    pub fn rates(&self, bytes: u64) -> Rates {
        match self.throughput {
            FastThroughput::Fixed(r) => r,
            FastThroughput::PerTib(r) => {
                let tib = Decimal::from(bytes) / Decimal::from(1u64 << 40);
                Rates {
                    read: r.read * tib,
                    write: r.write * tib,
                }
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct ObjectStore {
    /// Storage tiers `(up_to_gb, usd_per_gb_month)` of the class, in billing GB.
    pub storage: Vec<(Option<Decimal>, Decimal)>,
    pub bytes_per_gb: u64,
    /// USD per GET, and per billing GB retrieved.
    pub get_each: Decimal,
    pub retrieval_per_gb: Decimal,
    /// Aggregate throughput the GPU nodes get from the store.
    pub rates: Rates,
}

#[derive(Debug, Clone)]
pub struct Inputs {
    pub datasets: Vec<Dataset>,
    pub checkpoints: Option<Checkpoints>,
    pub gpu_hourly: Usd,
    /// Hours a month the GPUs train.
    pub train_hours: Decimal,
    /// Bytes per second training consumes while it runs (`None`: the month's reads spread over
    /// the training hours).
    pub read_rate: Option<Decimal>,
    pub jobs_per_month: u32,
    pub fast: FastTier,
    pub object: ObjectStore,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boundary {
    ObjectOnly,
    WorkingSetFast,
    CheckpointsFast,
    AllFast,
}

impl Boundary {
    pub const ALL: [Boundary; 4] = [
        Boundary::ObjectOnly,
        Boundary::WorkingSetFast,
        Boundary::CheckpointsFast,
        Boundary::AllFast,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Boundary::ObjectOnly => "object-only",
            Boundary::WorkingSetFast => "working-set-fast",
            Boundary::CheckpointsFast => "checkpoints-fast",
            Boundary::AllFast => "all-fast",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Boundary::ObjectOnly => "all on object storage",
            Boundary::WorkingSetFast => "working set on fast tier",
            Boundary::CheckpointsFast => "checkpoints on fast tier, drained",
            Boundary::AllFast => "everything on fast tier",
        }
    }

    fn data_fast(self) -> bool {
        matches!(self, Boundary::WorkingSetFast | Boundary::AllFast)
    }

    fn checkpoints_fast(self) -> bool {
        matches!(self, Boundary::CheckpointsFast | Boundary::AllFast)
    }
}

/// Hours and what the idle GPUs cost in them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Idle {
    pub seconds: Decimal,
    pub hours: Decimal,
    pub usd: Usd,
}

/// One option's month.
#[derive(Debug, Clone)]
pub struct OptionCost {
    pub boundary: Boundary,
    /// Bytes kept on the fast tier, and its throughput with them.
    pub fast_bytes: u64,
    pub fast_rates: Rates,
    pub object_storage: Usd,
    pub fast_storage: Usd,
    /// GET requests and retrieval of reads from object storage.
    pub object_reads: Usd,
    /// GET requests and retrieval of staging the working set (every job).
    pub staging_fees: Usd,
    pub checkpoint_idle: Idle,
    pub loading_idle: Idle,
    pub staging_idle: Idle,
}

impl OptionCost {
    pub fn storage(&self) -> Usd {
        self.object_storage + self.fast_storage
    }

    pub fn idle(&self) -> Idle {
        Idle {
            seconds: self.checkpoint_idle.seconds
                + self.loading_idle.seconds
                + self.staging_idle.seconds,
            hours: self.checkpoint_idle.hours + self.loading_idle.hours + self.staging_idle.hours,
            usd: self.checkpoint_idle.usd + self.loading_idle.usd + self.staging_idle.usd,
        }
    }

    pub fn total(&self) -> Usd {
        self.storage() + self.object_reads + self.staging_fees + self.idle().usd
    }
}

const HOUR: u32 = 3600;

impl Inputs {
    pub fn dataset_bytes(&self) -> u64 {
        self.datasets.iter().map(|d| d.bytes).sum()
    }

    pub fn checkpoint_bytes_kept(&self) -> u64 {
        self.checkpoints
            .as_ref()
            .map_or(0, |c| c.bytes * u64::from(c.keep))
    }

    /// Bytes read a month: Σ size × reads.
    pub fn bytes_read(&self) -> Decimal {
        self.datasets
            .iter()
            .map(|d| Decimal::from(d.bytes) * d.reads_per_month)
            .sum()
    }

    /// Objects read a month: Σ objects × reads.
    fn objects_read(&self) -> Decimal {
        self.datasets
            .iter()
            .map(|d| Decimal::from(d.objects) * d.reads_per_month)
            .sum()
    }

    /// The rate training consumes data at while it runs (bytes per second).
    pub fn required_rate(&self) -> Decimal {
        self.read_rate.unwrap_or_else(|| {
            let secs = self.train_hours * Decimal::from(HOUR);
            if secs.is_zero() {
                Decimal::ZERO
            } else {
                self.bytes_read() / secs
            }
        })
    }

    /// Checkpoints written a month.
    pub fn checkpoints_per_month(&self) -> Decimal {
        self.checkpoints.as_ref().map_or(Decimal::ZERO, |c| {
            self.train_hours * Decimal::from(HOUR) / c.every_seconds
        })
    }

    fn idle(&self, seconds: Decimal) -> Idle {
        let hour = Decimal::from(HOUR);
        Idle {
            seconds,
            hours: seconds / hour,
            usd: Usd(self.gpu_hourly.0 * seconds / hour),
        }
    }

    fn fees(&self, objects: Decimal, bytes: Decimal) -> Usd {
        let gb = bytes / Decimal::from(self.object.bytes_per_gb);
        Usd(objects * self.object.get_each + gb * self.object.retrieval_per_gb)
    }
}

/// Seconds to move `bytes` at `rate` (none when there is nothing to move).
fn seconds(bytes: Decimal, rate: Decimal) -> Decimal {
    if bytes.is_zero() {
        Decimal::ZERO
    } else if rate.is_zero() {
        Decimal::MAX
    } else {
        bytes / rate
    }
}

/// The month of one option.
pub fn evaluate(i: &Inputs, b: Boundary) -> OptionCost {
    let data = i.dataset_bytes();
    let kept = i.checkpoint_bytes_kept();
    let fast_bytes =
        if b.data_fast() { data } else { 0 } + if b.checkpoints_fast() { kept } else { 0 };
    let fast_rates = i.fast.rates(fast_bytes);
    let gb = Decimal::from(data + kept) / Decimal::from(i.object.bytes_per_gb);
    let object_storage = Usd(super::price::tiered(gb, &i.object.storage));

    let ckpt_write = if b.checkpoints_fast() {
        fast_rates.write
    } else {
        i.object.rates.write
    };
    let ckpt_secs = i.checkpoints.as_ref().map_or(Decimal::ZERO, |c| {
        seconds(Decimal::from(c.bytes), ckpt_write) * i.checkpoints_per_month()
    });

    let read_from = if b.data_fast() {
        fast_rates.read
    } else {
        i.object.rates.read
    };
    let bytes_read = i.bytes_read();
    let wanted = seconds(bytes_read, i.required_rate());
    let stall = (seconds(bytes_read, read_from) - wanted).max(Decimal::ZERO);

    let jobs = Decimal::from(i.jobs_per_month);
    let (object_reads, staging_fees, staging_secs) = if b.data_fast() {
        let objects: u64 = i.datasets.iter().map(|d| d.objects).sum();
        let rate = i.object.rates.read.min(fast_rates.write);
        (
            Usd::ZERO,
            i.fees(Decimal::from(objects), Decimal::from(data)) * jobs,
            seconds(Decimal::from(data), rate) * jobs,
        )
    } else {
        (
            i.fees(i.objects_read(), bytes_read),
            Usd::ZERO,
            Decimal::ZERO,
        )
    };
    OptionCost {
        boundary: b,
        fast_bytes,
        fast_rates,
        object_storage,
        fast_storage: i.fast.price.month(fast_bytes),
        object_reads,
        staging_fees,
        checkpoint_idle: i.idle(ckpt_secs),
        loading_idle: i.idle(stall),
        staging_idle: i.idle(staging_secs),
    }
}

/// Every option, in [`Boundary::ALL`] order.
pub fn evaluate_all(i: &Inputs) -> Vec<OptionCost> {
    Boundary::ALL.iter().map(|b| evaluate(i, *b)).collect()
}

/// Where the inputs came from, in words, for the table, the JSON and the report.
#[derive(Debug, Clone, Default)]
pub struct About {
    /// `aws:us-east-1/standard`.
    pub object_place: String,
    /// `probe of LOCATION (DATE) × N nodes`, or `--object-throughput`.
    pub object_rates_from: String,
    /// The catalog id, or `onprem`.
    pub fast_id: String,
    pub fast_name: String,
    /// `catalog` or `--fast-tier-price`.
    pub price_from: String,
    /// `catalog (per TiB provisioned)` or `--fast-tier-throughput`.
    pub throughput_from: String,
    /// The catalog entry's source, date, confidence and note (none for `onprem`).
    pub source: Option<String>,
    pub as_of: Option<String>,
    pub confidence: Option<String>,
    pub note: Option<String>,
}

/// A tiering plan: the inputs, where they came from, every option and the cheapest.
#[derive(Debug, Clone)]
pub struct Plan {
    pub inputs: Inputs,
    pub about: About,
    pub options: Vec<OptionCost>,
    pub cheapest: usize,
}

impl Plan {
    pub fn new(inputs: Inputs, about: About) -> Plan {
        let options = evaluate_all(&inputs);
        let cheapest = cheapest(&options);
        Plan {
            inputs,
            about,
            options,
            cheapest,
        }
    }

    pub fn best(&self) -> &OptionCost {
        &self.options[self.cheapest]
    }
}

/// The cheapest option's index (the first of equals: fewer moving parts).
pub fn cheapest(options: &[OptionCost]) -> usize {
    let mut best = 0;
    for (k, o) in options.iter().enumerate() {
        if o.total() < options[best].total() {
            best = k;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(gpu: i64) -> Inputs {
        Inputs {
            datasets: vec![Dataset {
                name: "d".into(),
                bytes: 1_000_000_000_000,
                reads_per_month: Decimal::from(2),
                objects: 1000,
            }],
            checkpoints: Some(Checkpoints {
                bytes: 100_000_000_000,
                every_seconds: Decimal::from(3600),
                keep: 2,
            }),
            gpu_hourly: Usd(Decimal::from(gpu)),
            train_hours: Decimal::from(100),
            read_rate: None,
            jobs_per_month: 1,
            fast: FastTier {
                price: CapacityPrice {
                    usd: Decimal::from(100),
                    unit_bytes: 1_000_000_000_000,
                },
                throughput: FastThroughput::Fixed(Rates {
                    read: Decimal::from(10_000_000_000u64),
                    write: Decimal::from(10_000_000_000u64),
                }),
            },
            object: ObjectStore {
                storage: vec![(None, Decimal::new(2, 2))],
                bytes_per_gb: 1_000_000_000,
                get_each: Decimal::ZERO,
                retrieval_per_gb: Decimal::ZERO,
                rates: Rates {
                    read: Decimal::from(1_000_000_000u64),
                    write: Decimal::from(1_000_000_000u64),
                },
            },
        }
    }

    #[test]
    fn checkpoint_idle_is_size_over_write_rate_per_checkpoint() {
        let i = inputs(1000);
        // 100 checkpoints of 100 GB at 1 GB/s: 100 s each, 10,000 s = 2.77… h.
        let a = evaluate(&i, Boundary::ObjectOnly);
        assert_eq!(a.checkpoint_idle.seconds, Decimal::from(10_000));
        // On the fast tier at 10 GB/s: 10 s each.
        let c = evaluate(&i, Boundary::CheckpointsFast);
        assert_eq!(c.checkpoint_idle.seconds, Decimal::from(1000));
        assert_eq!(c.fast_bytes, 200_000_000_000);
        assert_eq!(c.fast_storage, Usd(Decimal::from(20)));
    }

    #[test]
    fn reads_stall_only_when_the_tier_is_slower_than_training_needs() {
        let mut i = inputs(1000);
        // 2 TB over 100 h is 5.56 MB/s: the store's 1 GB/s keeps up.
        assert!(
            evaluate(&i, Boundary::ObjectOnly)
                .loading_idle
                .hours
                .is_zero()
        );
        // Training wants 2 GB/s: 2 TB takes 1,000 s at that rate, 2,000 s from the store.
        i.read_rate = Some(Decimal::from(2_000_000_000u64));
        let a = evaluate(&i, Boundary::ObjectOnly);
        assert_eq!(a.loading_idle.seconds, Decimal::from(1000));
        assert!(
            evaluate(&i, Boundary::WorkingSetFast)
                .loading_idle
                .hours
                .is_zero()
        );
    }
}
