//! A shard's progress on a store, so that its retry can land on a fresh machine.
//!
//! Under the progress location (`<root>` = by default `.moverctl-progress/<plan-id>/` beside the
//! destination prefix) each shard `K` writes:
//!
//! - `shard-K/seg-<millis>-<pid>-<seq>.jsonl`: the records the journal committed as verified or
//!   failed, one JSON object per line with the journal's evidence (sizes, source ETag and
//!   mtime, CRC64/MD5, destination ETag, how it was verified). One PUT per batch of up to
//!   [`BATCH`] records or every [`FLUSH_EVERY`], never one per object.
//! - `shard-K/status.json`: the shard's totals, state and last update (read by `status`),
//!   written with each batch and at least every [`HEARTBEAT`].
//!
//! A shard that starts with an empty state folder reads its segments back one at a time into
//! its journal ([`ProgressStore::restore`]): the run's join then skips every object the journal
//! proves verified (same source size and ETag, same destination ETag) without a request.
//! Progress keys are never listed as data ([`crate::shard::is_progress_key`]), so no run copies
//! or deletes them.

use crate::journal::{Journal, JournalError, ObjectRecord, State};
use crate::shard::{KeyRange, ShardId};
use crate::store::Store;
use crate::store::list::{Listed, list};
use futures::StreamExt;
use object_store::{ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedReceiver;

/// Records per segment object.
pub const BATCH: usize = 5000;
/// A batch is written at least this often while records arrive.
pub const FLUSH_EVERY: Duration = Duration::from_secs(5);
/// `status.json` is rewritten at least this often while the shard runs.
pub const HEARTBEAT: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum ProgressError {
    #[error("progress records at {location}: {message}")]
    Store { location: String, message: String },
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// The state a shard's record states: `running` while it runs, then `done`, `failed` or
/// `incomplete` (the listing found much less than the plan). Written as those lowercase words; a
/// word this version does not know reads as running (so a record from a newer moverctl shows as
/// running, or stale once it stops being updated).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum RecordState {
    Running,
    Done,
    Failed,
    Incomplete,
}

impl RecordState {
    pub fn as_str(self) -> &'static str {
        match self {
            RecordState::Running => "running",
            RecordState::Done => "done",
            RecordState::Failed => "failed",
            RecordState::Incomplete => "incomplete",
        }
    }
}

impl From<String> for RecordState {
    fn from(s: String) -> Self {
        match s.as_str() {
            "done" => RecordState::Done,
            "failed" => RecordState::Failed,
            "incomplete" => RecordState::Incomplete,
            _ => RecordState::Running,
        }
    }
}

impl From<RecordState> for String {
    fn from(s: RecordState) -> Self {
        s.as_str().to_string()
    }
}

/// What `status.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardStatus {
    pub plan_id: String,
    pub shard: u32,
    pub count: u32,
    /// `running`, `done`, `failed` or `incomplete` on the wire.
    pub state: RecordState,
    pub host: String,
    /// When this attempt started and when this record was written (RFC 3339, UTC).
    pub started: String,
    pub updated: String,
    /// Verified objects and bytes of the shard so far (earlier attempts included).
    pub objects_done: u64,
    pub bytes_done: u64,
    /// Objects that failed in this attempt.
    pub failed: u64,
    /// Verified bytes copied or checked in this attempt and its seconds: the throughput.
    pub attempt_bytes: u64,
    pub attempt_seconds: f64,
    /// What the plan put in this shard's range.
    pub planned_objects: u64,
    pub planned_bytes: u64,
    /// When the shard's first attempt started (RFC 3339, UTC); empty in records written before
    /// it was kept (read `started` then).
    #[serde(default)]
    pub first_started: String,
    /// Attempts so far, this one included.
    #[serde(default)]
    pub attempts: u32,
    /// Seconds of every attempt so far, added (this one up to `updated`).
    #[serde(default)]
    pub seconds: f64,
    /// What the shard's finished attempts cost, priced as `exec` prices a run against its plan:
    /// USD as exact decimal strings (`egress`, `source_requests`, `destination_requests`,
    /// `total`). Empty until an attempt has finished.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub cost: std::collections::BTreeMap<String, String>,
}

impl ShardStatus {
    /// When the shard began: its first attempt's start.
    pub fn began(&self) -> &str {
        if self.first_started.is_empty() {
            &self.started
        } else {
            &self.first_started
        }
    }

    /// One line of `cost`, exact (zero when absent).
    pub fn cost_of(&self, item: &str) -> crate::money::Usd {
        self.cost
            .get(item)
            .and_then(|v| crate::money::Usd::parse(v).ok())
            .unwrap_or_default()
    }

