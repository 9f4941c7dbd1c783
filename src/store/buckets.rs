//! The buckets of an S3 endpoint, the containers of an Azure storage account and the buckets of a
//! GCS project: what `ls s3://`, `ls az://`, `ls gs://` and `ls REMOTE:` list (rclone's `lsd
//! remote:`). object_store has no call for these, so each page is one request moverctl signs
//! and sends itself, with the store's own credentials:
//!
//! - S3 `ListBuckets` (`GET /` on the service endpoint), presigned by object_store's SigV4
//!   signer (a store built virtual-hosted on the service endpoint signs the path `/`);
//!   `continuation-token` pages where the service gives one.
//! - Azure `List Containers` (`GET ?comp=list` on the account URL), authorised by object_store's
//!   `AzureAuthorizer` (Shared Key, SAS or an Entra ID bearer token); `marker` pages.
//! - GCS `buckets.list` of the JSON API (`GET /storage/v1/b?project=P`) with the bearer token
//!   object_store's credential provider gives; `pageToken` pages. The project is the
//!   service-account file's `project_id`, else `GOOGLE_CLOUD_PROJECT` / `CLOUDSDK_CORE_PROJECT`.
//!
//! Each page is retried under the one retry policy ([`super::retry`]); a 401/403 is the
//! credentials' ([`BucketsError::Denied`]). Signed URLs and tokens are never printed.

use super::config::Remote;
use super::location::Location;
use super::retry::{Backoff, retryable_status};
use super::{OpenError, Store};
use object_store::signer::{Method, SignedUrlOptions, Signer};
use std::sync::Arc;
use std::time::Duration;

