//! The progress display of `copy`, `exec` and `sync`: a bar on stderr when it is a terminal, and
//! a periodic stats line (`--stats`, by default every minute when stderr is not a terminal).
//!
//! Both count what is *done*: objects verified at the destination or skipped as already there,
//! plus the parts of large objects already written. Bytes read but not yet written do not move
//! them. Totals come from the plan (`exec`) or from a sizing listing run alongside the copy
//! (`CopyOptions::size_ahead`); until it has finished the display says it is still listing.

use moverctl::transfer::{Counters, Event};
use moverctl::units::{fmt_bytes, fmt_duration};
use rust_decimal::Decimal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// What to show, resolved from the flags.
#[derive(Debug, Clone, Default)]
pub(super) struct Display {
    /// A bar on stderr (a terminal, and not --json).
    pub bar: bool,
    /// A stats line every this often.
    pub stats: Option<Duration>,
    /// Objects and bytes the plan says the move holds (`exec`).
    pub planned: Option<(u64, u64)>,
}

pub(super) struct Progress {
    multi: Option<indicatif::MultiProgress>,
    stop: Arc<AtomicBool>,
    ticker: Option<std::thread::JoinHandle<()>>,
}

const OBJECT_BARS: usize = 4;
const TICK: Duration = Duration::from_millis(200);

/// The numbers a display shows at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Snapshot {
    pub done_objects: u64,
    pub done_bytes: u64,
    pub failed: u64,
    /// (objects, bytes), once known.
    pub total: Option<(u64, u64)>,
    /// Objects the sizing listing has found so far (while it runs).
    pub found: u64,
    pub elapsed: Duration,
}

impl Snapshot {
    fn take(c: &Counters, planned: Option<(u64, u64)>, started: Instant) -> Snapshot {
        let known = c.total_known.load(std::sync::atomic::Ordering::Acquire);
        let total = planned.or_else(|| {
            known.then(|| (c.total_objects.load(Relaxed), c.total_bytes.load(Relaxed)))
        });
        Snapshot {
            done_objects: c.done_objects.load(Relaxed),
            done_bytes: c.progress_bytes(),
            failed: c.failed_objects.load(Relaxed),
            total,
            found: c.total_objects.load(Relaxed),
            elapsed: started.elapsed(),
        }
    }

    /// Bytes per second over the run so far.
    fn rate(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.done_bytes as f64 / s
        } else {
            0.0
        }
    }

    /// Time left at the rate so far, when the total is known and anything is done.
    fn eta(&self) -> Option<Duration> {
        let (_, total) = self.total?;
        let rate = self.rate();
        (rate > 0.0)
            .then(|| Duration::from_secs_f64(total.saturating_sub(self.done_bytes) as f64 / rate))
    }

    /// `1.2 GiB / 3.4 GiB (35.3 %), 120 / 300 objects, 42.0 MiB/s, ETA 53 s, 0 failed`, or
    /// while the total is unknown `1.2 GiB, 120 objects done (listing: 250 found so far), …`.
    pub(super) fn line(&self) -> String {
        let rate = format!("{}/s", fmt_bytes(self.rate() as u64));
        let failed = format!("{} failed", self.failed);
        match self.total {
            Some((objects, bytes)) => {
                let pct = if bytes > 0 {
                    self.done_bytes as f64 * 100.0 / bytes as f64
                } else {
                    100.0
                };
                let eta = self
                    .eta()
                    .map(|d| fmt_duration(Decimal::from(d.as_secs())))
                    .unwrap_or_else(|| "unknown".into());
                format!(
                    "{} / {} ({pct:.1} %), {} / {objects} objects, {rate}, ETA {eta}, {failed}",
                    fmt_bytes(self.done_bytes),
                    fmt_bytes(bytes),
                    self.done_objects
                )
            }
            None => {
                let found = if self.found > 0 {
                    format!(" (listing: {} found so far)", self.found)
                } else {
                    " (listing…)".to_string()
                };
                format!(
                    "{}, {} objects done{found}, {rate}, {failed}",
                    fmt_bytes(self.done_bytes),
                    self.done_objects
                )
            }
        }
    }
}

/// The main bar from a snapshot: its length once the total is known, its position and message.
fn draw_main(main: &indicatif::ProgressBar, snap: &Snapshot, with_length: &mut bool) {
    if let (Some((objects, bytes)), false) = (snap.total, *with_length) {
        main.set_length(bytes);
        main.set_style(style(true));
        *with_length = true;
        main.set_message(format!("{} / {objects} objects", snap.done_objects));
    }
    main.set_position(snap.done_bytes);
    main.set_message(match snap.total {
        Some((objects, _)) => format!(
            "{} / {objects} objects{}",
            snap.done_objects,
            failed_note(snap.failed)
        ),
        None if snap.found > 0 => format!(
            "{} objects done, listing: {} found so far{}",
            snap.done_objects,
            snap.found,
            failed_note(snap.failed)
        ),
        None => format!(
            "{} objects done, listing…{}",
            snap.done_objects,
            failed_note(snap.failed)
        ),
    });
}

