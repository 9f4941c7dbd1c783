//! Writes of the checksum-only path sent by moverctl itself, each bound to the CRC64 moverctl
//! computed as it read the bytes.
//!
//! object_store's S3 client, configured for CRC64NVME, hashes every body it is handed and sends
//! that value: the store then proves only that the bytes arrived as object_store saw them, and
//! every byte is hashed twice on this machine (moverctl's own CRC64 as it reads, then
//! object_store's, over a buffer long out of the cache). Here a single PUT or a part goes out on
//! a presigned URL whose signed `x-amz-checksum-crc64nvme` is moverctl's read-time CRC64: the
//! store refuses any body whose bytes differ from what was read (a corruption between the read
//! and the socket included), and no byte is hashed a second time. Multipart uploads are still
//! created and completed by object_store (CRC64NVME, full object); each part's id is written in
//! the form its `complete_multipart` reads (its `PartMetadata`: ETag and CRC64).
//!
//! A store that does not allow the request (a bucket policy denying presigned requests answers
//! 403) gets that write and the rest of the run's through object_store instead.

use super::copy::context::{CopyError, Ctx, s3_answer_error};
use super::server_side::{Refused, Verdict, put_signed};
use crate::store::CrcWriter;
use crate::store::http::DigestHeaders;
use crate::store::presign::{add_metadata, xml_field};
use crate::store::retry::retryable_status;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use bytes::Bytes;
use object_store::multipart::PartId;
use object_store::path::Path;
use object_store::signer::{HeaderMap, HeaderName, HeaderValue, Method, SignedUrlOptions, Signer};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

const CRC_HEADER: &str = "x-amz-checksum-crc64nvme";

/// Whether writes of this run's checksum-only path go by URL: the writer sends them that way and
/// the store has not refused it, and the destination is S3 with credentials.
pub(in crate::transfer) fn applies(ctx: &Ctx, w: &CrcWriter) -> bool {
    w.by_url
        && !w.urls_refused.load(Relaxed)
        && ctx.dst.as_s3().is_some()
        && !ctx.dst.is_anonymous()
}

/// Sends part `idx` (0-based) of upload `id` at `path`, bound to `crc64` (computed as its bytes
/// were read). `Ok(None)`: the store does not allow the request; the caller sends the part
/// through object_store (and so does the rest of the run).
pub(super) async fn put_part(
    ctx: &Ctx,
    w: &CrcWriter,
    path: &Path,
    id: &str,
    idx: usize,
    chunks: Vec<Bytes>,
    crc64: u64,
) -> Result<Option<PartId>, CopyError> {
    let number = (idx + 1).to_string();
    let query = [("partNumber", number.as_str()), ("uploadId", id)];
    let sent = B64.encode(crc64.to_be_bytes());
    let answer = send(
        ctx,
        w,
        path,
        Write::Part(idx),
        &query,
        HeaderMap::new(),
        chunks,
        &sent,
    )
    .await?;
    let Some((etag, _)) = answer else {
        return Ok(None);
    };
    let Some(etag) = etag else {
        return Err(s3_answer_error(
            "uploading a part",
            "its answer holds no ETag".into(),
            None,
        ));
    };
    Ok(Some(PartId {
        content_id: part_metadata(&etag, &sent),
    }))
}

/// Writes `chunks` as the object at `path` in one PUT bound to `crc64`, with `attributes`
/// (moverctl's metadata, the storage class) and, when known, `md5` as Content-MD5, all signed.
/// `Ok(None)`: the store does not allow the request (see [`put_part`]). Else the answer's ETag
/// and digest headers.
pub(super) async fn put_single(
    ctx: &Ctx,
    w: &CrcWriter,
    path: &Path,
    chunks: Vec<Bytes>,
    (crc64, md5): (u64, Option<[u8; 16]>),
    attributes: &object_store::Attributes,
    tags: &object_store::TagSet,
) -> Result<Option<(Option<String>, DigestHeaders)>, CopyError> {
    let mut headers = HeaderMap::new();
    add_metadata(&mut headers, attributes);
    if !tags.is_empty()
        && let Ok(v) = HeaderValue::from_str(tags.encoded())
    {
        headers.insert(HeaderName::from_static("x-amz-tagging"), v);
    }
    if let Some(m) = md5 {
        headers.insert(
            HeaderName::from_static("content-md5"),
            HeaderValue::from_str(&B64.encode(m)).expect("base64 is a header value"),
        );
    }
    let sent = B64.encode(crc64.to_be_bytes());
    send(ctx, w, path, Write::Single, &[], headers, chunks, &sent).await
}

