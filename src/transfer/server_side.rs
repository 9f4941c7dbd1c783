//! Server-side copy: when source and destination are two places of one S3 service reached with
//! the same credentials, the destination copies the bytes itself (CopyObject, UploadPartCopy) and
//! nothing but requests passes through this machine.
//!
//! A server-side copy is only made where its result can be proven without reading the bytes:
//!
//! | the source | the copy | the proof (`read+write` label) |
//! |---|---|---|
//! | single-part, MD5 ETag, ≤ the destination's single-PUT limit | one CopyObject | the copy's ETag is that MD5 (`source-md5+dest-copy-etag`) |
//! | multipart, `md5(part md5s)-N` ETag, up to the single-PUT limit, on a service that keeps the parts of a copied object (learned from the first answer) | one CopyObject | the copy's ETag is the source's multipart ETag (`source-parts-etag+dest-copy-etag`) |
//! | multipart with a full-object CRC64 the service keeps, up to the single-PUT limit, where that copy's ETag is another (Garage computes a new MD5 for such a copy; learned from the first answer) | one CopyObject, kept | the CRC64 the service keeps for the copy equals the source's, each read by a HEAD (`source-checksum+dest-copy-checksum`) |
//! | multipart, `md5(part md5s)-N` ETag, regular layout the destination accepts | UploadPartCopy of the same ranges | every part's ETag, and the completed object's ETag, compose to the source's (`source-parts-etag+dest-copy-etag`) |
//!
//! Each copy is pinned to the listed source ETag (`x-amz-copy-source-if-match`), so a source
//! changed since it was listed fails as it would in a streaming copy. Anything else (no content
//! ETag, `--verify readback`, a service that refuses the call or answers that it encrypts with
//! SSE-KMS or SSE-C, which turns server-side copy off for the run) is streamed
//! through this machine as before, and so is an object whose server-side result does not prove
//! out: the wrong copy is deleted first. Multipart copies are journaled per part like streaming
//! ones, so a killed run resumes at part level.
//!
//! The requests are presigned with the destination's credentials (object_store's `Signer`, the
//! copy headers bound to the signature) and sent with reqwest; their URLs carry a signature and
//! are never printed. `--tpslimit` paces them; `--bwlimit` does not apply (no bytes flow here).

use super::Verify;
use super::claims::Claims;
use super::copy::attributes::metadata;
use super::copy::context::{
    CopyError, Ctx, Outcome, ServerSide, progress_in_flight, s3_answer_error, store_err,
};
use super::copy::head::{dest_stored_crc64, raw_head};
use super::copy::resume::{abandon, resume_or_start};
use super::copy::source::discover_for;
use super::fidelity::ObjectMeta;
use super::verification::{ReadCheck, Verification, WriteCheck};
use crate::checksum::{self, Digests};
use crate::journal::PartRecord;
use crate::store::Store;
use crate::store::list::Entry;
use crate::store::location::Location;
use crate::store::presign::{self, add_metadata, xml_field};
use crate::store::retry::retryable_status;
use futures::stream::{self, StreamExt};
use object_store::ObjectStoreExt;
use object_store::multipart::PartId;
use object_store::signer::{HeaderMap, HeaderName, HeaderValue, Method, SignedUrlOptions, Signer};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU8};
use std::time::Duration;

const WHOLE_UNKNOWN: u8 = 0;
const WHOLE_KEEPS: u8 = 1;
const WHOLE_REWRITES: u8 = 2;

/// The service part of a store's identity (`s3 http://127.0.0.1:3900`): two stores with the same
/// one are the same S3 service.
fn service(identity: &str) -> Option<&str> {
    identity.split_once(" bucket ").map(|(s, _)| s)
}

/// Whether two store identities ([`Store::identity`]) are S3 locations of one service.
pub fn one_service(a: &str, b: &str) -> bool {
    a.starts_with("s3 ") && service(a).is_some() && service(a) == service(b)
}

