//! Copying one object, verified end to end.
//!
//! Bytes are hashed as they stream (CRC64/NVME always; MD5 when an ETag can be compared with it).
//! - Read side: the number of bytes must equal the listed size; every read is pinned to the
//!   listed ETag (`If-Match`), so a source that changes mid-copy fails instead of being stitched;
//!   when the source's ETag is a plain MD5 (single-part S3, GCS), the bytes must hash to it.
//! - Write side: a destination ETag that is an MD5 (single PUT) or an S3 multipart ETag
//!   (`md5(part md5s)-N`) must match what was sent; otherwise a HEAD must show the right size
//!   and, where metadata is kept, moverctl's CRC. `--verify readback` (and local destinations)
//!   read the object back and compare CRCs.
//!
//! A mismatch is an error: the object is retried by the engine, never recorded as done.

use super::claims::{self, Claims, InOrder};
use super::fidelity::ObjectMeta;
use super::verification::{ReadCheck, Verification, WriteCheck};
use super::{CopyOptions, Counters, Verify};
use crate::catalog::parts::{Upload, part_plan};
use crate::checksum::{self, Digests, Hasher, META_CRC64, META_SIZE, META_SRC_ETAG};
use crate::journal::{Journal, ObjectRecord, PartRecord, State};
use crate::limit::Limits;
use crate::store::http::{Capture, DigestHeaders};
use crate::store::list::Entry;
use crate::store::{Store, StoreErrorKind};
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use object_store::multipart::PartId;
use object_store::{
    Attribute, Attributes, GetOptions, GetRange, ObjectStoreExt, PutMultipartOptions, PutOptions,
    PutPayload,
};
use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;
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

pub(super) fn store_err(what: &'static str) -> impl Fn(object_store::Error) -> CopyError {
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
    /// Copied by the destination service itself (see [`super::server_side`]).
    pub server_side: bool,
}

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
    /// there where the result can be proven ([`super::server_side`]).
    pub server_side: Option<Arc<super::server_side::ServerSide>>,
    /// The destination is Azure Blob and can fetch the source's blocks from a signed URL of it
    /// ([`super::from_url`]).
    pub from_url: Option<Arc<super::from_url::FromUrl>>,
}

/// A byte range of a source object as a stream, pinned to the listed ETag where the store has one.
pub(super) fn read_range(
    ctx: &Ctx,
    src: &Entry,
    range: Range<u64>,
    seen: Option<Seen>,
) -> BoxStream<'static, Result<Bytes, CopyError>> {
    if let Some(root) = &ctx.src.local_root {
        return local_range(root.join(&src.key), range);
    }
    let store = ctx.src.inner.clone();
    let path = match ctx.src.path_of(&src.key) {
        Ok(p) => p,
        Err(e) => {
            let err = CopyError::Store {
                what: "source key",
                source: e.into(),
            };
            return stream::once(async move { Err(err) }).boxed();
        }
    };
    let pin = ctx.src.caps.pins_reads;
    if pin {
        ctx.counters.get.fetch_add(1, Relaxed);
    }
    let etag = src.e_tag.clone();
    let whole = range.start == 0 && range.end == src.size;
    let azure_src = ctx.src.azure.is_some();
    // An Azure blob whose answer states no digest is read again in ranges the service checks
    // (range_md5.rs); the first answer's body is dropped unread.
    let by_range = seen
        .as_ref()
        .filter(|_| range.end > range.start)
        .and_then(|_| super::range_md5::Reader::of(ctx, src));
    stream::once(async move {
        let mut o = GetOptions::default();
        if !whole {
            o.range = Some(GetRange::Bounded(range.clone()));
        }
        if pin {
            o.if_match = etag;
        }
        let r = store
            .get_opts(&path, o)
            .await
            .map_err(store_err("reading the source"))?;
        if let Some(seen) = seen {
            let want = {
                let mut c = seen.lock().expect("claims lock");
                c.meta = Some(ObjectMeta::of_attributes(
                    &r.attributes,
                    r.extensions.get::<DigestHeaders>(),
                    azure_src,
                ));
                if let Some(v) = r.attributes.get(&Attribute::Metadata(META_CRC64.into())) {
                    c.add_meta_crc64(v);
                }
                if let Some(h) = r.extensions.get::<DigestHeaders>() {
                    c.add_headers(h, !whole);
                }
                super::range_md5::wanted(&c)
            };
            if let Some(rd) = by_range.filter(|_| want) {
                if let Some(url) = rd.signed(&path).await {
                    drop(r);
                    return Ok::<_, CopyError>(super::range_md5::stream(rd, range, url, seen));
                }
                // No URL could be signed for this range: its bytes come unchecked, and the
                // object may not be called range-checked on the strength of its other ranges.
                seen.lock().expect("claims lock").ranges_unchecked += 1;
            }
        }
        Ok::<_, CopyError>(
            r.into_stream()
                .map_err(store_err("reading the source"))
                .boxed(),
        )
    })
    .try_flatten()
    .boxed()
}

/// Where a read records what the source claims about its bytes (moverctl's CRC64 in metadata,
/// digest headers).
type Seen = Arc<Mutex<Claims>>;

/// The read side's verdict: every claim of the source checked against the bytes read.
///
/// A multipart ETag is recomputed with the part size part 1 shows, as if every part but the last
/// had that size (what every common uploader does). An upload whose parts differ in size while
/// their count still agrees gives another ETag for the same bytes, so before such a mismatch is
/// called corruption one HEAD of the last part tells whether the layout was regular; if it was
/// not, the ETag proves nothing and the other claims decide (possibly none: `source-size`).
pub(super) async fn check_source(
    ctx: &Ctx,
    src: &Entry,
    claims: &Claims,
    crc64: u64,
    ordered: Option<&claims::Ordered>,
) -> Result<ReadCheck, CopyError> {
    // A local file must still be the version listed once all its bytes are read: a rewrite
    // during the read (even one that puts the mtime back) moves its ctime, and a copy stitched
    // from two versions is never written.
    if let Some(root) = &ctx.src.local_root {
        local_still_listed(root.join(&src.key), src).await?;
    }
    // An encrypted S3 object's ETag proves nothing: one HEAD with checksum mode looks for the
    // CRC the store keeps for it (S3 stores one for every upload since December 2024).
    let looked;
    let claims = match &ctx.src.s3 {
        Some(s3) if claims.etag_opaque && !claims.states_crc() => {
            let mut c = claims.clone();
            if let Some(h) = raw_head(ctx, s3, src, None).await? {
                c.add_headers(&h, false);
                if let Some(v) = h.get(&format!("x-amz-meta-{META_CRC64}")) {
                    c.add_meta_crc64(v);
                }
            }
            looked = c;
            &looked
        }
        _ => claims,
    };
    let e = match claims.check(crc64, ordered) {
        Ok(label) => return require_digest(ctx, src, label),
        Err(e) => e,
    };
    let Some((part, _)) = &claims.parts_etag else {
        return Err(e);
    };
    let rest = Claims {
        parts_etag: None,
        ..claims.clone()
    };
    let Ok(label) = rest.check(crc64, ordered) else {
        return Err(e);
    };
    if layout_is_regular(ctx, src, *part).await? {
        return Err(e);
    }
    // Parts of unequal size: learn every part's size, and read the object again hashing over
    // them (the next attempt finds the layout learned here).
    if let (Some(s3), Some(etag)) = (&ctx.src.s3, &src.e_tag)
        && let Some(sizes) = learn_layout(ctx, s3, src, None).await?
    {
        LAYOUTS
            .lock()
            .expect("layouts lock")
            .insert(layout_key(ctx, src, etag), sizes);
        return Err(CopyError::Mismatch(
            "the source's multipart parts are not all one size: their sizes were learned, and it is read again to check its multipart ETag over them".into(),
        ));
    }
    require_digest(ctx, src, label)
}

/// Part layouts of S3 multipart sources whose parts are not all one size, learned in this
/// process: (source location and key, ETag) → every part's size.
static LAYOUTS: Mutex<std::collections::BTreeMap<(String, String), Vec<u64>>> =
    Mutex::new(std::collections::BTreeMap::new());

fn layout_key(ctx: &Ctx, src: &Entry, etag: &str) -> (String, String) {
    (
        format!("{}\u{0}{}", ctx.src.shown(), src.key),
        checksum::etag_norm(etag),
    )
}

/// Every part's size of an S3 multipart source (a HEAD of each with `partNumber`; `first`: part
/// 1's, known already), when the ETag's part count and the sizes add up to the object; None
/// where a part cannot be asked for.
async fn learn_layout(
    ctx: &Ctx,
    s3: &object_store::aws::AmazonS3,
    src: &Entry,
    first: Option<u64>,
) -> Result<Option<Vec<u64>>, CopyError> {
    let Some(n) = src
        .e_tag
        .as_deref()
        .map(checksum::etag_norm)
        .and_then(|e| e.rsplit_once('-').and_then(|(_, n)| n.parse::<u32>().ok()))
        .filter(|n| (1..=10_000).contains(n))
    else {
        return Ok(None);
    };
    let mut sizes = Vec::with_capacity(n as usize);
    for k in 1..=n {
        let len = match (k, first) {
            (1, Some(l)) => Some(l),
            _ => raw_head(ctx, s3, src, Some(k))
                .await?
                .and_then(|h| h.get("content-length").and_then(|v| v.parse::<u64>().ok())),
        };
        match len {
            Some(l) => sizes.push(l),
            None => return Ok(None),
        }
    }
    Ok((sizes.iter().sum::<u64>() == src.size).then_some(sizes))
}

/// Whether the source's last part has the size a regular layout of `part`-sized parts implies
/// (one HEAD of that part); true when it cannot be told.
async fn layout_is_regular(ctx: &Ctx, src: &Entry, part: u64) -> Result<bool, CopyError> {
    let Some(s3) = &ctx.src.s3 else {
        return Ok(true);
    };
    let n = src.size.div_ceil(part.max(1));
    if n < 2 {
        return Ok(true);
    }
    let want = src.size - (n - 1) * part;
    Ok(match raw_head(ctx, s3, src, Some(n as u32)).await? {
        Some(h) => h.get("content-length").and_then(|v| v.parse::<u64>().ok()) == Some(want),
        None => true,
    })
}

