//! A fault-injecting HTTP/1.1 proxy on 127.0.0.1 in front of an S3 server. One request per
//! connection: the proxy answers every request with `Connection: close` and asks the upstream
//! for the same, so a message ends where the connection does and only the request body needs
//! framing (object_store always sends `Content-Length`). Rules match a method, a path substring
//! and a query substring, and fire on the first N matching requests.
//!
//! The `List*` faults make it a hostile LIST server: they rewrite (or answer in place of) a
//! ListObjectsV2 answer from Garage. They edit Garage's XML as text and know Garage's
//! continuation tokens (`[` or `]` followed by the base64 of a key: from that key, or after it);
//! they do not model other servers' tokens. Resets, short bodies and 5xx answers apply to LIST
//! requests as to any other GET.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PFault {
    /// Answer `503 SlowDown` with an S3 XML error body; the upstream never sees the request.
    SlowDown,
    /// Read the request, then reset the connection (RST) without answering.
    ResetBeforeResponse,
    /// Forward the response head and half the body, then reset the connection.
    ResetMidBody,
    /// Forward the response head and half the body, then close cleanly (a short body).
    TruncateBody,
    /// Flip one byte in the middle of a 2xx response body.
    FlipResponse,
    /// Flip one byte in the middle of the request body before forwarding it.
    FlipRequest,
    /// Answer a successful write (single PUT, or CompleteMultipartUpload's XML) as AWS does for
    /// an SSE-KMS object: `x-amz-server-side-encryption: aws:kms` and an ETag that is not an MD5
    /// of the data (same shape: 32 hex digits, with `-N` for multipart).
    KmsEtag,
    /// The same ETag rewrite without the encryption header: a store that claims other content.
    BogusEtag,
    /// A successful HEAD whose `x-amz-checksum-crc64nvme` (a stored full-object CRC64) is
    /// answered as another value: a store that claims other content.
    BogusChecksum,
    /// A successful GET or HEAD answered with `x-amz-server-side-encryption: aws:kms` added, as
    /// AWS answers for an SSE-KMS object (whose ETag AWS documents as no MD5 of its data).
    SourceKms,
    /// Answer `500 InternalError` with an S3 XML error body; the upstream never sees the request.
    ServerError,
    /// Answer `403 AccessDenied` with an S3 XML error body (credentials revoked); the upstream
    /// never sees the request.
    AccessDenied,
    /// Answer `403 ExpiredToken` with an S3 XML error body (session credentials past their
    /// time); the upstream never sees the request.
    ExpiredToken,
    /// Answer `501 NotImplemented` with an S3 XML error body (a store without a feature the
    /// request's headers ask for, e.g. an `aws-chunked` body); the upstream never sees it.
    NotImplemented,
    /// LIST: keep the first half of the answer's keys (at least one) and say the listing goes on
    /// after the last one kept, with a token Garage understands. Not a fault: a server with
    /// smaller pages (so that a listing of a few keys has several pages).
    ListHalfPage,
    /// LIST: keep the first half of the answer's keys and say the listing goes on
    /// (`IsTruncated` true) without a `NextContinuationToken`.
    ListNoToken,
    /// LIST (a request with a continuation token): the real page, saying the listing goes on
    /// with the very token the request carried.
    ListSameToken,
    /// LIST (first page, or a token that continues after a key): answered by the proxy with an
    /// empty page that says more follows, with a token Garage continues from the same place.
    ListEmptyPage,
    /// LIST: answered by the proxy with an empty page that says more follows, with a new token
    /// each time (Garage, asked with one of them, lists nothing).
    ListEmptyForever,
    /// LIST: the first two keys of the answer swapped.
    ListUnsorted,
    /// LIST: one more key after the last, outside the requested prefix (the prefix without its
    /// trailing '/', then `0`: it sorts after every key under the prefix).
    ListOutsidePrefix,
}