impl ServerSide {
    /// Server-side copy is possible between `src` and `dst` when both are S3 locations of one
    /// service (the same endpoint), signed with the same access key, and neither is anonymous.
    pub async fn between(src: &Store, dst: &Store) -> Option<ServerSide> {
        let (Some(s), Some(d)) = (src.as_s3(), dst.as_s3()) else {
            return None;
        };
        if src.is_anonymous() || dst.is_anonymous() || src.is_local() {
            return None;
        }
        if !one_service(&src.identity, &dst.identity) {
            return None;
        }
        let a = s.credentials().get_credential().await.ok()?;
        let b = d.credentials().get_credential().await.ok()?;
        if a.key_id != b.key_id {
            return None;
        }
        let Location::S3 { bucket, .. } = &src.location else {
            return None;
        };
        Some(ServerSide {
            src_bucket: bucket.clone(),
            off: AtomicBool::new(false),
            whole: AtomicU8::new(WHOLE_UNKNOWN),
            whole_crc: AtomicU8::new(WHOLE_UNKNOWN),
        })
    }
}

/// How one object is copied on the server.
enum Mode {
    /// One CopyObject; the copy's ETag must be this MD5.
    Single([u8; 16]),
    /// UploadPartCopy of the source's own parts; the result's ETag must be the source's.
    Parts { part: u64, etag: String },
}

/// Copies `src` on the server and proves it, or `Ok(None)`: this object (or this run) is to be
/// streamed instead.
pub(super) async fn copy(
    ctx: &Ctx,
    ss: &ServerSide,
    src: &Entry,
) -> Result<Option<Outcome>, CopyError> {
    if ss.off.load(Relaxed) || ctx.opts.verify == Verify::Readback || ctx.dst.is_single() {
        return Ok(None);
    }
    let (Some(dst_s3), Some(e_tag)) = (ctx.dst.as_s3(), &src.e_tag) else {
        return Ok(None);
    };
    let mut claims = discover_for(ctx, src, false, false).await?;
    let Some(mode) = mode_for(ctx, src, &claims) else {
        return Ok(None);
    };
    if claims.meta.is_none() && ctx.dst.caps.keeps_metadata {
        // The copy replaces the metadata (to add moverctl's own keys), so it must know the
        // source's: one HEAD (a multipart source's HEAD of part 1 showed them already). Where
        // it fails the object is streamed, and its GET shows them.
        let Some(s3) = ctx.src.as_s3() else {
            return Ok(None);
        };
        match raw_head(ctx, s3, src, None).await {
            Ok(Some(h)) => {
                if let Some(v) = h.get(&format!("x-amz-meta-{}", checksum::META_CRC64)) {
                    claims.add_meta_crc64(v);
                }
                claims.meta = Some(ObjectMeta::of_headers(&h));
            }
            _ => return Ok(None),
        }
    }
    let path = ctx.dst.path_of(&src.key).map_err(|e| CopyError::Store {
        what: "destination key",
        source: e.into(),
    })?;
    let src_path = ctx.src.path_of(&src.key).map_err(|e| CopyError::Store {
        what: "source key",
        source: e.into(),
    })?;
    let req = Request {
        ctx,
        s3: dst_s3,
        path: &path,
        source: format!("{}/{}", ss.src_bucket, encode_key(src_path.as_ref())),
        if_match: e_tag.clone(),
        meta: claims.meta.clone(),
    };
    // moverctl's metadata goes with the copy, as with a streamed one (the CRC64 it carries is
    // the source's own, when the source states one).
    let crc = claims.crc64_meta.or(claims.crc64_stored);
    let res = match &mode {
        Mode::Single(md5) => single(&req, src, crc, *md5).await,
        Mode::Parts { part, etag } => {
            // One CopyObject first, where the service may keep the parts (or the source's
            // stored CRC64) and an upload of this object is not being resumed; part by part
            // otherwise, or when that copy proves out by neither. What the service does is
            // learned per kind: sources with a stored full-object CRC64, and the others.
            let stored = claims.crc64_stored.or(claims.crc64_part_hint);
            let state = match stored {
                Some(_) => &ss.whole_crc,
                None => &ss.whole,
            };
            let try_whole = src.size <= ctx.opts.dst_limits.max_single_put_bytes
                && state.load(Relaxed) != WHOLE_REWRITES
                && !resuming(ctx, src)?;
            match if try_whole {
                let w = Whole {
                    state,
                    want: etag,
                    stored,
                };
                whole(&req, &w, src, crc).await
            } else {
                Ok(None)
            } {
                Ok(None) => parts(&req, src, crc, *part, etag).await,
                done => done,
            }
        }
    };
    match res {
        Ok(Some(mut out)) => {
            if out.verified_by.write != WriteCheck::DestCopyChecksum {
                out.verified_by = Verification::new(
                    match mode {
                        Mode::Single(_) => ReadCheck::SourceMd5,
                        Mode::Parts { .. } => ReadCheck::SourcePartsEtag,
                    },
                    WriteCheck::DestCopyEtag,
                );
            }
            ctx.counters.server_side_objects.fetch_add(1, Relaxed);
            ctx.counters.server_side_bytes.fetch_add(src.size, Relaxed);
            ctx.counters
                .copied_in_service_bytes
                .fetch_add(src.size, Relaxed);
            Ok(Some(out))
        }
        Ok(None) => Ok(None),
        Err(Refused::Off(why)) => {
            if !ss.off.swap(true, Relaxed) {
                tracing::warn!(
                    target: "moverctl::copy",
                    "server-side copy refused ({why}); this run streams every object through this machine"
                );
            }
            Ok(None)
        }
        Err(Refused::Copy(e)) => Err(e),
    }
}

