//! ListObjectsV2 pages requested and read by moverctl itself, for S3 stores.
//!
//! object_store's paginated listing cannot be trusted to end a listing only where the store's
//! does: it drops `IsTruncated` (an answer that says "more follows" but gives no continuation
//! token looks like the last page), and its `Path` drops the trailing '/' of directory markers.
//! So each page is one presigned GET (object_store's [`Signer`], query `list-type=2`, `prefix`,
//! `continuation-token`, `max-keys`) sent with reqwest. The whole body is read and parsed inside
//! the retry loop of [`super::retry`]: a connection that fails or resets, a body that breaks off
//! or does not parse as a complete `ListBucketResult`, and a 5xx / 429 / 408 answer are tried
//! again with the policy's backoff until the store's retry window (`--retry-timeout`) is spent. Other answers (403, 404, a
//! redirect) end the listing with the store's error code. What a well-formed page means (markers,
//! truncation without a token, order) is decided by the caller, `super::list`.
//!
//! Presigned URLs carry a signature: they are never printed (reqwest errors are shown without
//! their URL).

use super::error::HttpStatus;
use super::http::Observer;
use super::retry::{Backoff, retryable_status};
use chrono::{DateTime, Utc};
use object_store::aws::AmazonS3;
use object_store::signer::{Method, SignedUrlOptions, Signer};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// One `<Contents>` of a page, with the key exactly as the store holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEntry {
    pub key: String,
    pub size: u64,
    pub last_modified: DateTime<Utc>,
    /// As listed (S3 quotes it), like object_store's `ObjectMeta::e_tag`.
    pub e_tag: Option<String>,
}

/// One parsed `ListBucketResult`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Page {
    pub entries: Vec<RawEntry>,
    pub truncated: bool,
    /// `NextContinuationToken` (an empty one counts as none).
    pub next_token: Option<String>,
}

/// Why a page could not be had.
#[derive(Debug)]
pub enum PageError {
    /// The request could not be signed (credentials could not be loaded).
    Sign(object_store::Error),
    /// 401 / 403: the credentials are wrong or not allowed to list.
    Denied(HttpStatus),
    /// Any other failure, after retries where retrying could help; with the last HTTP status
    /// when the store answered at all.
    Failed {
        status: Option<u16>,
        message: String,
    },
}

enum Attempt {
    Retry { status: Option<u16>, why: String },
    Stop(PageError),
}

fn retry(why: String) -> Attempt {
    Attempt::Retry { status: None, why }
}

/// Drops the `X-Amz-*` query of a presigned URL: for anonymous access (a public bucket), where
/// the presigner only signed with a placeholder key.
pub fn strip_signature(url: &mut url::Url) {
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| !k.to_ascii_lowercase().starts_with("x-amz-"))
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    url.query_pairs_mut().clear().extend_pairs(kept);
}

/// Requests the pages of one listing (one HTTP client for all of them).
pub struct S3Pages {
    s3: Arc<AmazonS3>,
    /// Anonymous access (a public bucket): the URL's signature is dropped.
    unsigned: bool,
    client: reqwest::Client,
    /// Full key prefix (empty: the whole bucket).
    prefix: String,
    max_keys: Option<usize>,
    observer: Arc<Observer>,
    /// How long a page is retried (the store's `retry_window`).
    window: Duration,
    /// Full key the listing starts after (S3 `start-after`, a shard's exclusive start).
    start_after: Option<String>,
    /// The store's credentials: a page refused as expired is asked again once, renewed.
    credentials: Option<Arc<super::awscreds::AwsCredentialCache>>,
}

