//! Every HTTP request object_store makes passes through [`Observed`], a thin wrapper around its
//! reqwest service. It exists because object_store hides two things moverctl needs:
//!
//! - **Throttling.** object_store retries 503 / 429 answers itself, so a "slow down" it absorbed
//!   never reaches the caller. The wrapper sees every status and tells the run's AIMD window
//!   ([`Observer::on_throttle`]), so concurrency drops on the first SlowDown, not only when
//!   retries run out.
//! - **Digests in response headers.** GCS (`x-goog-hash`), Azure (`Content-MD5`,
//!   `x-ms-blob-content-md5`, `x-ms-content-crc64`) and S3 (`x-amz-checksum-*`) say what the
//!   bytes should hash to. The wrapper copies those headers into the response's extensions
//!   (object_store hands them back in `GetResult::extensions`), and into a task-local
//!   [`Capture`] slot for calls whose results carry no extensions (`put_part`).
//!
//! The wrapper never reads or changes bodies. It logs (target `moverctl::http`) each request at
//! debug level and each failed or throttled one at info, with the method, the store, the URL's
//! *path* and the status: never the query (presigned signatures, SAS tokens) or a header.

use object_store::ClientOptions;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpRequest, HttpResponse, HttpService, ReqwestConnector,
};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// The response headers that carry digests (lower-case names).
const DIGEST_HEADERS: &[&str] = &[
    "etag",
    "content-md5",
    "content-length",
    "x-goog-hash",
    "x-ms-blob-content-md5",
    "x-ms-content-crc64",
    "x-amz-checksum-crc64nvme",
    "x-amz-checksum-crc32c",
    "x-amz-checksum-crc32",
    "x-amz-checksum-sha256",
    "x-amz-checksum-type",
    "x-amz-mp-parts-count",
    "x-amz-server-side-encryption",
    "x-amz-server-side-encryption-customer-algorithm",
    // What an object carries besides its bytes (transfer::fidelity).
    "content-type",
    "content-encoding",
    "content-language",
    "content-disposition",
    "cache-control",
    "x-amz-tagging-count",
];

/// Digest headers of one response, by lower-case name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DigestHeaders(pub Vec<(String, String)>);

impl DigestHeaders {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The digest headers of a response, its content headers and its user metadata headers.
    pub fn of(headers: &http::HeaderMap) -> DigestHeaders {
        DigestHeaders(
            headers
                .iter()
                .filter(|(k, _)| {
                    let k = k.as_str();
                    DIGEST_HEADERS.contains(&k)
                        || k.starts_with("x-amz-meta-")
                        || k.starts_with("x-ms-meta-")
                        || k.starts_with("x-goog-meta-")
                })
                .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
                .collect(),
        )
    }

    /// The MD5 the store keeps for the whole object: GCS `x-goog-hash: md5=…`, Azure
    /// `Content-MD5` (whole reads) or `x-ms-blob-content-md5` (ranged reads).
    pub fn whole_md5(&self, ranged: bool) -> Option<[u8; 16]> {
        if let Some(m) = self.goog("md5") {
            return b64_array(m);
        }
        if let Some(m) = self.get("x-ms-blob-content-md5") {
            return b64_array(m);
        }
        if !ranged {
            return self.get("content-md5").and_then(b64_array);
        }
        None
    }

    /// GCS `x-goog-hash: crc32c=…` (big-endian, base64) for the whole object.
    pub fn whole_crc32c(&self) -> Option<u32> {
        self.goog("crc32c")
            .and_then(b64_array::<4>)
            .map(u32::from_be_bytes)
    }

    /// S3's stored full-object CRC64/NVME (`x-amz-checksum-crc64nvme`, only returned with
    /// checksum mode; multipart uploads store it as a full-object checksum).
    pub fn whole_crc64(&self) -> Option<u64> {
        self.get("x-amz-checksum-crc64nvme")
            .and_then(b64_array::<8>)
            .map(u64::from_be_bytes)
    }

    /// Azure's `x-ms-content-crc64` (CRC64/NVME of the bytes of one request, little-endian,
    /// base64): what a Put Block received.
    pub fn block_crc64(&self) -> Option<u64> {
        self.get("x-ms-content-crc64")
            .and_then(b64_array::<8>)
            .map(u64::from_le_bytes)
    }

