//! The stage job: a dataset copied onto a fast tier (a parallel file system mount, node-local
//! NVMe) before a job runs, with a **ready marker** a job can wait on, and removed again at job
//! end ([`evict`]) only where moverctl put it and the object store still holds the original.
//!
//! **Shares.** `--node K/N` stages share K of N: the source is listed once, its keys and sizes go
//! through the same bounded split as `plan --shards N` ([`crate::shard::Sketch`], balanced by
//! bytes and objects), and share K is the K-th contiguous key range ([`crate::shard::range_of`]).
//! Every node lists the same source and computes the same boundaries, so the N shares are
//! disjoint and together cover every key; the boundaries' digest (`split`) is written in each
//! marker and [`ready`] refuses markers whose splits differ (the source changed between the
//! nodes' listings). With `--plan` the shares are the ranges a plan fixed (`plan --shards N`):
//! no node lists the whole source, and a source that changes cannot move the boundaries.
//! Without `--node` the whole source is staged.
//!
//! **Copy.** Each share is one run of the verified engine ([`super::copy`]) from the source to
//! FAST_DIR with its own journal and lock (the share is part of the destination's identity), so
//! a rerun copies only what is not verified yet and a killed stage resumes.
//!
//! **Marker and manifest.** After the run, every verified object of the share in the journal is
//! written to the manifest (`FAST_DIR/.moverctl-staged[-K-of-N].files.jsonl`, one [`StagedFile`]
//! a line: the size and modification time of the file moverctl wrote and the source's ETag and
//! digests), a page at a time; then, only when every object of the share verified, the marker
//! (`FAST_DIR/.moverctl-staged[-K-of-N].json`, [`Marker`]), written to a temporary name, synced
//! and renamed. A stage that starts removes the share's old marker first: a marker on disk always
//! means the last stage of that share finished whole.

pub mod evict;
pub mod ready;

use super::copy::CopyJob;
use super::{JobError, Observer};
use crate::catalog::Catalog;
use crate::exit::Exit;
use crate::journal::Journal;
use crate::limit::Limits;
use crate::shard::{KeyRange, ShardId, Sketch};
use crate::store::Store;
use crate::store::config::Remotes;
use crate::transfer::{CopyOptions, Report};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub const MARKER_SCHEMA: &str = "moverctl.staged/1";

/// `--node K/N`, or `auto`: Slurm's node number and node count (`SLURM_NODEID`,
/// `SLURM_NNODES`) as `srun --ntasks-per-node=1` sets them. `env` looks a variable up.
pub fn parse_node(spec: &str, env: impl Fn(&str) -> Option<String>) -> Result<ShardId, String> {
    let spec = spec.trim();
    let (k, n) = if spec == "auto" {
        let get = |v: &str| {
            env(v).filter(|s| !s.trim().is_empty()).ok_or_else(|| {
                format!("--node auto: {v} is not set (run it under srun, or give --node K/N)")
            })
        };
        (get("SLURM_NODEID")?, get("SLURM_NNODES")?)
    } else {
        let (k, n) = spec
            .split_once('/')
            .ok_or_else(|| format!("--node {spec:?}: use K/N (e.g. 0/4) or auto"))?;
        (k.to_string(), n.to_string())
    };
    let index: u32 = k
        .trim()
        .parse()
        .map_err(|_| format!("--node {spec:?}: {k:?} is not a node number"))?;
    let count: u32 = n
        .trim()
        .parse()
        .map_err(|_| format!("--node {spec:?}: {n:?} is not a node count"))?;
    if count == 0 || index >= count {
        return Err(format!(
            "--node {spec}: nodes are numbered 0 to N-1, and N is at least 1"
        ));
    }
    Ok(ShardId { index, count })
}

/// The marker's file name: `.moverctl-staged.json`, or `.moverctl-staged-K-of-N.json`.
pub fn marker_name(node: Option<ShardId>) -> String {
    match node {
        None => ".moverctl-staged.json".into(),
        Some(s) => format!(".moverctl-staged-{}-of-{}.json", s.index, s.count),
    }
}

/// The manifest's file name, beside the marker.
pub fn manifest_name(node: Option<ShardId>) -> String {
    marker_name(node).replace(".json", ".files.jsonl")
}

/// A node's share as its marker records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeShare {
    pub index: u32,
    pub count: u32,
    /// The share's keys: after `start` (exclusive; None from the first key) up to `end`
    /// (inclusive; None: no end).
    pub start: Option<String>,
    pub end: Option<String>,
    /// A digest of the N-1 boundaries: equal on every node that listed the same source.
    pub split: String,
}

