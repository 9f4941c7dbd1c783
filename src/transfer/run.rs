//! The run's loop ([`Run::run_with`]): list both sides, merge-join them with the journal, hand
//! each object to the pool of copy tasks under the run's slots, tally what the tasks return,
//! and fill in the report's counts when the listing ends.

use super::diff::{self, Action, Decision, JoinPolicy, Joined};
use super::joins::Joins;
use super::object::{Finished, credentials_stop, handle_object};
use super::tally::{JournalBatch, tally};
use super::{CopyOptions, Counters, Event, Failure, Fsync, Report, Run, RunError, Verify};
use super::{copy::context, local_dest};
use crate::journal::Journal;
use crate::limit::Limits;
use crate::store::Store;
use crate::store::list::Entry;
use context::Ctx;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::Semaphore;

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
        let retried_before = crate::store::retry::retried();
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
        observe_throttles(&src, &dst, &limits);
        let counters = opts.counters.clone().unwrap_or_default();
        // Every event also moves the progress counters.
        let mut on_event = {
            let counters = counters.clone();
            move |ev: &Event| {
                counters.record(ev);
                on_event(ev)
            }
        };
        let (list_src, list_dst) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
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
        let mut joins = Joins::start(
            src.clone(),
            dst.clone(),
            &opts,
            policy,
            journal.clone(),
            list_src.clone(),
            list_dst.clone(),
        );
        let ctx = Arc::new(run_context(src, dst, &opts, &limits, &journal, &counters).await);
        let mut pool = Pool::new(ctx.clone(), &opts, &journal, src_is_cloud, &mut on_event);

        loop {
            // Collect finished copies without waiting.
            pool.collect();
            pool.batch.flush_if_due().await?;
            if stop.load(Relaxed) {
                pool.report.interrupted = true;
                break;
            }
            if let Some(why) = credentials_stop(&ctx, &pool.report) {
                tracing::warn!(target: "moverctl::copy", "stopping the run: {why}");
                pool.report.stopped_for_credentials = Some(why);
                break;
            }
            // A Ctrl-C is taken at once, also while the listing or a free slot is awaited.
            let next = tokio::select! {
                n = joins.next() => n,
                () = stopped(&stop) => continue,
            };
            let Some(item) = next else { break };
            let action = match item? {
                Joined::Refused { key, reason } => {
                    pool.refuse(key, reason);
                    continue;
                }
                Joined::DestOnly(e) => {
                    dest_only(&opts, &mut pool.report, e, &mut on_dest_only)?;
                    continue;
                }
                Joined::Action(a) => a,
            };
            tokio::select! {
                () = pool.take(&opts, action) => {}
                () = stopped(&stop) => {}
            }
        }
        pool.finish(&stop).await?;
        let Pool {
            mut report,
            mut batch,
            ..
        } = pool;
        sync_at_end(&ctx, &opts, &mut report).await;
        batch.flush().await?;
        report.failed.append(&mut batch.failures);
        if let Some(j) = &journal {
            report.open_uploads = j.lock().expect("journal lock").open_uploads()?.len() as u64;
        }
        count_requests(&mut report, &counters, &list_src, &list_dst);
        report.request_retries = crate::store::retry::retried() - retried_before;
        report.throttle_events = limits.throttle_events();
        report.dest_objects = joins.dst_objects();
        report.elapsed = started.elapsed();
        Ok(report)
    }
}

/// Slow-down answers object_store retried by itself still shrink the window.
fn observe_throttles(src: &Store, dst: &Store, limits: &Limits) {
    for s in [src, dst] {
        let l = limits.clone();
        s.observer.on_throttle(move || l.on_throttled());
    }
}

/// A key only at the destination: counted, and handed on when inside the filters.
fn dest_only(
    opts: &CopyOptions,
    report: &mut Report,
    e: Entry,
    on_dest_only: &mut impl FnMut(Entry) -> Result<(), crate::journal::JournalError>,
) -> Result<(), crate::journal::JournalError> {
    if included(opts, &e) {
        report.dest_only += 1;
        report.dest_only_bytes += e.size;
        on_dest_only(e)?;
    } else {
        report.dest_filtered += 1;
    }
    Ok(())
}

