//! S3 credentials: a remote's own settings, `--profile`, the environment's keys, the AWS CLI's
//! chain (profiles, web identity, container credentials, instance metadata), the shared-config
//! files read for descriptions, and how long a credential lasts.

use super::common::{MissingCredentials, env, need_env};
use crate::store::awscreds::{self, Explain};
use crate::store::config::Remote;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;

/// A static AWS-style credential; deliberately not `Debug`.
pub struct StaticKeys {
    pub key_id: String,
    pub secret: String,
    pub token: Option<String>,
    /// When the keys expire, if known (`AWS_CREDENTIAL_EXPIRATION`, as `aws configure
    /// export-credentials` writes it).
    pub expires: Option<std::time::SystemTime>,
}

pub enum S3Creds {
    /// Keys moverctl found (a remote's variables, `AWS_ACCESS_KEY_ID` ...): never renewed.
    Static(StaticKeys),
    /// One named profile (a remote's `profile`, `--profile`): aws-config's profile provider.
    Profile(String),
    /// The AWS CLI's chain after the environment's keys: `AWS_PROFILE` or the `default`
    /// profile (named here when the shared files have it), web identity, container credentials,
    /// instance metadata.
    Chain(Option<String>),
    Anonymous,
}

static CLI_PROFILE: OnceLock<Option<String>> = OnceLock::new();

/// `--profile NAME`: the AWS profile of every S3 location whose remote names no credentials of
/// its own (set once, by the CLI).
pub fn set_cli_profile(p: Option<String>) {
    let _ = CLI_PROFILE.set(p.filter(|p| !p.is_empty()));
}

fn cli_profile() -> Option<String> {
    CLI_PROFILE.get().cloned().flatten()
}

pub struct S3Resolved {
    pub creds: S3Creds,
    /// Region from the profile, when the profile has one.
    pub profile_region: Option<String>,
    /// Where the credentials came from, named (variables, profile, role), never a value.
    pub from: String,
    /// What to run when they cannot be had or renewed.
    pub fix: String,
}

const EXPORT_FIX: &str = "export new keys (e.g. `eval \"$(aws configure export-credentials --profile NAME --format env)\"`), \
     or let moverctl use the profile itself (--profile NAME, AWS_PROFILE, or a remote's profile): it renews a profile's \
     credentials as the run goes on; a run resumes from its journal";

