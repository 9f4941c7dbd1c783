//! The drain job: checkpoints written to a fast tier (node-local NVMe, a parallel file system)
//! copied to durable object storage as soon as each is complete, each with a **durability
//! receipt** once every one of its files is verified at the destination.
//!
//! A checkpoint is a folder directly under the checkpoint folder (`ckpt/step-1200/`). It is
//! drained only when its completion rule holds ([`Complete`]): PyTorch DCP writes `.metadata` last,
//! other trainers write a marker file, and anything else can be taken as complete once no file in
//! it has changed for a while. Complete checkpoints are drained newest first, each as one copy run
//! of the verified engine ([`super::copy`]: its own journal and lock, so a killed pass resumes).
//!
//! The receipt ([`Receipt`], `moverctl.receipt/1`) lists every file with its size, modification
//! time and the digests the engine verified it by; it is written at the destination first
//! (`DST/NAME/.moverctl-receipt.json`) and then beside the checkpoint
//! (`CKPT_DIR/NAME.moverctl-receipt.json`, written to a temporary name and renamed), so a receipt
//! on the fast tier always has its twin at the destination, and neither exists before every file
//! is verified. A checkpoint whose files differ from its receipt (rewritten after it was drained)
//! is drained again and gets a new receipt; one that changed while it was being copied gets none
//! until a pass finds it still.

pub mod prune;
pub mod retain;
pub mod watch;

use super::copy::CopyJob;
use super::{JobError, Observer};
use crate::catalog::Catalog;
use crate::exit::Exit;
use crate::journal::{Journal, State};
use crate::limit::Limits;
use crate::store::Store;
use crate::store::config::Remotes;
use crate::transfer::CopyOptions;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The receipt's name at the destination, inside the checkpoint's folder.
pub const RECEIPT_AT_DESTINATION: &str = ".moverctl-receipt.json";
/// The receipt's suffix beside the checkpoint: `NAME.moverctl-receipt.json`.
pub const RECEIPT_SUFFIX: &str = ".moverctl-receipt.json";
pub const RECEIPT_SCHEMA: &str = "moverctl.receipt/1";

/// When a checkpoint folder is complete.
#[derive(Debug, Clone)]
pub enum Complete {
    /// PyTorch Distributed Checkpoint: `.metadata` exists (DCP writes it after every shard file).
    Dcp,
    /// A file whose name matches this glob exists in the folder (`COMPLETE`, `*.done`).
    Marker(String, globset::GlobMatcher),
    /// No file in the folder was modified for this long.
    Quiet(Duration),
}

impl Complete {
    /// `dcp`, `quiet=DURATION` (`quiet=2m`), or a marker file's name or glob.
    pub fn parse(s: &str) -> Result<Complete, String> {
        if s == "dcp" {
            return Ok(Complete::Dcp);
        }
        if let Some(d) = s.strip_prefix("quiet=") {
            let d = humantime::parse_duration(d)
                .map_err(|e| format!("--complete-when {s:?}: {e} (e.g. quiet=2m)"))?;
            if d.is_zero() {
                return Err(format!("--complete-when {s:?}: give a quiet time above 0"));
            }
            return Ok(Complete::Quiet(d));
        }
        if s.is_empty() || s.contains('/') {
            return Err(format!(
                "--complete-when {s:?}: use dcp, quiet=DURATION, or a marker file's name or glob (no '/')"
            ));
        }
        let glob = globset::Glob::new(s).map_err(|e| format!("--complete-when {s:?}: {e}"))?;
        Ok(Complete::Marker(s.to_string(), glob.compile_matcher()))
    }

