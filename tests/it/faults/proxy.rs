//! A fault-injecting HTTP/1.1 proxy on 127.0.0.1 in front of an S3 server. One request per
//! connection: the proxy answers every request with `Connection: close` and asks the upstream
//! for the same, so a message ends where the connection does and only the request body needs
//! framing (object_store always sends `Content-Length`). Rules match a method, a path substring
//! and a query substring, and fire on the first N matching requests.

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
}

#[derive(Debug, Clone)]
struct Rule {
    method: String,
    path_has: String,
    query_has: String,
    fault: PFault,
    left: u32,
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
}

#[derive(Clone)]
pub struct Proxy {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl Proxy {
    /// Listen on 127.0.0.1 (a free port) and forward to `upstream` (`127.0.0.1:3900`).
    pub async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
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
        self.state.lock().unwrap().rules.push(Rule {
            method: method.into(),
            path_has: path_has.into(),
            query_has: query_has.into(),
            fault,
            left: times,
        });
        self
    }

    /// (method, target, fault) of every fault injected, in order.
    pub fn hits(&self) -> Vec<(String, String, PFault)> {
        self.state.lock().unwrap().hits.clone()
    }

    /// What the upstream answered to each faulted request it saw (e.g. a flipped body).
    pub fn upstream_statuses(&self) -> Vec<(String, u16)> {
        self.state.lock().unwrap().statuses.clone()
    }

    pub fn requests(&self) -> u64 {
        self.state.lock().unwrap().requests
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
    /// the SigV4 signature over the signed headers still holds).
    fn closing(&self) -> Vec<u8> {
        let mut out = format!("{}\r\n", self.first);
        for (k, v) in &self.headers {
            if k.eq_ignore_ascii_case("connection") || k.eq_ignore_ascii_case("keep-alive") {
                continue;
            }
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
/// until EOF), flipping the byte at `flip` (offset in the copied stream).
async fn pump(
    from: &mut TcpStream,
    to: &mut TcpStream,
    first: Vec<u8>,
    limit: Option<u64>,
    flip: Option<u64>,
) -> std::io::Result<u64> {
    let mut pos = 0u64;
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
        if limit.is_some_and(|l| pos >= l) {
            return Ok(pos);
        }
        let n = from.read(&mut buf).await?;
        if n == 0 {
            return Ok(pos);
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
        Some(PFault::SlowDown) => {
            drain(&mut client, body_len.saturating_sub(rest.len() as u64)).await?;
            let path = target.split('?').next().unwrap_or_default();
            let body = format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><Resource>{path}</Resource><RequestId>fault-proxy</RequestId></Error>"
            );
            let resp = format!(
                "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            client.write_all(resp.as_bytes()).await?;
            client.shutdown().await?;
            return Ok(());
        }
        Some(PFault::ResetBeforeResponse) => {
            drain(&mut client, body_len.saturating_sub(rest.len() as u64)).await?;
            reset(client);
            return Ok(());
        }
        _ => {}
    }
    let mut up = TcpStream::connect(upstream).await?;
    up.write_all(&req.closing()).await?;
    let flip_req = (fault == Some(PFault::FlipRequest) && body_len > 0).then_some(body_len / 2);
    pump(&mut client, &mut up, rest, Some(body_len), flip_req).await?;

    let (rraw, rrest) = read_head(&mut up).await?;
    let resp = Head::parse(&rraw);
    let status: u16 = resp
        .first
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    if fault.is_some() {
        st.lock().unwrap().statuses.push((target.clone(), status));
    }
    let ok = (200..300).contains(&status);
    if ok
        && matches!(fault, Some(PFault::KmsEtag | PFault::BogusEtag))
        && (method == "PUT" || method == "POST")
    {
        return rewrite_etag(client, up, resp, rrest, fault == Some(PFault::KmsEtag)).await;
    }
    client.write_all(&resp.closing()).await?;
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