    /// The stored CRC64/NVME when it is a full-object checksum (`x-amz-checksum-type` absent or
    /// `FULL_OBJECT`; a composite checksum of parts is not the object's CRC).
    pub fn full_object_crc64(&self) -> Option<u64> {
        let full = self
            .get("x-amz-checksum-type")
            .is_none_or(|t| t.trim().eq_ignore_ascii_case("FULL_OBJECT"));
        if full { self.whole_crc64() } else { None }
    }

    /// Whether this S3 answer's ETag can be an MD5 of the content. AWS documents that objects
    /// encrypted with SSE-KMS (also DSSE-KMS) or SSE-C have ETags that are not MD5 digests of
    /// their data; the answer says which encryption was applied.
    pub fn s3_etag_can_be_md5(&self) -> bool {
        let kms = self
            .get("x-amz-server-side-encryption")
            .is_some_and(|v| v.trim().starts_with("aws:kms"));
        !kms && self
            .get("x-amz-server-side-encryption-customer-algorithm")
            .is_none()
    }

    fn goog(&self, which: &str) -> Option<&str> {
        // GCS sends one x-goog-hash header per digest (`crc32c=…`, then `md5=…`); some servers
        // send one header with comma-separated pairs. Both forms are read.
        self.0
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("x-goog-hash"))
            .flat_map(|(_, v)| v.split(','))
            .find_map(|p| {
                let (k, v) = p.trim().split_once('=')?;
                (k == which).then_some(v)
            })
    }
}

fn b64_array<const N: usize>(s: &str) -> Option<[u8; N]> {
    use base64::Engine;
    let v = base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .ok()?;
    v.try_into().ok()
}

tokio::task_local! {
    static CAPTURE: Capture;
}

/// Where the responses of calls made inside [`Capture::scope`] leave their digest headers (the
/// last response wins: object_store's own retries overwrite earlier attempts), and optionally
/// the MD5 to send as `Content-MD5` with the PUT made inside it (S3 checks it against the body it
/// receives and refuses a mismatch with `BadDigest`; SigV4 does not sign the header, so adding
/// it after object_store signed the request is valid).
#[derive(Debug, Clone, Default)]
pub struct Capture(Arc<Mutex<Option<DigestHeaders>>>, Option<[u8; 16]>);

impl Capture {
    /// A capture that also sends `md5` as `Content-MD5` with the PUT made inside it.
    pub fn sending_md5(md5: Option<[u8; 16]>) -> Capture {
        Capture(Arc::default(), md5)
    }

    pub async fn scope<F: std::future::Future>(&self, f: F) -> F::Output {
        CAPTURE.scope(self.clone(), f).await
    }

    pub fn take(&self) -> Option<DigestHeaders> {
        self.0.lock().expect("capture lock").take()
    }
}

type Hook = Arc<dyn Fn() + Send + Sync>;

/// Shared by every request of one store: status counts, and the throttle hook of the run that
/// uses the store.
#[derive(Default)]
pub struct Observer {
    /// Responses with 503 or 429, including those object_store retried itself.
    pub throttled: AtomicU64,
    /// Responses with another 5xx.
    pub server_errors: AtomicU64,
    pub requests: AtomicU64,
    hook: Mutex<Option<Hook>>,
    /// The store's location as shown, for log lines.
    label: std::sync::OnceLock<String>,
    /// Failed attempts of requests still being retried, by method and path: the retry number
    /// in log lines (object_store retries its own requests without telling).
    failing: Mutex<std::collections::HashMap<(String, String), (u32, std::time::Instant)>>,
    /// The last answer refusing the credentials as expired or invalid (a 401, or 400 / 403 with
    /// an [`super::error::EXPIRED_CODES`] code), and the last 400 / 403 without a body to say
    /// why (a HEAD): which store of a copy refused, and whether renewing may help.
    expired_at: Mutex<Option<std::time::Instant>>,
    unexplained_at: Mutex<Option<std::time::Instant>>,
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observer")
            .field("throttled", &self.throttled.load(Relaxed))
            .field("requests", &self.requests.load(Relaxed))
            .finish()
    }
}

