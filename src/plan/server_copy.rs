//! How long a move copied on the server takes (issue 29), from what a probe of the destination
//! measured of the service's own copies ([`crate::probe::copy_rate`]): no byte passes through the
//! workers, so neither the path, the NICs, this machine's CPU nor the store's small-PUT rate time
//! it; the service's copying does.
//!
//! Per object, one slot (an object in flight) holds, as `exec` sends them one after another:
//! the HEAD of the source (the request latency), then
//! - one CopyObject (single-part objects, and multipart ones where the service keeps a copied
//!   object's parts): `copy_request_seconds + bytes × copy_seconds_per_byte`;
//! - or create + UploadPartCopy of every part at once + complete: two latencies + `bytes /
//!   part_copy_bytes_per_second`.
//!
//! `request_seconds` = the slots' seconds over the slots in flight, and never less than the
//! longest object's own (a move of fewer objects than slots waits for its largest one).
//! `copy_seconds` (the `server copy` bound) = what the service copies at once: the whole copies'
//! bytes over its parallel CopyObject throughput (or their count over its rate of copies made as
//! exec makes them, a HEAD of the source then the CopyObject, whichever is longer), plus the part
//! copies' bytes over its UploadPartCopy throughput, plus the source's other HEADs over the
//! source's HEAD rate (the same service answers them). From an older probe (copies timed without
//! their HEAD), every HEAD is timed apart.
//! `start_seconds`: what starting `exec` took as the probes measured it (their processes' start,
//! one per store), added to the binding bound — a copy on the server is often over in a second,
//! so exec's own start is a visible share of it.
//! Without a measured copy rate (an older probe, or none) neither is changed: the requests alone
//! time the move, as before.

pub use super::candidate::CopyRates;
use super::candidate::{Assumptions, Counts};
use super::corpus::Corpus;
use crate::catalog::Place;
use crate::catalog::parts::{Upload, part_plan};
use rust_decimal::Decimal;

/// The two times of a move copied on the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerSideSeconds {
    pub request_seconds: Decimal,
    pub copy_seconds: Decimal,
    /// Exec's own start before the first copy ([`CopyRates::start_seconds`]; zero unknown).
    pub start_seconds: Decimal,
}

const GIB: u64 = 1 << 30;

