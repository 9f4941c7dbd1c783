//! `stage --evict`: the fast tier given back at job end, without losing anything.
//!
//! Decision table, per file the share's manifest lists (nothing else in FAST_DIR is touched):
//!
//! | on the fast tier                         | original at the source                     | fate |
//! |------------------------------------------|--------------------------------------------|------|
//! | gone                                     | —                                          | `gone` (counted) |
//! | not the size or modification time staged | —                                          | kept: changed since staged |
//! | as staged                                | missing (404)                              | kept: original missing (exit 3) |
//! | as staged                                | another size or ETag than recorded         | kept: original changed (exit 3) |
//! | as staged                                | HEAD failed                                | kept: original unreadable (exit 3) |
//! | as staged                                | same size and ETag (or time, without one)  | removed |
//!
//! Then the folders that removals left empty (below FAST_DIR) are removed, the marker, manifest
//! and flag go, and FAST_DIR itself when a stage made it and it is empty. Files in FAST_DIR that
//! no manifest lists (a user's, another share's) are kept and counted. The manifest is read a
//! chunk of lines at a time, each chunk's HEADs in flight together: memory stays flat.

use super::{StagedFile, created_flag, manifest_name, marker_name, mtime_ns};
use crate::exit::Exit;
use crate::job::JobError;
use crate::shard::ShardId;
use crate::store::Store;
use futures::StreamExt;
use std::collections::BTreeSet;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// Why a staged file was kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// Its size or modification time is not what moverctl wrote.
    ChangedHere,
    /// The source no longer has it.
    OriginalMissing,
    /// The source has another version of it (what changed).
    OriginalChanged(String),
    /// The source could not be asked (the error).
    OriginalUnreadable(String),
}

impl Kept {
    /// Whether the fast-tier copy may be the only one left (evict's exit is then 3).
    pub fn only_copy(&self) -> bool {
        !matches!(self, Kept::ChangedHere)
    }

    pub fn reason(&self) -> String {
        match self {
            Kept::ChangedHere => "changed since it was staged (size or modification time)".into(),
            Kept::OriginalMissing => "its original is missing at the source".into(),
            Kept::OriginalChanged(what) => format!("its original changed at the source ({what})"),
            Kept::OriginalUnreadable(e) => format!("its original could not be checked: {e}"),
        }
    }
}

/// What an evict did.
#[derive(Debug, Default)]
pub struct EvictOutcome {
    pub fast_dir: PathBuf,
    pub removed: u64,
    pub removed_bytes: u64,
    /// Listed in the manifest but already gone.
    pub gone: u64,
    /// Staged files kept (each told to the caller as it is decided), and of them those whose
    /// original is missing, changed or unreadable at the source.
    pub kept: u64,
    pub kept_only_copy: u64,
    /// Files left in FAST_DIR that this share's manifest does not list (a few named).
    pub others: u64,
    pub others_named: Vec<String>,
    pub folders_removed: u64,
    pub fast_dir_removed: bool,
}

impl EvictOutcome {
    pub fn exit(&self) -> Exit {
        match self.kept_only_copy > 0 {
            true => Exit::Partial,
            false => Exit::Success,
        }
    }
}

/// Lines of the manifest read at a time (their HEADs in flight together, up to `HEADS`).
const CHUNK: usize = 256;
const HEADS: usize = 32;
/// Kept keys remembered to leave them out of the others' names.
const KEPT_NAMED: usize = 10_000;