impl S3Pages {
    pub fn new(
        s3: Arc<AmazonS3>,
        unsigned: bool,
        prefix: String,
        max_keys: Option<usize>,
        observer: Arc<Observer>,
        window: Duration,
    ) -> S3Pages {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(60))
            .timeout(Duration::from_secs(300))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(format!("moverctl/{}", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_default();
        S3Pages {
            s3,
            unsigned,
            client,
            prefix,
            max_keys,
            observer,
            window,
            start_after: None,
            credentials: None,
        }
    }

    /// The cache the store's requests sign with (see [`super::awscreds`]).
    pub fn credentials(mut self, c: Option<Arc<super::awscreds::AwsCredentialCache>>) -> S3Pages {
        self.credentials = c;
        self
    }

    /// Start the listing after this full key (sent with the first page only).
    pub fn start_after(mut self, key: Option<String>) -> S3Pages {
        self.start_after = key.filter(|k| !k.is_empty());
        self
    }

    async fn url(&self, token: Option<&str>) -> Result<url::Url, object_store::Error> {
        let mut q: Vec<(String, String)> = vec![("list-type".into(), "2".into())];
        if !self.prefix.is_empty() {
            q.push(("prefix".into(), self.prefix.clone()));
        }
        if let Some(t) = token {
            q.push(("continuation-token".into(), t.to_string()));
        } else if let Some(k) = &self.start_after {
            q.push(("start-after".into(), k.clone()));
        }
        if let Some(n) = self.max_keys {
            q.push(("max-keys".into(), n.to_string()));
        }
        let opts = SignedUrlOptions::default().with_query(q);
        // The empty path is the bucket itself (`{endpoint}/{bucket}/` or `https://{bucket}.…/`).
        let mut url = self
            .s3
            .signed_url_opts(
                Method::GET,
                &object_store::path::Path::default(),
                Duration::from_secs(900),
                &opts,
            )
            .await?;
        if self.unsigned {
            strip_signature(&mut url);
        }
        Ok(url)
    }

    /// The page after `token` (the first page without one), retried under the policy. Every
    /// attempt is counted in `requests`.
    pub async fn page(&self, token: Option<&str>, requests: &AtomicU64) -> Result<Page, PageError> {
        let mut backoff = Backoff::with_window(self.window);
        let mut renewed = false;
        loop {
            requests.fetch_add(1, Relaxed);
            let started = std::time::Instant::now();
            let (status, why) = match self.attempt(token).await {
                Ok(p) => return Ok(p),
                Err(Attempt::Stop(PageError::Denied(h))) => {
                    // Refused as expired: once more with renewed credentials.
                    let expired = self.observer.refused_since(started).0;
                    if !renewed
                        && expired
                        && let Some(c) = &self.credentials
                        && c.refused(started) == super::awscreds::Refusal::Retry
                    {
                        renewed = true;
                        continue;
                    }
                    return Err(PageError::Denied(h));
                }
                Err(Attempt::Stop(e)) => return Err(e),
                Err(Attempt::Retry { status, why }) => (status, why),
            };
            if !backoff.wait_logged("LIST page", &why).await {
                return Err(PageError::Failed {
                    status,
                    message: format!(
                        "{why} (still failing after {} retries over {:.1?}; the window is --retry-timeout)",
                        backoff.retries(),
                        backoff.elapsed()
                    ),
                });
            }
        }
    }

    async fn attempt(&self, token: Option<&str>) -> Result<Page, Attempt> {
        let url = self
            .url(token)
            .await
            .map_err(|e| Attempt::Stop(PageError::Sign(e)))?;
        let authority = match (url.host_str(), url.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            _ => String::new(),
        };
        let resp = self.client.get(url).send().await.map_err(|e| {
            retry(format!(
                "the LIST request failed: {}",
                super::http::plain_reqwest_cause(&e, &authority)
            ))
        })?;
        let status = resp.status().as_u16();
        self.observer.saw(status);
        let body = resp.bytes().await;
        if let Ok(b) = &body {
            self.observer.judge_refusal(status, b);
        }
        if !(200..300).contains(&status) {
            let detail = body.ok().map(|b| s3_error(&b)).unwrap_or_default();
            let why = format!("the store answered LIST with {status}{detail}");
            return Err(if retryable_status(status) {
                Attempt::Retry {
                    status: Some(status),
                    why,
                }
            } else if status == 401
                || status == 403
                || status == 400 && super::error::expired_text(&why)
            {
                Attempt::Stop(PageError::Denied(HttpStatus {
                    status,
                    message: why,
                }))
            } else {
                Attempt::Stop(PageError::Failed {
                    status: Some(status),
                    message: why,
                })
            });
        }
        let body = body.map_err(|e| {
            retry(format!(
                "the LIST answer broke off: {}",
                chain(&e.without_url())
            ))
        })?;
        parse(&body).map_err(|m| retry(format!("the LIST answer is not a complete listing: {m}")))
    }
}

/// An error and its sources, once each.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let t = s.to_string();
        if !out.contains(&t) {
            out.push_str(": ");
            out.push_str(&t);
        }
        cur = s.source();
    }
    out
}

