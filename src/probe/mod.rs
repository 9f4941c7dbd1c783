//! Capability probe: what a store really does, measured rather than assumed. The probe writes,
//! reads and deletes a few test objects under a scratch prefix `<location prefix>.moverctl-probe-
//! <random>/`, always removes what it wrote (also when a check fails or the run is interrupted;
//! multipart uploads it started are aborted), and reports findings plus latency and throughput.
//! The executor and the planner read saved results back (see [`saved`]).
//!
//! Checks (each a [`Finding`] with status yes / no / unknown / not-tested and a one-line detail):
//!
//! | id | how |
//! |---|---|
//! | `single_part_etag_md5` | PUT 64 KiB; is the ETag the hex MD5 of the body? |
//! | `multipart_etag_stable` | the same bytes uploaded twice in the same 5 MiB parts; equal ETags? |
//! | `multipart_etag_md5_of_md5s` | is that ETag `md5(md5(part 1) ‖ … ‖ md5(part N))-N`? |
//! | `content_md5_accepted` / `_checked` | raw S3 PUT with a correct / a deliberately wrong `Content-MD5` |
//! | `checksum_<alg>_accepted` / `_checked` / `_stored` | the same for `x-amz-checksum-{sha256,crc32c,crc32,crc64nvme}`, then HEAD with `x-amz-checksum-mode: ENABLED` reads the stored value back |
//! | `user_metadata` | `Attribute::Metadata` written and returned by HEAD |
//! | `conditional_create` | `PutMode::Create` on an existing key: refused (`AlreadyExists`), or overwritten? |
//! | `listing_sorted` | 20 keys in awkward byte order listed back through the sorted lister |
//! | `part_size_1mib` | a 2-part multipart upload with a 1 MiB first part: accepted or rejected? |
//!
//! Raw S3 requests are presigned by object_store's `Signer` and sent with reqwest, because
//! object_store can neither send `Content-MD5` / CRC32C / CRC32 headers nor read checksums back.
//! Other stores report those rows as "not tested (S3 only)".
//!
//! Measurements: latency is the median of `requests` small PUTs, HEADs and GETs (each kind's
//! median is kept too); throughput is one `stream_bytes` PUT then GET on one stream, and `streams`
//! such PUTs (then GETs) in parallel. The planner reads the PUT figures, the direction that
//! matters when the store is a destination. Then what bounds a run ([`rates`]): small-object
//! PUT and GET rates with 1, 8, 32 and 64 requests in flight, and the engine's CPU seconds per GiB
//! (hashing and copying, plus the HTTP transfer's own CPU) against this machine's cores.
//!
//! JSON (`moverctl probe --json`, and the saved file), schema `moverctl.probe/1`:
//! ```json
//! { "schema": "moverctl.probe/1", "location": "garage:bucket/prefix/", "provider": null,
//!   "kind": "s3", "timestamp": "2026-11-29T22:30:00Z", "moverctl": "0.1.0",
//!   "scratch_prefix": "prefix/.moverctl-probe-1f2e3d4c5b6a7988/",
//!   "findings": [ { "id": "single_part_etag_md5", "check": "single-part ETag is the MD5",
//!                   "status": "yes", "detail": "…" } ],
//!   "latency_ms": 1.8, "latency_ms_by_request": { "put": 2.9, "head": 1.1, "get": 1.4 },
//!   "latency_samples": 20,
//!   "stream_bytes": 16777216, "streams": 8,
//!   "single_stream_bytes_per_sec": 1.2e8, "single_stream_get_bytes_per_sec": 3.0e8,
//!   "multi_stream_bytes_per_sec": 4.0e8, "multi_stream_get_bytes_per_sec": 9.0e8,
//!   "min_part_size_accepted": 5242880,
//!   "request_rate": [ { "in_flight": 1, "put_per_sec": 310.0, "get_per_sec": 520.0 }, … ],
//!   "request_rate_object_bytes": 16384,
//!   "client_cpu": { "hash_copy_seconds_per_gib": 2.1, "transfer_seconds_per_gib": 1.4,
//!                   "copy_seconds_per_gib": 4.9, "cores": 2 },
//!   "on_this_machine": true,
//!   "server_copy": { "small_object_bytes": 16384, "small_copy_seconds": 0.004,
//!                    "object_bytes": 16777216, "copy_seconds": 0.05,
//!                    "small_copies_per_second": 900.0, "parallel": 8,
//!                    "parallel_bytes_per_second": 2.1e9, "part_bytes": 5242880,
//!                    "part_copy_bytes_per_second": 9.0e8,
//!                    "process_start_seconds": 0.05 },
//!   "cleanup": { "deleted": 61, "left": [] } }
//! ```
//! `status` is one of `yes`, `no`, `unknown`, `not-tested`. Measurements that could not be taken
//! are `null`. `min_part_size_accepted` is the smallest part size (1 MiB or 5 MiB) a completed
//! multipart upload used, or null. The location never carries a credential.

