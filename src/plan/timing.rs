//! How long a move takes: the bounds (bandwidth, request latencies, published rate limits,
//! listing, and what a probe measured of the servers and this machine's CPU), the one that binds,
//! and the archive restore before the copy can read.

use super::candidate::{Assumptions, Bound, Counts, Measured, Time};
use super::corpus::Corpus;
use super::price::inventory_class;
use super::requests::CopyPath;
use crate::catalog::{Place, RateScope};
use rust_decimal::Decimal;

pub(super) fn transfer_time(
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
    let mut bandwidth_seconds = bytes / effective_bandwidth;
    if !through_host && c.streamed_bytes > 0 {
        // Objects the path cannot take stream through the workers (`Counts::streamed_bytes`).
        let host = a
            .bandwidth
            .min(a.worker_nic * workers)
            .min(a.stream_throughput * slots);
        bandwidth_seconds = bandwidth_seconds.max(Decimal::from(c.streamed_bytes) / host);
    }

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

    let rate_limit_seconds = rate_limit_seconds(src, dst, c, a);
    // Listing pages follow each other within one key range; ranges split across workers, and
    // each worker lists its range as up to LIST_STREAMS ranges at once.
    let listing_seconds =
        Decimal::from(c.source_list) * latency / (workers * Decimal::from(LIST_STREAMS));

    // Bytes that skip this machine are not hashed by the engine either.
    let not_hashed = (a.measured.clone()).map(|m| Measured {
        hash_cpu_seconds_per_gib: None,
        ..m
    });
    let mut m = measured_seconds(
        corpus,
        c,
        if through_host {
            a.measured.as_ref()
        } else {
            not_hashed.as_ref()
        },
    );
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
        server_copy_seconds: Decimal::ZERO,
        start_seconds: Decimal::ZERO,
    }
}

/// Key ranges each worker lists and copies from at once (`--list-streams`' default): the run's
/// objects in flight come from this many ranges in turn (`transfer::joins`).
pub const LIST_STREAMS: u32 = 8;

/// Seconds under the stores' published request-rate limits. Reads (GET and HEAD) and writes
/// (PUT, parts, completes) have separate limits at each end: the source's GETs and part-1 HEADs
/// under its read limit, the destination's PUTs under its write limit and its verifying HEADs
/// under its read limit. A per-prefix limit (S3: 3,500 writes and 5,500 reads a second per
/// prefix) scales with the prefixes a run has in flight at once: the corpus's `--prefixes`, but
/// no more than the key ranges its workers copy from at once ([`LIST_STREAMS`] each); a bucket
/// or account limit does not scale.
pub fn rate_limit_seconds(src: &Place, dst: &Place, c: &Counts, a: &Assumptions) -> Decimal {
    let in_flight = a.prefixes.max(1).min(LIST_STREAMS * a.workers.max(1));
    let scale = |scope: Option<RateScope>| match scope {
        Some(RateScope::Prefix) => Decimal::from(in_flight),
        _ => Decimal::ONE,
    };
    let over = |n: u64, limit: Option<u32>, scope: Option<RateScope>| match limit {
        Some(l) if l > 0 => Decimal::from(n) / (Decimal::from(l) * scale(scope)),
        _ => Decimal::ZERO,
    };
    let (s, d) = (src.limits(), dst.limits());
    [
        over(c.destination_put, d.write_requests_per_second, d.rate_scope),
        over(c.destination_head, d.read_requests_per_second, d.rate_scope),
        over(
            c.source_get + c.source_head,
            s.read_requests_per_second,
            s.rate_scope,
        ),
    ]
    .into_iter()
    .fold(Decimal::ZERO, Decimal::max)
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
    let gets = per(c.source_get, m.source_get_per_second)
        + per(
            c.source_head,
            m.source_head_per_second.or(m.source_get_per_second),
        );
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
            c.source_get,
            m.source_get_peak_per_second.or(m.source_get_per_second),
        ) + per(
            c.source_head,
            (m.source_head_peak_per_second)
                .or(m.source_head_per_second)
                .or(m.source_get_peak_per_second)
                .or(m.source_get_per_second),
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

    #[test]
    fn request_rate_limits_scale_with_the_prefixes_in_flight() {
        // 3 B objects of 250 KB, one PUT, one GET and one verifying HEAD each, S3 to S3:
        // 3,500 writes and 5,500 reads a second per prefix.
        let catalog = crate::catalog::Catalog::embedded().unwrap();
        let aws = Place::resolve(&catalog, "aws").unwrap();
        let c = Counts {
            source_get: 3_000_000_000,
            destination_put: 3_000_000_000,
            destination_head: 3_000_000_000,
            ..Counts::default()
        };
        let secs = |prefixes: u32, workers: u32| {
            let a = Assumptions {
                prefixes,
                workers,
                ..Assumptions::default()
            };
            rate_limit_seconds(&aws, &aws, &c, &a).round_dp(6)
        };
        let d = |s: &str| s.parse::<Decimal>().unwrap();
        // 1,000 prefixes, 16 workers × 8 ranges = 128 prefixes in flight: the PUTs bind,
        // 3e9 / (3,500 × 128 = 448,000) = 6,696 3/7 s (the reads: 3e9 / 704,000 = 4,261.4 s).
        assert_eq!(secs(1000, 16), d("6696.428571"));
        // One worker reaches 8 prefixes however many the corpus has: 3e9 / 28,000.
        assert_eq!(secs(1000, 1), d("107142.857143"));
        // Fewer prefixes than ranges: the prefixes bind, 3e9 / (3,500 × 4).
        assert_eq!(secs(4, 16), d("214285.714286"));
        // The HEADs count at the destination's read limit: with PUTs gone (all skipped, say),
        // 3e9 HEADs / (5,500 × 128).
        let heads = Counts {
            destination_head: 3_000_000_000,
            ..Counts::default()
        };
        let a = Assumptions {
            prefixes: 1000,
            workers: 16,
            ..Assumptions::default()
        };
        assert_eq!(
            rate_limit_seconds(&aws, &aws, &heads, &a).round_dp(6),
            d("4261.363636")
        );
        // A bucket-wide limit does not scale with prefixes: GCS, 1,000 writes a second.
        let gcs = Place::resolve(&catalog, "gcp").unwrap();
        assert_eq!(
            rate_limit_seconds(&aws, &gcs, &c, &a).round_dp(0),
            d("3000000")
        );
    }
}
