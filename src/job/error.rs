//! The error of a job: every way a command can fail, each with its exit code ([`crate::exit`]).

use crate::catalog::CatalogError;
use crate::exit::Exit;

/// Errors that reach the user; each knows its exit code.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Corpus(#[from] crate::plan::corpus::CorpusError),
    #[error(transparent)]
    Plan(#[from] crate::plan::file::PlanError),
    #[error(transparent)]
    Open(#[from] crate::store::OpenError),
    #[error(transparent)]
    Config(#[from] crate::store::config::ConfigError),
    #[error(transparent)]
    List(#[from] crate::store::list::ListError),
    #[error(transparent)]
    Location(#[from] crate::store::location::LocationError),
    #[error(transparent)]
    Probe(#[from] crate::probe::ProbeError),
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Inventory(#[from] crate::inventory::InventoryError),
    /// The pair's run lock: held by another run (exit 6), or its file could not be used.
    #[error(transparent)]
    Lock(#[from] crate::lock::LockError),
    /// A copy or sync run that stopped (a listing failed, the journal could not be written).
    #[error(transparent)]
    Run(#[from] crate::transfer::RunError),
    #[error(transparent)]
    Journal(#[from] crate::journal::JournalError),
    #[error("{0}")]
    Failure(String),
    /// A store refused the credentials: the error, and where each store's credentials came from
    /// (named, never a value), so the user knows which variable or profile to fix.
    #[error("{source}; {hint}")]
    Refused { source: Box<JobError>, hint: String },
    /// `copy`, `exec`: the source listed no object and `--allow-empty-source` was not given;
    /// nothing was done (exit 11). `nearby`: "; PARENT holds a/, b/" or empty.
    #[error(
        "{location} listed no objects (a prefix that does not exist? a typo?){nearby}. Nothing was copied and nothing was created at the destination; pass --allow-empty-source if an empty source is what you mean"
    )]
    EmptySource { location: String, nearby: String },
    /// `exec --shard`: the progress location could not be written (exit 7).
    #[error(
        "shard {shard}: the progress location {location} could not be written: {cause}. The shard stopped{journaled}{hint}. Fix access to {location} (or pass another --progress-location) and run the same command again to resume"
    )]
    ProgressUnwritable {
        shard: String,
        location: String,
        cause: String,
        /// ", after journaling N verified objects locally in PATH (M of them not on the
        /// progress location)", or empty.
        journaled: String,
        /// "; credentials in use: …" (where they came from, never a value), or empty.
        hint: String,
    },
}

impl JobError {
    pub fn exit(&self) -> Exit {
        use crate::plan::file::PlanError;
        match self {
            JobError::Catalog(CatalogError::Io { .. }) => Exit::BadInput,
            JobError::Catalog(_) | JobError::Corpus(_) | JobError::Usage(_) => Exit::BadInput,
            JobError::Inventory(crate::inventory::InventoryError::Open(
                crate::store::OpenError::Credentials(_),
            )) => Exit::Credentials,
            JobError::Inventory(_) => Exit::BadInput,
            JobError::Plan(PlanError::Io { .. }) => Exit::Failure,
            JobError::Plan(_) => Exit::BadInput,
            JobError::Config(_) | JobError::Location(_) => Exit::BadInput,
            JobError::Open(crate::store::OpenError::Credentials(_)) => Exit::Credentials,
            JobError::Open(
                crate::store::OpenError::Location(_)
                | crate::store::OpenError::Refused { .. }
                | crate::store::OpenError::Unreachable { .. }
                | crate::store::OpenError::Overlap(_),
            ) => Exit::BadInput,
            JobError::Open(_) => Exit::Failure,
            JobError::List(e) => list_exit(e),
            JobError::Run(crate::transfer::RunError::Diff(
                crate::transfer::diff::DiffError::List(e),
            )) => list_exit(e),
            JobError::Run(_) | JobError::Journal(_) => Exit::Failure,
            JobError::Probe(e) if e.is_auth() => Exit::Credentials,
            JobError::Probe(crate::probe::ProbeError::Interrupted { .. }) => Exit::Interrupted,
            JobError::Probe(_) => Exit::Failure,
            JobError::Failure(_) => Exit::Failure,
            JobError::Lock(crate::lock::LockError::Held { .. }) => Exit::Locked,
            JobError::Lock(_) => Exit::Failure,
            JobError::Refused { .. } => Exit::Credentials,
            JobError::ProgressUnwritable { .. } => Exit::ProgressUnwritable,
            JobError::EmptySource { .. } => Exit::EmptySource,
        }
    }

    /// When this error means the credentials were refused (exit 4), the same error with `hint`
    /// (see `credentials_hint`) added; any other error unchanged.
    pub fn naming_credentials(self, hint: &str) -> JobError {
        if self.exit() == Exit::Credentials && !matches!(self, JobError::Refused { .. }) {
            JobError::Refused {
                source: Box::new(self),
                hint: hint.to_string(),
            }
        } else {
            self
        }
    }
}

/// A listing the store refused for its credentials is exit 4; any other listing failure, 1.
fn list_exit(e: &crate::store::list::ListError) -> Exit {
    match e.kind() {
        crate::store::error::StoreErrorKind::Auth => Exit::Credentials,
        _ => Exit::Failure,
    }
}
