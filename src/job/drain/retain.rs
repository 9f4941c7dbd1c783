//! `drain --keep-remote M [--keep-every K]`: old checkpoints deleted at the destination, behind
//! the same guards as `sync --delete` ([`crate::transfer::sync::Candidates`]: the listing must
//! be whole and in order, `--max-delete` caps the objects one pass deletes, the class's minimum
//! storage duration is priced).
//!
//! **What is a candidate.** Only a folder `DST/NAME/` that holds moverctl's receipt
//! (`.moverctl-receipt.json`) or its deletion marker (`.moverctl-deleting`); any other folder at
//! the destination is never touched. A candidate is **durable** when its receipt parses, names
//! this checkpoint, and lists exactly the objects (keys and sizes) the destination holds for it.
//!
//! **Order and rules.** Candidates are ordered by the step number in their names (the last run of
//! digits: `step-1200`, `global_step300`, `ckpt_000500`) when every name has one, else by name.
//! Walking from the newest, a checkpoint is kept when it is among the newest M, when its step is a
//! multiple of K (`--keep-every`; a name without a step number is always kept then, as positions
//! shift when older ones go), when no newer durable checkpoint exists at the destination (so the
//! newest durable one always stays), when `--keep-local` is given and the fast tier still holds
//! it (so the fast tier never holds a checkpoint whose durable copy is gone; it is retired once
//! `--keep-local` has pruned it), or when it is younger than the destination class's minimum
//! storage duration (the fee deleting it now would cost is reported; `--allow-early-delete`
//! deletes it and reports the fee incurred). Everything else is retired.
//!
//! **Kill -9 at any moment.** A checkpoint is retired in this order: the marker
//! `DST/NAME/.moverctl-deleting` is written, the receipt is deleted (from here on nothing says the
//! checkpoint is durable), its objects are deleted, the marker last. A folder with the marker and
//! no receipt was committed to deletion by an earlier pass: the next pass finishes it (still
//! behind the guards). A folder with both was stopped before its receipt went: it is decided again
//! (and the stale marker removed if it is kept). A folder whose receipt vanished without a marker
//! is no candidate: it is left alone.

use super::{DrainJob, RECEIPT_AT_DESTINATION, RECEIPT_SCHEMA, Receipt};
use crate::catalog::Catalog;
use crate::exit::Exit;
use crate::job::{JobError, Observer};
use crate::money::Usd;
use crate::store::Store;
use crate::store::config::Remotes;
use crate::store::list::Listed;
use crate::transfer::sync::{Candidates, DeletePolicy, Fate, MaxDelete, MinDuration, Verdict};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use object_store::ObjectStoreExt;
use std::collections::BTreeMap;

/// The marker written at `DST/NAME/` before a checkpoint's receipt is deleted.
pub const DELETING_MARKER: &str = ".moverctl-deleting";
pub const MARKER_SCHEMA: &str = "moverctl.deleting/1";

/// Destination retention, as asked for.
#[derive(Debug, Clone)]
pub struct KeepRemote {
    /// Keep the newest this many.
    pub newest: usize,
    /// Also keep each checkpoint whose step is a multiple of this.
    pub every: Option<u64>,
    pub max_delete: MaxDelete,
    pub allow_early_delete: bool,
}

impl KeepRemote {
    /// The flags as given: None without `--keep-remote`; a bad `--max-delete` or a
    /// `--keep-every` of 0 is an error to show as a usage error.
    pub fn from_flags(
        newest: Option<usize>,
        every: Option<u64>,
        max_delete: &str,
        allow_early_delete: bool,
    ) -> Result<Option<KeepRemote>, String> {
        let Some(newest) = newest else {
            return Ok(None);
        };
        if every == Some(0) {
            return Err("--keep-every 0: give a step interval above 0 (1000)".into());
        }
        let max_delete = MaxDelete::parse(max_delete).map_err(|m| format!("--max-delete: {m}"))?;
        Ok(Some(KeepRemote {
            newest,
            every,
            max_delete,
            allow_early_delete,
        }))
    }
}