/// A cloud source's object whose bytes nothing but their size checked: refused under `--verify
/// strict`, accepted as `source-size` under `--verify size`, else `unverified` (written, never
/// stamped with a CRC64, not recorded as done). A local file is read here from the file itself.
fn require_digest(ctx: &Ctx, src: &Entry, label: ReadCheck) -> Result<ReadCheck, CopyError> {
    // No byte of an empty object can be wrong.
    if label != ReadCheck::SourceSize || ctx.src.caps.in_process || src.size == 0 {
        return Ok(label);
    }
    match ctx.opts.verify {
        Verify::Strict => Err(CopyError::NoSourceDigest),
        Verify::Size => Ok(ReadCheck::SourceSize),
        _ => Ok(ReadCheck::Unverified),
    }
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

/// A 1 MiB read block of a local file, used again once the bytes handed on are dropped (sent
/// on a socket or written to a file): a fresh block is a new mapping, faulted in and zeroed page
/// by page (about a fifth of a local → S3 copy's CPU). At most [`Block::KEEP`] free blocks are
/// kept, as much as the default `--max-buffer` holds in flight.
struct Block {
    bytes: Vec<u8>,
    len: usize,
}

static FREE_BLOCKS: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());

impl Block {
    const SIZE: usize = 1 << 20;
    const KEEP: usize = 128;

    fn take() -> Block {
        let free = FREE_BLOCKS.lock().expect("block pool lock").pop();
        Block {
            bytes: free.unwrap_or_else(|| vec![0u8; Block::SIZE]),
            len: 0,
        }
    }

    /// Up to `n` (at most [`Block::SIZE`]) bytes of `file` from `off` with positional reads; short
    /// only at the end of the file. With a hasher, each quarter is hashed as soon as it is read,
    /// on this thread while the bytes are still in its core's cache.
    fn read(
        file: &std::fs::File,
        off: u64,
        n: usize,
        mut hash: Option<&mut Hasher>,
    ) -> std::io::Result<Block> {
        use std::os::unix::fs::FileExt;
        let step = if hash.is_some() { Block::SIZE / 4 } else { n };
        let mut buf = Block::take();
        let mut got = 0;
        while got < n {
            let upto = (got + step).min(n);
            let k = file.read_at(&mut buf.bytes[got..upto], off + got as u64)?;
            if k == 0 {
                break;
            }
            if let Some(h) = hash.as_deref_mut() {
                h.update(&buf.bytes[got..got + k]);
            }
            got += k;
        }
        buf.len = got;
        Ok(buf)
    }
}

/// The local file at `path` still has the ETag (inode, mtime, size, ctime) it was listed with.
async fn local_still_listed(path: std::path::PathBuf, src: &Entry) -> Result<(), CopyError> {
    let Some(listed) = src.e_tag.clone() else {
        return Ok(());
    };
    let shown = path.display().to_string();
    let meta = tokio::task::spawn_blocking(move || std::fs::metadata(path))
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))
        .and_then(|r| r)
        .map_err(|e| CopyError::Io {
            path: shown,
            source: e,
        })?;
    if crate::store::local::local_etag(&meta) != listed {
        return Err(CopyError::SourceChanged);
    }
    Ok(())
}

/// Opens a local file on the blocking pool.
async fn open_local(path: std::path::PathBuf) -> std::io::Result<std::fs::File> {
    tokio::task::spawn_blocking(move || std::fs::File::open(path))
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))
        .and_then(|r| r)
}

/// The bytes a read of `range` hashed must be exactly its length.
pub(super) fn exact_length(d: &Digests, range: &Range<u64>) -> Result<(), CopyError> {
    let want = range.end - range.start;
    if d.bytes != want {
        return Err(CopyError::Mismatch(format!(
            "the source returned {} bytes for {}..{}, expected {want}",
            d.bytes, range.start, range.end
        )));
    }
    Ok(())
}

impl AsRef<[u8]> for Block {
    fn as_ref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        let bytes = std::mem::take(&mut self.bytes);
        let mut free = FREE_BLOCKS.lock().expect("block pool lock");
        if bytes.len() == Block::SIZE && free.len() < Block::KEEP {
            free.push(bytes);
        }
    }
}

/// Local reads in 1 MiB blocks (object_store's local stream reads 8 KiB at a time), each a
/// positional read on the blocking pool straight into the block handed on (tokio's `File` reads
/// into a buffer of its own and copies from it: one memory copy per byte more).
fn local_range(
    path: std::path::PathBuf,
    range: Range<u64>,
) -> BoxStream<'static, Result<Bytes, CopyError>> {
    const BLOCK: u64 = Block::SIZE as u64;
    let shown = path.display().to_string();
    let io = |shown: &str| {
        let shown = shown.to_string();
        move |e: std::io::Error| CopyError::Io {
            path: shown.clone(),
            source: e,
        }
    };
    stream::once(async move {
        let f = open_local(path).await.map_err(io(&shown))?;
        Ok::<_, CopyError>((Arc::new(f), range.start, range.end, shown))
    })
    .map_ok(move |(f, start, end, shown)| {
        stream::try_unfold(
            (f, start, end, shown),
            move |(f, off, end, shown)| async move {
                if off >= end {
                    return Ok(None);
                }
                let n = (end - off).min(BLOCK) as usize;
                let file = f.clone();
                let buf = tokio::task::spawn_blocking(move || Block::read(&file, off, n, None))
                    .await
                    .map_err(|e| std::io::Error::other(e.to_string()))
                    .and_then(|r| r)
                    .map_err(io(&shown))?;
                if buf.len == 0 {
                    return Ok(None);
                }
                let next = off + buf.len as u64;
                Ok(Some((Bytes::from_owner(buf), (f, next, end, shown))))
            },
        )
    })
    .try_flatten()
    .boxed()
}

/// Read a range fully, hashing as it streams; its length must be exact. (`--bwlimit` paces the
/// writes, not the reads: reads run ahead only as far as the buffers allow, so the upload side
/// sees a steady rate instead of all parts finishing their paced reads at once and then
/// bursting.)
async fn fetch(
    ctx: &Ctx,
    src: &Entry,
    range: Range<u64>,
    md5: bool,
    seen: Option<Seen>,
) -> Result<(Vec<Bytes>, Digests), CopyError> {
    if let Some(root) = &ctx.src.local_root {
        return local_fetch(ctx, root.join(&src.key), range, md5).await;
    }
    let mut s = read_range(ctx, src, range.clone(), seen);
    let mut h = Hasher::new(md5);
    let mut chunks = Vec::new();
    while let Some(chunk) = s.next().await {
        let chunk = chunk?;
        ctx.counters
            .read_bytes
            .fetch_add(chunk.len() as u64, Relaxed);
        h.update(&chunk);
        chunks.push(chunk);
    }
    let d = h.finish();
    exact_length(&d, &range)?;
    Ok((chunks, d))
}

/// [`fetch`] of a local file: each 1 MiB block is read and hashed on the same blocking thread, a
/// quarter at a time while the bytes are still in that core's cache (hashed later on a runtime
/// thread, they were read from memory again: 64 x 16 MiB local -> S3 took 0.245 s of user CPU
/// per GiB instead of 0.21).
async fn local_fetch(
    ctx: &Ctx,
    path: std::path::PathBuf,
    range: Range<u64>,
    md5: bool,
) -> Result<(Vec<Bytes>, Digests), CopyError> {
    const BLOCK: u64 = Block::SIZE as u64;
    let shown = path.display().to_string();
    let io = |e: std::io::Error| CopyError::Io {
        path: shown.clone(),
        source: e,
    };
    let f = Arc::new(open_local(path).await.map_err(io)?);
    let mut h = Hasher::new(md5);
    let mut chunks = Vec::new();
    let mut off = range.start;
    while off < range.end {
        let n = (range.end - off).min(BLOCK) as usize;
        let file = f.clone();
        let (buf, back) = tokio::task::spawn_blocking(move || {
            Block::read(&file, off, n, Some(&mut h)).map(|b| (b, h))
        })
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))
        .and_then(|r| r)
        .map_err(io)?;
        h = back;
        if buf.len == 0 {
            break;
        }
        off += buf.len as u64;
        ctx.counters.read_bytes.fetch_add(buf.len as u64, Relaxed);
        chunks.push(Bytes::from_owner(buf));
    }
    let d = h.finish();
    exact_length(&d, &range)?;
    Ok((chunks, d))
}

