//! HEADs object_store cannot make: presigned, with checksum mode (S3 shows the checksums it
//! stores only when asked), optionally of one part, pinned to the listed ETag and retried under
//! the one retry policy ([`raw_head`] of a source, [`dest_stored_crc64`] of a copy).

use super::context::{CopyError, Ctx, s3_answer_error};
use crate::store::Store;
use crate::store::http::DigestHeaders;
use crate::store::list::Entry;
use std::sync::atomic::Ordering::Relaxed;

/// A HEAD object_store cannot make: presigned, with checksum mode (S3 returns stored checksums
/// only when asked) and optionally one part (`partNumber`). Pinned to the listed ETag.
///
/// Transient failures (5xx, 429, a connection that breaks) are retried under the one policy of
/// [`crate::store::retry`], and then are an error: the copy must not go on without the digests
/// this HEAD would have found (it would verify by size alone). `Ok(None)` only where the store
/// answers that it does not support the request (400, 405, 501: no part layout to learn).
pub(in crate::transfer) async fn raw_head(
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
pub(in crate::transfer) async fn dest_stored_crc64(
    ctx: &Ctx,
    path: &object_store::path::Path,
    key: &str,
) -> Result<Option<u64>, CopyError> {
    let Some(s3) = ctx.dst.as_s3() else {
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
    use crate::store::presign::{HeadFailed, checksum_head};
    use crate::store::retry::{Backoff, retryable_status};
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    let path = at.path;
    let what = at.what;
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
        ctx.counters.head.fetch_add(1, Relaxed);
        ctx.limits.take_request().await;
        let anonymous = at.store.is_anonymous();
        let sent = checksum_head(s3, anonymous, client, path, (part, at.if_match)).await;
        // A reqwest error would print the presigned URL (a signature): only its kind is kept.
        last_status = None;
        let failure = match sent {
            Err(HeadFailed::Sign(source)) => return Err(CopyError::Store { what, source }),
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
            Err(HeadFailed::Send(e)) if e.is_timeout() => "the request timed out".to_string(),
            Err(HeadFailed::Send(e)) if e.is_connect() => "the connection failed".to_string(),
            Err(HeadFailed::Send(_)) => "the connection broke".to_string(),
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