/// What every copy of the run shares ([`Ctx`]): the stores, the options, the buffer budget (under
/// a byte limit, reading further ahead than about two seconds of the limit, or two parts, only
/// makes every buffered part finish its read late and upload in one burst), and whether objects
/// can be copied on the server or from the source's URL.
async fn run_context(
    src: Store,
    dst: Store,
    opts: &CopyOptions,
    limits: &Limits,
    journal: &Option<Arc<Mutex<Journal>>>,
    counters: &Arc<Counters>,
) -> Ctx {
    let max_buffer = match limits.byte_rate() {
        Some(rate) => opts
            .max_buffer
            .min((2 * rate).max(2 * opts.part_rule.preferred_part)),
        None => opts.max_buffer,
    };
    let buffer_mib = (max_buffer >> 20).clamp(1, u32::MAX as u64 >> 1) as usize;
    let server_side = if opts.server_side && !opts.dry_run {
        context::ServerSide::between(&src, &dst).await.map(Arc::new)
    } else {
        None
    };
    let from_url = if opts.server_side && !opts.dry_run && server_side.is_none() {
        context::FromUrl::between(&src, &dst).await.map(Arc::new)
    } else {
        None
    };
    Ctx {
        src,
        dst,
        opts: Arc::new(opts.clone()),
        limits: limits.clone(),
        journal: journal.clone(),
        counters: counters.clone(),
        buffers: Arc::new(Semaphore::new(buffer_mib)),
        buffer_mib: buffer_mib as u32,
        // One GET per large object, unless the byte limit is so low that a part would wait
        // longer than ~20 s for its turn (an idle connection may be closed by then).
        sequential_reads: !opts.ranged_reads
            && limits
                .byte_rate()
                .is_none_or(|r| r.saturating_mul(20) >= opts.part_rule.preferred_part),
        server_side,
        from_url,
    }
}

/// The run's pool of object tasks, and what their results go to: the report so far, the
/// journal records waiting to be written, and `on_event`.
struct Pool<'a> {
    ctx: Arc<Ctx>,
    report: Report,
    batch: JournalBatch,
    /// Copy slots (`--transfers`), and the checkers' slots (`--checkers`).
    slots: Arc<Semaphore>,
    checks: Option<Arc<Semaphore>>,
    tasks: tokio::task::JoinSet<Finished>,
    src_is_cloud: bool,
    on_event: &'a mut dyn FnMut(&Event),
}

impl<'a> Pool<'a> {
    fn new(
        ctx: Arc<Ctx>,
        opts: &CopyOptions,
        journal: &Option<Arc<Mutex<Journal>>>,
        src_is_cloud: bool,
        on_event: &'a mut dyn FnMut(&Event),
    ) -> Pool<'a> {
        let commit = group_commit(&ctx.dst, opts);
        Pool {
            ctx,
            report: Report {
                dry_run: opts.dry_run,
                ..Default::default()
            },
            batch: JournalBatch::new(journal.clone(), commit),
            slots: Arc::new(Semaphore::new(opts.transfers.max(1))),
            checks: opts.checkers.map(|n| Arc::new(Semaphore::new(n.max(1)))),
            tasks: tokio::task::JoinSet::new(),
            src_is_cloud,
            on_event,
        }
    }

    /// Tallies the tasks that finished, without waiting.
    fn collect(&mut self) {
        while let Some(done) = self.tasks.try_join_next() {
            let done = done.expect("copy tasks do not panic");
            self.tally(done);
        }
    }

    /// The tasks in flight when the listing ended or the run was stopped: waited for, or (once
    /// `stop` is set) abandoned.
    async fn finish(&mut self, stop: &std::sync::atomic::AtomicBool) -> Result<(), RunError> {
        if self.report.interrupted || self.drain(stop).await? {
            self.report.interrupted = true;
            self.abandon().await?;
        }
        Ok(())
    }

    /// Waits for every task and tallies it (group commits go on meanwhile); true when `stop`
    /// was set first (the tasks left are then for [`Pool::abandon`]).
    async fn drain(&mut self, stop: &std::sync::atomic::AtomicBool) -> Result<bool, RunError> {
        loop {
            let next = tokio::select! {
                done = self.tasks.join_next() => done,
                () = stopped(stop) => return Ok(true),
            };
            let Some(done) = next else { return Ok(false) };
            self.tally(done.expect("copy tasks do not panic"));
            self.batch.flush_if_due().await?;
        }
    }

    /// After a Ctrl-C: the tasks in flight are abandoned at once (an upload's parts already
    /// sent stay journaled with its upload id, so the next run continues it; a local file's
    /// temporary file is taken over by the next run); the ones that had finished are tallied and
    /// journaled as usual. A cancelled task is never journaled as copied.
    async fn abandon(&mut self) -> Result<(), RunError> {
        // A test hook (tests/it/feedback.rs): the stop takes this long, so that a second Ctrl-C
        // can be sent while one is under way.
        if let Some(ms) = std::env::var("MOVERCTL_TEST_STOP_DELAY_MS")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        }
        self.tasks.abort_all();
        while let Some(done) = self.tasks.join_next().await {
            match done {
                Ok(done) => self.tally(done),
                Err(e) if e.is_cancelled() => self.report.abandoned += 1,
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            }
        }
        Ok(())
    }

    fn tally(&mut self, done: Finished) {
        self.ctx.counters.active.fetch_sub(1, Relaxed);
        if let (entry, Ok(super::object::Done::WouldCopy(_)), _) = &done {
            would_requests(&mut self.report, &self.ctx.opts, entry.size);
        }
        let on_event = &mut *self.on_event;
        tally(
            &mut self.report,
            &mut self.batch,
            on_event,
            self.src_is_cloud,
            done,
        );
    }

    /// A key that is not copied at all, and why.
    fn refuse(&mut self, key: String, reason: String) {
        (self.on_event)(&Event::Refused {
            key: key.clone(),
            reason: reason.clone(),
        });
        self.report.refused.push(Failure {
            key,
            error: reason,
            kind: None,
        });
    }

    /// One source object the join decided about: filtered, refused, skipped, counted as a dry
    /// run's copy, or handed to the pool.
    async fn take(&mut self, opts: &CopyOptions, action: Action) {
        if !included(opts, &action.src) {
            self.report.filtered += 1;
            return;
        }
        self.report.src_objects += 1;
        let dst = &self.ctx.dst;
        if let Some(reason) = dst.caps.keys.refusal(&dst.full_key(&action.src.key)) {
            // Before any write: a key the destination would rename or cannot hold.
            self.refuse(action.src.key, reason);
            return;
        }
        let decision = match action.decision.clone() {
            // --size-only: the sizes are equal (else the decision says so); nothing more.
            Decision::Check
            | Decision::Copy("md5 differs" | "failed earlier" | "unfinished earlier")
                if opts.size_only =>
            {
                Decision::Skip("same size")
            }
            Decision::Check if opts.journal_proof_only => Decision::Copy("unproven"),
            d => d,
        };
        let report = &mut self.report;
        match decision {
            Decision::Skip(reason) => {
                if reason == diff::UNVERIFIED_EARLIER && opts.verify != Verify::Size {
                    report.unverified.push(action.src.key.clone());
                }
                report.skipped += 1;
                report.skipped_bytes += action.src.size;
                *report.reasons.entry(reason.to_string()).or_default() += 1;
                (self.on_event)(&Event::Skipped {
                    key: action.src.key,
                    bytes: action.src.size,
                    reason: reason.into(),
                });
            }
            Decision::Copy(reason) if opts.dry_run => {
                would_requests(report, opts, action.src.size);
                *report.reasons.entry(reason.to_string()).or_default() += 1;
                report.copied += 1;
                report.copied_bytes += action.src.size;
                (self.on_event)(&Event::WouldCopy {
                    key: action.src.key,
                    bytes: action.src.size,
                    reason: reason.into(),
                });
            }
            Decision::Copy(_) | Decision::Check => self.spawn(decision, action.src).await,
        }
    }

    /// Hands an object to be copied (or checked first) to the pool once a slot is free.
    async fn spawn(&mut self, decision: Decision, entry: Entry) {
        // A check (one HEAD of the destination) runs in the pool like a copy, so
        // that a re-run without a journal is not one HEAD after another.
        let check = decision == Decision::Check;
        if let Decision::Copy(reason) = decision {
            *self.report.reasons.entry(reason.to_string()).or_default() += 1;
        }
        // With --checkers, a check waits for a checker, and takes a copy slot
        // only if it must copy.
        let (permit, copy_slots) = match (&self.checks, check) {
            (Some(c), true) => (
                c.clone().acquire_owned().await.expect("checkers open"),
                Some(self.slots.clone()),
            ),
            _ => (
                self.slots
                    .clone()
                    .acquire_owned()
                    .await
                    .expect("slots open"),
                None,
            ),
        };
        // Finish whatever completed while we waited for a slot.
        self.collect();
        let ctx = self.ctx.clone();
        ctx.counters.active.fetch_add(1, Relaxed);
        self.tasks
            .spawn(async move { handle_object(&ctx, entry, check, permit, copy_slots).await });
    }
}