/// What retention did with one checkpoint at the destination.
#[derive(Debug, Clone, PartialEq)]
pub enum Remote {
    /// Kept, and why; `early_fee`: what deleting it now would cost, when that is why.
    Kept {
        reason: String,
        early_fee: Option<Usd>,
    },
    /// Deleted (its objects and bytes, and the early-deletion fee incurred); `resumed`: an
    /// earlier pass had started deleting it.
    Retired {
        objects: u64,
        bytes: u64,
        early_fee: Option<Usd>,
        resumed: bool,
    },
    /// To be retired, but a guard stopped every delete of the pass: why.
    Held(String),
    /// Deleting it failed part way: its marker stays and the next pass finishes it.
    Failed(String),
}

/// One retention pass at the destination, newest first.
#[derive(Debug, Default)]
pub struct Retention {
    pub checkpoints: Vec<(String, Remote)>,
    /// The delete guards' verdict, when anything was to be deleted.
    pub verdict: Option<Verdict>,
    /// `--max-delete` and the objects it allowed this pass.
    pub max_delete: Option<String>,
    pub allowed: u64,
    /// The pass stopped before deleting anything (a listing cut short or out of order, a store
    /// that refused): why.
    pub error: Option<String>,
    /// Early-deletion fees incurred (`--allow-early-delete`).
    pub early_fees: Usd,
    /// What deleting the checkpoints kept for their minimum duration would cost now.
    pub kept_fees: Usd,
}

impl Retention {
    pub fn exit(&self) -> Exit {
        let failed = |r: &Remote| matches!(r, Remote::Failed(_));
        if self.error.is_some() {
            Exit::Failure
        } else if self.checkpoints.iter().any(|(_, r)| failed(r)) {
            Exit::Partial
        } else if matches!(
            self.verdict,
            Some(Verdict::GuardTripped | Verdict::EmptySource)
        ) {
            Exit::DeleteGuard
        } else {
            Exit::Success
        }
    }
}

/// One folder at the destination as the listing shows it.
#[derive(Debug, Default, Clone)]
struct Folder {
    objects: u64,
    bytes: u64,
    /// The sum of a hash of every (key, size): equal for equal sets, in constant memory.
    digest: u64,
    receipt: bool,
    marker: bool,
    refused: Option<String>,
    /// The early-deletion fee of its objects now, and when the youngest passes the minimum.
    fee: Option<Usd>,
    free_from: Option<DateTime<Utc>>,
}

fn file_hash(key: &str, size: u64) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    size.hash(&mut h);
    h.finish()
}

/// The step number in a checkpoint's name: its last run of ASCII digits.
pub fn step_of(name: &str) -> Option<u64> {
    let end = name.rfind(|c: char| c.is_ascii_digit())? + 1;
    let start = name[..end]
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    name[start..end].parse().ok()
}

/// A candidate as the decision sees it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub name: String,
    pub step: Option<u64>,
    pub receipt: bool,
    pub durable: bool,
    pub marker: bool,
    /// Deleting it now would cost this (younger than the minimum storage duration).
    pub early_fee: Option<Usd>,
    pub free_from: Option<DateTime<Utc>>,
    /// `--keep-local` is given and the fast tier holds it.
    pub on_fast_tier: bool,
}

/// What the decision says for one candidate.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    Keep {
        reason: String,
        early_fee: Option<Usd>,
    },
    Retire {
        early_fee: Option<Usd>,
        resumed: bool,
    },
}

/// Candidates ordered newest first: by step when every name has one, else by name.
pub fn order(mut seen: Vec<Seen>) -> Vec<Seen> {
    if seen.iter().all(|s| s.step.is_some()) {
        seen.sort_by(|a, b| (b.step, &b.name).cmp(&(a.step, &a.name)));
    } else {
        seen.sort_by(|a, b| b.name.cmp(&a.name));
    }
    seen
}

