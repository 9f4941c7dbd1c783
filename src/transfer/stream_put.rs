//! One streamed PUT for a large single-part source, where that is cheaper end to end than a
//! multipart upload.
//!
//! When the source states its MD5 (a single-part ETag in the listing) and the destination checks
//! `Content-MD5` on arrival and answers with an MD5 ETag, the object's GET body is streamed
//! straight into one PUT that carries the source's own MD5: the destination refuses any byte that
//! differs from the source's digest, and its ETag is compared after. Nothing is hashed here but the
//! CRC64 (for the journal), nothing is buffered beyond the chunk in flight, and the copy costs one
//! request instead of a part per 64 MiB plus two, with no MD5 pass (a multipart copy of such a
//! source hashes every byte in order to check the source's MD5). Above [`MAX_PARTS_WORTH`]
//! planned parts, parallel parts shorten the copy of one large object more than this saves.
//!
//! The PUT is presigned with the destination's credentials (moverctl's metadata and storage class
//! bound to the signature; the CRC64 is known only at the end, so it is not in the metadata) and
//! sent with reqwest; its URL carries a signature and is never printed. A body cannot be sent
//! twice, so the PUT is not retried in place: a failure fails this attempt and the engine's retry
//! copies the object again.

use super::copy::attributes::metadata;
use super::copy::context::{
    CopyError, Ctx, InFlightGuard, Outcome, add_in_flight, s3_answer, s3_answer_error, store_err,
};
use super::copy::read::read_range;
use super::fidelity::ObjectMeta;
use super::verification::{ReadCheck, Verification, WriteCheck};
use crate::checksum::{self, Digests, Hasher};
use crate::store::http::DigestHeaders;
use crate::store::list::Entry;
use futures::StreamExt;
use object_store::ObjectStoreExt;
use object_store::signer::{HeaderMap, Method, SignedUrlOptions, Signer};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A source larger than this many planned parts is uploaded in parts (in parallel) instead.
pub const MAX_PARTS_WORTH: u64 = 4;

/// The source's MD5 when `src` is copied with one streamed PUT (see the module comment).
pub(super) fn applies(ctx: &Ctx, src: &Entry, planned_part: u64) -> Option<[u8; 16]> {
    let dst = &ctx.dst;
    if dst.as_s3().is_none()
        || dst.is_anonymous()
        || dst.is_local()
        || !dst.caps.checks_content_md5
        || !dst.caps.put_etag_is_md5
        || ctx.opts.verify == super::Verify::Readback
        || !ctx.opts.stream_single_put
        || !ctx.sequential_reads
        || src.size > ctx.opts.dst_limits.max_single_put_bytes
        || src.size > planned_part.saturating_mul(MAX_PARTS_WORTH)
    {
        return None;
    }
    if !ctx.src.caps.put_etag_is_md5 {
        return None;
    }
    src.e_tag.as_deref().and_then(checksum::etag_md5)
}

