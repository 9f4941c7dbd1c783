//! Stores: a location opened through object_store, with the settings large transfers need
//! (long request timeouts, read-stall detection, bounded retries), credentials from the usual
//! places, and a listing that is always sorted by key bytes, streams in constant memory, and
//! reports keys object_store refuses instead of stopping.

pub mod awscreds;
pub mod buckets;
pub mod caps;
pub mod config;
pub mod creds;
pub mod depth;
mod entry;
pub mod error;
mod handles;
pub mod http;
pub mod list;
pub mod local;
pub mod location;
pub mod overlap;
pub mod presign;
pub mod reach;
pub mod retry;
pub mod s3list;
pub mod split;

pub use error::StoreErrorKind;
pub use local::remove_created_if_empty;

use awscreds::AwsCredentialCache;
use config::{Remote, Remotes};
use location::{Location, LocationError};
use object_store::aws::{AmazonS3Builder, AwsCredential};
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::list::PaginatedListStore;
use object_store::memory::InMemory;
use object_store::multipart::MultipartStore;
use object_store::{ClientOptions, ObjectStore, RetryConfig, StaticCredentialProvider};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    S3,
    Gcs,
    Azure,
    Local,
    Memory,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::S3 => "s3",
            Kind::Gcs => "gcs",
            Kind::Azure => "azure",
            Kind::Local => "local",
            Kind::Memory => "memory",
        }
    }
}

/// An opened location.
#[derive(Clone)]
pub struct Store {
    pub inner: Arc<dyn ObjectStore>,
    /// The same store as a paginated lister (cloud stores), used for sorted, resumable listing.
    pub pages: Option<Arc<dyn PaginatedListStore>>,
    /// The same store's low-level multipart API (explicit upload ids, resumable), where it has one.
    pub multipart: Option<Arc<dyn MultipartStore>>,
    pub kind: Kind,
    /// Key prefix inside the bucket (`train/` or empty); keys handed out are relative to it.
    pub prefix: String,
    /// For local stores: the folder keys are relative to.
    pub local_root: Option<PathBuf>,
    pub location: Location,
    /// Catalog provider id when known (from a remote).
    pub provider: Option<String>,
    pub storage_class: Option<String>,
    /// Sees every HTTP response of this store (throttling, digest headers); see `http.rs`.
    pub observer: Arc<http::Observer>,
    /// The concrete S3 store (for presigned requests object_store cannot make, e.g. a HEAD of
    /// one part), when this is an S3 location.
    pub s3: Option<Arc<object_store::aws::AmazonS3>>,
    /// The concrete Azure store (for its SAS signer: Put Block From URL, a source URL), when
    /// this is an Azure location.
    pub azure: Option<Arc<object_store::azure::MicrosoftAzure>>,
    /// The concrete GCS store (its credentials, for the bucket check of [`reach`]), when this is
    /// a GCS location.
    pub gcs: Option<Arc<object_store::gcp::GoogleCloudStorage>>,
    /// How long moverctl's own requests to this store (presigned HEADs, listing pages) are
    /// retried: the window of [`retry`] in force when the store was opened.
    pub retry_window: Duration,
    /// S3 with anonymous access (a public bucket): requests moverctl presigns itself are sent
    /// without their signature.
    pub s3_anonymous: bool,
    /// What this store does for integrity (see [`caps`]): the executor reads this, never `kind`.
    pub caps: caps::Capabilities,
    /// What this store is, however it was spelled ([`overlap::identity`]): journals and locks
    /// are keyed by it.
    pub identity: String,
    /// Where this store's credentials came from, named for messages ("the environment variables
    /// K and S (the remote's …)", "AWS profile \"prod\" (…)"), never a value.
    pub credentials: String,
    /// Only the keys of this range are listed (a shard of a plan); None: every key.
    pub range: Option<crate::shard::KeyRange>,
    /// S3: the cache every request of this store (and of its `crc_writer`) signs with; None for
    /// anonymous access and other stores.
    pub aws_credentials: Option<Arc<AwsCredentialCache>>,
    /// The URL this store's requests go to (its endpoint, else the cloud's default for the
    /// region or account); None for local and in-memory stores. See [`reach`].
    pub endpoint: Option<String>,
    /// Set when the store is used for one object only (`copy FILE DST`): see [`SingleKey`].
    pub single: Option<SingleKey>,
    /// S3: the same location opened to send `x-amz-checksum-crc64nvme` with every write; used
    /// only where [`caps::Capabilities::checks_crc64nvme`] holds (see [`CrcWriter`]).
    pub crc_writer: Option<CrcWriter>,
}