fn source_md5(ctx: &Ctx, src: &Entry) -> Option<[u8; 16]> {
    if !ctx.src.caps.put_etag_is_md5 {
        return None;
    }
    src.e_tag.as_deref().and_then(checksum::etag_md5)
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

/// What the source claims before its bytes are read: the listing's MD5 ETag; for an S3
/// multipart ETag, the part size from a HEAD of part 1 so the ETag can be recomputed; otherwise,
/// with `head` and no MD5 yet, what one HEAD shows (moverctl's CRC64, Azure/GCS digest
/// properties, S3's stored CRC64 with checksum mode). A HEAD that still fails after the retry
/// policy is an error of this attempt: going on would silently verify by size alone.
pub(super) async fn discover(ctx: &Ctx, src: &Entry, head: bool) -> Result<Claims, CopyError> {
    discover_for(ctx, src, head, crc_first(ctx)).await
}

/// [`discover`], unless an earlier way of copying this object that declined it (a copy from the
/// source's URL) already learned the claims with a HEAD: its HEAD is not made again.
async fn discover_once(
    ctx: &Ctx,
    src: &Entry,
    head: bool,
    known: Option<Claims>,
) -> Result<Claims, CopyError> {
    match known {
        Some(c) => Ok(c),
        None => discover(ctx, src, head).await,
    }
}

/// Whether [`discover`] looks for a CRC the source keeps first (see [`discover_for`]).
pub(super) fn crc_first(ctx: &Ctx) -> bool {
    crc_writer(ctx).is_some() || crc_suffices(ctx)
}

/// A local folder's write side is proven by the CRC64 of the bytes written, so a source that
/// states a CRC is checked by it alone and no MD5 is computed (`--verify md5` and `readback`
/// keep the MD5).
pub(super) fn crc_suffices(ctx: &Ctx) -> bool {
    ctx.dst.local_root.is_some() && ctx.opts.verify.allows_checksum_only()
}

/// [`discover`], saying whether a CRC the source keeps is looked for first (`crc_first`: the
/// checksum-only path, where it spares an MD5 pass; not for a server-side copy, whose proof is
/// the source's multipart ETag and so needs its part layout).
pub(super) async fn discover_for(
    ctx: &Ctx,
    src: &Entry,
    head: bool,
    crc_first: bool,
) -> Result<Claims, CopyError> {
    let md5 = source_md5(ctx, src);
    let mut c = Claims {
        md5,
        md5_is_etag: md5.is_some(),
        ..Default::default()
    };
    if !ctx.src.caps.pins_reads {
        return Ok(c);
    }
    let multipart_etag = ctx.src.caps.multipart_etag_is_md5_of_parts
        && src
            .e_tag
            .as_deref()
            .is_some_and(|e| checksum::etag_norm(e).contains('-'));
    let crc_path = crc_first;
    // On the checksum-only path a HEAD may find a CRC that spares an MD5 pass; where the source
    // has another proof (its MD5, or the part layout asked next), that HEAD failing costs only
    // the MD5 pass, so its error is not the copy's (a source that changed fails its pinned
    // GET anyway).
    if multipart_etag
        && crc_path
        && let Some(s3) = &ctx.src.s3
        && let Ok(Some(h)) = raw_head(ctx, s3, src, None).await
    {
        // The checksum-only path: a CRC64 the source keeps (S3 stores one for every upload made
        // with a CRC64 checksum, and by default since December 2024) or moverctl's own proves the
        // bytes without the MD5 pass a multipart ETag needs; part 1 is asked only without one.
        c.add_headers(&h, false);
        c.meta = Some(ObjectMeta::of_headers(&h));
        if let Some(v) = h.get(&format!("x-amz-meta-{META_CRC64}")) {
            c.add_meta_crc64(v);
        }
        if c.crc64_meta.is_some() || c.crc64_stored.is_some() {
            return Ok(c);
        }
    }
    let learned = src.e_tag.as_deref().and_then(|e| {
        LAYOUTS
            .lock()
            .expect("layouts lock")
            .get(&layout_key(ctx, src, e))
            .cloned()
    });
    if multipart_etag && let (Some(sizes), Some(e)) = (learned, &src.e_tag) {
        // Parts of unequal size, learned by an earlier attempt.
        c.parts_sizes = Some((sizes, checksum::etag_norm(e)));
    } else if multipart_etag && let Some(s3) = &ctx.src.s3 {
        // One HEAD of part 1: its length is the source's part size, so the multipart ETag can
        // be recomputed; moverctl's metadata comes with it.
        if let Some(h) = raw_head(ctx, s3, src, Some(1)).await? {
            c.meta.get_or_insert_with(|| ObjectMeta::of_headers(&h));
            if let Some(v) = h.get(&format!("x-amz-meta-{META_CRC64}")) {
                c.add_meta_crc64(v);
            }
            // An encrypted object's multipart ETag is no MD5 of MD5s: no layout to learn.
            c.note_encryption(&h);
            if let (false, Some(len), Some(e)) = (
                c.etag_opaque,
                h.get("content-length").and_then(|v| v.parse().ok()),
                &src.e_tag,
            ) {
                c.parts_etag = claims::parts_layout(e, src.size, len);
                // Part 1's size does not give the ETag's part count: the parts are of unequal
                // size, and every part's size is learned (a HEAD of each).
                if c.parts_etag.is_none()
                    && let Some(sizes) = learn_layout(ctx, s3, src, Some(len)).await?
                {
                    c.parts_sizes = Some((sizes, checksum::etag_norm(e)));
                }
            }
        }
    } else if head && (c.md5.is_none() || crc_path || (c.md5_is_etag && ctx.src.s3.is_some())) {
        // Without an MD5 the HEAD finds what else the source states; on the checksum-only path
        // it looks for a stored CRC64 that makes hashing the MD5 unnecessary; for an MD5 taken
        // from an S3 ETag it shows whether that ETag is one (not for SSE-KMS or SSE-C objects).
        let optional = c.md5.is_some();
        if let Some(s3) = &ctx.src.s3 {
            match raw_head(ctx, s3, src, None).await {
                Ok(Some(h)) => {
                    c.add_headers(&h, false);
                    c.meta = Some(ObjectMeta::of_headers(&h));
                    if let Some(v) = h.get(&format!("x-amz-meta-{META_CRC64}")) {
                        c.add_meta_crc64(v);
                    }
                }
                Ok(None) => {}
                Err(_) if optional => {}
                Err(e) => return Err(e),
            }
        } else {
            let path = ctx.src.path_of(&src.key).map_err(|e| CopyError::Store {
                what: "source key",
                source: e.into(),
            })?;
            ctx.counters.head.fetch_add(1, Relaxed);
            let r = ctx
                .src
                .inner
                .get_opts(
                    &path,
                    GetOptions {
                        head: true,
                        if_match: src.e_tag.clone(),
                        ..Default::default()
                    },
                )
                .await;
            match r {
                Ok(r) => {
                    c.meta = Some(ObjectMeta::of_attributes(
                        &r.attributes,
                        r.extensions.get::<DigestHeaders>(),
                        ctx.src.azure.is_some(),
                    ));
                    if let Some(v) = r.attributes.get(&Attribute::Metadata(META_CRC64.into())) {
                        c.add_meta_crc64(v);
                    }
                    if let Some(h) = r.extensions.get::<DigestHeaders>() {
                        c.add_headers(h, false);
                    }
                }
                // object_store retried it already: without this HEAD the source's digests are
                // unknown, and the copy would be verified by size alone.
                Err(_) if optional => {}
                Err(e) => return Err(store_err("reading the source's digests (HEAD)")(e)),
            }
        }
    }
    Ok(c)
}

/// An S3 answer to one of moverctl's own (presigned) requests as a copy error: the last HTTP
/// status stays a value ([`crate::store::error::HttpStatus`]) so that it is classified without
/// reading text.
pub(super) fn s3_answer_error(what: &'static str, msg: String, status: Option<u16>) -> CopyError {
    CopyError::Store {
        what,
        source: s3_answer(msg, status),
    }
}

/// An S3 answer to one of moverctl's own requests as the store error object_store would give,
/// so that [`store_err`] classifies it like any other (a refused digest, a failed condition).
pub(super) fn s3_answer(msg: String, status: Option<u16>) -> object_store::Error {
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

/// A HEAD object_store cannot make: presigned, with checksum mode (S3 returns stored checksums
/// only when asked) and optionally one part (`partNumber`). Pinned to the listed ETag.
///
/// Transient failures (5xx, 429, a connection that breaks) are retried under the one policy of
/// [`crate::store::retry`], and then are an error: the copy must not go on without the digests
/// this HEAD would have found (it would verify by size alone). `Ok(None)` only where the store
/// answers that it does not support the request (400, 405, 501: no part layout to learn).
pub(super) async fn raw_head(
    ctx: &Ctx,
    s3: &object_store::aws::AmazonS3,
    src: &Entry,
    part: Option<u32>,
) -> Result<Option<DigestHeaders>, CopyError> {
    let path = ctx.src.path_of(&src.key).map_err(|e| CopyError::Store {
        what: "source key",
        source: e.into(),
    })?;
    let what = if part.is_some() {
        "learning the source's part size (HEAD)"
    } else {
        "reading the source's digests (HEAD)"
    };
    let at = HeadOf {
        store: &ctx.src,
        path: &path,
        if_match: src.e_tag.as_deref(),
        what,
        shown: &format!("source object {}", src.key),
        gone: "the source object is gone since it was listed",
    };
    raw_head_at(ctx, s3, &at, part).await
}

/// The full-object CRC64/NVME the destination keeps for `path` (HEAD with checksum mode), if it
/// shows one.
async fn dest_stored_crc64(
    ctx: &Ctx,
    path: &object_store::path::Path,
    key: &str,
) -> Result<Option<u64>, CopyError> {
    let Some(s3) = &ctx.dst.s3 else {
        return Ok(None);
    };
    let at = HeadOf {
        store: &ctx.dst,
        path,
        if_match: None,
        what: "reading the destination's stored checksum (HEAD)",
        shown: &format!("destination object {key}"),
        gone: "the object just written is gone",
    };
    Ok(raw_head_at(ctx, s3, &at, None)
        .await?
        .and_then(|h| h.full_object_crc64()))
}

/// What one raw HEAD is about: which store and object, pinned to which ETag, and how errors
/// name it.
struct HeadOf<'a> {
    store: &'a Store,
    path: &'a object_store::path::Path,
    if_match: Option<&'a str>,
    what: &'static str,
    shown: &'a str,
    gone: &'static str,
}

async fn raw_head_at(
    ctx: &Ctx,
    s3: &object_store::aws::AmazonS3,
    at: &HeadOf<'_>,
    part: Option<u32>,
) -> Result<Option<DigestHeaders>, CopyError> {
    use crate::store::retry::{Backoff, retryable_status};
    use object_store::signer::{HeaderName, HeaderValue, Method, SignedUrlOptions, Signer};
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    let path = at.path;
    let what = at.what;
    let mut opts = SignedUrlOptions::default().with_signed_header(
        HeaderName::from_static("x-amz-checksum-mode"),
        HeaderValue::from_static("ENABLED"),
    );
    if let Some(n) = part {
        opts = opts.with_query([("partNumber", n.to_string())]);
    }
    let client = CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(60))
            .build()
            .unwrap_or_default()
    });
    // The last status answered stays a value (see store::error), not only text.
    let generic = |msg: String, status: Option<u16>| s3_answer_error(what, msg, status);
    let mut last_status: Option<u16>;
    let mut backoff = Backoff::with_window(at.store.retry_window);
    loop {
        // Signed anew for each attempt (a signature is only valid for a while).
        let mut url = s3
            .signed_url_opts(
                Method::HEAD,
                path,
                std::time::Duration::from_secs(300),
                &opts,
            )
            .await
            .map_err(|e| CopyError::Store { what, source: e })?;
        if at.store.s3_anonymous {
            crate::store::s3list::strip_signature(&mut url);
        }
        ctx.counters.head.fetch_add(1, Relaxed);
        ctx.limits.take_request().await;
        let mut req = client.head(url).header("x-amz-checksum-mode", "ENABLED");
        if let Some(e) = at.if_match {
            req = req.header("if-match", e);
        }
        // A reqwest error would print the presigned URL (a signature): only its kind is kept.
        last_status = None;
        let failure = match req.send().await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                at.store.observer.judge_refusal(status, b"");
                match status {
                    200..=299 => return Ok(Some(DigestHeaders::of(resp.headers()))),
                    412 => return Err(CopyError::SourceChanged),
                    400 | 405 | 501 => return Ok(None),
                    401 | 403 => {
                        return Err(CopyError::Store {
                            what,
                            source: object_store::Error::PermissionDenied {
                                path: path.to_string(),
                                source: format!("the store answered {status}").into(),
                            },
                        });
                    }
                    404 => {
                        return Err(CopyError::Store {
                            what,
                            source: object_store::Error::NotFound {
                                path: path.to_string(),
                                source: at.gone.into(),
                            },
                        });
                    }
                    s if retryable_status(s) => {
                        last_status = Some(s);
                        format!("the store answered {s}")
                    }
                    s => return Err(generic(format!("the store answered {s}"), Some(s))),
                }
            }
            Err(e) if e.is_timeout() => "the request timed out".to_string(),
            Err(e) if e.is_connect() => "the connection failed".to_string(),
            Err(_) => "the connection broke".to_string(),
        };
        if !backoff
            .wait_logged(&format!("HEAD of {}", at.shown), &failure)
            .await
        {
            return Err(generic(
                format!(
                    "{failure}; gave up after {} retries over {:.0?}",
                    backoff.retries(),
                    backoff.elapsed()
                ),
                last_status,
            ));
        }
    }
}