/// The ready marker (`moverctl.staged/1`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Marker {
    pub schema: String,
    pub source: String,
    pub fast_dir: String,
    pub node: Option<NodeShare>,
    /// Objects and bytes of the share, every one verified on the fast tier.
    pub objects: u64,
    pub bytes: u64,
    /// Of them, copied by this stage (the rest were verified before).
    pub copied: u64,
    pub copied_bytes: u64,
    /// The manifest's file name (in FAST_DIR) and how many files it lists.
    pub manifest: String,
    pub manifest_files: u64,
    /// FAST_DIR did not exist before the first stage: evict removes it once empty.
    pub created_fast_dir: bool,
    pub staged_at: String,
    pub seconds: f64,
}

/// One line of the manifest: a file moverctl staged, as it wrote it, and its original.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StagedFile {
    pub key: String,
    pub bytes: u64,
    /// The staged file's modification time (nanoseconds since the Unix epoch) after staging.
    pub mtime_ns: u64,
    /// What the source said of the original when it was staged.
    pub src_etag: Option<String>,
    pub src_mtime: Option<String>,
    pub md5: Option<String>,
    pub crc64nvme: Option<String>,
}

/// The pair of a stage: the source and FAST_DIR opened, and whether FAST_DIR existed.
pub struct StagePair {
    pub src: Store,
    pub dst: Store,
    pub source: String,
    pub fast_dir: PathBuf,
    pub created_fast_dir: bool,
}

/// Opens `src` and the fast-tier folder `fast_dir` (made when missing, by the copy).
pub fn open(
    catalog: &Catalog,
    src: &str,
    fast_dir: &Path,
    remotes: &Remotes,
) -> Result<StagePair, JobError> {
    if fast_dir.exists() && !fast_dir.is_dir() {
        return Err(JobError::Usage(format!(
            "{} is not a folder: give the fast-tier folder to stage into",
            fast_dir.display()
        )));
    }
    let created_fast_dir = !fast_dir.exists();
    let dst = fast_dir.to_string_lossy().into_owned();
    let (src_store, dst_store) = super::trust::open_pair(catalog, src, &dst, remotes)?;
    Ok(StagePair {
        source: src.to_string(),
        src: src_store,
        dst: dst_store,
        fast_dir: fast_dir.to_path_buf(),
        created_fast_dir,
    })
}

/// A stage, resolved.
pub struct StageJob {
    pub opts: CopyOptions,
    pub limits: Limits,
    /// `--journal`; None: the share's own in the state folder.
    pub journal: Option<PathBuf>,
    pub node: Option<ShardId>,
    /// `--plan`: the node shares are this plan's ranges (`plan --shards N`), not a split of a
    /// listing made now.
    pub plan_shards: Option<crate::plan::file::Shards>,
}

/// What a stage did.
pub struct StageOutcome {
    pub report: Report,
    pub exit: Exit,
    pub source: String,
    pub fast_dir: PathBuf,
    pub node: Option<NodeShare>,
    /// The marker written (every object of the share verified), else None.
    pub marker: Option<(PathBuf, Marker)>,
    /// The manifest and how many files it lists (written after every run that was not a dry
    /// run, also a failed one: evict needs to know what was staged).
    pub manifest: Option<(PathBuf, u64)>,
}