/// Whether the journal holds a multipart upload of this object in progress (a copy killed
/// part way): it is resumed part by part, not copied anew.
fn resuming(ctx: &Ctx, src: &Entry) -> Result<bool, CopyError> {
    let Some(j) = &ctx.journal else {
        return Ok(false);
    };
    let r = j.lock().expect("journal lock").get(&src.key)?;
    Ok(r.is_some_and(|r| r.state == crate::journal::State::Copying && r.upload_id.is_some()))
}

/// Refuses server-side copies for the run when an answer says the destination encrypts with
/// SSE-KMS or SSE-C: the ETags of such objects are not MD5s, so no copy could be proven (each
/// object would cost a copy and a delete before streaming anyway).
fn refuse_if_encrypted(answer: &Answer) -> Result<(), Refused> {
    if answer.etag_can_be_md5 {
        return Ok(());
    }
    Err(Refused::Off(
        "the destination encrypts with SSE-KMS or SSE-C, whose ETags prove nothing".into(),
    ))
}

/// The proof this object's server-side copy can have, or None (stream it).
fn mode_for(ctx: &Ctx, src: &Entry, claims: &Claims) -> Option<Mode> {
    let limits = &ctx.opts.dst_limits;
    if let Some((part, etag)) = &claims.parts_etag {
        let n = src.size.div_ceil((*part).max(1));
        let accepted = *part >= limits.min_part_bytes
            && *part <= limits.max_part_bytes
            && n <= u64::from(limits.max_parts)
            && ctx.dst.caps.multipart_etag_is_md5_of_parts
            && ctx.dst.multipart.is_some();
        // An irregular layout whose part count happens to agree is not ruled out with a HEAD
        // of the last part here: its part copies would not compose to the source's ETag, and
        // the object is then streamed (a wasted attempt costs requests, never bytes).
        return accepted.then(|| Mode::Parts {
            part: *part,
            etag: etag.clone(),
        });
    }
    if let Some(md5) = claims.md5
        && src.size <= limits.max_single_put_bytes
        && ctx.dst.caps.put_etag_is_md5
    {
        return Some(Mode::Single(md5));
    }
    None
}

