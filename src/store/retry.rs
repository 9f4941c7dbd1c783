//! The one retry policy for every request moverctl makes: LIST pages, HEADs, GETs, PUTs, parts,
//! multipart completions and DELETEs.
//!
//! A request that fails with a 5xx, 429 or 408 answer, or that cannot be sent or whose answer
//! breaks off (a reset, a truncated body), is tried again after a randomized exponential backoff:
//! the first wait is 100 ms, each later one is drawn between 100 ms and twice the one before,
//! and no wait is longer than 15 s. Retries stop once the request's first attempt is longer ago
//! than the retry window (`--retry-timeout`, 4 minutes by default), and the error is reported.
//! Other answers (403, 404, 412, a digest refused) are not retried: retrying cannot change them.
//!
//! object_store's requests follow these numbers through [`object_store_config`]; requests
//! moverctl makes itself (paged listings it parses, presigned HEADs) use [`Backoff`]. An object
//! whose copy still fails is then retried whole by the engine (`--retries`, 3 by default).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// The first wait before a retry.
pub const INIT_BACKOFF: Duration = Duration::from_millis(100);
/// No single wait is longer than this.
pub const MAX_BACKOFF: Duration = Duration::from_secs(15);
/// Each wait is drawn between [`INIT_BACKOFF`] and this many times the one before.
pub const BASE: f64 = 2.0;
/// The default retry window of one request.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(240);
/// A bound on the count (the window is what normally ends the retries).
const MAX_RETRIES: usize = 1000;

static TIMEOUT_MS: AtomicU64 = AtomicU64::new(240_000);
/// Requests retried so far in this process: object_store's own retries (seen by the HTTP
/// connector, `super::http`) and those of moverctl's own requests ([`Backoff`]). Progress
/// displays show it, so that a run that is retrying says so.
static RETRIED: AtomicU64 = AtomicU64::new(0);

/// Counts one retry of a request (see [`retried`]).
pub fn count_retry() {
    RETRIED.fetch_add(1, Relaxed);
}

/// Requests retried so far in this process.
pub fn retried() -> u64 {
    RETRIED.load(Relaxed)
}

/// The longest wait object_store may draw before retry `n` (1 for the first) under this
/// policy: each wait is drawn up to [`BASE`] times the one before, from [`INIT_BACKOFF`], and
/// at most [`MAX_BACKOFF`].
pub fn longest_wait(n: u32) -> Duration {
    let exp = n.saturating_sub(1).min(32) as i32;
    let secs = INIT_BACKOFF.as_secs_f64() * BASE.powi(exp);
    Duration::from_secs_f64(secs.min(MAX_BACKOFF.as_secs_f64()))
}

/// Sets the retry window of every request opened after this call (`--retry-timeout`).
pub fn set_timeout(d: Duration) {
    TIMEOUT_MS.store(d.as_millis().min(u128::from(u64::MAX)) as u64, Relaxed);
}

/// The retry window in force.
pub fn timeout() -> Duration {
    Duration::from_millis(TIMEOUT_MS.load(Relaxed))
}

/// The policy as object_store's configuration (for every store it opens).
pub fn object_store_config() -> object_store::RetryConfig {
    object_store::RetryConfig {
        backoff: object_store::BackoffConfig {
            init_backoff: INIT_BACKOFF,
            max_backoff: MAX_BACKOFF,
            base: BASE,
        },
        max_retries: MAX_RETRIES,
        retry_timeout: timeout(),
    }
}

/// Whether an HTTP status is worth another attempt under the policy.
pub fn retryable_status(status: u16) -> bool {
    status >= 500 || status == 429 || status == 408
}

/// The waits of one request's retries, as object_store draws them.
#[derive(Debug)]
pub struct Backoff {
    start: Instant,
    window: Duration,
    next: f64,
    retries: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new()
    }
}

impl Backoff {
    /// Starts the window now (call before the first attempt).
    pub fn new() -> Backoff {
        Backoff::with_window(timeout())
    }

    /// As [`Backoff::new`] with another window (a store's own, see `Store::retry_window`).
    pub fn with_window(window: Duration) -> Backoff {
        Backoff {
            start: Instant::now(),
            window,
            next: INIT_BACKOFF.as_secs_f64(),
            retries: 0,
        }
    }