/// The rules of the module, for candidates newest first.
pub fn decide(seen: &[Seen], keep: &KeepRemote, min: Option<&MinDuration>) -> Vec<Plan> {
    let mut newer_durable = false;
    let mut position = 0;
    let mut out = Vec::with_capacity(seen.len());
    for s in seen {
        let keep_for = |reason: String| Plan::Keep {
            reason,
            early_fee: None,
        };
        if s.marker && !s.receipt {
            out.push(Plan::Retire {
                early_fee: s.early_fee,
                resumed: true,
            });
            continue;
        }
        position += 1;
        let plan = if position <= keep.newest {
            keep_for(format!(
                "among the newest {} at the destination",
                keep.newest
            ))
        } else if let Some(k) = keep.every
            && s.step.is_none_or(|st| st % k == 0)
        {
            keep_for(match s.step {
                Some(st) => format!("step {st} is a multiple of --keep-every {k}"),
                None => format!(
                    "no step number in its name: --keep-every {k} cannot tell whether it is a {k}th"
                ),
            })
        } else if !newer_durable {
            keep_for("no newer durable checkpoint at the destination".into())
        } else if s.on_fast_tier {
            keep_for("still on the fast tier: retired once --keep-local has pruned it".into())
        } else if let (Some(fee), Some(m), false) = (s.early_fee, min, keep.allow_early_delete) {
            let until = s
                .free_from
                .map(|t| t.format("%Y-%m-%d").to_string())
                .unwrap_or_default();
            Plan::Keep {
                reason: format!(
                    "younger than {}'s {}-day minimum storage duration: kept until {until} \
                     (deleting it now would cost {fee}; --allow-early-delete deletes it)",
                    m.class, m.days
                ),
                early_fee: Some(fee),
            }
        } else {
            Plan::Retire {
                early_fee: s.early_fee,
                resumed: false,
            }
        };
        out.push(plan);
        newer_durable |= s.durable;
    }
    out
}

/// Retention at the destination; a failure before anything was deleted is in `error`.
pub fn retain(
    catalog: &Catalog,
    remotes: &Remotes,
    job: &DrainJob,
    keep: &KeepRemote,
    observer: &dyn Observer,
) -> Retention {
    let mut out = Retention {
        max_delete: Some(keep.max_delete.to_string()),
        ..Retention::default()
    };
    if let Err(e) = run(catalog, remotes, job, keep, observer, &mut out) {
        out.error = Some(e.to_string());
    }
    out
}

/// The destination store and its class's minimum storage duration.
fn destination(
    catalog: &Catalog,
    remotes: &Remotes,
    dst: &str,
) -> Result<(Store, Option<MinDuration>), JobError> {
    let mut store = Store::open_destination(dst, remotes)?;
    let class = crate::job::trust::resolve_storage_class(catalog, &mut store, None)?;
    let min = crate::job::trust::provider_of(catalog, &store).and_then(|p| {
        let region = crate::job::trust::region_of(remotes, &store);
        crate::job::pricing::SidePricing::new(p, region.as_deref(), class.as_deref()).min_duration()
    });
    Ok((store, min))
}

fn failure(what: String) -> JobError {
    JobError::Failure(what)
}

/// Every folder at the destination, from one listing (which must be whole and in order).
async fn survey(
    store: &Store,
    min: Option<&MinDuration>,
    now: DateTime<Utc>,
) -> Result<(BTreeMap<String, Folder>, u64), JobError> {
    let mut folders: BTreeMap<String, Folder> = BTreeMap::new();
    let mut total = 0;
    let mut listing = crate::store::list::list(store);
    while let Some(item) = listing.next().await {
        let item = item.map_err(|e| {
            failure(format!(
                "listing {} for --keep-remote: {e}; nothing was deleted",
                store.shown()
            ))
        })?;
        total += 1;
        let key = item.key().to_string();
        let Some((name, rest)) = key.split_once('/') else {
            continue;
        };
        let f = folders.entry(name.to_string()).or_default();
        let e = match item {
            Listed::Object(e) => e,
            Listed::Refused { key, reason } => {
                f.refused = Some(format!("{key}: {reason}"));
                continue;
            }
        };
        match rest {
            RECEIPT_AT_DESTINATION => f.receipt = true,
            DELETING_MARKER => f.marker = true,
            _ => {
                f.objects += 1;
                f.bytes += e.size;
                f.digest = f.digest.wrapping_add(file_hash(rest, e.size));
                if let Some(m) = min
                    && let Some(fee) = m.early_fee(e.size, e.last_modified, now)
                {
                    f.fee = Some(f.fee.unwrap_or_default() + fee);
                    let free = e.last_modified + chrono::Duration::days(i64::from(m.days));
                    f.free_from = f.free_from.max(Some(free));
                }
            }
        }
    }
    Ok((folders, total))
}

/// The object at `key`, if it can be read.
async fn read(store: &Store, key: &str) -> Option<bytes::Bytes> {
    let path = store.path_of(key).ok()?;
    store.inner.get(&path).await.ok()?.bytes().await.ok()
}

