//! Requests moverctl signs itself (object_store's `Signer`) and sends with reqwest, where
//! object_store has no call for them (server-side copies, Put Block From URL, PUTs carrying a
//! checksum or a streamed body): the HTTP client, a signed PUT paced, counted and retried under
//! the one retry policy ([`put_signed`]), and the headers and XML fields of S3's answers. A
//! signed URL carries a signature: it is logged by path only and never printed.

use super::Store;
use super::retry::Backoff;
use crate::limit::Limits;
use object_store::Attribute;
use object_store::signer::{HeaderMap, HeaderName, HeaderValue};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// Where a signed PUT goes, what paces it (`--tpslimit`) and what counts it.
#[derive(Clone, Copy)]
pub struct PutTo<'a> {
    /// The store written (its retry window, and the observer its answers are told to).
    pub store: &'a Store,
    pub limits: &'a Limits,
    /// The run's count of PUT requests.
    pub puts: &'a AtomicU64,
}

/// The content headers, user metadata (moverctl's among them) and storage class as the headers
/// an S3 PUT or a CopyObject with `REPLACE` takes.
pub fn add_metadata(h: &mut HeaderMap, attrs: &object_store::Attributes) {
    for (k, v) in attrs {
        let name = match k {
            Attribute::Metadata(m) => format!("x-amz-meta-{m}"),
            Attribute::StorageClass => "x-amz-storage-class".to_string(),
            Attribute::ContentType => "content-type".to_string(),
            Attribute::ContentEncoding => "content-encoding".to_string(),
            Attribute::ContentLanguage => "content-language".to_string(),
            Attribute::ContentDisposition => "content-disposition".to_string(),
            Attribute::CacheControl => "cache-control".to_string(),
            _ => continue,
        };
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(v.as_ref()),
        ) {
            h.insert(n, v);
        }
    }
}

/// Why a [`checksum_head`] got no answer.
pub enum HeadFailed {
    /// The URL could not be signed.
    Sign(object_store::Error),
    /// The request failed on the way (its error holds no URL: a presigned URL is a signature).
    Send(reqwest::Error),
}

/// One HEAD of `path` as moverctl sends them to learn an object's digests: on a URL signed for
/// five minutes with `x-amz-checksum-mode: ENABLED` (the stored full-object checksum shown),
/// of part `part` only when given, pinned to `if_match`, sent by `client`; unsigned where the
/// store is read anonymously.
pub async fn checksum_head(
    s3: &object_store::aws::AmazonS3,
    anonymous: bool,
    client: &reqwest::Client,
    path: &object_store::path::Path,
    (part, if_match): (Option<u32>, Option<&str>),
) -> Result<reqwest::Response, HeadFailed> {
    use object_store::signer::{Method, SignedUrlOptions, Signer};
    let mode = HeaderName::from_static("x-amz-checksum-mode");
    let enabled = HeaderValue::from_static("ENABLED");
    let mut opts = SignedUrlOptions::default().with_signed_header(mode.clone(), enabled.clone());
    if let Some(n) = part {
        opts = opts.with_query([("partNumber", n.to_string())]);
    }
    let mut url = s3
        .signed_url_opts(Method::HEAD, path, Duration::from_secs(300), &opts)
        .await
        .map_err(HeadFailed::Sign)?;
    if anonymous {
        super::s3list::strip_signature(&mut url);
    }
    let mut req = client.head(url).header(mode, enabled);
    if let Some(e) = if_match {
        req = req.header("if-match", e);
    }
    req.send()
        .await
        .map_err(|e| HeadFailed::Send(e.without_url()))
}

/// The text of the first `<name>` element of an S3 XML answer, trimmed.
pub fn xml_field(body: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let start = body.find(&open)? + open.len();
    let len = body[start..].find(&close)?;
    Some(body[start..start + len].trim().to_string())
}

/// The HTTP client of moverctl's own signed requests (server-side copies, copies from a URL,
/// streamed and checksum-carrying PUTs).
pub fn client() -> &'static reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            // A copy of a large part takes the server a while; the answer comes at the end.
            .read_timeout(Duration::from_secs(600))
            .build()
            .unwrap_or_default()
    })
}

/// One answer to a signed PUT.
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