/// ` (Code: Message)` of an S3 error body, if it has one.
fn s3_error(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let field = |name: &str| {
        let open = format!("<{name}>");
        let a = text.find(&open)? + open.len();
        let b = text[a..].find('<')? + a;
        Some(text[a..b].chars().take(200).collect::<String>())
    };
    match (field("Code"), field("Message")) {
        (Some(c), Some(m)) => format!(" ({c}: {m})"),
        (Some(c), None) => format!(" ({c})"),
        _ => String::new(),
    }
}

#[derive(Default)]
struct Partial {
    key: Option<String>,
    size: Option<String>,
    last_modified: Option<String>,
    e_tag: Option<String>,
}

/// Parses a whole `ListBucketResult`. Text is taken byte for byte (no trimming, no end-of-line
/// folding: keys may begin or end with spaces); character and the five predefined entity
/// references are decoded. An answer that is not a complete document (truncated, unbalanced),
/// has no `IsTruncated`, or whose `KeyCount` disagrees with its keys is an error.
pub fn parse(body: &[u8]) -> Result<Page, String> {
    use quick_xml::events::Event;
    let mut r = quick_xml::Reader::from_reader(body);
    r.config_mut().trim_text(false);
    r.config_mut().check_end_names = true;
    let mut buf = Vec::new();
    let mut doc = Doc::default();
    loop {
        let pos = r.buffer_position();
        let ev = r
            .read_event_into(&mut buf)
            .map_err(|e| format!("not well-formed XML near byte {pos}: {e}"))?;
        let (start, end) = match &ev {
            Event::Start(e) => (Some(e.local_name().as_ref().to_vec()), false),
            Event::Empty(e) => (Some(e.local_name().as_ref().to_vec()), true),
            Event::End(_) => (None, true),
            Event::Text(t) => {
                let s = t
                    .decode()
                    .map_err(|e| format!("text is not UTF-8 near byte {pos}: {e}"))?;
                if doc.stack.is_empty() && !s.trim().is_empty() {
                    return Err(format!("text outside the document near byte {pos}"));
                }
                doc.text.push_str(&s);
                (None, false)
            }
            Event::CData(c) => {
                let s = c
                    .decode()
                    .map_err(|e| format!("CDATA is not UTF-8 near byte {pos}: {e}"))?;
                doc.text.push_str(&s);
                (None, false)
            }
            Event::GeneralRef(g) => {
                doc.text.push(reference(g, pos)?);
                (None, false)
            }
            Event::Eof => break,
            _ => (None, false),
        };
        if let Some(name) = start {
            doc.open(name)?;
        }
        if end {
            doc.close()?;
        }
        buf.clear();
    }
    doc.finish()
}

/// The character a reference stands for: a character reference, or one of the five predefined
/// entities.
fn reference(g: &quick_xml::events::BytesRef, pos: u64) -> Result<char, String> {
    match g.resolve_char_ref() {
        Ok(Some(c)) => Ok(c),
        Ok(None) => {
            let name = g
                .decode()
                .map_err(|e| format!("bad reference near byte {pos}: {e}"))?;
            match &*name {
                "amp" => Ok('&'),
                "lt" => Ok('<'),
                "gt" => Ok('>'),
                "quot" => Ok('"'),
                "apos" => Ok('\''),
                other => Err(format!("unknown entity &{other}; near byte {pos}")),
            }
        }
        Err(e) => Err(format!("bad character reference near byte {pos}: {e}")),
    }
}