impl PFault {
    fn rewrites_list(self) -> bool {
        matches!(
            self,
            PFault::ListHalfPage
                | PFault::ListNoToken
                | PFault::ListSameToken
                | PFault::ListUnsorted
                | PFault::ListOutsidePrefix
        )
    }
}

#[derive(Debug, Clone)]
struct Rule {
    method: String,
    path_has: String,
    query_has: String,
    fault: PFault,
    left: u32,
    /// Matching requests let through untouched before the rule fires.
    pass: u32,
}

/// One request as the proxy saw it: (method, target, headers).
pub type Seen = (String, String, Vec<(String, String)>);

#[derive(Debug, Default)]
struct State {
    rules: Vec<Rule>,
    hits: Vec<(String, String, PFault)>,
    /// Upstream status of each faulted request that reached the upstream: (target, status).
    statuses: Vec<(String, u16)>,
    requests: u64,
    /// Every request seen: (method, target, headers).
    log: Vec<Seen>,
    /// What the upstream answered to every request forwarded: (method, target, status).
    answered: Vec<(String, String, u16)>,
    /// Empty pages answered (numbers their tokens).
    empty_pages: u64,
    /// Host header to forward requests with (None: as the client sent it).
    host: Option<String>,
    /// The last [`TAIL`] bytes of every PUT body forwarded: (target, bytes).
    tails: Vec<(String, Vec<u8>)>,
}

/// How much of the end of a PUT body is kept ([`Proxy::put_tails`]).
const TAIL: usize = 128;

#[derive(Clone)]
pub struct Proxy {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl Proxy {
    /// Listen on 127.0.0.1 (a free port) and forward to `upstream` (`127.0.0.1:3900`).
    pub async fn start(upstream: SocketAddr) -> Proxy {
        Self::start_with(upstream, false).await
    }

    /// As [`Proxy::start`], forwarding every request with `Host: upstream` (for servers that
    /// route by Host, such as fake-gcs-server; it would break an S3 signature).
    pub async fn start_as_upstream_host(upstream: SocketAddr) -> Proxy {
        Self::start_with(upstream, true).await
    }

    async fn start_with(upstream: SocketAddr, upstream_host: bool) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State {
            host: upstream_host.then(|| upstream.to_string()),
            ..State::default()
        }));
        let st = state.clone();
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let st = st.clone();
                tokio::spawn(async move {
                    let _ = serve(conn, upstream, st).await;
                });
            }
        });
        Proxy { addr, state }
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Fault the first `times` requests with this method whose path contains `path_has` and
    /// whose query contains `query_has` (empty: any query).
    pub fn add(
        &self,
        method: &str,
        path_has: &str,
        query_has: &str,
        fault: PFault,
        times: u32,
    ) -> &Proxy {
        self.add_after(method, path_has, query_has, fault, 0, times)
    }

    /// As [`Proxy::add`], letting the first `pass` matching requests through untouched.
    pub fn add_after(
        &self,
        method: &str,
        path_has: &str,
        query_has: &str,
        fault: PFault,
        pass: u32,
        times: u32,
    ) -> &Proxy {
        self.state.lock().unwrap().rules.push(Rule {
            method: method.into(),
            path_has: path_has.into(),
            query_has: query_has.into(),
            fault,
            left: times,
            pass,
        });
        self
    }

    /// Drops every rule, spent or not.
    pub fn clear(&self) {
        self.state.lock().unwrap().rules.clear();
    }

    /// (method, target, fault) of every fault injected, in order.
    pub fn hits(&self) -> Vec<(String, String, PFault)> {
        self.state.lock().unwrap().hits.clone()
    }

    /// What the upstream answered to each faulted request it saw (e.g. a flipped body).
    pub fn upstream_statuses(&self) -> Vec<(String, u16)> {
        self.state.lock().unwrap().statuses.clone()
    }

    /// (method, target, upstream status) of every request the proxy forwarded, in order.
    pub fn answered(&self) -> Vec<(String, String, u16)> {
        self.state.lock().unwrap().answered.clone()
    }

    pub fn requests(&self) -> u64 {
        self.state.lock().unwrap().requests
    }

    /// (target, last bytes of the body) of every PUT forwarded, in order: where a streamed
    /// upload's trailer is read.
    #[allow(dead_code)]
    pub fn put_tails(&self) -> Vec<(String, Vec<u8>)> {
        self.state.lock().unwrap().tails.clone()
    }

    /// (method, target, headers) of every request seen, in order.
    #[allow(dead_code)]
    pub fn log(&self) -> Vec<Seen> {
        self.state.lock().unwrap().log.clone()
    }

    pub fn unspent(&self) -> Vec<String> {
        self.state
            .lock()
            .unwrap()
            .rules
            .iter()
            .filter(|r| r.left > 0)
            .map(|r| {
                format!(
                    "{} {}?{} {:?} ×{}",
                    r.method, r.path_has, r.query_has, r.fault, r.left
                )
            })
            .collect()
    }
}