    /// Adds one finished attempt's cost (`items` without the total) to `cost`, and the total.
    pub fn add_cost(&mut self, items: &[(&str, crate::money::Usd)]) {
        for (k, v) in items {
            let sum = self.cost_of(k) + *v;
            self.cost
                .insert((*k).to_string(), sum.0.normalize().to_string());
        }
        let total: crate::money::Usd = self
            .cost
            .iter()
            .filter(|(k, _)| *k != "total")
            .filter_map(|(_, v)| crate::money::Usd::parse(v).ok())
            .sum();
        self.cost
            .insert("total".into(), total.0.normalize().to_string());
    }
}

/// One record line of a segment.
#[derive(Debug, Serialize, Deserialize)]
struct Line {
    key: String,
    size: u64,
    state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    src_etag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    src_mtime: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    crc64: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    md5: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dst_etag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    verified_by: Option<String>,
    #[serde(default)]
    attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl Line {
    fn of(r: &ObjectRecord) -> Line {
        Line {
            key: r.key.clone(),
            size: r.size,
            state: match r.state {
                State::Verified => "verified",
                State::Failed => "failed",
                State::Copying => "copying",
            }
            .into(),
            src_etag: r.src_etag.clone(),
            src_mtime: r.src_mtime.clone(),
            crc64: r.crc64.clone(),
            md5: r.md5.clone(),
            dst_etag: r.dst_etag.clone(),
            verified_by: r.verified_by.clone(),
            attempts: r.attempts,
            error: r.error.clone(),
        }
    }

    fn verified_record(self) -> Option<ObjectRecord> {
        (self.state == "verified").then_some(ObjectRecord {
            key: self.key,
            size: self.size,
            src_etag: self.src_etag,
            src_mtime: self.src_mtime,
            state: State::Verified,
            crc64: self.crc64,
            md5: self.md5,
            dst_etag: self.dst_etag,
            verified_by: self.verified_by,
            attempts: self.attempts,
            error: None,
            upload_id: None,
            part_size: None,
        })
    }
}

/// A failed write in one line: the store's error code and message (or the error's first words),
/// and how long the retry policy kept at it, when it did.
fn cause(e: &object_store::Error) -> String {
    let text = e.to_string();
    let short = crate::probe::short_error(&text);
    let status = crate::store::error::http_status(e)
        .or_else(|| {
            let at = text.find("status code: ")? + "status code: ".len();
            text[at..].get(..3)?.parse().ok()
        })
        .map(|s| format!("HTTP {s} "))
        .unwrap_or_default();
    let retried = text.find("after ").and_then(|at| {
        let rest = &text[at..];
        let end = rest.find(" retries")? + " retries".len();
        Some(format!(
            " ({}, --retry-timeout {})",
            &rest[..end],
            humantime::format_duration(crate::store::retry::timeout())
        ))
    });
    format!("{status}{short}{}", retried.unwrap_or_default())
}

/// The progress folder of one plan (`root`), opened as a store.
pub struct ProgressStore {
    pub store: Store,
}

pub fn status_key(shard: u32) -> String {
    format!("shard-{shard}/status.json")
}

fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

impl ProgressStore {
    pub fn new(store: Store) -> ProgressStore {
        ProgressStore { store }
    }

    fn err(&self, message: impl std::fmt::Display) -> ProgressError {
        ProgressError::Store {
            location: self.store.shown(),
            message: message.to_string(),
        }
    }

    async fn put(&self, key: &str, body: Vec<u8>) -> Result<(), ProgressError> {
        let path = self.store.path_of(key).map_err(|e| self.err(e))?;
        self.store
            .inner
            .put(&path, PutPayload::from(body))
            .await
            .map_err(|e| self.err(format!("writing {key}: {}", cause(&e))))?;
        Ok(())
    }

    async fn get(&self, key: &str) -> Result<Option<bytes::Bytes>, ProgressError> {
        let path = self.store.path_of(key).map_err(|e| self.err(e))?;
        match self.store.inner.get(&path).await {
            Ok(r) => Ok(Some(
                r.bytes()
                    .await
                    .map_err(|e| self.err(format!("reading {key}: {e}")))?,
            )),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.err(format!("reading {key}: {e}"))),
        }
    }

    pub async fn write_status(&self, s: &ShardStatus) -> Result<(), ProgressError> {
        let body = serde_json::to_vec_pretty(s).expect("a status serializes");
        self.put(&status_key(s.shard), body).await
    }

    /// A shard's `status.json`, or None when it has not started.
    pub async fn read_status(&self, shard: u32) -> Result<Option<ShardStatus>, ProgressError> {
        match self.get(&status_key(shard)).await? {
            None => Ok(None),
            Some(b) => serde_json::from_slice(&b)
                .map(Some)
                .map_err(|e| self.err(format!("{} does not parse: {e}", status_key(shard)))),
        }
    }

