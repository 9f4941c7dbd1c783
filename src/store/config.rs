//! Named remotes (`~/.config/moverctl/remotes.toml`, `--config FILE`, `MOVERCTL_CONFIG`): a
//! provider, an endpoint, a region, addressing style, storage class, and *where* credentials come
//! from (names of environment variables, an AWS profile). The file never holds a secret; fields
//! that would are refused with a message saying what to write instead.
//!
//! ```toml
//! [remotes.b2]
//! type = "s3"
//! provider = "backblaze-b2"
//! endpoint = "https://s3.us-west-004.backblazeb2.com"
//! region = "us-west-004"
//! access_key_id_env = "B2_KEY_ID"
//! secret_access_key_env = "B2_APP_KEY"
//! ```

use crate::tomlfile::{self, FileError};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Remotes {
    #[serde(default)]
    remotes: BTreeMap<String, Remote>,
    /// The file's name as shown and its text, to locate errors found later (against the catalog).
    #[serde(skip)]
    origin: Option<(String, String)>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Remote {
    /// `s3`, `gcs`, `azure` or `local`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Catalog provider id (pricing, limits and quirks), e.g. `backblaze-b2`.
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub endpoint: Option<String>,
    #[serde(default)]
    pub region: Option<String>,
    /// Path-style addressing (`endpoint/bucket/key`); default true when an endpoint is given.
    #[serde(default)]
    pub path_style: Option<bool>,
    #[serde(default)]
    pub allow_http: Option<bool>,
    /// S3: send a local file's parts as they are read, their CRC64 as the trailer of an
    /// `aws-chunked` body (true), or read each part whole first and send the CRC64 in a header
    /// (false). Unset: as the catalog says (`crc64nvme-trailer`). Applies only where writes are
    /// proven by CRC64.
    #[serde(default)]
    pub trailing_checksum: Option<bool>,
    #[serde(default)]
    pub storage_class: Option<String>,
    /// Names of environment variables that hold the credentials.
    #[serde(default)]
    pub access_key_id_env: Option<String>,
    #[serde(default)]
    pub secret_access_key_env: Option<String>,
    #[serde(default)]
    pub session_token_env: Option<String>,
    /// An AWS shared-config profile (`~/.aws/credentials`, `~/.aws/config`).
    #[serde(default)]
    pub profile: Option<String>,
    /// Accepted for old remotes files; instance, container and web-identity credentials are
    /// always in the AWS chain now (last, as for the AWS CLI).
    #[serde(default)]
    pub instance_credentials: bool,
    /// Which kind of credential to use, where a store has several: Azure `account_key`,
    /// `sas_token`, `client_secret`, `workload_identity`, `azure_cli`, `managed_identity`; GCS
    /// `service_account`, `application_default`, `metadata`. Unset: chosen as object_store
    /// chooses (see `creds`).
    #[serde(default)]
    pub credential: Option<String>,
    /// Public buckets: send unsigned requests.
    #[serde(default)]
    pub anonymous: bool,
    /// GCS: the variable holding the path of a service-account JSON file.
    #[serde(default)]
    pub service_account_path_env: Option<String>,
    /// Azure: storage account name, and the variables holding a key or SAS token.
    #[serde(default)]
    pub account: Option<String>,
    #[serde(default)]
    pub account_key_env: Option<String>,
    #[serde(default)]
    pub sas_token_env: Option<String>,
    #[serde(default)]
    pub use_emulator: bool,
    /// Local: the folder `NAME:` stands for.
    #[serde(default)]
    pub root: Option<PathBuf>,
}

const SECRET_FIELDS: &[(&str, &str)] = &[
    (
        "secret_access_key",
        "secret_access_key_env = \"NAME_OF_VARIABLE\"",
    ),
    ("access_key_id", "access_key_id_env = \"NAME_OF_VARIABLE\""),
    ("session_token", "session_token_env = \"NAME_OF_VARIABLE\""),
    ("account_key", "account_key_env = \"NAME_OF_VARIABLE\""),
    ("sas_token", "sas_token_env = \"NAME_OF_VARIABLE\""),
    ("password", "an environment variable name"),
    ("secret", "an environment variable name"),
];

/// The `*_env` fields: each must name an environment variable.
pub const ENV_FIELDS: &[&str] = &[
    "access_key_id_env",
    "secret_access_key_env",
    "session_token_env",
    "service_account_path_env",
    "account_key_env",
    "sas_token_env",
];

/// `[A-Za-z_][A-Za-z0-9_]*`: what a shell accepts as a variable name.
pub fn is_env_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Invalid(#[from] FileError),
    #[error("{file}: {message}")]
    Io { file: String, message: String },
}

impl Remotes {
    pub fn get(&self, name: &str) -> Option<&Remote> {
        self.remotes.get(name)
    }

    pub fn names(&self) -> Vec<String> {
        self.remotes.keys().cloned().collect()
    }

    /// Every remote, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Remote)> {
        self.remotes.iter()
    }

    /// An error at `field` (a path like `remotes.b2.provider`) of the file this was read from.
    pub fn invalid(&self, field: &str, message: String) -> ConfigError {
        let (shown, text) = self
            .origin
            .clone()
            .unwrap_or_else(|| ("remotes".to_string(), String::new()));
        tomlfile::invalid(&shown, &text, field, message).into()
    }

    pub fn insert(&mut self, name: &str, r: Remote) {
        self.remotes.insert(name.to_string(), r);
    }

    /// `--config FILE`, else `MOVERCTL_CONFIG`, else `~/.config/moverctl/remotes.toml` if it exists.
    pub fn load(explicit: Option<&Path>) -> Result<Remotes, ConfigError> {
        let path = match explicit {
            Some(p) => Some(p.to_path_buf()),
            None => std::env::var_os("MOVERCTL_CONFIG")
                .map(PathBuf::from)
                .or_else(|| default_path().filter(|p| p.exists())),
        };
        let Some(path) = path else {
            return Ok(Remotes::default());
        };
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(&path).map_err(|e| ConfigError::Io {
            file: shown.clone(),
            message: format!("cannot read the remotes file: {e}"),
        })?;
        Self::parse(&shown, &text)
    }

    pub fn parse(shown: &str, text: &str) -> Result<Remotes, ConfigError> {
        // A secret written into the file is refused before anything else, and never echoed.
        refuse_secrets(shown, text)?;
        let mut remotes: Remotes = tomlfile::parse(shown, text)?;
        remotes.origin = Some((shown.to_string(), text.to_string()));
        for (name, r) in &remotes.remotes {
            check_env_names(shown, text, name)?;
            check_remote(shown, text, name, r)?;
        }
        Ok(remotes)
    }
}