    /// The wait before the next attempt, or None when the window is spent.
    pub fn next_wait(&mut self) -> Option<Duration> {
        if self.start.elapsed() > self.window {
            return None;
        }
        let lo = INIT_BACKOFF.as_secs_f64();
        let hi = (self.next * BASE).max(lo);
        let drawn = lo + (hi - lo) * unit_random();
        let wait = std::mem::replace(&mut self.next, drawn.min(MAX_BACKOFF.as_secs_f64()));
        self.retries += 1;
        count_retry();
        Some(Duration::from_secs_f64(wait))
    }

    /// Sleeps before the next attempt; false when the window is spent (give up).
    pub async fn wait(&mut self) -> bool {
        match self.next_wait() {
            Some(d) => {
                tokio::time::sleep(d).await;
                true
            }
            None => false,
        }
    }

    /// [`Backoff::wait`], logged: `what` failed because `why`; the retry and its wait at info,
    /// giving up at warn (target `moverctl::retry`). `why` must not hold a URL or a credential.
    pub async fn wait_logged(&mut self, what: &str, why: &str) -> bool {
        match self.next_wait() {
            Some(d) => {
                tracing::info!(
                    target: "moverctl::retry",
                    retry = self.retries,
                    wait_ms = d.as_millis() as u64,
                    "{what}: {why}; retry {} in {:.1} s (retrying for up to {})",
                    self.retries,
                    d.as_secs_f64(),
                    humantime::format_duration(Duration::from_secs(self.window.as_secs()))
                );
                tokio::time::sleep(d).await;
                true
            }
            None => {
                tracing::warn!(
                    target: "moverctl::retry",
                    retries = self.retries,
                    "{what}: {why}; giving up after {} retries over {:.1?}",
                    self.retries,
                    self.start.elapsed()
                );
                false
            }
        }
    }

    /// Retries made so far.
    pub fn retries(&self) -> u32 {
        self.retries
    }

    /// Time since the first attempt.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }
}

/// A number in [0, 1) that differs between calls (jitter; no cryptographic use).
fn unit_random() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    static N: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(N.fetch_add(1, Relaxed));
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_within_bounds_and_stop_at_the_window() {
        let mut b = Backoff {
            start: Instant::now(),
            window: Duration::from_secs(3600),
            next: INIT_BACKOFF.as_secs_f64(),
            retries: 0,
        };
        assert_eq!(b.next_wait(), Some(INIT_BACKOFF));
        let mut prev = INIT_BACKOFF;
        for _ in 0..50 {
            let w = b.next_wait().unwrap();
            assert!(w >= INIT_BACKOFF && w <= MAX_BACKOFF, "{w:?}");
            assert!(
                w.as_secs_f64() <= prev.as_secs_f64() * BASE + 1e-9,
                "{w:?} after {prev:?}"
            );
            prev = w;
        }
        let mut spent = Backoff {
            start: Instant::now() - Duration::from_secs(10),
            window: Duration::from_secs(5),
            next: INIT_BACKOFF.as_secs_f64(),
            retries: 0,
        };
        assert_eq!(spent.next_wait(), None);
    }

    #[test]
    fn the_longest_wait_doubles_from_the_first_up_to_the_cap() {
        assert_eq!(longest_wait(1), INIT_BACKOFF);
        assert_eq!(longest_wait(3), Duration::from_millis(400));
        assert_eq!(longest_wait(20), MAX_BACKOFF);
        // Every wait object_store's policy draws stays under the bound for its retry.
        let mut b = Backoff::with_window(Duration::from_secs(3600));
        for n in 1..40 {
            let w = b.next_wait().unwrap();
            assert!(w <= longest_wait(n) + Duration::from_nanos(1), "{n}: {w:?}");
        }
    }

    #[test]
    fn statuses() {
        for s in [500, 502, 503, 504, 429, 408] {
            assert!(retryable_status(s), "{s}");
        }
        for s in [200, 400, 401, 403, 404, 409, 412] {
            assert!(!retryable_status(s), "{s}");
        }
    }
}
