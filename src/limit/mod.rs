//! Rate limits and adaptive back-off shared by all workers of one run.
//!
//! This module owns three throttles and their counters; nothing else in moverctl sleeps to slow
//! itself down:
//!
//! - **bytes/s** (`--bwlimit`): [`Limits::take_bytes`], a governor GCRA bucket counted in coarse
//!   cells, fed by the source read loop (TCP back-pressure carries the limit to the sender).
//! - **requests/s** (`--tpslimit`): [`Limits::take_request`], one governor cell per request, with
//!   a small jitter so waiting workers do not wake in lock-step.
//! - **in-flight operations**: [`Limits::acquire_slot`] hands out a [`SlotGuard`] under an AIMD
//!   window that shrinks when the store says "slow down" ([`Limits::on_throttled`]) and grows
//!   back on success ([`Limits::on_success`]).
//!
//! A [`Limits`] is an `Arc` inside: clone it into every worker. `0` for either rate means "no
//! limit", as with rclone's `--bwlimit 0` / `--tpslimit 0`.
//!
//! # AIMD decision table
//!
//! | signal            | condition                                         | action                                                      |
//! |-------------------|---------------------------------------------------|-------------------------------------------------------------|
//! | `on_throttled()`  | first one, or ≥ [`THROTTLE_COOLDOWN`] since the last counted one | window = max(1, window / 2); `throttle_events` += 1; success streak = 0 |
//! | `on_throttled()`  | < [`THROTTLE_COOLDOWN`] since the last counted one | same wave of 503s: window unchanged, success streak = 0 (no growth while still being throttled) |
//! | `on_success()`    | window < max                                      | streak += 1; when streak ≥ window: window += 1, streak = 0   |
//! | `on_success()`    | window = max                                      | nothing                                                     |
//!
//! Growth by one per *window* successes is TCP's "one segment per round trip": climbing back from
//! 1 to 64 takes about 2,000 successful operations, so a store that is still near its limit is
//! probed gently. The cooldown exists because a wave of N in-flight requests rejected together
//! arrives as N separate 503s; counting each would collapse the window to 1 at once.
//!
//! # The slot window: a semaphore plus debt
//!
//! A `tokio::sync::Semaphore` (fair, FIFO) holds the permits; a small mutex guards the AIMD state
//! and a `debt` count. Under that mutex we keep `available + in_flight − debt = window`, and
//! `debt > 0 ⇒ available = 0`:
//!
//! - shrink by k: forget up to k *available* permits at once; the rest becomes `debt`;
//! - a [`SlotGuard`] dropped while `debt > 0` forgets its permit (paying one debt) instead of
//!   returning it, so no new operation starts until in-flight has drained below the new window;
//! - grow by k: cancel debt first, then add the remaining permits.
//!
//! Every change to permits (shrink, grow, release) happens under the mutex, so the two
//! invariants hold between any two of them; `acquire` only ever takes available permits.
//!
//! # Byte cells and burst: why these sizes
//!
//! governor stores the replenish interval as whole nanoseconds, so `cells/s` near or above 1e9
//! is admitted at the wrong rate (measured: 3e8 cells/s → +11 %, > 1e9 → capped at 1e9). One cell
//! is therefore [`NOMINAL_CELL_BYTES`] = 16 KiB, rescaled by powers of two to keep the cell rate
//! in `[64, 1e6]` cells/s: at ≥ 1,000 ns per cell the rounding error is ≤ 0.1 % (10 GB/s →
//! 610,352 cells/s, 1,638 ns instead of 1,638.4, +0.02 %), and below 1 MiB/s a cell never stands
//! for more than 1/64 s of traffic. Reads that are not whole cells are carried in one global
//! remainder, so many small reads are charged exactly over time (at most one cell's worth is
//! ever uncharged).
//!
//! The burst is `max(rate × 100 ms, min(8 MiB, rate × 1 s))`:
//! - ≥ 100 ms of rate, so that at high rates workers are not woken every few microseconds;
//! - one whole 8 MiB chunk passes in one grant whenever the rate is ≥ 8 MiB/s;
//! - never more than 1 s of rate below that, so a slow limit is not overshot by a large
//!   start-up burst (a fresh bucket grants its burst at once).
//!
//! At 50 MiB/s the burst is 8 MiB: a 30 s run passes 1,500 MiB + 8 MiB = +0.5 %, well inside the
//! 5 % acceptance criterion. Larger grants are split into pieces ≤ burst, because governor's
//! `until_n_ready(n)` with `n > burst` fails with `InsufficientCapacity` forever.
//!
//! governor has no FIFO fairness between waiters, so byte waiters queue on a fair
//! `tokio::sync::Mutex` and only its holder waits on the bucket: a large grant cannot be starved
//! by a stream of small ones. governor's waits use a wall-clock timer (`futures_timer`), not tokio
//! time; `tokio::time::pause()` does not affect them.
//!
//! The throttles by concern: `bytes` (the byte bucket and its cells), `requests` (the
//! request limiter), `window` (the AIMD controller and the slot window); this module holds
//! [`Limits`], which owns one of each, the counters, and the slot guard.