/// What an answer means to the request's caller.
pub enum Verdict<T, E> {
    Done(T),
    /// Worth another attempt (a 5xx, a throttle): why, and the status.
    Retry(String, Option<u16>),
    /// Failed for good, with the caller's error.
    Fail(E),
}

/// A PUT of `body` (its chunks in order) with `headers` to a URL signed anew for each attempt,
/// sent under [`send_retried`]. The URL carries a signature: it is logged by path only and no
/// transport error (which would print it) is kept.
pub async fn put_signed<T, E, S: Future<Output = Result<url::Url, E>>>(
    to: PutTo<'_>,
    what: &'static str,
    sign: impl Fn() -> S,
    headers: &HeaderMap,
    body: Vec<bytes::Bytes>,
    gave_up: impl Fn(String, Option<u16>) -> E,
    judge: impl Fn(Reply) -> Verdict<T, E>,
) -> Result<T, E> {
    let (sign, body, gave_up_ref) = (&sign, &body, &gave_up);
    let request = || async move {
        let url = sign().await?;
        let len: usize = body.iter().map(|b| b.len()).sum();
        let payload = match body.len() {
            0 => reqwest::Body::from(bytes::Bytes::new()),
            1 => reqwest::Body::from(body[0].clone()),
            _ => reqwest::Body::wrap_stream(futures::stream::iter(
                body.clone().into_iter().map(Ok::<_, std::io::Error>),
            )),
        };
        let mut r = client().put(url).header("content-length", len.to_string());
        for (k, v) in headers {
            r = r.header(k, v);
        }
        r.body(payload)
            .build()
            .map_err(|_| gave_up_ref("the request could not be built".into(), None))
    };
    send_retried(to, what, request, || None, gave_up_ref, judge).await
}

/// Sends the PUT `request` builds anew for each attempt (signed, with a fresh body), paced by
/// `--tpslimit` and counted (a throttling answer also slows the destination's window, as for
/// requests object_store sends), retried under the one retry policy while `judge` says so or
/// the connection fails; `body_failed` names an error of the body's own source (a read that
/// failed), which ends the retries at once; `gave_up` words the error when the retries run
/// out. Requests are logged by path only (a URL may carry a signature) and no transport error
/// (which would print the URL) is kept.
pub async fn send_retried<T, E, S: Future<Output = Result<reqwest::Request, E>>>(
    to: PutTo<'_>,
    what: &'static str,
    request: impl Fn() -> S,
    body_failed: impl Fn() -> Option<E>,
    gave_up: impl Fn(String, Option<u16>) -> E,
    judge: impl Fn(Reply) -> Verdict<T, E>,
) -> Result<T, E> {
    let mut backoff = Backoff::with_window(to.store.retry_window);
    loop {
        let mut req = request().await?;
        // As object_store bounds its own requests: an upload that stalls ends and is retried.
        *req.timeout_mut() = Some(Duration::from_secs(3600));
        to.limits.take_request().await;
        to.puts.fetch_add(1, Relaxed);
        let shown_path = req.url().path().to_string();
        let started = std::time::Instant::now();
        let (failure, last_status) = match client().execute(req).await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                to.store.observer.saw(status);
                let headers = resp.headers().clone();
                let body = resp.text().await.unwrap_or_default();
                to.store.observer.judge_refusal(status, body.as_bytes());
                tracing::debug!(
                    target: "moverctl::http",
                    method = "PUT",
                    path = %shown_path,
                    status,
                    ms = started.elapsed().as_millis() as u64,
                    "request ({what})"
                );
                match judge(Reply {
                    status,
                    headers,
                    body,
                }) {
                    Verdict::Done(t) => return Ok(t),
                    Verdict::Fail(e) => return Err(e),
                    Verdict::Retry(why, status) => (why, status),
                }
            }
            Err(_) if let Some(e) = body_failed() => return Err(e),
            Err(e) if e.is_timeout() => ("the request timed out".to_string(), None),
            Err(e) if e.is_connect() => ("the connection failed".to_string(), None),
            Err(_) => ("the connection broke".to_string(), None),
        };
        if !backoff.wait_logged(what, &failure).await {
            return Err(gave_up(
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