/// A field that would hold a secret ([`SECRET_FIELDS`]) is refused, naming what to write
/// instead, never the value.
fn refuse_secrets(shown: &str, text: &str) -> Result<(), ConfigError> {
    if let Ok(raw) = toml::from_str::<toml::Table>(text)
        && let Some(toml::Value::Table(rs)) = raw.get("remotes")
    {
        for (name, r) in rs {
            if let toml::Value::Table(fields) = r {
                for (field, instead) in SECRET_FIELDS {
                    if fields.contains_key(*field) {
                        let path = format!("remotes.{name}.{field}");
                        return Err(tomlfile::invalid(
                            shown,
                            text,
                            &path,
                            format!(
                                "the remotes file must not hold secrets; remove it and write {instead} (or use an AWS profile)"
                            ),
                        )
                        .into());
                    }
                }
            }
        }
    }
    Ok(())
}

/// A secret pasted where a variable's name belongs ([`ENV_FIELDS`] of remote `name`) is refused
/// without echoing it.
fn check_env_names(shown: &str, text: &str, name: &str) -> Result<(), ConfigError> {
    if let Ok(raw) = toml::from_str::<toml::Table>(text)
        && let Some(toml::Value::Table(fields)) = raw.get("remotes").and_then(|rs| rs.get(name))
    {
        for field in ENV_FIELDS {
            if let Some(toml::Value::String(v)) = fields.get(*field)
                && !is_env_name(v)
            {
                return Err(tomlfile::invalid(
                    shown,
                    text,
                    &format!("remotes.{name}.{field}"),
                    format!(
                        "the value (withheld: it may be a secret) is not the name of an \
                         environment variable ([A-Za-z_][A-Za-z0-9_]*); write the variable's \
                         name, e.g. {field} = \"MY_VARIABLE\", and export the secret in it"
                    ),
                )
                .into());
            }
        }
    }
    Ok(())
}

