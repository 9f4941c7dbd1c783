//! The copy engine: list both sides (sorted, streaming), merge-join with the journal, copy what
//! differs with a bounded pool of workers under the run's limits, verify every object, journal
//! the outcome, and report. `exec` (from a plan), `copy` and `sync` all run this; `sync` adds the
//! keys only at the destination ([`Run::run_with`]) and its guarded delete phase ([`sync`]).
//!
//! Memory: listings stream (a bounded number of entries ahead per side), at most `transfers`
//! objects are in flight, and every byte held between reading and writing (whole small objects,
//! parts of large ones) counts against one budget of `max_buffer` bytes for the run: memory is
//! about `max_buffer` plus a few MiB.

pub mod claims;
pub mod copy;
pub mod cost;
mod crc_url;
pub mod diff;
pub mod fidelity;
pub mod filter;
pub mod from_url;
pub mod local_dest;
pub mod progress_store;
pub mod range_md5;
pub mod server_side;
mod stream_put;
pub mod sync;
pub mod verification;

use crate::catalog::Limits as StoreLimits;
use crate::catalog::parts::PartRule;
use crate::journal::{Journal, ObjectRecord, State};
use crate::limit::Limits;
use crate::store::list::{Entry, list_counted, list_destination, prefetch};
use crate::store::{Store, StoreErrorKind};

/// Listing entries buffered ahead of the join, per side (about two S3 pages).
const LIST_AHEAD: usize = 2048;
use copy::{CopyError, Ctx, copy_object};
use diff::{Decision, Differ, JoinPolicy, Joined};
use object_store::{Attribute, GetOptions};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fsync {
    /// Each file's data and folder entry before the object is journaled as done.
    #[default]
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
            "object" => Ok(Fsync::Object),
            "end" => Ok(Fsync::End),
            "never" => Ok(Fsync::Never),
            o => Err(format!("--fsync {o:?}: use object, end or never")),
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
    /// streamed PUT where that is cheaper than parts ([`stream_put`]; `--no-streamed-put`: false).
    pub stream_single_put: bool,
    /// `--metadata-set` / `--no-metadata` ([`fidelity`]).
    pub metadata: fidelity::MetadataPolicy,
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
    /// What the source holds within the filters, counted by the sizing listing
    /// ([`CopyOptions::size_ahead`]) as it goes; `total_known` once it has finished.
    pub total_objects: AtomicU64,
    pub total_bytes: AtomicU64,
    pub total_known: std::sync::atomic::AtomicBool,
}

