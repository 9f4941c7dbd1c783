//! What bounds a run, measured: the server's aggregate request rate under concurrency, and the
//! engine's own CPU cost per GiB on this machine.
//!
//! - Request rate: small objects (`RATE_OBJECT_BYTES`) PUT, then GET, then HEAD, with 1, 8, 32
//!   and 64 requests in flight (`RATE_LEVELS`); each level moves `max(4 × in flight, 32)` objects
//!   and records objects/s for each kind (a HEAD carries no body: a service answers it faster than
//!   a GET, and a copy on the server HEADs every source object). The rate stops rising where the server (or the client's
//!   cores) saturate; the planner takes the best rate measured at or below a run's concurrency.
//! - Engine CPU per GiB: CPU seconds of this thread to hash 64 MiB with the executor's own
//!   [`crate::checksum::Hasher`] (CRC64/NVME + MD5) and copy it once into a buffer already in
//!   memory (the least of three passes), scaled to a GiB; plus the
//!   process's CPU seconds per GiB spent in the parallel-stream PUTs and GETs (HTTP client,
//!   kernel sockets), measured around [`super::checks`]' throughput phase. Both are kept, and the
//!   cores this machine offers.

use super::{Ctx, ProbeReport};
use bytes::Bytes;
use object_store::ObjectStoreExt;
use serde::{Deserialize, Serialize};
use std::time::Instant;

pub const RATE_LEVELS: [usize; 4] = [1, 8, 32, 64];
pub const RATE_OBJECT_BYTES: usize = 16 * 1024;

/// Objects/s at one concurrency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatePoint {
    pub in_flight: usize,
    pub put_per_sec: Option<f64>,
    pub get_per_sec: Option<f64>,
    /// HEADs of the same objects (absent in probes before 2026-12-06).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_per_sec: Option<f64>,
}

/// The engine's cost per GiB on the machine that probed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientCpu {
    /// CPU seconds per GiB hashing (CRC64/NVME + MD5) and copying once.
    pub hash_copy_seconds_per_gib: Option<f64>,
    /// Process CPU seconds per GiB sent or received over HTTP (PUT and GET averaged).
    pub transfer_seconds_per_gib: Option<f64>,
    /// What one copied GiB costs the engine: read it, hash it, write it
    /// (`hash_copy + 2 × transfer`).
    pub copy_seconds_per_gib: Option<f64>,
    /// Cores available to this process.
    pub cores: usize,
}

/// CPU seconds used by the whole process so far.
pub(crate) fn process_cpu_seconds() -> Option<f64> {
    cpu_clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn thread_cpu_seconds() -> Option<f64> {
    cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn cpu_clock(clock: libc::clockid_t) -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes into it.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9)
}

/// CPU seconds per GiB for the executor's hashing and one copy of the bytes, on this thread: the
/// least of `HASH_ROUNDS` passes over 64 MiB. The copy goes into a buffer touched before the
/// clock starts (the engine's buffers are reused memory; first-touch page faults in a fresh
/// 64 MiB buffer cost about as much again under load), and the least pass is kept because other
/// processes on the cores (cache misses, a sibling hyperthread) only ever add to it.
pub fn hash_copy_seconds_per_gib() -> Option<f64> {
    const LEN: usize = 64 << 20;
    const HASH_ROUNDS: usize = 3;
    let data = super::common::test_bytes(0x5eed, LEN);
    let mut copy = vec![0u8; LEN];
    std::hint::black_box(&mut copy);
    let mut best: Option<f64> = None;
    for _ in 0..HASH_ROUNDS {
        let start = thread_cpu_seconds()?;
        let mut h = crate::checksum::Hasher::new(true);
        for (chunk, to) in data.chunks(1 << 20).zip(copy.chunks_mut(1 << 20)) {
            h.update(chunk);
            to.copy_from_slice(chunk);
        }
        std::hint::black_box(h.finish());
        std::hint::black_box(&copy);
        let spent = thread_cpu_seconds()? - start;
        if spent > 0.0 {
            best = Some(best.map_or(spent, |b: f64| b.min(spent)));
        }
    }
    best.map(|s| round4(s * (1u64 << 30) as f64 / LEN as f64))
}