/// An S3 location opened a second time, configured so that object_store computes the
/// CRC64/NVME of every payload it sends and signs it as `x-amz-checksum-crc64nvme` (and creates
/// multipart uploads with `x-amz-checksum-algorithm: CRC64NVME`, which S3 keeps as a full-object
/// checksum). Writes go through it on the checksum-only path; reads, HEADs, listings, deletes
/// and server-side copies use the plain store.
#[derive(Clone)]
pub struct CrcWriter {
    pub inner: Arc<dyn ObjectStore>,
    pub multipart: Arc<dyn MultipartStore>,
    /// Set once a completed multipart upload showed no full-object CRC64 on HEAD: the rest of
    /// the run verifies multipart copies by MD5 again (shared by every clone of the store).
    pub multipart_unproven: Arc<std::sync::atomic::AtomicBool>,
    /// Single PUTs and parts are sent by moverctl itself on a presigned URL whose signed
    /// `x-amz-checksum-crc64nvme` is the CRC64 moverctl computed as it read the bytes (the store
    /// refuses a body whose bytes differ from what was read, and object_store does not hash
    /// every byte a second time). Off: writes go through `inner` / `multipart`, which compute
    /// the CRC64 of the bytes they are handed.
    pub by_url: bool,
    /// Set once the store refused a write sent by URL as not allowed (a bucket policy may deny
    /// presigned requests): the rest of the run writes through `inner` / `multipart`.
    pub urls_refused: Arc<std::sync::atomic::AtomicBool>,
    /// Set once the store refused a part streamed with a trailing CRC64 (`trailer.rs`).
    pub streams_refused: Arc<std::sync::atomic::AtomicBool>,
    /// The remote's `trailing_checksum`, folded into `caps.trailer_crc64` when caps are refined.
    pub trailer: Option<bool>,
    /// Fault injection for tests: applied to a body's bytes after moverctl hashed them and
    /// before they are sent by URL (what a test wrapper around `inner` and `multipart` does to
    /// the bodies it is handed). Never set outside tests.
    #[doc(hidden)]
    pub tamper: Option<WriteTamper>,
}

/// See [`CrcWriter::tamper`]: (destination path, the part's index or None for a single PUT, the
/// body) → the body to send, or an error to fail the write with.
pub type WriteTamper = Arc<
    dyn Fn(
            &object_store::path::Path,
            Option<usize>,
            Vec<bytes::Bytes>,
        ) -> Result<Vec<bytes::Bytes>, String>
        + Send
        + Sync,
>;

/// One object of a store, as `cp FILE DEST` copies it: listings show only `key` (under the name
/// `listed_as`, the source's key, so both sides join), and `listed_as` is written at `key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SingleKey {
    pub listed_as: String,
    pub key: String,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Store({})", self.location.shown())
    }
}