pub fn s3(location: &str, remote: Option<&Remote>) -> Result<S3Resolved, MissingCredentials> {
    if let Some(r) = remote {
        if r.anonymous {
            return Ok(S3Resolved {
                creds: S3Creds::Anonymous,
                profile_region: None,
                from: "none (the remote says anonymous = true)".into(),
                fix: String::new(),
            });
        }
        if let Some(k) = &r.access_key_id_env {
            let Some(s) = &r.secret_access_key_env else {
                return Err(MissingCredentials {
                    location: location.into(),
                    hint: "the remote names access_key_id_env but not secret_access_key_env".into(),
                });
            };
            let keys = StaticKeys {
                key_id: need_env(location, "access_key_id_env", k)?,
                secret: need_env(location, "secret_access_key_env", s)?,
                token: match &r.session_token_env {
                    Some(t) => Some(need_env(location, "session_token_env", t)?),
                    None => None,
                },
                expires: None,
            };
            return Ok(S3Resolved {
                creds: S3Creds::Static(keys),
                profile_region: None,
                from: format!(
                    "the environment variables {k} and {s} (the remote's access_key_id_env and secret_access_key_env)"
                ),
                fix: format!("put valid keys in {k} and {s}"),
            });
        }
        if let Some(p) = &r.profile {
            return profile(location, p, "the remote's profile");
        }
    }
    if let Some(p) = cli_profile() {
        return profile(location, &p, "--profile");
    }
    if let (Some(k), Some(s)) = (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
        let keys = StaticKeys {
            key_id: k,
            secret: s,
            token: env("AWS_SESSION_TOKEN"),
            expires: env("AWS_CREDENTIAL_EXPIRATION").and_then(|t| {
                chrono::DateTime::parse_from_rfc3339(&t)
                    .ok()
                    .map(std::time::SystemTime::from)
            }),
        };
        let with_token = keys.token.is_some();
        return Ok(S3Resolved {
            creds: S3Creds::Static(keys),
            profile_region: None,
            from: if with_token {
                "the environment variables AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN".into()
            } else {
                "the environment variables AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY".into()
            },
            fix: EXPORT_FIX.into(),
        });
    }
    if env("AWS_ACCESS_KEY_ID").is_some() {
        return Err(MissingCredentials {
            location: location.into(),
            hint: "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not".into(),
        });
    }
    if let Some(p) = env("AWS_PROFILE") {
        let mut r = profile(location, &p, "AWS_PROFILE")?;
        r.creds = S3Creds::Chain(Some(p));
        return Ok(r);
    }
    if profile_fields("default").is_some() {
        let mut r = profile(location, "default", "the default profile")?;
        r.creds = S3Creds::Chain(Some("default".into()));
        return Ok(r);
    }
    let (from, fix) = if env("AWS_WEB_IDENTITY_TOKEN_FILE").is_some() {
        (
            "a web identity token (AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN: EKS IRSA)".to_string(),
            "check that the token file is readable, that AWS_ROLE_ARN names a role that trusts it, \
             and that STS can be reached"
                .to_string(),
        )
    } else if env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").is_some()
        || env("AWS_CONTAINER_CREDENTIALS_FULL_URI").is_some()
    {
        (
            "container credentials (AWS_CONTAINER_CREDENTIALS_*: an ECS task role or EKS Pod Identity)".to_string(),
            "check the task role or the pod identity association, and that the credentials endpoint can be reached".to_string(),
        )
    } else {
        (
            "the AWS default chain (no keys or profile found; EC2 instance metadata, IMDSv2, was tried last)".to_string(),
            "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (a profile in ~/.aws/config or \
             ~/.aws/credentials: keys, a role, SSO or credential_process), or pass --profile NAME, or name \
             the variables in a remote (access_key_id_env, secret_access_key_env); on EC2, ECS or EKS the \
             instance, task or pod role is used"
                .to_string(),
        )
    };
    Ok(S3Resolved {
        creds: S3Creds::Chain(None),
        profile_region: None,
        from,
        fix,
    })
}

/// The provider behind a resolved S3 credential, for [`awscreds::AwsCredentialCache`]. `region`
/// is where STS / SSO are asked (`AWS_REGION`, the profile's, else us-east-1). Anonymous: None.
pub fn s3_provider(
    r: &S3Resolved,
    region: &str,
) -> Option<aws_credential_types::provider::SharedCredentialsProvider> {
    use aws_config::meta::credentials::CredentialsProviderChain;
    use aws_config::provider_config::ProviderConfig;
    use aws_credential_types::provider::SharedCredentialsProvider as Shared;
    let conf = || {
        ProviderConfig::without_region()
            .with_region(Some(aws_config::Region::new(region.to_string())))
    };
    Some(match &r.creds {
        S3Creds::Anonymous => return None,
        S3Creds::Static(k) => {
            Shared::new(awscreds::FixedKeys(aws_credential_types::Credentials::new(
                k.key_id.clone(),
                k.secret.clone(),
                k.token.clone(),
                k.expires,
                "moverctl",
            )))
        }
        S3Creds::Profile(name) => profile_provider(name, &conf(), region, 0),
        S3Creds::Chain(profile) => {
            let c = conf();
            Shared::new(
                CredentialsProviderChain::first_try(
                    "Environment",
                    aws_config::environment::credentials::EnvironmentVariableCredentialsProvider::new(),
                )
                .or_else(
                    "Profile",
                    match profile {
                        Some(p) => profile_provider(p, &c, region, 0),
                        None => Shared::new(
                            aws_config::profile::ProfileFileCredentialsProvider::builder()
                                .configure(&c)
                                .build(),
                        ),
                    },
                )
                .or_else(
                    "WebIdentityToken",
                    aws_config::web_identity_token::WebIdentityTokenCredentialsProvider::builder()
                        .configure(&c)
                        .build(),
                )
                .or_else(
                    "EcsContainer",
                    aws_config::ecs::EcsCredentialsProvider::builder()
                        .configure(&c)
                        .build(),
                )
                .or_else(
                    "Ec2InstanceMetadata",
                    aws_config::imds::credentials::ImdsCredentialsProvider::builder()
                        .configure(&c)
                        .build(),
                ),
            )
        }
    })
}