/// Copies `src` with one streamed PUT carrying `md5` (its listing's ETag); None when the GET's
/// answer shows that ETag to be no MD5 (an SSE-KMS or SSE-C object): the caller copies it in
/// parts, hashing what it reads.
pub(super) async fn copy(
    ctx: &Ctx,
    src: &Entry,
    md5: [u8; 16],
) -> Result<Option<Outcome>, CopyError> {
    use base64::Engine;
    let what = "writing the destination (one streamed PUT)";
    // The GET first: its answer says whether the ETag is an MD5 at all, before it is sent as one.
    let seen = Arc::new(Mutex::new(super::claims::Claims::default()));
    let mut source = read_range(ctx, src, 0..src.size, Some(seen.clone()));
    let first = match source.next().await {
        Some(Err(e)) => return Err(e),
        first => first,
    };
    if seen.lock().expect("claims lock").etag_opaque {
        tracing::debug!(
            target: "moverctl::copy",
            key = %src.key,
            "the source is encrypted with SSE-KMS or SSE-C (its ETag is no MD5): copied in parts"
        );
        return Ok(None);
    }
    let source = futures::stream::iter(first).chain(source);
    let path = ctx.dst.path_of(&src.key).map_err(|e| CopyError::Store {
        what: "destination key",
        source: e.into(),
    })?;
    let meta = seen.lock().expect("claims lock").meta.clone();
    let (url, headers) = signed_put(ctx, src, &path, meta.as_ref(), what).await?;

    ctx.counters
        .in_flight
        .lock()
        .expect("progress lock")
        .insert(src.key.clone(), (0, src.size));
    let _in_flight = InFlightGuard(ctx.counters.clone(), src.key.clone());

    // The body: the pinned GET's stream, paced by --bwlimit, hashed (CRC64) and counted. A read
    // error is kept here so that it is reported as itself (a changed source, a short read), not
    // as whatever the HTTP client makes of an aborted body.
    let hasher = Arc::new(Mutex::new(Hasher::new(false)));
    let read_error: Arc<Mutex<Option<CopyError>>> = Arc::default();
    let body = paced_body(ctx, src, source, hasher.clone(), read_error.clone());

    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    let client = CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(120))
            .build()
            .unwrap_or_default()
    });
    ctx.limits.take_request().await;
    ctx.counters.put.fetch_add(1, Relaxed);
    let mut req = client
        .put(url)
        .header("content-length", src.size)
        .header(
            "content-md5",
            base64::engine::general_purpose::STANDARD.encode(md5),
        )
        .body(reqwest::Body::wrap_stream(body));
    for (k, v) in &headers {
        req = req.header(k, v);
    }
    // A reqwest error would print the presigned URL (a signature): only its kind is kept.
    let resp = match req.send().await {
        Ok(r) => r,
        Err(e) => {
            if let Some(read) = read_error.lock().expect("error slot").take() {
                return Err(read);
            }
            let msg = if e.is_timeout() {
                "the request timed out"
            } else if e.is_connect() {
                "the connection failed"
            } else {
                "the connection broke"
            };
            return Err(s3_answer_error(what, msg.into(), None));
        }
    };
    let status = resp.status().as_u16();
    let answer = DigestHeaders::of(resp.headers());
    let etag = resp
        .headers()
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = resp.text().await.unwrap_or_default();
    ctx.dst.observer.judge_refusal(status, text.as_bytes());
    if let Some(read) = read_error.lock().expect("error slot").take() {
        return Err(read);
    }
    if !(200..300).contains(&status) {
        // Classified like every store answer: a refused Content-MD5 (the bytes are not the
        // source's) is an integrity error, tried again; a 412 means the source changed.
        let code = crate::store::presign::xml_field(&text, "Code").unwrap_or_default();
        return Err(refused(what, status, &code));
    }
    ctx.counters.written_bytes.fetch_add(src.size, Relaxed);
    let (d, write) = prove(ctx, src, &path, md5, &hasher, &answer, etag.as_deref()).await?;
    Ok(Some(Outcome {
        digests: d,
        dst_etag: etag,
        verified_by: Verification::new(ReadCheck::SourceMd5, write),
        parts: 0,
        upload_id: None,
        part_size: None,
        crc64_known: true,
        server_side: false,
    }))
}

/// The presigned URL of one streamed PUT to `path`, with the headers bound to its signature
/// (the source's metadata and tags, as `metadata` gives them).
async fn signed_put(
    ctx: &Ctx,
    src: &Entry,
    path: &object_store::path::Path,
    meta: Option<&ObjectMeta>,
    what: &'static str,
) -> Result<(url::Url, HeaderMap), CopyError> {
    let mut headers = HeaderMap::new();
    crate::store::presign::add_metadata(&mut headers, &metadata(ctx, src, None, meta));
    let tags = super::fidelity::source_tags(ctx, src, meta).await?;
    if !tags.is_empty()
        && let Ok(v) = object_store::signer::HeaderValue::from_str(tags.encoded())
    {
        headers.insert(
            object_store::signer::HeaderName::from_static("x-amz-tagging"),
            v,
        );
    }
    let mut opts = SignedUrlOptions::default();
    for (k, v) in &headers {
        opts = opts.with_signed_header(k.clone(), v.clone());
    }
    let s3 = ctx.dst.as_s3().expect("checked in applies");
    let url = s3
        .signed_url_opts(Method::PUT, path, Duration::from_secs(3600), &opts)
        .await
        .map_err(|e| CopyError::Store { what, source: e })?;
    Ok((url, headers))
}