/// What a command does with a location. Only a destination may be created: a local source folder
/// that does not exist is refused, never made (an unmounted volume must not read as empty).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Source,
    Destination,
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Location(#[from] LocationError),
    #[error(transparent)]
    Credentials(#[from] creds::MissingCredentials),
    /// The input cannot be used as given (a missing source folder, a file where a folder is
    /// needed, an endpoint carrying a password); nothing was touched.
    #[error("{location}: {reason}")]
    Refused { location: String, reason: String },
    /// Source and destination share objects.
    #[error(transparent)]
    Overlap(#[from] overlap::Overlap),
    #[error("{location}: {message}")]
    Build { location: String, message: String },
    /// The endpoint cannot be reached before any request ([`reach::check`]): nothing was done.
    #[error("{location}: {reason}")]
    Unreachable { location: String, reason: String },
}

/// Whether an endpoint URL carries user info (`user:password@host`). Checked on the text, so a
/// URL that does not even parse is caught too.
pub fn endpoint_has_userinfo(endpoint: &str) -> bool {
    let rest = endpoint
        .split_once("://")
        .map(|(_, r)| r)
        .unwrap_or(endpoint);
    rest.split(['/', '?', '#'])
        .next()
        .is_some_and(|authority| authority.contains('@'))
}

/// The refusal of an endpoint with user info, naming where it came from (never its value).
fn userinfo_refused(source: &str) -> OpenError {
    OpenError::Refused {
        location: source.to_string(),
        reason: "the endpoint URL carries a user name or password (user:password@host); it was \
                 not used. Credentials belong in the *_env settings of a remote \
                 (access_key_id_env, secret_access_key_env, account_key_env, ...), in \
                 AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, or in a profile, never in a URL"
            .into(),
    }
}

static CLI_ENDPOINT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();

/// `--endpoint-url URL`: the S3 endpoint of every S3 location whose remote names none of its
/// own, ahead of `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL` as in the AWS CLI (set once, by the
/// CLI).
pub fn set_cli_endpoint(e: Option<String>) {
    let _ = CLI_ENDPOINT.set(e.filter(|e| !e.is_empty()));
}

/// The S3 endpoint a location talks to: the remote's, else `--endpoint-url`, else
/// `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`, else None (AWS). `env` reads a variable
/// (tests pass their own).
pub(crate) fn s3_endpoint_with(
    remote: Option<&Remote>,
    shown: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<String>, OpenError> {
    if let Some(e) = remote.and_then(|r| r.endpoint.as_ref()) {
        if endpoint_has_userinfo(e) {
            return Err(userinfo_refused(&format!(
                "{shown} (its remote's endpoint)"
            )));
        }
        return Ok(Some(e.clone()));
    }
    if let Some(e) = CLI_ENDPOINT.get().cloned().flatten() {
        if endpoint_has_userinfo(&e) {
            return Err(userinfo_refused("--endpoint-url"));
        }
        return Ok(Some(e));
    }
    for var in ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"] {
        if let Some(v) = env(var) {
            if endpoint_has_userinfo(&v) {
                return Err(userinfo_refused(var));
            }
            return Ok(Some(v));
        }
    }
    Ok(None)
}

/// A GCS or Azure remote's endpoint, refused when it carries user info.
pub(crate) fn remote_endpoint(
    remote: Option<&Remote>,
    shown: &str,
) -> Result<Option<String>, OpenError> {
    match remote.and_then(|r| r.endpoint.clone()) {
        Some(e) if endpoint_has_userinfo(&e) => Err(userinfo_refused(&format!(
            "{shown} (its remote's endpoint)"
        ))),
        e => Ok(e),
    }
}

pub(crate) fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// HTTP settings for large transfers: object_store's 30 s whole-request default would kill any
/// object that takes longer to stream, so requests may take up to an hour, a connection that
/// stalls for 60 s is dropped, and connecting gives up after 10 s.
pub fn client_options(allow_http: bool) -> ClientOptions {
    ClientOptions::new()
        .with_timeout(Duration::from_secs(3600))
        .with_read_timeout(Duration::from_secs(60))
        .with_connect_timeout(Duration::from_secs(10))
        .with_pool_idle_timeout(Duration::from_secs(60))
        .with_allow_http(allow_http)
        .with_user_agent(
            format!("moverctl/{}", env!("CARGO_PKG_VERSION"))
                .parse()
                .expect("a valid header value"),
        )
}

/// GCS serves an object stored with `Content-Encoding: gzip` (`gsutil cp -Z`) decompressed
/// unless the request accepts gzip ("decompressive transcoding"): then its size and its digests
/// (`x-goog-hash`, of the stored bytes) would not match the bytes read, and the object could
/// never be copied. Every GCS request says `Accept-Encoding: gzip`, so objects are read as stored
/// (and verified by their stored digests). Bearer tokens sign no header, and reqwest is built
/// without its decompression features, so nothing decompresses on the way.
pub fn gcs_client_options(o: ClientOptions) -> ClientOptions {
    let mut h = ::http::HeaderMap::new();
    h.insert(
        ::http::header::ACCEPT_ENCODING,
        ::http::HeaderValue::from_static("gzip"),
    );
    o.with_default_headers(h)
}

/// The retry policy of every request object_store makes for moverctl (see [`retry`]).
pub fn retry_config() -> RetryConfig {
    retry::object_store_config()
}

fn build_err(loc: &Location, e: object_store::Error) -> OpenError {
    OpenError::Build {
        location: loc.shown(),
        message: e.to_string(),
    }
}

/// The S3 store for a location, with the settings and credentials `Store::open` uses (the probe
/// needs the concrete type to presign raw requests).
pub fn build_s3(
    loc: &Location,
    bucket: &str,
    remote: Option<&Remote>,
    observer: Arc<http::Observer>,
) -> Result<Arc<object_store::aws::AmazonS3>, OpenError> {
    let auth = s3_auth(loc, remote)?;
    build_s3_with(loc, bucket, remote, observer, false, &auth)
}

/// Where an S3 location's credentials come from, and the cache its requests sign with.
pub struct S3Auth {
    /// None: anonymous access.
    pub cache: Option<Arc<AwsCredentialCache>>,
    /// Named, never a value.
    pub from: String,
    pub profile_region: Option<String>,
}

/// Resolve an S3 location's credentials (see [`creds::s3`]) into the cache its requests use.
pub fn s3_auth(loc: &Location, remote: Option<&Remote>) -> Result<S3Auth, OpenError> {
    let shown = loc.shown();
    let resolved = creds::s3(&shown, remote)?;
    let sts_region = creds::sts_region(&resolved);
    Ok(S3Auth {
        cache: creds::s3_cache(&resolved, &sts_region, &shown).map(Arc::new),
        from: resolved.from,
        profile_region: resolved.profile_region,
    })
}

/// The region an S3 location signs for: the remote's, `AWS_REGION`, `AWS_DEFAULT_REGION`, the
/// profile's, else us-east-1.
fn s3_region(remote: Option<&Remote>, auth: &S3Auth) -> String {
    remote
        .and_then(|r| r.region.clone())
        .or_else(|| std::env::var("AWS_REGION").ok())
        .or_else(|| std::env::var("AWS_DEFAULT_REGION").ok())
        .or(auth.profile_region.clone())
        .unwrap_or_else(|| "us-east-1".to_string())
}

/// [`build_s3`] with credentials already resolved (a store and its CRC64 writer share them).
fn build_s3_with(
    loc: &Location,
    bucket: &str,
    remote: Option<&Remote>,
    observer: Arc<http::Observer>,
    crc64: bool,
    auth: &S3Auth,
) -> Result<Arc<object_store::aws::AmazonS3>, OpenError> {
    let shown = loc.shown();
    let provider = remote.and_then(|r| r.provider.clone());
    let endpoint = s3_endpoint_with(remote, &shown, &process_env)?;
    let region = s3_region(remote, auth);
    let allow_http = remote.and_then(|r| r.allow_http).unwrap_or_else(|| {
        endpoint
            .as_deref()
            .is_some_and(|e| e.starts_with("http://"))
    });
    let path_style = remote
        .and_then(|r| r.path_style)
        .unwrap_or(endpoint.is_some());
    let mut b = AmazonS3Builder::new()
        .with_bucket_name(bucket)
        .with_region(&region)
        .with_allow_http(allow_http)
        .with_virtual_hosted_style_request(!path_style && endpoint.is_none())
        .with_client_options(client_options(allow_http))
        .with_http_connector(http::ObservingConnector {
            observer,
            send_md5: true,
        })
        // The payload is not hashed into the signature (SHA-256 of every byte on both ends):
        // moverctl sends the MD5 it computed while reading as Content-MD5, which the server checks
        // against the body (BadDigest), and compares the ETag it gets back.
        .with_unsigned_payload(true)
        .with_retry(retry_config());
    if let Some(e) = &endpoint {
        b = b.with_endpoint(e);
    }
    if crc64 {
        b = b.with_checksum_algorithm(object_store::aws::Checksum::CRC64NVME);
    }
    if provider.as_deref() == Some("backblaze-b2") {
        // B2 rejects the checksum header object_store's bulk delete always sends.
        b = b.with_disable_bulk_delete(true);
    }
    b = match &auth.cache {
        Some(c) => b.with_credentials(c.clone()),
        // No request is signed; the placeholder key only lets object_store's presigner build
        // URLs (the lister drops their signature) without looking for instance credentials.
        None => {
            b.with_skip_signature(true)
                .with_credentials(Arc::new(StaticCredentialProvider::new(AwsCredential {
                    key_id: "anonymous".into(),
                    secret_key: "anonymous".into(),
                    token: None,
                })))
        }
    };
    Ok(Arc::new(b.build().map_err(|e| build_err(loc, e))?))
}

/// The remote a location names, if any.
pub fn remote_of<'r>(loc: &Location, remotes: &'r Remotes) -> Option<&'r Remote> {
    match loc {
        Location::S3 { remote, .. }
        | Location::Gcs { remote, .. }
        | Location::Azure { remote, .. } => remote.as_deref().and_then(|r| remotes.get(r)),
        _ => None,
    }
}

