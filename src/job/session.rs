//! One run of a pair: its lock, its journal, its interrupt flag and the runtime it runs on.
//!
//! Copy, exec and sync open a [`Session`] the same way: the lock first (one run of a pair at a
//! time; a dry run changes nothing and takes none), then the journal, then the run inside
//! [`Session::run`], which turns the first Ctrl-C into "no new object starts" and a second into
//! exit 130.

use super::{JobError, Observer};
use crate::journal::Journal;
use crate::lock::RunLock;
use crate::store::Store;
use crate::transfer::Counters;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Which journal a session opens.
#[derive(Debug, Clone, Copy)]
pub enum JournalUse<'a> {
    /// None (a copy's dry run).
    None,
    /// This file, made if missing.
    Open(&'a Path),
    /// This file when it exists, else none (sync's dry run reads the journal when there is one,
    /// so it decides as the real run would, but never makes one).
    IfExists(&'a Path),
}

/// What a session is opened with.
#[derive(Debug, Clone)]
pub struct SessionSpec<'a> {
    /// The lock file and what the lock says holds it (`copy SRC DST`); None takes no lock.
    pub lock: Option<(PathBuf, String)>,
    pub journal: JournalUse<'a>,
}

/// An open session: hold it for as long as the run (the lock is released when it is dropped).
pub struct Session {
    runtime: tokio::runtime::Runtime,
    _lock: Option<RunLock>,
    /// The pair's journal, for the run to take.
    pub journal: Option<Journal>,
    /// Set to stop the run: no new object starts; the objects in flight are abandoned.
    pub stop: Arc<AtomicBool>,
    /// The note about a stale lock this session took over (its holder is gone), if it did.
    pub stale_lock: Option<String>,
}

impl Session {
    /// Takes the lock, then opens the journal of `src` → `dst`.
    pub fn open(src: &Store, dst: &Store, spec: SessionSpec<'_>) -> Result<Session, JobError> {
        let runtime = super::runtime()?;
        let (lock, stale_lock) = match &spec.lock {
            Some((path, what)) => {
                let (l, stale) = RunLock::acquire(path, what)?;
                (Some(l), stale)
            }
            None => (None, None),
        };
        let journal = match spec.journal {
            JournalUse::None => None,
            JournalUse::IfExists(p) if !p.exists() => None,
            JournalUse::Open(p) | JournalUse::IfExists(p) => Some(Journal::open_pair(p, src, dst)?),
        };
        Ok(Session {
            runtime,
            _lock: lock,
            journal,
            stop: Arc::new(AtomicBool::new(false)),
            stale_lock,
        })
    }

    /// Runs `f` to its end on the session's runtime.
    pub fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.runtime.block_on(f)
    }

    /// Runs `f` to its end while watching for Ctrl-C: the first sets [`Session::stop`] (the run
    /// stops at once: no new object starts, the objects in flight are abandoned, those finished
    /// are journaled) and tells the observer so, with `also` (what else the stop means, e.g.
    /// "nothing will be deleted") and the count in flight from `counters`; a second gives the
    /// observer its [`Observer::last_words`] and exits the process with 130 at once.
    pub fn run<F: Future>(
        &self,
        f: F,
        also: &str,
        counters: Option<Arc<Counters>>,
        observer: &dyn Observer,
    ) -> F::Output {
        let stop = self.stop.clone();
        self.runtime.block_on(async move {
            let watch = async {
                let mut ctrl_c = Interrupts::new();
                if ctrl_c.next().await {
                    observer.note(&stopping(counters.as_deref(), also));
                    stop.store(true, Ordering::Relaxed);
                    if ctrl_c.next().await {
                        observer.last_words(
                            "interrupted again: quitting now (exit 130); what was journaled is kept, run the same command again to resume",
                        );
                        std::process::exit(crate::exit::Exit::Interrupted as i32);
                    }
                }
                std::future::pending::<()>().await
            };
            tokio::select! {
                out = f => out,
                () = watch => unreachable!("the watch never ends"),
            }
        })
    }
}

/// Ctrl-C, received without losing one: on Unix one SIGINT listener for the whole run, so that a
/// second Ctrl-C right after the first is not missed; elsewhere tokio's `ctrl_c` each time.
struct Interrupts {
    #[cfg(unix)]
    sigint: Option<tokio::signal::unix::Signal>,
}

impl Interrupts {
    fn new() -> Interrupts {
        Interrupts {
            #[cfg(unix)]
            sigint: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok(),
        }
    }

    /// The next Ctrl-C (false: none can be received).
    async fn next(&mut self) -> bool {
        #[cfg(unix)]
        if let Some(s) = &mut self.sigint {
            return s.recv().await.is_some();
        }
        tokio::signal::ctrl_c().await.is_ok()
    }
}

/// The first Ctrl-C's message: "stopping: N transfers in flight abandoned (…), completed objects
/// are journaled{also}; run the same command again to resume; Ctrl-C again to quit now".
fn stopping(counters: Option<&Counters>, also: &str) -> String {
    let n = counters.map_or(0, |c| c.active.load(Ordering::Relaxed));
    let large = counters
        .and_then(|c| c.in_flight.lock().ok().map(|m| m.len()))
        .unwrap_or(0);
    let parts = if large > 0 {
        " (the parts already uploaded are kept: the next run continues those uploads)"
    } else {
        ""
    };
    format!(
        "stopping: {n} transfer{} in flight abandoned{parts}, completed objects are journaled{also}; run the same command again to resume; Ctrl-C again to quit now",
        if n == 1 { "" } else { "s" },
    )
}
