//! bytes/s (`--bwlimit`): how a byte rate maps onto governor cells, and the byte bucket that
//! charges reads in whole cells with a carried remainder, behind a fair queue.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use governor::clock::Clock;
use governor::{Quota, RateLimiter};

use super::{CHUNK_BYTES, Limiter, NOMINAL_CELL_BYTES};

/// Cell rate bounds: above the maximum, ns rounding of the replenish interval exceeds 0.1 %;
/// below the minimum, one cell is more than 1/64 s of traffic.
const MAX_CELLS_PER_SEC: u64 = 1_000_000;
const MIN_CELLS_PER_SEC: u64 = 64;

/// How a byte rate maps onto governor cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ByteQuota {
    /// Bytes per cell (a power of two).
    cell: u64,
    /// Time to replenish one cell, rounded to the nearest nanosecond.
    period: Duration,
    /// Cells granted at once at most.
    burst_cells: u32,
}

impl ByteQuota {
    fn for_rate(bytes_per_sec: u64) -> ByteQuota {
        let bps = bytes_per_sec.max(1);
        let mut cell = NOMINAL_CELL_BYTES;
        while cell > 1 && bps / cell < MIN_CELLS_PER_SEC {
            cell /= 2;
        }
        while bps / cell > MAX_CELLS_PER_SEC {
            cell *= 2;
        }
        let period_ns = (u128::from(cell) * 1_000_000_000 + u128::from(bps) / 2) / u128::from(bps);
        let period_ns = u64::try_from(period_ns).unwrap_or(u64::MAX).max(1);
        let burst_bytes = (bps / 10).max(CHUNK_BYTES.min(bps));
        let burst_cells = burst_bytes.div_ceil(cell).clamp(1, u64::from(u32::MAX));
        ByteQuota {
            cell,
            period: Duration::from_nanos(period_ns),
            burst_cells: u32::try_from(burst_cells).unwrap_or(u32::MAX),
        }
    }

    fn governor_quota(&self) -> Quota {
        Quota::with_period(self.period)
            .expect("period is at least 1 ns")
            .allow_burst(NonZeroU32::new(self.burst_cells).expect("burst is at least 1 cell"))
    }
}

pub(super) struct ByteBucket<C: Clock> {
    pub(super) rate: u64,
    pub(super) quota: ByteQuota,
    limiter: Limiter<C>,
    /// Bytes taken but not yet charged as a whole cell; always < `quota.cell`.
    carry: AtomicU64,
    /// Fair queue in front of the bucket: governor itself has no FIFO order between waiters.
    fifo: tokio::sync::Mutex<()>,
}

impl<C: Clock> ByteBucket<C> {
    pub(super) fn with_clock(bytes_per_sec: u64, clock: C) -> Self {
        let quota = ByteQuota::for_rate(bytes_per_sec);
        ByteBucket {
            rate: bytes_per_sec,
            quota,
            limiter: RateLimiter::direct_with_clock(quota.governor_quota(), clock),
            carry: AtomicU64::new(0),
            fifo: tokio::sync::Mutex::new(()),
        }
    }

    /// Adds `n` bytes to the carried remainder and returns the whole cells now owed.
    fn charge(&self, n: u64) -> u64 {
        let cell = u128::from(self.quota.cell);
        let mut owed = 0;
        // The closure may run more than once under contention; `owed` keeps the last run's value,
        // which is the one that was stored.
        let _ = self
            .carry
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |carry| {
                let total = u128::from(carry) + u128::from(n);
                owed = u64::try_from(total / cell).unwrap_or(u64::MAX);
                Some((total % cell) as u64)
            });
        owed
    }

    /// Splits `cells` into grants governor can ever satisfy (each ≤ burst).
    fn pieces(&self, cells: u64) -> impl Iterator<Item = NonZeroU32> + use<C> {
        let burst = u64::from(self.quota.burst_cells);
        let mut left = cells;
        std::iter::from_fn(move || {
            let piece = left.min(burst);
            left -= piece;
            NonZeroU32::new(u32::try_from(piece).ok()?)
        })
    }

    /// Takes `cells` now if the bucket has them; otherwise how long until it might.
    #[cfg(test)]
    fn try_take_cells(&self, cells: NonZeroU32) -> Result<(), Duration> {
        match self.limiter.check_n(cells) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(not_until)) => Err(not_until.wait_time_from(self.limiter_now())),
            Err(e) => panic!("piece of {cells} cells exceeds the burst: {e}"),
        }
    }

    #[cfg(test)]
    fn limiter_now(&self) -> C::Instant {
        self.limiter.clock().now()
    }
}