/// The identity of a location as given (see [`overlap::identity`]), without opening it.
pub fn identity_of(given: &str, remotes: &Remotes) -> Result<String, OpenError> {
    let loc = Location::parse(given, remotes)?;
    overlap::identity(&loc, remote_of(&loc, remotes))
}

impl Store {
    /// Parse and open a location that must already exist (a source): a local folder is never
    /// created, and one that is missing or is not a folder is refused.
    pub fn open(given: &str, remotes: &Remotes) -> Result<Store, OpenError> {
        Self::open_as(given, remotes, Role::Source)
    }

    /// Parse and open a location to write to: a missing local folder is created.
    pub fn open_destination(given: &str, remotes: &Remotes) -> Result<Store, OpenError> {
        Self::open_as(given, remotes, Role::Destination)
    }

    pub fn open_as(given: &str, remotes: &Remotes, role: Role) -> Result<Store, OpenError> {
        let loc = Location::parse(given, remotes)?;
        let remote = remote_of(&loc, remotes);
        Self::open_location(loc, remote, role)
    }

    /// The source and destination of a command that writes (`copy`, `exec`, `sync`): both parsed,
    /// refused when they overlap ([`overlap::check`]) before anything is opened or created, then
    /// the source opened (it must exist) and the destination (created if local and missing).
    pub fn open_pair(src: &str, dst: &str, remotes: &Remotes) -> Result<(Store, Store), OpenError> {
        Self::open_pair_with(src, dst, remotes, |_| Ok(()))
    }

