//! One run at a time: an advisory lock (`flock`, through `std::fs::File::try_lock`) on a lock
//! file, holding the holder's pid, host, start time and command for the message a second run
//! prints. The operating system drops the lock when its process dies however it dies (`kill -9`,
//! OOM, a reboot), so a lock file left by a dead process is simply taken over; the file's
//! content, emptied at a clean exit, tells the next run that its predecessor did not finish.
//!
//! `flock` is local to a host (and unreliable on some network file systems): runs on different
//! machines must be kept apart by their scheduler (a Kubernetes CronJob's
//! `concurrencyPolicy: Forbid`, systemd's single-instance timers).

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("another moverctl run ({holder}) holds {path}; exiting")]
    Held { path: String, holder: String },
    #[error("lock file {path}: {message}")]
    Io { path: String, message: String },
}

/// The lock file of a source/destination pair in the state folder, from the two stores'
/// identities (`Store::identity`: any spelling of one place is one lock): `copy`, `exec` and
/// `sync` of one pair share it (and the journal it sits beside), so two runs never copy the same
/// objects at once or abort each other's multipart uploads.
pub fn default_path(src: &str, dst: &str) -> PathBuf {
    let state = crate::journal::state_dir();
    let j = crate::journal::default_path(&state, src, dst);
    let id = j
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    state.join(format!("sync-{id}.lock"))
}

/// A held lock; released (and its file emptied) when dropped.
#[derive(Debug)]
pub struct RunLock {
    file: File,
    path: PathBuf,
}

/// What a lock file says about the run that wrote it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holder {
    pub pid: Option<u32>,
    pub host: Option<String>,
    pub started: Option<String>,
}

impl Holder {
    fn parse(text: &str) -> Holder {
        let mut h = Holder::default();
        for line in text.lines() {
            match line.split_once('=') {
                Some(("pid", v)) => h.pid = v.trim().parse().ok(),
                Some(("host", v)) => h.host = Some(v.trim().to_string()),
                Some(("started", v)) => h.started = Some(v.trim().to_string()),
                _ => {}
            }
        }
        h
    }

    fn describe(&self) -> String {
        let pid = self
            .pid
            .map_or_else(|| "pid unknown".to_string(), |p| format!("pid {p}"));
        let host = self
            .host
            .as_deref()
            .map(|h| format!(" on {h}"))
            .unwrap_or_default();
        let started = self
            .started
            .as_deref()
            .map(|s| format!(", started {s}"))
            .unwrap_or_default();
        format!("{pid}{host}{started}")
    }
}

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown-host".into())
}

impl RunLock {
    /// Who holds the lock at `path` now (`pid 42 on host, started …`), or None when no run
    /// does; the file is only read, never written.
    pub fn held_by(path: &Path) -> Option<String> {
        let mut file = OpenOptions::new().read(true).open(path).ok()?;
        match file.try_lock_shared() {
            Ok(()) => None,
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                Some(Holder::parse(&text).describe())
            }
            Err(TryLockError::Error(_)) => None,
        }
    }

    /// Take the lock at `path` (creating the file and its folder) or fail at once with who holds
    /// it. `Ok((lock, Some(message)))` when the file held the record of a run that never
    /// finished (a crash or `kill -9`): the lock is taken over and the message says so.
    pub fn acquire(path: &Path, command: &str) -> Result<(RunLock, Option<String>), LockError> {
        let shown = path.display().to_string();
        let io = |e: std::io::Error| LockError::Io {
            path: shown.clone(),
            message: e.to_string(),
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(LockError::Held {
                    path: shown.clone(),
                    holder: Holder::parse(&text).describe(),
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        let mut before = String::new();
        file.read_to_string(&mut before).map_err(io)?;
        let stale = (!before.trim().is_empty()).then(|| {
            let h = Holder::parse(&before);
            format!(
                "taking over the lock {shown} left by a run that did not finish ({}), which no longer holds it",
                h.describe()
            )
        });
        let record = format!(
            "pid={}\nhost={}\nstarted={}\ncommand={command}\n",
            std::process::id(),
            hostname(),
            humantime::format_rfc3339_seconds(std::time::SystemTime::now()),
        );
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(record.as_bytes()).map_err(io)?;
        file.sync_data().map_err(io)?;
        Ok((
            RunLock {
                file,
                path: path.to_path_buf(),
            },
            stale,
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // Empty the record while still holding the lock: a clean exit leaves nothing to take over.
        let _ = self.file.set_len(0);
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid_and_a_dead_ones_record_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("locks/x.lock");
        let (first, stale) = RunLock::acquire(&p, "sync a b").unwrap();
        assert!(stale.is_none());
        let e = RunLock::acquire(&p, "sync a b").unwrap_err().to_string();
        assert!(
            e.contains(&format!("pid {}", std::process::id())) && e.contains("started"),
            "{e}"
        );
        drop(first);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "");
        // A record without a lock: what `kill -9` leaves behind.
        std::fs::write(&p, "pid=999999\nhost=h\nstarted=2026-01-01T00:00:00Z\n").unwrap();
        let (_l, stale) = RunLock::acquire(&p, "sync a b").unwrap();
        let m = stale.unwrap();
        assert!(
            m.contains("pid 999999") && m.contains("did not finish"),
            "{m}"
        );
    }
}
