//! The copy and exec jobs: one run of a pair on a [`Session`], its shard's records kept when it
//! is one shard of a plan, and the run priced against its plan. Never prints: each object's event
//! and the notes go to the caller's [`Observer`]; the outcome comes back typed.
//!
//! ```
//! use moverctl::catalog::Catalog;
//! use moverctl::job::{self, copy::CopyJob};
//! use moverctl::store::config::Remotes;
//! use moverctl::transfer::CopyOptions;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
//! std::fs::create_dir_all(&src).unwrap();
//! std::fs::write(src.join("a.bin"), b"hello").unwrap();
//! let catalog = Catalog::load(None).unwrap();
//! let (s, d) = (src.to_str().unwrap(), dst.to_str().unwrap());
//! let (src, dst) = job::copy::open_pair(&catalog, s, d, &Remotes::default(), false).unwrap();
//! let job = CopyJob {
//!     opts: CopyOptions::new(catalog.get("onprem").unwrap().file.limits.clone()),
//!     limits: moverctl::limit::Limits::new(None, None),
//!     journal_path: dir.path().join("journal.db"),
//!     plan: None,
//!     shard: None,
//!     inventory: None,
//! };
//! let out = job::copy::run(&catalog, src, dst, job, &job::Quiet).unwrap();
//! assert_eq!((out.report.copied, out.exit), (1, moverctl::exit::Exit::Success));
//! assert_eq!(std::fs::read(dir.path().join("dst/a.bin")).unwrap(), b"hello");
//! ```

pub mod single;

use super::pricing::{VsPlan, against_plan};
use super::session::{JournalUse, Session, SessionSpec};
use super::shard::{COST_ITEMS, Figures, ShardRun, ShardView};
use super::{JobError, Observer};
use crate::catalog::Catalog;
use crate::exit::Exit;
use crate::limit::Limits;
use crate::plan::file::PlanFile;
use crate::store::Store;
use crate::store::config::Remotes;
use crate::transfer::progress_store::{RecordState, ShardStatus, Written};
use crate::transfer::{CopyOptions, Report, Run};
use std::path::PathBuf;

/// Opens the pair of `moverctl copy SRC DST`: a local `src` that is one regular file as `cp`
/// reads it ([`single`]), else both locations; both stores' capabilities refined
/// ([`super::trust::refine_caps`]). A source that lists no object is refused unless
/// `allow_empty` ([`super::trust::open_pair_guarded`]).
pub fn open_pair(
    catalog: &Catalog,
    src: &str,
    dst: &str,
    remotes: &Remotes,
    allow_empty: bool,
) -> Result<(Store, Store), super::JobError> {
    match single::detect(src, dst, remotes) {
        Some(one) => {
            let pair = one.open(remotes)?;
            super::preflight::reachable(&pair.1)?;
            Ok(super::trust::refined(catalog, pair))
        }
        None => super::trust::open_pair_guarded(catalog, src, dst, remotes, allow_empty),
    }
}

/// A copy or exec run, resolved: what the engine is told, the journal, and the plan (and the
/// shard of it) the run is one step of.
pub struct CopyJob<'a> {
    pub opts: CopyOptions,
    pub limits: Limits,
    pub journal_path: PathBuf,
    pub plan: Option<&'a PlanFile>,
    pub shard: Option<ShardRun>,
    /// `--inventory MANIFEST` (and the remotes its location may name): the source side is the
    /// inventory's objects under the source location, sorted before the run (no source LIST).
    pub inventory: Option<(String, Remotes)>,
}

/// What a copy or exec run did.
pub struct CopyOutcome {
    pub report: Report,
    /// The exit code the run earns (a shard's stop below overrides it).
    pub exit: Exit,
    /// The run priced against its plan (`exec`).
    pub vs_plan: Option<VsPlan>,
    /// A shard's run against its part of the plan, and the whole move so far.
    pub shard: Option<ShardView>,
    /// Why a shard stopped after its run although the run itself finished (its progress
    /// location could not be written: exit 7); the summary is still worth showing.
    pub stopped: Option<JobError>,
    /// The destination is S3 and no saved probe says whether it checks CRC64/NVME.
    pub unprobed: Option<String>,
    /// What to set for credentials refused at either end (see [`super::trust::credentials_hint`]).
    pub credentials_hint: String,
}