/// One bucket (or container): its name and, when the store says, when it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket {
    pub name: String,
    /// RFC 3339 (S3, GCS) or RFC 1123 (Azure's `Last-Modified`), as the store wrote it.
    pub created: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum BucketsError {
    /// The store refused the credentials (401 / 403).
    #[error("{location}: listing its buckets was refused: {message}")]
    Denied { location: String, message: String },
    #[error("{location}: cannot list its buckets: {message}")]
    Failed { location: String, message: String },
    #[error(transparent)]
    Open(#[from] OpenError),
}

/// How one kind of store's pages are asked for and read.
enum Lister {
    S3 {
        signer: Arc<object_store::aws::AmazonS3>,
    },
    Azure {
        account_url: url::Url,
        account: String,
        store: Arc<object_store::azure::MicrosoftAzure>,
    },
    Gcs {
        base: String,
        project: String,
        store: Arc<object_store::gcp::GoogleCloudStorage>,
    },
}

/// One page: its buckets and the token of the next page.
#[derive(Debug, Default, PartialEq, Eq)]
struct Page {
    buckets: Vec<Bucket>,
    next: Option<String>,
}

/// Lists the buckets (containers) of the store `store` was opened on (a location without a
/// bucket: see [`Location::store_root`]), one page at a time, each bucket to `each` in name
/// order within its page; returns how many there were.
pub async fn list<E: From<BucketsError>>(
    store: &Store,
    remote: Option<&Remote>,
    mut each: impl FnMut(&Bucket) -> Result<(), E>,
) -> Result<u64, E> {
    let lister = lister(store, remote)?;
    let shown = store.shown();
    let mut token: Option<String> = None;
    let mut n = 0u64;
    loop {
        let page = page(&lister, store, &shown, token.as_deref()).await?;
        let mut buckets = page.buckets;
        buckets.sort_by(|a, b| a.name.cmp(&b.name));
        for b in &buckets {
            n += 1;
            each(b)?;
        }
        match page.next {
            Some(t) if Some(&t) != token.as_ref() => token = Some(t),
            _ => return Ok(n),
        }
    }
}

/// A request that cannot be made as given (exit 2, like a wrong location).
fn refused(shown: &str, reason: &str) -> BucketsError {
    BucketsError::Open(OpenError::Refused {
        location: shown.to_string(),
        reason: reason.to_string(),
    })
}

fn failed(shown: &str, message: impl Into<String>) -> BucketsError {
    BucketsError::Failed {
        location: shown.to_string(),
        message: message.into(),
    }
}

/// What asks for `store`'s pages, with its credentials.
fn lister(store: &Store, remote: Option<&Remote>) -> Result<Lister, BucketsError> {
    let shown = store.shown();
    if remote.is_some_and(|r| r.anonymous) {
        return Err(refused(
            &shown,
            "the remote is anonymous (anonymous = true): only a named bucket can be read without \
             credentials; give one (REMOTE:bucket)",
        ));
    }
    match &store.location {
        Location::S3 { .. } => s3_lister(store, remote),
        Location::Azure { .. } => azure_lister(store, remote),
        Location::Gcs { .. } => gcs_lister(store, remote),
        _ => Err(refused(&shown, "a local folder has no buckets")),
    }
}

/// A store on the service endpoint itself: virtual-hosted addressing with the endpoint given
/// makes object_store sign URLs as `{endpoint}/{path}`, so the empty path is `GET /`.
fn s3_lister(store: &Store, remote: Option<&Remote>) -> Result<Lister, BucketsError> {
    let auth = super::s3_auth(&store.location, remote)?;
    let region = super::s3_region(remote, &auth);
    let endpoint = store
        .endpoint
        .clone()
        .unwrap_or_else(|| format!("https://s3.{region}.amazonaws.com"));
    let cache = auth
        .cache
        .ok_or_else(|| failed(&store.shown(), "no credentials to sign with"))?;
    let signer = object_store::aws::AmazonS3Builder::new()
        .with_bucket_name("-")
        .with_region(&region)
        .with_endpoint(endpoint.trim_end_matches('/'))
        .with_virtual_hosted_style_request(true)
        .with_allow_http(endpoint.starts_with("http://"))
        .with_unsigned_payload(true)
        .with_credentials(cache)
        .build()
        .map_err(|e| failed(&store.shown(), e.to_string()))?;
    Ok(Lister::S3 {
        signer: Arc::new(signer),
    })
}

/// The account URL: the remote's endpoint, the emulator's (`AZURITE_BLOB_STORAGE_URL`, else
/// 127.0.0.1:10000, with the account as the first path segment), else
/// `https://ACCOUNT.blob.core.windows.net`.
fn azure_lister(store: &Store, remote: Option<&Remote>) -> Result<Lister, BucketsError> {
    let shown = store.shown();
    let (account, c, _) = super::creds::azure(&shown, remote).map_err(OpenError::from)?;
    let emulator = matches!(c, super::creds::AzureCreds::Emulator);
    let account = account.unwrap_or_else(|| "devstoreaccount1".to_string());
    let url = match super::remote_endpoint(remote, &shown)? {
        Some(e) => e,
        None if emulator => format!(
            "{}/{account}",
            std::env::var("AZURITE_BLOB_STORAGE_URL")
                .unwrap_or_else(|_| "http://127.0.0.1:10000".into())
                .trim_end_matches('/')
        ),
        None => format!("https://{account}.blob.core.windows.net"),
    };
    let account_url = url::Url::parse(&url).map_err(|e| failed(&shown, format!("{url}: {e}")))?;
    let store = store
        .azure
        .clone()
        .ok_or_else(|| failed(&shown, "not an Azure store"))?;
    Ok(Lister::Azure {
        account_url,
        account,
        store,
    })
}

/// The JSON API's base (the remote's endpoint, the service-account file's `gcs_base_url`, else
/// Google's) and the project whose buckets are listed.
fn gcs_lister(store: &Store, remote: Option<&Remote>) -> Result<Lister, BucketsError> {
    let shown = store.shown();
    let observer = store.observer.clone();
    let (gcs, _, endpoint) = super::build_gcs(&store.location, "-", remote, &observer)?;
    let (sa, _) = super::creds::gcs(&shown, remote).map_err(OpenError::from)?;
    let field = |k: &str| {
        sa.file()
            .and_then(|p| super::creds::google_file_field(p, k))
    };
    let base = endpoint.unwrap_or_else(|| "https://storage.googleapis.com".into());
    let project = field("project_id")
        .or_else(|| std::env::var("GOOGLE_CLOUD_PROJECT").ok())
        .or_else(|| std::env::var("CLOUDSDK_CORE_PROJECT").ok())
        .filter(|p| !p.is_empty())
        .ok_or_else(|| {
            refused(
                &shown,
                "GCS lists buckets by project, and none is known: set GOOGLE_CLOUD_PROJECT \
                 (or use a service-account file, which names its project)",
            )
        })?;
    Ok(Lister::Gcs {
        base: base.trim_end_matches('/').to_string(),
        project,
        store: gcs,
    })
}

/// One page, retried under the policy: a connection that fails, a 5xx / 429 / 408, or an answer
/// that does not parse is tried again until the store's retry window is spent.
async fn page(
    lister: &Lister,
    store: &Store,
    shown: &str,
    token: Option<&str>,
) -> Result<Page, BucketsError> {
    let mut backoff = Backoff::with_window(store.retry_window);
    let client = super::presign::client();
    loop {
        let request = request(lister, client, token)
            .await
            .map_err(|m| failed(shown, m))?;
        let authority = request
            .url()
            .host_str()
            .map(|h| match request.url().port() {
                Some(p) => format!("{h}:{p}"),
                None => h.to_string(),
            })
            .unwrap_or_default();
        let why = match client.execute(request).await {
            Err(e) => super::http::plain_reqwest_cause(&e, &authority),
            Ok(resp) => {
                let status = resp.status().as_u16();
                store.observer.saw(status);
                let body = resp.text().await.unwrap_or_default();
                let detail = error_detail(&body);
                match status {
                    200..=299 => match parse(lister, &body) {
                        Ok(p) => return Ok(p),
                        Err(m) => format!("the answer could not be read: {m}"),
                    },
                    401 | 403 => {
                        return Err(BucketsError::Denied {
                            location: shown.to_string(),
                            message: format!("the store answered {status}: {detail}"),
                        });
                    }
                    s if !retryable_status(s) => {
                        return Err(failed(shown, format!("the store answered {s}: {detail}")));
                    }
                    s => format!("the store answered {s}"),
                }
            }
        };
        if !backoff.wait_logged("bucket listing", &why).await {
            return Err(failed(
                shown,
                format!(
                    "{why} (still failing after {} retries over {:.1?}; the window is --retry-timeout)",
                    backoff.retries(),
                    backoff.elapsed()
                ),
            ));
        }
    }
}

/// What an error answer says, without echoing the request (an S3 signature error carries the
/// canonical request): S3's and Azure's `Code: Message`, GCS's `error.message`.
fn error_detail(body: &str) -> String {
    let field = |n: &str| super::presign::xml_field(body, n);
    let json = serde_json::from_str::<serde_json::Value>(body).ok();
    let text = match (field("Code"), field("Message")) {
        (Some(c), Some(m)) => format!("{c}: {}", m.lines().next().unwrap_or_default()),
        (Some(c), None) => c,
        _ => json
            .as_ref()
            .and_then(|v| v["error"]["message"].as_str())
            .unwrap_or("(no error text)")
            .to_string(),
    };
    text.chars().take(200).collect()
}

/// The signed request of one page.
async fn request(
    lister: &Lister,
    client: &reqwest::Client,
    token: Option<&str>,
) -> Result<reqwest::Request, String> {
    let timeout = Duration::from_secs(120);
    match lister {
        Lister::S3 { signer } => {
            let mut q = vec![("max-buckets".to_string(), "1000".to_string())];
            if let Some(t) = token {
                q.push(("continuation-token".into(), t.to_string()));
            }
            let url = signer
                .signed_url_opts(
                    Method::GET,
                    &object_store::path::Path::default(),
                    Duration::from_secs(900),
                    &SignedUrlOptions::default().with_query(q),
                )
                .await
                .map_err(|e| format!("the request could not be signed: {e}"))?;
            client
                .get(url)
                .timeout(timeout)
                .build()
                .map_err(|e| e.without_url().to_string())
        }
        Lister::Azure {
            account_url,
            account,
            store,
        } => {
            let mut url = account_url.clone();
            if !url.path().ends_with('/') {
                url.set_path(&format!("{}/", url.path()));
            }
            url.query_pairs_mut()
                .append_pair("comp", "list")
                .append_pair("maxresults", "1000");
            if let Some(t) = token {
                url.query_pairs_mut().append_pair("marker", t);
            }
            let cred = store
                .credentials()
                .get_credential()
                .await
                .map_err(|e| format!("no credential: {e}"))?;
            let mut req: object_store::client::HttpRequest = ::http::Request::builder()
                .method(::http::Method::GET)
                .uri(url.as_str())
                .body(object_store::client::HttpRequestBody::empty())
                .map_err(|e| e.to_string())?;
            object_store::azure::AzureAuthorizer::new(&cred, account)
                .try_authorize(&mut req)
                .map_err(|e| format!("the request could not be signed: {e}"))?;
            let url = url::Url::parse(&req.uri().to_string()).map_err(|e| e.to_string())?;
            let mut b = client.get(url).timeout(timeout);
            for (k, v) in req.headers() {
                b = b.header(k, v);
            }
            b.build().map_err(|e| e.without_url().to_string())
        }
        Lister::Gcs {
            base,
            project,
            store,
        } => {
            let mut url = url::Url::parse(&format!("{base}/storage/v1/b"))
                .map_err(|e| format!("{base}: {e}"))?;
            url.query_pairs_mut()
                .append_pair("project", project)
                .append_pair("maxResults", "1000");
            if let Some(t) = token {
                url.query_pairs_mut().append_pair("pageToken", t);
            }
            let cred = store
                .credentials()
                .get_credential()
                .await
                .map_err(|e| format!("no credential: {e}"))?;
            let mut b = client.get(url).timeout(timeout);
            if !cred.bearer.is_empty() {
                b = b.bearer_auth(&cred.bearer);
            }
            b.build().map_err(|e| e.without_url().to_string())
        }
    }
}

fn parse(lister: &Lister, body: &str) -> Result<Page, String> {
    match lister {
        Lister::S3 { .. } => Ok(xml_page(
            body,
            "Bucket",
            "CreationDate",
            "ContinuationToken",
        )),
        Lister::Azure { .. } => Ok(xml_page(body, "Container", "Last-Modified", "NextMarker")),
        Lister::Gcs { .. } => gcs_page(body),
    }
}

/// The `<item>` elements of an XML answer (their `<Name>` and `<created>`), and `<next>`.
fn xml_page(body: &str, item: &str, created: &str, next: &str) -> Page {
    let open = format!("<{item}>");
    let close = format!("</{item}>");
    let mut buckets = Vec::new();
    let mut rest = body;
    while let Some(a) = rest.find(&open) {
        let inner = &rest[a + open.len()..];
        let Some(b) = inner.find(&close) else { break };
        let el = &inner[..b];
        if let Some(name) = super::presign::xml_field(el, "Name") {
            buckets.push(Bucket {
                name: unescape(&name),
                created: super::presign::xml_field(el, created),
            });
        }
        rest = &inner[b + close.len()..];
    }
    Page {
        buckets,
        next: super::presign::xml_field(body, next).filter(|t| !t.is_empty()),
    }
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

fn gcs_page(body: &str) -> Result<Page, String> {
    let v: serde_json::Value = serde_json::from_str(body).map_err(|e| e.to_string())?;
    let buckets = v["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| {
                    Some(Bucket {
                        name: i["name"].as_str()?.to_string(),
                        created: i["timeCreated"].as_str().map(str::to_string),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Page {
        buckets,
        next: v["nextPageToken"]
            .as_str()
            .filter(|t| !t.is_empty())
            .map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_s3_azure_and_gcs_pages() {
        let s3 = "<ListAllMyBucketsResult><Buckets><Bucket><CreationDate>2026-12-06T05:48:46.010Z</CreationDate><Name>b-two</Name></Bucket><Bucket><Name>a&amp;one</Name><CreationDate>x</CreationDate></Bucket></Buckets><ContinuationToken>tok</ContinuationToken></ListAllMyBucketsResult>";
        let p = xml_page(s3, "Bucket", "CreationDate", "ContinuationToken");
        assert_eq!(p.buckets.len(), 2);
        assert_eq!(p.buckets[0].name, "b-two");
        assert_eq!(
            p.buckets[0].created.as_deref(),
            Some("2026-12-06T05:48:46.010Z")
        );
        assert_eq!(p.buckets[1].name, "a&one");
        assert_eq!(p.next.as_deref(), Some("tok"));
        let az = "<EnumerationResults><Containers><Container><Name>c1</Name><Properties><Last-Modified>Sun, 06 Dec 2026 05:48:46 GMT</Last-Modified></Properties></Container></Containers><NextMarker /></EnumerationResults>";
        let p = xml_page(az, "Container", "Last-Modified", "NextMarker");
        assert_eq!(p.buckets[0].name, "c1");
        assert_eq!(p.next, None);
        let g = r#"{"kind":"storage#buckets","items":[{"name":"g1","timeCreated":"2026-12-06T05:48:46Z"}],"nextPageToken":"n"}"#;
        let p = gcs_page(g).unwrap();
        assert_eq!(p.buckets[0].name, "g1");
        assert_eq!(p.next.as_deref(), Some("n"));
        assert_eq!(gcs_page("{}").unwrap(), Page::default());
        let denied = "<Error><Code>SignatureDoesNotMatch</Code><Message>no match</Message><CanonicalRequest>GET / X-Amz-Credential=AKIA</CanonicalRequest></Error>";
        assert_eq!(error_detail(denied), "SignatureDoesNotMatch: no match");
        assert_eq!(
            error_detail(r#"{"error":{"code":403,"message":"denied"}}"#),
            "denied"
        );
    }
}