    /// [`Store::open_pair`], with `source_ready` called on the opened source before the
    /// destination is opened (a local one created): its error leaves the destination untouched.
    pub fn open_pair_with<E: From<OpenError>>(
        src: &str,
        dst: &str,
        remotes: &Remotes,
        source_ready: impl FnOnce(&Store) -> Result<(), E>,
    ) -> Result<(Store, Store), E> {
        let (s, d) = (
            Location::parse(src, remotes).map_err(OpenError::from)?,
            Location::parse(dst, remotes).map_err(OpenError::from)?,
        );
        let (sr, dr) = (remote_of(&s, remotes), remote_of(&d, remotes));
        overlap::check(&s, sr, &d, dr)?;
        let src = Self::open_location(s, sr, Role::Source)?;
        source_ready(&src)?;
        let dst = Self::open_location(d, dr, Role::Destination)?;
        Ok((src, dst))
    }

    pub fn open_location(
        loc: Location,
        remote: Option<&Remote>,
        role: Role,
    ) -> Result<Store, OpenError> {
        let shown = loc.shown();
        let identity = overlap::identity(&loc, remote)?;
        let storage_class = remote.and_then(|r| r.storage_class.clone());
        let prefix = loc.prefix().to_string();
        let observer = Arc::new(http::Observer::default());
        observer.set_label(shown.clone());
        let b = match &loc {
            Location::S3 { bucket, .. } => open_s3(&loc, bucket, remote, &observer)?,
            Location::Gcs { bucket, .. } => open_gcs(&loc, bucket, remote, &observer)?,
            Location::Azure { container, .. } => open_azure(&loc, container, remote, &observer)?,
            Location::Local { root } => open_local(&loc, root, role)?,
            Location::Memory { .. } => open_memory(),
        };
        Ok(Store {
            inner: b.inner,
            pages: b.pages,
            multipart: b.multipart,
            kind: b.kind,
            prefix,
            local_root: b.local_root,
            location: loc,
            provider: b.provider,
            storage_class,
            observer,
            s3: b.s3,
            azure: b.azure,
            gcs: b.gcs,
            retry_window: retry::timeout(),
            caps: caps::Capabilities::for_kind(b.kind),
            s3_anonymous: b.s3_anonymous,
            range: None,
            credentials: b.credentials,
            identity,
            single: None,
            endpoint: b.endpoint,
            aws_credentials: b.aws_credentials,
            crc_writer: b.crc_writer,
        })
    }