/// A dry run's would-copy object of `size`: the requests its copy would take, into the report.
fn would_requests(report: &mut Report, opts: &CopyOptions, size: u64) {
    use crate::catalog::parts::{Upload, part_plan};
    report.would_get += 1;
    report.would_put += match part_plan(size, &opts.dst_limits, opts.part_rule) {
        Ok(Upload::Multipart { parts, .. }) => parts + 2,
        _ => 1,
    };
}

/// Returns once `stop` is set (by a Ctrl-C handler): it is looked at every 50 ms.
async fn stopped(stop: &std::sync::atomic::AtomicBool) {
    while !stop.load(Relaxed) {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// `--fsync batch` (the default) into a local folder: files synced in groups before their rows
/// are journaled.
fn group_commit(dst: &Store, opts: &CopyOptions) -> Option<local_dest::commit::GroupCommit> {
    if opts.fsync != Fsync::Batch || opts.dry_run {
        return None;
    }
    local_dest::commit::GroupCommit::for_store(dst)
}

/// `--fsync end`: the destination folder's file system synced once, before the last journal
/// batch, so that what it calls done is on disk; a failure is the run's.
async fn sync_at_end(ctx: &Ctx, opts: &CopyOptions, report: &mut Report) {
    if opts.fsync == Fsync::End
        && !opts.dry_run
        && report.copied > 0
        && let Some(root) = ctx.dst.local_root()
    {
        let r = root.to_path_buf();
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
}

/// The requests and bytes the run's counters and listings counted, into the report.
fn count_requests(
    report: &mut Report,
    counters: &Counters,
    list_src: &AtomicU64,
    list_dst: &AtomicU64,
) {
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
    let mut listing = super::joins::source_listing(src, opts, requests);
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