    /// Whether `c` is complete at `now`, or what it still waits for.
    pub fn check(&self, c: &Checkpoint, now: SystemTime) -> Result<(), String> {
        match self {
            Complete::Dcp => match c.files.iter().any(|f| f.key == ".metadata") {
                true => Ok(()),
                false => Err("no .metadata yet (DCP writes it last)".into()),
            },
            Complete::Marker(name, m) => {
                let top = |f: &&LocalFile| !f.key.contains('/');
                match c.files.iter().filter(top).any(|f| m.is_match(&f.key)) {
                    true => Ok(()),
                    false => Err(format!("no marker file {name:?} yet")),
                }
            }
            Complete::Quiet(d) => {
                let quiet_since = now.duration_since(c.newest).unwrap_or_default();
                match quiet_since >= *d {
                    true => Ok(()),
                    false => Err(format!(
                        "a file changed {} ago (quiet for {} needed)",
                        humantime::format_duration(Duration::from_secs(quiet_since.as_secs())),
                        humantime::format_duration(*d)
                    )),
                }
            }
        }
    }
}

/// One file of a checkpoint as the file system shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalFile {
    /// Its path inside the checkpoint folder, `/`-separated: the key it gets at the destination.
    pub key: String,
    pub bytes: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: u64,
}

/// A checkpoint folder and its files.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    pub name: String,
    pub path: PathBuf,
    /// Sorted by key.
    pub files: Vec<LocalFile>,
    /// The newest modification time of its files (the folder's own when it is empty).
    pub newest: SystemTime,
}

impl Checkpoint {
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes).sum()
    }
}

fn walk(
    root: &Path,
    dir: &Path,
    out: &mut Vec<LocalFile>,
    newest: &mut SystemTime,
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = std::fs::symlink_metadata(entry.path())?;
        if meta.is_dir() {
            walk(root, &entry.path(), out, newest)?;
        } else if meta.is_file() {
            let mtime = meta.modified()?;
            *newest = (*newest).max(mtime);
            let rel = entry.path();
            let rel = rel.strip_prefix(root).expect("below the root");
            let key = rel
                .iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            out.push(LocalFile {
                key,
                bytes: meta.len(),
                mtime_ns: mtime
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_nanos() as u64,
            });
        }
    }
    Ok(())
}

/// Reads one checkpoint folder.
pub fn checkpoint(path: &Path) -> std::io::Result<Checkpoint> {
    let mut files = Vec::new();
    let mut newest = std::fs::metadata(path)?.modified()?;
    walk(path, path, &mut files, &mut newest)?;
    files.sort_by(|a, b| a.key.cmp(&b.key));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Checkpoint {
        name,
        path: path.to_path_buf(),
        files,
        newest,
    })
}

/// The checkpoint folders directly under `dir`, newest first (hidden folders are left out).
pub fn checkpoints(dir: &Path) -> Result<Vec<Checkpoint>, JobError> {
    let io = |e: std::io::Error| JobError::Failure(format!("{}: {e}", dir.display()));
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if hidden || !entry.file_type().map_err(io)?.is_dir() {
            continue;
        }
        out.push(checkpoint(&entry.path()).map_err(io)?);
    }
    out.sort_by(|a, b| b.newest.cmp(&a.newest).then_with(|| b.name.cmp(&a.name)));
    Ok(out)
}

/// One file of a receipt: what the file system showed and what the engine verified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptFile {
    #[serde(flatten)]
    pub file: LocalFile,
    pub md5: Option<String>,
    pub crc64nvme: Option<String>,
    /// How the engine verified it (`source-md5+dest-md5`, …).
    pub verified_by: Option<String>,
}

/// A checkpoint's durability receipt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    pub schema: String,
    pub checkpoint: String,
    pub source: String,
    pub destination: String,
    pub objects: u64,
    pub bytes: u64,
    pub files: Vec<ReceiptFile>,
    /// When the newest file was written, when the last was verified (RFC 3339), and the seconds
    /// between: the checkpoint's time to durable.
    pub written_at: String,
    pub durable_at: String,
    pub seconds_to_durable: f64,
}

impl Receipt {
    /// Whether the checkpoint on disk is still exactly what this receipt describes.
    pub fn describes(&self, c: &Checkpoint) -> bool {
        self.files.len() == c.files.len()
            && self.files.iter().zip(&c.files).all(|(r, f)| r.file == *f)
    }
}

/// Where the receipt beside checkpoint `name` lives.
pub fn receipt_beside(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}{RECEIPT_SUFFIX}"))
}

