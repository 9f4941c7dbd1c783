//! The per-run context of every copy ([`Ctx`]: both stores, the options, limits, journal,
//! counters and buffer budget, the run's server-side and from-URL state) and what every strategy
//! shares: the copy error and how a store's answer becomes one ([`store_err`],
//! [`s3_answer_error`]), the verified [`Outcome`], the checksum-only path's switches
//! ([`crc_writer`], [`crc_first`], [`crc_suffices`], [`stamps_crc`]) and the in-flight progress of
//! large objects.

use crate::checksum::Digests;
use crate::journal::Journal;
use crate::limit::Limits;
use crate::store::{Store, StoreErrorKind};
use crate::transfer::verification::{ReadCheck, Verification};
use crate::transfer::{CopyOptions, Counters};
use std::sync::atomic::{AtomicBool, AtomicU8};
use std::sync::{Arc, Mutex};

#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error("integrity: {0}")]
    Mismatch(String),
    #[error(
        "the source object changed while it was copied (its ETag no longer matches); it will be copied again on the next run"
    )]
    SourceChanged,
    #[error("{0}")]
    TooLarge(String),
    #[error(
        "the source states no digest for this object (no MD5 ETag, multipart ETag, stored checksum or moverctl metadata), so its bytes could only be checked by size; --verify strict refuses that"
    )]
    NoSourceDigest,
    #[error("{what}: {source}")]
    Store {
        what: &'static str,
        #[source]
        source: object_store::Error,
    },
    #[error("reading {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// Writing a local destination failed (a full disk, no permission, ...).
    #[error("writing {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Journal(#[from] crate::journal::JournalError),
    /// `--inventory`: the source object is no longer the one the inventory lists (changed, or
    /// gone: `gone`), as one HEAD of it showed.
    #[error("{what}")]
    SinceInventory { gone: bool, what: String },
}

impl CopyError {
    /// Worth another attempt in this run.
    pub fn retryable(&self) -> bool {
        match self {
            CopyError::Mismatch(_) | CopyError::Io { .. } => true,
            // A full disk or a refused write is not cured by trying again at once.
            CopyError::Write { source, .. } => !matches!(
                source.raw_os_error(),
                Some(libc::ENOSPC | libc::EDQUOT | libc::EACCES | libc::EPERM | libc::EROFS)
            ),
            CopyError::Store { source, .. } => !crate::store::is_auth_error(source),
            CopyError::SourceChanged
            | CopyError::SinceInventory { .. }
            | CopyError::TooLarge(_)
            | CopyError::NoSourceDigest
            | CopyError::Journal(_) => false,
        }
    }

    /// What kind of store error ended the copy (None: not a store's answer, e.g. a mismatch
    /// moverctl found, a local read, the journal).
    pub fn kind(&self) -> Option<StoreErrorKind> {
        match self {
            CopyError::Store { source, .. } => Some(StoreErrorKind::of(source)),
            CopyError::SourceChanged => Some(StoreErrorKind::PreconditionFailed),
            _ => None,
        }
    }
}

pub(in crate::transfer) fn store_err(
    what: &'static str,
) -> impl Fn(object_store::Error) -> CopyError {
    move |source| match StoreErrorKind::of(&source) {
        StoreErrorKind::PreconditionFailed => CopyError::SourceChanged,
        // The server compared the body with the Content-MD5 or x-amz-checksum-* moverctl sent
        // and refused it.
        StoreErrorKind::DigestRefused => CopyError::Mismatch(format!(
            "{what}: the store received different bytes than were sent (it refused their MD5 or checksum)"
        )),
        _ => CopyError::Store { what, source },
    }
}

/// What a verified copy produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub digests: Digests,
    pub dst_etag: Option<String>,
    pub verified_by: Verification,
    pub parts: u64,
    pub upload_id: Option<String>,
    pub part_size: Option<u64>,
    /// `digests.crc64` is the object's CRC64 (false: a server-side copy of a source that states
    /// none; the bytes never passed here).
    pub crc64_known: bool,
    /// Copied by the destination service itself (see [`crate::transfer::server_side`]).
    pub server_side: bool,
}

