//! AWS credentials that expire, renewed as a run goes on: one [`AwsCredentialCache`] per S3
//! store, plugged into object_store's builder as its `CredentialProvider`, so that every request
//! path signs with it (object_store's own calls, and moverctl's presigned listing pages, HEADs,
//! CRC64 writes, server-side and from-URL copies, the probe).
//!
//! Behind it is one of aws-config's providers (the AWS CLI's chain: environment, shared profiles
//! with roles / SSO / `credential_process`, web identity, ECS / EKS Pod Identity, IMDSv2) or the
//! keys moverctl found itself. The provider is asked only when needed, never per request:
//!
//! - **One refresh at a time.** Callers that need a credential while one is being fetched wait
//!   for that fetch; callers that still hold a valid one keep using it.
//! - **Ahead of expiry.** A credential with an expiry is renewed 5 minutes before it (or at half
//!   its lifetime, for one that lives under 10 minutes). A renewal that fails while the held
//!   credential is still valid is tried again 30 s later; the held one is used meanwhile.
//! - **Refused.** [`AwsCredentialCache::refused`] drops a credential a server refused as expired
//!   or invalid (unless a newer one is already held): the next request fetches once.
//! - **Spent.** When no fresh credential can be had (the provider fails with nothing valid held,
//!   or gives back the very credential that was refused), the cache is *spent*: every request
//!   fails at once without asking the provider again, and runs stop ([`is_spent`]).
//!
//! Nothing here is ever formatted: errors come from [`Explain`], which names the profile, the
//! variables or the command to run, never a value, and never the provider's own message (which
//! may quote a `credential_process`'s output).
//!
//! [`is_spent`]: AwsCredentialCache::is_spent

use aws_credential_types::provider::{
    ProvideCredentials, SharedCredentialsProvider, error::CredentialsError,
};
use object_store::aws::AwsCredential;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant, SystemTime};

/// How long before expiry a credential is renewed (at most; see [`refresh_at`]).
const AHEAD: Duration = Duration::from_secs(300);
/// A credential this close to its expiry is not handed out any more.
const MARGIN: Duration = Duration::from_secs(2);
/// After a failed renewal while the held credential is still valid, when to try again.
const RETRY_RENEWAL: Duration = Duration::from_secs(30);
/// How long one provider call may take (a hung `credential_process`, an unreachable IMDS).
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(120);

/// What to say when credentials cannot be had, and what to run about it. Names only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explain {
    /// Where the credentials come from, as in `Store::credentials`.
    pub from: String,
    /// What to do when the source gives none (or none fresh): "run `aws sso login --profile
    /// dev`", "export new keys in AWS_ACCESS_KEY_ID ...".
    pub fix: String,
}

/// What became of a refusal reported with [`AwsCredentialCache::refused`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A fresh credential is held or will be fetched by the next request: try once more.
    Retry,
    /// No fresh credential can be had; the message says what to run.
    Spent(String),
}

struct Held {
    cred: Arc<AwsCredential>,
    expires: Option<SystemTime>,
    /// When to renew (None: never; the credential does not expire).
    renew_at: Option<SystemTime>,
    fetched: Instant,
}

impl Held {
    fn usable(&self, now: SystemTime) -> bool {
        self.expires.is_none_or(|e| now + MARGIN < e)
    }

    fn due(&self, now: SystemTime) -> bool {
        self.renew_at.is_some_and(|r| now >= r)
    }
}

#[derive(Default)]
struct State {
    held: Option<Held>,
    /// The credential a server refused last: a renewal that gives it back is no renewal.
    refused: Option<Arc<AwsCredential>>,
    spent: Option<String>,
}

/// When a credential fetched at `now` that expires at `expires` is renewed: 5 minutes before
/// expiry, or at half its lifetime when that is shorter.
pub fn refresh_at(now: SystemTime, expires: SystemTime) -> SystemTime {
    let life = expires.duration_since(now).unwrap_or_default();
    expires - AHEAD.min(life / 2)
}