/// The receipt beside `name`, when there is a readable one.
pub fn read_receipt(dir: &Path, name: &str) -> Option<Receipt> {
    let text = std::fs::read_to_string(receipt_beside(dir, name)).ok()?;
    serde_json::from_str(&text).ok()
}

/// A drain, resolved.
pub struct DrainJob {
    /// The checkpoint folder.
    pub dir: PathBuf,
    /// Where checkpoints go: each to `DST/NAME`.
    pub dst: String,
    pub complete: Complete,
    pub opts: CopyOptions,
    pub limits: Limits,
    /// Run with `sh -c` after each receipt, with MOVERCTL_CHECKPOINT, MOVERCTL_RECEIPT and
    /// MOVERCTL_DESTINATION set.
    pub on_durable: Option<String>,
    /// Keep this many newest checkpoints on the fast tier and prune older durable ones
    /// ([`prune`]); None keeps every one.
    pub keep_local: Option<usize>,
    /// Delete old checkpoints at the destination ([`retain`]); None keeps every one.
    pub keep_remote: Option<retain::KeepRemote>,
}

/// What happened to one checkpoint in a pass.
#[derive(Debug)]
pub enum Fate {
    /// Drained and verified now; its receipt.
    Durable(Box<Receipt>),
    /// Its receipt still describes it: nothing to do.
    Unchanged,
    /// Not complete yet (why).
    Incomplete(String),
    /// It changed while it was copied: no receipt; the next pass tries again.
    Changed,
    /// The copy did not verify every file (the run's exit code and what it said).
    Failed(Exit, String),
}

/// A pass over the checkpoint folder: each checkpoint, newest first, with its fate.
#[derive(Debug)]
pub struct DrainPass {
    pub checkpoints: Vec<(String, Fate)>,
    /// With `keep_local`: each checkpoint beyond the newest N, removed or kept.
    pub pruned: Vec<(String, prune::Pruned)>,
    /// With `keep_remote`: what retention did at the destination.
    pub retention: Option<retain::Retention>,
}

impl DrainPass {
    /// The pass's exit code: the first failed checkpoint's, else retention's, else success.
    pub fn exit(&self) -> Exit {
        self.checkpoints
            .iter()
            .find_map(|(_, f)| match f {
                Fate::Failed(e, _) => Some(*e),
                _ => None,
            })
            .or_else(|| self.retention.as_ref().map(retain::Retention::exit))
            .unwrap_or(Exit::Success)
    }
}

fn now_rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

fn join_location(base: &str, name: &str) -> String {
    format!("{}/{name}", base.trim_end_matches('/'))
}

/// One pass: every complete checkpoint without a receipt that still describes it is drained.
pub fn pass(
    catalog: &Catalog,
    remotes: &Remotes,
    job: &DrainJob,
    observer: &dyn Observer,
) -> Result<DrainPass, JobError> {
    let mut out = Vec::new();
    for c in checkpoints(&job.dir)? {
        let fate = match job.complete.check(&c, SystemTime::now()) {
            Err(why) => Fate::Incomplete(why),
            Ok(()) => match read_receipt(&job.dir, &c.name) {
                Some(r) if r.describes(&c) => Fate::Unchanged,
                earlier => {
                    if earlier.is_some() {
                        observer.note(&format!(
                            "checkpoint {} changed after its receipt: draining it again",
                            c.name
                        ));
                    }
                    drain_one(catalog, remotes, job, &c, observer)?
                }
            },
        };
        out.push((c.name, fate));
    }
    // At the destination first: with --keep-local, retention leaves alone what the fast tier
    // still holds, and pruning then never removes a checkpoint whose durable copy went.
    let retention = job
        .keep_remote
        .as_ref()
        .map(|k| retain::retain(catalog, remotes, job, k, observer));
    let pruned = match job.keep_local {
        Some(keep) => prune::prune(remotes, job, keep, observer)?,
        None => Vec::new(),
    };
    Ok(DrainPass {
        checkpoints: out,
        pruned,
        retention,
    })
}

