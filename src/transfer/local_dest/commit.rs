//! Group commit (`--fsync batch`, the default for local destinations): files are written and
//! renamed into place without a sync each; every batch of them (256 files, 1 GiB or 200 ms,
//! whichever comes first) is made durable with one sync, and only after that sync has returned
//! are the batch's journal rows written (see `tally::JournalBatch`). A crash or power cut can
//! lose files written since the last sync, but never one the journal calls verified: those are
//! copied again by the next run (a local destination file without a journal row is never taken
//! as proven).
//!
//! The sync of a batch of 32 files or more is `syncfs(2)` of each file system the batch's folders
//! are on: one write-back and one journal commit for the whole batch, where one `fsync` per file
//! costs a journal commit each. A smaller batch (large files, or a slow trickle), and any batch
//! before Linux 5.8 (whose `syncfs` did not report write-back errors), is synced file by file:
//! each file `fdatasync`ed and each of its folders up to the destination's root `fsync`ed.
//!
//! Also here: the durability log (`MOVERCTL_DURABILITY_LOG`), a diagnostic the tests use to
//! check the order "file renamed" → "sync returned" → "journal row written" and to simulate the
//! loss of every write no sync covered.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// A batch is synced once it holds this many files…
pub const BATCH_FILES: usize = 256;
/// …or this many bytes…
pub const BATCH_BYTES: u64 = 1 << 30;
/// …or its oldest file has waited this long.
pub const BATCH_AGE: Duration = Duration::from_millis(200);

/// Batches of fewer files (large ones) are synced file by file: a `syncfs` would also write back
/// every other writer's dirty data on the file system, which costs more than a few `fdatasync`s.
pub const SYNCFS_MIN_FILES: usize = 32;

/// The files of a local destination written since the last sync.
pub(in crate::transfer) struct GroupCommit {
    dst: crate::store::Store,
    root: PathBuf,
    files: Vec<PathBuf>,
    bytes: u64,
    oldest: Option<Instant>,
}

impl GroupCommit {
    /// Group commit for `dst` when it is a local folder (None otherwise).
    pub(in crate::transfer) fn for_store(dst: &crate::store::Store) -> Option<GroupCommit> {
        let root = dst.local_root()?.to_path_buf();
        Some(GroupCommit {
            dst: dst.clone(),
            root,
            files: Vec::new(),
            bytes: 0,
            oldest: None,
        })
    }

    /// A file written under `key` (`bytes` long), to be covered by the next sync.
    pub(in crate::transfer) fn written(&mut self, key: &str, bytes: u64) {
        if let Ok(p) = self.dst.path_of(key) {
            self.files.push(self.root.join(p.as_ref()));
        }
        self.bytes += bytes;
        self.oldest.get_or_insert_with(Instant::now);
    }

    /// Whether the files waiting make a batch (by count, bytes or age).
    pub(in crate::transfer) fn due(&self) -> bool {
        self.files.len() >= BATCH_FILES
            || self.bytes >= BATCH_BYTES
            || self.oldest.is_some_and(|t| t.elapsed() >= BATCH_AGE)
    }

    /// The files waiting, handed to one sync ([`sync_batch`]); the next batch starts empty.
    pub(in crate::transfer) fn take(&mut self) -> (PathBuf, Vec<PathBuf>) {
        self.bytes = 0;
        self.oldest = None;
        (self.root.clone(), std::mem::take(&mut self.files))
    }
}

/// Makes `files` (written under `root`) durable: their data, their names and their folders.
pub fn sync_batch(root: &Path, files: &[PathBuf]) -> std::io::Result<()> {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Relaxed);
    note("sync-start", &n.to_string());
    if files.len() >= SYNCFS_MIN_FILES && syncfs_reports_errors() {
        sync_file_systems(root, files)?;
    } else {
        sync_each(root, files)?;
    }
    note("sync-end", &n.to_string());
    Ok(())
}

/// `syncfs` of each file system the files' folders are on (a folder below the root may be
/// another mount).
fn sync_file_systems(root: &Path, files: &[PathBuf]) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let mut by_dev: BTreeMap<u64, PathBuf> = BTreeMap::new();
    by_dev.insert(std::fs::metadata(root)?.dev(), root.to_path_buf());
    let dirs: BTreeSet<&Path> = files.iter().filter_map(|f| f.parent()).collect();
    for d in dirs {
        if let Ok(m) = std::fs::metadata(d) {
            by_dev.entry(m.dev()).or_insert_with(|| d.to_path_buf());
        }
    }
    by_dev.values().try_for_each(|d| syncfs(d))
}