/// One remote's settings: a known type, a credential kind its type takes, a local remote's
/// root, an endpoint without user info, and a name that cannot be read as a path.
fn check_remote(shown: &str, text: &str, name: &str, r: &Remote) -> Result<(), ConfigError> {
    let at = format!("remotes.{name}.type");
    if !["s3", "gcs", "azure", "local"].contains(&r.kind.as_str()) {
        return Err(tomlfile::invalid(
            shown,
            text,
            &at,
            format!("{:?} is not one of s3, gcs, azure, local", r.kind),
        )
        .into());
    }
    if let Some(c) = &r.credential {
        check_credential(shown, text, name, &r.kind, c)?;
    }
    if r.kind == "local" && r.root.is_none() {
        return Err(tomlfile::invalid(
            shown,
            text,
            &format!("remotes.{name}"),
            "a local remote needs root = \"/path\"".into(),
        )
        .into());
    }
    if r.endpoint
        .as_deref()
        .is_some_and(super::endpoint_has_userinfo)
    {
        // Never echoed: the error names the field, not its value.
        return Err(tomlfile::invalid(
            shown,
            text,
            &format!("remotes.{name}.endpoint"),
            format!(
                "remote {name:?}: the endpoint URL carries a user name or password (user:password@host); \
                 remove them: credentials belong in the *_env settings (access_key_id_env, \
                 secret_access_key_env, account_key_env, ...) or a profile, never in the URL"
            ),
        )
        .into());
    }
    if name.is_empty() || name.contains(['/', ':']) {
        return Err(tomlfile::invalid(
            shown,
            text,
            &format!("remotes.{name}"),
            "remote names may not contain '/' or ':'".into(),
        )
        .into());
    }
    Ok(())
}

/// A remote's `credential` is one its type (`kind`) takes.
fn check_credential(
    shown: &str,
    text: &str,
    name: &str,
    kind: &str,
    c: &str,
) -> Result<(), ConfigError> {
    let allowed: &[&str] = match kind {
        "azure" => &[
            "account_key",
            "sas_token",
            "client_secret",
            "workload_identity",
            "azure_cli",
            "managed_identity",
        ],
        "gcs" => &["service_account", "application_default", "metadata"],
        _ => &[],
    };
    if !allowed.contains(&c) {
        return Err(tomlfile::invalid(
            shown,
            text,
            &format!("remotes.{name}.credential"),
            if allowed.is_empty() {
                format!(
                    "a {kind} remote takes no credential kind (an S3 remote names a profile \
                     or its variables)"
                )
            } else {
                format!("{c:?} is not one of {}", allowed.join(", "))
            },
        )
        .into());
    }
    Ok(())
}