pub struct AwsCredentialCache {
    provider: SharedCredentialsProvider,
    explain: Explain,
    /// The location as shown (for error paths).
    shown: String,
    state: Mutex<State>,
    renewing: tokio::sync::Mutex<()>,
    /// Provider calls made (for tests and logs).
    fetches: AtomicU64,
}

impl std::fmt::Debug for AwsCredentialCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AwsCredentialCache({})", self.explain.from)
    }
}

/// The error a request gets when no credential can be had: object_store's `Unauthenticated`
/// (exit code 4), with the explanation as its source.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NoCredentials(pub String);

impl AwsCredentialCache {
    pub fn new(provider: SharedCredentialsProvider, explain: Explain, shown: String) -> Self {
        AwsCredentialCache {
            provider,
            explain,
            shown,
            state: Mutex::default(),
            renewing: tokio::sync::Mutex::new(()),
            fetches: AtomicU64::new(0),
        }
    }

    pub fn explain(&self) -> &Explain {
        &self.explain
    }

    /// How many times the provider was asked.
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Relaxed)
    }

    /// No fresh credential can be had: the message says what to run.
    pub fn is_spent(&self) -> Option<String> {
        self.state.lock().expect("credential state").spent.clone()
    }

    /// When the credential held now expires (None: none held, or it does not expire).
    pub fn expires(&self) -> Option<SystemTime> {
        self.state
            .lock()
            .expect("credential state")
            .held
            .as_ref()
            .and_then(|h| h.expires)
    }

    /// Whether the credential held expires within `within` (a refusal of any kind then most
    /// likely means it expired).
    pub fn expiring(&self, within: Duration) -> bool {
        self.expires()
            .is_some_and(|e| SystemTime::now() + within >= e)
    }

    fn err(&self, message: String) -> object_store::Error {
        object_store::Error::Unauthenticated {
            path: self.shown.clone(),
            source: Box::new(NoCredentials(message)),
        }
    }

    /// A server refused a request of an attempt that started at `started`, as expired or
    /// invalid credentials: the credential held is dropped unless it was fetched after the
    /// attempt started (someone renewed it meanwhile).
    pub fn refused(&self, started: Instant) -> Refusal {
        let mut st = self.state.lock().expect("credential state");
        if let Some(m) = &st.spent {
            return Refusal::Spent(m.clone());
        }
        if let Some(h) = &st.held
            && h.fetched <= started
        {
            tracing::info!(
                target: "moverctl::credentials",
                store = %self.shown,
                "the store refused the credentials from {} as expired or invalid; fetching new ones",
                self.explain.from
            );
            st.refused = st.held.take().map(|h| h.cred);
        }
        Refusal::Retry
    }

    pub async fn credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        // Due for renewal but still valid: one caller renews, the others go on with it.
        let renew_now = {
            let st = self.state.lock().expect("credential state");
            if let Some(m) = &st.spent {
                return Err(self.err(m.clone()));
            }
            let now = SystemTime::now();
            match &st.held {
                Some(h) if h.usable(now) && !h.due(now) => return Ok(h.cred.clone()),
                Some(h) if h.usable(now) => match self.renewing.try_lock() {
                    Ok(guard) => Some((guard, h.cred.clone())),
                    Err(_) => return Ok(h.cred.clone()),
                },
                _ => None,
            }
        };
        if let Some((guard, cred)) = renew_now {
            return self.renew(guard, Some(cred)).await;
        }
        let guard = self.renewing.lock().await;
        {
            // Someone else may have renewed while this caller waited.
            let st = self.state.lock().expect("credential state");
            if let Some(m) = &st.spent {
                return Err(self.err(m.clone()));
            }
            let now = SystemTime::now();
            if let Some(h) = &st.held
                && h.usable(now)
                && !h.due(now)
            {
                return Ok(h.cred.clone());
            }
        }
        self.renew(guard, None).await
    }

    /// Ask the provider (the renewal lock is held). `still_valid`: the credential held now,
    /// when it is still usable (a failed renewal keeps it for a while).
    async fn renew(
        &self,
        _guard: tokio::sync::MutexGuard<'_, ()>,
        still_valid: Option<Arc<AwsCredential>>,
    ) -> object_store::Result<Arc<AwsCredential>> {
        self.fetches.fetch_add(1, Relaxed);
        let got = tokio::time::timeout(PROVIDER_TIMEOUT, self.provider.provide_credentials()).await;
        let now = SystemTime::now();
        let mut st = self.state.lock().expect("credential state");
        let failed = match got {
            Ok(Ok(c)) => {
                let cred = Arc::new(AwsCredential {
                    key_id: c.access_key_id().to_string(),
                    secret_key: c.secret_access_key().to_string(),
                    token: c.session_token().map(str::to_string),
                });
                let expires = c.expiry();
                if st.refused.as_ref().is_some_and(|r| same(r, &cred)) {
                    let m = format!(
                        "the store refused the credentials from {} as expired or invalid, and \
                         that source gives no new ones; {}",
                        self.explain.from, self.explain.fix
                    );
                    st.spent = Some(m.clone());
                    st.held = None;
                    return Err(self.err(m));
                }
                if expires.is_some_and(|e| e <= now + MARGIN) {
                    "it handed out credentials that had already expired".to_string()
                } else {
                    st.refused = None;
                    tracing::debug!(
                        target: "moverctl::credentials",
                        store = %self.shown,
                        expires_in_s = expires
                            .and_then(|e| e.duration_since(now).ok())
                            .map(|d| d.as_secs()),
                        "credentials fetched from {}",
                        self.explain.from
                    );
                    st.held = Some(Held {
                        cred: cred.clone(),
                        expires,
                        renew_at: expires.map(|e| refresh_at(now, e)),
                        fetched: Instant::now(),
                    });
                    return Ok(cred);
                }
            }
            Ok(Err(e)) => kind_of(&e).to_string(),
            Err(_) => format!("it did not answer within {} s", PROVIDER_TIMEOUT.as_secs()),
        };
        if let (Some(cred), Some(h)) = (still_valid, st.held.as_mut())
            && h.usable(now)
        {
            tracing::warn!(
                target: "moverctl::credentials",
                store = %self.shown,
                "renewing the credentials from {} failed ({failed}); the ones held are still \
                 valid and used meanwhile; trying again in {} s",
                self.explain.from,
                RETRY_RENEWAL.as_secs()
            );
            h.renew_at = Some(now + RETRY_RENEWAL);
            return Ok(cred);
        }
        let m = format!(
            "no credentials could be had from {} ({failed}); {}",
            self.explain.from, self.explain.fix
        );
        st.spent = Some(m.clone());
        st.held = None;
        Err(self.err(m))
    }
}