/// Whether the receipt at `DST/NAME/` is durable proof: it parses, names `name`, and lists
/// exactly the objects the folder holds.
async fn durable(store: &Store, name: &str, f: &Folder) -> bool {
    let Some(bytes) = read(store, &format!("{name}/{RECEIPT_AT_DESTINATION}")).await else {
        return false;
    };
    let Ok(r) = serde_json::from_slice::<Receipt>(&bytes) else {
        return false;
    };
    let digest = r.files.iter().fold(0u64, |d, x| {
        d.wrapping_add(file_hash(&x.file.key, x.file.bytes))
    });
    r.schema == RECEIPT_SCHEMA
        && r.checkpoint == name
        && r.objects == f.objects
        && r.bytes == f.bytes
        && digest == f.digest
}

fn run(
    catalog: &Catalog,
    remotes: &Remotes,
    job: &DrainJob,
    keep: &KeepRemote,
    observer: &dyn Observer,
    out: &mut Retention,
) -> Result<(), JobError> {
    let (store, min) = destination(catalog, remotes, &job.dst)?;
    let now = Utc::now();
    let rt = crate::job::runtime()?;
    let (folders, total) = rt.block_on(survey(&store, min.as_ref(), now))?;
    let mut seen = Vec::new();
    for (name, f) in &folders {
        if !(f.receipt || f.marker) {
            continue;
        }
        if let Some(why) = &f.refused {
            out.checkpoints.push((
                name.clone(),
                Remote::Kept {
                    reason: format!("the store client refuses a key of it ({why})"),
                    early_fee: None,
                },
            ));
            continue;
        }
        seen.push(Seen {
            name: name.clone(),
            step: step_of(name),
            receipt: f.receipt,
            durable: f.receipt && rt.block_on(durable(&store, name, f)),
            marker: f.marker,
            early_fee: f.fee,
            free_from: f.free_from,
            on_fast_tier: job.keep_local.is_some() && job.dir.join(name).is_dir(),
        });
    }
    let seen = order(seen);
    let plans = decide(&seen, keep, min.as_ref());
    let mut retire = Vec::new();
    for (s, p) in seen.iter().zip(plans) {
        match p {
            Plan::Keep { reason, early_fee } => {
                out.kept_fees += early_fee.unwrap_or_default();
                if s.marker {
                    // A pass stopped before the receipt went; this one keeps it.
                    delete(&rt, &store, &format!("{}/{DELETING_MARKER}", s.name))?;
                }
                out.checkpoints
                    .push((s.name.clone(), Remote::Kept { reason, early_fee }));
            }
            Plan::Retire { early_fee, resumed } => retire.push((s.clone(), early_fee, resumed)),
        }
    }
    if out.kept_fees > Usd::default()
        && let Some(m) = &min
    {
        observer.note(&format!(
            "--keep-remote keeps checkpoints younger than {}'s {}-day minimum storage duration until it has passed (deleting them now would cost {}; --allow-early-delete deletes them and reports the fee)",
            m.class, m.days, out.kept_fees
        ));
    }
    if retire.is_empty() {
        return Ok(());
    }
    let kept_objects: u64 = seen
        .iter()
        .filter(|s| s.durable && !retire.iter().any(|r| r.0.name == s.name))
        .map(|s| folders[&s.name].objects)
        .sum();
    let ctx = Ctx {
        store: &store,
        rt: &rt,
        folders: &folders,
        total,
        kept_objects,
    };
    retire_all(&ctx, job, keep, min, now, retire, out)
}

struct Ctx<'a> {
    store: &'a Store,
    rt: &'a tokio::runtime::Runtime,
    folders: &'a BTreeMap<String, Folder>,
    /// Objects the destination listed.
    total: u64,
    /// Objects of the durable checkpoints that stay.
    kept_objects: u64,
}

fn delete(rt: &tokio::runtime::Runtime, store: &Store, key: &str) -> Result<(), JobError> {
    let path = store
        .path_of(key)
        .map_err(|e| failure(format!("{key}: {e}")))?;
    match rt.block_on(store.inner.delete(&path)) {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(failure(format!("deleting {key} at {}: {e}", store.shown()))),
    }
}

