//! GCS credentials: a service-account file, application-default credentials, or the metadata
//! server, in object_store's order.

use super::common::{MissingCredentials, env, need_env};
use crate::store::config::Remote;
use std::path::PathBuf;

/// GCS credentials, as object_store's builder takes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GcsCreds {
    /// A service-account key file (`with_service_account_path`).
    ServiceAccount(PathBuf),
    /// An application-default credentials file: `service_account` or `authorized_user` (what
    /// `gcloud auth application-default login` writes).
    ApplicationDefault(PathBuf),
    /// The metadata server (GCE, GKE workload identity).
    Metadata,
    Anonymous,
}

/// Whether this machine is a Google Compute Engine VM (GKE nodes are): the DMI product name,
/// as Google's own auth libraries check it. `GCE_METADATA_HOST` also says so.
fn on_gce() -> bool {
    env("GCE_METADATA_HOST").is_some()
        || std::fs::read_to_string("/sys/class/dmi/id/product_name")
            .is_ok_and(|p| p.trim_start().starts_with("Google"))
}

/// The `type` of a Google credentials file (never anything else from it).
fn google_file_type(path: &std::path::Path) -> Option<String> {
    google_file_field(path, "type")
}

/// One non-secret string field of a Google credentials file (`type`, `project_id`, and
/// object_store's `gcs_base_url`, where an emulator is), when it is there and not empty.
pub fn google_file_field(path: &std::path::Path, field: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get(field)?
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

impl GcsCreds {
    /// The credentials file, when these come from one.
    pub fn file(&self) -> Option<&std::path::Path> {
        match self {
            GcsCreds::ServiceAccount(p) | GcsCreds::ApplicationDefault(p) => Some(p),
            _ => None,
        }
    }
}

const GCS_FIX: &str = "run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a \
     service-account key file, or name a variable in the remote's service_account_path_env \
     (on GCE or GKE the metadata server is used; elsewhere write credential = \"metadata\" in the remote to force it)";

/// A credentials file object_store cannot use (external_account federation, impersonation):
/// refused with what to do instead.
fn gcs_file(
    location: &str,
    path: PathBuf,
    named: String,
) -> Result<(GcsCreds, String), MissingCredentials> {
    match google_file_type(&path).as_deref() {
        Some("service_account") | Some("authorized_user") | None => {
            Ok((GcsCreds::ApplicationDefault(path), named))
        }
        Some(other) => Err(MissingCredentials {
            location: location.into(),
            hint: format!(
                "{named} is a credentials file of type {other:?}, which object_store (the library \
                 moverctl uses) cannot use (it takes service_account and authorized_user files and \
                 the metadata server); for workload identity federation run moverctl where the \
                 metadata server serves the identity (GKE), or get a short-lived token file with \
                 `gcloud auth application-default login` or a service-account key"
            ),
        }),
    }
}

/// GCS, in object_store's order: a service-account file from the remote,
/// `GOOGLE_SERVICE_ACCOUNT` / `GOOGLE_SERVICE_ACCOUNT_PATH`, `GOOGLE_APPLICATION_CREDENTIALS`,
/// gcloud's application-default file, else the metadata server on GCE / GKE. A remote's
/// `credential` (`service_account`, `application_default`, `metadata`) picks one.
/// Returns the credentials and where they were named, never a value.
pub fn gcs(
    location: &str,
    remote: Option<&Remote>,
) -> Result<(GcsCreds, String), MissingCredentials> {
    let adc = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".config/gcloud/application_default_credentials.json"));
    let want = remote.and_then(|r| r.credential.clone());
    if let Some(r) = remote {
        if r.anonymous {
            return Ok((
                GcsCreds::Anonymous,
                "none (the remote says anonymous = true)".into(),
            ));
        }
        if let Some(v) = &r.service_account_path_env {
            return need_env(location, "service_account_path_env", v).map(|p| {
                (
                    GcsCreds::ServiceAccount(PathBuf::from(p)),
                    format!(
                        "the service-account file named by {v} (the remote's service_account_path_env)"
                    ),
                )
            });
        }
    }
    match want.as_deref() {
        Some("metadata") => {
            return Ok((
                GcsCreds::Metadata,
                "the metadata server (the remote's credential = \"metadata\")".into(),
            ));
        }
        Some("application_default") => {
            let from_env = env("GOOGLE_APPLICATION_CREDENTIALS");
            let path = from_env.clone().map(PathBuf::from).or(adc.clone());
            return match path.filter(|p| p.exists()) {
                Some(p) => {
                    let named = match from_env {
                        Some(_) => "the file named by GOOGLE_APPLICATION_CREDENTIALS".to_string(),
                        None => format!("gcloud's application-default credentials ({})", p.display()),
                    };
                    gcs_file(location, p, named)
                }
                None => Err(MissingCredentials {
                    location: location.into(),
                    hint: "the remote says credential = \"application_default\" but there are none: run \
                           `gcloud auth application-default login` (or set GOOGLE_APPLICATION_CREDENTIALS)"
                        .into(),
                }),
            };
        }
        _ => {}
    }
    for v in ["GOOGLE_SERVICE_ACCOUNT", "GOOGLE_SERVICE_ACCOUNT_PATH"] {
        if let Some(p) = env(v) {
            return Ok((
                GcsCreds::ServiceAccount(PathBuf::from(p)),
                format!("the service-account file named by {v}"),
            ));
        }
    }
    if want.as_deref() == Some("service_account") {
        return Err(MissingCredentials {
            location: location.into(),
            hint:
                "the remote says credential = \"service_account\": name the key file's variable in \
                   service_account_path_env, or set GOOGLE_SERVICE_ACCOUNT_PATH"
                    .into(),
        });
    }
    if let Some(p) = env("GOOGLE_APPLICATION_CREDENTIALS") {
        return gcs_file(
            location,
            PathBuf::from(p),
            "the file named by GOOGLE_APPLICATION_CREDENTIALS".into(),
        );
    }
    if let Some(a) = adc.filter(|a| a.exists()) {
        let from = format!("gcloud's application-default credentials ({})", a.display());
        return gcs_file(location, a, from);
    }
    if on_gce() {
        return Ok((
            GcsCreds::Metadata,
            "the metadata server (GCE / GKE workload identity)".into(),
        ));
    }
    Err(MissingCredentials {
        location: location.into(),
        hint: GCS_FIX.into(),
    })
}
