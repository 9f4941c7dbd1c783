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
    /// Set to stop the run: no new object starts; the objects in flight finish.
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

    /// Runs `f` to its end while watching for Ctrl-C: the first sets [`Session::stop`] and tells
    /// the observer `stopping` (with the large objects still in flight, from `counters`); a
    /// second exits the process with 130 at once.
    pub fn run<F: Future>(
        &self,
        f: F,
        stopping: &str,
        counters: Option<Arc<Counters>>,
        observer: &dyn Observer,
    ) -> F::Output {
        let stop = self.stop.clone();
        self.runtime.block_on(async move {
            let watch = async {
                if tokio::signal::ctrl_c().await.is_ok() {
                    observer.note(&format!(
                        "{stopping}{} (Ctrl-C again to abort now)",
                        finishing(counters.as_deref())
                    ));
                    stop.store(true, Ordering::Relaxed);
                    if tokio::signal::ctrl_c().await.is_ok() {
                        std::process::exit(130);
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

/// "; finishing N large objects in flight (a, b, c, …)" when there are any.
fn finishing(counters: Option<&Counters>) -> String {
    counters
        .and_then(|c| {
            let m = c.in_flight.lock().ok()?;
            (!m.is_empty()).then(|| {
                let keys: Vec<&str> = m.keys().take(3).map(String::as_str).collect();
                format!(
                    "; finishing {} large object{} in flight ({}{})",
                    m.len(),
                    if m.len() == 1 { "" } else { "s" },
                    keys.join(", "),
                    if m.len() > 3 { ", …" } else { "" }
                )
            })
        })
        .unwrap_or_default()
}