/// Evicts share `node` (the whole set when None) of `src` staged in `fast_dir`; `on_kept` hears
/// of each staged file kept, and why, as it is decided (memory does not grow with them).
pub fn evict(
    src: &Store,
    fast_dir: &Path,
    node: Option<ShardId>,
    on_kept: &mut dyn FnMut(&str, &Kept),
) -> Result<EvictOutcome, JobError> {
    let manifest = fast_dir.join(manifest_name(node));
    let file = match std::fs::File::open(&manifest) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(JobError::Usage(format!(
                "{}: no stage manifest ({}) — nothing in it was staged by moverctl{}; nothing was removed",
                fast_dir.display(),
                manifest_name(node),
                match node {
                    Some(n) => format!(" as node {n}"),
                    None => " as a whole set (a node's share needs --node K/N)".into(),
                }
            )));
        }
        Err(e) => return Err(super::io_err(&manifest, e)),
    };
    let mut out = EvictOutcome {
        fast_dir: fast_dir.to_path_buf(),
        ..EvictOutcome::default()
    };
    let mut folders = BTreeSet::new();
    // Kept keys, to leave them out of the others named (bounded: only names depend on it).
    let mut kept_keys = BTreeSet::new();
    let rt = crate::job::runtime()?;
    let mut lines = std::io::BufReader::new(file).lines();
    loop {
        let mut chunk = Vec::with_capacity(CHUNK);
        for line in lines.by_ref().take(CHUNK) {
            let line = line.map_err(|e| super::io_err(&manifest, e))?;
            let f: StagedFile = serde_json::from_str(&line).map_err(|e| {
                JobError::Failure(format!(
                    "{}: a line is not a staged file ({e}); nothing more was removed",
                    manifest.display()
                ))
            })?;
            chunk.push(f);
        }
        if chunk.is_empty() {
            break;
        }
        let fates: Vec<(StagedFile, Fate)> = rt.block_on(
            futures::stream::iter(chunk)
                .map(|f| async move {
                    let fate = decide(src, fast_dir, &f).await;
                    (f, fate)
                })
                .buffered(HEADS)
                .collect(),
        );
        for (f, fate) in fates {
            if let Fate::Keep(k) = &fate {
                on_kept(&f.key, k);
                if kept_keys.len() < KEPT_NAMED {
                    kept_keys.insert(f.key.clone());
                }
            }
            apply(fast_dir, f, fate, &mut out, &mut folders)?;
        }
    }
    finish(fast_dir, node, folders, &kept_keys, &mut out)?;
    Ok(out)
}

enum Fate {
    Gone,
    Remove,
    Keep(Kept),
}

async fn decide(src: &Store, fast_dir: &Path, f: &StagedFile) -> Fate {
    let meta = match std::fs::symlink_metadata(fast_dir.join(&f.key)) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Fate::Gone,
        Err(_) => return Fate::Keep(Kept::ChangedHere),
    };
    if !meta.is_file() || meta.len() != f.bytes || mtime_ns(&meta) != f.mtime_ns {
        return Fate::Keep(Kept::ChangedHere);
    }
    let head = match original(src, &f.key).await {
        Ok(h) => h,
        Err(object_store::Error::NotFound { .. }) => return Fate::Keep(Kept::OriginalMissing),
        Err(e) => return Fate::Keep(Kept::OriginalUnreadable(e.to_string())),
    };
    if head.size != f.bytes {
        return Fate::Keep(Kept::OriginalChanged(format!(
            "{} bytes now, {} when staged",
            head.size, f.bytes
        )));
    }
    match (&f.src_etag, &head.e_tag) {
        (Some(was), Some(now)) if !crate::checksum::same_etag(Some(was), Some(now)) => Fate::Keep(
            Kept::OriginalChanged(format!("ETag {now} now, {was} when staged")),
        ),
        (Some(_), None) => Fate::Keep(Kept::OriginalChanged(
            "the source states no ETag now".into(),
        )),
        (Some(_), Some(_)) => Fate::Remove,
        // No ETag recorded: the modification time must be the one staged.
        (None, _) => {
            let now = head.last_modified.to_rfc3339();
            match &f.src_mtime {
                Some(was) if same_time(was, &head.last_modified) => Fate::Remove,
                was => Fate::Keep(Kept::OriginalChanged(format!(
                    "modified {now}, {} when staged",
                    was.as_deref().unwrap_or("unknown")
                ))),
            }
        }
    }
}