fn retire_all(
    ctx: &Ctx,
    job: &DrainJob,
    keep: &KeepRemote,
    min: Option<MinDuration>,
    now: DateTime<Utc>,
    retire: Vec<(Seen, Option<Usd>, bool)>,
    out: &mut Retention,
) -> Result<(), JobError> {
    let policy = DeletePolicy {
        delete: true,
        max_delete: keep.max_delete,
        allow_empty_source: false,
        // Each checkpoint was decided whole above; what is left is priced as it goes.
        allow_early_delete: true,
        min_duration: min,
        now,
        dry_run: false,
        concurrency: job.opts.transfers.max(1),
    };
    let journal = |e: crate::journal::JournalError| failure(e.to_string());
    let cands = candidates(ctx, policy, &retire)?;
    let verdict = cands.verdict(true, ctx.kept_objects, ctx.total);
    out.verdict = Some(verdict);
    out.allowed = keep.max_delete.allowed(ctx.total);
    if !matches!(verdict, Verdict::Deleted | Verdict::Nothing) {
        let to_delete: u64 = retire.iter().map(|r| ctx.folders[&r.0.name].objects).sum();
        let why = match verdict {
            Verdict::GuardTripped => format!(
                "--max-delete {} allows {} of the {} objects at the destination; retiring would delete {to_delete}: nothing was deleted (raise --max-delete to retire them)",
                keep.max_delete, out.allowed, ctx.total
            ),
            other => format!(
                "the delete guards said {}: nothing was deleted",
                other.as_str()
            ),
        };
        for (s, ..) in retire {
            out.checkpoints.push((s.name, Remote::Held(why.clone())));
        }
        return Ok(());
    }
    commit(ctx, &retire, now)?;
    let mut failed: BTreeMap<String, String> = BTreeMap::new();
    let report = ctx
        .rt
        .block_on(
            cands.finish(ctx.store, true, ctx.kept_objects, ctx.total, |k, _, f| {
                if let Fate::DeleteFailed(e) = f {
                    let name = k.split_once('/').map_or(k, |x| x.0);
                    failed.entry(name.to_string()).or_insert_with(|| e.clone());
                }
            }),
        )
        .map_err(journal)?;
    out.early_fees = report.early_fees;
    for (s, early_fee, resumed) in retire {
        let f = &ctx.folders[&s.name];
        let fate = match failed.remove(&s.name) {
            Some(e) => Remote::Failed(e),
            None => match delete(ctx.rt, ctx.store, &format!("{}/{DELETING_MARKER}", s.name)) {
                Err(e) => Remote::Failed(e.to_string()),
                Ok(()) => {
                    if let Some(root) = &ctx.store.local_root {
                        // A local destination keeps empty folders: the checkpoint's goes too.
                        let _ = remove_empty_dirs(&root.join(&s.name));
                    }
                    Remote::Retired {
                        objects: f.objects,
                        bytes: f.bytes,
                        early_fee,
                        resumed,
                    }
                }
            },
        };
        out.checkpoints.push((s.name, fate));
    }
    Ok(())
}

/// The objects of the checkpoints to retire, from a second listing in key order, as the delete
/// guards' candidates; the listing must find what the first one did.
fn candidates(
    ctx: &Ctx,
    policy: DeletePolicy,
    retire: &[(Seen, Option<Usd>, bool)],
) -> Result<Candidates, JobError> {
    let journal = |e: crate::journal::JournalError| failure(e.to_string());
    let mut cands = Candidates::temporary(policy).map_err(journal)?;
    let names: std::collections::BTreeSet<&str> =
        retire.iter().map(|r| r.0.name.as_str()).collect();
    let mut counted: BTreeMap<&str, u64> = BTreeMap::new();
    ctx.rt.block_on(async {
        let mut listing = crate::store::list::list(ctx.store);
        while let Some(item) = listing.next().await {
            let item = item.map_err(|e| failure(format!("listing {}: {e}", ctx.store.shown())))?;
            let Listed::Object(e) = item else { continue };
            let Some((name, rest)) = e.key.split_once('/') else {
                continue;
            };
            let Some(name) = names.get(name) else {
                continue;
            };
            if rest != RECEIPT_AT_DESTINATION && rest != DELETING_MARKER {
                *counted.entry(name).or_default() += 1;
                cands.push(e).map_err(journal)?;
            }
        }
        Ok::<(), JobError>(())
    })?;
    for (s, ..) in retire {
        if counted.get(s.name.as_str()).copied().unwrap_or(0) != ctx.folders[&s.name].objects {
            return Err(failure(format!(
                "{}/{} changed between two listings; nothing was deleted (the next pass decides again)",
                ctx.store.shown(),
                s.name
            )));
        }
    }
    Ok(cands)
}