use std::fmt;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Jitter, RateLimiter};
use tokio::sync::OwnedSemaphorePermit;

mod bytes;
mod requests;
mod window;

use bytes::ByteBucket;
use requests::RequestLimiter;
use window::Window;

/// Bytes per governor cell before rescaling for very slow or very fast limits.
pub const NOMINAL_CELL_BYTES: u64 = 16 << 10;
/// The largest chunk the copy engine hands over at once; one should pass in one grant.
pub const CHUNK_BYTES: u64 = 8 << 20;
/// Throttle signals closer together than this count as one event (one wave of 503s).
pub const THROTTLE_COOLDOWN: Duration = Duration::from_secs(1);
/// The in-flight window used when [`Limits::with_concurrency`] is not called.
pub const DEFAULT_CONCURRENCY: usize = 16;

/// A governor limiter without keys, on clock `C` (the byte bucket's and the request limiter's).
type Limiter<C> = RateLimiter<NotKeyed, InMemoryState, C, NoOpMiddleware<<C as Clock>::Instant>>;

/// Counters for the final report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LimitStats {
    /// Bytes passed through [`Limits::take_bytes`] (counted with or without a byte limit).
    pub bytes: u64,
    /// Requests passed through [`Limits::take_request`].
    pub requests: u64,
    /// Time callers spent waiting on the byte limit, summed over callers.
    pub byte_wait: Duration,
    /// Time callers spent waiting on the request limit, summed over callers.
    pub request_wait: Duration,
    /// Time callers spent waiting for an in-flight slot, summed over callers.
    pub slot_wait: Duration,
    /// Throttle events that counted (at most one per [`THROTTLE_COOLDOWN`]).
    pub throttle_events: u64,
    /// Every `on_throttled` call, including those folded into an earlier event.
    pub throttled_responses: u64,
    /// The in-flight window now.
    pub window: usize,
    /// The configured maximum window.
    pub max_window: usize,
}

/// Byte, request and concurrency limits shared by all workers of one run. Cheap to clone.
#[derive(Clone)]
pub struct Limits {
    inner: Arc<Inner>,
}

/// A byte rate that changes with the time of day (`--bwlimit` timetables): asked at most once
/// per [`SCHEDULE_CHECK`]; `None` is no limit.
pub type Schedule = Arc<dyn Fn() -> Option<u64> + Send + Sync>;

/// How often a timetable is looked at during a run.
pub const SCHEDULE_CHECK: Duration = Duration::from_secs(1);

struct ByteState {
    bucket: Option<Arc<ByteBucket<DefaultClock>>>,
    checked: Option<Instant>,
}