pub fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("moverctl").join("remotes.toml"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::location::Location;

    #[test]
    fn parses_a_remote_and_uses_it() {
        let r = Remotes::parse(
            "remotes.toml",
            "[remotes.garage]\ntype = \"s3\"\nendpoint = \"http://127.0.0.1:3900\"\nregion = \"garage\"\naccess_key_id_env = \"K\"\nsecret_access_key_env = \"S\"\n",
        )
        .unwrap();
        let loc = Location::parse("garage:bkt/some/prefix", &r).unwrap();
        assert_eq!(loc.shown(), "garage:bkt/some/prefix/");
    }

    #[test]
    fn secrets_are_refused_and_not_echoed() {
        let text = "[remotes.x]\ntype = \"s3\"\nsecret_access_key = \"wJalrXUtnFEMI\"\n";
        let e = Remotes::parse("r.toml", text).unwrap_err().to_string();
        assert!(
            e.contains("r.toml:3:") && e.contains("secret_access_key_env"),
            "{e}"
        );
        assert!(!e.contains("wJalrXUtnFEMI"), "{e}");
    }

    /// Fails on the main of 2026-12-01, which accepted the endpoint as written.
    #[test]
    fn an_endpoint_with_a_password_is_refused_and_not_echoed() {
        for endpoint in [
            "http://minio:s3cr3tpass@10.0.0.5:9000",
            "https://user@host.example.com/",
            "minio:s3cr3tpass@10.0.0.5:9000",
        ] {
            let text = format!("[remotes.lab]\ntype = \"s3\"\nendpoint = \"{endpoint}\"\n");
            let e = Remotes::parse("r.toml", &text).unwrap_err().to_string();
            assert!(
                e.contains("r.toml:3:") && e.contains("remotes.lab.endpoint") && e.contains("_env"),
                "{e}"
            );
            assert!(!e.contains("s3cr3tpass") && !e.contains("minio"), "{e}");
        }
        // An '@' in the path is not user info.
        let ok = "[remotes.lab]\ntype = \"s3\"\nendpoint = \"http://10.0.0.5:9000/a@b\"\n";
        assert!(Remotes::parse("r.toml", ok).is_ok());
    }

    /// Fails on the main of 2026-12-01, which printed the value back when the variable was unset.
    #[test]
    fn a_secret_in_an_env_field_is_refused_and_not_echoed() {
        for field in ENV_FIELDS {
            let text = format!("[remotes.x]\ntype = \"s3\"\n{field} = \"0011aabb/ccddeeff+99\"\n");
            let e = Remotes::parse("r.toml", &text).unwrap_err().to_string();
            assert!(
                e.contains("r.toml:3:") && e.contains(&format!("remotes.x.{field}")),
                "{e}"
            );
            assert!(!e.contains("0011aabb") && !e.contains("ccdd"), "{e}");
        }
        for ok in ["B2_KEY", "_x", "aws_secret_1"] {
            let text = format!("[remotes.x]\ntype = \"s3\"\naccess_key_id_env = \"{ok}\"\n");
            assert!(Remotes::parse("r.toml", &text).is_ok(), "{ok}");
        }
        for bad in ["", "1ABC", "A-B", "A B", "$AWS_KEY"] {
            assert!(!is_env_name(bad), "{bad}");
        }
    }

    #[test]
    fn a_credential_kind_must_be_one_the_store_has() {
        let ok =
            "[remotes.a]\ntype = \"azure\"\naccount = \"x\"\ncredential = \"workload_identity\"\n";
        assert!(Remotes::parse("r.toml", ok).is_ok());
        let ok = "[remotes.g]\ntype = \"gcs\"\ncredential = \"metadata\"\n";
        assert!(Remotes::parse("r.toml", ok).is_ok());
        let bad = "[remotes.a]\ntype = \"azure\"\ncredential = \"metadata\"\n";
        let e = Remotes::parse("r.toml", bad).unwrap_err().to_string();
        assert!(
            e.contains("remotes.a.credential") && e.contains("azure_cli"),
            "{e}"
        );
        let bad = "[remotes.s]\ntype = \"s3\"\ncredential = \"sso\"\n";
        let e = Remotes::parse("r.toml", bad).unwrap_err().to_string();
        assert!(e.contains("profile"), "{e}");
    }

    #[test]
    fn bad_type_is_located() {
        let e = Remotes::parse("r.toml", "[remotes.x]\ntype = \"ftp\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("r.toml:2:") && e.contains("remotes.x.type"),
            "{e}"
        );
    }
}
