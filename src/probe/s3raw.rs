//! Raw S3 header checks, which object_store cannot make itself: it sends no `Content-MD5`,
//! no `x-amz-checksum-crc32c` / `-crc32`, and never reads a stored checksum back. Each request is
//! presigned by object_store's `Signer` (the headers under test are bound to the signature) and
//! sent with reqwest. Presigned URLs carry the key id and a signature: they are never printed,
//! and reqwest errors are stripped of their URL.
//!
//! Per header, with a correct value and then a deliberately wrong one (the digest of other bytes):
//!
//! | correct | wrong | accepted | checked |
//! |---|---|---|---|
//! | 2xx | 4xx | yes | yes (the wrong value's error code is named, e.g. BadDigest) |
//! | 2xx | 2xx | yes | no: not checked |
//! | 4xx | any | no (the header is refused) | unknown |
//!
//! A checksum is "stored" when HEAD with `x-amz-checksum-mode: ENABLED` returns the value sent.

use super::common::{short, test_bytes};
use super::{Ctx, Finding, ProbeReport, Status};
use crate::store::OpenError;
use crate::store::config::{Remote, Remotes};
use crate::store::location::Location;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use bytes::Bytes;
use md5::{Digest, Md5};
use object_store::aws::AmazonS3;
use object_store::path::Path;
use object_store::signer::{HeaderMap, HeaderName, HeaderValue, Method, SignedUrlOptions, Signer};
use std::sync::Arc;
use std::time::Duration;

/// The location as a concrete `AmazonS3` (for presigning), built with the same settings as
/// `Store::open`; `None` for locations that are not S3.
pub fn open_s3(given: &str, remotes: &Remotes) -> Result<Option<Arc<AmazonS3>>, OpenError> {
    let loc = Location::parse(given, remotes)?;
    let Location::S3 { bucket, remote, .. } = &loc else {
        return Ok(None);
    };
    let remote: Option<&Remote> = remote.as_deref().and_then(|r| remotes.get(r));
    Ok(Some(crate::store::build_s3(
        &loc,
        bucket,
        remote,
        Default::default(),
    )?))
}

#[derive(Clone, Copy)]
enum Header {
    ContentMd5,
    Sha256,
    Crc32c,
    Crc32,
    Crc64Nvme,
}

impl Header {
    const ALL: [Header; 5] = [
        Header::ContentMd5,
        Header::Sha256,
        Header::Crc32c,
        Header::Crc32,
        Header::Crc64Nvme,
    ];

    fn name(self) -> &'static str {
        match self {
            Header::ContentMd5 => "content-md5",
            Header::Sha256 => "x-amz-checksum-sha256",
            Header::Crc32c => "x-amz-checksum-crc32c",
            Header::Crc32 => "x-amz-checksum-crc32",
            Header::Crc64Nvme => "x-amz-checksum-crc64nvme",
        }
    }

    fn shown(self) -> &'static str {
        match self {
            Header::ContentMd5 => "Content-MD5",
            h => h.name(),
        }
    }

    fn id(self) -> &'static str {
        match self {
            Header::ContentMd5 => "content_md5",
            Header::Sha256 => "checksum_sha256",
            Header::Crc32c => "checksum_crc32c",
            Header::Crc32 => "checksum_crc32",
            Header::Crc64Nvme => "checksum_crc64nvme",
        }
    }

    /// Base64 of the big-endian digest, as S3 wants it.
    fn value(self, body: &[u8]) -> String {
        use crc_fast::CrcAlgorithm as A;
        match self {
            Header::ContentMd5 => B64.encode(Md5::digest(body)),
            Header::Sha256 => B64.encode(<sha2::Sha256 as sha2::Digest>::digest(body)),
            Header::Crc32c => {
                B64.encode((crc_fast::checksum(A::Crc32Iscsi, body) as u32).to_be_bytes())
            }
            Header::Crc32 => {
                B64.encode((crc_fast::checksum(A::Crc32IsoHdlc, body) as u32).to_be_bytes())
            }
            Header::Crc64Nvme => B64.encode(crc_fast::checksum(A::Crc64Nvme, body).to_be_bytes()),
        }
    }

    fn stored_back(self) -> bool {
        !matches!(self, Header::ContentMd5)
    }
}

