//! Where credentials come from. Values are read here and handed to object_store; they are never
//! formatted, logged or stored. Errors name the variable, profile or file that would satisfy
//! them, never a value.
//!
//! S3 order (first match wins):
//! | source | how |
//! |---|---|
//! | remote `access_key_id_env` / `secret_access_key_env` | the named variables |
//! | remote `profile` | `~/.aws/credentials` and `~/.aws/config` (or `AWS_SHARED_CREDENTIALS_FILE`, `AWS_CONFIG_FILE`) |
//! | `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`) | environment |
//! | `AWS_PROFILE` | shared files, as above |
//! | `AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN`, `AWS_CONTAINER_CREDENTIALS_*` | object_store's own providers (EKS, ECS) |
//! | the `default` profile, if the shared files have one | shared files |
//! | remote `instance_credentials = true` or `MOVERCTL_INSTANCE_CREDENTIALS=1` | EC2 instance metadata |

use super::config::Remote;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A static AWS-style credential; deliberately not `Debug`.
pub struct StaticKeys {
    pub key_id: String,
    pub secret: String,
    pub token: Option<String>,
}

pub enum S3Creds {
    Static(StaticKeys),
    /// Web identity or container credentials: these env keys go to object_store's builder.
    Delegated(Vec<(String, String)>),
    Instance,
    Anonymous,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("no credentials for {location}: {hint}")]