struct Inner {
    /// The bucket in force; replaced (a fresh one at the new rate) when the schedule says so.
    bytes: Mutex<ByteState>,
    schedule: Option<Schedule>,
    /// Byte grants are served one at a time, first come first served (tokio's mutex is fair):
    /// interleaved pieces of many large grants would finish them all together, late.
    byte_turn: tokio::sync::Mutex<()>,
    requests: Option<RequestLimiter>,
    window: Arc<Window>,
    bytes_passed: AtomicU64,
    requests_passed: AtomicU64,
    byte_wait_ns: AtomicU64,
    request_wait_ns: AtomicU64,
    slot_wait_ns: AtomicU64,
}

impl Limits {
    /// Limits for one run. `None` or `Some(0)` means no limit for that rate. The in-flight window
    /// starts at [`DEFAULT_CONCURRENCY`]; use [`Limits::with_concurrency`] to set it.
    pub fn new(bytes_per_sec: Option<u64>, requests_per_sec: Option<u32>) -> Limits {
        let bucket = bytes_per_sec
            .filter(|&b| b > 0)
            .map(|b| Arc::new(ByteBucket::with_clock(b, DefaultClock::default())));
        let bytes = Mutex::new(ByteState {
            bucket,
            checked: None,
        });
        let requests = requests_per_sec
            .and_then(NonZeroU32::new)
            .map(RequestLimiter::new);
        Limits {
            inner: Arc::new(Inner {
                bytes,
                schedule: None,
                byte_turn: tokio::sync::Mutex::new(()),
                requests,
                window: Arc::new(Window::new(DEFAULT_CONCURRENCY)),
                bytes_passed: AtomicU64::new(0),
                requests_passed: AtomicU64::new(0),
                byte_wait_ns: AtomicU64::new(0),
                request_wait_ns: AtomicU64::new(0),
                slot_wait_ns: AtomicU64::new(0),
            }),
        }
    }

    /// No byte, request limit; the default in-flight window.
    pub fn unlimited() -> Limits {
        Limits::new(None, None)
    }

    /// Sets the maximum (and starting) in-flight window; `0` is treated as `1`. Meant for
    /// construction: called later, it resets the AIMD state for every clone.
    pub fn with_concurrency(self, max: usize) -> Limits {
        self.inner.window.reset(max);
        self
    }

    /// Limits whose byte rate follows `schedule` (asked now and then every [`SCHEDULE_CHECK`]).
    /// Meant for construction, before the first clone.
    pub fn with_schedule(mut self, schedule: Schedule) -> Limits {
        let rate = schedule().filter(|&b| b > 0);
        let inner = Arc::get_mut(&mut self.inner).expect("with_schedule before any clone");
        inner.schedule = Some(schedule);
        let st = inner.bytes.get_mut().unwrap_or_else(|p| p.into_inner());
        st.bucket = rate.map(|b| Arc::new(ByteBucket::with_clock(b, DefaultClock::default())));
        st.checked = Some(Instant::now());
        self
    }

    /// The byte bucket in force now (after asking the schedule, when one is due).
    fn bucket(&self) -> Option<Arc<ByteBucket<DefaultClock>>> {
        let mut st = self.inner.bytes.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = &self.inner.schedule
            && st.checked.is_none_or(|t| t.elapsed() >= SCHEDULE_CHECK)
        {
            st.checked = Some(Instant::now());
            let want = f().filter(|&b| b > 0);
            if want != st.bucket.as_ref().map(|b| b.rate) {
                st.bucket =
                    want.map(|b| Arc::new(ByteBucket::with_clock(b, DefaultClock::default())));
            }
        }
        st.bucket.clone()
    }