/// What a copy writes besides its bytes: the source's content headers and user metadata
/// (`meta`, from an answer the copy already had; a local file's type from its name), the
/// `--metadata-set` / `--no-metadata` policy, then moverctl's own keys and storage class.
pub(super) fn metadata(
    ctx: &Ctx,
    src: &Entry,
    crc: Option<u64>,
    meta: Option<&ObjectMeta>,
) -> Attributes {
    let mut a = Attributes::new();
    if !ctx.dst.caps.keeps_metadata {
        return a;
    }
    let local = ctx.src.local_root.is_some().then_some(src.key.as_str());
    super::fidelity::write_attributes(
        &ctx.opts.metadata,
        meta,
        local,
        ctx.dst.azure.is_some(),
        &mut a,
    );
    if let Some(c) = crc {
        a.insert(
            Attribute::Metadata(META_CRC64.into()),
            checksum::crc64_hex(c).into(),
        );
    }
    if let Some(e) = &src.e_tag {
        a.insert(
            Attribute::Metadata(META_SRC_ETAG.into()),
            checksum::etag_norm(e).into(),
        );
    }
    a.insert(
        Attribute::Metadata(META_SIZE.into()),
        src.size.to_string().into(),
    );
    super::local_dest::source_file_attributes(ctx, src, &mut a);
    if let Some(sc) = &ctx.dst.storage_class {
        a.insert(Attribute::StorageClass, sc.clone().into());
    }
    a
}

pub async fn copy_object(ctx: &Ctx, src: &Entry) -> Result<Outcome, CopyError> {
    let plan = part_plan(src.size, &ctx.opts.dst_limits, ctx.opts.part_rule)
        .map_err(|e| CopyError::TooLarge(e.to_string()))?;
    if ctx.dst.local_root.is_some() {
        // A local folder: one preallocated file per object, positional writes (local_dest.rs).
        let part = match plan {
            Upload::Single => None,
            Upload::Multipart { part_size, .. } => Some(part_size),
        };
        return super::local_dest::copy(ctx, src, part).await;
    }
    if let Some(ss) = &ctx.server_side
        && let Some(out) = super::server_side::copy(ctx, ss, src).await?
    {
        return Ok(out);
    }
    // Claims a declined copy from the source's URL learned (with a HEAD) serve the streamed copy.
    let mut known = None;
    if let Some(fu) = &ctx.from_url
        && let Some(out) = super::from_url::copy(ctx, fu, src, plan.part_size(), &mut known).await?
    {
        return Ok(out);
    }
    if let Upload::Multipart { part_size, .. } = plan
        && let Some(md5) = super::stream_put::applies(ctx, src, part_size)
        && let Some(out) = super::stream_put::copy(ctx, src, md5).await?
    {
        return Ok(out);
    }
    let out = match plan {
        Upload::Single => copy_single(ctx, src, known).await?,
        Upload::Multipart { part_size, parts } => {
            copy_multipart(ctx, src, part_size, parts, known).await?
        }
    };
    Ok(out)
}

async fn copy_single(ctx: &Ctx, src: &Entry, known: Option<Claims>) -> Result<Outcome, CopyError> {
    // Only an S3 multipart ETag needs a request before reading (the source's part size).
    let strict = ctx.opts.verify == Verify::Strict;
    let seen: Seen = Arc::new(Mutex::new(discover_once(ctx, src, strict, known).await?));
    // The object is held whole until it is written: it counts against the run's buffer budget.
    let mib = src
        .size
        .div_ceil(1 << 20)
        .clamp(1, u64::from(ctx.buffer_mib)) as u32;
    let _permit = ctx
        .buffers
        .acquire_many(mib)
        .await
        .expect("buffer semaphore open");
    // Where the source states its MD5 and the destination checks the Content-MD5 it is sent,
    // that MD5 is handed over as it is and none is computed here: the destination refuses any
    // byte that differs from the source's own digest (and its MD5 ETag is compared after).
    let handover = source_md5_handover(ctx, &seen.lock().expect("claims lock"));
    // The checksum-only path computes no MD5 for the write side; the read side's is computed
    // below only where an MD5 is the only proof the source offers.
    let crc_w = crc_writer(ctx);
    let (chunks, mut d) = fetch(
        ctx,
        src,
        0..src.size,
        handover.is_none() && crc_w.is_none(),
        Some(seen.clone()),
    )
    .await?;
    let mut claims = seen.lock().expect("claims lock").clone();
    // The GET's answer may have shown the ETag handed over to be no MD5 (an SSE-KMS or SSE-C
    // object): then the MD5 sent is computed from the bytes held.
    let handover = handover.filter(|m| claims.md5 == Some(*m));
    if handover.is_some() {
        d.md5 = handover;
    }
    let need_md5 = match crc_w {
        Some(_) => !claims.prefer_crc() && claims.md5.is_some(),
        None => true,
    };
    if need_md5 && d.md5.is_none() {
        let mut h = <md5::Md5 as md5::Digest>::new();
        for c in &chunks {
            md5::Digest::update(&mut h, c);
        }
        d.md5 = Some(md5::Digest::finalize(h).into());
    }
    let ordered = {
        // fetch hashed the MD5 already; the rest of the in-order digests from the chunks.
        let rest = Claims {
            md5: None,
            ..claims.clone()
        };
        let mut o = if rest.needs_in_order() {
            let mut h = InOrder::new(&rest);
            for c in &chunks {
                h.update(c);
            }
            h.finish()
        } else {
            claims::Ordered::default()
        };
        o.md5 = d.md5;
        o
    };
    let read_side = check_source(ctx, src, &claims, d.crc64, Some(&ordered)).await?;
    let path = ctx.dst.path_of(&src.key).map_err(|e| CopyError::Store {
        what: "destination key",
        source: e.into(),
    })?;
    ctx.limits.take_bytes(d.bytes).await;
    let opts = PutOptions {
        attributes: metadata(
            ctx,
            src,
            stamps_crc(ctx, read_side).then_some(d.crc64),
            claims.meta.as_ref(),
        ),
        tags: super::fidelity::source_tags(ctx, src, claims.meta.as_ref()).await?,
        ..Default::default()
    };
    // The checksum-only path sends the CRC64 computed as the bytes were read (see crc_url).
    let by_url = match crc_w.filter(|w| super::crc_url::applies(ctx, w)) {
        Some(w) => {
            let chunks = chunks.clone();
            super::crc_url::put_single(
                ctx,
                w,
                &path,
                chunks,
                (d.crc64, d.md5),
                &opts.attributes,
                &opts.tags,
            )
            .await?
        }
        None => None,
    };
    let (e_tag, answer) = match by_url {
        Some((e_tag, answer)) => (e_tag, Some(answer)),
        None => {
            ctx.limits.take_request().await;
            ctx.counters.put.fetch_add(1, Relaxed);
            let cap = Capture::sending_md5(d.md5);
            let writer = crc_w.map_or(&ctx.dst.inner, |w| &w.inner);
            let res = cap
                .scope(writer.put_opts(&path, PutPayload::from_iter(chunks), opts))
                .await
                .map_err(store_err("writing the destination"))?;
            (res.e_tag, cap.take())
        }
    };
    ctx.counters.written_bytes.fetch_add(d.bytes, Relaxed);
    // Azure answers a Put Blob with the MD5 of the bytes it received (its ETag is opaque), GCS
    // with x-goog-hash.
    let received_md5 = if ctx.dst.caps.answers_received_md5 {
        answer.as_ref().and_then(|h| h.whole_md5(false))
    } else {
        None
    };
    let etag_md5 = if etag_can_be_md5(&ctx.dst.caps, answer.as_ref(), false) {
        e_tag.as_deref().and_then(checksum::etag_md5)
    } else {
        None
    };
    // Compared only with an MD5 of what was sent (the checksum-only path may have none).
    let dest_md5 = d.md5.and(etag_md5.or(received_md5));
    let write_side = match dest_md5 {
        Some(m) if Some(m) != d.md5 => {
            // A wrong object must not stay where a later run could take it for a copy.
            let _ = ctx.dst.inner.delete(&path).await;
            return Err(CopyError::Mismatch(
                "the destination's MD5 (ETag or Content-MD5) differs from the bytes sent".into(),
            ));
        }
        _ if crc_w.is_some() => {
            let answered = answer.as_ref().and_then(DigestHeaders::full_object_crc64);
            match dest_checksum(ctx, src, &path, d.crc64, answered).await {
                Ok(w) => w,
                Err(e) => {
                    if matches!(e, CopyError::Mismatch(_)) {
                        let _ = ctx.dst.inner.delete(&path).await;
                    }
                    return Err(e);
                }
            }
        }
        Some(_) if ctx.opts.verify != Verify::Readback && !ctx.dst.caps.in_process => {
            WriteCheck::DestMd5
        }
        // The store checked the Content-MD5 sent with the body and accepted it, but its answer
        // holds no MD5 to compare (an SSE-KMS or SSE-C object on S3).
        None if ctx.opts.verify != Verify::Readback
            && ctx.dst.caps.checks_content_md5
            && d.md5.is_some() =>
        {
            WriteCheck::DestContentMd5
        }
        _ => match verify_after_write(ctx, src, &path, d.crc64, None).await {
            Ok(w) => w,
            Err(e) => {
                if matches!(e, CopyError::Mismatch(_)) {
                    let _ = ctx.dst.inner.delete(&path).await;
                }
                return Err(e);
            }
        },
    };
    Ok(Outcome {
        digests: d,
        dst_etag: e_tag,
        verified_by: Verification::new(read_side, write_side),
        parts: 0,
        upload_id: None,
        part_size: None,
        crc64_known: true,
        server_side: false,
    })
}