/// What every copy of one run shares: both stores, the options and limits, the journal and
/// counters, the buffer budget, and the run's server-side and from-URL state.
pub struct Ctx {
    pub src: Store,
    pub dst: Store,
    pub opts: Arc<CopyOptions>,
    pub limits: Limits,
    pub journal: Option<Arc<Mutex<Journal>>>,
    pub counters: Arc<Counters>,
    /// Bytes of part buffers in flight across the run, in MiB permits.
    pub buffers: Arc<tokio::sync::Semaphore>,
    /// The semaphore's size: a part larger than the whole budget takes all of it (not forever).
    pub buffer_mib: u32,
    /// Large objects are read with one GET each (split into parts as they stream); false: one
    /// ranged GET per part.
    pub sequential_reads: bool,
    /// Source and destination are one S3 service with the same credentials: objects are copied
    /// there where the result can be proven ([`crate::transfer::server_side`]).
    pub server_side: Option<Arc<ServerSide>>,
    /// The destination is Azure Blob and can fetch the source's blocks from a signed URL of it
    /// ([`crate::transfer::from_url`]).
    pub from_url: Option<Arc<FromUrl>>,
}

/// What a run needs to copy server side, decided once when it starts (`ServerSide::between`, in
/// [`crate::transfer::server_side`]).
#[derive(Debug)]
pub struct ServerSide {
    /// The source's bucket, named in `x-amz-copy-source`.
    pub(in crate::transfer) src_bucket: String,
    /// Set once the service refuses a server-side copy (not implemented, or denied): the rest
    /// of the run streams.
    pub(in crate::transfer) off: AtomicBool,
    /// Whether one CopyObject of a multipart source answers with the source's own multipart
    /// ETag (`server_side::WHOLE_*`): Garage's copy keeps the
    /// object's parts (one request, nearly free), AWS rewrites it as one part with a new ETag
    /// that proves nothing. Learned from the run's first such answer.
    pub(in crate::transfer) whole: AtomicU8,
    /// The same for multipart sources that keep a full-object CRC64: a service may copy them as
    /// one new object with another ETag (Garage recomputes the MD5) but the same stored CRC64,
    /// which then proves the copy.
    pub(in crate::transfer) whole_crc: AtomicU8,
}

/// What a run needs to copy from source URLs, decided once when it starts (`FromUrl::between`,
/// in [`crate::transfer::from_url`]).
#[derive(Debug)]
pub struct FromUrl {
    /// Set once the service refuses the call or cannot read a source URL: the rest of the run
    /// streams.
    pub(in crate::transfer) off: AtomicBool,
    /// Set once a block's answer carried no CRC64: CRC-proven copies stream for the rest of the
    /// run (the MD5 proofs still apply).
    pub(in crate::transfer) no_crc: AtomicBool,
    /// Objects whose fetched blocks did not prove out: their retries stream at once.
    pub(in crate::transfer) unproven: std::sync::Mutex<std::collections::HashSet<String>>,
}

/// An S3 answer to one of moverctl's own (presigned) requests as a copy error: the last HTTP
/// status stays a value ([`crate::store::error::HttpStatus`]) so that it is classified without
/// reading text.
pub(in crate::transfer) fn s3_answer_error(
    what: &'static str,
    msg: String,
    status: Option<u16>,
) -> CopyError {
    CopyError::Store {
        what,
        source: s3_answer(msg, status),
    }
}

/// An S3 answer to one of moverctl's own requests as the store error object_store would give,
/// so that [`store_err`] classifies it like any other (a refused digest, a failed condition).
pub(in crate::transfer) fn s3_answer(msg: String, status: Option<u16>) -> object_store::Error {
    object_store::Error::Generic {
        store: "S3",
        source: match status {
            Some(status) => Box::new(crate::store::error::HttpStatus {
                status,
                message: msg,
            }),
            None => msg.into(),
        },
    }
}