    /// Waits until `n` more bytes may pass under the byte limit. Any `n` works: grants larger
    /// than the burst are taken in pieces. Dropping the future part-way forgets the rest.
    pub async fn take_bytes(&self, n: u64) {
        if n == 0 {
            return;
        }
        self.inner.bytes_passed.fetch_add(n, Ordering::Relaxed);
        let Some(bucket) = self.bucket() else {
            return;
        };
        let start = Instant::now();
        let _turn = self.inner.byte_turn.lock().await;
        if bucket.take(n).await {
            add_duration(&self.inner.byte_wait_ns, start.elapsed());
        }
    }

    /// The byte limit in bytes per second, when there is one.
    pub fn byte_rate(&self) -> Option<u64> {
        self.bucket().map(|b| b.rate)
    }

    /// Waits until one more request may start under the request limit.
    pub async fn take_request(&self) {
        self.inner.requests_passed.fetch_add(1, Ordering::Relaxed);
        let Some(requests) = &self.inner.requests else {
            return;
        };
        if requests.limiter.check().is_ok() {
            return;
        }
        let start = Instant::now();
        requests
            .limiter
            .until_ready_with_jitter(Jitter::up_to(requests.jitter))
            .await;
        add_duration(&self.inner.request_wait_ns, start.elapsed());
    }

    /// Reports a "slow down" answer (HTTP 503 SlowDown, 429, "reduce your request rate").
    pub fn on_throttled(&self) {
        self.inner.window.on_throttled(Instant::now());
    }

    /// Reports an operation the store accepted without throttling.
    pub fn on_success(&self) {
        self.inner.window.on_success();
    }

    /// Waits for an in-flight slot under the current window. Dropping the guard frees the slot.
    pub async fn acquire_slot(&self) -> SlotGuard {
        let window = &self.inner.window;
        if let Some(guard) = self.try_acquire_slot() {
            return guard;
        }
        let start = Instant::now();
        let permit = Arc::clone(&window.sem)
            .acquire_owned()
            .await
            .expect("the slot semaphore is never closed");
        add_duration(&self.inner.slot_wait_ns, start.elapsed());
        SlotGuard {
            permit: Some(permit),
            window: Arc::clone(window),
        }
    }

    /// A slot if one is free now.
    pub fn try_acquire_slot(&self) -> Option<SlotGuard> {
        let window = &self.inner.window;
        let permit = Arc::clone(&window.sem).try_acquire_owned().ok()?;
        Some(SlotGuard {
            permit: Some(permit),
            window: Arc::clone(window),
        })
    }

    /// The in-flight window now (between 1 and the configured maximum).
    pub fn current_window(&self) -> usize {
        self.inner.window.lock().aimd.window
    }

    /// Slots held now. May briefly exceed [`Limits::current_window`] right after a shrink, until
    /// the operations already running finish.
    pub fn in_flight(&self) -> usize {
        let state = self.inner.window.lock();
        (state.aimd.window + state.debt).saturating_sub(self.inner.window.sem.available_permits())
    }

    /// Throttle events that counted (at most one per [`THROTTLE_COOLDOWN`]).
    pub fn throttle_events(&self) -> u64 {
        self.inner.window.lock().aimd.events
    }

    /// Counters for the report.
    pub fn stats(&self) -> LimitStats {
        let state = self.inner.window.lock();
        LimitStats {
            bytes: self.inner.bytes_passed.load(Ordering::Relaxed),
            requests: self.inner.requests_passed.load(Ordering::Relaxed),
            byte_wait: load_duration(&self.inner.byte_wait_ns),
            request_wait: load_duration(&self.inner.request_wait_ns),
            slot_wait: load_duration(&self.inner.slot_wait_ns),
            throttle_events: state.aimd.events,
            throttled_responses: state.aimd.signals,
            window: state.aimd.window,
            max_window: state.aimd.max,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::unlimited()
    }
}

impl fmt::Debug for Limits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limits")
            .field("bytes", &self.bucket().map(|b| b.quota))
            .field(
                "requests_per_sec",
                &self.inner.requests.as_ref().map(|r| r.rate),
            )
            .field("window", &self.current_window())
            .finish()
    }
}

