//! What the pool's finished tasks come to: each counted into the report, told to `on_event`
//! and journaled ([`tally`]), the journal's records written in batches ([`JournalBatch`]).

use super::copy::Outcome;
use super::object::{Done, Finished};
use super::{Event, Failure, ReadCheck, Report, RunError};
use crate::journal::{Journal, ObjectRecord, State};
use crate::store::StoreErrorKind;
use crate::store::list::Entry;
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
            batch.push(copied_record(entry, o, attempts, unverified));
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

/// Journal records of finished objects, written in batches: when 256 are waiting or the oldest
/// unwritten batch is half a second old, and at the end of the run (each batch one transaction).
pub(super) struct JournalBatch {
    journal: Option<Arc<Mutex<Journal>>>,
    pending: Vec<ObjectRecord>,
    last_flush: Instant,
}

impl JournalBatch {
    pub(super) fn new(journal: Option<Arc<Mutex<Journal>>>) -> JournalBatch {
        JournalBatch {
            journal,
            pending: Vec::new(),
            last_flush: Instant::now(),
        }
    }

    pub(super) fn push(&mut self, r: ObjectRecord) {
        self.pending.push(r);
    }

    /// Write the waiting records if there are 256 or the last write is over 500 ms ago.
    pub(super) fn flush_if_due(&mut self) -> Result<(), RunError> {
        if self.pending.len() >= 256
            || (self.last_flush.elapsed() > Duration::from_millis(500) && !self.pending.is_empty())
        {
            self.flush()?;
            self.last_flush = Instant::now();
        }
        Ok(())
    }

    /// Write the waiting records now (dropped when the run has no journal).
    pub(super) fn flush(&mut self) -> Result<(), RunError> {
        if let Some(j) = &self.journal
            && !self.pending.is_empty()
        {
            j.lock().expect("journal lock").put_all(&self.pending)?;
        }
        self.pending.clear();
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
