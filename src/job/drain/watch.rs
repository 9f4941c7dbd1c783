//! A drain that keeps going: a pass, then the next one when the checkpoint folder changes (file
//! system notifications, where the mount delivers them) or after `every` at the latest (polling:
//! Lustre, GPFS and NFS do not tell one node what another wrote, and a `quiet=` rule needs a pass
//! once the quiet time is over even when nothing happens).

use super::{DrainJob, DrainPass, pass};
use crate::catalog::Catalog;
use crate::job::{JobError, Observer};
use crate::store::config::Remotes;
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::Duration;

/// How a long-running drain wakes up.
#[derive(Debug, Clone, Copy)]
pub struct Watch {
    /// The longest wait between passes.
    pub every: Duration,
    /// Also wake on file system notifications under the checkpoint folder.
    pub notify: bool,
}

impl Watch {
    /// `--every` and `--watch` as given: None for one pass (neither given); `--watch` alone polls
    /// every minute besides.
    pub fn from_flags(every: Option<&str>, notify: bool) -> Result<Option<Watch>, String> {
        let every = match every {
            Some(v) => Some(
                humantime::parse_duration(v)
                    .ok()
                    .filter(|d| !d.is_zero())
                    .ok_or_else(|| format!("--every {v:?}: give a duration above 0 (30s, 5m)"))?,
            ),
            None => None,
        };
        Ok(every
            .or(notify.then_some(Duration::from_secs(60)))
            .map(|every| Watch { every, notify }))
    }
}

/// Whether a file system event can make a pass find something new. Reads are not: a pass reads
/// every receipt and the copy reads every file, and inotify reports those opens and reads, so
/// taking them as changes made each pass wake the next one — a drain with nothing to do kept a
/// core busy. A file closed after writing is a change; so is anything created, modified or
/// removed, except the drain's own receipts beside the checkpoints.
fn wakes(e: &notify::Event) -> bool {
    use notify::EventKind;
    use notify::event::{AccessKind, AccessMode};
    match e.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => e.paths.is_empty() || !e.paths.iter().all(|p| is_own_receipt(p)),
    }
}

/// A receipt the drain writes beside a checkpoint (`NAME.moverctl-receipt.json`, or its `.tmp`).
fn is_own_receipt(p: &std::path::Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.strip_suffix(".tmp")
        .unwrap_or(name)
        .ends_with(super::RECEIPT_SUFFIX)
}

/// After a notification, events keep coming while files are written: wait this long for them to
/// settle before the pass (a pass finds an incomplete checkpoint incomplete anyway).
const SETTLE: Duration = Duration::from_millis(500);

/// Passes until the process is stopped or a pass fails outright (a checkpoint that does not
/// become durable is not such a failure: it is in the pass, and tried again next time).
pub fn run(
    catalog: &Catalog,
    remotes: &Remotes,
    job: &DrainJob,
    watch: Watch,
    observer: &dyn Observer,
    mut on_pass: impl FnMut(&DrainPass),
) -> Result<(), JobError> {
    let (tx, rx) = channel::<()>();
    let _watcher = if watch.notify {
        use notify::Watcher;
        let mut w = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if event.is_ok_and(|e| wakes(&e)) {
                let _ = tx.send(());
            }
        })
        .map_err(|e| JobError::Failure(format!("--watch: {e}")))?;
        w.watch(&job.dir, notify::RecursiveMode::Recursive)
            .map_err(|e| JobError::Failure(format!("--watch {}: {e}", job.dir.display())))?;
        Some(w)
    } else {
        drop(tx);
        None
    };
    loop {
        let p = pass(catalog, remotes, job, observer)?;
        on_pass(&p);
        match rx.recv_timeout(watch.every) {
            Ok(()) => {
                std::thread::sleep(SETTLE);
                while rx.try_recv().is_ok() {}
            }
            Err(RecvTimeoutError::Timeout) => {}
            // No watcher: plain polling.
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(watch.every),
        }
    }
}