#[derive(Clone, Copy)]
enum Write {
    Single,
    Part(usize),
}

impl Write {
    fn what(self) -> &'static str {
        match self {
            Write::Single => "writing the destination",
            Write::Part(_) => "uploading a part",
        }
    }

    fn named(self) -> String {
        match self {
            Write::Single => "the object".into(),
            Write::Part(i) => format!("part {}", i + 1),
        }
    }
}

/// The PUT itself, under the one retry policy: `sent` (base64 CRC64) and `headers` bound to the
/// signature, the query signed too. The answer's ETag and digest headers; `Ok(None)` when the
/// store does not allow the request (remembered for the run).
#[allow(clippy::too_many_arguments)]
async fn send(
    ctx: &Ctx,
    w: &CrcWriter,
    path: &Path,
    write: Write,
    query: &[(&str, &str)],
    mut headers: HeaderMap,
    chunks: Vec<Bytes>,
    sent: &str,
) -> Result<Option<(Option<String>, DigestHeaders)>, CopyError> {
    let what = write.what();
    let s3 = ctx.dst.as_s3().expect("checked by applies");
    let part = match write {
        Write::Single => None,
        Write::Part(i) => Some(i),
    };
    let chunks = match &w.tamper {
        Some(t) => t(path, part, chunks).map_err(|e| CopyError::Store {
            what,
            source: object_store::Error::Generic {
                store: "S3",
                source: e.into(),
            },
        })?,
        None => chunks,
    };
    headers.insert(
        HeaderName::from_static(CRC_HEADER),
        HeaderValue::from_str(sent).expect("base64 is a header value"),
    );
    let mut opts = SignedUrlOptions::default().with_query(query.iter().map(|(k, v)| (*k, *v)));
    for (k, v) in &headers {
        opts = opts.with_signed_header(k.clone(), v.clone());
    }
    let opts = &opts;
    let sign = || async move {
        s3.signed_url_opts(Method::PUT, path, Duration::from_secs(900), opts)
            .await
            .map_err(|e| Refused::Copy(CopyError::Store { what, source: e }))
    };
    let generic = |msg: String, status: Option<u16>| s3_answer_error(what, msg, status);
    let named = write.named();
    let judged = put_signed(ctx, what, sign, &headers, chunks, generic, |reply| {
        judge(reply, what, &named, Some(sent))
    })
    .await;
    match judged {
        Ok(answer) => Ok(Some(answer)),
        Err(Refused::Copy(e)) => Err(e),
        Err(Refused::Off(why)) => {
            if !w.urls_refused.swap(true, Relaxed) {
                tracing::info!(
                    target: "moverctl::copy",
                    store = %ctx.dst.shown(),
                    "the store does not allow writes on a presigned URL ({why}); the rest of \
                     the run writes through the S3 client (which hashes every byte again)"
                );
            }
            Ok(None)
        }
    }
}

/// What the store's answer to a write of `named` (a part, the object) bound to the CRC64 `sent`
/// (base64; None: the body was not all sent) means: when taken, its ETag and digest headers.
pub(in crate::transfer) fn judge(
    reply: crate::store::presign::Reply,
    what: &'static str,
    named: &str,
    sent: Option<&str>,
) -> Verdict<(Option<String>, DigestHeaders)> {
    let code = xml_field(&reply.body, "Code").unwrap_or_default();
    let fail = |e: CopyError| Verdict::Fail(Refused::Copy(e));
    match answer_of(reply.status, &code) {
        Answer::Taken => {
            let Some(sent) = sent else {
                return fail(CopyError::Mismatch(format!(
                    "{named} was answered before all of it was sent"
                )));
            };
            let echoed = reply.headers.get(CRC_HEADER).and_then(|v| v.to_str().ok());
            if let Some(e) = echoed
                && e != sent
            {
                return fail(CopyError::Mismatch(format!(
                    "{named} was stored with CRC64 {e}, sent with {sent}"
                )));
            }
            let etag = reply
                .headers
                .get("etag")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            Verdict::Done((etag, DigestHeaders::of(&reply.headers)))
        }
        Answer::DigestRefused => fail(CopyError::Mismatch(format!(
            "{what}: the store refused {named} ({code}): its bytes differ from the digest \
             computed when they were read"
        ))),
        Answer::NotHere => Verdict::Fail(Refused::Off(format!("{} {code}", reply.status))),
        Answer::Retry => Verdict::Retry(
            format!("the store answered {}", reply.status),
            Some(reply.status),
        ),
        Answer::Failed => fail(s3_answer_error(
            what,
            format!("the store answered {} {code}", reply.status),
            Some(reply.status),
        )),
    }
}

