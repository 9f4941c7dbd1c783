//! The copy engine: list both sides (sorted, streaming), merge-join with the journal, copy what
//! differs with a bounded pool of workers under the run's limits, verify every object, journal
//! the outcome, and report. `exec` (from a plan), `copy` and `sync` all run this; `sync` adds the
//! keys only at the destination ([`Run::run_with`]) and its guarded delete phase ([`sync`]).
//!
//! Memory: listings stream (a bounded number of entries ahead per side), at most `transfers`
//! objects are in flight, and every byte held between reading and writing (whole small objects,
//! parts of large ones) counts against one budget of `max_buffer` bytes for the run: memory is
//! about `max_buffer` plus a few MiB.
//!
//! Here: the run's options, counters, report and events. The loop is in `run`, one object's
//! task in the pool (check, copy with retries) in `object`, what a finished task comes to in
//! `tally`, and each object's verified copy in [`copy`].

pub mod claims;
pub mod copy;
pub mod cost;
mod crc_url;
pub mod diff;
pub mod fidelity;
pub mod filter;
pub mod from_url;
mod joins;
pub mod local_dest;
mod object;
pub mod progress_store;
pub mod range_md5;
mod run;
pub mod server_side;
mod since;
mod stream_put;
pub mod sync;
mod tally;
pub mod verification;

use crate::catalog::Limits as StoreLimits;
use crate::catalog::parts::PartRule;
use crate::journal::Journal;
use crate::limit::Limits;
use crate::store::{Store, StoreErrorKind};

/// Listing entries buffered ahead of the join, per side (about two S3 pages).
const LIST_AHEAD: usize = 2048;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;
pub use tally::UNVERIFIED;
pub use verification::{ReadCheck, Verification, WriteCheck};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// ETags, stored digests and HEAD where they prove enough.
    Auto,
    /// Read every written object back and compare CRCs.
    Readback,
    /// As `Auto`, and an object from a cloud source that states no digest at all (no MD5,
    /// multipart ETag, stored CRC or moverctl metadata) fails instead of being copied with only
    /// its size checked.
    Strict,
    /// As `Auto`, but never the checksum-only path: MD5s are computed and compared wherever a
    /// store offers an MD5 (Content-MD5, MD5 and multipart ETags), as before that path existed.
    Md5,
    /// As `Auto`, and an object from a cloud source whose bytes could be checked by nothing but
    /// their size is accepted as `source-size` (under the other modes it is `unverified`: not
    /// recorded as done, and the run exits with its own code).
    Size,
}

impl Verify {
    /// Whether copies may be verified by CRC alone where both ends allow it (`auto`, `strict`).
    pub fn allows_checksum_only(self) -> bool {
        matches!(self, Verify::Auto | Verify::Strict | Verify::Size)
    }
}

/// When a local destination's writes are made durable (`--fsync`).
///
/// | `--fsync` | synced | journal row `verified` written | a power cut or kernel crash can cost | speed (many small files) |
/// |---|---|---|---|---|
/// | `batch` (default) | each batch of files (256 files, 1 GiB or 200 ms): one `syncfs` of the destination's file system (per-file `fdatasync` and folder `fsync` for fewer than 32 files, and before Linux 5.8) | after the batch's sync returned | files written since the last sync, none of them journaled: the next run copies them again | about `never`'s |
/// | `object` | each file's data, then its folder entry, before the next step | after the file's own sync | as `batch` | one journal commit of the file system per file |
/// | `end` | the file system once, when the run ends | as files finish, before any sync | files the journal calls verified may be missing or empty; the next run skips them | `never`'s, plus one sync |
/// | `never` | nothing (the kernel writes back when it likes) | as files finish | as `end`, with no point after which the copy is durable | fastest |
///
/// `batch` replaced `object` as the default: both leave no journal row that a crash could make
/// a lie, and `batch` pays one sync per batch instead of one per file. `object` is kept for a
/// destination shared with other heavy writers (a `syncfs` also writes back their dirty data)
/// and for file systems whose `syncfs` does not reach the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fsync {
    /// Files synced in batches, each batch's journal rows written after its sync (group commit).
    #[default]
    Batch,
    /// Each file's data and folder entry before the object is journaled as done.
    Object,
    /// The destination's file system once, when the run ends.
    End,
    /// Left to the operating system.
    Never,
}