impl<C: governor::clock::ReasonablyRealtime> ByteBucket<C> {
    /// Charges `n` bytes and waits for the cells owed. Returns whether it had to wait.
    pub(super) async fn take(&self, n: u64) -> bool {
        let mut waited = false;
        for piece in self.pieces(self.charge(n)) {
            let _turn = match self.fifo.try_lock() {
                Ok(turn) => turn,
                Err(_) => {
                    waited = true;
                    self.fifo.lock().await
                }
            };
            match self.limiter.check_n(piece) {
                Ok(Ok(())) => {}
                Ok(Err(_)) => {
                    waited = true;
                    self.limiter
                        .until_n_ready(piece)
                        .await
                        .expect("pieces never exceed the burst");
                }
                Err(_) => unreachable!("pieces never exceed the burst"),
            }
        }
        waited
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use governor::clock::FakeRelativeClock;
    use std::sync::Arc;

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    /// Simulates one worker that asks for `grant` bytes at a time for `secs` seconds of fake time
    /// and returns the bytes that passed.
    fn simulate(bps: u64, grant: u64, secs: u64) -> u64 {
        let clock = FakeRelativeClock::default();
        let bucket = ByteBucket::with_clock(bps, clock.clone());
        let end = Duration::from_secs(secs);
        let mut elapsed = Duration::ZERO;
        let mut passed = 0;
        loop {
            for piece in bucket.pieces(bucket.charge(grant)) {
                while let Err(wait) = bucket.try_take_cells(piece) {
                    clock.advance(wait);
                    elapsed += wait;
                }
            }
            if elapsed > end {
                return passed;
            }
            passed += grant;
        }
    }

    #[test]
    fn thirty_seconds_at_50_mib_lands_within_one_percent() {
        let target = 30 * 50 * MIB;
        let passed = simulate(50 * MIB, CHUNK_BYTES, 30);
        let ratio = passed as f64 / target as f64;
        assert!(
            (0.99..=1.01).contains(&ratio),
            "passed {passed}, ratio {ratio}"
        );
    }

    #[test]
    fn ten_gb_per_second_is_not_throttled_by_ns_rounding() {
        let bps = 10_000_000_000;
        let passed = simulate(bps, CHUNK_BYTES, 10);
        let ratio = passed as f64 / (10 * bps) as f64;
        // The burst (1 s of rate / 10 over 10 s) adds 1 %; rounding must add almost nothing.
        assert!((0.995..=1.015).contains(&ratio), "ratio {ratio}");
    }

    #[test]
    fn quota_keeps_rounding_error_small_over_all_rates() {
        let mut bps = 1_000u64;
        while bps < 10_000_000_000_000 {
            let q = ByteQuota::for_rate(bps);
            let cells_per_sec = bps / q.cell;
            assert!(cells_per_sec <= MAX_CELLS_PER_SEC, "{bps}: {q:?}");
            assert!(cells_per_sec >= MIN_CELLS_PER_SEC, "{bps}: {q:?}");
            let effective = q.cell as f64 * 1e9 / q.period.as_nanos() as f64;
            let err = (effective - bps as f64).abs() / bps as f64;
            assert!(err < 0.001, "{bps}: {q:?} admits {effective}");
            let burst = u64::from(q.burst_cells) * q.cell;
            assert!(burst >= bps / 10, "{bps}: {q:?}");
            assert!(burst >= CHUNK_BYTES.min(bps), "{bps}: {q:?}");
            assert!(
                burst <= bps.max(CHUNK_BYTES.min(bps)) + q.cell,
                "{bps}: {q:?}"
            );
            bps = bps * 3 + 7;
        }
        assert_eq!(ByteQuota::for_rate(50 * MIB).cell, NOMINAL_CELL_BYTES);
        assert_eq!(ByteQuota::for_rate(50 * MIB).burst_cells, 512);
    }

    #[test]
    fn pieces_never_exceed_the_burst_and_sum_to_the_request() {
        let bucket = ByteBucket::with_clock(10 * GIB, FakeRelativeClock::default());
        let burst = bucket.quota.burst_cells;
        let cells = 3 * u64::from(burst) + 5;
        let pieces: Vec<u32> = bucket.pieces(cells).map(NonZeroU32::get).collect();
        assert_eq!(pieces.len(), 4);
        assert!(pieces.iter().all(|&p| p <= burst));
        assert_eq!(pieces.iter().map(|&p| u64::from(p)).sum::<u64>(), cells);
        // Far more cells than u32 holds still splits cleanly.
        assert_eq!(bucket.pieces(u64::MAX).take(3).count(), 3);
    }

    #[test]
    fn small_reads_are_charged_exactly_through_the_carry() {
        let bucket = ByteBucket::with_clock(MIB, FakeRelativeClock::default());
        let cell = bucket.quota.cell;
        assert_eq!(cell, NOMINAL_CELL_BYTES);
        let owed: u64 = (0..1000).map(|_| bucket.charge(100)).sum();
        assert_eq!(owed, 100_000 / cell);
        assert_eq!(owed * cell + bucket.carry.load(Ordering::Relaxed), 100_000);
    }

    #[test]
    fn concurrent_odd_sized_charges_lose_no_byte() {
        let bucket = Arc::new(ByteBucket::with_clock(
            200 * MIB,
            FakeRelativeClock::default(),
        ));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let bucket = Arc::clone(&bucket);
                std::thread::spawn(move || {
                    (0..20_000u64)
                        .map(|i| bucket.charge(777 + t + i % 13))
                        .sum::<u64>()
                })
            })
            .collect();
        let owed: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        let expected: u64 = (0..4u64)
            .map(|t| (0..20_000u64).map(|i| 777 + t + i % 13).sum::<u64>())
            .sum();
        let carry = bucket.carry.load(Ordering::Relaxed);
        assert!(carry < bucket.quota.cell);
        assert_eq!(owed * bucket.quota.cell + carry, expected);
    }
}