/// Why a server-side request did not give a result.
pub(super) enum Refused {
    /// The service does not do server-side copies here (or denies them): stream from now on.
    Off(String),
    /// An error of this object, as a streaming copy would have it.
    Copy(CopyError),
}

impl From<CopyError> for Refused {
    fn from(e: CopyError) -> Refused {
        Refused::Copy(e)
    }
}

/// What every request of one object's server-side copy shares.
struct Request<'a> {
    ctx: &'a Ctx,
    s3: &'a object_store::aws::AmazonS3,
    path: &'a object_store::path::Path,
    /// `bucket/key`, the key percent-encoded.
    source: String,
    if_match: String,
    /// The source's content headers and user metadata, written with the copy.
    meta: Option<ObjectMeta>,
}

/// One CopyObject.
async fn single(
    req: &Request<'_>,
    src: &Entry,
    crc: Option<u64>,
    md5: [u8; 16],
) -> Result<Option<Outcome>, Refused> {
    let ctx = req.ctx;
    let mut headers = copy_headers(req, None)?;
    headers.insert(
        HeaderName::from_static("x-amz-metadata-directive"),
        HeaderValue::from_static("REPLACE"),
    );
    add_metadata(&mut headers, &metadata(ctx, src, crc, req.meta.as_ref()));
    let answer = send(req, &[], headers, "copying on the server (CopyObject)").await?;
    if let Err(off) = refuse_if_encrypted(&answer) {
        let _ = ctx.dst.inner.delete(req.path).await;
        return Err(off);
    }
    let etag = copy_result_etag(&answer.body).map_err(Refused::Copy)?;
    if checksum::etag_md5(&etag) != Some(md5) {
        // The copy is not what the source's MD5 says (or its ETag is no MD5): it must not stay
        // where a later run could take it for a verified copy.
        let _ = ctx.dst.inner.delete(req.path).await;
        // A source encrypted with SSE-KMS or SSE-C has ETags that are no MD5s (one HEAD tells):
        // no copy of this run could be proven by them.
        if let Some(s3) = ctx.src.as_s3()
            && let Ok(Some(h)) = raw_head(ctx, s3, src, None).await
            && !h.s3_etag_can_be_md5()
        {
            return Err(Refused::Off(
                "the source is encrypted with SSE-KMS or SSE-C, whose ETags prove nothing".into(),
            ));
        }
        tracing::warn!(
            target: "moverctl::copy",
            key = %src.key,
            "the server-side copy's ETag is not the source's MD5; copying it through this machine instead"
        );
        return Ok(None);
    }
    Ok(Some(outcome(
        src,
        crc,
        Some(md5),
        Some(etag),
        0,
        None,
        None,
    )))
}

/// What a whole CopyObject of a multipart source must show: the source's multipart ETag, or
/// (when the source keeps one) its full-object CRC64; and where the run learns which it got.
struct Whole<'a> {
    state: &'a AtomicU8,
    want: &'a str,
    stored: Option<u64>,
}