impl std::str::FromStr for Fsync {
    type Err = String;
    fn from_str(s: &str) -> Result<Fsync, String> {
        match s {
            "batch" => Ok(Fsync::Batch),
            "object" => Ok(Fsync::Object),
            "end" => Ok(Fsync::End),
            "never" => Ok(Fsync::Never),
            o => Err(format!("--fsync {o:?}: use batch, object, end or never")),
        }
    }
}

#[derive(Debug, Clone)]
pub struct CopyOptions {
    pub transfers: usize,
    pub part_concurrency: usize,
    /// One ranged GET per part of a large object instead of one GET per object.
    pub ranged_reads: bool,
    pub part_rule: PartRule,
    pub dst_limits: StoreLimits,
    pub max_buffer: u64,
    pub retries: u32,
    pub verify: Verify,
    pub dry_run: bool,
    pub include: Option<globset::GlobSet>,
    pub exclude: Option<globset::GlobSet>,
    /// Size, age and `--files-from` filters ([`filter::Selection`]).
    pub select: filter::Selection,
    /// `--size-only`: a destination object of the source's size is taken as the same.
    pub size_only: bool,
    /// `--checkers`: destination HEADs in flight, apart from the `transfers` copies (None: the
    /// checks share the copies' slots).
    pub checkers: Option<usize>,
    /// Counters to fill (a progress display reads them while the run goes); None: the run's own.
    pub counters: Option<Arc<Counters>>,
    /// Local destinations: when written files are synced to disk.
    pub fsync: Fsync,
    /// Local destinations: files get the source's last-modified time.
    pub preserve_mtime: bool,
    /// List the source a second time, alongside the run, only to count its objects and bytes
    /// (into `counters`), so that progress displays know the totals before the copy reaches
    /// the end of the listing. Its LIST requests are counted (and priced) with the source's;
    /// free for local folders.
    pub size_ahead: bool,
    /// Copy on the server where source and destination are one S3 service with the same
    /// credentials (`--no-server-side`: false).
    pub server_side: bool,
    /// A large single-part source whose MD5 the destination checks on arrival is copied with one
    /// streamed PUT where that is cheaper than parts (`stream_put`; `--no-streamed-put`: false).
    pub stream_single_put: bool,
    /// `--metadata-set` / `--no-metadata` ([`fidelity`]).
    pub metadata: fidelity::MetadataPolicy,
    /// Only this run's journal proves an object copied: a destination object of the source's
    /// size that the journal does not hold as verified is copied again, never skipped because its
    /// moverctl metadata names the same source version (decision row 8). `drain` sets it, since a
    /// durability receipt lists only what its journal verified; a kill between an upload and its
    /// journal row then costs one more upload of that file, not a receipt that can never be
    /// written.
    pub journal_proof_only: bool,
    /// `--inventory`: the source side is this inventory's objects, in key order, instead of a
    /// listing of the source (no LIST request); an object that changed or is gone since the
    /// inventory is reported as such ([`Report::changed_since_inventory`]), never copied.
    pub inventory: Option<Arc<crate::inventory::sorted::Sorted>>,
    /// `--list-streams`: a large source listing is cut into up to this many key ranges, listed
    /// and joined concurrently, and the objects in flight are taken from every range in turn
    /// (see `joins`). 1: one ordered stream.
    pub list_streams: usize,
    /// Source keys the join passes before the rest of the listing is split (see `joins`): a
    /// listing of fewer keys makes no request more.
    pub list_split_after: usize,
}

/// `--list-streams` by default (bench/results/2026-12-06-list.md).
pub const DEFAULT_LIST_STREAMS: usize = crate::plan::timing::LIST_STREAMS as usize;

/// [`CopyOptions::list_split_after`] by default: ten LIST pages.
pub const LIST_SPLIT_AFTER: usize = 10_000;