impl Observer {
    /// Names the store in log lines (its location as shown).
    pub fn set_label(&self, label: String) {
        let _ = self.label.set(label);
    }

    fn label(&self) -> &str {
        self.label.get().map(String::as_str).unwrap_or("store")
    }

    /// Counts a failed attempt of `method path` (and a retry, see [`super::retry::retried`]);
    /// returns its retry number (1 for the first failure) and what the -v line says of the
    /// next: its longest wait and how long the retry window has left.
    fn failed_attempt(&self, method: &str, path: &str) -> (u32, String) {
        let mut m = self.failing.lock().expect("failing lock");
        if m.len() > 10_000 {
            m.clear();
        }
        let now = std::time::Instant::now();
        let n = m
            .entry((method.to_string(), path.to_string()))
            .or_insert((0, now));
        n.0 += 1;
        super::retry::count_retry();
        let left = super::retry::timeout().saturating_sub(n.1.elapsed());
        let next = format!(
            "retry {} in at most {:.1} s (retrying for {} more, --retry-timeout)",
            n.0,
            super::retry::longest_wait(n.0).as_secs_f64(),
            humantime::format_duration(std::time::Duration::from_secs(left.as_secs()))
        );
        (n.0, next)
    }

    /// Forgets the failures of `method path` (it succeeded); returns how many there were.
    fn succeeded(&self, method: &str, path: &str) -> u32 {
        let mut m = self.failing.lock().expect("failing lock");
        if m.is_empty() {
            return 0;
        }
        m.remove(&(method.to_string(), path.to_string()))
            .map_or(0, |f| f.0)
    }

    /// A request of this store was refused as expired or invalid credentials.
    pub fn note_expired(&self) {
        *self.expired_at.lock().expect("expired lock") = Some(std::time::Instant::now());
    }

    /// A request of this store was refused (400, 403) without a body saying why.
    pub fn note_unexplained_refusal(&self) {
        *self.unexplained_at.lock().expect("expired lock") = Some(std::time::Instant::now());
    }

    /// Whether a request was refused as expired since `t` (and whether one was refused without
    /// saying why).
    pub fn refused_since(&self, t: std::time::Instant) -> (bool, bool) {
        let after = |m: &Mutex<Option<std::time::Instant>>| {
            m.lock().expect("expired lock").is_some_and(|at| at >= t)
        };
        (after(&self.expired_at), after(&self.unexplained_at))
    }

    /// Notes a refusal by status and error body (see [`Observer::note_expired`]).
    pub fn judge_refusal(&self, status: u16, body: &[u8]) {
        if !matches!(status, 400 | 401 | 403) {
            return;
        }
        if status == 401 || super::error::expired_text(&String::from_utf8_lossy(body)) {
            self.note_expired();
        } else if body.is_empty() {
            self.note_unexplained_refusal();
        }
    }

    /// Calls `f` on every throttling answer (503, 429) from now on.
    pub fn on_throttle(&self, f: impl Fn() + Send + Sync + 'static) {
        *self.hook.lock().expect("hook lock") = Some(Arc::new(f));
    }

    /// Counts one response (also for requests moverctl sends itself, e.g. LIST pages).
    pub(crate) fn saw(&self, status: u16) {
        self.requests.fetch_add(1, Relaxed);
        if status == 503 || status == 429 {
            self.throttled.fetch_add(1, Relaxed);
            let hook = self.hook.lock().expect("hook lock").clone();
            if let Some(h) = hook {
                h();
            }
        } else if status >= 500 {
            self.server_errors.fetch_add(1, Relaxed);
        }
    }
}

/// The connector object_store's builders take: reqwest, as object_store would build it, wrapped.
/// With `send_md5`, PUTs inside a [`Capture::sending_md5`] scope carry `Content-MD5`, which the
/// server checks against the body (S3 `BadDigest`, GCS `BadDigest`). S3 and GCS only: SigV4 does
/// not sign that header and GCS's OAuth bearer tokens sign nothing, but Azure's shared-key
/// signature covers `Content-MD5`, so it cannot be added after signing.
#[derive(Debug, Clone)]
pub struct ObservingConnector {
    pub observer: Arc<Observer>,
    pub send_md5: bool,
}

