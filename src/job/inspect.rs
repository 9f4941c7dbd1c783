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
    /// Bytes a second verified over the last five minutes.
    pub rate: f64,
    /// The time left at that rate, when there is a total and a rate.
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
    let remaining = total.map(|(b, _)| b.saturating_sub(summary.verified_bytes));
    let eta = remaining
        .filter(|_| rate > 0.0)
        .map(|r| std::time::Duration::from_secs_f64(r as f64 / rate));
    let running = j
        .identities()?
        .and_then(|(si, di)| crate::lock::RunLock::held_by(&crate::lock::default_path(&si, &di)));
    Ok(JournalStatus {
        path: path.to_path_buf(),
        source: j.source().to_string(),
        destination: j.destination().to_string(),
        open_uploads: j.open_uploads()?.len(),
        summary,
        corpus,
        total,
        rate,
        eta,
        running,
    })
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