    /// The object_store path of a key relative to this location. Keys are taken as they are (no
    /// percent-encoding); a key object_store cannot represent is an error naming it.
    pub fn path_of(
        &self,
        key: &str,
    ) -> Result<object_store::path::Path, object_store::path::Error> {
        let key = match &self.single {
            Some(s) if s.listed_as == key => s.key.as_str(),
            _ => key,
        };
        object_store::path::Path::parse(format!("{}{}", self.prefix, key))
    }

    /// A key relative to this location as the store names it (the location's prefix, then the
    /// key), for [`caps::KeyRules::refusal`].
    pub fn full_key(&self, key: &str) -> String {
        format!("{}{}", self.prefix, key)
    }

    pub fn shown(&self) -> String {
        self.location.shown()
    }

    /// No fresh credentials can be had for this store ([`awscreds`]): what to run about it.
    pub fn credentials_spent(&self) -> Option<String> {
        self.aws_credentials.as_ref().and_then(|c| c.is_spent())
    }

    /// A request of an attempt that started at `started` was refused as expired or invalid
    /// credentials: drop them so the next request renews (see [`AwsCredentialCache::refused`]).
    /// None: this store has no renewable credentials.
    pub fn credentials_refused(&self, started: std::time::Instant) -> Option<awscreds::Refusal> {
        self.aws_credentials.as_ref().map(|c| c.refused(started))
    }
}

/// What opening one kind of location gives a [`Store`], beside the fields every kind fills the
/// same way (see [`Store::open_location`]).
struct Opened {
    inner: Arc<dyn ObjectStore>,
    pages: Option<Arc<dyn PaginatedListStore>>,
    multipart: Option<Arc<dyn MultipartStore>>,
    kind: Kind,
    local_root: Option<PathBuf>,
    provider: Option<String>,
    s3: Option<Arc<object_store::aws::AmazonS3>>,
    azure: Option<Arc<object_store::azure::MicrosoftAzure>>,
    gcs: Option<Arc<object_store::gcp::GoogleCloudStorage>>,
    s3_anonymous: bool,
    credentials: String,
    aws_credentials: Option<Arc<AwsCredentialCache>>,
    crc_writer: Option<CrcWriter>,
    endpoint: Option<String>,
}

/// An S3 bucket: its store, and a second one that sends CRC64/NVME checksums (the CRC writer),
/// both signing with one credential cache; anonymous access has no CRC writer.
fn open_s3(
    loc: &Location,
    bucket: &str,
    remote: Option<&Remote>,
    observer: &Arc<http::Observer>,
) -> Result<Opened, OpenError> {
    let auth = s3_auth(loc, remote)?;
    let credentials = auth.from.clone();
    let s = build_s3_with(loc, bucket, remote, observer.clone(), false, &auth)?;
    // The only way `creds::s3` resolves to anonymous access.
    let s3_anonymous = remote.is_some_and(|r| r.anonymous);
    let endpoint = s3_endpoint_with(remote, &loc.shown(), &process_env)?
        .unwrap_or_else(|| format!("https://s3.{}.amazonaws.com", s3_region(remote, &auth)));
    let crc_writer = if s3_anonymous {
        None
    } else {
        let c = build_s3_with(loc, bucket, remote, observer.clone(), true, &auth)?;
        Some(CrcWriter {
            inner: c.clone(),
            multipart: c,
            multipart_unproven: Arc::default(),
            by_url: true,
            urls_refused: Arc::default(),
            streams_refused: Arc::default(),
            trailer: remote.and_then(|r| r.trailing_checksum),
            tamper: None,
        })
    };
    Ok(Opened {
        inner: s.clone(),
        pages: Some(s.clone()),
        multipart: Some(s.clone()),
        kind: Kind::S3,
        local_root: None,
        provider: remote.and_then(|r| r.provider.clone()),
        s3: Some(s),
        azure: None,
        gcs: None,
        s3_anonymous,
        credentials,
        aws_credentials: auth.cache.clone(),
        crc_writer,
        endpoint: Some(endpoint),
    })
}