    /// Reads shard `shard`'s segments, one at a time, into `journal`: every verified record of a
    /// key in `range` that the journal does not already hold as verified. Returns how many
    /// records were taken.
    pub async fn restore(
        &self,
        shard: u32,
        range: &KeyRange,
        journal: &mut Journal,
    ) -> Result<u64, ProgressError> {
        let mut sub = self.store.clone();
        sub.prefix = format!("{}shard-{shard}/", self.store.prefix);
        if let Some(root) = self.store.local_root() {
            sub.local_root = Some(root.join(format!("shard-{shard}")));
            if !sub.local_root.as_ref().is_some_and(|r| r.is_dir()) {
                return Ok(0);
            }
        }
        let mut segments = list(&sub);
        let mut taken = 0;
        while let Some(item) = segments.next().await {
            let key = match item.map_err(|e| self.err(e))? {
                Listed::Object(e) if e.key.starts_with("seg-") && e.key.ends_with(".jsonl") => {
                    e.key
                }
                _ => continue,
            };
            let full = format!("shard-{shard}/{key}");
            let Some(body) = self.get(&full).await? else {
                continue;
            };
            let mut recs = Vec::new();
            for (i, line) in body.split(|b| *b == b'\n').enumerate() {
                if line.is_empty() {
                    continue;
                }
                let l: Line = serde_json::from_slice(line).map_err(|e| {
                    self.err(format!("{full} line {}: not a progress record: {e}", i + 1))
                })?;
                if !range.contains(&l.key) {
                    continue;
                }
                if let Some(r) = l.verified_record() {
                    let held = journal
                        .get(&r.key)?
                        .is_some_and(|h| h.state == State::Verified && h.dst_etag == r.dst_etag);
                    if !held {
                        recs.push(r);
                    }
                }
            }
            taken += recs.len() as u64;
            journal.put_all(&recs)?;
        }
        Ok(taken)
    }
}

/// What the writer saw by the time the journal closed.
#[derive(Debug, Default, Clone)]
pub struct Written {
    pub verified: u64,
    pub verified_bytes: u64,
    pub failed: u64,
    pub segments: u64,
    /// The progress location could not be written (the cause, after the retry policy): the
    /// writer set the run's stop flag and wrote nothing more.
    pub unwritable: Option<String>,
    /// Verified records that did not reach the progress location (they are in the local
    /// journal).
    pub unwritten: u64,
}

/// Writes records from the journal's tap in batches, and the shard's status with them, until
/// the journal is dropped (the channel closes). `status` is the record to keep up to date (its
/// `objects_done`/`bytes_done` hold what earlier attempts verified, and it has been written
/// once already).
///
/// Each write goes through the store's retry policy ([`crate::store::retry`]: transient
/// failures retried for the retry window). A write that still fails, or is refused, is logged
/// with its cause, and the shard is stopped through `stop` (no new object starts; the objects in
/// flight finish and are journaled locally): a shard must not run on for hours leaving no resume
/// record behind. The records go on being drained and counted (`unwritten`), never written.
pub async fn write_as_it_goes(
    ps: &ProgressStore,
    mut rx: UnboundedReceiver<ObjectRecord>,
    mut status: ShardStatus,
    stop: &std::sync::atomic::AtomicBool,
) -> (Written, ShardStatus) {
    let started = Instant::now();
    let base = (status.objects_done, status.bytes_done);
    let earlier_seconds = status.seconds;
    let mut w = Written::default();
    let mut pending: Vec<u8> = Vec::new();
    let mut lines = 0usize;
    let mut pending_verified = 0u64;
    let mut last_flush = Instant::now();
    let mut last_status = Instant::now();
    let pid = std::process::id();
    let (shard, shown) = (status.shard, ps.store.shown());
    let fail = |w: &mut Written, what: &str, e: ProgressError| {
        let cause = match e {
            ProgressError::Store { message, .. } => message,
            other => other.to_string(),
        };
        tracing::warn!(
            target: "moverctl::progress",
            "shard {}: progress records at {}: {what} failed: {cause}; stopping the shard (no new object starts, the objects in flight finish and are journaled locally)",
            shard,
            shown
        );
        w.unwritable = Some(cause);
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
    };
    loop {
        let got = tokio::time::timeout(Duration::from_millis(500), rx.recv()).await;
        let closed = matches!(got, Ok(None));
        if let Ok(Some(r)) = got {
            match r.state {
                State::Verified => {
                    w.verified += 1;
                    w.verified_bytes += r.size;
                    pending_verified += 1;
                }
                State::Failed => w.failed += 1,
                State::Copying => {}
            }
            if w.unwritable.is_some() {
                w.unwritten += pending_verified;
                pending_verified = 0;
            } else {
                serde_json::to_writer(&mut pending, &Line::of(&r)).expect("a record serializes");
                pending.push(b'\n');
                lines += 1;
            }
        }
        let due = lines >= BATCH || (lines > 0 && last_flush.elapsed() >= FLUSH_EVERY);
        if w.unwritable.is_none() && (due || (closed && lines > 0)) {
            let millis = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_millis();
            let key = format!(
                "shard-{}/seg-{millis:015}-{pid}-{:06}.jsonl",
                status.shard, w.segments
            );
            match ps.put(&key, std::mem::take(&mut pending)).await {
                Ok(()) => {
                    w.segments += 1;
                    pending_verified = 0;
                }
                Err(e) => {
                    let what = format!("writing a batch of {lines} records ({key})");
                    fail(&mut w, &what, e);
                    w.unwritten += pending_verified;
                    pending_verified = 0;
                }
            }
            lines = 0;
            last_flush = Instant::now();
        }
        if due || closed || last_status.elapsed() >= HEARTBEAT {
            status.objects_done = base.0 + w.verified;
            status.bytes_done = base.1 + w.verified_bytes;
            status.failed = w.failed;
            status.attempt_bytes = w.verified_bytes;
            status.attempt_seconds = started.elapsed().as_secs_f64();
            status.seconds = earlier_seconds + status.attempt_seconds;
            status.updated = now();
            if !closed
                && w.unwritable.is_none()
                && let Err(e) = ps.write_status(&status).await
            {
                fail(&mut w, &format!("writing {}", status_key(status.shard)), e);
            }
            last_status = Instant::now();
        }
        if closed {
            return (w, status);
        }
    }
}

