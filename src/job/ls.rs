//! What `ls` lists besides every object of a location ([`super::inspect::ls`]): the configured
//! remotes (`ls` with no location, rclone's `listremotes`), the buckets or containers of a store
//! (`ls s3://`, `ls az://`, `ls gs://`, `ls REMOTE:`, rclone's `lsd remote:`), and a location
//! down to a depth (`ls --max-depth N`, rclone's `lsf --max-depth`). Each streams its lines to a
//! callback in constant memory.

use super::JobError;
use crate::store::Store;
use crate::store::buckets::{Bucket, BucketsError};
use crate::store::config::Remotes;
use crate::store::depth::Shallow;
use crate::store::location::Location;

/// One configured remote as `ls` shows it: its name, type and where it points (an endpoint, an
/// account, a folder, a provider); never a credential (endpoints with user info are refused when
/// the file is read, and `*_env` fields name variables, not values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteRow {
    pub name: String,
    pub kind: String,
    pub provider: Option<String>,
    /// The endpoint, the Azure account, or the local root; None: the provider's default.
    pub at: Option<String>,
}

/// Every remote of the remotes file, by name.
pub fn remotes(remotes: &Remotes) -> Vec<RemoteRow> {
    remotes
        .iter()
        .map(|(name, r)| RemoteRow {
            name: name.clone(),
            kind: r.kind.clone(),
            provider: r.provider.clone(),
            at: r
                .endpoint
                .clone()
                .or_else(|| r.account.as_ref().map(|a| format!("account {a}")))
                .or_else(|| r.root.as_ref().map(|p| p.display().to_string())),
        })
        .collect()
}

/// The store `given` names without a bucket (`s3://`, `gs://`, `az://`, `REMOTE:` of a cloud
/// remote), if it is one.
pub fn store_root(given: &str, remotes: &Remotes) -> Option<Location> {
    Location::store_root(given, remotes)
}

/// What `root`'s store calls a bucket: "container" for Azure, else "bucket".
pub fn bucket_noun(root: &Location) -> &'static str {
    match root {
        Location::Azure { .. } => "container",
        _ => "bucket",
    }
}

/// Lists the buckets (containers) of the store `root` names ([`store_root`]), each to `each`;
/// returns how many.
pub fn buckets(
    remotes: &Remotes,
    root: Location,
    mut each: impl FnMut(&Bucket) -> Result<(), JobError>,
) -> Result<u64, JobError> {
    let remote = crate::store::remote_of(&root, remotes);
    let store = Store::open_location(root.clone(), remote, crate::store::Role::Source)?;
    super::preflight::reachable(&store)?;
    let hint = super::trust::credentials_hint(&[&store]);
    super::runtime()?.block_on(async {
        crate::store::buckets::list(&store, remote, |b| {
            each(b).map_err(|e| Wrapped::Job(Box::new(e)))
        })
        .await
        .map_err(|e| match e {
            Wrapped::Job(j) => *j,
            Wrapped::Buckets(BucketsError::Denied { location, message }) => JobError::Refused {
                source: Box::new(JobError::Failure(format!(
                    "{location}: listing its buckets was refused: {message}"
                ))),
                hint: hint.clone(),
            },
            Wrapped::Buckets(BucketsError::Open(o)) => JobError::Open(o),
            Wrapped::Buckets(f @ BucketsError::Failed { .. }) => JobError::Failure(f.to_string()),
        })
    })
}

/// The job's error or the bucket listing's, kept apart until the end.
enum Wrapped {
    Job(Box<JobError>),
    Buckets(BucketsError),
}

impl From<BucketsError> for Wrapped {
    fn from(e: BucketsError) -> Self {
        Wrapped::Buckets(e)
    }
}

/// What a listing down to a depth showed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShallowCount {
    pub objects: u64,
    /// Bytes of the objects shown (not of what is inside the folders).
    pub bytes: u64,
    pub folders: u64,
    pub refused: u64,
}

/// Lists `location` down to `max_depth` levels (see [`crate::store::depth`]), each entry to
/// `each` in key order.
pub fn shallow(
    remotes: &Remotes,
    location: &str,
    max_depth: usize,
    mut each: impl FnMut(&Shallow) -> Result<(), JobError>,
) -> Result<ShallowCount, JobError> {
    let store = Store::open(location, remotes)?;
    super::preflight::no_glob(&store)?;
    super::preflight::reachable(&store)?;
    let hint = super::trust::credentials_hint(&[&store]);
    let mut n = ShallowCount::default();
    let listed =
        super::runtime()?.block_on(crate::store::depth::list_depth(&store, max_depth, |item| {
            match &item {
                Shallow::Object(e) => {
                    n.objects += 1;
                    n.bytes += e.size;
                }
                Shallow::Folder(_) => n.folders += 1,
                Shallow::Refused { .. } => n.refused += 1,
            }
            each(&item)
        }));
    listed.map_err(|e: JobError| e.naming_credentials(&hint))?;
    Ok(n)
}