/// The commitment to retire: each checkpoint's marker, then its receipt (from here on nothing
/// says the checkpoint is durable, and the marker says the deletion is moverctl's).
fn commit(
    ctx: &Ctx,
    retire: &[(Seen, Option<Usd>, bool)],
    now: DateTime<Utc>,
) -> Result<(), JobError> {
    for (s, ..) in retire {
        if !s.marker {
            let f = &ctx.folders[&s.name];
            let marker = serde_json::json!({"schema": MARKER_SCHEMA, "checkpoint": s.name,
                "started_at": now.to_rfc3339(), "objects": f.objects, "bytes": f.bytes});
            let key = format!("{}/{DELETING_MARKER}", s.name);
            let path = ctx
                .store
                .path_of(&key)
                .map_err(|e| failure(format!("{key}: {e}")))?;
            let body = object_store::PutPayload::from(marker.to_string().into_bytes());
            ctx.rt
                .block_on(ctx.store.inner.put(&path, body))
                .map_err(|e| {
                    failure(format!(
                        "writing {key} at {}: {e}; nothing was deleted",
                        ctx.store.shown()
                    ))
                })?;
        }
        if s.receipt {
            delete(
                ctx.rt,
                ctx.store,
                &format!("{}/{RECEIPT_AT_DESTINATION}", s.name),
            )?;
        }
    }
    Ok(())
}

/// Removes `dir` and the folders below it when no file is left in them.
fn remove_empty_dirs(dir: &std::path::Path) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if e.file_type()?.is_dir() {
            remove_empty_dirs(&e.path())?;
        }
    }
    std::fs::remove_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(name: &str, durable: bool) -> Seen {
        Seen {
            name: name.into(),
            step: step_of(name),
            receipt: true,
            durable,
            marker: false,
            early_fee: None,
            free_from: None,
            on_fast_tier: false,
        }
    }

    fn keep(newest: usize, every: Option<u64>) -> KeepRemote {
        KeepRemote {
            newest,
            every,
            max_delete: MaxDelete::Count(1000),
            allow_early_delete: false,
        }
    }

    fn retired(seen: &[Seen], k: &KeepRemote) -> Vec<String> {
        let plans = decide(seen, k, None);
        seen.iter()
            .zip(plans)
            .filter(|(_, p)| matches!(p, Plan::Retire { .. }))
            .map(|(s, _)| s.name.clone())
            .collect()
    }

    #[test]
    fn step_numbers_are_the_last_run_of_digits() {
        assert_eq!(step_of("step-1200"), Some(1200));
        assert_eq!(step_of("global_step300"), Some(300));
        assert_eq!(step_of("v2-ckpt-000500"), Some(500));
        assert_eq!(step_of("step-12.tmp"), Some(12));
        assert_eq!(step_of("final"), None);
    }

    #[test]
    fn newest_m_and_every_kth_by_step_survive() {
        // step-10 .. step-100, unsorted names (step-100 sorts before step-20 by name).
        let all: Vec<Seen> = (1..=10)
            .map(|i| seen(&format!("step-{}", i * 10), true))
            .collect();
        let all = order(all);
        assert_eq!(all[0].name, "step-100");
        let gone = retired(&all, &keep(2, Some(30)));
        // Kept: step-100, step-90 (newest 2), step-60 and step-30 (multiples of 30).
        assert_eq!(
            gone,
            [
                "step-80", "step-70", "step-50", "step-40", "step-20", "step-10"
            ]
        );
    }

    #[test]
    fn nothing_goes_without_a_newer_durable_checkpoint() {
        // The newest two are not durable (their receipts do not match): nothing older goes.
        let all = order(vec![
            seen("step-1", true),
            seen("step-2", true),
            seen("step-3", false),
            seen("step-4", false),
        ]);
        assert_eq!(retired(&all, &keep(1, None)), ["step-1"]);
        let all = order(vec![seen("step-1", true), seen("step-2", false)]);
        assert!(retired(&all, &keep(0, None)).is_empty());
    }

    #[test]
    fn without_step_numbers_order_is_by_name_and_keep_every_keeps_them() {
        let all = order(vec![seen("a", true), seen("b", true), seen("c", true)]);
        assert_eq!(retired(&all, &keep(1, None)), ["b", "a"]);
        assert!(retired(&all, &keep(1, Some(2))).is_empty());
    }
}