/// The PUT's body: the pinned GET's stream, paced by `--bwlimit`, hashed into `hasher` (CRC64)
/// and counted; a read error is kept in `read_error`, so that it is reported as itself.
fn paced_body<S>(
    ctx: &Ctx,
    src: &Entry,
    source: S,
    hasher: Arc<Mutex<Hasher>>,
    read_error: Arc<Mutex<Option<CopyError>>>,
) -> impl futures::Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send + use<S>
where
    S: futures::Stream<Item = Result<bytes::Bytes, CopyError>> + Send + 'static,
{
    let (limits, counters, key, size) = (
        ctx.limits.clone(),
        ctx.counters.clone(),
        src.key.clone(),
        src.size,
    );
    let (h, failed) = (hasher, read_error);
    source.then(move |chunk| {
        let (limits, counters, key, h, failed) = (
            limits.clone(),
            counters.clone(),
            key.clone(),
            h.clone(),
            failed.clone(),
        );
        async move {
            match chunk {
                Ok(c) => {
                    let n = c.len() as u64;
                    let so_far = {
                        let mut h = h.lock().expect("hasher lock");
                        h.update(&c);
                        h.bytes_so_far()
                    };
                    if so_far > size {
                        let e = CopyError::Mismatch(
                            "the source returned more bytes than the listing promised".into(),
                        );
                        *failed.lock().expect("error slot") = Some(e);
                        return Err(std::io::Error::other("source too long"));
                    }
                    limits.take_bytes(n).await;
                    counters.read_bytes.fetch_add(n, Relaxed);
                    add_in_flight(&counters, &key, n);
                    Ok(c)
                }
                Err(e) => {
                    *failed.lock().expect("error slot") = Some(e);
                    Err(std::io::Error::other("reading the source failed"))
                }
            }
        }
    })
}

/// The streamed PUT's proof: every listed byte was read (CRC64 and count from `hasher`), and the
/// destination's ETag is the source's MD5 (or, for SSE-KMS / SSE-C, the Content-MD5 the store
/// checked stands). A wrong object is deleted.
async fn prove(
    ctx: &Ctx,
    src: &Entry,
    path: &object_store::path::Path,
    md5: [u8; 16],
    hasher: &Mutex<Hasher>,
    answer: &DigestHeaders,
    etag: Option<&str>,
) -> Result<(Digests, WriteCheck), CopyError> {
    let d = {
        let h = hasher.lock().expect("hasher lock").clone();
        let d = h.finish();
        Digests {
            md5: Some(md5),
            ..d
        }
    };
    if d.bytes != src.size {
        let _ = ctx.dst.inner.delete(path).await;
        return Err(CopyError::Mismatch(format!(
            "the source returned {} bytes, the listing promised {}",
            d.bytes, src.size
        )));
    }
    let write = if !answer.s3_etag_can_be_md5() {
        // SSE-KMS / SSE-C: the ETag is no MD5, and the Content-MD5 the store checked stands.
        WriteCheck::DestContentMd5
    } else if etag.and_then(checksum::etag_md5) == Some(md5) {
        WriteCheck::DestMd5
    } else {
        let _ = ctx.dst.inner.delete(path).await;
        return Err(CopyError::Mismatch(
            "the destination's ETag after one streamed PUT is not the source's MD5".into(),
        ));
    };
    Ok((d, write))
}

/// A PUT's error answer as a copy error, classified like every store answer (the code in the
/// form the store's body has it, which is what the classification reads).
fn refused(what: &'static str, status: u16, code: &str) -> CopyError {
    store_err(what)(s3_answer(
        format!("the store answered {status}: <Code>{code}</Code>"),
        Some(status),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_digest_is_an_integrity_error_and_a_failed_condition_a_changed_source() {
        let e = refused("w", 400, "BadDigest");
        assert!(matches!(e, CopyError::Mismatch(_)), "{e}");
        assert!(e.retryable());
        let e = refused("w", 400, "InvalidDigest");
        assert!(matches!(e, CopyError::Mismatch(_)), "{e}");
        assert!(matches!(
            refused("w", 412, "PreconditionFailed"),
            CopyError::SourceChanged
        ));
        let e = refused("w", 503, "SlowDown");
        assert_eq!(e.kind(), Some(crate::store::StoreErrorKind::Throttled));
        let e = refused("w", 403, "AccessDenied");
        assert!(!e.retryable(), "{e}");
    }
}