/// The status a shard starts with (state `running`).
/// `earlier` is the shard's last record, from an earlier attempt: its first start, seconds and
/// cost carry on.
pub fn starting_status(
    plan_id: &str,
    shard: ShardId,
    planned: (u64, u64),
    done: (u64, u64),
    earlier: Option<&ShardStatus>,
) -> ShardStatus {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .unwrap_or_default();
    ShardStatus {
        plan_id: plan_id.to_string(),
        shard: shard.index,
        count: shard.count,
        state: RecordState::Running,
        host,
        started: now(),
        updated: now(),
        objects_done: done.0,
        bytes_done: done.1,
        failed: 0,
        attempt_bytes: 0,
        attempt_seconds: 0.0,
        planned_objects: planned.0,
        planned_bytes: planned.1,
        first_started: earlier.map_or_else(now, |e| e.began().to_string()),
        attempts: earlier.map_or(0, |e| e.attempts.max(1)) + 1,
        seconds: earlier.map_or(0.0, |e| e.seconds.max(e.attempt_seconds)),
        cost: earlier.map(|e| e.cost.clone()).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_is_told_in_one_line() {
        let e = object_store::Error::Generic {
            store: "S3",
            source: "Error performing PUT http://127.0.0.1:1/b/p/shard-0/seg-1.jsonl in 2.03s, after 7 retries, max_retries: 1000, retry_timeout: 2s - Server returned non-2xx status code: 500 Internal Server Error: <?xml version=\"1.0\"?>\n<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>".into(),
        };
        assert_eq!(
            cause(&e),
            format!(
                "HTTP 500 InternalError: We encountered an internal error. (after 7 retries, --retry-timeout {})",
                humantime::format_duration(crate::store::retry::timeout())
            )
        );
    }

    #[test]
    fn a_verified_line_keeps_the_journal_evidence() {
        let r = ObjectRecord {
            key: "a/b".into(),
            size: 7,
            src_etag: Some("\"e\"".into()),
            src_mtime: Some("2026-01-01T00:00:00Z".into()),
            state: State::Verified,
            crc64: Some("00ff".into()),
            md5: Some("abcd".into()),
            dst_etag: Some("\"d\"".into()),
            verified_by: Some("md5".into()),
            attempts: 1,
            error: None,
            upload_id: None,
            part_size: None,
        };
        let text = serde_json::to_string(&Line::of(&r)).unwrap();
        let back: Line = serde_json::from_str(&text).unwrap();
        assert_eq!(back.verified_record(), Some(r.clone()));
        let failed = ObjectRecord {
            state: State::Failed,
            ..r
        };
        let back: Line =
            serde_json::from_str(&serde_json::to_string(&Line::of(&failed)).unwrap()).unwrap();
        assert_eq!(back.verified_record(), None, "only verified records resume");
    }
}
