//! Saved probes (`moverctl probe`) applied to a plan: the measured latency and per-stream
//! throughput replace the defaults, and the measured bounds (request rate, aggregate throughput,
//! the engine's CPU per GiB) time the run.

use crate::plan::model::{Assumptions, Measured};
use crate::plan::server_copy::CopyRates;
use rust_decimal::Decimal;
use std::path::PathBuf;

/// A saved probe applied to one end: what it measured, as the planner uses it.
#[derive(Debug, Clone)]
pub struct ProbeUse {
    pub location: String,
    pub provider: String,
    pub timestamp: String,
    pub file: PathBuf,
    /// Applied unless `--latency-ms` was given.
    pub latency_ms: Option<u32>,
    /// Applied unless `--stream-throughput` was given; bytes/s.
    pub stream: Option<Decimal>,
    /// The whole probe, for its measured bounds (request rate, aggregate throughput, CPU).
    pub report: crate::probe::ProbeReport,
}

/// A measured f64 as an exact decimal (4 places), when it is a positive finite number.
fn dec_of(v: Option<f64>) -> Option<Decimal> {
    use rust_decimal::prelude::FromPrimitive;
    v.filter(|x| x.is_finite() && *x > 0.0)
        .and_then(Decimal::from_f64)
        .map(|d| d.round_dp(4))
}

/// The bounds the source's and a destination's probes measured, at `in_flight` objects in
/// flight; the engine's CPU from the destination's probe, else the source's.
pub fn measured_of(
    src: Option<&ProbeUse>,
    dst: Option<&ProbeUse>,
    in_flight: usize,
) -> Option<Measured> {
    if src.is_none() && dst.is_none() {
        return None;
    }
    let s = src.map(|p| &p.report);
    let d = dst.map(|p| &p.report);
    let cpu = d
        .and_then(|r| r.client_cpu.clone())
        .or_else(|| s.and_then(|r| r.client_cpu.clone()));
    Some(Measured {
        source_get_per_second: dec_of(s.and_then(|r| r.get_rate_at(in_flight))),
        destination_put_per_second: dec_of(d.and_then(|r| r.put_rate_at(in_flight))),
        source_get_peak_per_second: dec_of(s.and_then(|r| r.get_rate_at(usize::MAX))),
        source_head_per_second: dec_of(s.and_then(|r| r.head_rate_at(in_flight))),
        source_head_peak_per_second: dec_of(s.and_then(|r| r.head_rate_at(usize::MAX))),
        destination_put_peak_per_second: dec_of(d.and_then(|r| r.put_rate_at(usize::MAX))),
        source_get_one_seconds: dec_of(s.and_then(|r| r.get_rate_at(1)).map(|r| 1.0 / r)),
        destination_put_one_seconds: dec_of(d.and_then(|r| r.put_rate_at(1)).map(|r| 1.0 / r)),
        source_get_bytes_per_second: dec_of(s.and_then(|r| r.multi_stream_get_bytes_per_sec)),
        destination_put_bytes_per_second: dec_of(d.and_then(|r| r.multi_stream_bytes_per_sec)),
        cpu_seconds_per_gib: dec_of(cpu.as_ref().and_then(|c| c.copy_seconds_per_gib)),
        hash_cpu_seconds_per_gib: dec_of(cpu.as_ref().and_then(|c| c.hash_copy_seconds_per_gib)),
        cores: cpu.map_or(1, |c| c.cores.max(1) as u32),
        shared_host: s.is_some_and(|r| r.on_this_machine) && d.is_some_and(|r| r.on_this_machine),
        server_copy: d
            .and_then(|r| copy_rates(r.server_copy.as_ref()?))
            .map(|mut c| {
                // Exec opens both stores: each probe's process opened one.
                let start = |r: Option<&crate::probe::ProbeReport>| {
                    dec_of(r?.server_copy.as_ref()?.process_start_seconds)
                };
                c.start_seconds = match (start(s), start(d)) {
                    (Some(a), Some(b)) => Some(a + b),
                    (None, Some(b)) => Some(b + b),
                    _ => None,
                };
                c
            }),
    })
}

/// The destination service's copies as the planner times them: `None` unless the probe measured
/// at least a copy's fixed time and its per-byte time.
fn copy_rates(c: &crate::probe::copy_rate::ServerCopy) -> Option<CopyRates> {
    let fixed = dec_of(c.small_copy_seconds)?;
    let per_gib = c.seconds_per_byte().map(|s| s * (1u64 << 30) as f64)?;
    Some(CopyRates {
        copy_request_seconds: fixed,
        copy_seconds_per_gib: dec_of(Some(per_gib)).unwrap_or(Decimal::ZERO),
        copies_per_second: dec_of(c.small_copies_per_second),
        head_copies_per_second: dec_of(c.small_head_copies_per_second),
        copy_bytes_per_second: dec_of(c.parallel_bytes_per_second),
        part_copy_bytes_per_second: dec_of(c.part_copy_bytes_per_second),
        start_seconds: None,
    })
}

impl ProbeUse {
    /// The probe of `location` (or of a folder above it) when one was saved, else the newest of
    /// `provider`. `latency_given` and `stream_given`: the flags fix those values, the probe's
    /// are not applied.
    pub fn find(
        provider: &str,
        location: Option<&str>,
        latency_given: bool,
        stream_given: bool,
    ) -> Option<ProbeUse> {
        let (file, r) = location
            .and_then(|l| crate::probe::saved::covering_measured(provider, l))
            .or_else(|| crate::probe::saved::newest(provider))?;
        let latency_ms = match (latency_given, r.latency_ms) {
            (false, Some(ms)) if ms.is_finite() && ms >= 0.0 => Some((ms.ceil() as u32).max(1)),
            _ => None,
        };
        let stream = match (stream_given, r.per_stream_bytes_per_sec()) {
            (false, Some(b)) if b.is_finite() && b >= 1.0 => Some(Decimal::from(b.round() as u64)),
            _ => None,
        };
        if latency_ms.is_none() && stream.is_none() && r.request_rate.is_empty() {
            return None;
        }
        Some(ProbeUse {
            location: r.location.clone(),
            provider: provider.to_string(),
            timestamp: r.timestamp.clone(),
            file,
            latency_ms,
            stream,
            report: r,
        })
    }

    /// `a` with this probe's latency and per-stream throughput.
    pub fn apply(&self, a: &Assumptions) -> Assumptions {
        let mut a = a.clone();
        if let Some(ms) = self.latency_ms {
            a.latency_ms = ms;
        }
        if let Some(s) = self.stream {
            a.stream_throughput = s;
        }
        a
    }
}

/// The multi-stream GET rates the saved probes measured, by provider: (provider, bytes/s, the
/// probe's location), the source's first.
pub fn read_rates(
    src: Option<&ProbeUse>,
    dsts: &[Option<ProbeUse>],
) -> Vec<(String, Decimal, String)> {
    let mut out: Vec<(String, Decimal, String)> = Vec::new();
    for p in src.into_iter().chain(dsts.iter().flatten()) {
        if let Some(r) = dec_of(p.report.multi_stream_get_bytes_per_sec)
            && !out.iter().any(|(id, _, _)| *id == p.provider)
        {
            out.push((p.provider.clone(), r, p.location.clone()));
        }
    }
    out
}