/// Share `node.index` of `node.count` of `src`'s keys, from one listing (see the module notes).
fn share_of(src: &Store, node: ShardId) -> Result<NodeShare, JobError> {
    use futures::StreamExt;
    let mut sketch = Sketch::new(node.count);
    let hint = super::trust::credentials_hint(&[src]);
    super::runtime()?
        .block_on(async {
            let mut stream = crate::store::list::list(src);
            while let Some(item) = stream.next().await {
                if let crate::store::list::Listed::Object(e) = item? {
                    sketch.add(&e.key, e.size);
                }
            }
            Ok::<_, JobError>(())
        })
        .map_err(|e| e.naming_credentials(&hint))?;
    let ranges = sketch.split(node.count);
    let split = {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for r in &ranges {
            h.update(r.range.end.as_deref().unwrap_or("").as_bytes());
            h.update([0]);
        }
        h.finalize()
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let r = &ranges[node.index as usize].range;
    Ok(NodeShare {
        index: node.index,
        count: node.count,
        start: r.start.clone(),
        end: r.end.clone(),
        split,
    })
}

/// Share `node.index` of a plan's split (`plan --shards N --save`): ranges fixed when the plan was
/// made, so no node lists the whole source and every node gets the same boundaries even if the
/// source changes meanwhile; `split` is the plan's split id.
fn planned_share(shards: &crate::plan::file::Shards, node: ShardId) -> Result<NodeShare, JobError> {
    if shards.count != node.count {
        return Err(JobError::Usage(format!(
            "--node {node}: the plan splits the source into {} shares, not {}",
            shards.count, node.count
        )));
    }
    let r = shards.range(node.index);
    Ok(NodeShare {
        index: node.index,
        count: node.count,
        start: r.start,
        end: r.end,
        split: shards.id.clone(),
    })
}

fn io_err(path: &Path, e: std::io::Error) -> JobError {
    JobError::Failure(format!("{}: {e}", path.display()))
}

/// Writes `text` to `path` through a temporary file, synced, then renamed.
pub(crate) fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), JobError> {
    let tmp = path.with_extension("tmp");
    {
        let f = std::fs::File::create(&tmp).map_err(|e| io_err(&tmp, e))?;
        let mut w = std::io::BufWriter::new(f);
        write(&mut w).map_err(|e| io_err(&tmp, e))?;
        let f = w.into_inner().map_err(|e| io_err(&tmp, e.into_error()))?;
        f.sync_all().map_err(|e| io_err(&tmp, e))?;
    }
    std::fs::rename(&tmp, path).map_err(|e| io_err(path, e))?;
    if let Some(d) = path.parent().and_then(|p| std::fs::File::open(p).ok()) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Removes a file that may not exist.
fn remove_if_there(path: &Path) -> Result<(), JobError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_err(path, e)),
        _ => Ok(()),
    }
}

/// Runs the stage (see the module notes).
pub fn run(
    catalog: &Catalog,
    pair: StagePair,
    job: StageJob,
    observer: &dyn Observer,
) -> Result<StageOutcome, JobError> {
    let StagePair {
        mut src,
        mut dst,
        source,
        fast_dir,
        created_fast_dir,
    } = pair;
    let dry_run = job.opts.dry_run;
    let marker_path = fast_dir.join(marker_name(job.node));
    if !dry_run {
        std::fs::create_dir_all(&fast_dir).map_err(|e| io_err(&fast_dir, e))?;
        // From here until the share is whole again, no marker says it is ready.
        remove_if_there(&marker_path)?;
    }
    let node = match (job.node, &job.plan_shards) {
        (Some(n), Some(p)) => Some(planned_share(p, n)?),
        (Some(n), None) => Some(share_of(&src, n)?),
        (None, Some(_)) => {
            return Err(JobError::Usage(
                "--plan gives the shares of --node K/N: add --node".into(),
            ));
        }
        (None, None) => None,
    };
    if let Some(n) = &node {
        let range = KeyRange {
            start: n.start.clone(),
            end: n.end.clone(),
        };
        src.range = Some(range.clone());
        dst.range = Some(range);
        // Shares of one folder are separate pairs: their own journal and lock.
        dst.identity = format!("{} stage share {}/{}", dst.identity, n.index, n.count);
    }
    let journal_path = job
        .journal
        .clone()
        .unwrap_or_else(|| crate::journal::path_for(&crate::journal::state_dir(), &src, &dst));
    let src_shown = src.shown();
    let range = src.range.clone().unwrap_or_default();
    let copy = CopyJob {
        opts: job.opts,
        limits: job.limits,
        journal_path: journal_path.clone(),
        plan: None,
        shard: None,
        inventory: None,
    };
    let started = SystemTime::now();
    let out = super::copy::run(catalog, src, dst, copy, observer)?;
    let mut outcome = StageOutcome {
        report: out.report,
        exit: out.exit,
        source: src_shown,
        fast_dir: fast_dir.clone(),
        node,
        marker: None,
        manifest: None,
    };
    if dry_run {
        return Ok(outcome);
    }
    if created_fast_dir {
        let flag = created_flag(&fast_dir, job.node);
        std::fs::write(&flag, b"").map_err(|e| io_err(&flag, e))?;
    }
    let manifest_path = fast_dir.join(manifest_name(job.node));
    let files = write_manifest(&journal_path, &range, &fast_dir, &manifest_path)?;
    outcome.manifest = Some((manifest_path, files));
    let r = &outcome.report;
    if outcome.exit != Exit::Success || r.interrupted {
        return Ok(outcome);
    }
    let seconds = SystemTime::now()
        .duration_since(started)
        .unwrap_or_default()
        .as_millis() as f64
        / 1000.0;
    let marker = Marker {
        schema: MARKER_SCHEMA.into(),
        source,
        fast_dir: fast_dir.display().to_string(),
        node: outcome.node.clone(),
        objects: r.copied + r.skipped,
        bytes: r.copied_bytes + r.skipped_bytes,
        copied: r.copied,
        copied_bytes: r.copied_bytes,
        manifest: manifest_name(job.node),
        manifest_files: files,
        created_fast_dir: created_flag(&fast_dir, job.node).exists(),
        staged_at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        seconds,
    };
    let text = serde_json::to_string_pretty(&marker).expect("markers serialize") + "\n";
    write_atomically(&marker_path, |w| w.write_all(text.as_bytes()))?;
    outcome.marker = Some((marker_path, marker));
    Ok(outcome)
}