/// Runs `job` from `src` to `dst`: one run of the pair at a time (a lock; a dry run takes none
/// and opens no journal), a shard's journal rebuilt from its progress records and its records
/// written as it goes, and the finished run priced against the plan.
pub fn run(
    catalog: &Catalog,
    src: Store,
    dst: Store,
    job: CopyJob<'_>,
    observer: &dyn Observer,
) -> Result<CopyOutcome, JobError> {
    let dry_run = job.opts.dry_run;
    let tag = job.shard.as_ref().map(|s| s.tag()).unwrap_or_default();
    let hint = super::trust::credentials_hint(&[&src, &dst]);
    let lock = (!dry_run).then(|| {
        (
            crate::lock::default_path(&src.identity, &format!("{}{tag}", dst.identity)),
            format!("copy {} {}", src.shown(), dst.shown()),
        )
    });
    let journal = match dry_run {
        true => JournalUse::None,
        false => JournalUse::Open(&job.journal_path),
    };
    let mut session = Session::open(&src, &dst, SessionSpec { lock, journal })?;
    if let Some(note) = &session.stale_lock {
        observer.stale_lock(note);
    }
    // A shard rebuilds its journal from its progress records and writes them as it goes.
    let mut journal = session.journal.take();
    let shard_start = match (&job.shard, journal.as_mut()) {
        (Some(s), Some(j)) => {
            let status = session.block_on(s.start(j, observer))?;
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            j.tap(tx);
            Some((status, rx))
        }
        _ => None,
    };
    let unprobed = super::trust::unprobed_s3(catalog, &dst);
    let policy = crate::transfer::diff::JoinPolicy::for_pair(&src, &dst, false);
    let mut opts = job.opts.clone();
    if let Some((given, remotes)) = &job.inventory {
        opts.inventory = Some(session.block_on(inventory_of(given, remotes, &src, observer))?);
    }
    let run = Run {
        src,
        dst,
        opts,
        limits: job.limits.clone(),
        journal,
        stop: session.stop.clone(),
    };
    // A shard whose progress location cannot be written stops the run through the same flag.
    let writer_stop = session.stop.clone();
    let writer = async {
        match (&job.shard, shard_start) {
            (Some(s), Some((status, rx))) => Some(
                crate::transfer::progress_store::write_as_it_goes(
                    &s.progress,
                    rx,
                    status,
                    &writer_stop,
                )
                .await,
            ),
            _ => None,
        }
    };
    let running = run.run_with(policy, |ev| observer.event(ev), |_| Ok(()));
    let (report, written) = session.run(
        async { tokio::join!(running, writer) },
        "stopping: no new object starts; the objects in flight finish and are journaled",
        job.opts.counters.clone(),
        observer,
    );
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            // The shard's record says it failed (when the location can be written at all).
            if let (Some(s), Some((w, mut status))) = (&job.shard, written)
                && w.unwritable.is_none()
            {
                status.state = RecordState::Failed;
                if let Err(e) = session.block_on(s.progress.write_status(&status)) {
                    tracing::warn!("shard {}: {e}", s.id);
                }
            }
            return Err(JobError::from(e).naming_credentials(&hint));
        }
    };
    let vs_plan = job.plan.and_then(|p| against_plan(&report, p, catalog));
    let mut out = CopyOutcome {
        exit: Exit::of_run(&report, None),
        report,
        vs_plan,
        shard: None,
        stopped: None,
        unprobed,
        credentials_hint: hint,
    };
    if let (Some(s), Some(p), Some(w)) = (&job.shard, job.plan, written) {
        finish_shard(&session, s, p, w, &job, &mut out, observer);
    }
    Ok(out)
}

/// `--inventory`: the manifest read and its objects under `src` sorted; the observer is told
/// how many (and how many rows were no current object or outside the source).
async fn inventory_of(
    given: &str,
    remotes: &Remotes,
    src: &Store,
    observer: &dyn Observer,
) -> Result<std::sync::Arc<crate::inventory::sorted::Sorted>, JobError> {
    if src.local_root.is_some() {
        return Err(JobError::Usage(format!(
            "--inventory takes a bucket's inventory report; the source {} is a local folder",
            src.shown()
        )));
    }
    let opened = crate::inventory::open(given, remotes).await?;
    let sorted = crate::inventory::sorted::Sorted::build(&opened, src).await?;
    observer.note(&format!(
        "{} {given}: {} objects under {} ({} rows were no current object, {} outside the source); the source is not listed",
        opened.manifest.provider.as_str(),
        sorted.objects,
        src.shown(),
        sorted.skipped,
        sorted.outside,
    ));
    Ok(std::sync::Arc::new(sorted))
}

/// A shard's last record, then the shard and the whole move set against the plan.
fn finish_shard(
    session: &Session,
    s: &ShardRun,
    plan: &PlanFile,
    (w, mut status): (Written, ShardStatus),
    job: &CopyJob<'_>,
    out: &mut CopyOutcome,
    observer: &dyn Observer,
) {
    let journaled = |missing: u64| Some((w.verified, missing, job.journal_path.as_path()));
    if let Some(cause) = w.unwritable.clone() {
        out.stopped = Some(s.unwritable(cause, journaled(w.unwritten)));
        return;
    }
    let report = &out.report;
    // At the end every object of the range is accounted for: copied and verified now, or found
    // verified (by the journal or by a check) and skipped.
    if !report.interrupted {
        status.objects_done = report.copied + report.skipped;
        status.bytes_done = report.copied_bytes + report.skipped_bytes;
    }
    // A run with nothing failed that found much less than the plan is not done.
    let short = (out.exit == Exit::Success)
        .then(|| {
            super::shard::shortfall(
                (status.objects_done, status.bytes_done),
                (status.planned_objects, status.planned_bytes),
            )
        })
        .flatten();
    status.state = match (&short, out.exit) {
        (Some(m), _) => {
            observer.note(&format!("shard {}: {m}", s.id));
            out.exit = Exit::Incomplete;
            RecordState::Incomplete
        }
        (None, Exit::Success) => RecordState::Done,
        _ => RecordState::Failed,
    };
    let cost = out.vs_plan.as_ref().map(|v| v.actual()).unwrap_or_default();
    let items: Vec<(&str, crate::money::Usd)> = COST_ITEMS.iter().copied().zip(cost).collect();
    status.add_cost(&items);
    let this_run = Figures {
        objects: report.copied + report.skipped,
        bytes: report.copied_bytes + report.skipped_bytes,
        seconds: rust_decimal::Decimal::from(report.elapsed.as_millis() as u64)
            / rust_decimal::Decimal::from(1000),
        cost,
    };
    if let Err(e) = session.block_on(s.progress.write_status(&status)) {
        // Every segment was written; only the last record was not.
        out.stopped = Some(s.unwritable(super::shard::cause_of(e), journaled(0)));
        return;
    }
    let records = match session.block_on(s.records(s.id.count)) {
        Ok(r) => Some(r),
        Err(e) => {
            tracing::warn!(
                "shard {}: the shards' records could not be read for the whole move: {e}",
                s.id
            );
            None
        }
    };
    out.shard = Some(s.against_plan(plan, &status, &this_run, records.as_deref()));
}