fn take(st: &Mutex<State>, method: &str, target: &str) -> Option<PFault> {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut g = st.lock().unwrap();
    g.requests += 1;
    let r = g.rules.iter_mut().find(|r| {
        r.left > 0
            && r.method == method
            && path.contains(&r.path_has)
            && query.contains(&r.query_has)
    })?;
    if r.pass > 0 {
        r.pass -= 1;
        return None;
    }
    r.left -= 1;
    let f = r.fault;
    g.hits.push((method.into(), target.into(), f));
    Some(f)
}

/// Read up to the end of the head; returns (head, bytes read past it).
async fn read_head(s: &mut TcpStream) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::with_capacity(4096);
    let mut tmp = [0u8; 8192];
    loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(i + 4);
            return Ok((buf, rest));
        }
        if buf.len() > 256 << 10 {
            return Err(std::io::Error::other("head too large"));
        }
        let n = s.read(&mut tmp).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&tmp[..n]);
    }
}

struct Head {
    first: String,
    headers: Vec<(String, String)>,
}

impl Head {
    fn parse(raw: &[u8]) -> Head {
        let text = String::from_utf8_lossy(raw);
        let mut lines = text.split("\r\n");
        let first = lines.next().unwrap_or_default().to_string();
        let headers = lines
            .filter(|l| !l.is_empty())
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        Head { first, headers }
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn content_length(&self) -> u64 {
        self.get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// The same head with `Connection: close` (header order and values otherwise untouched, so
    /// the SigV4 signature over the signed headers still holds), and optionally another Host.
    fn closing(&self) -> Vec<u8> {
        self.closing_to(None)
    }

    fn closing_to(&self, host: Option<&str>) -> Vec<u8> {
        let mut out = format!("{}\r\n", self.first);
        for (k, v) in &self.headers {
            if k.eq_ignore_ascii_case("connection") || k.eq_ignore_ascii_case("keep-alive") {
                continue;
            }
            let v = match host {
                Some(h) if k.eq_ignore_ascii_case("host") => h,
                _ => v.as_str(),
            };
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        out.push_str("Connection: close\r\n\r\n");
        out.into_bytes()
    }
}

#[allow(deprecated)] // SO_LINGER 0 closes at once with a RST; nothing blocks.
fn reset(s: TcpStream) {
    let _ = s.set_linger(Some(Duration::ZERO));
    drop(s);
}

/// Read and discard `n` bytes (a request body the proxy answers itself).
async fn drain(s: &mut TcpStream, mut n: u64) -> std::io::Result<()> {
    let mut buf = vec![0u8; 64 << 10];
    while n > 0 {
        let k = s.read(&mut buf[..(n.min(64 << 10)) as usize]).await?;
        if k == 0 {
            break;
        }
        n -= k as u64;
    }
    Ok(())
}

/// Copy from `from` to `to`: `first` (already read), then up to `limit` bytes in total (None:
/// until EOF), flipping the byte at `flip` (offset in the copied stream). The last
/// [`TAIL`] bytes copied (a streamed body's trailer).
async fn pump(
    from: &mut TcpStream,
    to: &mut TcpStream,
    first: Vec<u8>,
    limit: Option<u64>,
    flip: Option<u64>,
) -> std::io::Result<Vec<u8>> {
    let mut pos = 0u64;
    let mut tail = Vec::new();
    let mut chunk = first;
    let mut buf = vec![0u8; 64 << 10];
    loop {
        if let Some(l) = limit {
            let room = l.saturating_sub(pos);
            if (chunk.len() as u64) > room {
                chunk.truncate(room as usize);
            }
        }
        if let Some(f) = flip
            && f >= pos
            && f < pos + chunk.len() as u64
        {
            chunk[(f - pos) as usize] ^= 0x5a;
        }
        to.write_all(&chunk).await?;
        pos += chunk.len() as u64;
        tail.extend_from_slice(&chunk);
        tail.drain(..tail.len().saturating_sub(TAIL));
        if limit.is_some_and(|l| pos >= l) {
            return Ok(tail);
        }
        let n = from.read(&mut buf).await?;
        if n == 0 {
            return Ok(tail);
        }
        chunk = buf[..n].to_vec();
    }
}

async fn serve(
    mut client: TcpStream,
    upstream: SocketAddr,
    st: Arc<Mutex<State>>,
) -> std::io::Result<()> {
    let (raw, rest) = read_head(&mut client).await?;
    let req = Head::parse(&raw);
    let mut parts = req.first.split(' ');
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().unwrap_or_default().to_string();
    let body_len = req.content_length();
    st.lock()
        .unwrap()
        .log
        .push((method.clone(), target.clone(), req.headers.clone()));
    assert!(
        req.get("transfer-encoding").is_none(),
        "the proxy expects Content-Length request bodies: {}",
        req.first
    );
    let fault = take(&st, &method, &target);
    match fault {
        Some(
            PFault::SlowDown
            | PFault::ServerError
            | PFault::AccessDenied
            | PFault::ExpiredToken
            | PFault::NotImplemented,
        ) => {
            drain(&mut client, body_len.saturating_sub(rest.len() as u64)).await?;
            let path = target.split('?').next().unwrap_or_default();
            let (status, code, message) = match fault {
                Some(PFault::SlowDown) => (
                    "503 Service Unavailable",
                    "SlowDown",
                    "Please reduce your request rate.",
                ),
                Some(PFault::AccessDenied) => ("403 Forbidden", "AccessDenied", "Access Denied"),
                Some(PFault::NotImplemented) => (
                    "501 Not Implemented",
                    "NotImplemented",
                    "A header you provided implies functionality that is not implemented.",
                ),
                Some(PFault::ExpiredToken) => (
                    "403 Forbidden",
                    "ExpiredToken",
                    "The provided token has expired.",
                ),
                _ => (
                    "500 Internal Server Error",
                    "InternalError",
                    "We encountered an internal error. Please try again.",
                ),
            };
            let body = format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{message}</Message><Resource>{path}</Resource><RequestId>fault-proxy</RequestId></Error>"
            );
            let resp = format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            client.write_all(resp.as_bytes()).await?;
            client.shutdown().await?;
            return Ok(());
        }
        Some(f @ (PFault::ListEmptyPage | PFault::ListEmptyForever)) => {
            let q = ListQuery::of(&target);
            let token = if f == PFault::ListEmptyPage {
                q.same_place_token()
            } else {
                let n = {
                    let mut g = st.lock().unwrap();
                    g.empty_pages += 1;
                    g.empty_pages
                };
                Some(after_token(&format!("{}\u{10FFFF}empty-{n}", q.prefix)))
            };
            if let Some(token) = token {
                let body = format!(
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>fault-proxy</Name><Prefix>{}</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated><NextContinuationToken>{token}</NextContinuationToken></ListBucketResult>",
                    xml_escape(&q.prefix)
                );
                let resp = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                client.write_all(resp.as_bytes()).await?;
                client.shutdown().await?;
                return Ok(());
            }
        }
        Some(PFault::ResetBeforeResponse) => {
            drain(&mut client, body_len.saturating_sub(rest.len() as u64)).await?;
            reset(client);
            return Ok(());
        }
        _ => {}
    }
    let mut up = TcpStream::connect(upstream).await?;
    let host = st.lock().unwrap().host.clone();
    up.write_all(&req.closing_to(host.as_deref())).await?;
    let flip_req = (fault == Some(PFault::FlipRequest) && body_len > 0).then_some(body_len / 2);
    let tail = pump(&mut client, &mut up, rest, Some(body_len), flip_req).await?;
    if method == "PUT" {
        st.lock().unwrap().tails.push((target.clone(), tail));
    }

    let (rraw, rrest) = read_head(&mut up).await?;
    let resp = Head::parse(&rraw);
    let status: u16 = resp
        .first
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    {
        let mut g = st.lock().unwrap();
        if fault.is_some() {
            g.statuses.push((target.clone(), status));
        }
        g.answered.push((method.clone(), target.clone(), status));
    }
    let ok = (200..300).contains(&status);
    if ok
        && matches!(fault, Some(PFault::KmsEtag | PFault::BogusEtag))
        && (method == "PUT" || method == "POST")
    {
        return rewrite_etag(client, up, resp, rrest, fault == Some(PFault::KmsEtag)).await;
    }
    if let Some(f) = fault
        && ok
        && f.rewrites_list()
        && method == "GET"
        && target.contains("list-type=2")
    {
        return rewrite_list(client, up, resp, rrest, f, &ListQuery::of(&target)).await;
    }
    if ok && fault == Some(PFault::BogusChecksum) && method == "HEAD" {
        let mut resp = resp;
        for (k, v) in &mut resp.headers {
            if k.eq_ignore_ascii_case("x-amz-checksum-crc64nvme") {
                // Eight other bytes, base64: a CRC64 of other content.
                *v = "AQIDBAUGBwg=".to_string();
            }
        }
        client.write_all(&resp.closing()).await?;
        pump(&mut up, &mut client, rrest, None, None).await?;
        client.shutdown().await?;
        return Ok(());
    }
    if ok && fault == Some(PFault::SourceKms) && (method == "GET" || method == "HEAD") {
        let mut head = resp.closing();
        head.truncate(head.len() - 2);
        head.extend_from_slice(b"x-amz-server-side-encryption: aws:kms\r\n\r\n");
        client.write_all(&head).await?;
    } else {
        client.write_all(&resp.closing()).await?;
    }
    let len = resp.content_length();
    let faulted = ok && len > 1 && method == "GET";
    match fault {
        Some(PFault::ResetMidBody) if faulted => {
            pump(&mut up, &mut client, rrest, Some(len / 2), None).await?;
            client.flush().await?;
            // Let the half body leave before the RST overtakes it.
            tokio::time::sleep(Duration::from_millis(20)).await;
            reset(client);
        }
        Some(PFault::TruncateBody) if faulted => {
            pump(&mut up, &mut client, rrest, Some(len / 2), None).await?;
            client.shutdown().await?;
        }
        Some(PFault::FlipResponse) if faulted => {
            pump(&mut up, &mut client, rrest, None, Some(len / 2)).await?;
            client.shutdown().await?;
        }
        _ => {
            pump(&mut up, &mut client, rrest, None, None).await?;
            client.shutdown().await?;
        }
    }
    Ok(())
}

/// An ETag of the same shape whose digits are not the original's (each hex digit before a `-N`
/// part count rotated; the count is kept).
fn other_etag(e: &str) -> String {
    let (digits, count) = e.split_at(e.rfind('-').unwrap_or(e.len()));
    let rotated: String = digits
        .chars()
        .map(|c| match c.to_digit(16) {
            Some(d) => std::char::from_digit((d + 7) % 16, 16).unwrap(),
            None => c,
        })
        .collect();
    format!("{rotated}{count}")
}

/// Forwards a write answer with its ETag replaced (head and XML body), optionally adding the
/// SSE-KMS header.
async fn rewrite_etag(
    mut client: TcpStream,
    mut up: TcpStream,
    resp: Head,
    rest: Vec<u8>,
    kms: bool,
) -> std::io::Result<()> {
    let mut body = rest;
    up.read_to_end(&mut body).await?;
    let text = String::from_utf8_lossy(&body).to_string();
    let text = match (text.find("<ETag>"), text.find("</ETag>")) {
        (Some(a), Some(b)) if a < b => format!(
            "{}<ETag>{}{}",
            &text[..a],
            other_etag(&text[a + 6..b]),
            &text[b..]
        ),
        _ => text,
    };
    let mut head = format!("{}\r\n", resp.first);
    for (k, v) in &resp.headers {
        let k_l = k.to_ascii_lowercase();
        if matches!(k_l.as_str(), "connection" | "keep-alive" | "content-length") {
            continue;
        }
        let v = if k_l == "etag" {
            other_etag(v)
        } else {
            v.clone()
        };
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if kms {
        head.push_str("x-amz-server-side-encryption: aws:kms\r\n");
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        text.len()
    ));
    client.write_all(head.as_bytes()).await?;
    client.write_all(text.as_bytes()).await?;
    client.shutdown().await
}

/// What a LIST request asked for (query values decoded).
struct ListQuery {
    prefix: String,
    token: Option<String>,
}

impl ListQuery {
    fn of(target: &str) -> ListQuery {
        let query = target.split_once('?').map(|(_, q)| q).unwrap_or_default();
        let mut q = ListQuery {
            prefix: String::new(),
            token: None,
        };
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            match &*k {
                "prefix" => q.prefix = v.into_owned(),
                "continuation-token" => q.token = Some(v.into_owned()),
                _ => {}
            }
        }
        q
    }

    /// Another Garage token that lists from where this request does (None if the proxy cannot
    /// make one: a token that continues from a key, inclusive).
    fn same_place_token(&self) -> Option<String> {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        match &self.token {
            None => Some(format!("[{}", b64.encode(self.prefix.as_bytes()))),
            Some(t) if t.starts_with(']') => {
                let key = b64.decode(&t[1..]).ok()?;
                let mut from = key;
                from.push(0);
                Some(format!("[{}", b64.encode(from)))
            }
            Some(_) => None,
        }
    }
}

/// Garage's token for "after this key".
fn after_token(key: &str) -> String {
    use base64::Engine;
    format!(
        "]{}",
        base64::engine::general_purpose::STANDARD.encode(key.as_bytes())
    )
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

fn xml_unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// A ListBucketResult as text: what comes before the first `<Contents>`, each `<Contents>`
/// element, and what follows the last one.
struct ListXml {
    head: String,
    contents: Vec<String>,
    tail: String,
}

impl ListXml {
    fn parse(text: &str) -> ListXml {
        let mut contents = Vec::new();
        let first = text.find("<Contents>");
        let (head, mut rest) = match first {
            Some(i) => (text[..i].to_string(), &text[i..]),
            None => {
                let i = text.find("</ListBucketResult>").unwrap_or(text.len());
                (text[..i].to_string(), &text[i..])
            }
        };
        while rest.starts_with("<Contents>") {
            let end = rest.find("</Contents>").expect("a closed Contents") + "</Contents>".len();
            contents.push(rest[..end].to_string());
            rest = &rest[end..];
        }
        ListXml {
            head,
            contents,
            tail: rest.to_string(),
        }
    }

    fn key(contents: &str) -> String {
        let a = contents.find("<Key>").expect("a Key") + "<Key>".len();
        let b = contents.find("</Key>").expect("a Key end");
        xml_unescape(&contents[a..b])
    }

    /// The whole text, with `IsTruncated`, `KeyCount` and `NextContinuationToken` set.
    fn render(&self, truncated: bool, token: Option<&str>) -> String {
        let strip = |s: &str, tag: &str| -> String {
            let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
            match (s.find(&open), s.find(&close)) {
                (Some(a), Some(b)) if a < b => format!("{}{}", &s[..a], &s[b + close.len()..]),
                _ => s.to_string(),
            }
        };
        let mut head = self.head.clone();
        for tag in ["IsTruncated", "KeyCount", "NextContinuationToken"] {
            head = strip(&head, tag);
        }
        let mut tail = strip(&self.tail, "NextContinuationToken");
        tail = strip(&tail, "IsTruncated");
        let mut out = head;
        out.push_str(&format!(
            "<KeyCount>{}</KeyCount><IsTruncated>{truncated}</IsTruncated>",
            self.contents.len()
        ));
        for c in &self.contents {
            out.push_str(c);
        }
        if let Some(t) = token {
            out.push_str(&format!(
                "<NextContinuationToken>{t}</NextContinuationToken>"
            ));
        }
        out.push_str(&tail);
        out
    }

    fn truncated(&self) -> bool {
        self.head.contains("<IsTruncated>true</IsTruncated>")
            || self.tail.contains("<IsTruncated>true</IsTruncated>")
    }

    fn token(&self) -> Option<String> {
        let all = format!("{}{}", self.head, self.tail);
        let a = all.find("<NextContinuationToken>")? + "<NextContinuationToken>".len();
        let b = all.find("</NextContinuationToken>")?;
        Some(xml_unescape(&all[a..b]))
    }
}

/// Forwards a LIST answer rewritten as `fault` says.
async fn rewrite_list(
    mut client: TcpStream,
    mut up: TcpStream,
    resp: Head,
    rest: Vec<u8>,
    fault: PFault,
    q: &ListQuery,
) -> std::io::Result<()> {
    let mut body = rest;
    up.read_to_end(&mut body).await?;
    let text = String::from_utf8(body).expect("Garage answers UTF-8");
    let mut x = ListXml::parse(&text);
    let text = match fault {
        PFault::ListHalfPage | PFault::ListNoToken => {
            let keep = (x.contents.len() / 2).max(usize::from(fault == PFault::ListHalfPage));
            x.contents.truncate(keep);
            let token = match (fault, x.contents.last()) {
                (PFault::ListHalfPage, Some(last)) => Some(after_token(&ListXml::key(last))),
                _ => None,
            };
            x.render(true, token.as_deref())
        }
        PFault::ListSameToken => x.render(true, q.token.as_deref()),
        PFault::ListUnsorted => {
            if x.contents.len() >= 2 {
                x.contents.swap(0, 1);
            }
            let (t, tok) = (x.truncated(), x.token());
            x.render(t, tok.as_deref())
        }
        PFault::ListOutsidePrefix => {
            let outside = format!("{}0", q.prefix.trim_end_matches('/'));
            if let Some(last) = x.contents.last().cloned() {
                let key = xml_escape(&ListXml::key(&last));
                x.contents
                    .push(last.replacen(&key, &xml_escape(&outside), 1));
            }
            let (t, tok) = (x.truncated(), x.token());
            x.render(t, tok.as_deref())
        }
        _ => text,
    };
    let mut head = format!("{}\r\n", resp.first);
    for (k, v) in &resp.headers {
        let k_l = k.to_ascii_lowercase();
        if matches!(k_l.as_str(), "connection" | "keep-alive" | "content-length") {
            continue;
        }
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        text.len()
    ));
    client.write_all(head.as_bytes()).await?;
    client.write_all(text.as_bytes()).await?;
    client.shutdown().await
}