/// Every raw row, reported as not tested (other stores, or S3 without a signer).
pub(crate) fn not_tested(report: &mut ProbeReport, detail: &str) {
    for h in Header::ALL {
        for (suffix, q) in rows(h) {
            report.findings.push(Finding::new(
                &format!("{}_{suffix}", h.id()),
                &q,
                Status::NotTested,
                detail,
            ));
        }
    }
}

fn rows(h: Header) -> Vec<(&'static str, String)> {
    let mut v = vec![
        ("accepted", format!("{}: correct value accepted", h.shown())),
        ("checked", format!("{}: wrong value rejected", h.shown())),
    ];
    if h.stored_back() {
        v.push(("stored", format!("{}: stored and read back", h.shown())));
    }
    v
}

struct Raw {
    status: u16,
    /// The S3 error code and message from the body, when there is one.
    error: Option<String>,
    headers: reqwest::header::HeaderMap,
}

impl Raw {
    fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    fn said(&self) -> String {
        match &self.error {
            Some(e) => format!("{} {e}", self.status),
            None => format!("HTTP {}", self.status),
        }
    }
}

struct Client<'a> {
    s3: &'a AmazonS3,
    http: reqwest::Client,
}

impl Client<'_> {
    async fn send(
        &self,
        method: Method,
        path: &Path,
        headers: &[(&'static str, String)],
        body: Option<Bytes>,
    ) -> Result<Raw, String> {
        let mut opts = SignedUrlOptions::default();
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            let name = HeaderName::from_static(k);
            let value = HeaderValue::from_str(v).map_err(|e| e.to_string())?;
            opts = opts.with_signed_header(name.clone(), value.clone());
            map.insert(name, value);
        }
        let url = self
            .s3
            .signed_url_opts(method.clone(), path, Duration::from_secs(300), &opts)
            .await
            .map_err(|e| format!("presigning failed: {}", short(&e)))?;
        let mut req = self.http.request(method, url).headers(map);
        if let Some(b) = body {
            req = req.body(b);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| format!("request failed: {}", short(&e.without_url())))?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.unwrap_or_default();
        let error =
            (!(200..300).contains(&status) && !text.trim().is_empty()).then(|| short(&text));
        Ok(Raw {
            status,
            error,
            headers,
        })
    }
}

pub(crate) async fn run(ctx: &Ctx<'_>, s3: &AmazonS3, report: &mut ProbeReport) {
    let Some(client) = client(s3, report) else {
        return;
    };
    for h in Header::ALL {
        check_header(ctx, &client, h, report).await;
    }
}

/// Only the `x-amz-checksum-crc64nvme` rows (accepted, checked, stored): what grants the
/// checksum-only path ([`super::checksum_only`]).
pub(crate) async fn run_crc64(ctx: &Ctx<'_>, s3: &AmazonS3, report: &mut ProbeReport) {
    if let Some(client) = client(s3, report) {
        check_header(ctx, &client, Header::Crc64Nvme, report).await;
    }
}

/// The HTTP client the raw checks send with; None (every row "not tested") when there is none.
fn client<'a>(s3: &'a AmazonS3, report: &mut ProbeReport) -> Option<Client<'a>> {
    let http = match reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .connect_timeout(Duration::from_secs(10))
        .user_agent(format!("moverctl/{}", env!("CARGO_PKG_VERSION")))
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            not_tested(
                report,
                &format!("not tested: no HTTP client ({})", short(&e)),
            );
            return None;
        }
    };
    Some(Client { s3, http })
}

