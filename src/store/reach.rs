//! Before the first request of a command: can the store's endpoint be reached at all?
//!
//! Every request is retried for the retry window ([`super::retry`]), which is right for a blip in
//! the middle of a run but turns a wrong endpoint (a typo'd port, a server not started) into
//! minutes of silence. So before a command sends anything, one TCP connect to each HTTP store's
//! endpoint (a few seconds, two tries) tells a refused or unreachable address apart; it fails the
//! command with the address and the cause (exit 2, nothing done). Once the run has started, the
//! usual retry policy applies. Skipped for local and in-memory stores, and when an HTTP proxy
//! applies to the host (a direct connect would prove nothing).

use super::{OpenError, Store};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// How long one connect may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Connects tried before the endpoint is called unreachable.
const TRIES: u32 = 2;

/// Set to 1, no check is made (a network where direct connects are blocked but requests pass;
/// tests of what happens when a connection fails mid-run).
pub const SKIP_VAR: &str = "MOVERCTL_SKIP_REACH_CHECK";

/// Refuses `store` when its endpoint cannot be connected to (see the module doc).
pub fn check(store: &Store) -> Result<(), OpenError> {
    let Some(endpoint) = &store.endpoint else {
        return Ok(());
    };
    if std::env::var(SKIP_VAR).as_deref() == Ok("1") {
        return Ok(());
    }
    check_endpoint(endpoint, &|v| std::env::var(v).ok()).map_err(|reason| OpenError::Unreachable {
        location: store.shown(),
        reason,
    })
}

/// The check of one endpoint URL: Err is the reason, naming the address. `env` reads a variable.
pub fn check_endpoint(endpoint: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
    let Ok(url) = url::Url::parse(endpoint) else {
        // object_store refuses a URL it cannot parse when it is built; nothing to add here.
        return Ok(());
    };
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
        return Ok(());
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if proxied(url.scheme(), host, env) {
        return Ok(());
    }
    let shown = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let addrs: Vec<SocketAddr> = match (host, port).to_socket_addrs() {
        Ok(a) => a.collect(),
        Err(e) => {
            return Err(format!(
                "cannot resolve {host} (endpoint {endpoint}): {e}: is the endpoint right?"
            ));
        }
    };
    let mut last = None;
    for attempt in 0..TRIES {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(500));
        }
        for a in &addrs {
            match TcpStream::connect_timeout(a, CONNECT_TIMEOUT) {
                Ok(_) => return Ok(()),
                Err(e) => last = Some(e),
            }
        }
    }
    let cause = match last {
        Some(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
        Some(e) if e.kind() == std::io::ErrorKind::TimedOut => {
            format!("no answer within {} s", CONNECT_TIMEOUT.as_secs())
        }
        Some(e) => format!("cannot connect ({e})"),
        None => "no address found".into(),
    };
    Err(format!(
        "{cause} at {shown} (endpoint {endpoint}, {TRIES} tries): is the endpoint right? Is the \
         server running? Nothing was done"
    ))
}

/// Whether an HTTP(S) proxy applies to `host` (the variables reqwest reads: HTTPS_PROXY or
/// HTTP_PROXY by scheme, ALL_PROXY, lower case too, less NO_PROXY).
fn proxied(scheme: &str, host: &str, env: &dyn Fn(&str) -> Option<String>) -> bool {
    let var = |n: &str| {
        env(n)
            .or_else(|| env(&n.to_ascii_lowercase()))
            .filter(|v| !v.trim().is_empty())
    };
    let by_scheme = if scheme == "https" {
        "HTTPS_PROXY"
    } else {
        "HTTP_PROXY"
    };
    if var(by_scheme).or_else(|| var("ALL_PROXY")).is_none() {
        return false;
    }
    let no_proxy = var("NO_PROXY").unwrap_or_default();
    !no_proxy.split(',').map(str::trim).any(|n| {
        let n = n.trim_start_matches('.');
        n == "*" || (!n.is_empty() && (host == n || host.ends_with(&format!(".{n}"))))
    })
}

/// Whether a GCS location's bucket is missing, told before the first listing: one GET of the
/// bucket's metadata (the JSON API, `storage.buckets.get`) with the store's credentials; true
/// only for a 404. Any other answer (403 for credentials that may read objects but not bucket
/// metadata, no answer) says nothing: the run goes on and its requests tell. (S3 and Azure
/// answer a listing of a missing bucket with a 404 and a code, told apart there:
/// [`super::list::ListError::naming_bucket`]; GCS emulators answer it with a 500 that would be
/// retried for the whole window.)
pub async fn gcs_bucket_missing(store: &Store) -> bool {
    let (Some(gcs), Some(endpoint), super::location::Location::Gcs { bucket, .. }) =
        (&store.gcs, &store.endpoint, &store.location)
    else {
        return false;
    };
    let Ok(client) = reqwest::Client::builder()
        .timeout(CONNECT_TIMEOUT * 3)
        .build()
    else {
        return false;
    };
    let url = format!(
        "{}/storage/v1/b/{bucket}?fields=name",
        endpoint.trim_end_matches('/')
    );
    let mut req = client.get(url);
    if let Ok(c) = gcs.credentials().get_credential().await
        && !c.bearer.is_empty()
    {
        req = req.bearer_auth(&c.bearer);
    }
    req.send().await.is_ok_and(|r| r.status().as_u16() == 404)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn a_closed_port_is_refused_naming_the_address() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let e = check_endpoint(&format!("http://127.0.0.1:{port}"), &none).unwrap_err();
        assert!(
            e.starts_with(&format!("connection refused at 127.0.0.1:{port}")),
            "{e}"
        );
    }

    #[test]
    fn a_listening_port_passes_and_a_proxy_skips_the_check() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        check_endpoint(&format!("http://127.0.0.1:{port}"), &none).unwrap();
        drop(l);
        let proxy = |v: &str| (v == "HTTP_PROXY").then(|| "http://proxy:3128".to_string());
        check_endpoint(&format!("http://127.0.0.1:{port}"), &proxy).unwrap();
        let excepted = |v: &str| match v {
            "HTTP_PROXY" => Some("http://proxy:3128".to_string()),
            "NO_PROXY" => Some("localhost,127.0.0.1".to_string()),
            _ => None,
        };
        assert!(check_endpoint(&format!("http://127.0.0.1:{port}"), &excepted).is_err());
    }

    #[test]
    fn a_name_that_does_not_resolve_is_named() {
        let e = check_endpoint("http://no-such-host.invalid:9000", &none).unwrap_err();
        assert!(e.starts_with("cannot resolve no-such-host.invalid"), "{e}");
    }
}