/// The destination's CRC64-sending store when copies take the checksum-only path: the
/// destination checks `x-amz-checksum-crc64nvme` on arrival and keeps the full-object value (its
/// catalog entry or a saved probe says so, never its kind), and `--verify` allows it (not `md5`
/// or `readback`). Then no MD5 is computed for the write side: single PUTs and parts carry the
/// CRC64 of their bytes, and the stored full-object CRC64 is compared after (`dest-checksum`).
pub(super) fn crc_writer(ctx: &Ctx) -> Option<&crate::store::CrcWriter> {
    if !ctx.dst.caps.checks_crc64nvme || !ctx.opts.verify.allows_checksum_only() {
        return None;
    }
    ctx.dst.crc_writer.as_ref()
}

/// Whether [`discover`] looks for a CRC the source keeps first (see [`discover_for`]).
pub(in crate::transfer) fn crc_first(ctx: &Ctx) -> bool {
    crc_writer(ctx).is_some() || crc_suffices(ctx)
}

/// A local folder's write side is proven by the CRC64 of the bytes written, so a source that
/// states a CRC is checked by it alone and no MD5 is computed (`--verify md5` and `readback`
/// keep the MD5).
pub(in crate::transfer) fn crc_suffices(ctx: &Ctx) -> bool {
    ctx.dst.is_local() && ctx.opts.verify.allows_checksum_only()
}

/// Whether the CRC64 of the bytes read may be stamped into the copy's metadata as its source's
/// (`moverctl_crc64nvme`, which later copies of the copy are checked by): only where the read side
/// proved those bytes are the source's (or read them from a local file). A CRC64 of bytes that
/// only their size checked would certify whatever arrived.
pub(super) fn stamps_crc(ctx: &Ctx, read: ReadCheck) -> bool {
    match read {
        ReadCheck::Unverified => false,
        ReadCheck::SourceSize => ctx.src.caps.in_process,
        _ => true,
    }
}

/// Adds `bytes` to the in-flight progress of `key`.
pub(in crate::transfer) fn progress_in_flight(ctx: &Ctx, key: &str, bytes: u64) {
    add_in_flight(&ctx.counters, key, bytes);
}

/// [`progress_in_flight`] where only the counters are at hand (a `'static` stream).
pub(in crate::transfer) fn add_in_flight(counters: &Counters, key: &str, bytes: u64) {
    if let Some(e) = counters
        .in_flight
        .lock()
        .expect("progress lock")
        .get_mut(key)
    {
        e.0 += bytes;
    }
}

/// Removes a large object from the in-flight progress map however its copy ends.
pub(in crate::transfer) struct InFlightGuard(
    pub(in crate::transfer) Arc<crate::transfer::Counters>,
    pub(in crate::transfer) String,
);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if let Ok(mut m) = self.0.in_flight.lock() {
            m.remove(&self.1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generic(msg: &str) -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: msg.to_string().into(),
        }
    }

    /// A store's answer becomes a copy error by its kind, and the copy error keeps the kind.
    #[test]
    fn store_errors_become_copy_errors_by_kind() {
        let e = store_err("writing")(generic(
            "Server returned non-2xx status code: 400 Bad Request: <Error><Code>BadDigest</Code></Error>",
        ));
        assert!(matches!(e, CopyError::Mismatch(_)), "{e}");
        assert_eq!(e.kind(), None);
        let e = store_err("reading")(object_store::Error::Precondition {
            path: "k".into(),
            source: "412".into(),
        });
        assert!(matches!(e, CopyError::SourceChanged));
        assert_eq!(e.kind(), Some(StoreErrorKind::PreconditionFailed));
        let e = store_err("writing")(object_store::Error::PermissionDenied {
            path: "k".into(),
            source: "403".into(),
        });
        assert_eq!(e.kind(), Some(StoreErrorKind::Auth));
        assert!(!e.retryable(), "a refusal is not tried again");
        let e = store_err("writing")(generic(
            "Server returned non-2xx status code: 503 Service Unavailable: <Code>SlowDown</Code>",
        ));
        assert_eq!(e.kind(), Some(StoreErrorKind::Throttled));
        assert!(e.retryable());
    }
}