impl CopyOptions {
    /// The command line's defaults (`moverctl copy` with no flags) for a destination with these
    /// part limits: 64 objects and 4 parts each in flight, 128 MiB of part buffers, 3 retries,
    /// `--verify auto`, server-side copies and streamed single PUTs where they apply, files synced
    /// in batches (group commit) before they are journaled.
    pub fn new(dst_limits: StoreLimits) -> CopyOptions {
        CopyOptions {
            transfers: 64,
            part_concurrency: 4,
            ranged_reads: false,
            part_rule: PartRule::default(),
            dst_limits,
            max_buffer: 128 * crate::catalog::parts::MIB,
            retries: 3,
            verify: Verify::Auto,
            dry_run: false,
            include: None,
            exclude: None,
            select: Default::default(),
            size_only: false,
            checkers: None,
            counters: None,
            fsync: Fsync::Batch,
            preserve_mtime: true,
            size_ahead: false,
            server_side: true,
            stream_single_put: true,
            metadata: Default::default(),
            journal_proof_only: false,
            inventory: None,
            list_streams: DEFAULT_LIST_STREAMS,
            list_split_after: LIST_SPLIT_AFTER,
        }
    }
}

/// Requests and bytes, counted as they happen.
#[derive(Debug, Default)]
pub struct Counters {
    pub get: AtomicU64,
    pub put: AtomicU64,
    pub head: AtomicU64,
    pub read_bytes: AtomicU64,
    pub written_bytes: AtomicU64,
    pub resumed_parts: AtomicU64,
    pub aborted_uploads: AtomicU64,
    /// Objects (and their bytes) the destination service copied itself.
    pub server_side_objects: AtomicU64,
    pub server_side_bytes: AtomicU64,
    /// Blocks the destination service read from the source's URL (Put Block From URL answered
    /// 2xx), and their bytes: the source bills them as GETs and egress, though no byte passed
    /// through this machine.
    pub fetched_by_destination: AtomicU64,
    pub fetched_by_destination_bytes: AtomicU64,
    /// Bytes copied within one S3 service (CopyObject / UploadPartCopy).
    pub copied_in_service_bytes: AtomicU64,
    /// Large objects in flight: key → (bytes done, size), for per-object progress bars.
    pub in_flight: Mutex<BTreeMap<String, (u64, u64)>>,
    /// Objects (and their bytes) finished: verified copies and skips, for progress displays.
    pub done_objects: AtomicU64,
    pub done_bytes: AtomicU64,
    /// Failed or refused objects so far.
    pub failed_objects: AtomicU64,
    /// Objects handed to the pool and not finished yet (copies and checks in flight).
    pub active: AtomicU64,
    /// Objects copied again after a failed attempt (`--retries`); requests retried are counted
    /// by [`crate::store::retry::retried`].
    pub retries: AtomicU64,
    /// What the source holds within the filters, counted by the sizing listing
    /// ([`CopyOptions::size_ahead`]) as it goes; `total_known` once it has finished.
    pub total_objects: AtomicU64,
    pub total_bytes: AtomicU64,
    pub total_known: std::sync::atomic::AtomicBool,
}

impl Counters {
    /// Counts a finished object for progress displays, and logs it (see [`Event::log`]).
    fn record(&self, ev: &Event) {
        ev.log();
        match ev {
            Event::Copied { bytes, .. } | Event::Skipped { bytes, .. } => {
                self.done_objects.fetch_add(1, Relaxed);
                self.done_bytes.fetch_add(*bytes, Relaxed);
            }
            Event::Failed { .. } | Event::Refused { .. } | Event::Stale { .. } => {
                self.failed_objects.fetch_add(1, Relaxed);
            }
            Event::WouldCopy { .. } => {}
        }
    }

