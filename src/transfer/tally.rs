//! What the pool's finished tasks come to: each counted into the report, told to `on_event`
//! and journaled ([`tally`]), the journal's records written in batches ([`JournalBatch`]) —
//! under group commit only after their files were synced.

use super::copy::Outcome;
use super::local_dest::commit::{BATCH_FILES, GroupCommit, logging, note, sync_batch};
use super::object::{Done, Finished};
use super::{Event, Failure, ReadCheck, Report, RunError};
use crate::journal::{Journal, ObjectRecord, State};
use crate::store::StoreErrorKind;
use crate::store::list::Entry;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The journal's note on an object written but not verified.
pub const UNVERIFIED: &str = "unverified: the source states no digest for this object and no read of it could be checked, so only its size was; it was written without moverctl's CRC64; later runs do not copy the same version again (no copy could be checked better) but keep counting it (--verify size accepts such objects)";

/// Count a finished task into the report, tell `on_event`, and queue its journal record:
/// `verified` for a copy, `failed` for an error (unless a multipart upload is kept open for
/// resume, whose `copying` row stays).
pub(super) fn tally(
    report: &mut Report,
    batch: &mut JournalBatch,
    on_event: &mut dyn FnMut(&Event),
    src_is_cloud: bool,
    (entry, res, attempts): Finished,
) {
    report.retries += u64::from(attempts.saturating_sub(1));
    match &res {
        Err(e) if e.kind() == Some(StoreErrorKind::Auth) => report.auth_streak += 1,
        Err(_) => {}
        Ok(_) => report.auth_streak = 0,
    }
    let res = match res {
        Ok(Done::Skipped(reason)) => {
            report.skipped += 1;
            report.skipped_bytes += entry.size;
            *report.reasons.entry(reason.to_string()).or_default() += 1;
            on_event(&Event::Skipped {
                key: entry.key,
                bytes: entry.size,
                reason: reason.into(),
            });
            return;
        }
        Ok(Done::WouldCopy(reason)) => {
            *report.reasons.entry(reason.to_string()).or_default() += 1;
            report.copied += 1;
            report.copied_bytes += entry.size;
            on_event(&Event::WouldCopy {
                key: entry.key,
                bytes: entry.size,
                reason: reason.into(),
            });
            return;
        }
        Ok(Done::Copied(o, reason)) => {
            if let Some(r) = reason {
                *report.reasons.entry(r.to_string()).or_default() += 1;
            }
            Ok(o)
        }
        Err(e) => Err(e),
    };
    match res {
        Ok(o) => {
            report.copied += 1;
            report.copied_bytes += entry.size;
            if src_is_cloud && o.verified_by.read == ReadCheck::SourceSize {
                report.no_source_digest += 1;
            }
            // Written, but its bytes are the source's only as far as their size says: never
            // journaled as done (the next run copies it again), and the run says so.
            let unverified = o.verified_by.read == ReadCheck::Unverified;
            if unverified {
                report.unverified.push(entry.key.clone());
            }
            *report.verified_by.entry(o.verified_by).or_default() += 1;
            on_event(&Event::Copied {
                key: entry.key.clone(),
                bytes: entry.size,
                verified_by: o.verified_by,
            });
            batch.push_written(copied_record(entry, o, attempts, unverified));
        }
        Err(super::copy::CopyError::SinceInventory { gone, what }) => {
            on_event(&Event::Stale {
                key: entry.key.clone(),
                bytes: entry.size,
                gone,
                reason: what.clone(),
            });
            let list = match gone {
                true => &mut report.gone_since_inventory,
                false => &mut report.changed_since_inventory,
            };
            list.push(Failure {
                key: entry.key.clone(),
                error: what.clone(),
                kind: None,
            });
            // Journaled as failed, never as copied: the next run looks at it again.
            if !batch.keeps_upload(&entry.key) {
                batch.push(failed_record(entry, attempts, what));
            }
        }
        Err(e) => {
            let error = e.to_string();
            let kind = e.kind();
            on_event(&Event::Failed {
                key: entry.key.clone(),
                error: error.clone(),
            });
            report.failed_bytes += entry.size;
            report.failed.push(Failure {
                key: entry.key.clone(),
                error: error.clone(),
                kind,
            });
            // A failed multipart upload keeps its journal row (state copying) for resume.
            if !batch.keeps_upload(&entry.key) {
                batch.push(failed_record(entry, attempts, error));
            }
        }
    }
}

/// The journal's record of a copy: `verified`, or `failed` with [`UNVERIFIED`] when its bytes
/// are the source's only as far as their size says (no CRC64 or MD5 kept then).
fn copied_record(entry: Entry, o: Outcome, attempts: u32, unverified: bool) -> ObjectRecord {
    ObjectRecord {
        key: entry.key,
        size: entry.size,
        src_etag: entry.e_tag,
        src_mtime: Some(entry.last_modified.to_rfc3339()),
        state: if unverified {
            State::Failed
        } else {
            State::Verified
        },
        crc64: (o.crc64_known && !unverified).then(|| crate::checksum::crc64_hex(o.digests.crc64)),
        md5: o
            .digests
            .md5
            .filter(|_| !unverified)
            .map(|m| crate::checksum::hex(&m)),
        dst_etag: o.dst_etag,
        verified_by: Some(o.verified_by.to_string()),
        attempts,
        error: unverified.then(|| UNVERIFIED.to_string()),
        upload_id: o.upload_id,
        part_size: o.part_size,
    }
}