fn same(a: &AwsCredential, b: &AwsCredential) -> bool {
    a.key_id == b.key_id && a.secret_key == b.secret_key && a.token == b.token
}

/// The kind of a provider failure in words, without the provider's message (it may quote a
/// process's output).
fn kind_of(e: &CredentialsError) -> &'static str {
    match e {
        CredentialsError::CredentialsNotLoaded(_) => "none were found",
        CredentialsError::ProviderTimedOut(_) => "the credential source timed out",
        CredentialsError::InvalidConfiguration(_) => {
            "the profile's configuration is incomplete or invalid"
        }
        CredentialsError::ProviderError(_) => "the credential source failed",
        _ => "the credential source failed unexpectedly",
    }
}

#[async_trait::async_trait]
impl object_store::CredentialProvider for AwsCredentialCache {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        self.credential().await
    }
}

/// A fixed credential (keys moverctl found in the environment or a remote's variables) as a
/// provider: it cannot be renewed, so a refusal as expired spends the cache at once.
#[derive(Debug)]
pub struct FixedKeys(pub aws_credential_types::Credentials);

impl ProvideCredentials for FixedKeys {
    fn provide_credentials<'a>(
        &'a self,
    ) -> aws_credential_types::provider::future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        aws_credential_types::provider::future::ProvideCredentials::ready(Ok(self.0.clone()))
    }
}