/// What the source says of `key` now, its ETag as its listing gives it (a local source's is
/// moverctl's own, with the change time: what the journal recorded at staging).
async fn original(src: &Store, key: &str) -> Result<object_store::ObjectMeta, object_store::Error> {
    use object_store::ObjectStoreExt;
    let path = src.path_of(key).map_err(|e| object_store::Error::Generic {
        store: "source",
        source: e.to_string().into(),
    })?;
    let mut head = src.inner.head(&path).await?;
    if let Some(root) = src.local_root() {
        let file = root.join(key);
        let meta = std::fs::metadata(&file).map_err(|e| object_store::Error::Generic {
            store: "local",
            source: format!("{}: {e}", file.display()).into(),
        })?;
        head.e_tag = Some(crate::store::local::local_etag(&meta));
    }
    Ok(head)
}

fn same_time(recorded: &str, now: &chrono::DateTime<chrono::Utc>) -> bool {
    chrono::DateTime::parse_from_rfc3339(recorded).is_ok_and(|t| t == *now)
}

fn apply(
    fast_dir: &Path,
    f: StagedFile,
    fate: Fate,
    out: &mut EvictOutcome,
    folders: &mut BTreeSet<PathBuf>,
) -> Result<(), JobError> {
    match fate {
        Fate::Gone => out.gone += 1,
        Fate::Keep(k) => {
            out.kept += 1;
            out.kept_only_copy += u64::from(k.only_copy());
        }
        Fate::Remove => {
            let path = fast_dir.join(&f.key);
            match std::fs::remove_file(&path) {
                Ok(()) => {
                    out.removed += 1;
                    out.removed_bytes += f.bytes;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => out.gone += 1,
                Err(e) => return Err(super::io_err(&path, e)),
            }
            if let Some(p) = path.parent().filter(|p| *p != fast_dir) {
                folders.insert(p.to_path_buf());
            }
        }
    }
    Ok(())
}

/// Empty folders below FAST_DIR that removals left, the share's own files, FAST_DIR when a stage
/// made it and nothing is left; then what else is still there.
fn finish(
    fast_dir: &Path,
    node: Option<ShardId>,
    folders: BTreeSet<PathBuf>,
    kept_keys: &BTreeSet<String>,
    out: &mut EvictOutcome,
) -> Result<(), JobError> {
    // Deepest first, each folder's parents after it (up to FAST_DIR, not included).
    let mut all: BTreeSet<PathBuf> = BTreeSet::new();
    for f in folders {
        let mut p = f.as_path();
        while p != fast_dir && p.starts_with(fast_dir) {
            all.insert(p.to_path_buf());
            match p.parent() {
                Some(up) => p = up,
                None => break,
            }
        }
    }
    let mut by_depth: Vec<PathBuf> = all.into_iter().collect();
    by_depth.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    for d in by_depth {
        // Fails (and is left) when not empty.
        if std::fs::remove_dir(&d).is_ok() {
            out.folders_removed += 1;
        }
    }
    let created = created_flag(fast_dir, node);
    let made_it = created.exists()
        || super::read_marker(&fast_dir.join(marker_name(node)))
            .is_some_and(|m| m.created_fast_dir);
    for p in [
        fast_dir.join(marker_name(node)),
        fast_dir.join(manifest_name(node)),
        created,
    ] {
        super::remove_if_there(&p)?;
    }
    // The kept staged files are all still there: the rest are others'.
    let mut others = (0u64, Vec::new());
    count_files(fast_dir, fast_dir, kept_keys, &mut others);
    out.others = others.0.saturating_sub(out.kept);
    out.others_named = others.1;
    if made_it && std::fs::remove_dir(fast_dir).is_ok() {
        out.fast_dir_removed = true;
    }
    Ok(())
}

/// Files under `dir` that are not moverctl's own (markers and manifests of any share): counted,
/// the first ten that are not `kept` named.
fn count_files(root: &Path, dir: &Path, kept: &BTreeSet<String>, out: &mut (u64, Vec<String>)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            count_files(root, &p, kept, out);
            continue;
        }
        let rel = p.strip_prefix(root).unwrap_or(&p);
        let key = rel
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        if key.starts_with(".moverctl-staged") {
            continue;
        }
        out.0 += 1;
        if out.1.len() < 10 && !kept.contains(&key) {
            out.1.push(key);
        }
    }
}