impl Progress {
    pub(super) fn new(display: Display, counters: Arc<Counters>) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        if !display.bar && display.stats.is_none() {
            return Progress {
                multi: None,
                stop,
                ticker: None,
            };
        }
        let started = Instant::now();
        let multi = display.bar.then(indicatif::MultiProgress::new);
        let main = multi.as_ref().map(|m| {
            let b = m.add(indicatif::ProgressBar::no_length());
            b.set_style(style(false));
            b
        });
        if let Some(m) = &multi {
            super::log::set_progress(Some(m.clone()));
        }
        let object_style = indicatif::ProgressStyle::with_template(
            "  {bar:30} {decimal_bytes:>9} / {decimal_total_bytes:<9} {msg}",
        )
        .expect("a valid template");
        let (m2, stop2) = (multi.clone(), stop.clone());
        let ticker = std::thread::spawn(move || {
            let mut bars: Vec<(String, indicatif::ProgressBar)> = Vec::new();
            let mut next_stats = display.stats.map(|d| started + d);
            let mut with_length = false;
            while !stop2.load(Relaxed) {
                let snap = Snapshot::take(&counters, display.planned, started);
                if let Some(main) = &main {
                    draw_main(main, &snap, &mut with_length);
                }
                if let Some(m) = &m2 {
                    object_bars(m, &counters, &mut bars, &object_style);
                }
                if let (Some(at), Some(every)) = (next_stats, display.stats)
                    && Instant::now() >= at
                {
                    tracing::info!(target: "moverctl::stats", "stats: {}", snap.line());
                    next_stats = Some(at + every);
                }
                // Parked, not slept: `finish` unparks it, so a run's end never waits for a tick.
                std::thread::park_timeout(TICK);
            }
            for (_, b) in bars {
                b.finish_and_clear();
            }
            if let Some(main) = main {
                main.finish_and_clear();
            }
        });
        Progress {
            multi,
            stop,
            ticker: Some(ticker),
        }
    }

    pub(super) fn event(&self, ev: &Event) {
        if let (Event::Failed { key, error }, Some(m)) = (ev, &self.multi) {
            let _ = m.println(format!("failed: {key}: {error}"));
        }
    }

    pub(super) fn finish(mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.ticker.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        if self.multi.is_some() {
            super::log::set_progress(None);
        }
    }
}

fn failed_note(n: u64) -> String {
    if n > 0 {
        format!(", {n} failed")
    } else {
        String::new()
    }
}

fn style(with_total: bool) -> indicatif::ProgressStyle {
    let template = if with_total {
        "{decimal_bytes:>9} / {decimal_total_bytes:<9} {bar:25} {percent:>3}% {decimal_bytes_per_sec:>10}  ETA {eta:<4} {msg}"
    } else {
        "{decimal_bytes:>9} {decimal_bytes_per_sec:>11}  {elapsed}  {msg}"
    };
    indicatif::ProgressStyle::with_template(template).expect("a valid template")
}

/// One bar per large object in flight (the first few), updated from the counters.
fn object_bars(
    m: &indicatif::MultiProgress,
    counters: &Counters,
    bars: &mut Vec<(String, indicatif::ProgressBar)>,
    style: &indicatif::ProgressStyle,
) {
    let now: Vec<(String, (u64, u64))> = counters
        .in_flight
        .lock()
        .map(|m| {
            m.iter()
                .take(OBJECT_BARS)
                .map(|(k, v)| (k.clone(), *v))
                .collect()
        })
        .unwrap_or_default();
    bars.retain(|(k, b)| {
        let keep = now.iter().any(|(n, _)| n == k);
        if !keep {
            b.finish_and_clear();
            m.remove(b);
        }
        keep
    });
    for (k, (done, size)) in now {
        match bars.iter().find(|(n, _)| *n == k) {
            Some((_, b)) => b.set_position(done),
            None => {
                let b = m.add(indicatif::ProgressBar::new(size));
                b.set_style(style.clone());
                b.set_message(k.clone());
                b.set_position(done);
                bars.push((k, b));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(done: u64, total: Option<(u64, u64)>, secs: u64) -> Snapshot {
        Snapshot {
            done_objects: 3,
            done_bytes: done,
            failed: 1,
            total,
            found: 7,
            elapsed: Duration::from_secs(secs),
        }
    }

    #[test]
    fn the_stats_line_shows_totals_rate_and_eta_once_known() {
        let mib = 1 << 20;
        let s = snap(25 * mib, Some((10, 100 * mib)), 5);
        // 25 MiB in 5 s is 5 MiB/s; 75 MiB left is 15 s.
        assert_eq!(
            s.line(),
            "26.2 MB / 105 MB (25.0 %), 3 / 10 objects, 5.24 MB/s, ETA 15 s, 1 failed"
        );
        let s = snap(25 * mib, None, 5);
        assert_eq!(
            s.line(),
            "26.2 MB, 3 objects done (listing: 7 found so far), 5.24 MB/s, 1 failed"
        );
    }
}