fn drain_one(
    catalog: &Catalog,
    remotes: &Remotes,
    job: &DrainJob,
    c: &Checkpoint,
    observer: &dyn Observer,
) -> Result<Fate, JobError> {
    let src_loc = c.path.to_string_lossy().into_owned();
    let dst_loc = join_location(&job.dst, &c.name);
    let (src, dst) = super::trust::open_pair(catalog, &src_loc, &dst_loc, remotes)?;
    let journal_path = crate::journal::path_for(&crate::journal::state_dir(), &src, &dst);
    let (src_shown, dst_shown) = (src.shown(), dst.shown());
    let mut opts = job.opts.clone();
    // The receipt is built from the journal alone (see `receipt_of`).
    opts.journal_proof_only = true;
    let copy = CopyJob {
        opts,
        limits: job.limits.clone(),
        journal_path: journal_path.clone(),
        plan: None,
        shard: None,
        inventory: None,
    };
    let run = match super::copy::run(catalog, src, dst, copy, observer) {
        Ok(run) => run,
        Err(e) => return Ok(Fate::Failed(e.exit(), e.to_string())),
    };
    if run.exit != Exit::Success || run.report.interrupted {
        let r = &run.report;
        let what = format!(
            "{} failed, {} refused, {} unverified{}",
            r.failed.len(),
            r.refused.len(),
            r.unverified.len(),
            if r.interrupted { ", interrupted" } else { "" }
        );
        return Ok(Fate::Failed(run.exit, what));
    }
    // The checkpoint must be what was copied: a file written meanwhile gets no receipt now.
    let after = checkpoint(&c.path).map_err(|e| JobError::Failure(format!("{src_loc}: {e}")))?;
    if after.files != c.files {
        return Ok(Fate::Changed);
    }
    let Some(receipt) = receipt_of(c, &journal_path, (&src_shown, &dst_shown))? else {
        return Ok(Fate::Changed);
    };
    write_receipt(remotes, job, &dst_loc, &receipt)?;
    if let Some(cmd) = &job.on_durable {
        run_hook(cmd, job, &receipt, &dst_loc, observer);
    }
    Ok(Fate::Durable(Box::new(receipt)))
}

/// The receipt of `c` from its journal: every file verified at its size, else None.
fn receipt_of(
    c: &Checkpoint,
    journal_path: &Path,
    (source, destination): (&str, &str),
) -> Result<Option<Receipt>, JobError> {
    let journal = Journal::open_existing(journal_path)?;
    let mut files = Vec::with_capacity(c.files.len());
    for f in &c.files {
        let Some(rec) = journal.get(&f.key)? else {
            return Ok(None);
        };
        if rec.state != State::Verified || rec.size != f.bytes {
            return Ok(None);
        }
        files.push(ReceiptFile {
            file: f.clone(),
            md5: rec.md5,
            crc64nvme: rec.crc64,
            verified_by: rec.verified_by,
        });
    }
    let durable = SystemTime::now();
    let seconds = durable.duration_since(c.newest).unwrap_or_default();
    Ok(Some(Receipt {
        schema: RECEIPT_SCHEMA.into(),
        checkpoint: c.name.clone(),
        source: source.to_string(),
        destination: destination.to_string(),
        objects: c.files.len() as u64,
        bytes: c.bytes(),
        files,
        written_at: now_rfc3339(c.newest),
        durable_at: now_rfc3339(durable),
        seconds_to_durable: (seconds.as_millis() as f64) / 1000.0,
    }))
}

/// Tries at writing the receipt at the destination before giving up.
const RECEIPT_TRIES: usize = 3;

/// Writes `bytes` at `path` and reads them back: a receipt is small, and one the store holds
/// altered (a flipped byte on the way) would be a receipt that lies. Tried [`RECEIPT_TRIES`]
/// times; a copy that never reads back right is deleted, so no wrong receipt is left behind.
async fn put_read_back(
    store: &Store,
    path: &object_store::path::Path,
    bytes: &[u8],
) -> Result<(), String> {
    use object_store::ObjectStoreExt;
    for _ in 0..RECEIPT_TRIES {
        let payload = object_store::PutPayload::from(bytes.to_vec());
        store
            .inner
            .put(path, payload)
            .await
            .map_err(|e| e.to_string())?;
        let held = store.inner.get(path).await.map_err(|e| e.to_string())?;
        if held.bytes().await.map_err(|e| e.to_string())? == bytes {
            return Ok(());
        }
    }
    let _ = store.inner.delete(path).await;
    Err(format!(
        "it read back different from what was written, {RECEIPT_TRIES} times (the store or the network alters data); no receipt was left there"
    ))
}