/// One in-flight slot; dropping it frees the slot (or pays down a shrunk window's debt).
#[must_use = "the slot is released as soon as the guard is dropped"]
pub struct SlotGuard {
    permit: Option<OwnedSemaphorePermit>,
    window: Arc<Window>,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        if let Some(permit) = self.permit.take() {
            self.window.release(permit);
        }
    }
}

impl fmt::Debug for SlotGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlotGuard").finish_non_exhaustive()
    }
}

fn add_duration(counter: &AtomicU64, d: Duration) {
    let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    counter.fetch_add(ns, Ordering::Relaxed);
}

fn load_duration(counter: &AtomicU64) -> Duration {
    Duration::from_nanos(counter.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_grant_larger_than_the_burst_completes() {
        // 10 GiB/s has a 1 GiB burst; 3 GiB in one call needs three pieces (about 0.2 s).
        let limits = Limits::new(Some(10 * GIB), None);
        let start = Instant::now();
        let done = tokio::time::timeout(Duration::from_secs(20), limits.take_bytes(3 * GIB)).await;
        assert!(done.is_ok(), "take_bytes(3 GiB) hung");
        assert!(
            start.elapsed() >= Duration::from_millis(120),
            "not limited at all"
        );
        assert_eq!(limits.stats().bytes, 3 * GIB);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn byte_limit_passes_the_burst_then_holds_the_rate() {
        // 4 MiB/s: burst 4 MiB at once, then 4 MiB more in small reads takes about 1 s.
        let limits = Limits::new(Some(4 * MIB), None);
        let start = Instant::now();
        limits.take_bytes(4 * MIB).await;
        assert!(
            start.elapsed() < Duration::from_millis(500),
            "burst was not granted"
        );
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let limits = limits.clone();
                tokio::spawn(async move {
                    for _ in 0..32 {
                        limits.take_bytes(64 << 10).await;
                    }
                })
            })
            .collect();
        for w in workers {
            w.await.unwrap();
        }
        let elapsed = start.elapsed();
        assert!(
            elapsed >= Duration::from_millis(700),
            "too fast: {elapsed:?}"
        );
        assert!(elapsed < Duration::from_secs(5), "too slow: {elapsed:?}");
        let stats = limits.stats();
        assert_eq!(stats.bytes, 8 * MIB);
        assert!(stats.byte_wait >= Duration::from_millis(500), "{stats:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn request_limit_spaces_requests() {
        // 20/s with a burst of 2: 12 requests need about 0.5 s.
        let limits = Limits::new(None, Some(20));
        let start = Instant::now();
        for _ in 0..12 {
            limits.take_request().await;
        }
        let elapsed = start.elapsed();
        assert!(
            elapsed >= Duration::from_millis(350),
            "too fast: {elapsed:?}"
        );
        assert!(elapsed < Duration::from_secs(3), "too slow: {elapsed:?}");
        let stats = limits.stats();
        assert_eq!(stats.requests, 12);
        assert!(
            stats.request_wait >= Duration::from_millis(300),
            "{stats:?}"
        );
    }

    #[tokio::test]
    async fn no_limit_means_no_waiting() {
        for limits in [Limits::unlimited(), Limits::new(Some(0), Some(0))] {
            let start = Instant::now();
            for _ in 0..1000 {
                limits.take_bytes(GIB).await;
                limits.take_request().await;
            }
            assert!(start.elapsed() < Duration::from_secs(1));
            let stats = limits.stats();
            assert_eq!(stats.bytes, 1000 * GIB);
            assert_eq!(stats.requests, 1000);
            assert_eq!(stats.byte_wait, Duration::ZERO);
            assert_eq!(stats.request_wait, Duration::ZERO);
        }
    }

    #[tokio::test]
    async fn slot_window_shrinks_only_after_in_flight_drains_and_grows_back() {
        let limits = Limits::unlimited().with_concurrency(4);
        let mut held: Vec<SlotGuard> = Vec::new();
        for _ in 0..4 {
            held.push(limits.acquire_slot().await);
        }
        assert!(limits.try_acquire_slot().is_none());

        limits.on_throttled();
        assert_eq!(limits.current_window(), 2);
        assert_eq!(limits.throttle_events(), 1);
        assert_eq!(limits.in_flight(), 4);

        // Two releases pay the debt: still no room.
        held.pop();
        assert!(limits.try_acquire_slot().is_none());
        held.pop();
        assert!(limits.try_acquire_slot().is_none());
        assert_eq!(limits.in_flight(), 2);
        held.pop();
        held.push(
            limits
                .try_acquire_slot()
                .expect("one slot free under window 2"),
        );
        assert!(limits.try_acquire_slot().is_none());

        // Growth: +1 after `window` (2) successes.
        limits.on_success();
        assert!(limits.try_acquire_slot().is_none());
        limits.on_success();
        assert_eq!(limits.current_window(), 3);
        held.push(limits.try_acquire_slot().expect("window grew to 3"));
        assert!(limits.try_acquire_slot().is_none());
        assert_eq!(limits.in_flight(), 3);

        held.clear();
        assert_eq!(limits.in_flight(), 0);
        let all: Vec<_> = (0..3).filter_map(|_| limits.try_acquire_slot()).collect();
        assert_eq!(all.len(), 3);
    }

    #[tokio::test]
    async fn growth_while_in_debt_cancels_debt_instead_of_adding_permits() {
        let limits = Limits::unlimited().with_concurrency(8);
        let held: Vec<_> = (0..8).filter_map(|_| limits.try_acquire_slot()).collect();
        limits.on_throttled(); // window 4, debt 4
        for _ in 0..4 {
            limits.on_success();
        }
        assert_eq!(limits.current_window(), 5);
        drop(held);
        let now: Vec<_> = (0..8).filter_map(|_| limits.try_acquire_slot()).collect();
        assert_eq!(now.len(), 5);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn waiting_acquirer_wakes_when_a_slot_frees() {
        // One thread: `yield_now` lets the waiter run until it blocks on the semaphore, so the
        // measured wait covers the whole sleep however loaded the machine is.
        let limits = Limits::unlimited().with_concurrency(1);
        let first = limits.acquire_slot().await;
        let waiter = {
            let limits = limits.clone();
            tokio::spawn(async move {
                let _slot = limits.acquire_slot().await;
            })
        };
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished());
        drop(first);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("waiter woke")
            .unwrap();
        assert!(limits.stats().slot_wait >= Duration::from_millis(40));
    }

    /// A `--bwlimit` timetable: the rate in force changes during a run (a limit, then none).
    #[tokio::test]
    async fn a_schedule_changes_the_byte_rate_during_a_run() {
        let rate = Arc::new(AtomicU64::new(256 << 10));
        let r = rate.clone();
        let limits = Limits::new(None, None)
            .with_schedule(Arc::new(move || Some(r.load(Ordering::Relaxed))));
        assert_eq!(limits.byte_rate(), Some(256 << 10));
        // One burst (256 KiB) at once, then 512 KiB at 256 KiB/s.
        let t = Instant::now();
        limits.take_bytes(768 << 10).await;
        assert!(
            t.elapsed() >= Duration::from_millis(1500),
            "{:?}",
            t.elapsed()
        );
        rate.store(0, Ordering::Relaxed);
        tokio::time::sleep(SCHEDULE_CHECK + Duration::from_millis(50)).await;
        let t = Instant::now();
        limits.take_bytes(100 * MIB).await;
        assert!(
            t.elapsed() < Duration::from_millis(300),
            "{:?}",
            t.elapsed()
        );
        assert_eq!(limits.byte_rate(), None);
    }
}