/// What an answer to a write sent by URL means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// Stored (its echoed CRC64 is still compared).
    Taken,
    /// The store compared the body with the digest sent and refused it: an integrity failure.
    DigestRefused,
    /// The store does not allow or support the request in this form (a policy denying presigned
    /// requests, a signed checksum header it does not take in a query-signed request): the
    /// write goes through the S3 client instead, and so does the rest of the run's.
    NotHere,
    /// Worth another attempt under the retry policy (5xx, 429, 408).
    Retry,
    Failed,
}

fn answer_of(status: u16, code: &str) -> Answer {
    match status {
        200..=299 => Answer::Taken,
        // Expired credentials: renewed, the write is tried again by URL (`copy_with_retries`).
        400 | 401 | 403 if crate::store::error::expired_text(code) => Answer::Failed,
        400 if matches!(
            code,
            "BadDigest" | "InvalidDigest" | "XAmzContentChecksumMismatch"
        ) =>
        {
            Answer::DigestRefused
        }
        400 if matches!(
            code,
            "NotImplemented" | "InvalidRequest" | "AuthorizationQueryParametersError"
        ) =>
        {
            Answer::NotHere
        }
        401 | 403 | 405 | 501 => Answer::NotHere,
        s if retryable_status(s) => Answer::Retry,
        _ => Answer::Failed,
    }
}

/// A part's id in the form object_store's S3 client keeps for uploads with a checksum
/// algorithm (its `PartMetadata` as XML), which its `complete_multipart` reads back: the ETag
/// and the CRC64 of each part go into the completion.
pub(in crate::transfer) fn part_metadata(e_tag: &str, crc64: &str) -> String {
    #[derive(serde::Serialize)]
    struct PartMetadata<'a> {
        e_tag: &'a str,
        checksum_crc64nvme: &'a str,
    }
    quick_xml::se::to_string(&PartMetadata {
        e_tag,
        checksum_crc64nvme: crc64,
    })
    .expect("two strings serialize")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// object_store reads a part id as XML with these two fields (and falls back to taking the
    /// whole text as the ETag, which S3 would refuse at completion).
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct AsObjectStoreReadsIt {
        e_tag: String,
        checksum_crc64nvme: Option<String>,
    }

    #[test]
    fn answers_are_taken_refused_routed_elsewhere_or_retried() {
        assert_eq!(answer_of(200, ""), Answer::Taken);
        for code in ["BadDigest", "InvalidDigest", "XAmzContentChecksumMismatch"] {
            assert_eq!(answer_of(400, code), Answer::DigestRefused, "{code}");
        }
        // Presigned requests refused by policy, or this form of request not supported: the S3
        // client writes instead (a digest refusal never does: it is the proof failing).
        for (status, code) in [
            (403, "AccessDenied"),
            (401, ""),
            (405, "MethodNotAllowed"),
            (501, "NotImplemented"),
            (400, "NotImplemented"),
            (400, "InvalidRequest"),
            (400, "AuthorizationQueryParametersError"),
        ] {
            assert_eq!(answer_of(status, code), Answer::NotHere, "{status} {code}");
        }
        for status in [500, 503, 429, 408] {
            assert_eq!(answer_of(status, "SlowDown"), Answer::Retry, "{status}");
        }
        assert_eq!(answer_of(404, "NoSuchUpload"), Answer::Failed);
        // Expired credentials are renewed and the write tried again, not moved off URLs.
        assert_eq!(answer_of(403, "ExpiredToken"), Answer::Failed);
        assert_eq!(answer_of(400, "TokenRefreshRequired"), Answer::Failed);
        assert_eq!(answer_of(400, "EntityTooSmall"), Answer::Failed);
    }

    #[test]
    fn a_part_id_reads_back_as_its_etag_and_crc64() {
        let id = part_metadata("\"9b2cf535f27731c974343645a3985328\"", "AAAAAAAAAAA=");
        assert!(id.starts_with("<PartMetadata>"), "{id}");
        let back: AsObjectStoreReadsIt = quick_xml::de::from_str(&id).unwrap();
        assert_eq!(
            back,
            AsObjectStoreReadsIt {
                e_tag: "\"9b2cf535f27731c974343645a3985328\"".into(),
                checksum_crc64nvme: Some("AAAAAAAAAAA=".into()),
            }
        );
        // Characters XML reserves survive too.
        let odd = part_metadata("a<b>&\"c'", "x");
        let back: AsObjectStoreReadsIt = quick_xml::de::from_str(&odd).unwrap();
        assert_eq!(back.e_tag, "a<b>&\"c'");
    }
}