/// The move's request and copy seconds (see the module comment), or `None` without measured
/// copy rates.
pub fn seconds(
    dst: &Place,
    corpus: &Corpus,
    c: &Counts,
    a: &Assumptions,
) -> Option<ServerSideSeconds> {
    let m = a.measured.as_ref()?;
    let r = m.server_copy.as_ref()?;
    let latency = Decimal::from(a.latency_ms) / Decimal::from(1000);
    let whole_copy = dst.limits().copy_keeps_multipart_etag == crate::catalog::Tristate::Yes;
    let (mut slot_total, mut longest) = (Decimal::ZERO, Decimal::ZERO);
    let (mut whole_objects, mut whole_bytes, mut part_bytes) = (0u64, 0u64, 0u64);
    for b in &corpus.buckets {
        for (n, size) in b.split() {
            if n == 0 {
                continue;
            }
            let by_parts = match part_plan(size, dst.limits(), a.part_rule) {
                Ok(Upload::Single) => false,
                Ok(Upload::Multipart { .. }) => {
                    !whole_copy || size > dst.limits().max_single_put_bytes
                }
                Err(_) => continue,
            };
            let bytes = Decimal::from(size);
            let slot = if by_parts {
                part_bytes += n * size;
                let rate = r.part_copy_bytes_per_second.filter(|v| !v.is_zero());
                latency * Decimal::from(3) + rate.map_or(Decimal::ZERO, |v| bytes / v)
            } else {
                whole_objects += n;
                whole_bytes += n * size;
                latency
                    + r.copy_request_seconds
                    + bytes * r.copy_seconds_per_gib / Decimal::from(GIB)
            };
            slot_total += slot * Decimal::from(n);
            longest = longest.max(slot);
        }
    }
    let slots = Decimal::from(a.concurrency.max(1)) * Decimal::from(a.workers.max(1));
    let over = |n: u64, rate: Option<Decimal>| match rate {
        Some(v) if v > Decimal::ZERO => Decimal::from(n) / v,
        _ => Decimal::ZERO,
    };
    // Exec HEADs each source object before copying it. Where the probe timed copies made that
    // way (a HEAD, then the CopyObject), that rate times the whole copies with their HEADs;
    // otherwise the copies alone, and every HEAD apart.
    let (copy_rate, heads_apart) = match r.head_copies_per_second {
        Some(v) if v > Decimal::ZERO => (Some(v), c.source_head.saturating_sub(whole_objects)),
        _ => (r.copies_per_second, c.source_head),
    };
    let whole = over(whole_bytes, r.copy_bytes_per_second)
        .max(over(whole_objects.min(c.destination_put), copy_rate));
    // The source's other HEADs are answered by the same service (one service at both ends),
    // between the copies: at the source's measured HEAD rate (its small-GET rate from an older
    // probe).
    let heads = over(
        heads_apart,
        m.source_head_per_second.or(m.source_get_per_second),
    );
    Some(ServerSideSeconds {
        request_seconds: (slot_total / slots).max(longest),
        copy_seconds: whole + over(part_bytes, r.part_copy_bytes_per_second) + heads,
        start_seconds: r.start_seconds.unwrap_or(Decimal::ZERO),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::plan::candidate::Measured;
    use crate::plan::corpus::SizeBucket;

    fn corpus(n: u64, size: u64) -> Corpus {
        Corpus {
            buckets: vec![SizeBucket {
                class: None,
                count: n,
                bytes: n * size,
            }],
            origin: "test".into(),
            skipped_lines: 0,
        }
    }

    fn measured(rates: CopyRates) -> Assumptions {
        Assumptions {
            concurrency: 32,
            latency_ms: 1,
            measured: Some(Measured {
                server_copy: Some(rates),
                ..Measured::default()
            }),
            ..Assumptions::default()
        }
    }

    #[test]
    fn whole_copies_are_timed_by_the_services_copy_rate() {
        // onprem keeps a copied object's parts: 4 × 256 MiB are 4 CopyObjects.
        // Slot of one: HEAD 0.001 + 0.003 fixed + 0.25 GiB × 0.1 s = 0.029 s; 4 slots / 32 =
        // 0.003625 s, below the longest object's 0.029 s: 0.029 s.
        // Copy bound: 1 GiB = 1,073,741,824 B / 2,147,483,648 B/s = 0.5 s; 4 copies / 200 per s
        // = 0.02 s; the bytes bind: 0.5 s.
        let cat = Catalog::embedded().unwrap();
        let dst = crate::catalog::Place::resolve(&cat, "onprem").unwrap();
        let a = measured(CopyRates {
            copy_request_seconds: Decimal::new(3, 3),
            copy_seconds_per_gib: Decimal::new(1, 1),
            copies_per_second: Some(Decimal::from(200)),
            head_copies_per_second: None,
            copy_bytes_per_second: Some(Decimal::from(2u64 << 30)),
            part_copy_bytes_per_second: Some(Decimal::from(200_000_000u64)),
            start_seconds: Some(Decimal::new(2, 1)),
        });
        let c = Counts {
            destination_put: 4,
            ..Counts::default()
        };
        let s = seconds(&dst, &corpus(4, 256 << 20), &c, &a).unwrap();
        assert_eq!(s.request_seconds, Decimal::new(29, 3));
        assert_eq!(s.copy_seconds, Decimal::new(5, 1));
        // Exec's start as the probes measured it, added by the model to the binding bound.
        assert_eq!(s.start_seconds, Decimal::new(2, 1));
        // With the source's small GETs measured at 400/s, the 2,000 HEADs add 5 s: 15 s.
        let mut with_gets = a.clone();
        if let Some(m) = with_gets.measured.as_mut() {
            m.source_get_per_second = Some(Decimal::from(400));
        }
        let heads = Counts {
            destination_put: 2_000,
            source_head: 2_000,
            ..Counts::default()
        };
        let s = seconds(&dst, &corpus(2_000, 16_384), &heads, &with_gets).unwrap();
        assert_eq!(s.copy_seconds, Decimal::from(15));
        // A probe that measured HEADs (1,000/s) times them as HEADs: 2 s, 12 s in all.
        if let Some(m) = with_gets.measured.as_mut() {
            m.source_head_per_second = Some(Decimal::from(1_000));
        }
        let s = seconds(&dst, &corpus(2_000, 16_384), &heads, &with_gets).unwrap();
        assert_eq!(s.copy_seconds, Decimal::from(12));
        // A probe that timed copies made as exec makes them (a HEAD, then the copy: 125/s) times
        // the 2,000 copies with their HEADs at that rate: 16 s, and no HEAD apart.
        if let Some(r) = with_gets
            .measured
            .as_mut()
            .and_then(|m| m.server_copy.as_mut())
        {
            r.head_copies_per_second = Some(Decimal::from(125));
        }
        let s = seconds(&dst, &corpus(2_000, 16_384), &heads, &with_gets).unwrap();
        assert_eq!(s.copy_seconds, Decimal::from(16));
        // 2,000 × 16 KiB: slot 0.001 + 0.003 + 16,384 / 2^30 × 0.1 = 0.0040015258789... s;
        // × 2,000 / 32 slots = 0.25009536743... s. Copies: 2,000 / 200 = 10 s against
        // 32,768,000 / 2 GiB/s = 0.0153 s: the copy rate binds, 10 s.
        let c = Counts {
            destination_put: 2_000,
            ..Counts::default()
        };
        let s = seconds(&dst, &corpus(2_000, 16_384), &c, &a).unwrap();
        assert_eq!(s.copy_seconds, Decimal::from(10));
        let want = (Decimal::new(4, 3)
            + Decimal::from(16_384) * Decimal::new(1, 1) / Decimal::from(GIB))
            * Decimal::from(2_000)
            / Decimal::from(32);
        assert_eq!(s.request_seconds, want);
    }

    #[test]
    fn without_a_measured_copy_rate_nothing_changes() {
        let cat = Catalog::embedded().unwrap();
        let dst = crate::catalog::Place::resolve(&cat, "onprem").unwrap();
        let a = Assumptions::default();
        assert_eq!(
            seconds(&dst, &corpus(4, 1 << 28), &Counts::default(), &a),
            None
        );
    }
}