/// The source's own MD5 to send as `Content-MD5` in place of one computed here: when the source
/// states a plain MD5 and the destination checks `Content-MD5` on arrival (not under `--verify
/// readback`, which compares what was read).
fn source_md5_handover(ctx: &Ctx, claims: &Claims) -> Option<[u8; 16]> {
    if ctx.opts.verify == Verify::Readback || !ctx.dst.caps.checks_content_md5 {
        return None;
    }
    claims.md5
}

/// Whether a write answer's ETag may be compared with an MD5 of the bytes sent (single PUT) or
/// with `md5(part md5s)-N` (`multipart`): where the store's capabilities say its ETags are such
/// MD5s (not Azure's opaque ones, not an object GCS assembled from XML multipart parts, whose
/// ETag is "not based on an MD5"), unless the answer says the object is encrypted with SSE-KMS
/// or SSE-C (AWS documents those ETags as not MD5s).
fn etag_can_be_md5(
    caps: &crate::store::caps::Capabilities,
    answer: Option<&DigestHeaders>,
    multipart: bool,
) -> bool {
    let documented = if multipart {
        caps.multipart_etag_is_md5_of_parts
    } else {
        caps.put_etag_is_md5
    };
    documented && answer.is_none_or(DigestHeaders::s3_etag_can_be_md5)
}

/// The checksum-only path's proof on the write side: the full-object CRC64 the destination
/// keeps (from the write's answer, else a HEAD with checksum mode) equals the CRC64 of the bytes
/// sent. Every write carried that CRC64 and the destination refuses a body that does not match
/// it, so this also proves the bytes it assembled. A destination that shows no stored CRC64 is
/// read back instead: the proof never falls to the size alone.
async fn dest_checksum(
    ctx: &Ctx,
    src: &Entry,
    path: &object_store::path::Path,
    crc: u64,
    answered: Option<u64>,
) -> Result<WriteCheck, CopyError> {
    let stored = match answered {
        Some(c) => Some(c),
        None => dest_stored_crc64(ctx, path, &src.key).await?,
    };
    match stored {
        Some(c) if c == crc => Ok(WriteCheck::DestChecksum),
        Some(c) => Err(CopyError::Mismatch(format!(
            "the destination keeps the CRC64 {}, the bytes sent hash to {}",
            checksum::crc64_hex(c),
            checksum::crc64_hex(crc)
        ))),
        None => readback(ctx, src, path, crc).await,
    }
}

/// Reads the object just written back and compares its size and CRC64 with the bytes sent.
async fn readback(
    ctx: &Ctx,
    src: &Entry,
    path: &object_store::path::Path,
    crc: u64,
) -> Result<WriteCheck, CopyError> {
    if !ctx.dst.caps.in_process {
        ctx.counters.get.fetch_add(1, Relaxed);
    }
    let r = ctx
        .dst
        .inner
        .get(path)
        .await
        .map_err(store_err("reading the destination back"))?;
    let mut s = r.into_stream();
    let mut h = Hasher::new(false);
    while let Some(c) = s.next().await {
        h.update(&c.map_err(store_err("reading the destination back"))?);
    }
    let d = h.finish();
    if d.bytes != src.size || d.crc64 != crc {
        return Err(CopyError::Mismatch(
            "the destination reads back different bytes".into(),
        ));
    }
    Ok(WriteCheck::ReadbackCrc64)
}

/// HEAD (size, and GCS's stored CRC32C when `crc32c` is given) or, for `--verify readback` and
/// local destinations, a full read-back compared by CRC.
async fn verify_after_write(
    ctx: &Ctx,
    src: &Entry,
    path: &object_store::path::Path,
    crc: u64,
    crc32c: Option<u32>,
) -> Result<WriteCheck, CopyError> {
    // In-process destinations (folders, memory) are read back: it costs no requests.
    if ctx.opts.verify == Verify::Readback || ctx.dst.caps.in_process {
        return readback(ctx, src, path, crc).await;
    }
    ctx.counters.head.fetch_add(1, Relaxed);
    let cap = Capture::default();
    let head = cap
        .scope(ctx.dst.inner.get_opts(
            path,
            GetOptions {
                head: true,
                ..Default::default()
            },
        ))
        .await
        .map_err(store_err("checking the destination"))?;
    if head.meta.size != src.size {
        return Err(CopyError::Mismatch(format!(
            "the destination holds {} bytes, expected {}",
            head.meta.size, src.size
        )));
    }
    // GCS keeps a CRC32C of every object it stores (the only digest of one assembled from
    // multipart parts) and shows it on HEAD.
    if let Some(want) = crc32c
        && let Some(got) = cap.take().and_then(|h| h.whole_crc32c())
    {
        if got != want {
            return Err(CopyError::Mismatch(format!(
                "the destination's CRC32C is {got:08x}, the bytes sent hash to {want:08x}"
            )));
        }
        return Ok(WriteCheck::DestCrc32c);
    }
    // The CRC in metadata is the one moverctl wrote, so it says nothing about the stored bytes:
    // without a content ETag or a read-back, only the size is verified on this side.
    Ok(WriteCheck::DestSize)
}

/// Splits one streaming read of a whole object into parts, hashing each.
struct Splitter {
    stream: BoxStream<'static, Result<Bytes, CopyError>>,
    left: Option<Bytes>,
    /// The whole object's in-order digests, when the source's claims need them (the bytes pass
    /// here in order, so no part has to be kept for them).
    in_order: Option<InOrder>,
    /// Each part's MD5 is computed (Content-MD5, the multipart ETag); not on the checksum-only
    /// path.
    part_md5: bool,
}

impl Splitter {
    fn new(
        stream: BoxStream<'static, Result<Bytes, CopyError>>,
        in_order: Option<InOrder>,
        part_md5: bool,
    ) -> Splitter {
        Splitter {
            stream,
            left: None,
            in_order,
            part_md5,
        }
    }

    /// The next `len` bytes with their digests; with `last`, the stream must end there.
    async fn next_part(
        &mut self,
        ctx: &Ctx,
        len: u64,
        last: bool,
    ) -> Option<Result<(Vec<Bytes>, Digests), CopyError>> {
        let mut h = Hasher::new(self.part_md5);
        let mut chunks = Vec::new();
        let mut got = 0u64;
        while got < len {
            let mut c = match self.left.take() {
                Some(c) => c,
                None => match self.stream.next().await {
                    Some(Ok(c)) => c,
                    Some(Err(e)) => return Some(Err(e)),
                    None => break,
                },
            };
            if got + c.len() as u64 > len {
                self.left = Some(c.split_off((len - got) as usize));
            }
            got += c.len() as u64;
            ctx.counters.read_bytes.fetch_add(c.len() as u64, Relaxed);
            h.update(&c);
            if let Some(w) = &mut self.in_order {
                w.update(&c);
            }
            chunks.push(c);
        }
        let extra = last
            && (self.left.is_some()
                || matches!(self.stream.next().await, Some(Ok(c)) if !c.is_empty()));
        if got != len || extra {
            return Some(Err(CopyError::Mismatch(format!(
                "the source returned {} bytes where the listing promised {}",
                if extra { "more" } else { "fewer" },
                "its size"
            ))));
        }
        Some(Ok((chunks, h.finish())))
    }
}

/// The multipart upload to continue: the one the journal knows for this exact source version and
/// part size, with the parts it recorded (each is re-read and compared before reuse), or a new
/// one, journaled at once. An upload started for another version (or part size) is aborted,
/// never stitched.
pub(super) async fn resume_or_start(
    ctx: &Ctx,
    mp: &Arc<dyn object_store::multipart::MultipartStore>,
    path: &object_store::path::Path,
    src: &Entry,
    (part_size, parts): (u64, u64),
    (crc, meta): (Option<u64>, Option<&ObjectMeta>),
    checksum_parts: bool,
) -> Result<(String, Vec<Option<PartRecord>>), CopyError> {
    // Resume an upload the journal knows, if it is for this exact source version and part size.
    let mut done: Vec<Option<PartRecord>> = vec![None; parts as usize];
    let mut upload_id = None;
    let mut stale: Option<String> = None;
    if let Some(j) = &ctx.journal {
        let j = j.lock().expect("journal lock");
        if let Some(r) = j.get(&src.key)?
            && r.state == State::Copying
            && let Some(id) = r.upload_id
        {
            let journaled = j.parts(&src.key)?;
            // Parts sent with a CRC64 (the checksum-only path) are journaled with object_store's
            // part metadata (XML), plain ones with their ETag: an upload is continued only in
            // the way it was started (S3 refuses to mix them), and one with no part journaled
            // is started again (it costs one request).
            let same_way = !journaled.is_empty()
                && journaled
                    .iter()
                    .all(|p| p.content_id.starts_with('<') == checksum_parts);
            if r.size == src.size
                && checksum::same_etag(r.src_etag.as_deref(), src.e_tag.as_deref())
                && r.part_size == Some(part_size)
                && same_way
            {
                for p in journaled {
                    if let Some(slot) = done.get_mut(p.idx as usize) {
                        *slot = Some(p);
                    }
                }
                upload_id = Some(id);
            } else {
                // Started for another version of the source (or another part size): never stitch.
                stale = Some(id);
            }
        }
    }
    if let Some(old) = stale {
        let _ = mp.abort_multipart(path, &old).await;
        ctx.counters.aborted_uploads.fetch_add(1, Relaxed);
        if let Some(j) = &ctx.journal {
            j.lock().expect("journal lock").forget(&src.key)?;
        }
    }
    let id = match upload_id {
        Some(id) => id,
        None => {
            ctx.counters.put.fetch_add(1, Relaxed);
            let attrs = if ctx.dst.caps.metadata_on_multipart {
                metadata(ctx, src, crc, meta)
            } else {
                Attributes::new()
            };
            let tags = super::fidelity::source_tags(ctx, src, meta).await?;
            let id = mp
                .create_multipart_opts(
                    path,
                    PutMultipartOptions {
                        attributes: attrs,
                        tags,
                        ..Default::default()
                    },
                )
                .await
                .map_err(store_err("starting the multipart upload"))?;
            if let Some(j) = &ctx.journal {
                j.lock().expect("journal lock").put_all(&[ObjectRecord {
                    key: src.key.clone(),
                    size: src.size,
                    src_etag: src.e_tag.clone(),
                    src_mtime: Some(src.last_modified.to_rfc3339()),
                    state: State::Copying,
                    crc64: None,
                    md5: None,
                    dst_etag: None,
                    verified_by: None,
                    attempts: 1,
                    error: None,
                    upload_id: Some(id.clone()),
                    part_size: Some(part_size),
                }])?;
            }
            id
        }
    };

    Ok((id, done))
}