async fn check_header(ctx: &Ctx<'_>, client: &Client<'_>, h: Header, report: &mut ProbeReport) {
    let body = test_bytes(ctx.seed ^ 0xc4ec, 4096);
    let other = test_bytes(ctx.seed ^ 0x0e4e, 4096);
    let good = h.value(&body);
    let bad = h.value(&other);
    let id = h.id();
    let [accepted_q, checked_q] = [0, 1].map(|i| rows(h)[i].1.clone());
    let stored_q = rows(h).get(2).map(|r| r.1.clone());
    let ok_path = ctx.path(&format!("raw/{id}-correct"));
    let bad_path = ctx.path(&format!("raw/{id}-wrong"));
    let push = |report: &mut ProbeReport, suffix: &str, q: &str, s: Status, d: String| {
        report
            .findings
            .push(Finding::new(&format!("{id}_{suffix}"), q, s, d));
    };
    let correct = client
        .send(
            Method::PUT,
            &ok_path,
            &[(h.name(), good.clone())],
            Some(body.clone()),
        )
        .await;
    let correct = match correct {
        Ok(r) => r,
        Err(e) => {
            push(report, "accepted", &accepted_q, Status::Unknown, e.clone());
            push(report, "checked", &checked_q, Status::Unknown, e.clone());
            if let Some(q) = &stored_q {
                push(report, "stored", q, Status::Unknown, e);
            }
            return;
        }
    };
    if !correct.ok() {
        let d = format!("a correct value is refused: {}", correct.said());
        push(report, "accepted", &accepted_q, Status::No, d);
        push(
            report,
            "checked",
            &checked_q,
            Status::Unknown,
            "cannot tell: the header is refused altogether".into(),
        );
        if let Some(q) = &stored_q {
            push(
                report,
                "stored",
                q,
                Status::NotTested,
                "not tested: the header is refused".into(),
            );
        }
        return;
    }
    push(
        report,
        "accepted",
        &accepted_q,
        Status::Yes,
        format!("a correct value is accepted (HTTP {})", correct.status),
    );
    let (s, d) = checked(client, h, &bad_path, bad, body).await;
    push(report, "checked", &checked_q, s, d);
    let Some(stored_q) = stored_q else {
        return; // Content-MD5 has no read-back of its own; the ETag row covers it.
    };
    let (s, d) = stored(client, h, &ok_path, &good).await;
    push(report, "stored", &stored_q, s, d);
}

/// Whether a wrong value (`bad`) is refused: the PUT of `body` with it to `bad_path`.
async fn checked(
    client: &Client<'_>,
    h: Header,
    bad_path: &Path,
    bad: String,
    body: Bytes,
) -> (Status, String) {
    match client
        .send(Method::PUT, bad_path, &[(h.name(), bad)], Some(body))
        .await
    {
        Ok(r) if r.ok() => (
            Status::No,
            format!(
                "not checked: a wrong value was accepted (HTTP {})",
                r.status
            ),
        ),
        Ok(r) => (
            Status::Yes,
            format!("a wrong value is rejected: {}", r.said()),
        ),
        Err(e) => (Status::Unknown, e),
    }
}

/// Whether the value sent (`good`, with the object at `ok_path`) is stored: HEAD with
/// `x-amz-checksum-mode: ENABLED` returns it.
async fn stored(client: &Client<'_>, h: Header, ok_path: &Path, good: &str) -> (Status, String) {
    let head = client
        .send(
            Method::HEAD,
            ok_path,
            &[("x-amz-checksum-mode", "ENABLED".into())],
            None,
        )
        .await;
    match head {
        Err(e) => (Status::Unknown, e),
        Ok(r) if !r.ok() => (
            Status::Unknown,
            format!("HEAD with checksum mode failed: {}", r.said()),
        ),
        Ok(r) => {
            let got = r
                .headers
                .get(h.name())
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let kind = r
                .headers
                .get("x-amz-checksum-type")
                .and_then(|v| v.to_str().ok())
                .map(|t| format!(" (type {t})"))
                .unwrap_or_default();
            match got {
                Some(v) if v == good => (
                    Status::Yes,
                    format!("HEAD with x-amz-checksum-mode returns the value sent{kind}"),
                ),
                Some(v) => (
                    Status::No,
                    format!("HEAD returned {v}, not the value sent ({good}){kind}"),
                ),
                None => (
                    Status::No,
                    "accepted, but HEAD with x-amz-checksum-mode: ENABLED returns no such header"
                        .into(),
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_match_published_values() {
        // "hello world": well-known digests.
        let b = b"hello world";
        assert_eq!(Header::ContentMd5.value(b), "XrY7u+Ae7tCTyyK7j1rNww==");
        assert_eq!(
            Header::Sha256.value(b),
            "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek="
        );
        // CRC32 (IEEE) 0x0d4a1185, CRC32C 0xc99465aa.
        assert_eq!(
            Header::Crc32.value(b),
            B64.encode(0x0d4a1185u32.to_be_bytes())
        );
        assert_eq!(
            Header::Crc32c.value(b),
            B64.encode(0xc99465aau32.to_be_bytes())
        );
    }
}