mod checks;
mod common;
pub mod copy_rate;
/// An error in one short line (the S3 error code and message when it carries them).
pub(crate) use common::short as short_error;
pub mod rates;
pub mod s3raw;
pub mod saved;
mod table;

use crate::store::Store;
use object_store::MultipartUpload;
use object_store::aws::AmazonS3;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

pub use table::render_table;

pub const SCHEMA: &str = "moverctl.probe/1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Yes,
    No,
    Unknown,
    NotTested,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Yes => "yes",
            Status::No => "no",
            Status::Unknown => "unknown",
            Status::NotTested => "not tested",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub id: String,
    /// What was asked, for people.
    pub check: String,
    pub status: Status,
    /// One line: what was seen.
    pub detail: String,
}

impl Finding {
    fn new(id: &str, check: &str, status: Status, detail: impl Into<String>) -> Finding {
        Finding {
            id: id.to_string(),
            check: check.to_string(),
            status,
            detail: detail.into(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyByRequest {
    pub put: Option<f64>,
    pub head: Option<f64>,
    pub get: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cleanup {
    /// Objects deleted at the end.
    pub deleted: u64,
    /// Keys still under the scratch prefix after cleanup (should be empty).
    pub left: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeReport {
    pub schema: String,
    pub location: String,
    pub provider: Option<String>,
    pub kind: String,
    pub timestamp: String,
    pub moverctl: String,
    pub scratch_prefix: String,
    pub findings: Vec<Finding>,
    pub latency_ms: Option<f64>,
    pub latency_ms_by_request: LatencyByRequest,
    pub latency_samples: usize,
    pub stream_bytes: u64,
    pub streams: usize,
    pub single_stream_bytes_per_sec: Option<f64>,
    pub single_stream_get_bytes_per_sec: Option<f64>,
    pub multi_stream_bytes_per_sec: Option<f64>,
    pub multi_stream_get_bytes_per_sec: Option<f64>,
    pub min_part_size_accepted: Option<u64>,
    /// Small-object request rate under concurrency ([`rates`]); empty in older probe files.
    #[serde(default)]
    pub request_rate: Vec<rates::RatePoint>,
    #[serde(default)]
    pub request_rate_object_bytes: Option<u64>,
    /// The engine's CPU cost per GiB on the probing machine ([`rates`]).
    #[serde(default)]
    pub client_cpu: Option<rates::ClientCpu>,
    /// The store is served from this machine (a local folder, or a loopback endpoint): its
    /// server work competes with the client's for the same cores.
    #[serde(default)]
    pub on_this_machine: bool,
    /// How fast the service copies on the server ([`copy_rate`]); S3 with a signer only,
    /// absent in older probe files.
    #[serde(default)]
    pub server_copy: Option<copy_rate::ServerCopy>,
    /// The short probe a first copy into an unprobed S3 store runs ([`checksum_only`]): only the
    /// `x-amz-checksum-crc64nvme` rows, no measurements. Absent (false) in a full probe's JSON.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub checksum_only: bool,
    pub cleanup: Cleanup,
}

impl ProbeReport {
    pub fn finding(&self, id: &str) -> Option<&Finding> {
        self.findings.iter().find(|f| f.id == id)
    }

    /// Status of a finding; `Unknown` when the probe has no such row.
    pub fn status(&self, id: &str) -> Status {
        self.finding(id).map_or(Status::Unknown, |f| f.status)
    }

    /// What one stream of uploads sustains, bytes/s: the parallel figure divided by the number of
    /// streams when there is one, else the single-stream figure.
    pub fn per_stream_bytes_per_sec(&self) -> Option<f64> {
        match (self.multi_stream_bytes_per_sec, self.streams) {
            (Some(m), n) if n > 0 && m > 0.0 => Some(m / n as f64),
            _ => self.single_stream_bytes_per_sec.filter(|v| *v > 0.0),
        }
    }

    /// Small PUTs per second the server sustains with `concurrency` in flight.
    pub fn put_rate_at(&self, concurrency: usize) -> Option<f64> {
        let pts: Vec<(usize, f64)> = self
            .request_rate
            .iter()
            .filter_map(|p| Some((p.in_flight, p.put_per_sec?)))
            .collect();
        rates::rate_at(&pts, concurrency)
    }

    /// Small GETs per second the server sustains with `concurrency` in flight.
    pub fn get_rate_at(&self, concurrency: usize) -> Option<f64> {
        let pts: Vec<(usize, f64)> = self
            .request_rate
            .iter()
            .filter_map(|p| Some((p.in_flight, p.get_per_sec?)))
            .collect();
        rates::rate_at(&pts, concurrency)
    }

    /// HEADs per second at `concurrency` (as [`ProbeReport::get_rate_at`]); None from a probe
    /// that did not measure them.
    pub fn head_rate_at(&self, concurrency: usize) -> Option<f64> {
        let pts: Vec<(usize, f64)> = self
            .request_rate
            .iter()
            .filter_map(|p| Some((p.in_flight, p.head_per_sec?)))
            .collect();
        rates::rate_at(&pts, concurrency)
    }
}

/// How much to measure, and what to do it with.
#[derive(Clone)]
pub struct ProbeOpts {
    /// Bytes per throughput object (`--size`).
    pub stream_bytes: u64,
    /// Parallel streams for the multi-stream measurement (`--streams`).
    pub streams: usize,
    /// Small requests of each kind for the latency median (`--requests`).
    pub requests: usize,
    /// The same S3 location as a concrete `AmazonS3`, for presigned raw requests
    /// ([`s3raw::open_s3`]). Without it the raw header checks are reported "not tested".
    pub s3: Option<Arc<AmazonS3>>,
    /// Notified to stop early; what was written is still removed.
    pub cancel: Option<Arc<tokio::sync::Notify>>,
}

impl Default for ProbeOpts {
    fn default() -> Self {
        ProbeOpts {
            stream_bytes: 16 << 20,
            streams: 8,
            requests: 20,
            s3: None,
            cancel: None,
        }
    }
}

impl std::fmt::Debug for ProbeOpts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProbeOpts")
            .field("stream_bytes", &self.stream_bytes)
            .field("streams", &self.streams)
            .field("requests", &self.requests)
            .field("s3", &self.s3.is_some())
            .finish()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("probing {location}: {what}: {source}")]
    Store {
        location: String,
        what: String,
        #[source]
        source: object_store::Error,
    },
    #[error("probing {location}: interrupted; {}", left_note(left))]
    Interrupted { location: String, left: Vec<String> },
    #[error("saving the probe result to {path}: {message}")]
    Save { path: String, message: String },
}

fn left_note(left: &[String]) -> String {
    if left.is_empty() {
        "the probe's test objects were removed".into()
    } else {
        format!(
            "these test objects could not be removed: {}",
            left.join(", ")
        )
    }
}

impl ProbeError {
    /// True when the store refused the credentials (exit code 4).
    pub fn is_auth(&self) -> bool {
        matches!(self, ProbeError::Store { source, .. } if crate::store::is_auth_error(source))
    }
}

type UploadSlot = Arc<tokio::sync::Mutex<Option<Box<dyn MultipartUpload>>>>;

/// What the checks share: the store, the scratch prefix, and a record of everything written so
/// cleanup can remove it whatever happened.
pub(crate) struct Ctx<'a> {
    pub store: &'a Store,
    /// Full key prefix (store prefix included), ending in '/'.
    pub scratch: String,
    pub written: Mutex<BTreeSet<String>>,
    pub uploads: Mutex<Vec<UploadSlot>>,
    pub seed: u64,
}

impl Ctx<'_> {
    /// The object_store path of a key under the scratch prefix, recorded for cleanup.
    pub fn path(&self, key: &str) -> Path {
        let full = format!("{}{key}", self.scratch);
        self.written
            .lock()
            .expect("not poisoned")
            .insert(full.clone());
        Path::parse(&full).unwrap_or_else(|_| Path::from(full.as_str()))
    }

    pub fn inner(&self) -> &Arc<dyn ObjectStore> {
        &self.store.inner
    }

    /// A multipart upload of exactly these parts; aborted when any step fails, and visible to
    /// cleanup (which aborts it) if the probe is interrupted half way.
    pub async fn multipart(
        &self,
        path: &Path,
        parts: &[bytes::Bytes],
    ) -> object_store::Result<object_store::PutResult> {
        self.multipart_through(self.inner(), path, parts).await
    }

    /// [`Ctx::multipart`] through `store` (this store's checksum writer, for an upload that
    /// keeps a full-object CRC64 as exec's checksum path writes it).
    pub async fn multipart_through(
        &self,
        store: &Arc<dyn ObjectStore>,
        path: &Path,
        parts: &[bytes::Bytes],
    ) -> object_store::Result<object_store::PutResult> {
        let up = store.put_multipart(path).await?;
        let slot: UploadSlot = Arc::new(tokio::sync::Mutex::new(Some(up)));
        self.uploads
            .lock()
            .expect("not poisoned")
            .push(slot.clone());
        let mut guard = slot.lock().await;
        let res = async {
            let up = guard.as_mut().expect("the upload is in its slot");
            for p in parts {
                up.put_part(p.clone().into()).await?;
            }
            up.complete().await
        }
        .await;
        let up = guard.take();
        if res.is_err()
            && let Some(mut up) = up
        {
            let _ = up.abort().await;
        }
        res
    }
}

/// A per-run random number (no extra crate: the std hasher is randomly keyed per process).
pub(crate) fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    h.write_u32(std::process::id());
    h.finish()
}

/// Run every check against `store` and return the report. Everything written is removed before
/// this returns, whatever the outcome.
pub async fn probe(store: &Store, opts: ProbeOpts) -> Result<ProbeReport, ProbeError> {
    let started = copy_rate::since_process_start();
    let seed = random_u64();
    let ctx = scratch_ctx(store, seed);
    let mut report = blank_report(store, &ctx.scratch, &opts);
    let outcome = {
        let run = checks::run_all(&ctx, &opts, &mut report);
        match &opts.cancel {
            Some(n) => tokio::select! {
                r = run => r,
                _ = n.notified() => Err(ProbeError::Interrupted {
                    location: store.shown(),
                    left: Vec::new(),
                }),
            },
            None => run.await,
        }
    };
    if let Some(sc) = &mut report.server_copy {
        sc.process_start_seconds = started.map(|s| (s * 1000.0).round() / 1000.0);
    }
    report.cleanup = cleanup(&ctx).await;
    match outcome {
        Ok(()) => Ok(report),
        Err(ProbeError::Interrupted { location, .. }) => Err(ProbeError::Interrupted {
            location,
            left: report.cleanup.left,
        }),
        Err(e) => Err(e),
    }
}

/// The short probe of an S3 store that grants the checksum-only path, and nothing else: a PUT
/// with the right `x-amz-checksum-crc64nvme` (accepted?), one with a wrong value (refused?), a
/// HEAD with checksum mode (the value stored and read back?). Three test objects at most, under
/// `<prefix>.moverctl-probe-<random>/`, removed before this returns.
pub async fn checksum_only(store: &Store, s3: &AmazonS3) -> ProbeReport {
    let ctx = scratch_ctx(store, random_u64());
    let opts = ProbeOpts {
        stream_bytes: 0,
        streams: 0,
        requests: 0,
        ..ProbeOpts::default()
    };
    let mut report = blank_report(store, &ctx.scratch, &opts);
    report.checksum_only = true;
    s3raw::run_crc64(&ctx, s3, &mut report).await;
    report.cleanup = cleanup(&ctx).await;
    report
}

fn scratch_ctx(store: &Store, seed: u64) -> Ctx<'_> {
    Ctx {
        store,
        scratch: format!("{}.moverctl-probe-{seed:016x}/", store.prefix),
        written: Mutex::new(BTreeSet::new()),
        uploads: Mutex::new(Vec::new()),
        seed,
    }
}