/// What every part upload of one object shares.
struct PartUpload<'a> {
    mp: &'a Arc<dyn object_store::multipart::MultipartStore>,
    path: &'a object_store::path::Path,
    id: &'a String,
    src: &'a Entry,
    /// Parts are hashed in order after upload (whole-object MD5), so their bytes are kept.
    keep_for_hash: bool,
    /// The destination answers each block with its MD5 (Azure): compared with what was sent.
    block_md5: bool,
    /// The destination keeps a CRC32C of the whole object (GCS): one is computed per part.
    want_crc32c: bool,
    /// Set when a block's answer carried no MD5 and no CRC64 (the object is then checked
    /// another way).
    blocks_unchecked: &'a std::sync::atomic::AtomicBool,
    /// Set when a block's answer carried its CRC64 but no MD5 (Azure answers a Put Block sent
    /// without Content-MD5 with the CRC64/NVME of the bytes it received).
    blocks_by_crc: &'a std::sync::atomic::AtomicBool,
    /// Each part's MD5 is computed and sent as Content-MD5 (not on the checksum-only path,
    /// where the parts carry their CRC64 instead).
    part_md5: bool,
    /// Checksum-only path: the CRC64-sending writer; parts go out on presigned URLs bound to the
    /// CRC64 computed as they were read where [`super::crc_url::applies`].
    crc_w: Option<&'a crate::store::CrcWriter>,
    /// What the reads record (Azure range checks, see [`super::range_md5`]).
    seen: Seen,
}

/// A part's bytes kept for the in-order hash, with the buffer permit they hold until hashed.
type KeptPart = (Vec<Bytes>, tokio::sync::OwnedSemaphorePermit);

/// Adds `bytes` to the in-flight progress of `key`.
pub(super) fn progress_in_flight(ctx: &Ctx, key: &str, bytes: u64) {
    add_in_flight(&ctx.counters, key, bytes);
}

/// [`progress_in_flight`] where only the counters are at hand (a `'static` stream).
pub(super) fn add_in_flight(counters: &Counters, key: &str, bytes: u64) {
    if let Some(e) = counters
        .in_flight
        .lock()
        .expect("progress lock")
        .get_mut(key)
    {
        e.0 += bytes;
    }
}

/// One part: read (from the shared splitter, `got`, or by its own ranged GET), reused when an
/// earlier attempt journaled the same bytes (`prior`), else uploaded (checked against the
/// block MD5 the store answers with, where it does) and journaled.
async fn upload_part(
    ctx: &Ctx,
    up: &PartUpload<'_>,
    idx: usize,
    range: Range<u64>,
    permit: tokio::sync::OwnedSemaphorePermit,
    got: Option<Result<(Vec<Bytes>, Digests), CopyError>>,
    prior: Option<PartRecord>,
) -> Result<(PartRecord, Option<KeptPart>, Option<u32>), CopyError> {
    let (chunks, d) = match got {
        Some(r) => r?,
        None => fetch(ctx, up.src, range, up.part_md5, Some(up.seen.clone())).await?,
    };
    let c32 = up
        .want_crc32c
        .then(|| checksum::crc32c_of(chunks.iter().map(|c| &c[..])));
    if let Some(p) = prior
        && p.size == d.bytes
        && p.crc64 == checksum::crc64_hex(d.crc64)
        && p.md5.as_deref().and_then(checksum::etag_md5) == d.md5
    {
        ctx.counters.resumed_parts.fetch_add(1, Relaxed);
        progress_in_flight(ctx, &up.src.key, d.bytes);
        let keep = up.keep_for_hash.then_some((chunks, permit));
        return Ok((p, keep, c32));
    }
    ctx.limits.take_bytes(d.bytes).await;
    let keep_chunks = up.keep_for_hash.then(|| chunks.clone());
    let by_url = match up.crc_w.filter(|w| super::crc_url::applies(ctx, w)) {
        Some(w) => {
            let chunks = chunks.clone();
            super::crc_url::put_part(ctx, w, up.path, up.id, idx, chunks, d.crc64).await?
        }
        None => None,
    };
    let cap = Capture::sending_md5(d.md5);
    let part_id = match by_url {
        Some(id) => id,
        None => {
            ctx.limits.take_request().await;
            ctx.counters.put.fetch_add(1, Relaxed);
            cap.scope(
                up.mp
                    .put_part(up.path, up.id, idx, PutPayload::from_iter(chunks)),
            )
            .await
            .map_err(store_err("uploading a part"))?
        }
    };
    if up.block_md5 {
        let answer = cap.take();
        let md5 = answer.as_ref().and_then(|h| h.whole_md5(false));
        let crc = answer.as_ref().and_then(DigestHeaders::block_crc64);
        // The block is not committed on a mismatch; the retry uploads this object again.
        match (md5, crc) {
            (Some(m), _) if Some(m) != d.md5 => {
                return Err(CopyError::Mismatch(format!(
                    "part {} was received with a different MD5 than sent",
                    idx + 1
                )));
            }
            (Some(_), _) => {}
            (None, Some(c)) if c != d.crc64 => {
                return Err(CopyError::Mismatch(format!(
                    "part {} was received with a different CRC64 than sent",
                    idx + 1
                )));
            }
            (None, Some(_)) => up.blocks_by_crc.store(true, Relaxed),
            (None, None) => up.blocks_unchecked.store(true, Relaxed),
        }
    }
    ctx.counters.written_bytes.fetch_add(d.bytes, Relaxed);
    progress_in_flight(ctx, &up.src.key, d.bytes);
    let rec = PartRecord {
        idx: idx as u32,
        content_id: part_id.content_id,
        crc64: checksum::crc64_hex(d.crc64),
        md5: d.md5.map(|m| checksum::hex(&m)),
        size: d.bytes,
    };
    if let Some(j) = &ctx.journal {
        j.lock()
            .expect("journal lock")
            .put_part(&up.src.key, &rec)?;
    }
    Ok((rec, keep_chunks.map(|c| (c, permit)), c32))
}

/// The parts of one object in order, folded into what completion and verification need.
struct Assembly {
    part_ids: Vec<PartId>,
    md5s: Vec<Option<[u8; 16]>>,
    crc64: u64,
    crc32c: Option<u32>,
    started: bool,
}

impl Assembly {
    fn with_capacity(parts: usize) -> Assembly {
        Assembly {
            part_ids: Vec::with_capacity(parts),
            md5s: Vec::with_capacity(parts),
            crc64: 0,
            crc32c: None,
            started: false,
        }
    }

    fn add(&mut self, rec: PartRecord, c32: Option<u32>) {
        let part_crc = u64::from_str_radix(&rec.crc64, 16).unwrap_or(0);
        self.crc64 = if self.started {
            checksum::crc64_combine(self.crc64, part_crc, rec.size)
        } else {
            part_crc
        };
        self.started = true;
        if let Some(p) = c32 {
            self.crc32c = Some(match self.crc32c {
                None => p,
                Some(c) => checksum::crc32c_combine(c, p, rec.size),
            });
        }
        self.md5s
            .push(rec.md5.as_deref().and_then(checksum::etag_md5));
        self.part_ids.push(PartId {
            content_id: rec.content_id,
        });
    }
}