/// One profile's provider: aws-config's profile provider, except for a role with
/// `duration_seconds` (which aws-config does not pass to STS): that role is assumed here, with
/// its source (a source profile, resolved the same way, or a `credential_source`).
fn profile_provider(
    name: &str,
    conf: &aws_config::provider_config::ProviderConfig,
    region: &str,
    depth: usize,
) -> aws_credential_types::provider::SharedCredentialsProvider {
    use aws_credential_types::provider::SharedCredentialsProvider as Shared;
    let aws_config_s = || {
        Shared::new(
            aws_config::profile::ProfileFileCredentialsProvider::builder()
                .configure(conf)
                .profile_name(name)
                .build(),
        )
    };
    let f = profile_fields(name).unwrap_or_default();
    let (Some(role), Some(secs)) = (
        f.get("role_arn"),
        f.get("duration_seconds")
            .and_then(|d| d.parse::<u64>().ok()),
    ) else {
        return aws_config_s();
    };
    if depth > 8 {
        return aws_config_s();
    }
    let source = match (f.get("source_profile"), f.get("credential_source")) {
        (Some(src), _) if src == name => {
            match (f.get("aws_access_key_id"), f.get("aws_secret_access_key")) {
                (Some(k), Some(s)) => {
                    Shared::new(awscreds::FixedKeys(aws_credential_types::Credentials::new(
                        k.clone(),
                        s.clone(),
                        f.get("aws_session_token").cloned(),
                        None,
                        "profile",
                    )))
                }
                _ => return aws_config_s(),
            }
        }
        (Some(src), _) => profile_provider(src, conf, region, depth + 1),
        (None, Some(cs)) => match cs.as_str() {
            "Environment" => Shared::new(
                aws_config::environment::credentials::EnvironmentVariableCredentialsProvider::new(),
            ),
            "Ec2InstanceMetadata" => Shared::new(
                aws_config::imds::credentials::ImdsCredentialsProvider::builder()
                    .configure(conf)
                    .build(),
            ),
            "EcsContainer" => Shared::new(
                aws_config::ecs::EcsCredentialsProvider::builder()
                    .configure(conf)
                    .build(),
            ),
            _ => return aws_config_s(),
        },
        (None, None) => return aws_config_s(),
    };
    Shared::new(awscreds::TimedRole {
        role_arn: role.clone(),
        external_id: f.get("external_id").cloned(),
        session_name: f.get("role_session_name").cloned(),
        length: std::time::Duration::from_secs(secs),
        region: region.to_string(),
        source,
        built: tokio::sync::OnceCell::new(),
    })
}

/// The cache of one S3 store's credentials (None: anonymous access).
pub fn s3_cache(r: &S3Resolved, region: &str, shown: &str) -> Option<awscreds::AwsCredentialCache> {
    s3_provider(r, region).map(|p| {
        awscreds::AwsCredentialCache::new(
            p,
            Explain {
                from: r.from.clone(),
                fix: r.fix.clone(),
            },
            shown.to_string(),
        )
    })
}