/// `syncfs(2)` of the file system `dir` is on.
pub fn syncfs(dir: &Path) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let d = File::open(dir)?;
    // SAFETY: a valid open descriptor.
    if unsafe { libc::syncfs(d.as_raw_fd()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// `fdatasync` of each file, then `fsync` of each folder from the files' own up to `root`.
pub(super) fn sync_each(root: &Path, files: &[PathBuf]) -> std::io::Result<()> {
    let mut dirs = BTreeSet::new();
    for f in files {
        File::open(f)?.sync_data()?;
        let mut d = f.parent();
        while let Some(dir) = d {
            if !dirs.insert(dir.to_path_buf()) || dir == root || !dir.starts_with(root) {
                break;
            }
            d = dir.parent();
        }
    }
    dirs.insert(root.to_path_buf());
    // Deepest first, so a new folder's entry is synced after its contents.
    for d in dirs.iter().rev() {
        File::open(d)?.sync_all()?;
    }
    Ok(())
}

/// Linux 5.8 and later report write-back errors from `syncfs` (earlier kernels returned 0).
fn syncfs_reports_errors() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        kernel_at_least(&release, (5, 8))
    })
}

fn kernel_at_least(release: &str, want: (u32, u32)) -> bool {
    let mut it = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(|s| s.parse::<u32>().ok());
    match (it.next().flatten(), it.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= want,
        _ => false,
    }
}

/// The durability log: with `MOVERCTL_DURABILITY_LOG=FILE` set, one line per event, appended
/// with one `write` each — `renamed PATH` (a file got its final name), `durable PATH` (it and
/// its folder entry were synced, `--fsync object`), `sync-start N` / `sync-end N` (a batch's or
/// the run's sync), `journaled KEY STATE` (its row committed). With
/// `MOVERCTL_DURABILITY_KILL_AT=KIND:N` (or `N`) the process kills itself with SIGKILL right
/// after the N-th event (of that kind), so a test can stop it between any two of them.
pub fn note(kind: &str, what: &str) {
    let Some(log) = log() else { return };
    let line = format!("{kind} {what}\n");
    let mut f = log.file.lock().expect("durability log lock");
    let _ = f.write_all(line.as_bytes());
    let all = log.count.fetch_add(1, Relaxed) + 1;
    let of_kind = {
        let mut k = log.by_kind.lock().expect("durability log lock");
        let c = k.entry(kind.to_string()).or_default();
        *c += 1;
        *c
    };
    let hit = match &log.kill_at {
        Some((None, n)) => all == *n,
        Some((Some(k), n)) => k == kind && of_kind == *n,
        None => false,
    };
    if hit {
        // SAFETY: signalling this process.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    }
}

/// Whether the durability log is on.
pub fn logging() -> bool {
    log().is_some()
}

struct Log {
    file: Mutex<File>,
    count: AtomicU64,
    by_kind: Mutex<BTreeMap<String, u64>>,
    kill_at: Option<(Option<String>, u64)>,
}

fn log() -> Option<&'static Log> {
    static LOG: OnceLock<Option<Log>> = OnceLock::new();
    LOG.get_or_init(|| {
        let path = std::env::var_os("MOVERCTL_DURABILITY_LOG")?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok()?;
        let kill_at = std::env::var("MOVERCTL_DURABILITY_KILL_AT")
            .ok()
            .and_then(|s| match s.split_once(':') {
                Some((k, n)) => Some((Some(k.to_string()), n.parse().ok()?)),
                None => Some((None, s.parse().ok()?)),
            });
        Some(Log {
            file: Mutex::new(file),
            count: AtomicU64::new(0),
            by_kind: Mutex::new(BTreeMap::new()),
            kill_at,
        })
    })
    .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_versions_compare_by_major_and_minor() {
        assert!(kernel_at_least("6.18.44-fc-v1272\n", (5, 8)));
        assert!(kernel_at_least("5.8.0", (5, 8)));
        assert!(!kernel_at_least("5.4.0-150-generic", (5, 8)));
        assert!(!kernel_at_least("4.19", (5, 8)));
        assert!(!kernel_at_least("", (5, 8)));
    }

    #[test]
    fn both_ways_of_syncing_a_batch_cover_nested_new_folders() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let f = root.join("a/b/c.bin");
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, b"x").unwrap();
        sync_each(root, std::slice::from_ref(&f)).unwrap();
        sync_file_systems(root, &[f]).unwrap();
        // A file that is gone is an error, not a silent success.
        assert!(sync_each(root, &[root.join("gone")]).is_err());
    }

    #[test]
    fn a_batch_is_due_by_count_bytes_or_age() {
        let dir = tempfile::tempdir().unwrap();
        let dst =
            crate::store::Store::open(dir.path().to_str().unwrap(), &Default::default()).unwrap();
        let mut g = GroupCommit::for_store(&dst).unwrap();
        assert!(!g.due());
        g.written("a", 10);
        assert!(!g.due());
        g.written("big", BATCH_BYTES);
        assert!(g.due());
        let (root, files) = g.take();
        assert_eq!(files, vec![root.join("a"), root.join("big")]);
        assert!(!g.due());
        for i in 0..BATCH_FILES {
            g.written(&format!("f{i}"), 1);
        }
        assert!(g.due());
        g.take();
        g.written("slow", 1);
        std::thread::sleep(BATCH_AGE + Duration::from_millis(20));
        assert!(g.due());
    }
}
