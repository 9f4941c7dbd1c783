//! The progress display of `copy` and `exec`: bars on stderr when it is a terminal, nothing
//! otherwise.

use crate::transfer::Event;
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// Progress on stderr when it is a terminal (and not --json): one bar for the run (bytes read
/// plus bytes skipped, against the plan's corpus when there is one) and a bar for each of the
/// first few large objects in flight; nothing otherwise.
pub(super) struct Progress {
    multi: Option<indicatif::MultiProgress>,
    main: Option<indicatif::ProgressBar>,
    objects: Arc<AtomicU64>,
    skipped_bytes: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    ticker: Option<std::thread::JoinHandle<()>>,
}

const OBJECT_BARS: usize = 4;

impl Progress {
    pub(super) fn new(
        json: bool,
        total: Option<u64>,
        counters: Arc<crate::transfer::Counters>,
    ) -> Progress {
        let objects = Arc::new(AtomicU64::new(0));
        let skipped_bytes = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        if json || !std::io::stderr().is_terminal() {
            return Progress {
                multi: None,
                main: None,
                objects,
                skipped_bytes,
                stop,
                ticker: None,
            };
        }
        let multi = indicatif::MultiProgress::new();
        let main = multi.add(match total {
            Some(t) => indicatif::ProgressBar::new(t),
            None => indicatif::ProgressBar::no_length(),
        });
        let template = if total.is_some() {
            "{bytes:>10} / {total_bytes:<10} {bar:30} {bytes_per_sec:>12}  eta {eta}  {msg}"
        } else {
            "{bytes:>10} {bytes_per_sec:>12}  {elapsed}  {msg}"
        };
        main.set_style(
            indicatif::ProgressStyle::with_template(template).expect("a valid template"),
        );
        let object_style = indicatif::ProgressStyle::with_template(
            "  {bar:30} {bytes:>10} / {total_bytes:<10} {msg}",
        )
        .expect("a valid template");
        let (m2, main2, obj2, sk2, stop2) = (
            multi.clone(),
            main.clone(),
            objects.clone(),
            skipped_bytes.clone(),
            stop.clone(),
        );
        let ticker = std::thread::spawn(move || {
            let mut bars: Vec<(String, indicatif::ProgressBar)> = Vec::new();
            while !stop2.load(Relaxed) {
                main2.set_position(counters.read_bytes.load(Relaxed) + sk2.load(Relaxed));
                main2.set_message(format!("{} objects done", obj2.load(Relaxed)));
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
                        m2.remove(b);
                    }
                    keep
                });
                for (k, (done, size)) in now {
                    match bars.iter().find(|(n, _)| *n == k) {
                        Some((_, b)) => b.set_position(done),
                        None => {
                            let b = m2.add(indicatif::ProgressBar::new(size));
                            b.set_style(object_style.clone());
                            b.set_message(k.clone());
                            b.set_position(done);
                            bars.push((k, b));
                        }
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            for (_, b) in bars {
                b.finish_and_clear();
            }
        });
        Progress {
            multi: Some(multi),
            main: Some(main),
            objects,
            skipped_bytes,
            stop,
            ticker: Some(ticker),
        }
    }

    pub(super) fn event(&self, ev: &Event) {
        match ev {
            Event::Copied { .. } | Event::WouldCopy { .. } => {
                self.objects.fetch_add(1, Relaxed);
            }
            Event::Skipped { bytes, .. } => {
                self.objects.fetch_add(1, Relaxed);
                self.skipped_bytes.fetch_add(*bytes, Relaxed);
            }
            Event::Failed { key, error } => {
                if let Some(m) = &self.multi {
                    let _ = m.println(format!("failed: {key}: {error}"));
                }
            }
            Event::Refused { .. } => {}
        }
    }

    pub(super) fn finish(mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
        if let Some(b) = &self.main {
            b.finish_and_clear();
        }
    }
}