impl HttpConnector for ObservingConnector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let client = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(Observed {
            inner: client,
            observer: self.observer.clone(),
            send_md5: self.send_md5,
        }))
    }
}

#[derive(Debug)]
struct Observed {
    inner: HttpClient,
    observer: Arc<Observer>,
    send_md5: bool,
}

#[async_trait::async_trait]
impl HttpService for Observed {
    async fn call(&self, mut req: HttpRequest) -> Result<HttpResponse, HttpError> {
        if req.method() == http::Method::PUT
            && self.send_md5
            && let Ok(Some(md5)) = CAPTURE.try_with(|c| c.1)
        {
            use base64::Engine;
            let v = base64::engine::general_purpose::STANDARD.encode(md5);
            if let Ok(v) = http::HeaderValue::from_str(&v) {
                req.headers_mut()
                    .insert(http::HeaderName::from_static("content-md5"), v);
            }
        }
        let method = req.method().to_string();
        let path = req.uri().path().to_string();
        let host = req
            .uri()
            .authority()
            .map(|a| a.to_string())
            .unwrap_or_default();
        let started = std::time::Instant::now();
        let mut res = match self.inner.execute(req).await {
            Ok(r) => r,
            Err(e) => {
                let (n, next) = self.observer.failed_attempt(&method, &path);
                tracing::info!(
                    target: "moverctl::http",
                    store = self.observer.label(),
                    method = %method,
                    path = %path,
                    attempt = n,
                    ms = started.elapsed().as_millis() as u64,
                    "{method} {path} ({}): {} ({host}); {next}",
                    self.observer.label(),
                    plain_cause(&e)
                );
                return Err(e);
            }
        };
        let status = res.status().as_u16();
        self.observer.saw(status);
        let ms = started.elapsed().as_millis() as u64;
        if status >= 500 || status == 429 || status == 408 {
            let (n, next) = self.observer.failed_attempt(&method, &path);
            let what = if status == 503 || status == 429 {
                "the store asks to slow down"
            } else {
                "server error"
            };
            tracing::info!(
                target: "moverctl::http",
                store = self.observer.label(),
                method = %method,
                path = %path,
                status,
                attempt = n,
                ms,
                "{method} {path} ({}): {status} ({what}); {next}",
                self.observer.label()
            );
        } else {
            let retries = self.observer.succeeded(&method, &path);
            tracing::debug!(
                target: "moverctl::http",
                store = self.observer.label(),
                method = %method,
                path = %path,
                status,
                retries,
                ms,
                "request"
            );
        }
        if matches!(status, 400 | 401 | 403) {
            // Which store refused, and whether as expired credentials: the error body is small
            // (an XML or JSON error) and is read here and handed on unchanged.
            let (parts, body) = res.into_parts();
            let bytes = body.bytes().await.unwrap_or_default();
            self.observer.judge_refusal(status, &bytes);
            res = HttpResponse::from_parts(parts, bytes.into());
        }
        let found = DigestHeaders::of(res.headers());
        let _ = CAPTURE.try_with(|c| {
            *c.0.lock().expect("capture lock") = Some(found.clone());
        });
        res.extensions_mut().insert(found);
        Ok(res)
    }
}

