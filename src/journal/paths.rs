//! Where journals live: the state folder and a pair's journal in it.

use std::path::{Path, PathBuf};

/// Where a run's journal lives by default: the state folder, named after source and destination.
pub fn default_path(state_dir: &Path, source: &str, destination: &str) -> PathBuf {
    use sha2::{Digest, Sha256};
    let h = Sha256::digest(format!("{source}\n{destination}").as_bytes());
    let id: String = h.iter().take(8).map(|b| format!("{b:02x}")).collect();
    state_dir.join("journals").join(format!("{id}.sqlite"))
}

/// The journal of a pair in the state folder, keyed by the stores' identities (so any spelling
/// of the same source and destination finds the same journal). A journal an earlier version
/// kept under the spelled locations is moved to the new name, so a move started before the
/// change resumes.
pub fn path_for(state_dir: &Path, src: &crate::store::Store, dst: &crate::store::Store) -> PathBuf {
    let path = default_path(state_dir, &src.identity, &dst.identity);
    let old = default_path(state_dir, &src.shown(), &dst.shown());
    if !path.exists() && old != path && old.exists() {
        for suffix in ["", "-wal", "-shm"] {
            let from = PathBuf::from(format!("{}{suffix}", old.display()));
            if from.exists() {
                let _ = std::fs::rename(&from, format!("{}{suffix}", path.display()));
            }
        }
    }
    path
}

/// The state folder (journals, probe results): `$MOVERCTL_STATE_DIR`, else
/// `$XDG_STATE_HOME/moverctl`, else `~/.local/state/moverctl`; None when none of them is set.
pub fn state_dir_if_known() -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    env("MOVERCTL_STATE_DIR")
        .map(PathBuf::from)
        .or_else(|| env("XDG_STATE_HOME").map(|d| PathBuf::from(d).join("moverctl")))
        .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".local/state/moverctl")))
}

/// As [`state_dir_if_known`], falling back to `.moverctl-state` in the current folder.
pub fn state_dir() -> PathBuf {
    state_dir_if_known().unwrap_or_else(|| PathBuf::from(".moverctl-state"))
}