async fn copy_multipart(
    ctx: &Ctx,
    src: &Entry,
    part_size: u64,
    parts: u64,
    known: Option<Claims>,
) -> Result<Outcome, CopyError> {
    let path = ctx.dst.path_of(&src.key).map_err(|e| CopyError::Store {
        what: "destination key",
        source: e.into(),
    })?;
    let ranges_of = |part_size: u64, parts: u64| -> Vec<Range<u64>> {
        (0..parts)
            .map(|i| i * part_size..((i + 1) * part_size).min(src.size))
            .collect()
    };
    let Some(mp) = ctx.dst.multipart.clone() else {
        return copy_multipart_streaming(ctx, src, &path, ranges_of(part_size, parts), known).await;
    };
    // The checksum-only path, unless a completed upload of this run showed no full-object CRC64.
    let crc_w = crc_writer(ctx).filter(|w| !w.multipart_unproven.load(Relaxed));
    let mp = crc_w.map_or(mp, |w| w.multipart.clone());
    // One HEAD per large object says what the source claims (parts are read by range, and a
    // ranged answer does not carry whole-object digests).
    let mut claims = discover_once(ctx, src, true, known).await?;
    if crc_w.is_some() {
        claims.prefer_crc();
    }
    let (part_size, parts) = match &claims.parts_etag {
        Some((p, _)) if keeps_source_layout(&ctx.opts.dst_limits, src.size, *p, part_size) => {
            (*p, src.size.div_ceil(*p))
        }
        _ => (part_size, parts),
    };
    let ranges = ranges_of(part_size, parts);
    // A source uploaded in parts of the size used here (a copy made by moverctl, or rclone with
    // the same chunk size): its multipart ETag is checked from the part MD5s computed anyway,
    // instead of hashing every byte a second time in order.
    let same_layout = claims
        .parts_etag
        .take_if(|(size, _)| *size == part_size)
        .map(|(_, etag)| etag);

    // Part MD5s are needed for Content-MD5 and the multipart ETag, and on the checksum-only
    // path only to recompute a same-layout source's multipart ETag (its only proof).
    let part_md5 = crc_w.is_none() || same_layout.is_some();
    let need_whole_md5 = claims.needs_in_order();
    // Parts come from one GET of the whole object, split as it streams (one request per object,
    // like a plain download), or, when reads would stall longer than a connection tolerates
    // (a --bwlimit far below the part size per 20 s), from one ranged GET each.
    // A local file is read part by part with positional reads (no request to pay for), each
    // part hashed on its read thread while the bytes are in that core's cache.
    let sequential = ctx.sequential_reads && ctx.src.local_root.is_none();
    // Where no HEAD showed the source's content headers and metadata, the first part is read
    // before the upload is created (S3 and GCS take them when it starts): its GET shows them,
    // and no request is added.
    let learn =
        claims.meta.is_none() && ctx.src.local_root.is_none() && ctx.dst.caps.keeps_metadata;
    // The reads record there what they learn (and Azure's range checks, see range_md5.rs).
    let seen: Seen = Arc::new(Mutex::new(claims.clone()));
    let reader = Arc::new(tokio::sync::Mutex::new(sequential.then(|| {
        Splitter::new(
            read_range(ctx, src, 0..src.size, Some(seen.clone())),
            need_whole_md5.then(|| InOrder::new(&claims)),
            part_md5,
        )
    })));
    let permit_for = |range: &Range<u64>| {
        let mib = range
            .end
            .saturating_sub(range.start)
            .div_ceil(1 << 20)
            .clamp(1, u64::from(ctx.buffer_mib)) as u32;
        ctx.buffers.clone().acquire_many_owned(mib)
    };
    let first = match ranges.first() {
        Some(range) if learn => {
            let permit = permit_for(range).await.expect("buffer semaphore open");
            let got = match reader.lock().await.as_mut() {
                Some(sp) => {
                    sp.next_part(ctx, range.end - range.start, range.end == src.size)
                        .await
                }
                None => Some(fetch(ctx, src, range.clone(), part_md5, Some(seen.clone())).await),
            };
            if let Some(Err(e)) = got {
                return Err(e);
            }
            Some((permit, got))
        }
        _ => None,
    };
    let meta = claims
        .meta
        .clone()
        .or_else(|| seen.lock().expect("claims lock").meta.clone());
    let (id, done) = resume_or_start(
        ctx,
        &mp,
        &path,
        src,
        (part_size, parts),
        (None, meta.as_ref()),
        crc_w.is_some(),
    )
    .await?;

    ctx.counters
        .in_flight
        .lock()
        .expect("progress lock")
        .insert(src.key.clone(), (0, src.size));
    let _in_flight = InFlightGuard(ctx.counters.clone(), src.key.clone());
    // Parts are fetched, hashed and uploaded concurrently, and consumed in order so that a
    // whole-object MD5 can be checked against the source when it offers one.
    // Parts journaled by an earlier attempt are read again and compared with what was journaled
    // before they are reused: a part that was read corrupt is uploaded again, never stitched in.
    // Azure answers each Put Block with the MD5 of the block it received.
    let block_md5 = ctx.dst.caps.answers_block_md5;
    // GCS keeps only a CRC32C for an object assembled from parts: it is compared after.
    let want_crc32c = ctx.dst.caps.keeps_crc32c;
    let blocks_unchecked = &std::sync::atomic::AtomicBool::new(false);
    let blocks_by_crc = &std::sync::atomic::AtomicBool::new(false);
    let first = Arc::new(Mutex::new(first));
    let reads = stream::iter(ranges.iter().cloned().enumerate())
        .then(|(idx, range)| {
            let reader = reader.clone();
            let pre = if idx == 0 {
                first.lock().expect("first part lock").take()
            } else {
                None
            };
            let permit = (pre.is_none()).then(|| permit_for(&range));
            async move {
                if let Some((permit, got)) = pre {
                    return (idx, range, permit, got);
                }
                let permit = permit
                    .expect("set when not read ahead")
                    .await
                    .expect("buffer semaphore open");
                let got = match reader.lock().await.as_mut() {
                    Some(sp) => {
                        sp.next_part(ctx, range.end - range.start, range.end == src.size)
                            .await
                    }
                    None => None,
                };
                (idx, range, permit, got)
            }
        })
        .boxed();
    let up = PartUpload {
        mp: &mp,
        path: &path,
        id: &id,
        src,
        keep_for_hash: need_whole_md5 && !sequential,
        block_md5,
        want_crc32c,
        blocks_unchecked,
        blocks_by_crc,
        part_md5,
        crc_w,
        seen: seen.clone(),
    };
    let part_futs = reads.map(|(idx, range, permit, got)| {
        upload_part(ctx, &up, idx, range, permit, got, done[idx].clone())
    });
    let mut stream = part_futs
        .boxed()
        .buffered(ctx.opts.part_concurrency.max(1))
        .boxed();
    let mut acc = Assembly::with_capacity(parts as usize);
    let mut whole = (need_whole_md5 && !sequential).then(|| InOrder::new(&claims));
    while let Some(r) = stream.next().await {
        let (rec, keep, c32) = match r {
            Ok(v) => v,
            Err(e) => {
                if matches!(e, CopyError::SourceChanged) {
                    // Parts of an old version are useless: start again. (A part that failed its
                    // own read was not uploaded; the parts that were stay for the retry, which
                    // re-reads and compares each before reusing it.)
                    drop(stream);
                    abandon(ctx, &mp, &path, &id, &src.key, false).await;
                }
                return Err(e);
            }
        };
        if let (Some(w), Some((chunks, _permit))) = (whole.as_mut(), keep) {
            for c in &chunks {
                w.update(c);
            }
        }
        acc.add(rec, c32);
    }
    drop(stream);
    let ordered = match whole {
        Some(w) => Some(w.finish()),
        None => reader
            .lock()
            .await
            .take()
            .and_then(|sp| sp.in_order)
            .map(InOrder::finish),
    };
    // A same-layout multipart ETag was taken out of the claims and is recomputed from the part
    // MD5s: put it back with that result, so that every claim is checked in one place.
    let (claims, ordered) = match same_layout {
        Some(etag) => {
            let mut o = ordered.unwrap_or_default();
            o.parts_etag = acc
                .md5s
                .iter()
                .cloned()
                .collect::<Option<Vec<_>>>()
                .map(|m| checksum::multipart_etag(&m));
            let c = Claims {
                parts_etag: Some((part_size, etag)),
                ..claims
            };
            (c, Some(o))
        }
        None => (claims, ordered),
    };
    let mut claims = claims;
    claims.add_ranges(&seen.lock().expect("claims lock"));
    let read_side = match check_source(ctx, src, &claims, acc.crc64, ordered.as_ref()).await {
        Ok(l) => l,
        Err(e) => {
            abandon(ctx, &mp, &path, &id, &src.key, false).await;
            return Err(e);
        }
    };
    let crc = acc.crc64;
    let blocks_checked = (block_md5 && !blocks_unchecked.load(Relaxed)).then(|| {
        if blocks_by_crc.load(Relaxed) {
            WriteCheck::DestBlockCrc64
        } else {
            WriteCheck::DestBlockMd5
        }
    });
    let (res, write_side) = complete_and_verify(
        ctx,
        &mp,
        &path,
        &id,
        src,
        acc.part_ids,
        &acc.md5s,
        (crc, acc.crc32c, stamps_crc(ctx, read_side)),
        blocks_checked,
        crc_w,
        meta.as_ref(),
    )
    .await?;
    Ok(Outcome {
        digests: Digests {
            crc64: crc,
            md5: None,
            bytes: src.size,
        },
        dst_etag: res.e_tag,
        verified_by: Verification::new(read_side, write_side),
        parts,
        upload_id: Some(id),
        part_size: Some(ranges[0].end - ranges[0].start),
        crc64_known: true,
        server_side: false,
    })
}