/// A reqwest failure in plain words, naming `authority` (host:port) but never the URL: "cannot
/// connect to 127.0.0.1:9: Connection refused (os error 111)".
pub fn plain_reqwest_cause(e: &reqwest::Error, authority: &str) -> String {
    let mut inner: &(dyn std::error::Error + 'static) = e;
    while let Some(s) = inner.source() {
        inner = s;
    }
    let kind = if e.is_connect() {
        format!("cannot connect to {authority}")
    } else if e.is_timeout() {
        format!("{authority} timed out")
    } else if e.is_body() || e.is_decode() {
        format!("the answer from {authority} broke off")
    } else {
        format!("the request to {authority} failed")
    };
    let text = inner.to_string();
    if text.contains("://")
        || std::ptr::eq(inner as *const _ as *const u8, e as *const _ as *const u8)
    {
        kind
    } else {
        format!("{kind}: {text}")
    }
}

/// The cause of a failed request in plain words, without its URL: the innermost error of the
/// chain ("Connection refused (os error 111)"), which names no URL, after the error's kind.
fn plain_cause(e: &HttpError) -> String {
    let mut inner: &(dyn std::error::Error + 'static) = e;
    while let Some(s) = inner.source() {
        inner = s;
    }
    let kind = match e.kind() {
        object_store::client::HttpErrorKind::Connect => "cannot connect",
        object_store::client::HttpErrorKind::Request => "the request failed",
        object_store::client::HttpErrorKind::Timeout => "timed out",
        object_store::client::HttpErrorKind::Decode => "the answer could not be read",
        object_store::client::HttpErrorKind::Interrupted => "the connection broke off",
        _ => "failed",
    };
    let text = inner.to_string();
    // reqwest's own messages name the URL ("error sending request for url (…)"): never shown.
    if text.contains("://") {
        kind.to_string()
    } else {
        format!("{kind}: {text}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&str, &str)]) -> DigestHeaders {
        let mut m = http::HeaderMap::new();
        for (k, v) in pairs {
            m.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        DigestHeaders::of(&m)
    }

    #[test]
    fn goog_hash_gives_md5_and_crc32c() {
        // md5("hello world") and crc32c("hello world") as GCS sends them.
        let d = h(&[(
            "x-goog-hash",
            "crc32c=yZRlqg==,md5=XrY7u+Ae7tCTyyK7j1rNww==",
        )]);
        assert_eq!(
            crate::checksum::hex(&d.whole_md5(true).unwrap()),
            "5eb63bbbe01eeed093cb22bb8f5acdc3"
        );
        assert_eq!(d.whole_crc32c(), Some(0xc99465aa));
    }

    #[test]
    fn goog_hash_as_two_headers_as_gcs_sends_it() {
        let d = h(&[
            ("x-goog-hash", "crc32c=yZRlqg=="),
            ("x-goog-hash", "md5=XrY7u+Ae7tCTyyK7j1rNww=="),
        ]);
        assert_eq!(
            crate::checksum::hex(&d.whole_md5(true).unwrap()),
            "5eb63bbbe01eeed093cb22bb8f5acdc3"
        );
        assert_eq!(d.whole_crc32c(), Some(0xc99465aa));
        // A composite (multipart) object: a CRC32C and no MD5.
        let d = h(&[("x-goog-hash", "crc32c=yZRlqg==")]);
        assert_eq!(d.whole_md5(true), None);
        assert_eq!(d.whole_crc32c(), Some(0xc99465aa));
    }

    #[test]
    fn sse_kms_and_sse_c_etags_are_not_md5s() {
        assert!(h(&[]).s3_etag_can_be_md5());
        assert!(h(&[("x-amz-server-side-encryption", "AES256")]).s3_etag_can_be_md5());
        assert!(!h(&[("x-amz-server-side-encryption", "aws:kms")]).s3_etag_can_be_md5());
        assert!(!h(&[("x-amz-server-side-encryption", "aws:kms:dsse")]).s3_etag_can_be_md5());
        assert!(
            !h(&[("x-amz-server-side-encryption-customer-algorithm", "AES256")])
                .s3_etag_can_be_md5()
        );
    }

    #[test]
    fn azure_md5_for_whole_and_ranged_reads() {
        let d = h(&[("content-md5", "XrY7u+Ae7tCTyyK7j1rNww==")]);
        assert!(d.whole_md5(false).is_some());
        // A ranged read's Content-MD5 (if any) is the range's, not the blob's.
        assert_eq!(d.whole_md5(true), None);
        let d = h(&[("x-ms-blob-content-md5", "XrY7u+Ae7tCTyyK7j1rNww==")]);
        assert!(d.whole_md5(true).is_some());
    }

    #[test]
    fn unrelated_headers_are_not_kept() {
        let d = h(&[("authorization", "secret"), ("etag", "\"abc\"")]);
        assert_eq!(d.0, vec![("etag".to_string(), "\"abc\"".to_string())]);
    }
}
