//! The read-only jobs: list a location (`ls`), a move's progress from its journal (`status`;
//! a sharded plan's is [`super::shard::status`]) and probing a store (`probe`, which writes and
//! removes its own test objects only).

use super::{JobError, Observer};
use crate::journal::{self, Journal};
use crate::probe::{self, ProbeOpts, ProbeReport};
use crate::store::Store;
use crate::store::config::Remotes;
use crate::store::list::{Listed, list};
use futures::StreamExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What `ls` counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Listing {
    pub objects: u64,
    pub bytes: u64,
    /// Keys moverctl cannot handle (each also went to `each`).
    pub refused: u64,
}

/// Lists `location` in key order, one entry at a time to `each` (which may stop the listing with
/// an error), in constant memory.
pub fn ls(
    remotes: &Remotes,
    location: &str,
    mut each: impl FnMut(&Listed) -> Result<(), JobError>,
) -> Result<Listing, JobError> {
    let store = Store::open(location, remotes)?;
    super::preflight::no_glob(&store)?;
    super::preflight::reachable(&store)?;
    let hint = super::trust::credentials_hint(&[&store]);
    let listed = super::runtime()?.block_on(async move {
        let mut stream = list(&store);
        let mut n = Listing::default();
        while let Some(item) = stream.next().await {
            let item = item?;
            match &item {
                Listed::Object(e) => {
                    n.objects += 1;
                    n.bytes += e.size;
                }
                Listed::Refused { .. } => n.refused += 1,
            }
            each(&item)?;
        }
        Ok(n)
    });
    listed.map_err(|e: JobError| e.naming_credentials(&hint))
}

/// Where the journal of `src` → `dst` is: keyed by the stores' identities; one an earlier version
/// kept under the spelled locations is found too (the next copy or exec moves it).
pub fn journal_of(src: &str, dst: &str, remotes: &Remotes) -> Result<PathBuf, JobError> {
    let state = journal::state_dir();
    let id = |l: &str| crate::store::identity_of(l, remotes);
    let shown = |l: &str| crate::store::location::Location::parse(l, remotes).map(|l| l.shown());
    let path = journal::default_path(&state, &id(src)?, &id(dst)?);
    let old = journal::default_path(&state, &shown(src)?, &shown(dst)?);
    Ok(if !path.exists() && old.exists() {
        old
    } else {
        path
    })
}

/// A move's progress as its journal tells it.
#[derive(Debug, Clone)]
pub struct JournalStatus {
    pub path: PathBuf,
    pub source: String,
    pub destination: String,
    pub summary: journal::Summary,
    /// Multipart uploads open for resume.
    pub open_uploads: usize,
    /// The plan's corpus (bytes, objects), when a plan was given.
    pub corpus: Option<(u64, u64)>,
    /// The whole move (bytes, objects): the plan's corpus, else what a complete listing of the
    /// source counted.
    pub total: Option<(u64, u64)>,
    /// Multipart uploads under way: (objects with parts uploaded, bytes of those parts).
    pub in_flight: (u64, u64),
    /// Bytes a second verified over the last five minutes.
    pub rate: f64,
    /// The time left at that rate, when a run is running and there is a total and a rate.
    pub eta: Option<std::time::Duration>,
    /// Who holds the pair's lock now, when a run does.
    pub running: Option<String>,
}

/// Reads the journal at `path` (it must exist); `corpus`: the plan's (bytes, objects).
pub fn journal_status(path: &Path, corpus: Option<(u64, u64)>) -> Result<JournalStatus, JobError> {
    if !path.exists() {
        return Err(JobError::Failure(format!(
            "no journal at {}: this move has not started (or ran with another --journal)",
            path.display()
        )));
    }
    let j = Journal::open_existing(path)?;
    let summary = j.summary()?;
    let total = corpus.or(j.totals()?.map(|(o, b)| (b, o)));
    // The recent rate: what was verified in the last five minutes.
    let window = std::time::Duration::from_secs(300);
    let since =
        humantime::format_rfc3339_seconds(std::time::SystemTime::now() - window).to_string();
    let (_, recent_bytes) = j.verified_since(&since)?;
    let rate = recent_bytes as f64 / window.as_secs_f64();
    let in_flight = j.in_flight()?;
    let running = j
        .identities()?
        .and_then(|(si, di)| crate::lock::RunLock::held_by(&crate::lock::default_path(&si, &di)));
    // A run that is not running finishes at no time: no ETA.
    let remaining = total.map(|(b, _)| {
        b.saturating_sub(summary.verified_bytes)
            .saturating_sub(in_flight.1)
    });
    let eta = remaining
        .filter(|_| rate > 0.0 && running.is_some())
        .map(|r| std::time::Duration::from_secs_f64(r as f64 / rate));
    Ok(JournalStatus {
        path: path.to_path_buf(),
        source: j.source().to_string(),
        destination: j.destination().to_string(),
        open_uploads: j.open_uploads()?.len(),
        in_flight,
        summary,
        corpus,
        total,
        rate,
        eta,
        running,
    })
}