/// One CopyObject of a multipart source, proven when the answer's ETag is the source's own
/// multipart ETag (the service kept its parts), or else when the source keeps a full-object CRC64
/// and the copy keeps the same ([`proven_by_checksum`]). Otherwise the copy is deleted, the run
/// learns that this service rewrites such copies, and `Ok(None)` sends the object to part copies.
async fn whole(
    req: &Request<'_>,
    w: &Whole<'_>,
    src: &Entry,
    crc: Option<u64>,
) -> Result<Option<Outcome>, Refused> {
    let ctx = req.ctx;
    let mut headers = copy_headers(req, None)?;
    headers.insert(
        HeaderName::from_static("x-amz-metadata-directive"),
        HeaderValue::from_static("REPLACE"),
    );
    add_metadata(&mut headers, &metadata(ctx, src, crc, req.meta.as_ref()));
    let answer = send(
        req,
        &[],
        headers,
        "copying a multipart object on the server (CopyObject)",
    )
    .await?;
    if let Err(off) = refuse_if_encrypted(&answer) {
        let _ = ctx.dst.inner.delete(req.path).await;
        return Err(off);
    }
    let etag = copy_result_etag(&answer.body).map_err(Refused::Copy)?;
    if etag == w.want {
        w.state.store(WHOLE_KEEPS, Relaxed);
        return Ok(Some(outcome(src, crc, None, Some(etag), 0, None, None)));
    }
    if let Some(stored) = w.stored
        && proven_by_checksum(ctx, src, req.path, stored).await
    {
        w.state.store(WHOLE_KEEPS, Relaxed);
        let mut out = outcome(src, Some(stored), None, Some(etag), 0, None, None);
        out.verified_by =
            Verification::new(ReadCheck::SourceChecksum, WriteCheck::DestCopyChecksum);
        return Ok(Some(out));
    }
    let _ = ctx.dst.inner.delete(req.path).await;
    if w.state.swap(WHOLE_REWRITES, Relaxed) != WHOLE_REWRITES {
        tracing::info!(
            target: "moverctl::copy",
            key = %src.key,
            "a CopyObject of a multipart object kept neither its ETag nor a checksum that proves \
             it here; such objects are copied on the server part by part"
        );
    }
    Ok(None)
}

/// Whether the copy at `path` keeps the full-object CRC64 the source keeps: the source's (a HEAD
/// of the whole object pinned to its listed ETag; a HEAD of part 1 showed `stored` already) and
/// the destination's (a HEAD of the copy) are both `stored`. A HEAD that fails proves nothing.
async fn proven_by_checksum(
    ctx: &Ctx,
    src: &Entry,
    path: &object_store::path::Path,
    stored: u64,
) -> bool {
    let Some(s3) = ctx.src.as_s3() else {
        return false;
    };
    let source = match raw_head(ctx, s3, src, None).await {
        Ok(Some(h)) => h.full_object_crc64(),
        _ => None,
    };
    if source != Some(stored) {
        return false;
    }
    matches!(dest_stored_crc64(ctx, path, &src.key).await, Ok(Some(c)) if c == stored)
}