pub struct MissingCredentials {
    pub location: String,
    pub hint: String,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn need_env(location: &str, field: &str, name: &str) -> Result<String, MissingCredentials> {
    env(name).ok_or_else(|| MissingCredentials {
        location: location.to_string(),
        hint: format!(
            "the remote's {field} names the environment variable {name}, which is not set"
        ),
    })
}

pub struct S3Resolved {
    pub creds: S3Creds,
    /// Region from the profile, when the profile has one.
    pub profile_region: Option<String>,
    /// Where the credentials came from, named (variables, profile, role), never a value.
    pub from: String,
}

pub fn s3(location: &str, remote: Option<&Remote>) -> Result<S3Resolved, MissingCredentials> {
    let none = S3Resolved {
        creds: S3Creds::Anonymous,
        profile_region: None,
        from: "none (the remote says anonymous = true)".into(),
    };
    if let Some(r) = remote {
        if r.anonymous {
            return Ok(none);
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
            };
            return Ok(S3Resolved {
                creds: S3Creds::Static(keys),
                profile_region: None,
                from: format!(
                    "the environment variables {k} and {s} (the remote's access_key_id_env and secret_access_key_env)"
                ),
            });
        }
        if let Some(p) = &r.profile {
            return profile(location, p);
        }
    }
    if let (Some(k), Some(s)) = (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
        let keys = StaticKeys {
            key_id: k,
            secret: s,
            token: env("AWS_SESSION_TOKEN"),
        };
        return Ok(S3Resolved {
            creds: S3Creds::Static(keys),
            profile_region: None,
            from: "the environment variables AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY".into(),
        });
    }
    if env("AWS_ACCESS_KEY_ID").is_some() {
        return Err(MissingCredentials {
            location: location.into(),
            hint: "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not".into(),
        });
    }
    if let Some(p) = env("AWS_PROFILE") {
        return profile(location, &p);
    }
    let delegated: Vec<(String, String)> = [
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
        "AWS_ROLE_SESSION_NAME",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    ]
    .iter()
    .filter_map(|k| env(k).map(|v| (k.to_ascii_lowercase(), v)))
    .collect();
    let web = delegated
        .iter()
        .any(|(k, _)| k == "aws_web_identity_token_file");
    let container = delegated
        .iter()
        .any(|(k, _)| k.starts_with("aws_container_credentials"));
    if web || container {
        return Ok(S3Resolved {
            creds: S3Creds::Delegated(delegated),
            profile_region: None,
            from: if web {
                "a web identity token (AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN)".into()
            } else {
                "container credentials (AWS_CONTAINER_CREDENTIALS_*)".into()
            },
        });
    }
    if shared_profile_exists("default") {
        return profile(location, "default");
    }
    if remote.is_some_and(|r| r.instance_credentials)
        || env("MOVERCTL_INSTANCE_CREDENTIALS").as_deref() == Some("1")
    {
        return Ok(S3Resolved {
            creds: S3Creds::Instance,
            profile_region: None,
            from: "the EC2 instance role (instance metadata)".into(),
        });
    }
    Err(MissingCredentials {
        location: location.into(),
        hint: "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (a profile in ~/.aws/credentials), \
               or name the variables in a remote (access_key_id_env, secret_access_key_env); on EC2 set \
               MOVERCTL_INSTANCE_CREDENTIALS=1 to use the instance role"
            .into(),
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

fn shared_profile_exists(name: &str) -> bool {
    credentials_file().is_some_and(|f| ini(&f, false).contains_key(name))
}

fn profile(location: &str, name: &str) -> Result<S3Resolved, MissingCredentials> {
    let creds = credentials_file()
        .map(|f| ini(&f, false))
        .unwrap_or_default();
    let conf = config_file().map(|f| ini(&f, true)).unwrap_or_default();
    let mut fields = conf.get(name).cloned().unwrap_or_default();
    fields.extend(creds.get(name).cloned().unwrap_or_default());
    if fields.is_empty() {
        return Err(MissingCredentials {
            location: location.into(),
            hint: format!(
                "AWS profile {name:?} is not in {} or {}",
                credentials_file()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                config_file()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            ),
        });
    }
    for unsupported in [
        "role_arn",
        "sso_session",
        "sso_start_url",
        "credential_process",
    ] {
        if fields.contains_key(unsupported) && !fields.contains_key("aws_access_key_id") {
            return Err(MissingCredentials {
                location: location.into(),
                hint: format!(
                    "AWS profile {name:?} uses {unsupported}, which moverctl does not resolve yet; export temporary keys \
                     (aws configure export-credentials --profile {name} --format env) and run again"
                ),
            });
        }
    }
    match (
        fields.get("aws_access_key_id"),
        fields.get("aws_secret_access_key"),
    ) {
        (Some(k), Some(s)) => Ok(S3Resolved {
            creds: S3Creds::Static(StaticKeys {
                key_id: k.clone(),
                secret: s.clone(),
                token: fields.get("aws_session_token").cloned(),
            }),
            profile_region: fields.get("region").cloned(),
            from: format!(
                "AWS profile {name:?} ({})",
                credentials_file()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            ),
        }),
        _ => Err(MissingCredentials {
            location: location.into(),
            hint: format!(
                "AWS profile {name:?} has no aws_access_key_id and aws_secret_access_key"
            ),
        }),
    }
}

/// GCS: a service-account file from the remote, `GOOGLE_SERVICE_ACCOUNT`,
/// `GOOGLE_APPLICATION_CREDENTIALS`, or the gcloud application-default file.
/// Returns the file (none for anonymous access) and where it was named, never a value.
pub fn gcs(
    location: &str,
    remote: Option<&Remote>,
) -> Result<(Option<PathBuf>, String), MissingCredentials> {
    if let Some(r) = remote {
        if r.anonymous {
            return Ok((None, "none (the remote says anonymous = true)".into()));
        }
        if let Some(v) = &r.service_account_path_env {
            return need_env(location, "service_account_path_env", v).map(|p| {
                (
                    Some(PathBuf::from(p)),
                    format!(
                        "the service-account file named by {v} (the remote's service_account_path_env)"
                    ),
                )
            });
        }
    }
    for v in [
        "GOOGLE_SERVICE_ACCOUNT",
        "GOOGLE_SERVICE_ACCOUNT_PATH",
        "GOOGLE_APPLICATION_CREDENTIALS",
    ] {
        if let Some(p) = env(v) {
            return Ok((
                Some(PathBuf::from(p)),
                format!("the service-account file named by {v}"),
            ));
        }
    }
    let adc = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".config/gcloud/application_default_credentials.json"));
    if let Some(a) = adc.filter(|a| a.exists()) {
        let from = format!("gcloud's application-default credentials ({})", a.display());
        return Ok((Some(a), from));
    }
    Err(MissingCredentials {
        location: location.into(),
        hint: "set GOOGLE_APPLICATION_CREDENTIALS to a service-account JSON file, run `gcloud auth application-default login`, \
               or name a variable in the remote's service_account_path_env"
            .into(),
    })
}

pub enum AzureCreds {
    Key(String),
    Sas(String),
    Emulator,
    Anonymous,
}

/// Returns the account, the credential and where it was named (never a value).
pub fn azure(
    location: &str,
    remote: Option<&Remote>,
) -> Result<(Option<String>, AzureCreds, String), MissingCredentials> {
    let account = remote
        .and_then(|r| r.account.clone())
        .or_else(|| env("AZURE_STORAGE_ACCOUNT_NAME"))
        .or_else(|| env("AZURE_STORAGE_ACCOUNT"));
    if let Some(r) = remote {
        if r.anonymous {
            return Ok((
                account,
                AzureCreds::Anonymous,
                "none (the remote says anonymous = true)".into(),
            ));
        }
        if r.use_emulator && r.account_key_env.is_none() && r.sas_token_env.is_none() {
            return Ok((
                account,
                AzureCreds::Emulator,
                "the storage emulator's well-known key (the remote's use_emulator)".into(),
            ));
        }
        if let Some(k) = &r.account_key_env {
            return Ok((
                account,
                AzureCreds::Key(need_env(location, "account_key_env", k)?),
                format!("the environment variable {k} (the remote's account_key_env)"),
            ));
        }
        if let Some(s) = &r.sas_token_env {
            return Ok((
                account,
                AzureCreds::Sas(need_env(location, "sas_token_env", s)?),
                format!("the environment variable {s} (the remote's sas_token_env)"),
            ));
        }
    }
    if account.is_none() {
        return Err(MissingCredentials {
            location: location.into(),
            hint: "set AZURE_STORAGE_ACCOUNT_NAME (and AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_TOKEN), or name them in a remote".into(),
        });
    }
    for v in ["AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_ACCESS_KEY"] {
        if let Some(k) = env(v) {
            return Ok((
                account,
                AzureCreds::Key(k),
                format!("the environment variable {v}"),
            ));
        }
    }
    for v in ["AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_SAS_KEY"] {
        if let Some(t) = env(v) {
            return Ok((
                account,
                AzureCreds::Sas(t),
                format!("the environment variable {v}"),
            ));
        }
    }
    Err(MissingCredentials {
        location: location.into(),
        hint: "set AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_TOKEN for the account, or name the variable in a remote \
               (account_key_env, sas_token_env)"
            .into(),
    })
}