fn credentials_file() -> Option<PathBuf> {
    std::env::var_os("AWS_SHARED_CREDENTIALS_FILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".aws/credentials")))
}

fn config_file() -> Option<PathBuf> {
    std::env::var_os("AWS_CONFIG_FILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".aws/config")))
}

/// Sections of an INI file: `[name]` → key = value. In the config file, `[profile name]` is `name`.
fn ini(path: &PathBuf, config_style: bool) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let Ok(text) = std::fs::read_to_string(path) else {
        return out;
    };
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let s = s.trim();
            section = if config_style {
                s.strip_prefix("profile ")
                    .map(str::trim)
                    .unwrap_or(s)
                    .to_string()
            } else {
                s.to_string()
            };
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            out.entry(section.clone())
                .or_default()
                .insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    out
}

/// A profile's settings from both shared files (the credentials file wins), or None when
/// neither has it.
fn profile_fields(name: &str) -> Option<BTreeMap<String, String>> {
    let creds = credentials_file()
        .map(|f| ini(&f, false))
        .unwrap_or_default();
    let conf = config_file().map(|f| ini(&f, true)).unwrap_or_default();
    if !creds.contains_key(name) && !conf.contains_key(name) {
        return None;
    }
    let mut fields = conf.get(name).cloned().unwrap_or_default();
    fields.extend(creds.get(name).cloned().unwrap_or_default());
    Some(fields)
}

fn files_named() -> String {
    format!(
        "{} or {}",
        credentials_file()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        config_file()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    )
}

fn is_sso(f: &BTreeMap<String, String>) -> bool {
    f.contains_key("sso_session") || f.contains_key("sso_start_url")
}

/// What a profile is and what to run when it gives no credentials (names only). `named_by`
/// says how the profile was chosen ("--profile", "AWS_PROFILE", ...).
pub fn describe_profile(name: &str, named_by: &str) -> (String, String) {
    let Some(f) = profile_fields(name) else {
        return (
            format!("AWS profile {name:?} ({named_by})"),
            format!("add profile {name:?} to {}", files_named()),
        );
    };
    let check =
        format!("`aws sts get-caller-identity --profile {name}` shows the AWS CLI's own message");
    if let Some(role) = f.get("role_arn") {
        let _ = role;
        if let Some(src) = f.get("source_profile") {
            let from = format!(
                "AWS profile {name:?} ({named_by}; role_arn, assumed with the credentials of source profile {src:?})"
            );
            // Follow the chain of source profiles to the first one that cannot work.
            let mut seen = vec![name.to_string()];
            let mut cur = src.clone();
            loop {
                let Some(sf) = profile_fields(&cur) else {
                    return (
                        from,
                        format!(
                            "its source profile {cur:?} is not defined in {}: add it, or fix the source_profile of profile {:?}",
                            files_named(),
                            seen.last().cloned().unwrap_or_default()
                        ),
                    );
                };
                if is_sso(&sf) {
                    return (
                        from,
                        format!(
                            "its source profile {cur:?} signs in with IAM Identity Center: run `aws sso login --profile {cur}`, then run the command again (a run resumes from its journal)"
                        ),
                    );
                }
                if seen.contains(&cur) {
                    return (from, format!("its source profiles form a loop at {cur:?}"));
                }
                seen.push(cur.clone());
                match sf.get("source_profile") {
                    Some(next) if sf.contains_key("role_arn") && next != &cur => {
                        cur = next.clone();
                    }
                    _ => {
                        if !sf.contains_key("aws_access_key_id")
                            && !sf.contains_key("credential_process")
                            && !sf.contains_key("role_arn")
                        {
                            return (
                                from,
                                format!(
                                    "its source profile {cur:?} has no credentials (no aws_access_key_id, credential_process, role_arn or SSO settings)"
                                ),
                            );
                        }
                        return (
                            from,
                            format!(
                                "the role could not be assumed with the credentials of profile {cur:?}, or they were refused; {check}"
                            ),
                        );
                    }
                }
            }
        }
        let source = f
            .get("credential_source")
            .map(|c| format!("credential_source = {c}"))
            .or_else(|| {
                f.contains_key("web_identity_token_file")
                    .then(|| "web_identity_token_file".to_string())
            })
            .unwrap_or_else(|| "no source_profile or credential_source".into());
        return (
            format!("AWS profile {name:?} ({named_by}; role_arn, {source})"),
            format!("the role could not be assumed; {check}"),
        );
    }
    if is_sso(&f) {
        let how = match f.get("sso_session") {
            Some(s) => format!("IAM Identity Center, sso_session {s:?}"),
            None => "IAM Identity Center, legacy sso_start_url".into(),
        };
        return (
            format!("AWS profile {name:?} ({named_by}; {how})"),
            format!(
                "the SSO sign-in is missing or expired: run `aws sso login --profile {name}`, then run the command again (a run resumes from its journal)"
            ),
        );
    }
    if f.contains_key("credential_process") {
        return (
            format!("AWS profile {name:?} ({named_by}; credential_process)"),
            format!(
                "its credential_process failed or printed no usable credentials (its output is not shown here); {check}"
            ),
        );
    }
    if f.contains_key("aws_access_key_id") {
        return (
            format!(
                "AWS profile {name:?} ({named_by}; keys in {})",
                files_named()
            ),
            format!("put valid keys in profile {name:?}; {check}"),
        );
    }
    (
        format!("AWS profile {name:?} ({named_by})"),
        format!(
            "profile {name:?} has no credentials (no aws_access_key_id, role_arn, SSO settings or credential_process)"
        ),
    )
}

fn profile(location: &str, name: &str, named_by: &str) -> Result<S3Resolved, MissingCredentials> {
    let Some(fields) = profile_fields(name) else {
        return Err(MissingCredentials {
            location: location.into(),
            hint: format!(
                "AWS profile {name:?} ({named_by}) is not in {}",
                files_named()
            ),
        });
    };
    let (from, fix) = describe_profile(name, named_by);
    Ok(S3Resolved {
        creds: S3Creds::Profile(name.to_string()),
        profile_region: fields.get("region").cloned(),
        from,
        fix,
    })
}

/// What can be seen, without asking anyone, of how long an S3 location's credentials last, set
/// against a move predicted to take `seconds`: a warning when they cannot be renewed and end
/// before the move would (a session token: at `AWS_CREDENTIAL_EXPIRATION`, or unknown but at
/// most 36 h), a note when they are renewed but something behind them must stay valid (an SSO
/// sign-in; a role's session length). None: nothing to say.
pub fn lifetime_note(shown: &str, remote: Option<&Remote>, seconds: u64) -> Option<String> {
    let r = s3(shown, remote).ok()?;
    let took = crate::units::fmt_duration(rust_decimal::Decimal::from(seconds));
    match &r.creds {
        S3Creds::Static(k) => {
            let now = std::time::SystemTime::now();
            match (k.expires, &k.token) {
                (Some(e), _) => {
                    let left = e.duration_since(now).unwrap_or_default().as_secs();
                    (left < seconds).then(|| {
                        format!(
                            "warning: the credentials for {shown} ({}) expire in {}, before the move's \
                             predicted {took}, and cannot be renewed: use the profile they came from \
                             (--profile NAME), which moverctl renews as the run goes on",
                            r.from,
                            crate::units::fmt_duration(rust_decimal::Decimal::from(left))
                        )
                    })
                }
                (None, Some(_)) if seconds > 3600 => Some(format!(
                    "warning: {shown} uses a session token ({}) that cannot be renewed and lasts 1 to \
                     36 hours (its expiry is not known: AWS_CREDENTIAL_EXPIRATION is not set); the move \
                     is predicted to take {took}: use the profile it came from (--profile NAME), which \
                     moverctl renews as the run goes on",
                    r.from
                )),
                _ => None,
            }
        }
        S3Creds::Profile(name) | S3Creds::Chain(Some(name)) => {
            let f = profile_fields(name)?;
            let sso = |p: &str| profile_fields(p).is_some_and(|f| is_sso(&f));
            let sso_profile = if sso(name) {
                Some(name.clone())
            } else {
                f.get("source_profile").filter(|p| sso(p)).cloned()
            };
            if let Some(p) = sso_profile
                && seconds > 3600
            {
                return Some(format!(
                    "note: {shown} signs in with IAM Identity Center (profile {p:?}); moverctl renews \
                     the role credentials as the run goes on, but the SSO sign-in itself must stay \
                     valid for the move's predicted {took} (sessions last 1 to 12 hours, 8 by \
                     default): run `aws sso login --profile {p}` right before, and again if the run \
                     stops with exit 4 (it resumes)"
                ));
            }
            if f.contains_key("role_arn") {
                let secs: u64 = f
                    .get("duration_seconds")
                    .and_then(|d| d.parse().ok())
                    .unwrap_or(3600);
                if secs < seconds {
                    return Some(format!(
                        "note: the role of profile {name:?} gives sessions of {}, shorter than the \
                         move's predicted {took}; moverctl renews them as the run goes on (its \
                         source's credentials must stay valid)",
                        crate::units::fmt_duration(rust_decimal::Decimal::from(secs))
                    ));
                }
            }
            None
        }
        _ => None,
    }
}

/// The region STS and SSO are asked in: `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's, else
/// us-east-1 (not the store's: a non-AWS store's region means nothing to STS).
pub fn sts_region(r: &S3Resolved) -> String {
    env("AWS_REGION")
        .or_else(|| env("AWS_DEFAULT_REGION"))
        .or_else(|| r.profile_region.clone())
        .unwrap_or_else(|| "us-east-1".into())
}