pub(crate) fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// PUT, GET, then HEAD `n` small objects with `in_flight` requests at a time; objects/s of each.
async fn level(
    ctx: &Ctx<'_>,
    in_flight: usize,
    body: &Bytes,
) -> object_store::Result<(f64, f64, f64)> {
    use futures::StreamExt;
    let n = (in_flight * 4).max(32);
    let paths: Vec<_> = (0..n).map(|i| ctx.path(&format!("rate/{i}"))).collect();
    let t = Instant::now();
    let puts: Vec<object_store::Result<()>> = futures::stream::iter(paths.iter())
        .map(|p| {
            let (s, b) = (ctx.inner().clone(), body.clone());
            async move { s.put(p, b.into()).await.map(|_| ()) }
        })
        .buffer_unordered(in_flight)
        .collect()
        .await;
    puts.into_iter().collect::<object_store::Result<()>>()?;
    let put = n as f64 / t.elapsed().as_secs_f64().max(1e-9);
    let t = Instant::now();
    let gets: Vec<object_store::Result<usize>> = futures::stream::iter(paths.iter())
        .map(|p| {
            let s = ctx.inner().clone();
            async move { Ok(s.get(p).await?.bytes().await?.len()) }
        })
        .buffer_unordered(in_flight)
        .collect()
        .await;
    for g in gets {
        if g? != body.len() {
            return Err(object_store::Error::Generic {
                store: "probe",
                source: "a small object came back with another length".into(),
            });
        }
    }
    let get = n as f64 / t.elapsed().as_secs_f64().max(1e-9);
    let t = Instant::now();
    let heads: Vec<object_store::Result<u64>> = futures::stream::iter(paths.iter())
        .map(|p| {
            let s = ctx.inner().clone();
            async move { Ok(s.head(p).await?.size) }
        })
        .buffer_unordered(in_flight)
        .collect()
        .await;
    for h in heads {
        if h? != body.len() as u64 {
            return Err(object_store::Error::Generic {
                store: "probe",
                source: "a HEAD answered another length for a small object".into(),
            });
        }
    }
    let head = n as f64 / t.elapsed().as_secs_f64().max(1e-9);
    Ok((put.round(), get.round(), head.round()))
}

/// Measure the request rate at each of [`RATE_LEVELS`]; a failed level is recorded as unknown
/// (null) and the probe goes on.
pub(crate) async fn request_rates(ctx: &Ctx<'_>, report: &mut ProbeReport) {
    let body = super::common::test_bytes(ctx.seed ^ 0x7a7e, RATE_OBJECT_BYTES);
    report.request_rate_object_bytes = Some(RATE_OBJECT_BYTES as u64);
    for in_flight in RATE_LEVELS {
        let (put, get, head) = match level(ctx, in_flight, &body).await {
            Ok((p, g, h)) => (Some(p), Some(g), Some(h)),
            Err(e) => {
                report.findings.push(super::Finding::new(
                    "request_rate",
                    "request rate under concurrency",
                    super::Status::Unknown,
                    format!("{in_flight} in flight failed: {}", super::common::short(&e)),
                ));
                (None, None, None)
            }
        };
        report.request_rate.push(RatePoint {
            in_flight,
            put_per_sec: put,
            get_per_sec: get,
            head_per_sec: head,
        });
        if put.is_none() {
            break;
        }
    }
}

/// The best of `points` at or below `concurrency` (a rate stops rising once the server
/// saturates); below the smallest measured concurrency, that point's rate scaled down.
pub fn rate_at(points: &[(usize, f64)], concurrency: usize) -> Option<f64> {
    let c = concurrency.max(1);
    let best = points
        .iter()
        .filter(|(n, r)| *n <= c && r.is_finite() && *r > 0.0)
        .map(|(_, r)| *r)
        .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))));
    best.or_else(|| {
        points
            .iter()
            .filter(|(n, r)| *n > 0 && r.is_finite() && *r > 0.0)
            .min_by_key(|(n, _)| *n)
            .map(|(n, r)| r * c as f64 / *n as f64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_is_the_best_at_or_below_the_concurrency() {
        let pts = [(1, 100.0), (8, 600.0), (32, 900.0), (64, 850.0)];
        assert_eq!(rate_at(&pts, 64), Some(900.0));
        assert_eq!(rate_at(&pts, 32), Some(900.0));
        assert_eq!(rate_at(&pts, 16), Some(600.0));
        assert_eq!(rate_at(&pts, 1), Some(100.0));
        // Below the smallest level: scaled from it.
        assert_eq!(rate_at(&[(8, 800.0)], 2), Some(200.0));
        assert_eq!(rate_at(&[], 8), None);
    }

    #[test]
    fn hashing_costs_cpu() {
        let s = hash_copy_seconds_per_gib().expect("thread CPU clock");
        assert!(s > 0.0 && s < 60.0, "{s}");
    }
}
