//! `drain --keep-local N`: the fast tier's old checkpoints removed, but only those that are
//! durable. A checkpoint beyond the newest N is removed only when its receipt beside it still
//! describes every file on disk and the destination holds the same receipt; anything else (no
//! receipt, changed since, the destination's receipt missing or different) is kept and said so.
//!
//! Removal cannot leave a half-deleted checkpoint that looks complete: the folder is first
//! renamed to a hidden `.moverctl-pruning-NAME` (one atomic step; hidden folders are not
//! checkpoints), then its receipt is removed, then the folder. A pass killed in between leaves a
//! hidden folder the next pass removes, or an orphan receipt it removes.

use super::{DrainJob, Receipt, checkpoints, read_receipt, receipt_beside};
use crate::job::{JobError, Observer};
use crate::store::Store;
use crate::store::config::Remotes;
use std::path::Path;

const TRASH: &str = ".moverctl-pruning-";

/// What `--keep-local` did with one checkpoint beyond the newest N.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pruned {
    /// Removed from the fast tier (its bytes).
    Removed(u64),
    /// Kept, and why.
    Kept(String),
}

/// The receipt the destination holds for checkpoint `name`, if it can be read.
fn at_destination(remotes: &Remotes, dst: &str, name: &str) -> Option<Receipt> {
    let loc = super::join_location(dst, name);
    let store = Store::open(&loc, remotes).ok()?;
    let path = store.path_of(super::RECEIPT_AT_DESTINATION).ok()?;
    let bytes = crate::job::runtime().ok()?.block_on(async {
        use object_store::ObjectStoreExt;
        store.inner.get(&path).await.ok()?.bytes().await.ok()
    })?;
    serde_json::from_slice(&bytes).ok()
}

/// Leftovers of a pass killed while it pruned: hidden trash folders, receipts with no folder.
fn clean_leftovers(dir: &Path, observer: &dyn Observer) -> Result<(), JobError> {
    let io = |e: std::io::Error| JobError::Failure(format!("{}: {e}", dir.display()));
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(TRASH) && entry.file_type().map_err(io)?.is_dir() {
            observer.note(&format!(
                "removing {name}, left by a pass that stopped while pruning"
            ));
            std::fs::remove_dir_all(entry.path()).map_err(io)?;
        } else if let Some(ck) = name.strip_suffix(super::RECEIPT_SUFFIX)
            && !dir.join(ck).exists()
        {
            std::fs::remove_file(entry.path()).map_err(io)?;
        }
    }
    Ok(())
}

/// Prunes the checkpoints beyond the newest `keep`, newest first.
pub fn prune(
    remotes: &Remotes,
    job: &DrainJob,
    keep: usize,
    observer: &dyn Observer,
) -> Result<Vec<(String, Pruned)>, JobError> {
    clean_leftovers(&job.dir, observer)?;
    let mut out = Vec::new();
    for c in checkpoints(&job.dir)?.into_iter().skip(keep) {
        let fate = match read_receipt(&job.dir, &c.name) {
            None => Pruned::Kept("no receipt: not durable yet".into()),
            Some(r) if !r.describes(&c) => Pruned::Kept("changed since its receipt".into()),
            Some(r) => match at_destination(remotes, &job.dst, &c.name) {
                Some(d) if d == r => {
                    remove(&job.dir, &c.name)?;
                    Pruned::Removed(c.bytes())
                }
                _ => Pruned::Kept("the destination's receipt is missing or differs".into()),
            },
        };
        out.push((c.name, fate));
    }
    Ok(out)
}

fn remove(dir: &Path, name: &str) -> Result<(), JobError> {
    let io = |e: std::io::Error| JobError::Failure(format!("pruning {name}: {e}"));
    let trash = dir.join(format!("{TRASH}{name}"));
    std::fs::rename(dir.join(name), &trash).map_err(io)?;
    std::fs::remove_file(receipt_beside(dir, name)).map_err(io)?;
    std::fs::remove_dir_all(&trash).map_err(io)
}