/// UploadPartCopy of the source's own ranges, resumable per part, then completion; the result
/// must have the source's multipart ETag.
async fn parts(
    req: &Request<'_>,
    src: &Entry,
    crc: Option<u64>,
    part: u64,
    want: &str,
) -> Result<Option<Outcome>, Refused> {
    let ctx = req.ctx;
    let mp = ctx.dst.multipart.as_ref().expect("checked in mode_for");
    let n = src.size.div_ceil(part);
    let (id, done) = resume_or_start(
        ctx,
        mp,
        req.path,
        src,
        (part, n),
        (crc, req.meta.as_ref()),
        false,
    )
    .await?;
    let copies = stream::iter(done.into_iter().enumerate().map(|(idx, prior)| {
        let id = id.clone();
        async move {
            let start = idx as u64 * part;
            let end = (start + part).min(src.size);
            if let Some(p) = prior
                && p.size == end - start
                && p.md5.as_deref().and_then(checksum::etag_md5).is_some()
            {
                ctx.counters.resumed_parts.fetch_add(1, Relaxed);
                progress_in_flight(ctx, &src.key, p.size);
                return Ok::<PartRecord, Refused>(p);
            }
            let headers = copy_headers(req, Some(start..end))?;
            let query = [
                ("partNumber".to_string(), (idx + 1).to_string()),
                ("uploadId".to_string(), id.clone()),
            ];
            let answer = send(
                req,
                &query,
                headers,
                "copying a part on the server (UploadPartCopy)",
            )
            .await?;
            refuse_if_encrypted(&answer)?;
            let etag = copy_result_etag(&answer.body).map_err(Refused::Copy)?;
            let rec = PartRecord {
                idx: idx as u32,
                content_id: etag.clone(),
                // Unknown: the bytes never passed here (a streaming resume re-reads such a part).
                crc64: String::new(),
                md5: checksum::etag_md5(&etag).map(|m| checksum::hex(&m)),
                size: end - start,
            };
            journal_part(ctx, &src.key, rec)
        }
    }))
    .buffered(ctx.opts.part_concurrency.max(1))
    .collect::<Vec<_>>()
    .await;
    let recs = gather(ctx, mp, req.path, &id, &src.key, copies).await?;
    let composed = part_md5s(&recs).map(|m| checksum::multipart_etag(&m));
    if composed.as_deref() != Some(want) {
        // A part the server copied is not the source's part (or its ETag is no MD5).
        abandon(ctx, mp, req.path, &id, &src.key, false).await;
        tracing::warn!(
            target: "moverctl::copy",
            key = %src.key,
            "the server-side part copies do not compose to the source's ETag; copying it through this machine instead"
        );
        return Ok(None);
    }
    ctx.limits.take_request().await;
    ctx.counters.put.fetch_add(1, Relaxed);
    let ids = recs
        .iter()
        .map(|p| PartId {
            content_id: p.content_id.clone(),
        })
        .collect();
    let res = match mp.complete_multipart(req.path, &id, ids).await {
        Ok(r) => r,
        Err(e) => {
            abandon(ctx, mp, req.path, &id, &src.key, false).await;
            return Err(Refused::Copy(store_err("completing the multipart copy")(e)));
        }
    };
    if res.e_tag.as_deref().map(checksum::etag_norm).as_deref() != Some(want) {
        abandon(ctx, mp, req.path, &id, &src.key, true).await;
        return Err(Refused::Copy(CopyError::Mismatch(
            "the destination's multipart ETag after a server-side copy differs from the source's"
                .into(),
        )));
    }
    Ok(Some(outcome(
        src,
        crc,
        None,
        res.e_tag,
        n,
        Some(id),
        Some(part),
    )))
}

/// Journals a part copied on the server (or fetched by it) and counts it as in flight.
pub(super) fn journal_part(ctx: &Ctx, key: &str, rec: PartRecord) -> Result<PartRecord, Refused> {
    if let Some(j) = &ctx.journal {
        j.lock()
            .expect("journal lock")
            .put_part(key, &rec)
            .map_err(CopyError::from)?;
    }
    progress_in_flight(ctx, key, rec.size);
    Ok(rec)
}