fn blank_report(store: &Store, scratch: &str, opts: &ProbeOpts) -> ProbeReport {
    ProbeReport {
        schema: SCHEMA.to_string(),
        location: store.shown(),
        provider: store.provider.clone(),
        kind: store.kind.as_str().to_string(),
        timestamp: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        moverctl: env!("CARGO_PKG_VERSION").to_string(),
        scratch_prefix: scratch.to_string(),
        findings: Vec::new(),
        latency_ms: None,
        latency_ms_by_request: LatencyByRequest::default(),
        latency_samples: opts.requests,
        stream_bytes: opts.stream_bytes,
        streams: opts.streams,
        single_stream_bytes_per_sec: None,
        single_stream_get_bytes_per_sec: None,
        multi_stream_bytes_per_sec: None,
        multi_stream_get_bytes_per_sec: None,
        min_part_size_accepted: None,
        request_rate: Vec::new(),
        request_rate_object_bytes: None,
        client_cpu: None,
        on_this_machine: store.local_root.is_some(),
        server_copy: None,
        checksum_only: false,
        cleanup: Cleanup::default(),
    }
}

/// Abort unfinished uploads, delete every recorded object, then delete whatever a listing of the
/// scratch prefix still shows; report what is left.
async fn cleanup(ctx: &Ctx<'_>) -> Cleanup {
    use futures::StreamExt;
    let slots: Vec<UploadSlot> = std::mem::take(&mut *ctx.uploads.lock().expect("not poisoned"));
    for slot in slots {
        if let Some(mut up) = slot.lock().await.take() {
            let _ = up.abort().await;
        }
    }
    let written: Vec<String> = std::mem::take(&mut *ctx.written.lock().expect("not poisoned"))
        .into_iter()
        .collect();
    let mut deleted = 0u64;
    for chunk in written.chunks(16) {
        let results = futures::future::join_all(chunk.iter().map(|k| async move {
            match Path::parse(k) {
                Ok(p) => ctx.inner().delete(&p).await,
                Err(e) => Err(e.into()),
            }
        }))
        .await;
        deleted += results.iter().filter(|r| r.is_ok()).count() as u64;
    }
    let scratch_path = Path::parse(ctx.scratch.trim_end_matches('/')).ok();
    let mut left = Vec::new();
    if let Some(sp) = &scratch_path {
        let leftovers: Vec<Path> = ctx
            .inner()
            .list(Some(sp))
            .filter_map(|r| async move { r.ok().map(|m| m.location) })
            .collect()
            .await;
        for p in leftovers {
            if ctx.inner().delete(&p).await.is_ok() {
                deleted += 1;
            } else {
                left.push(p.to_string());
            }
        }
    }
    if let Some(root) = &ctx.store.local_root {
        // Local folders stay behind when their files go; the scratch folder is ours alone.
        let dir = root.join(ctx.scratch.trim_end_matches('/'));
        if dir.exists() && std::fs::remove_dir_all(&dir).is_err() {
            left.push(dir.display().to_string());
        }
    }
    Cleanup { deleted, left }
}
