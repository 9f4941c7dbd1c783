//! The in-flight window: the AIMD controller (pure, time passed in) and the slot window it
//! sizes, a fair semaphore plus debt (see the parent module's decision table).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::THROTTLE_COOLDOWN;

/// The AIMD controller alone: pure, with time passed in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Aimd {
    pub(super) max: usize,
    pub(super) window: usize,
    successes: usize,
    last_cut: Option<Instant>,
    pub(super) events: u64,
    pub(super) signals: u64,
}

impl Aimd {
    fn new(max: usize) -> Self {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        Aimd {
            max,
            window: max,
            successes: 0,
            last_cut: None,
            events: 0,
            signals: 0,
        }
    }

    /// Returns whether the signal counted as a new event.
    fn on_throttled(&mut self, now: Instant) -> bool {
        self.signals += 1;
        self.successes = 0;
        let same_wave = self
            .last_cut
            .is_some_and(|last| now.saturating_duration_since(last) < THROTTLE_COOLDOWN);
        if same_wave {
            return false;
        }
        self.last_cut = Some(now);
        self.events += 1;
        self.window = (self.window / 2).max(1);
        true
    }

    fn on_success(&mut self) {
        if self.window >= self.max {
            return;
        }
        self.successes += 1;
        if self.successes >= self.window {
            self.window += 1;
            self.successes = 0;
        }
    }
}

pub(super) struct Window {
    pub(super) sem: Arc<Semaphore>,
    state: Mutex<WindowState>,
}

pub(super) struct WindowState {
    pub(super) aimd: Aimd,
    /// Permits still to be forgotten as slots are released, after a shrink.
    pub(super) debt: usize,
}

impl Window {
    pub(super) fn new(max: usize) -> Self {
        let aimd = Aimd::new(max);
        Window {
            sem: Arc::new(Semaphore::new(aimd.window)),
            state: Mutex::new(WindowState { aimd, debt: 0 }),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, WindowState> {
        // The state stays consistent even if a holder panicked: every update is a few integer
        // assignments, and a release must never panic inside `Drop`.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn reset(&self, max: usize) {
        let mut state = self.lock();
        let old = state.aimd.window;
        state.aimd = Aimd::new(max);
        let new = state.aimd.window;
        self.resize(&mut state, old, new);
    }

    pub(super) fn on_throttled(&self, now: Instant) {
        let mut state = self.lock();
        let old = state.aimd.window;
        state.aimd.on_throttled(now);
        let new = state.aimd.window;
        self.resize(&mut state, old, new);
    }

    pub(super) fn on_success(&self) {
        let mut state = self.lock();
        let old = state.aimd.window;
        state.aimd.on_success();
        let new = state.aimd.window;
        self.resize(&mut state, old, new);
    }

    /// Moves the permit count from `old` to `new`; the caller holds the state lock.
    fn resize(&self, state: &mut WindowState, old: usize, new: usize) {
        if new < old {
            let k = old - new;
            let forgotten = self.sem.forget_permits(k);
            state.debt += k - forgotten;
        } else if new > old {
            let k = new - old;
            let paid = state.debt.min(k);
            state.debt -= paid;
            self.sem.add_permits(k - paid);
        }
    }

    pub(super) fn release(&self, permit: OwnedSemaphorePermit) {
        let mut state = self.lock();
        if state.debt > 0 {
            state.debt -= 1;
            permit.forget();
        } else {
            // Returned under the lock so a concurrent shrink sees it as available.
            drop(permit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn aimd_halves_once_per_wave_floors_at_one_and_recovers() {
        let t0 = Instant::now();
        let mut a = Aimd::new(64);
        assert!(a.on_throttled(t0));
        assert_eq!(a.window, 32);
        // The rest of the same wave counts once.
        for ms in [1, 10, 500, 999] {
            assert!(!a.on_throttled(t0 + Duration::from_millis(ms)));
        }
        assert_eq!((a.window, a.events, a.signals), (32, 1, 5));
        let mut t = t0;
        for _ in 0..10 {
            t += THROTTLE_COOLDOWN;
            a.on_throttled(t);
        }
        assert_eq!(a.window, 1, "floor");
        assert_eq!(a.events, 11);
        // Additive increase: +1 per `window` successes.
        a.on_success();
        assert_eq!(a.window, 2);
        a.on_success();
        assert_eq!(a.window, 2);
        a.on_success();
        assert_eq!(a.window, 3);
        for _ in 0..10_000 {
            a.on_success();
        }
        assert_eq!(a.window, 64, "capped at max");
    }

    #[test]
    fn aimd_throttle_within_cooldown_resets_the_success_streak() {
        let t0 = Instant::now();
        let mut a = Aimd::new(8);
        a.on_throttled(t0);
        assert_eq!(a.window, 4);
        for _ in 0..3 {
            a.on_success();
        }
        a.on_throttled(t0 + Duration::from_millis(100));
        a.on_success();
        assert_eq!(a.window, 4, "streak was reset by the throttle");
        for _ in 0..3 {
            a.on_success();
        }
        assert_eq!(a.window, 5);
    }
}