/// How a run the state folder's journal knows of stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    /// A process holds the pair's lock now.
    Running,
    /// Every object of a known total verified, none failed, none left copying.
    Done,
    /// Not running, with objects failed (copied again on the next run).
    Failed,
    /// Not running and not done: objects left in progress, or fewer verified than its total.
    Stopped,
    /// Not running, nothing failed or left in progress, but no total to say it is complete
    /// (its listing was never recorded as complete).
    Ended,
}

impl RunState {
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Done => "done",
            RunState::Failed => "failed",
            RunState::Stopped => "stopped",
            RunState::Ended => "ended",
        }
    }
}

/// One run (a pair's journal) of the state folder, for `status` with no argument.
#[derive(Debug, Clone)]
pub struct RecentRun {
    pub journal: PathBuf,
    /// When the journal was last written.
    pub updated: std::time::SystemTime,
    pub state: RunState,
    pub status: JournalStatus,
}

/// The runs whose journals are in the state folder's `journals/`, most recently written first,
/// at most `limit` of them (each opened read-only); and how many more there are. A journal that
/// cannot be read is left out.
pub fn recent_runs(limit: usize) -> Result<(Vec<RecentRun>, usize), JobError> {
    let dir = journal::state_dir().join("journals");
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "sqlite"))
            .map(|p| (last_written(&p), p))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            return Err(JobError::Failure(format!(
                "cannot read the journals folder {}: {e}",
                dir.display()
            )));
        }
    };
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    let more = found.len().saturating_sub(limit);
    let runs = found
        .into_iter()
        .take(limit)
        .filter_map(|(updated, path)| {
            let status = journal_status(&path, None).ok()?;
            let s = &status.summary;
            let state = if status.running.is_some() {
                RunState::Running
            } else if s.failed > 0 {
                RunState::Failed
            } else if s.copying == 0 && status.total.is_some_and(|(_, o)| s.verified >= o) {
                RunState::Done
            } else if s.copying == 0 && status.total.is_none() {
                RunState::Ended
            } else {
                RunState::Stopped
            };
            Some(RecentRun {
                journal: path,
                updated,
                state,
                status,
            })
        })
        .collect();
    Ok((runs, more))
}

/// When a journal was last written: its file's or its write-ahead log's time, the later.
fn last_written(p: &Path) -> std::time::SystemTime {
    let m = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let wal = PathBuf::from(format!("{}-wal", p.display()));
    m(p).max(m(&wal)).unwrap_or(std::time::UNIX_EPOCH)
}

/// Probes `location` (a missing local folder is made): what it checks, how fast it is from here.
/// Ctrl-C removes the probe's test objects before it ends (a second stops at once, exit 130);
/// both are told to `observer`. `opts.s3` and `opts.cancel` are filled in here.
pub fn probe(
    remotes: &Remotes,
    location: &str,
    mut opts: ProbeOpts,
    observer: &dyn Observer,
) -> Result<ProbeReport, JobError> {
    let store = Store::open_destination(location, remotes)?;
    super::preflight::reachable(&store)?;
    opts.s3 = probe::s3raw::open_s3(location, remotes)?;
    let cancel = Arc::new(tokio::sync::Notify::new());
    opts.cancel = Some(cancel.clone());
    let mut report = super::runtime()?.block_on(async {
        let watch = async {
            if tokio::signal::ctrl_c().await.is_ok() {
                observer.note(
                    "interrupted; removing the probe's test objects (Ctrl-C again to stop at once)",
                );
                cancel.notify_one();
                if tokio::signal::ctrl_c().await.is_ok() {
                    observer
                        .note("stopped; test objects may remain under a .moverctl-probe-* prefix");
                    std::process::exit(130);
                }
            }
            std::future::pending::<()>().await
        };
        tokio::select! {
            r = probe::probe(&store, opts) => r,
            () = watch => unreachable!("the watch never ends"),
        }
    })?;
    report.on_this_machine = on_this_machine(&store, remotes);
    Ok(report)
}

/// Whether the store is served from this machine: a local folder, or an endpoint whose host is a
/// loopback address (`127.0.0.0/8`, `::1`, `localhost`). Only the remote's own endpoint is read.
fn on_this_machine(store: &Store, remotes: &Remotes) -> bool {
    use crate::store::location::Location;
    let remote = match &store.location {
        Location::Local { .. } | Location::Memory { .. } => return true,
        Location::S3 { remote, .. }
        | Location::Gcs { remote, .. }
        | Location::Azure { remote, .. } => remote.as_deref(),
    };
    let Some(endpoint) = remote
        .and_then(|r| remotes.get(r))
        .and_then(|r| r.endpoint.as_deref())
    else {
        return false;
    };
    let Ok(url) = url::Url::parse(endpoint) else {
        return false;
    };
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}
