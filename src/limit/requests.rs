//! requests/s (`--tpslimit`): one governor cell per request, with a small jitter.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::DefaultClock;
use governor::{Quota, RateLimiter};

use super::Limiter;

/// Upper bound of the random delay added to a request wait.
const MAX_REQUEST_JITTER: Duration = Duration::from_millis(10);

pub(super) struct RequestLimiter {
    pub(super) rate: u32,
    pub(super) limiter: Limiter<DefaultClock>,
    pub(super) jitter: Duration,
}

impl RequestLimiter {
    pub(super) fn new(rate: NonZeroU32) -> Self {
        let quota = Self::quota(rate);
        RequestLimiter {
            rate: rate.get(),
            limiter: RateLimiter::direct(quota),
            // At most one interval (and 10 ms), so the 100 ms burst absorbs the added delay and
            // a single sequential caller still reaches the full rate.
            jitter: quota.replenish_interval().min(MAX_REQUEST_JITTER),
        }
    }

    /// One cell per request, replenished at `rate`/s (interval rounded to the nearest ns, ≥ 1 ns),
    /// with a burst of 100 ms of requests (at least one).
    fn quota(rate: NonZeroU32) -> Quota {
        let r = u64::from(rate.get());
        let period_ns = ((1_000_000_000 + r / 2) / r).max(1);
        let burst = NonZeroU32::new((rate.get() / 10).max(1)).expect("max(1)");
        Quota::with_period(Duration::from_nanos(period_ns))
            .expect("period is at least 1 ns")
            .allow_burst(burst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_quota_is_rate_with_a_100ms_burst() {
        let q = RequestLimiter::quota(NonZeroU32::new(200).unwrap());
        assert_eq!(q.replenish_interval(), Duration::from_millis(5));
        assert_eq!(q.burst_size().get(), 20);
        let q = RequestLimiter::quota(NonZeroU32::new(3).unwrap());
        assert_eq!(q.replenish_interval(), Duration::from_nanos(333_333_333));
        assert_eq!(q.burst_size().get(), 1);
    }
}