    /// Bytes finished plus the bytes of large objects written so far (their parts uploaded).
    pub fn progress_bytes(&self) -> u64 {
        let partial: u64 = self
            .in_flight
            .lock()
            .map(|m| m.values().map(|(done, _)| *done).sum())
            .unwrap_or(0);
        self.done_bytes.load(Relaxed) + partial
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub key: String,
    pub error: String,
    /// The kind of store error that ended it (None: not a store's answer, or a refused key).
    pub kind: Option<StoreErrorKind>,
}

#[derive(Debug, Clone, Default)]
pub struct Report {
    pub copied: u64,
    pub copied_bytes: u64,
    pub skipped: u64,
    pub skipped_bytes: u64,
    pub failed: Vec<Failure>,
    pub failed_bytes: u64,
    pub refused: Vec<Failure>,
    pub filtered: u64,
    /// How copied objects were verified: method → count.
    pub verified_by: BTreeMap<Verification, u64>,
    /// Objects copied from a cloud source that stated no digest for them (MD5, multipart ETag,
    /// stored checksum or moverctl metadata): their bytes were checked by size on the read side
    /// (`--verify strict` refuses them instead).
    pub no_source_digest: u64,
    /// Objects written from a cloud source whose bytes could be checked by nothing but their
    /// size, without `--verify size` to accept that: labelled `unverified`, not journaled as
    /// done, and the run exits with [`crate::exit::Exit::Unverified`].
    pub unverified: Vec<String>,
    /// Why objects were skipped or copied: reason → count (dry runs list them too).
    pub reasons: BTreeMap<String, u64>,
    pub requests_get: u64,
    pub requests_put: u64,
    pub requests_head: u64,
    pub requests_list_src: u64,
    pub requests_list_dst: u64,
    pub read_bytes: u64,
    pub written_bytes: u64,
    pub resumed_parts: u64,
    /// Objects (and their bytes) copied by the destination service itself: no byte of them
    /// passed through this machine.
    pub server_side_objects: u64,
    pub server_side_bytes: u64,
    /// Blocks (and bytes) the destination service read from the source's URL, including those of
    /// copies that did not prove out: billed by the source as GETs and egress.
    pub fetched_by_destination: u64,
    pub fetched_by_destination_bytes: u64,
    /// Bytes copied within one S3 service (priced at its in-region transfer rate).
    pub copied_in_service_bytes: u64,
    /// Multipart uploads abandoned and aborted (their source changed).
    pub aborted_uploads: u64,
    /// Multipart uploads still open at the end (failed or interrupted), kept for resume.
    pub open_uploads: u64,
    pub retries: u64,
    /// Requests retried under the retry policy during the run (object_store's and moverctl's
    /// own), apart from the objects copied again (`retries`).
    pub request_retries: u64,
    pub throttle_events: u64,
    pub elapsed: Duration,
    pub interrupted: bool,
    /// Objects in flight when the run was interrupted, abandoned unfinished (none journaled as
    /// copied; a multipart upload's parts already sent are kept for the next run).
    pub abandoned: u64,
    /// The run stopped before the end because credentials were refused and could not be
    /// renewed (see `object::credentials_stop`): why, and what to run. The objects not tried are in
    /// no journal row; the next run copies them.
    pub stopped_for_credentials: Option<String>,
    /// Objects in a row (by finishing order) that failed because a store refused the
    /// credentials; a success resets it.
    pub auth_streak: usize,
    pub dry_run: bool,
    /// A dry run: the GETs and PUTs its would-copy objects would take (one GET each; one PUT, or
    /// a multipart upload's parts and its two calls), for the estimate of what the copy costs.
    pub would_get: u64,
    pub would_put: u64,
    /// Objects listed at the source within `--include`/`--exclude` (refused keys not counted).
    pub src_objects: u64,
    /// Objects listed at the destination (counted only when the join reports destination-only
    /// keys, i.e. for `sync`).
    pub dest_objects: u64,
    /// Keys only at the destination, handed to the caller (sync's deletion candidates).
    pub dest_only: u64,
    pub dest_only_bytes: u64,
    /// Keys only at the destination that `--include`/`--exclude` leave out: never candidates.
    pub dest_filtered: u64,
    /// `--inventory`: objects whose size or ETag at the source is no longer the inventory's
    /// (not copied; the run exits 3), and objects the source no longer holds (404; nothing to
    /// copy). Neither is journaled as copied.
    pub changed_since_inventory: Vec<Failure>,
    pub gone_since_inventory: Vec<Failure>,
}

impl Report {
    /// What the run's requests and bytes are priced from (a run's cost, and `exec` against its
    /// plan): the requests this machine made, plus the source GETs the destination service made
    /// reading the source's URL; the bytes that left the source, through this machine or read
    /// by the destination service (egress either way), and those copied within one service.
    pub fn ledger(&self) -> crate::plan::model::Ledger {
        crate::plan::model::Ledger {
            source_list: self.requests_list_src,
            source_get: self.requests_get + self.fetched_by_destination,
            destination_list: self.requests_list_dst,
            destination_put: self.requests_put,
            destination_head: self.requests_head,
            bytes_moved: self.read_bytes
                + self.fetched_by_destination_bytes
                + self.copied_in_service_bytes,
        }
    }