/// The journal's record of a copy that failed with `error`.
fn failed_record(entry: Entry, attempts: u32, error: String) -> ObjectRecord {
    ObjectRecord {
        key: entry.key,
        size: entry.size,
        src_etag: entry.e_tag,
        src_mtime: Some(entry.last_modified.to_rfc3339()),
        state: State::Failed,
        crc64: None,
        md5: None,
        dst_etag: None,
        verified_by: None,
        attempts,
        error: Some(error),
        upload_id: None,
        part_size: None,
    }
}

/// Journal records of finished objects, written in batches, each batch one transaction.
///
/// Without group commit: when 256 are waiting or the last write is half a second old, and at
/// the end of the run. With group commit (`--fsync batch` into a local folder, [`GroupCommit`]):
/// when the batch's files are due (256 files, 1 GiB or 200 ms), they are synced on a blocking
/// thread while the run goes on, and the batch's rows are written only once that sync has
/// returned — seen at the next tick, awaited when the next batch has grown to four times the
/// size meanwhile, and at the end. One sync runs at a time, so at most two batches of rows wait
/// in memory. A failed sync journals the batch's copies as failed (the next run copies them
/// again) and fails the run.
pub(super) struct JournalBatch {
    journal: Option<Arc<Mutex<Journal>>>,
    pending: Vec<ObjectRecord>,
    last_flush: Instant,
    commit: Option<GroupCommit>,
    syncing: Option<Syncing>,
    /// Syncs that failed, for the run's report.
    pub(super) failures: Vec<Failure>,
}

/// A batch whose files are being synced, and its rows waiting for that.
struct Syncing {
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    records: Vec<ObjectRecord>,
    root: PathBuf,
}

impl JournalBatch {
    pub(super) fn new(
        journal: Option<Arc<Mutex<Journal>>>,
        commit: Option<GroupCommit>,
    ) -> JournalBatch {
        JournalBatch {
            journal,
            pending: Vec::new(),
            last_flush: Instant::now(),
            commit,
            syncing: None,
            failures: Vec::new(),
        }
    }

    pub(super) fn push(&mut self, r: ObjectRecord) {
        self.pending.push(r);
    }

    /// A copy's record: under group commit, its file must be synced before the row is written.
    pub(super) fn push_written(&mut self, r: ObjectRecord) {
        if let Some(c) = &mut self.commit {
            c.written(&r.key, r.size);
        }
        self.pending.push(r);
    }

    /// Write the waiting records if there are 256 or the last write is over 500 ms ago; under
    /// group commit, write the rows of a batch whose sync has returned and start the next
    /// batch's sync when it is due.
    pub(super) async fn flush_if_due(&mut self) -> Result<(), RunError> {
        let stale =
            self.last_flush.elapsed() > Duration::from_millis(500) && !self.pending.is_empty();
        let Some(c) = &self.commit else {
            if self.pending.len() >= 256 || stale {
                self.flush().await?;
            }
            return Ok(());
        };
        let due = c.due() || stale;
        if self.syncing.as_ref().is_some_and(|s| s.task.is_finished()) {
            self.finish_sync().await?;
        }
        if !due {
            return Ok(());
        }
        if self.syncing.is_some() {
            if self.pending.len() < 4 * BATCH_FILES {
                return Ok(());
            }
            self.finish_sync().await?;
        }
        self.start_sync()
    }

    /// Write the waiting records now (dropped when the run has no journal), under group commit
    /// after syncing their files.
    pub(super) async fn flush(&mut self) -> Result<(), RunError> {
        if self.commit.is_some() {
            self.finish_sync().await?;
            self.start_sync()?;
            return self.finish_sync().await;
        }
        let records = std::mem::take(&mut self.pending);
        self.last_flush = Instant::now();
        self.write(&records)
    }

    /// Starts syncing the waiting files; their rows wait for it (rows of no file are written).
    fn start_sync(&mut self) -> Result<(), RunError> {
        let (root, files) = self.commit.as_mut().expect("group commit").take();
        let records = std::mem::take(&mut self.pending);
        self.last_flush = Instant::now();
        if files.is_empty() {
            return self.write(&records);
        }
        let r = root.clone();
        let task = tokio::task::spawn_blocking(move || sync_batch(&r, &files));
        self.syncing = Some(Syncing {
            task,
            records,
            root,
        });
        Ok(())
    }

    /// Waits for the sync under way (if any), then writes its rows: as they are when it
    /// returned, copies as failed when it failed.
    async fn finish_sync(&mut self) -> Result<(), RunError> {
        let Some(s) = self.syncing.take() else {
            return Ok(());
        };
        let mut records = s.records;
        if let Err(e) = s.task.await.expect("sync does not panic") {
            let error = format!(
                "syncing {} after writing failed ({e}): the file may not be on disk; the next run copies it again",
                s.root.display()
            );
            for r in records.iter_mut().filter(|r| r.state == State::Verified) {
                r.state = State::Failed;
                r.error = Some(error.clone());
            }
            self.failures.push(Failure {
                key: s.root.display().to_string(),
                error,
                kind: None,
            });
        }
        self.write(&records)
    }

    fn write(&self, records: &[ObjectRecord]) -> Result<(), RunError> {
        if let Some(j) = &self.journal
            && !records.is_empty()
        {
            j.lock().expect("journal lock").put_all(records)?;
            if logging() {
                for r in records {
                    note("journaled", &format!("{} {:?}", r.key, r.state));
                }
            }
        }
        Ok(())
    }

    /// Does the journal keep `key`'s multipart upload open for resume (state `copying` with an
    /// upload id)?
    pub(super) fn keeps_upload(&self, key: &str) -> bool {
        self.journal.as_ref().is_some_and(|j| {
            j.lock()
                .expect("journal lock")
                .get(key)
                .ok()
                .flatten()
                .is_some_and(|r| r.state == State::Copying && r.upload_id.is_some())
        })
    }
}
