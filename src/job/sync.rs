//! The sync job: one run of a pair on a [`Session`] (the lock keeps runs apart; the journal
//! persists across runs, so an unchanged run is decided from the two listings and the journal
//! alone), deletes only behind the guards of [`crate::transfer::sync`], and every run priced
//! from the catalog ([`super::pricing::price_run`]). Never prints.
//!
//! ```
//! use moverctl::catalog::Catalog;
//! use moverctl::job::{self, sync::SyncJob};
//! use moverctl::store::config::Remotes;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
//! std::fs::create_dir_all(&src).unwrap();
//! std::fs::create_dir_all(&dst).unwrap();
//! std::fs::write(src.join("new.bin"), b"new").unwrap();
//! std::fs::write(dst.join("gone.bin"), b"gone").unwrap();
//! let catalog = Catalog::load(None).unwrap();
//! let remotes = Remotes::default();
//! let (s, d) = (src.to_str().unwrap(), dst.to_str().unwrap());
//! let (src, dst) = job::trust::open_pair(&catalog, s, d, &remotes).unwrap();
//! let limits = catalog.get("onprem").unwrap().file.limits.clone();
//! let opts = moverctl::transfer::CopyOptions::new(limits);
//! let mut job = SyncJob::new(opts, dir.path().join("journal.db"));
//! job.lock = Some(dir.path().join("sync.lock"));
//! job.delete = true;
//! job.max_delete = moverctl::transfer::sync::MaxDelete::parse("100%").unwrap();
//! let out = job::sync::run(&catalog, &remotes, src, dst, job, &job::Quiet).unwrap();
//! assert_eq!((out.report.copied, out.deletes.deleted), (1, 1));
//! assert!(!dir.path().join("dst/gone.bin").exists());
//! ```

pub mod metrics;

use super::pricing::{RunCost, SidePricing, price_run};
use super::session::{JournalUse, Session, SessionSpec};
use super::trust::{provider_of, region_of};
use super::{JobError, Observer};
use crate::catalog::Catalog;
use crate::exit::Exit;
use crate::limit::Limits;
use crate::store::Store;
use crate::store::config::Remotes;
use crate::transfer::sync::{DeletePolicy, DeleteReport, MaxDelete, MinDuration};
use crate::transfer::{CopyOptions, Report, Run};
use std::path::PathBuf;

/// A sync run, resolved.
pub struct SyncJob {
    pub opts: CopyOptions,
    pub limits: Limits,
    pub journal_path: PathBuf,
    /// The lock file (default: in the state folder, named after the pair).
    pub lock: Option<PathBuf>,
    /// Delete what the source no longer has, behind the guards below.
    pub delete: bool,
    pub max_delete: MaxDelete,
    pub allow_empty_source: bool,
    pub allow_early_delete: bool,
    /// The destination's storage class as resolved (see
    /// [`super::trust::resolve_storage_class`]): its price and minimum storage duration.
    pub storage_class: Option<String>,
}

impl SyncJob {
    /// A sync with these engine options that copies what is new or changed and deletes nothing.
    pub fn new(opts: CopyOptions, journal_path: PathBuf) -> SyncJob {
        SyncJob {
            opts,
            limits: Limits::new(None, None),
            journal_path,
            lock: None,
            delete: false,
            max_delete: MaxDelete::Percent(rust_decimal::Decimal::from(10)),
            allow_empty_source: false,
            allow_early_delete: false,
            storage_class: None,
        }
    }
}

/// A finished sync run.
pub struct SyncOutcome {
    pub report: Report,
    pub deletes: DeleteReport,
    pub cost: RunCost,
    pub exit: Exit,
    /// The destination class's minimum storage duration (what an early delete is priced by).
    pub min_duration: Option<MinDuration>,
    /// The note about a stale lock this run took over, if it did.
    pub stale_lock: Option<String>,
    /// What to set for credentials refused at either end.
    pub credentials_hint: String,
}

/// Runs `job` from `src` to `dst`.
pub fn run(
    catalog: &Catalog,
    remotes: &Remotes,
    src: Store,
    dst: Store,
    job: SyncJob,
    observer: &dyn Observer,
) -> Result<SyncOutcome, JobError> {
    let dry_run = job.opts.dry_run;
    let src_pricing = provider_of(catalog, &src)
        .map(|p| SidePricing::new(p, region_of(remotes, &src).as_deref(), None));
    let dst_pricing = provider_of(catalog, &dst).map(|p| {
        SidePricing::new(
            p,
            region_of(remotes, &dst).as_deref(),
            job.storage_class.as_deref(),
        )
    });
    let min_duration = dst_pricing.as_ref().and_then(SidePricing::min_duration);
    let hint = super::trust::credentials_hint(&[&src, &dst]);
    // One run at a time (a dry run changes nothing and takes no lock).
    let lock = (!dry_run).then(|| {
        (
            job.lock
                .clone()
                .unwrap_or_else(|| crate::lock::default_path(&src.identity, &dst.identity)),
            format!("sync {} {}", src.shown(), dst.shown()),
        )
    });
    let journal = match dry_run {
        true => JournalUse::IfExists(&job.journal_path),
        false => JournalUse::Open(&job.journal_path),
    };
    let mut session = Session::open(&src, &dst, SessionSpec { lock, journal })?;
    let policy = DeletePolicy {
        delete: job.delete,
        max_delete: job.max_delete,
        allow_empty_source: job.allow_empty_source,
        allow_early_delete: job.allow_early_delete,
        min_duration: min_duration.clone(),
        now: chrono::Utc::now(),
        dry_run,
        concurrency: job.opts.transfers.max(1),
    };
    let counters = job.opts.counters.clone();
    let run = Run {
        src,
        dst,
        opts: job.opts,
        limits: job.limits,
        journal: session.journal.take(),
        stop: session.stop.clone(),
    };
    let spill_in = (!dry_run).then_some(job.journal_path.as_path());
    let running = crate::transfer::sync::run(
        run,
        policy,
        spill_in,
        |ev| observer.event(ev),
        |key, bytes, fate| observer.delete(key, bytes, fate),
    );
    let (report, deletes) = session
        .run(running, ", nothing will be deleted", counters, observer)
        .map_err(|e| JobError::from(e).naming_credentials(&hint))?;
    let cost = price_run(
        src_pricing.as_ref(),
        dst_pricing.as_ref(),
        &report,
        &deletes,
    );
    Ok(SyncOutcome {
        exit: Exit::of_run(&report, Some(&deletes)),
        report,
        deletes,
        cost,
        min_duration,
        stale_lock: session.stale_lock.take(),
        credentials_hint: hint,
    })
}
