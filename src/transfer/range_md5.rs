//! Azure reads of a blob that states no digest of its own (no `Content-MD5`: what the SDKs leave
//! on block blobs they upload in blocks; no moverctl CRC64): the bytes are read in ranges of at
//! most 4 MiB with `x-ms-range-get-content-md5: true`, for which the service computes the MD5 of
//! the range as it serves it and answers it as `Content-MD5`. Every range's bytes must hash to
//! it, so a byte changed on the way is caught as it is with a stored digest
//! (`source-range-md5`).
//!
//! The requests carry a header Azure's shared-key signature covers, which object_store cannot
//! add, so they are made here with a SAS of the blob (object_store's `Signer`; a SAS signs no
//! header), pinned to the listed ETag. Where no SAS can be signed (or the key needs encoding,
//! which object_store's SAS gets wrong), or the service answers a range without its MD5, the
//! object stays unchecked: `unverified`. (Azurite 3.37 answers range MD5s for block, append and
//! page blobs alike, and computes a `Content-MD5` for whole reads of append and page blobs.)

use super::claims::Claims;
use super::copy::context::{CopyError, Ctx, s3_answer_error};
use crate::store::http::DigestHeaders;
use crate::store::list::Entry;
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use md5::Digest as _;
use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The largest range Azure computes an MD5 for.
pub const RANGE: u64 = 4 << 20;

/// Whether reads of an object with these claims are to be checked range by range: its
/// answers so far state no digest of the whole blob.
pub(super) fn wanted(c: &Claims) -> bool {
    !c.states_crc() && c.md5.is_none()
}

/// What the range reads of one object need from the run (owned: the reads outlive the borrow).
#[derive(Clone)]
pub(super) struct Reader {
    counters: Arc<super::Counters>,
    limits: crate::limit::Limits,
    window: Duration,
    etag: Option<String>,
    key: String,
    az: Arc<object_store::azure::MicrosoftAzure>,
}

impl Reader {
    /// For an Azure source (none for other stores).
    pub(super) fn of(ctx: &Ctx, src: &Entry) -> Option<Reader> {
        if ctx.src.caps.in_process {
            return None;
        }
        Some(Reader {
            counters: ctx.counters.clone(),
            limits: ctx.limits.clone(),
            window: ctx.src.retry_window,
            etag: src.e_tag.clone(),
            key: src.key.clone(),
            az: ctx.src.as_azure().cloned()?,
        })
    }

    /// A SAS GET URL of the source blob, if one can be signed and is usable.
    pub(super) async fn signed(&self, path: &object_store::path::Path) -> Option<url::Url> {
        use object_store::signer::{Method, Signer};
        let url = self
            .az
            .signed_url(Method::GET, path, Duration::from_secs(3600))
            .await
            .ok()?;
        // object_store signs the percent-encoded path, Azure the decoded name (see from_url).
        (!url.path().contains('%')).then_some(url)
    }
}

/// What the per-range reads of one object found.
pub(super) type Seen = Arc<Mutex<Claims>>;

/// `range` of the blob at `url` in requests of at most [`RANGE`] bytes, each checked against
/// the MD5 the service answers for it; the count of ranges checked and unchecked goes to `seen`
/// with what else the answers state (the blob's own MD5, moverctl's CRC64).
pub(super) fn stream(
    rd: Reader,
    range: Range<u64>,
    url: url::Url,
    seen: Seen,
) -> BoxStream<'static, Result<Bytes, CopyError>> {
    let Reader {
        counters,
        limits,
        window,
        etag,
        key,
        az: _,
    } = rd;
    stream::try_unfold(range.start, move |at| {
        let (url, seen, counters, limits, etag, key) = (
            url.clone(),
            seen.clone(),
            counters.clone(),
            limits.clone(),
            etag.clone(),
            key.clone(),
        );
        let end = range.end;
        async move {
            if at >= end {
                return Ok(None);
            }
            let to = (at + RANGE).min(end);
            let (body, md5) =
                get_range(&url, at..to, etag.as_deref(), &key, window, &counters, &limits, &seen)
                    .await?;
            if body.len() as u64 != to - at {
                return Err(CopyError::Mismatch(format!(
                    "the source returned {} bytes for {at}..{to}, expected {}",
                    body.len(),
                    to - at
                )));
            }
            let mut c = seen.lock().expect("claims lock");
            match md5 {
                Some(m) if m != <[u8; 16]>::from(md5::Md5::digest(&body)) => {
                    return Err(CopyError::Mismatch(format!(
                        "the source's bytes {at}..{to} do not match the MD5 Azure computed for that range"
                    )));
                }
                Some(_) => c.ranges_checked += 1,
                None => c.ranges_unchecked += 1,
            }
            Ok(Some((body, to)))
        }
    })
    .boxed()
}

#[allow(clippy::too_many_arguments)]
async fn get_range(
    url: &url::Url,
    r: Range<u64>,
    etag: Option<&str>,
    key: &str,
    window: Duration,
    counters: &super::Counters,
    limits: &crate::limit::Limits,
    seen: &Seen,
) -> Result<(Bytes, Option<[u8; 16]>), CopyError> {
    use crate::store::retry::{Backoff, retryable_status};
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    let client = CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(60))
            .build()
            .unwrap_or_default()
    });
    let what = "reading the source (a range with its MD5)";
    let mut backoff = Backoff::with_window(window);
    loop {
        counters.get.fetch_add(1, Relaxed);
        limits.take_request().await;
        let mut req = client
            .get(url.clone())
            .header("x-ms-range", format!("bytes={}-{}", r.start, r.end - 1))
            .header("x-ms-range-get-content-md5", "true");
        if let Some(e) = etag {
            req = req.header("if-match", e);
        }
        let mut status = None;
        // A reqwest error would print the SAS URL (a signature): only its kind is kept.
        let failure = match req.send().await {
            Ok(resp) => {
                let code = resp.status().as_u16();
                status = Some(code);
                match code {
                    200..=299 => {
                        let h = DigestHeaders::of(resp.headers());
                        match resp.bytes().await {
                            Ok(body) => {
                                let mut c = seen.lock().expect("claims lock");
                                c.add_headers(&h, true);
                                if let Some(v) = h.get("x-ms-meta-moverctl_crc64nvme") {
                                    c.add_meta_crc64(v);
                                }
                                let md5 = h.get("content-md5").and_then(|v| {
                                    use base64::Engine;
                                    base64::engine::general_purpose::STANDARD
                                        .decode(v.trim())
                                        .ok()?
                                        .try_into()
                                        .ok()
                                });
                                return Ok((body, md5));
                            }
                            Err(_) => "the connection broke while reading the body".to_string(),
                        }
                    }
                    412 => return Err(CopyError::SourceChanged),
                    c if retryable_status(c) => format!("the store answered {c}"),
                    c => {
                        return Err(s3_answer_error(
                            what,
                            format!("the store answered {c} for a range of {key}"),
                            Some(c),
                        ));
                    }
                }
            }
            Err(e) if e.is_timeout() => "the request timed out".to_string(),
            Err(e) if e.is_connect() => "the connection failed".to_string(),
            Err(_) => "the connection broke".to_string(),
        };
        if !backoff
            .wait_logged(&format!("GET of a range of source object {key}"), &failure)
            .await
        {
            return Err(s3_answer_error(
                what,
                format!(
                    "{failure}; gave up after {} retries over {:.0?}",
                    backoff.retries(),
                    backoff.elapsed()
                ),
                status,
            ));
        }
    }
}