/// Completes a multipart upload whose parts are all uploaded and whose source side checked out,
/// then proves the destination holds what was sent, with the strongest check its answer allows:
/// Azure's block MD5s, the S3 multipart ETag (`md5(part md5s)-N`), the Content-MD5 the store
/// checked on every part (SSE-KMS/SSE-C objects), else a HEAD or read-back. A completed object
/// that fails the check is deleted and the upload forgotten.
#[allow(clippy::too_many_arguments)]
async fn complete_and_verify(
    ctx: &Ctx,
    mp: &Arc<dyn object_store::multipart::MultipartStore>,
    path: &object_store::path::Path,
    id: &str,
    src: &Entry,
    part_ids: Vec<PartId>,
    md5s: &[Option<[u8; 16]>],
    (crc, crc32c, stamp): (u64, Option<u32>, bool),
    blocks_checked: Option<WriteCheck>,
    crc_w: Option<&crate::store::CrcWriter>,
    meta: Option<&ObjectMeta>,
) -> Result<(object_store::PutResult, WriteCheck), CopyError> {
    let cap = Capture::default();
    // Azure: object_store's block-list commit cannot carry metadata, so the blocks are committed
    // with a SAS and moverctl's metadata (the object's CRC64 for later runs to check it by);
    // where no SAS can be signed or it is refused, as object_store does it, without metadata.
    let with_metadata = match &ctx.dst.azure {
        Some(az) if !ctx.dst.caps.metadata_on_multipart => {
            let ids: Vec<&str> = part_ids.iter().map(|p| p.content_id.as_str()).collect();
            let attrs = metadata(ctx, src, stamp.then_some(crc), meta);
            match super::from_url::commit(ctx, az, path, &ids, &attrs, None).await {
                Ok(r) => Some(Ok(r)),
                Err(super::server_side::Refused::Copy(e)) => Some(Err(e)),
                Err(super::server_side::Refused::Off(_)) => None,
            }
        }
        _ => None,
    };
    let res = match with_metadata {
        Some(r) => r,
        None => {
            ctx.counters.put.fetch_add(1, Relaxed);
            cap.scope(mp.complete_multipart(path, &id.to_string(), part_ids))
                .await
                .map_err(store_err("completing the multipart upload"))
        }
    };
    let res = match res {
        Ok(r) => r,
        Err(e) => {
            // The upload's state is unknown now; the next attempt starts a new one.
            abandon(ctx, mp, path, id, &src.key, false).await;
            return Err(e);
        }
    };
    if let Some(w) = crc_w {
        // Every part carried its CRC64, checked on arrival; the upload was created with the
        // CRC64NVME algorithm, so the store keeps a full-object CRC64 of what it assembled.
        let proof = match dest_stored_crc64(ctx, path, &src.key).await {
            Ok(Some(c)) if c == crc => Ok(WriteCheck::DestChecksum),
            Ok(Some(c)) => Err(CopyError::Mismatch(format!(
                "the destination keeps the CRC64 {} for the parts sent, which hash to {}",
                checksum::crc64_hex(c),
                checksum::crc64_hex(crc)
            ))),
            Ok(None) => {
                if !w.multipart_unproven.swap(true, Relaxed) {
                    tracing::warn!(
                        "{}: a completed multipart upload shows no full-object CRC64 on HEAD; \
                         this object is read back, and the rest of the run verifies multipart \
                         copies by MD5",
                        ctx.dst.shown()
                    );
                }
                readback(ctx, src, path, crc).await
            }
            Err(e) => Err(e),
        };
        return match proof {
            Ok(w) => Ok((res, w)),
            Err(e) => {
                if matches!(e, CopyError::Mismatch(_)) {
                    abandon(ctx, mp, path, id, &src.key, true).await;
                }
                Err(e)
            }
        };
    }
    let mut write_side = None;
    if let Some(w) = blocks_checked
        && ctx.opts.verify != Verify::Readback
    {
        write_side = Some(w);
    }
    let answer = cap.take();
    let comparable = etag_can_be_md5(&ctx.dst.caps, answer.as_ref(), true);
    let all_md5s = md5s.iter().cloned().collect::<Option<Vec<_>>>();
    if !comparable
        && ctx.dst.caps.multipart_etag_is_md5_of_parts
        && ctx.dst.caps.checks_content_md5
        && all_md5s.is_some()
        && ctx.opts.verify != Verify::Readback
    {
        // Every part went with a Content-MD5 the store checked; the ETag of an SSE-KMS or SSE-C
        // object says nothing more.
        write_side = Some(WriteCheck::DestContentMd5);
    }
    if let (true, Some(etag), Some(all)) = (comparable, &res.e_tag, all_md5s) {
        let e = checksum::etag_norm(etag);
        if e.contains('-') && e.ends_with(&format!("-{}", md5s.len())) {
            if e != checksum::multipart_etag(&all) {
                abandon(ctx, mp, path, id, &src.key, true).await;
                return Err(CopyError::Mismatch(
                    "the destination's multipart ETag differs from the parts sent".into(),
                ));
            }
            if ctx.opts.verify != Verify::Readback {
                write_side = Some(WriteCheck::DestMultipartEtag);
            }
        }
    }
    let write_side = match write_side {
        Some(w) => w,
        None => match verify_after_write(ctx, src, path, crc, crc32c).await {
            Ok(w) => w,
            Err(e) => {
                if matches!(e, CopyError::Mismatch(_)) {
                    abandon(ctx, mp, path, id, &src.key, true).await;
                }
                return Err(e);
            }
        },
    };
    Ok((res, write_side))
}

/// Whether a multipart source's own part size `source_part` is used for the copy instead of
/// `planned`: its multipart ETag is then checked from the part MD5s the upload computes anyway
/// (one MD5 pass instead of two), and the copy's ETag is the source's. Only where the
/// destination's part rules allow that size, for parts smaller than planned (larger ones would
/// hold more of the buffer budget per part), and at most four times the part PUTs of the planned
/// size: a corpus uploaded in 5 MiB parts copied in 5 MiB parts would cost 13x the part PUTs of
/// 64 MiB parts, at $0.005 per 1,000 PUTs about $0.001 per GiB, more than the CPU of the second
/// MD5 pass it saves.
pub(super) fn keeps_source_layout(
    l: &crate::catalog::schema::Limits,
    size: u64,
    source_part: u64,
    planned: u64,
) -> bool {
    source_part < planned
        && source_part.saturating_mul(4) >= planned
        && source_part >= l.min_part_bytes
        && source_part <= l.max_part_bytes
        && size.div_ceil(source_part.max(1)) <= u64::from(l.max_parts)
}

/// Stores without a low-level multipart API (local folders): parts in order through
/// `put_multipart`, which only makes the object visible when it completes. The source's claims
/// (its MD5 or multipart ETag, stored CRCs, moverctl's CRC64) are learned with one HEAD and
/// checked over the bytes in order before the upload completes: a read that went wrong never
/// becomes visible under the final name.
async fn copy_multipart_streaming(
    ctx: &Ctx,
    src: &Entry,
    path: &object_store::path::Path,
    ranges: Vec<Range<u64>>,
    known: Option<Claims>,
) -> Result<Outcome, CopyError> {
    let mut claims = discover_once(ctx, src, true, known).await?;
    let mut in_order = claims.needs_in_order().then(|| InOrder::new(&claims));
    let seen: Seen = Arc::new(Mutex::new(claims.clone()));
    let mut up = ctx
        .dst
        .inner
        .put_multipart_opts(
            path,
            PutMultipartOptions {
                attributes: metadata(ctx, src, None, claims.meta.as_ref()),
                ..Default::default()
            },
        )
        .await
        .map_err(store_err("starting the upload"))?;
    let mut crc: Option<u64> = None;
    for range in &ranges {
        let res = fetch(ctx, src, range.clone(), false, Some(seen.clone())).await;
        let (chunks, d) = match res {
            Ok(v) => v,
            Err(e) => {
                let _ = up.abort().await;
                return Err(e);
            }
        };
        if let Some(h) = &mut in_order {
            for c in &chunks {
                h.update(c);
            }
        }
        crc = Some(match crc {
            None => d.crc64,
            Some(c) => checksum::crc64_combine(c, d.crc64, d.bytes),
        });
        ctx.limits.take_bytes(d.bytes).await;
        ctx.counters.put.fetch_add(1, Relaxed);
        if let Err(e) = up.put_part(PutPayload::from_iter(chunks)).await {
            let _ = up.abort().await;
            return Err(store_err("writing a part")(e));
        }
        ctx.counters.written_bytes.fetch_add(d.bytes, Relaxed);
    }
    let crc = crc.unwrap_or(0);
    let ordered = in_order.map(InOrder::finish);
    claims.add_ranges(&seen.lock().expect("claims lock"));
    let read_side = match check_source(ctx, src, &claims, crc, ordered.as_ref()).await {
        Ok(l) => l,
        Err(e) => {
            let _ = up.abort().await;
            return Err(e);
        }
    };
    let res = up
        .complete()
        .await
        .map_err(store_err("completing the upload"))?;
    let write_side = match verify_after_write(ctx, src, path, crc, None).await {
        Ok(w) => w,
        Err(e) => {
            if matches!(e, CopyError::Mismatch(_)) {
                let _ = ctx.dst.inner.delete(path).await;
            }
            return Err(e);
        }
    };
    Ok(Outcome {
        digests: Digests {
            crc64: crc,
            md5: None,
            bytes: src.size,
        },
        dst_etag: res.e_tag,
        verified_by: Verification::new(read_side, write_side),
        parts: ranges.len() as u64,
        upload_id: None,
        part_size: Some(ranges[0].end - ranges[0].start),
        crc64_known: true,
        server_side: false,
    })
}

/// Removes a large object from the in-flight progress map however its copy ends.
pub(super) struct InFlightGuard(pub(super) Arc<super::Counters>, pub(super) String);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if let Ok(mut m) = self.0.in_flight.lock() {
            m.remove(&self.1);
        }
    }
}

/// Give up on a multipart upload: abort it, forget its journal row and parts, and (when it was
/// completed but failed verification) delete the object, so neither a retry nor a later run can
/// build on it or mistake it for a good copy.
pub(super) async fn abandon(
    ctx: &Ctx,
    mp: &Arc<dyn object_store::multipart::MultipartStore>,
    path: &object_store::path::Path,
    id: &str,
    key: &str,
    delete_object: bool,
) {
    let _ = mp.abort_multipart(path, &id.to_string()).await;
    ctx.counters.aborted_uploads.fetch_add(1, Relaxed);
    if delete_object {
        let _ = ctx.dst.inner.delete(path).await;
    }
    if let Some(j) = &ctx.journal {
        let _ = j.lock().expect("journal lock").forget(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_read_blocks_are_used_again_up_to_a_bound() {
        let b = Block::take();
        let at = b.bytes.as_ptr();
        drop(Bytes::from_owner(b));
        assert!(
            FREE_BLOCKS.lock().unwrap().iter().any(|v| v.as_ptr() == at),
            "a dropped block is kept for the next read"
        );
        let many: Vec<Block> = (0..Block::KEEP + 8).map(|_| Block::take()).collect();
        drop(many);
        assert!(FREE_BLOCKS.lock().unwrap().len() <= Block::KEEP);
    }

    fn generic(msg: &str) -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: msg.to_string().into(),
        }
    }

    /// A store's answer becomes a copy error by its kind, and the copy error keeps the kind.
    #[test]
    fn a_source_layout_is_kept_only_where_it_is_cheap_and_allowed() {
        let l = crate::catalog::Catalog::embedded()
            .unwrap()
            .get("aws")
            .unwrap()
            .file
            .limits
            .clone();
        const M: u64 = 1 << 20;
        // 16 and 32 MiB parts under a 64 MiB plan: kept (at most 4x the part PUTs).
        assert!(keeps_source_layout(&l, 10 << 30, 16 * M, 64 * M));
        assert!(keeps_source_layout(&l, 10 << 30, 32 * M, 64 * M));
        // 8 MiB (8x the PUTs), 5 MiB (rclone's default chunk): not kept.
        assert!(!keeps_source_layout(&l, 10 << 30, 8 * M, 64 * M));
        assert!(!keeps_source_layout(&l, 10 << 30, 5 * M, 64 * M));
        // Larger than planned, or the same: nothing to gain.
        assert!(!keeps_source_layout(&l, 10 << 30, 128 * M, 64 * M));
        assert!(!keeps_source_layout(&l, 10 << 30, 64 * M, 64 * M));
        // Below the destination's minimum part size, or more parts than it allows.
        assert!(!keeps_source_layout(&l, 10 << 30, 4 * M, 16 * M));
        assert!(!keeps_source_layout(&l, 400 << 30, 32 * M, 64 * M));
    }

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