/// A GCS bucket, with the credentials [`creds::gcs`] finds.
fn open_gcs(
    loc: &Location,
    bucket: &str,
    remote: Option<&Remote>,
    observer: &Arc<http::Observer>,
) -> Result<Opened, OpenError> {
    let (s, credentials, endpoint) = build_gcs(loc, bucket, remote, observer)?;
    Ok(Opened {
        inner: s.clone(),
        pages: Some(s.clone()),
        multipart: Some(s.clone()),
        kind: Kind::Gcs,
        local_root: None,
        provider: remote.and_then(|r| r.provider.clone()),
        s3: None,
        azure: None,
        gcs: Some(s),
        s3_anonymous: false,
        credentials,
        aws_credentials: None,
        crc_writer: None,
        endpoint: Some(endpoint.unwrap_or_else(|| "https://storage.googleapis.com".into())),
    })
}

/// The GCS store of `bucket` with the credentials [`creds::gcs`] finds: the store, where its
/// credentials came from (named), and where its requests go when not to Google (the remote's
/// endpoint, else the credentials file's `gcs_base_url`).
#[allow(clippy::type_complexity)]
fn build_gcs(
    loc: &Location,
    bucket: &str,
    remote: Option<&Remote>,
    observer: &Arc<http::Observer>,
) -> Result<
    (
        Arc<object_store::gcp::GoogleCloudStorage>,
        String,
        Option<String>,
    ),
    OpenError,
> {
    let shown = loc.shown();
    let (sa, credentials) = creds::gcs(&shown, remote)?;
    let mut b = GoogleCloudStorageBuilder::new()
        .with_bucket_name(bucket)
        .with_client_options(gcs_client_options(client_options(true)))
        .with_http_connector(http::ObservingConnector {
            observer: observer.clone(),
            // Bearer tokens sign no header: Content-MD5 can be added (GCS checks it).
            send_md5: true,
        })
        .with_retry(retry_config());
    // An emulator's address in the credentials file (object_store reads it there itself).
    let file_base = sa
        .file()
        .and_then(|p| creds::google_file_field(p, "gcs_base_url"));
    b = match sa {
        creds::GcsCreds::ServiceAccount(path) => {
            b.with_service_account_path(path.display().to_string())
        }
        creds::GcsCreds::ApplicationDefault(path) => {
            b.with_application_credentials(path.display().to_string())
        }
        // With no file given, object_store asks the metadata server.
        creds::GcsCreds::Metadata => b,
        creds::GcsCreds::Anonymous => b.with_skip_signature(true),
    };
    let endpoint = remote_endpoint(remote, &shown)?;
    if let Some(e) = &endpoint {
        b = b.with_base_url(e);
    }
    let s = Arc::new(b.build().map_err(|e| build_err(loc, e))?);
    Ok((s, credentials, endpoint.or(file_base)))
}

/// An Azure container, with the account and credential [`creds::azure`] finds.
fn open_azure(
    loc: &Location,
    container: &str,
    remote: Option<&Remote>,
    observer: &Arc<http::Observer>,
) -> Result<Opened, OpenError> {
    let shown = loc.shown();
    let (account, c, credentials) = creds::azure(&shown, remote)?;
    let endpoint = remote_endpoint(remote, &shown)?;
    let allow_http = remote.and_then(|r| r.allow_http).unwrap_or_else(|| {
        endpoint
            .as_deref()
            .is_some_and(|e| e.starts_with("http://"))
    });
    let mut b = MicrosoftAzureBuilder::new()
        .with_container_name(container)
        .with_allow_http(allow_http)
        .with_client_options(client_options(allow_http))
        .with_http_connector(http::ObservingConnector {
            observer: observer.clone(),
            send_md5: false,
        })
        .with_retry(retry_config());
    if let Some(a) = &account {
        b = b.with_account(a);
    }
    let emulator = matches!(c, creds::AzureCreds::Emulator);
    let reached = match (&endpoint, &account) {
        (Some(e), _) => Some(e.clone()),
        // The emulator's address is object_store's to choose (AZURITE_BLOB_STORAGE_URL).
        _ if emulator => None,
        (None, Some(a)) => Some(format!("https://{a}.blob.core.windows.net")),
        (None, None) => None,
    };
    if let Some(e) = &endpoint {
        b = b.with_endpoint(e.clone());
    }
    b = with_azure_credential(b, c);
    let s = Arc::new(b.build().map_err(|e| build_err(loc, e))?);
    Ok(Opened {
        inner: s.clone(),
        pages: Some(s.clone()),
        multipart: Some(s.clone()),
        kind: Kind::Azure,
        local_root: None,
        provider: remote.and_then(|r| r.provider.clone()),
        s3: None,
        azure: Some(s),
        gcs: None,
        s3_anonymous: false,
        credentials,
        aws_credentials: None,
        crc_writer: None,
        endpoint: reached,
    })
}