/// A `ListBucketResult` being read: the open elements, the text of the innermost one, and what
/// the page says so far.
#[derive(Default)]
struct Doc {
    stack: Vec<String>,
    text: String,
    closed: bool,
    truncated: Option<bool>,
    next_token: Option<String>,
    key_count: Option<u64>,
    cur: Option<Partial>,
    entries: Vec<RawEntry>,
}

impl Doc {
    /// An element starts (`name` as read).
    fn open(&mut self, name: Vec<u8>) -> Result<(), String> {
        let name = String::from_utf8(name).map_err(|_| "an element name is not UTF-8")?;
        if self.closed {
            return Err(format!("<{name}> after the end of the document"));
        }
        if self.stack.is_empty() && name != "ListBucketResult" {
            return Err(format!(
                "the answer is a <{name}> document, not a ListBucketResult"
            ));
        }
        if self.stack.len() == 1 && name == "Contents" {
            self.cur = Some(Partial::default());
        }
        self.stack.push(name);
        self.text.clear();
        Ok(())
    }

    /// The innermost open element ends: its text is the value of a page field or of the
    /// current `Contents`' field.
    fn close(&mut self) -> Result<(), String> {
        let name = self.stack.pop().ok_or("an end tag without a start")?;
        let value = std::mem::take(&mut self.text);
        match self.stack.len() {
            0 => self.closed = true,
            1 => self.page_field(&name, value)?,
            2 if self.stack[1] == "Contents" => {
                let p = self
                    .cur
                    .as_mut()
                    .ok_or("a Contents field outside Contents")?;
                match name.as_str() {
                    "Key" => p.key = Some(value),
                    "Size" => p.size = Some(value),
                    "LastModified" => p.last_modified = Some(value),
                    "ETag" => p.e_tag = Some(value),
                    _ => {}
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A child of `ListBucketResult` ends with `value`.
    fn page_field(&mut self, name: &str, value: String) -> Result<(), String> {
        match name {
            "IsTruncated" => {
                self.truncated = Some(match value.trim() {
                    "true" => true,
                    "false" => false,
                    v => return Err(format!("IsTruncated is {v:?}")),
                })
            }
            "NextContinuationToken" => {
                self.next_token = Some(value).filter(|t| !t.is_empty());
            }
            "KeyCount" => {
                self.key_count = Some(
                    value
                        .trim()
                        .parse()
                        .map_err(|_| format!("KeyCount is {value:?}"))?,
                )
            }
            "Contents" => {
                let p = self.cur.take().ok_or("a Contents end without its start")?;
                self.entries.push(entry(p)?);
            }
            _ => {}
        }
        Ok(())
    }

    /// The page, once the document is complete and agrees with itself.
    fn finish(self) -> Result<Page, String> {
        if !self.closed {
            return Err(match self.stack.last() {
                Some(open) => format!("the answer ends inside <{open}> (truncated)"),
                None => "the answer is empty".to_string(),
            });
        }
        let truncated = self.truncated.ok_or("the answer has no IsTruncated")?;
        if let Some(n) = self.key_count
            && n != self.entries.len() as u64
        {
            return Err(format!(
                "KeyCount says {n} but the answer holds {} keys",
                self.entries.len()
            ));
        }
        Ok(Page {
            entries: self.entries,
            truncated,
            next_token: self.next_token,
        })
    }
}

fn entry(p: Partial) -> Result<RawEntry, String> {
    let key = p.key.ok_or("a Contents without a Key")?;
    let size = p
        .size
        .ok_or_else(|| format!("{key:?} has no Size"))?
        .trim()
        .parse::<u64>()
        .map_err(|_| format!("{key:?} has a Size that is not a number"))?;
    let lm = p
        .last_modified
        .ok_or_else(|| format!("{key:?} has no LastModified"))?;
    let last_modified = DateTime::parse_from_rfc3339(lm.trim())
        .map_err(|e| format!("{key:?} has LastModified {lm:?}: {e}"))?
        .with_timezone(&Utc);
    Ok(RawEntry {
        key,
        size,
        last_modified,
        e_tag: p.e_tag,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>p/</Prefix>"#;

    fn contents(key: &str, size: u64) -> String {
        format!(
            "<Contents><Key>{key}</Key><LastModified>2026-12-01T08:00:00.000Z</LastModified><ETag>&quot;d41d8cd98f00b204e9800998ecf8427e&quot;</ETag><Size>{size}</Size><StorageClass>STANDARD</StorageClass></Contents>"
        )
    }

    #[test]
    fn a_page_with_entities_spaces_and_a_token() {
        let body = format!(
            "{HEAD}<KeyCount>3</KeyCount><MaxKeys>3</MaxKeys><IsTruncated>true</IsTruncated>{}{}{}<NextContinuationToken>tok/+=</NextContinuationToken></ListBucketResult>",
            contents("p/a &amp; b &lt;c&gt; &quot;d&quot; &apos;e&apos;", 1),
            contents("p/ lead and trail ", 2),
            contents("p/&#x1F600;&#233;<![CDATA[<raw>]]>", 3),
        );
        let p = parse(body.as_bytes()).unwrap();
        let keys: Vec<&str> = p.entries.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "p/a & b <c> \"d\" 'e'",
                "p/ lead and trail ",
                "p/\u{1F600}\u{e9}<raw>"
            ]
        );
        assert_eq!(p.entries[1].size, 2);
        assert_eq!(
            p.entries[0].e_tag.as_deref(),
            Some("\"d41d8cd98f00b204e9800998ecf8427e\"")
        );
        assert!(p.truncated);
        assert_eq!(p.next_token.as_deref(), Some("tok/+="));
    }

    #[test]
    fn the_last_page_and_an_empty_page() {
        let p = parse(
            format!(
                "{HEAD}<IsTruncated>false</IsTruncated>{}</ListBucketResult>",
                contents("p/x", 0)
            )
            .as_bytes(),
        )
        .unwrap();
        assert!(!p.truncated);
        assert_eq!(p.entries.len(), 1);
        let p = parse(
            format!("{HEAD}<KeyCount>0</KeyCount><IsTruncated>true</IsTruncated><NextContinuationToken/></ListBucketResult>")
                .as_bytes(),
        )
        .unwrap();
        assert!(p.truncated && p.entries.is_empty());
        assert_eq!(p.next_token, None, "an empty token is no token");
    }

    #[test]
    fn broken_answers_are_errors() {
        let full = format!(
            "{HEAD}<IsTruncated>false</IsTruncated>{}{}</ListBucketResult>",
            contents("p/a", 1),
            contents("p/b", 2)
        );
        // Cut anywhere: never a page.
        for cut in [0, 10, HEAD.len(), full.len() / 2, full.len() - 1] {
            assert!(
                parse(&full.as_bytes()[..cut]).is_err(),
                "cut at {cut} parsed"
            );
        }
        assert!(parse(full.as_bytes()).is_ok());
        for bad in [
            format!("{HEAD}{}</ListBucketResult>", contents("p/a", 1)),
            format!("{HEAD}<IsTruncated>maybe</IsTruncated></ListBucketResult>"),
            format!(
                "{HEAD}<KeyCount>2</KeyCount><IsTruncated>false</IsTruncated>{}</ListBucketResult>",
                contents("p/a", 1)
            ),
            format!(
                "{HEAD}<IsTruncated>false</IsTruncated><Contents><Key>p/a</Key></Contents></ListBucketResult>"
            ),
            format!(
                "{HEAD}<IsTruncated>false</IsTruncated>{}</ListBucketResult>",
                contents("p/&bogus;", 1)
            ),
            "<Error><Code>InternalError</Code></Error>".to_string(),
            format!("{HEAD}<IsTruncated>false</IsTruncated></Wrong>"),
            format!("{HEAD}<IsTruncated>false</IsTruncated></ListBucketResult><More/>"),
        ] {
            assert!(parse(bad.as_bytes()).is_err(), "parsed: {bad}");
        }
    }

    #[test]
    fn error_bodies_are_summarised() {
        assert_eq!(
            s3_error(b"<Error><Code>AccessDenied</Code><Message>no</Message></Error>"),
            " (AccessDenied: no)"
        );
        assert_eq!(s3_error(b"garbage"), "");
    }
}