/// The receipt at the destination first, then beside the checkpoint (atomically).
fn write_receipt(
    remotes: &Remotes,
    job: &DrainJob,
    dst_loc: &str,
    receipt: &Receipt,
) -> Result<(), JobError> {
    let text = serde_json::to_string_pretty(receipt).expect("receipts serialize") + "\n";
    let store = Store::open_destination(dst_loc, remotes)?;
    let hint = super::trust::credentials_hint(&[&store]);
    let path = store
        .path_of(RECEIPT_AT_DESTINATION)
        .map_err(|e| JobError::Failure(format!("{dst_loc}: {e}")))?;
    super::runtime()?
        .block_on(put_read_back(&store, &path, text.as_bytes()))
        .map_err(|e| {
            JobError::Failure(format!("writing the receipt at {dst_loc}: {e}"))
                .naming_credentials(&hint)
        })?;
    let beside = receipt_beside(&job.dir, &receipt.checkpoint);
    let tmp = beside.with_extension("json.tmp");
    let io = |e: std::io::Error| JobError::Failure(format!("{}: {e}", beside.display()));
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(text.as_bytes()).map_err(io)?;
        f.sync_all().map_err(io)?;
    }
    std::fs::rename(&tmp, &beside).map_err(io)?;
    if let Ok(d) = std::fs::File::open(&job.dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

fn run_hook(cmd: &str, job: &DrainJob, receipt: &Receipt, dst_loc: &str, observer: &dyn Observer) {
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .env("MOVERCTL_CHECKPOINT", &receipt.checkpoint)
        .env(
            "MOVERCTL_RECEIPT",
            receipt_beside(&job.dir, &receipt.checkpoint),
        )
        .env("MOVERCTL_DESTINATION", dst_loc)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => observer.note(&format!(
            "--on-durable for checkpoint {} exited with {s} (the checkpoint is durable all the same)",
            receipt.checkpoint
        )),
        Err(e) => observer.note(&format!(
            "--on-durable for checkpoint {} could not run: {e}",
            receipt.checkpoint
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ck(files: &[(&str, u64)], newest: SystemTime) -> Checkpoint {
        Checkpoint {
            name: "step-1".into(),
            path: PathBuf::from("/x/step-1"),
            files: files
                .iter()
                .map(|(k, b)| LocalFile {
                    key: k.to_string(),
                    bytes: *b,
                    mtime_ns: 1,
                })
                .collect(),
            newest,
        }
    }

    #[test]
    fn completion_rules() {
        let now = SystemTime::now();
        let dcp = Complete::parse("dcp").unwrap();
        assert!(dcp.check(&ck(&[("__0_0.distcp", 5)], now), now).is_err());
        assert!(
            dcp.check(&ck(&[("__0_0.distcp", 5), (".metadata", 1)], now), now)
                .is_ok()
        );
        let marker = Complete::parse("*.done").unwrap();
        assert!(marker.check(&ck(&[("model.pt", 5)], now), now).is_err());
        assert!(
            marker.check(&ck(&[("sub/x.done", 5)], now), now).is_err(),
            "top level only"
        );
        assert!(marker.check(&ck(&[("step.done", 0)], now), now).is_ok());
        let quiet = Complete::parse("quiet=30s").unwrap();
        assert!(quiet.check(&ck(&[("a", 1)], now), now).is_err());
        let old = now - Duration::from_secs(31);
        assert!(quiet.check(&ck(&[("a", 1)], old), now).is_ok());
        assert!(Complete::parse("quiet=0s").is_err());
        assert!(Complete::parse("a/b").is_err());
        assert!(Complete::parse("").is_err());
    }
}