/// The builder signing with `c`: a key, a SAS token's pairs, the emulator, none, or an Entra
/// identity configured from the AZURE_* variables.
fn with_azure_credential(b: MicrosoftAzureBuilder, c: creds::AzureCreds) -> MicrosoftAzureBuilder {
    match c {
        creds::AzureCreds::Key(k) => b.with_access_key(k),
        creds::AzureCreds::Sas(s) => {
            let pairs: Vec<(String, String)> =
                url::form_urlencoded::parse(s.trim_start_matches('?').as_bytes())
                    .into_owned()
                    .collect();
            b.with_sas_authorization(pairs)
        }
        creds::AzureCreds::Emulator => b.with_use_emulator(true),
        creds::AzureCreds::Anonymous => b.with_skip_signature(true),
        creds::AzureCreds::Entra(kind) => {
            let mut b = b.with_config(object_store::azure::AzureConfigKey::CredentialType, kind);
            for (var, key) in creds::AZURE_ENTRA_VARS {
                if let (Some(v), Ok(k)) = (
                    std::env::var(var).ok().filter(|v| !v.is_empty()),
                    key.parse::<object_store::azure::AzureConfigKey>(),
                ) {
                    b = b.with_config(k, v);
                }
            }
            b
        }
    }
}

/// A local folder ([`check_local`]; a destination's is created when missing), by its canonical
/// path.
fn open_local(loc: &Location, root: &std::path::Path, role: Role) -> Result<Opened, OpenError> {
    let shown = loc.shown();
    check_local(root, &shown, role)?;
    if role == Role::Destination {
        local::create_destination_root(root).map_err(|e| OpenError::Build {
            location: shown.clone(),
            message: format!("cannot create the folder: {e}"),
        })?;
    }
    let root = root.canonicalize().map_err(|e| OpenError::Build {
        location: shown.clone(),
        message: e.to_string(),
    })?;
    let fs = object_store::local::LocalFileSystem::new_with_prefix(&root)
        .map_err(|e| build_err(loc, e))?;
    Ok(Opened {
        inner: Arc::new(fs),
        pages: None,
        multipart: None,
        kind: Kind::Local,
        local_root: Some(root),
        provider: Some("onprem".into()),
        s3: None,
        azure: None,
        gcs: None,
        s3_anonymous: false,
        credentials: "none needed (a local folder)".into(),
        aws_credentials: None,
        crc_writer: None,
        endpoint: None,
    })
}

/// An in-memory store (tests).
fn open_memory() -> Opened {
    let m = Arc::new(InMemory::new());
    Opened {
        inner: m.clone(),
        pages: None,
        multipart: Some(m),
        kind: Kind::Memory,
        local_root: None,
        provider: None,
        s3: None,
        azure: None,
        gcs: None,
        s3_anonymous: false,
        credentials: "none needed (in memory)".into(),
        aws_credentials: None,
        crc_writer: None,
        endpoint: None,
    }
}

/// A local location must be a folder; a source one must exist already. What is there instead is
/// named (a file, a FIFO, ...), so a single file given as a source is not read as an empty folder.
fn check_local(root: &std::path::Path, shown: &str, role: Role) -> Result<(), OpenError> {
    let refused = |reason: String| OpenError::Refused {
        location: shown.to_string(),
        reason,
    };
    match std::fs::metadata(root) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(m) => Err(refused(format!(
            "is {}, not a folder; this command works on what is under a folder (to copy one \
             file, use `moverctl copy FILE DEST`)",
            local::file_kind(&m.file_type())
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match role {
            Role::Destination => Ok(()),
            Role::Source => Err(refused(
                "no such folder; a source folder is never created (is its volume mounted?)".into(),
            )),
        },
        Err(e) => Err(OpenError::Build {
            location: shown.to_string(),
            message: e.to_string(),
        }),
    }
}

/// Whether a store error means the credentials were missing, wrong or not allowed (see
/// [`error::StoreErrorKind`]).
pub fn is_auth_error(e: &object_store::Error) -> bool {
    StoreErrorKind::of(e) == StoreErrorKind::Auth
}