    /// Objects that failed because a store refused the credentials (exit code 4).
    pub fn auth_failures(&self) -> usize {
        self.failed
            .iter()
            .filter(|f| f.kind == Some(StoreErrorKind::Auth))
            .count()
    }
}

/// One line of `--json` output per object, and what the progress display counts.
#[derive(Debug, Clone)]
pub enum Event {
    Copied {
        key: String,
        bytes: u64,
        verified_by: Verification,
    },
    Skipped {
        key: String,
        bytes: u64,
        reason: String,
    },
    WouldCopy {
        key: String,
        bytes: u64,
        reason: String,
    },
    Failed {
        key: String,
        error: String,
    },
    Refused {
        key: String,
        reason: String,
    },
    /// An inventory-driven run's object that changed or is gone since the inventory: not
    /// copied, not journaled as copied.
    Stale {
        key: String,
        bytes: u64,
        gone: bool,
        reason: String,
    },
}

impl Event {
    /// The event's log line, as rclone's `-v` logs each file: copied, skipped and refused at info (`-v`),
    /// a dry run's would-copy at debug (it is on stdout already); failures are logged where
    /// they are decided (with their attempts). Target `moverctl::file`.
    pub(crate) fn log(&self) {
        let size = |b: &u64| crate::units::fmt_bytes(*b);
        match self {
            Event::Copied {
                key,
                bytes,
                verified_by,
            } => tracing::info!(target: "moverctl::file", key = %key, bytes,
                "{key}: copied ({}, verified by {verified_by})", size(bytes)),
            Event::Skipped { key, bytes, reason } => tracing::info!(target: "moverctl::file",
                key = %key, bytes, "{key}: skipped ({reason}, {})", size(bytes)),
            Event::WouldCopy { key, bytes, reason } => tracing::debug!(target: "moverctl::file",
                key = %key, bytes, "{key}: would copy ({reason}, {})", size(bytes)),
            Event::Refused { key, reason } => tracing::info!(target: "moverctl::file",
                key = %key, "{key}: not copied ({reason})"),
            Event::Stale {
                key,
                bytes,
                gone,
                reason,
            } => tracing::info!(target: "moverctl::file", key = %key, bytes,
                "{key}: not copied, {} since the inventory ({reason})",
                if *gone { "gone" } else { "changed" }),
            Event::Failed { .. } => {}
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Diff(#[from] diff::DiffError),
    #[error(transparent)]
    Journal(#[from] crate::journal::JournalError),
}

pub struct Run {
    pub src: Store,
    pub dst: Store,
    pub opts: CopyOptions,
    pub limits: Limits,
    pub journal: Option<Journal>,
    /// Set (by a Ctrl-C handler) to stop the run promptly: no new object starts, and the objects
    /// in flight are abandoned (see `Report::abandoned`).
    pub stop: Arc<AtomicBool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_ledger_counts_what_left_the_source_however_it_left() {
        let r = Report {
            requests_get: 3,
            requests_put: 7,
            read_bytes: 100,
            fetched_by_destination: 5,
            fetched_by_destination_bytes: 40,
            copied_in_service_bytes: 2,
            ..Default::default()
        };
        let l = r.ledger();
        // GETs made here and those the destination service made at the source.
        assert_eq!(l.source_get, 8);
        assert_eq!(l.destination_put, 7);
        // Read through this machine, read by the destination service, copied within one service.
        assert_eq!(l.bytes_moved, 142);
    }

    #[test]
    fn auth_failures_count_only_refused_credentials() {
        let f = |kind| Failure {
            key: "k".into(),
            error: "e".into(),
            kind,
        };
        let r = Report {
            failed: vec![
                f(Some(StoreErrorKind::Auth)),
                f(Some(StoreErrorKind::Throttled)),
                f(None),
            ],
            refused: vec![f(None)],
            ..Default::default()
        };
        assert_eq!(r.auth_failures(), 1);
        assert_eq!(Report::default().auth_failures(), 0);
    }
}