/// A role assumed for `duration_seconds` (a profile's setting aws-config's profile provider
/// does not pass on): STS AssumeRole with the source's credentials, the STS client built on
/// first use (`AWS_ENDPOINT_URL_STS` / `AWS_ENDPOINT_URL` name its endpoint, as for the CLI).
#[derive(Debug)]
pub struct TimedRole {
    pub role_arn: String,
    pub external_id: Option<String>,
    pub session_name: Option<String>,
    pub length: Duration,
    pub region: String,
    pub source: SharedCredentialsProvider,
    pub built: tokio::sync::OnceCell<aws_config::sts::AssumeRoleProvider>,
}

impl ProvideCredentials for TimedRole {
    fn provide_credentials<'a>(
        &'a self,
    ) -> aws_credential_types::provider::future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        aws_credential_types::provider::future::ProvideCredentials::new(async move {
            let p = self
                .built
                .get_or_init(|| async {
                    let conf = aws_config::defaults(aws_config::BehaviorVersion::latest())
                        .region(aws_config::Region::new(self.region.clone()))
                        .credentials_provider(self.source.clone())
                        .load()
                        .await;
                    let mut b = aws_config::sts::AssumeRoleProvider::builder(&self.role_arn)
                        .session_length(self.length)
                        .configure(&conf);
                    if let Some(e) = &self.external_id {
                        b = b.external_id(e);
                    }
                    if let Some(n) = &self.session_name {
                        b = b.session_name(n);
                    }
                    b.build().await
                })
                .await;
            p.provide_credentials().await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    /// A provider that counts its calls and hands out a new key each time, expiring `life`
    /// after it was handed out; or fails once `fail_after` calls were made.
    #[derive(Debug)]
    struct Counting {
        calls: Arc<AtomicU32>,
        life: Option<Duration>,
        fail_after: u32,
        delay: Duration,
    }

    impl ProvideCredentials for Counting {
        fn provide_credentials<'a>(
            &'a self,
        ) -> aws_credential_types::provider::future::ProvideCredentials<'a>
        where
            Self: 'a,
        {
            aws_credential_types::provider::future::ProvideCredentials::new(async move {
                let n = self.calls.fetch_add(1, Relaxed) + 1;
                tokio::time::sleep(self.delay).await;
                if n > self.fail_after {
                    return Err(CredentialsError::provider_error(
                        "secret-output-of-the-process",
                    ));
                }
                Ok(aws_credential_types::Credentials::new(
                    format!("KEY{n}"),
                    "s",
                    None,
                    self.life.map(|l| SystemTime::now() + l),
                    "test",
                ))
            })
        }
    }

    fn cache(p: Counting) -> Arc<AwsCredentialCache> {
        Arc::new(AwsCredentialCache::new(
            SharedCredentialsProvider::new(p),
            Explain {
                from: "AWS profile \"dev\"".into(),
                fix: "run `aws sso login --profile dev`".into(),
            },
            "s3://b/".into(),
        ))
    }

    #[test]
    fn renewal_is_five_minutes_ahead_or_at_half_life() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert_eq!(
            refresh_at(now, now + Duration::from_secs(3600)),
            now + Duration::from_secs(3300)
        );
        assert_eq!(
            refresh_at(now, now + Duration::from_secs(20)),
            now + Duration::from_secs(10)
        );
    }

    /// Fails if every request asks the provider, or concurrent requests each ask it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn many_concurrent_requests_make_one_provider_call() {
        let calls = Arc::new(AtomicU32::new(0));
        let c = cache(Counting {
            calls: calls.clone(),
            life: Some(Duration::from_secs(3600)),
            fail_after: u32::MAX,
            delay: Duration::from_millis(50),
        });
        let mut tasks = Vec::new();
        for _ in 0..64 {
            let c = c.clone();
            tasks.push(tokio::spawn(async move { c.credential().await.unwrap() }));
        }
        for t in tasks {
            assert_eq!(t.await.unwrap().key_id, "KEY1");
        }
        assert_eq!(calls.load(Relaxed), 1);
        for _ in 0..1000 {
            c.credential().await.unwrap();
        }
        assert_eq!(calls.load(Relaxed), 1);
    }

    #[tokio::test]
    async fn a_short_lived_credential_is_renewed_at_half_life() {
        let calls = Arc::new(AtomicU32::new(0));
        let c = cache(Counting {
            calls: calls.clone(),
            life: Some(Duration::from_secs(6)),
            fail_after: u32::MAX,
            delay: Duration::ZERO,
        });
        assert_eq!(c.credential().await.unwrap().key_id, "KEY1");
        tokio::time::sleep(Duration::from_millis(3_200)).await;
        assert_eq!(c.credential().await.unwrap().key_id, "KEY2");
        assert_eq!(c.credential().await.unwrap().key_id, "KEY2");
        assert_eq!(calls.load(Relaxed), 2);
    }

    #[tokio::test]
    async fn a_refused_credential_is_renewed_once_and_then_spent_when_none_comes() {
        let calls = Arc::new(AtomicU32::new(0));
        let c = cache(Counting {
            calls: calls.clone(),
            life: Some(Duration::from_secs(3600)),
            fail_after: 1,
            delay: Duration::ZERO,
        });
        let before = Instant::now();
        c.credential().await.unwrap();
        // An attempt that started before the fetch: the held credential is dropped.
        let started = Instant::now();
        assert_eq!(c.refused(started), Refusal::Retry);
        let e = c.credential().await.unwrap_err();
        assert!(crate::store::is_auth_error(&e), "{e}");
        let t = e.to_string();
        assert!(t.contains("aws sso login --profile dev"), "{t}");
        assert!(!t.contains("secret-output"), "{t}");
        assert!(c.is_spent().is_some());
        // Spent: no more provider calls.
        assert!(c.credential().await.is_err());
        assert_eq!(calls.load(Relaxed), 2);
        assert!(matches!(c.refused(before), Refusal::Spent(_)));
    }

    #[tokio::test]
    async fn a_refusal_seen_after_a_renewal_keeps_the_new_credential() {
        let calls = Arc::new(AtomicU32::new(0));
        let c = cache(Counting {
            calls: calls.clone(),
            life: None,
            fail_after: u32::MAX,
            delay: Duration::ZERO,
        });
        let early = Instant::now();
        c.credential().await.unwrap();
        assert_eq!(c.refused(Instant::now()), Refusal::Retry);
        assert_eq!(c.credential().await.unwrap().key_id, "KEY2");
        // A request of an attempt that started before KEY2 was fetched is refused late.
        assert_eq!(c.refused(early), Refusal::Retry);
        assert_eq!(c.credential().await.unwrap().key_id, "KEY2");
        assert_eq!(calls.load(Relaxed), 2);
    }

    #[tokio::test]
    async fn fixed_keys_refused_are_spent_at_once() {
        let c = AwsCredentialCache::new(
            SharedCredentialsProvider::new(FixedKeys(aws_credential_types::Credentials::new(
                "AKIA", "s", None, None, "env",
            ))),
            Explain {
                from: "the environment variables AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
                    .into(),
                fix: "export new keys".into(),
            },
            "s3://b/".into(),
        );
        c.credential().await.unwrap();
        assert_eq!(c.refused(Instant::now()), Refusal::Retry);
        let e = c.credential().await.unwrap_err().to_string();
        assert!(
            e.contains("gives no new ones") && e.contains("export new keys"),
            "{e}"
        );
        assert!(c.is_spent().is_some());
    }

    #[tokio::test]
    async fn a_failed_renewal_keeps_a_valid_credential() {
        let calls = Arc::new(AtomicU32::new(0));
        let c = cache(Counting {
            calls: calls.clone(),
            life: Some(Duration::from_secs(40)),
            fail_after: 1,
            delay: Duration::ZERO,
        });
        c.credential().await.unwrap();
        // Force the renewal time into the past.
        c.state.lock().unwrap().held.as_mut().unwrap().renew_at = Some(SystemTime::now());
        assert_eq!(c.credential().await.unwrap().key_id, "KEY1");
        assert!(c.is_spent().is_none());
        assert_eq!(calls.load(Relaxed), 2);
        // Not asked again before the retry time.
        c.credential().await.unwrap();
        assert_eq!(calls.load(Relaxed), 2);
    }
}