/// The parts of one object's server-side copy, in order, or the first failure. A refusal turns
/// the run to streaming, so its upload is abandoned; any other error keeps what was journaled,
/// for the next attempt to resume after.
pub(super) async fn gather(
    ctx: &Ctx,
    mp: &std::sync::Arc<dyn object_store::multipart::MultipartStore>,
    path: &object_store::path::Path,
    id: &str,
    key: &str,
    results: Vec<Result<PartRecord, Refused>>,
) -> Result<Vec<PartRecord>, Refused> {
    let mut recs = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Ok(p) => recs.push(p),
            Err(Refused::Off(why)) => {
                abandon(ctx, mp, path, id, key, false).await;
                return Err(Refused::Off(why));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(recs)
}

/// Every part's MD5, when each has one.
pub(super) fn part_md5s(recs: &[PartRecord]) -> Option<Vec<[u8; 16]>> {
    recs.iter()
        .map(|p| p.md5.as_deref().and_then(checksum::etag_md5))
        .collect()
}

pub(super) fn outcome(
    src: &Entry,
    crc: Option<u64>,
    md5: Option<[u8; 16]>,
    dst_etag: Option<String>,
    parts: u64,
    upload_id: Option<String>,
    part_size: Option<u64>,
) -> Outcome {
    Outcome {
        digests: Digests {
            crc64: crc.unwrap_or(0),
            md5,
            bytes: src.size,
        },
        crc64_known: crc.is_some(),
        server_side: true,
        dst_etag,
        // Set by the caller from the mode.
        verified_by: Verification::new(ReadCheck::SourceSize, WriteCheck::DestCopyEtag),
        parts,
        upload_id,
        part_size,
    }
}

/// `x-amz-copy-source` (and its range), pinned to the listed ETag.
fn copy_headers(
    req: &Request<'_>,
    range: Option<std::ops::Range<u64>>,
) -> Result<HeaderMap, Refused> {
    let mut h = HeaderMap::new();
    let bad = |what: &str| {
        Refused::Copy(CopyError::Store {
            what: "copying on the server",
            source: object_store::Error::Generic {
                store: "S3",
                source: format!("{what} cannot be sent as a header").into(),
            },
        })
    };
    h.insert(
        HeaderName::from_static("x-amz-copy-source"),
        HeaderValue::from_str(&req.source).map_err(|_| bad("the source key"))?,
    );
    h.insert(
        HeaderName::from_static("x-amz-copy-source-if-match"),
        HeaderValue::from_str(&req.if_match).map_err(|_| bad("the source ETag"))?,
    );
    if let Some(r) = range {
        h.insert(
            HeaderName::from_static("x-amz-copy-source-range"),
            HeaderValue::from_str(&format!("bytes={}-{}", r.start, r.end - 1))
                .map_err(|_| bad("the range"))?,
        );
    }
    Ok(h)
}

/// Percent-encodes a key for `x-amz-copy-source` (every byte but unreserved ones and `/`).
fn encode_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The ETag of a CopyObject / UploadPartCopy answer; S3 may answer 200 with an `<Error>` body
/// when a copy fails after it started.
fn copy_result_etag(body: &str) -> Result<String, CopyError> {
    if let Some(code) = xml_field(body, "Code")
        && body.contains("<Error")
    {
        return Err(CopyError::Store {
            what: "copying on the server",
            source: object_store::Error::Generic {
                store: "S3",
                source: format!("the store answered the copy with error {code}").into(),
            },
        });
    }
    xml_field(body, "ETag")
        .map(|e| checksum::etag_norm(&e.replace("&quot;", "\"")))
        .ok_or_else(|| CopyError::Store {
            what: "copying on the server",
            source: object_store::Error::Generic {
                store: "S3",
                source: "the copy's answer holds no ETag".into(),
            },
        })
}

/// A copy request's answer.
struct Answer {
    body: String,
    /// The answer does not say the object is encrypted with SSE-KMS or SSE-C (whose ETags are
    /// not MD5s).
    etag_can_be_md5: bool,
}

/// What an answer to one of this strategy family's signed PUTs means ([`presign::Verdict`], failing
/// with a [`Refused`]).
pub(super) type Verdict<T> = presign::Verdict<T, Refused>;

/// [`presign::put_signed`] to the run's destination, paced by its limits and counted as a PUT;
/// `generic` words the copy error when the retries run out.
pub(super) async fn put_signed<T, S: Future<Output = Result<url::Url, Refused>>>(
    ctx: &Ctx,
    what: &'static str,
    sign: impl Fn() -> S,
    headers: &HeaderMap,
    body: Vec<bytes::Bytes>,
    generic: impl Fn(String, Option<u16>) -> CopyError,
    judge: impl Fn(presign::Reply) -> Verdict<T>,
) -> Result<T, Refused> {
    let to = presign::PutTo {
        store: &ctx.dst,
        limits: &ctx.limits,
        puts: &ctx.counters.put,
    };
    let gave_up = |msg: String, status: Option<u16>| Refused::Copy(generic(msg, status));
    presign::put_signed(to, what, sign, headers, body, gave_up, judge).await
}

/// A presigned PUT to the destination key with `headers` bound to the signature, retried under
/// the one retry policy; its answer.
async fn send(
    req: &Request<'_>,
    query: &[(String, String)],
    headers: HeaderMap,
    what: &'static str,
) -> Result<Answer, Refused> {
    let mut opts = SignedUrlOptions::default().with_query(query.iter().cloned());
    for (k, v) in &headers {
        opts = opts.with_signed_header(k.clone(), v.clone());
    }
    let generic = |msg: String, status: Option<u16>| s3_answer_error(what, msg, status);
    let opts = &opts;
    let sign = || async move {
        req.s3
            .signed_url_opts(Method::PUT, req.path, Duration::from_secs(900), opts)
            .await
            .map_err(|e| Refused::Copy(CopyError::Store { what, source: e }))
    };
    put_signed(
        req.ctx,
        what,
        sign,
        &headers,
        Vec::new(),
        generic,
        |reply| {
            let code = xml_field(&reply.body, "Code").unwrap_or_default();
            let failed = |msg: String, status| Verdict::Fail(Refused::Copy(generic(msg, status)));
            match reply.status {
                200..=299 if !reply.body.contains("<Error") => Verdict::Done(Answer {
                    etag_can_be_md5: crate::store::http::DigestHeaders::of(&reply.headers)
                        .s3_etag_can_be_md5(),
                    body: reply.body,
                }),
                200..=299 if matches!(code.as_str(), "InternalError" | "SlowDown") => {
                    Verdict::Retry(format!("the store answered the copy with {code}"), None)
                }
                200..=299 => failed(format!("the store answered {code}"), None),
                412 => Verdict::Fail(Refused::Copy(CopyError::SourceChanged)),
                // Not offered here, or the credentials may not read the source this way: the
                // bytes can still be streamed.
                400 if code == "NotImplemented" || code == "InvalidRequest" => {
                    Verdict::Fail(Refused::Off(format!("{} {code}", reply.status)))
                }
                // Expired credentials are no reason to stream instead: renewed, the copy is tried
                // again (see `copy_with_retries`).
                400 | 401 | 403 if crate::store::error::expired_text(&code) => failed(
                    format!("the store answered {} {code}", reply.status),
                    Some(reply.status),
                ),
                401 | 403 | 405 | 501 => {
                    Verdict::Fail(Refused::Off(format!("{} {code}", reply.status)))
                }
                s if retryable_status(s) => {
                    Verdict::Retry(format!("the store answered {s}"), Some(s))
                }
                s => failed(format!("the store answered {s} {code}"), Some(s)),
            }
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_percent_encoded_but_slashes_kept() {
        assert_eq!(encode_key("a b/c+d/é.bin"), "a%20b/c%2Bd/%C3%A9.bin");
        assert_eq!(encode_key("plain/key-1_2.~x"), "plain/key-1_2.~x");
    }

    #[test]
    fn copy_answers_give_their_etag_or_an_error() {
        let ok = "<?xml version=\"1.0\"?><CopyObjectResult><LastModified>x</LastModified><ETag>&quot;0123456789abcdef0123456789abcdef&quot;</ETag></CopyObjectResult>";
        assert_eq!(
            copy_result_etag(ok).unwrap(),
            "0123456789abcdef0123456789abcdef"
        );
        let err = "<Error><Code>InternalError</Code><Message>m</Message></Error>";
        assert!(copy_result_etag(err).is_err());
        assert!(copy_result_etag("<CopyPartResult></CopyPartResult>").is_err());
    }

    #[test]
    fn the_service_is_the_identity_before_the_bucket() {
        assert_eq!(
            service("s3 http://127.0.0.1:3900 bucket a prefix p/"),
            Some("s3 http://127.0.0.1:3900")
        );
        assert_ne!(
            service("s3 http://127.0.0.1:3900 bucket a prefix "),
            service("s3 http://127.0.0.1:3910 bucket a prefix ")
        );
    }
}