impl Counters {
    /// Counts a finished object for progress displays.
    fn record(&self, ev: &Event) {
        match ev {
            Event::Copied { bytes, .. } | Event::Skipped { bytes, .. } => {
                self.done_objects.fetch_add(1, Relaxed);
                self.done_bytes.fetch_add(*bytes, Relaxed);
            }
            Event::Failed { .. } | Event::Refused { .. } => {
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
    /// done, and the run exits with [`crate::cli::exit::Exit::Unverified`].
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
    pub throttle_events: u64,
    pub elapsed: Duration,
    pub interrupted: bool,
    /// The run stopped before the end because credentials were refused and could not be
    /// renewed (see [`credentials_stop`]): why, and what to run. The objects not tried are in
    /// no journal row; the next run copies them.
    pub stopped_for_credentials: Option<String>,
    /// Objects in a row (by finishing order) that failed because a store refused the
    /// credentials; a success resets it.
    pub auth_streak: usize,
    pub dry_run: bool,
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
}

/// How a task of the pool ended.
enum Done {
    /// Copied and verified; the reason when the decision was made in the task (after a check).
    Copied(copy::Outcome, Option<&'static str>),
    Skipped(&'static str),
    WouldCopy(&'static str),
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
    /// Set (by a Ctrl-C handler) to stop starting new objects; in-flight ones finish.
    pub stop: Arc<AtomicBool>,
}

fn included(opts: &CopyOptions, e: &Entry) -> bool {
    let key = e.key.as_str();
    if let Some(inc) = &opts.include
        && !inc.is_match(key)
    {
        return false;
    }
    if let Some(exc) = &opts.exclude
        && exc.is_match(key)
    {
        return false;
    }
    opts.select.admits(e)
}

/// Does the destination's moverctl metadata say it holds this source version?
async fn same_source_version(ctx: &Ctx, src: &Entry) -> bool {
    let Ok(path) = ctx.dst.path_of(&src.key) else {
        return false;
    };
    ctx.counters.head.fetch_add(1, Relaxed);
    let Ok(head) = ctx
        .dst
        .inner
        .get_opts(
            &path,
            GetOptions {
                head: true,
                ..Default::default()
            },
        )
        .await
    else {
        return false;
    };
    let meta = |k: &str| {
        head.attributes
            .get(&Attribute::Metadata(k.to_string().into()))
            .map(|v| v.to_string())
    };
    let etag_ok = match (&src.e_tag, meta(crate::checksum::META_SRC_ETAG)) {
        (Some(e), Some(m)) => crate::checksum::etag_norm(e) == m,
        _ => false,
    };
    etag_ok
        && meta(crate::checksum::META_SIZE) == Some(src.size.to_string())
        && head.meta.size == src.size
}

impl Run {
    /// Run to the end (or until stopped). Every object ends copied and verified, skipped, or
    /// failed with its error; `on_event` sees each as it happens.
    pub async fn run(self, on_event: impl FnMut(&Event)) -> Result<Report, RunError> {
        self.run_with(JoinPolicy::default(), on_event, |_| Ok(()))
            .await
    }

    /// As [`Run::run`], joining with `policy`. With [`JoinPolicy::dest_only`], every key found
    /// only at the destination (and inside the include/exclude filters) is handed to
    /// `on_dest_only` in key order as the join passes it; the caller spills it (memory must not
    /// grow with the listing) and decides later what to do with it.
    pub async fn run_with(
        self,
        policy: JoinPolicy,
        mut on_event: impl FnMut(&Event),
        mut on_dest_only: impl FnMut(Entry) -> Result<(), crate::journal::JournalError>,
    ) -> Result<Report, RunError> {
        let started = Instant::now();
        let Run {
            src,
            dst,
            opts,
            limits,
            journal,
            stop,
        } = self;
        let journal = journal.map(|j| Arc::new(Mutex::new(j)));
        // A killed run's temporary files in a local destination, taken over before the
        // destination's walk would remove them, so that their copies resume.
        if let Some(j) = &journal
            && !opts.dry_run
        {
            local_dest::adopt_partials(&dst, &mut j.lock().expect("journal lock"))?;
        }
        let src_is_cloud = !src.caps.in_process;
        // Slow-down answers object_store retried by itself still shrink the window.
        for s in [&src, &dst] {
            let l = limits.clone();
            s.observer.on_throttle(move || l.on_throttled());
        }
        let counters = opts.counters.clone().unwrap_or_default();
        // Every event also moves the progress counters.
        let mut on_event = {
            let counters = counters.clone();
            move |ev: &Event| {
                counters.record(ev);
                on_event(ev)
            }
        };
        let list_src = Arc::new(AtomicU64::new(0));
        let list_dst = Arc::new(AtomicU64::new(0));
        // Both listings page at the same time (each a few pages ahead of the join).
        if opts.size_ahead && !opts.dry_run {
            spawn_sizer(
                &src,
                &opts,
                counters.clone(),
                list_src.clone(),
                journal.clone(),
            );
        }
        let src_list = prefetch(list_counted(&src, None, list_src.clone()), LIST_AHEAD);
        let dst_list = prefetch(list_destination(&dst, list_dst.clone()), LIST_AHEAD);
        let mut differ = Differ::with_policy(src_list, dst_list, policy);
        // Under a byte limit, reading further ahead than about two seconds of the limit (or two
        // parts) only makes every buffered part finish its read late and upload in one burst.
        let max_buffer = match limits.byte_rate() {
            Some(rate) => opts
                .max_buffer
                .min((2 * rate).max(2 * opts.part_rule.preferred_part)),
            None => opts.max_buffer,
        };
        let buffer_mib = (max_buffer >> 20).clamp(1, u32::MAX as u64 >> 1) as usize;
        let server_side = if opts.server_side && !opts.dry_run {
            copy::context::ServerSide::between(&src, &dst)
                .await
                .map(Arc::new)
        } else {
            None
        };
        let from_url = if opts.server_side && !opts.dry_run && server_side.is_none() {
            copy::context::FromUrl::between(&src, &dst)
                .await
                .map(Arc::new)
        } else {
            None
        };
        let ctx = Arc::new(Ctx {
            src,
            dst,
            opts: Arc::new(opts.clone()),
            limits: limits.clone(),
            journal: journal.clone(),
            counters: counters.clone(),
            buffers: Arc::new(tokio::sync::Semaphore::new(buffer_mib)),
            buffer_mib: buffer_mib as u32,
            // One GET per large object, unless the byte limit is so low that a part would wait
            // longer than ~20 s for its turn (an idle connection may be closed by then).
            sequential_reads: !opts.ranged_reads
                && limits
                    .byte_rate()
                    .is_none_or(|r| r.saturating_mul(20) >= opts.part_rule.preferred_part),
            server_side,
            from_url,
        });
        let mut report = Report {
            dry_run: opts.dry_run,
            ..Default::default()
        };
        let mut batch = JournalBatch::new(journal.clone());
        let slots = Arc::new(tokio::sync::Semaphore::new(opts.transfers.max(1)));
        let checks = opts
            .checkers
            .map(|n| Arc::new(tokio::sync::Semaphore::new(n.max(1))));
        let mut tasks: tokio::task::JoinSet<Finished> = tokio::task::JoinSet::new();

        loop {
            // Collect finished copies without waiting.
            while let Some(done) = tasks.try_join_next() {
                let done = done.expect("copy tasks do not panic");
                tally(&mut report, &mut batch, &mut on_event, src_is_cloud, done);
            }
            batch.flush_if_due()?;
            if stop.load(Relaxed) {
                report.interrupted = true;
                break;
            }
            if let Some(why) = credentials_stop(&ctx, &report) {
                tracing::warn!(target: "moverctl::copy", "stopping the run: {why}");
                report.stopped_for_credentials = Some(why);
                break;
            }
            let next = differ.next(journal.as_deref()).await;
            let Some(item) = next else { break };
            let action = match item? {
                Joined::Refused { key, reason } => {
                    on_event(&Event::Refused {
                        key: key.clone(),
                        reason: reason.clone(),
                    });
                    report.refused.push(Failure {
                        key,
                        error: reason,
                        kind: None,
                    });
                    continue;
                }
                Joined::DestOnly(e) => {
                    if included(&opts, &e) {
                        report.dest_only += 1;
                        report.dest_only_bytes += e.size;
                        on_dest_only(e)?;
                    } else {
                        report.dest_filtered += 1;
                    }
                    continue;
                }
                Joined::Action(a) => a,
            };
            if !included(&opts, &action.src) {
                report.filtered += 1;
                continue;
            }
            report.src_objects += 1;
            if let Some(reason) = ctx
                .dst
                .caps
                .keys
                .refusal(&ctx.dst.full_key(&action.src.key))
            {
                // Before any write: a key the destination would rename or cannot hold.
                on_event(&Event::Refused {
                    key: action.src.key.clone(),
                    reason: reason.clone(),
                });
                report.refused.push(Failure {
                    key: action.src.key,
                    error: reason,
                    kind: None,
                });
                continue;
            }
            let decision = match action.decision.clone() {
                // --size-only: the sizes are equal (else the decision says so); nothing more.
                Decision::Check
                | Decision::Copy("md5 differs" | "failed earlier" | "unfinished earlier")
                    if opts.size_only =>
                {
                    Decision::Skip("same size")
                }
                d => d,
            };
            match decision {
                Decision::Skip(reason) => {
                    if reason == diff::UNVERIFIED_EARLIER && opts.verify != Verify::Size {
                        report.unverified.push(action.src.key.clone());
                    }
                    report.skipped += 1;
                    report.skipped_bytes += action.src.size;
                    *report.reasons.entry(reason.to_string()).or_default() += 1;
                    on_event(&Event::Skipped {
                        key: action.src.key,
                        bytes: action.src.size,
                        reason: reason.into(),
                    });
                }
                Decision::Copy(reason) if opts.dry_run => {
                    *report.reasons.entry(reason.to_string()).or_default() += 1;
                    report.copied += 1;
                    report.copied_bytes += action.src.size;
                    on_event(&Event::WouldCopy {
                        key: action.src.key,
                        bytes: action.src.size,
                        reason: reason.into(),
                    });
                }
                Decision::Copy(_) | Decision::Check => {
                    // A check (one HEAD of the destination) runs in the pool like a copy, so
                    // that a re-run without a journal is not one HEAD after another.
                    let check = decision == Decision::Check;
                    if let Decision::Copy(reason) = decision {
                        *report.reasons.entry(reason.to_string()).or_default() += 1;
                    }
                    // With --checkers, a check waits for a checker, and takes a copy slot
                    // only if it must copy.
                    let (permit, copy_slots) = match (&checks, check) {
                        (Some(c), true) => (
                            c.clone().acquire_owned().await.expect("checkers open"),
                            Some(slots.clone()),
                        ),
                        _ => (
                            slots.clone().acquire_owned().await.expect("slots open"),
                            None,
                        ),
                    };
                    // Finish whatever completed while we waited for a slot.
                    while let Some(done) = tasks.try_join_next() {
                        let done = done.expect("copy tasks do not panic");
                        tally(&mut report, &mut batch, &mut on_event, src_is_cloud, done);
                    }
                    let ctx = ctx.clone();
                    let entry = action.src;
                    tasks.spawn(async move {
                        handle_object(&ctx, entry, check, permit, copy_slots).await
                    });
                }
            }
        }
        while let Some(done) = tasks.join_next().await {
            let done = done.expect("copy tasks do not panic");
            tally(&mut report, &mut batch, &mut on_event, src_is_cloud, done);
        }
        if opts.fsync == Fsync::End
            && !opts.dry_run
            && report.copied > 0
            && let Some(root) = &ctx.dst.local_root
        {
            // Before the last journal batch: what it calls done is on disk.
            let r = root.clone();
            let synced = tokio::task::spawn_blocking(move || local_dest::sync_file_system(&r))
                .await
                .expect("sync does not panic");
            if let Err(e) = synced {
                report.failed.push(Failure {
                    key: root.display().to_string(),
                    error: format!("syncing the file system (--fsync end): {e}"),
                    kind: None,
                });
            }
        }
        batch.flush()?;
        if let Some(j) = &journal {
            report.open_uploads = j.lock().expect("journal lock").open_uploads()?.len() as u64;
        }
        report.requests_get = counters.get.load(Relaxed);
        report.requests_put = counters.put.load(Relaxed);
        report.requests_head = counters.head.load(Relaxed);
        report.requests_list_src = list_src.load(Relaxed);
        report.requests_list_dst = list_dst.load(Relaxed);
        report.read_bytes = counters.read_bytes.load(Relaxed);
        report.written_bytes = counters.written_bytes.load(Relaxed);
        report.resumed_parts = counters.resumed_parts.load(Relaxed);
        report.aborted_uploads = counters.aborted_uploads.load(Relaxed);
        report.server_side_objects = counters.server_side_objects.load(Relaxed);
        report.server_side_bytes = counters.server_side_bytes.load(Relaxed);
        report.fetched_by_destination = counters.fetched_by_destination.load(Relaxed);
        report.fetched_by_destination_bytes = counters.fetched_by_destination_bytes.load(Relaxed);
        report.copied_in_service_bytes = counters.copied_in_service_bytes.load(Relaxed);
        report.throttle_events = limits.throttle_events();
        report.dest_objects = differ.dst_objects();
        report.elapsed = started.elapsed();
        Ok(report)
    }
}

/// Counts the source's objects and bytes within the filters into `counters` with a listing of
/// its own (see [`CopyOptions::size_ahead`]); when it ends, the totals are known and recorded in
/// the journal for `status`. A failed sizing listing only leaves the totals unknown: the run's
/// own listing decides what happens to the run.
fn spawn_sizer(
    src: &Store,
    opts: &CopyOptions,
    counters: Arc<Counters>,
    requests: Arc<AtomicU64>,
    journal: Option<Arc<Mutex<Journal>>>,
) {
    use futures::StreamExt;
    let mut listing = list_counted(src, None, requests);
    let mut opts = opts.clone();
    // A --files-from list is read alongside one listing: this one gets its own reader.
    opts.select = opts.select.independent();
    tokio::spawn(async move {
        while let Some(item) = listing.next().await {
            match item {
                Ok(crate::store::list::Listed::Object(e)) if included(&opts, &e) => {
                    counters.total_objects.fetch_add(1, Relaxed);
                    counters.total_bytes.fetch_add(e.size, Relaxed);
                }
                Ok(_) => {}
                Err(_) => return,
            }
        }
        counters
            .total_known
            .store(true, std::sync::atomic::Ordering::Release);
        if let Some(j) = journal {
            let _ = j.lock().expect("journal lock").set_totals(
                counters.total_objects.load(Relaxed),
                counters.total_bytes.load(Relaxed),
            );
        }
    });
}

/// What a task of the pool hands back: the object, how it ended, and the attempts it took.
type Finished = (Entry, Result<Done, CopyError>, u32);

/// One object in the pool: with `check`, first one HEAD of the destination (skipped when its
/// metadata names this source version; a dry run stops there), then the copy with retries.
///
/// `permit` is held to the end, unless `copy_slots` is given (`--checkers`): then it is a
/// checker's, given back after the HEAD, and the copy waits for one of `copy_slots`.
async fn handle_object(
    ctx: &Ctx,
    entry: Entry,
    check: bool,
    permit: tokio::sync::OwnedSemaphorePermit,
    copy_slots: Option<Arc<tokio::sync::Semaphore>>,
) -> Finished {
    let mut _permit = permit;
    let mut reason = None;
    if check {
        let _slot = ctx.limits.acquire_slot().await;
        if same_source_version(ctx, &entry).await {
            return (entry, Ok(Done::Skipped("same source version")), 1);
        }
        if ctx.opts.dry_run {
            return (entry, Ok(Done::WouldCopy("unproven")), 1);
        }
        reason = Some("unproven");
    }
    if let Some(slots) = copy_slots {
        drop(_permit);
        _permit = slots.acquire_owned().await.expect("slots open");
    }
    let (res, attempts) = copy_with_retries(ctx, &entry).await;
    (entry, res.map(|o| Done::Copied(o, reason)), attempts)
}

/// Whether the run must stop for its credentials, and why: a store's credentials are spent (no
/// fresh ones can be had, see [`crate::store::awscreds`]), or so many objects in a row were
/// refused for their credentials that the rest would be too (a revoked key, a store that
/// refuses everything): at least 4, and at least one per copy slot.
fn credentials_stop(ctx: &Ctx, report: &Report) -> Option<String> {
    for s in [&ctx.src, &ctx.dst] {
        if let Some(m) = s.credentials_spent() {
            return Some(format!(
                "{}: {m}; the objects not tried yet are left for the next run",
                s.shown()
            ));
        }
    }
    let limit = ctx.opts.transfers.max(4);
    (report.auth_streak >= limit).then(|| {
        format!(
            "{} objects in a row failed because a store refused the credentials; the rest would \
             be refused too, so they are left for the next run",
            report.auth_streak
        )
    })
}

/// After an attempt that started at `started` ended with a refusal of the credentials: the
/// stores whose requests were refused as expired or invalid (or without saying why while their
/// credentials are about to expire) drop their credentials. True when each of them can renew
/// (the object is worth one more attempt); false when none was refused that way or one is
/// spent.
fn renew_after_refusal(ctx: &Ctx, e: &CopyError, started: Instant) -> bool {
    if e.kind() != Some(StoreErrorKind::Auth) {
        return false;
    }
    let mut renewing = false;
    for s in [&ctx.src, &ctx.dst] {
        let Some(c) = &s.aws_credentials else {
            continue;
        };
        let (expired, unexplained) = s.observer.refused_since(started);
        if !(expired || unexplained && c.expiring(Duration::from_secs(120))) {
            continue;
        }
        match c.refused(started) {
            crate::store::awscreds::Refusal::Retry => renewing = true,
            crate::store::awscreds::Refusal::Spent(_) => return false,
        }
    }
    renewing
}

/// Copy one object, retrying retryable errors up to `--retries` times (a growing pause between
/// attempts, the window slot held through it); returns how it ended and the attempts made. A
/// refusal of expired credentials is tried once more with renewed ones.
async fn copy_with_retries(ctx: &Ctx, entry: &Entry) -> (Result<copy::Outcome, CopyError>, u32) {
    let mut attempt = 0u32;
    let mut renewed = false;
    loop {
        attempt += 1;
        let _slot = ctx.limits.acquire_slot().await;
        let started = Instant::now();
        match copy_object(ctx, entry).await {
            Ok(o) => {
                ctx.limits.on_success();
                return (Ok(o), attempt);
            }
            Err(e) => {
                // (Slow-downs object_store absorbed were already reported by the store's
                // observer; this one ended the attempt.)
                if is_throttle(&e) {
                    ctx.limits.on_throttled();
                }
                if !renewed && renew_after_refusal(ctx, &e, started) {
                    renewed = true;
                    tracing::info!(
                        target: "moverctl::copy",
                        key = %entry.key,
                        attempt,
                        "{}: the credentials were refused as expired; trying again with renewed ones",
                        entry.key
                    );
                    continue;
                }
                if !e.retryable() || attempt > ctx.opts.retries {
                    tracing::warn!(
                        target: "moverctl::copy",
                        key = %entry.key,
                        attempts = attempt,
                        "{}: failed after {attempt} attempts: {e}",
                        entry.key
                    );
                    return (Err(e), attempt);
                }
                tracing::info!(
                    target: "moverctl::copy",
                    key = %entry.key,
                    attempt,
                    "{}: attempt {attempt} of {} failed: {e}; copying it again",
                    entry.key,
                    ctx.opts.retries + 1
                );
                tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
            }
        }
    }
}

/// The journal's note on an object written but not verified.
pub const UNVERIFIED: &str = "unverified: the source states no digest for this object and no read of it could be checked, so only its size was; it was written without moverctl's CRC64; later runs do not copy the same version again (no copy could be checked better) but keep counting it (--verify size accepts such objects)";

/// Count a finished task into the report, tell `on_event`, and queue its journal record:
/// `verified` for a copy, `failed` for an error (unless a multipart upload is kept open for
/// resume, whose `copying` row stays).
fn tally(
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
            batch.push(ObjectRecord {
                key: entry.key,
                size: entry.size,
                src_etag: entry.e_tag,
                src_mtime: Some(entry.last_modified.to_rfc3339()),
                state: if unverified {
                    State::Failed
                } else {
                    State::Verified
                },
                crc64: (o.crc64_known && !unverified)
                    .then(|| crate::checksum::crc64_hex(o.digests.crc64)),
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
            });
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
                batch.push(ObjectRecord {
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
                });
            }
        }
    }
}

/// Journal records of finished objects, written in batches: when 256 are waiting or the oldest
/// unwritten batch is half a second old, and at the end of the run (each batch one transaction).
struct JournalBatch {
    journal: Option<Arc<Mutex<Journal>>>,
    pending: Vec<ObjectRecord>,
    last_flush: Instant,
}

impl JournalBatch {
    fn new(journal: Option<Arc<Mutex<Journal>>>) -> JournalBatch {
        JournalBatch {
            journal,
            pending: Vec::new(),
            last_flush: Instant::now(),
        }
    }

    fn push(&mut self, r: ObjectRecord) {
        self.pending.push(r);
    }

    /// Write the waiting records if there are 256 or the last write is over 500 ms ago.
    fn flush_if_due(&mut self) -> Result<(), RunError> {
        if self.pending.len() >= 256
            || (self.last_flush.elapsed() > Duration::from_millis(500) && !self.pending.is_empty())
        {
            self.flush()?;
            self.last_flush = Instant::now();
        }
        Ok(())
    }

    /// Write the waiting records now (dropped when the run has no journal).
    fn flush(&mut self) -> Result<(), RunError> {
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
    fn keeps_upload(&self, key: &str) -> bool {
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

fn is_throttle(e: &CopyError) -> bool {
    e.kind() == Some(StoreErrorKind::Throttled)
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