/// The flag file a stage that made FAST_DIR leaves beside its manifest (the marker is removed at
/// the start of every stage, so it cannot carry this from the first stage to evict).
pub fn created_flag(fast_dir: &Path, node: Option<ShardId>) -> PathBuf {
    fast_dir.join(marker_name(node).replace(".json", ".created"))
}

/// Every verified object of `range` in the journal, with the staged file's size and time, into
/// the manifest (a page of the journal at a time). A file whose size on disk is not the verified
/// size is left out: moverctl did not leave it as it is now. Returns how many files it lists.
fn write_manifest(
    journal_path: &Path,
    range: &KeyRange,
    fast_dir: &Path,
    manifest: &Path,
) -> Result<u64, JobError> {
    let journal = Journal::open_existing(journal_path)?;
    let mut count = 0u64;
    let mut failed: Option<JobError> = None;
    write_atomically(manifest, |w| {
        let mut after: Option<String> = range.start.clone();
        loop {
            let page = match journal.verified_page(after.as_deref(), 1000) {
                Ok(p) => p,
                Err(e) => {
                    failed = Some(e.into());
                    return Ok(());
                }
            };
            let Some(last) = page.last() else {
                return Ok(());
            };
            after = Some(last.key.clone());
            for rec in page {
                if range.past_end(&rec.key) {
                    return Ok(());
                }
                let Some(meta) = std::fs::metadata(fast_dir.join(&rec.key))
                    .ok()
                    .filter(|m| m.is_file() && m.len() == rec.size)
                else {
                    continue;
                };
                let f = StagedFile {
                    key: rec.key,
                    bytes: rec.size,
                    mtime_ns: mtime_ns(&meta),
                    src_etag: rec.src_etag,
                    src_mtime: rec.src_mtime,
                    md5: rec.md5,
                    crc64nvme: rec.crc64,
                };
                let line = serde_json::to_string(&f).expect("manifest lines serialize");
                writeln!(w, "{line}")?;
                count += 1;
            }
        }
    })?;
    match failed {
        Some(e) => Err(e),
        None => Ok(count),
    }
}

/// A file's modification time in nanoseconds since the Unix epoch (0 when unknown).
pub fn mtime_ns(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// The marker at `path`, when there is a readable one.
pub fn read_marker(path: &Path) -> Option<Marker> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str::<Marker>(&text)
        .ok()
        .filter(|m| m.schema == MARKER_SCHEMA)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_specs() {
        let none = |_: &str| None;
        assert_eq!(
            parse_node("1/4", none).unwrap(),
            ShardId { index: 1, count: 4 }
        );
        assert!(parse_node("4/4", none).is_err());
        assert!(parse_node("0/0", none).is_err());
        assert!(parse_node("x", none).is_err());
        assert!(
            parse_node("auto", none)
                .unwrap_err()
                .contains("SLURM_NODEID")
        );
        let slurm = |v: &str| match v {
            "SLURM_NODEID" => Some("2".to_string()),
            "SLURM_NNODES" => Some("3".to_string()),
            _ => None,
        };
        assert_eq!(
            parse_node("auto", slurm).unwrap(),
            ShardId { index: 2, count: 3 }
        );
        assert_eq!(marker_name(None), ".moverctl-staged.json");
        assert_eq!(
            manifest_name(Some(ShardId { index: 0, count: 2 })),
            ".moverctl-staged-0-of-2.files.jsonl"
        );
    }
}
