//! Azure credentials: an account key, a SAS token, the emulator, or a Microsoft Entra ID
//! identity (workload identity, service principal, the Azure CLI, managed identity).

use super::common::{MissingCredentials, env, need_env};
use crate::store::config::Remote;

pub enum AzureCreds {
    Key(String),
    Sas(String),
    Emulator,
    Anonymous,
    /// A Microsoft Entra ID identity, obtained and renewed by object_store (`credential_type`:
    /// `workload_identity`, `client_secret`, `azure_cli`, `managed_identity`), configured from
    /// the AZURE_* variables.
    Entra(&'static str),
}

/// Whether this machine is an Azure VM (its DMI chassis asset tag), where managed identity is
/// served; `IDENTITY_ENDPOINT` / `MSI_ENDPOINT` (App Service, Arc) also say so.
fn on_azure() -> bool {
    env("IDENTITY_ENDPOINT").is_some()
        || env("MSI_ENDPOINT").is_some()
        || std::fs::read_to_string("/sys/class/dmi/id/chassis_asset_tag")
            .is_ok_and(|t| t.trim() == "7783-7084-3265-9085-8269-3286-77")
}

/// The AZURE_* variables object_store reads for Entra identities, as its config keys.
pub const AZURE_ENTRA_VARS: &[(&str, &str)] = &[
    ("AZURE_CLIENT_ID", "azure_client_id"),
    ("AZURE_TENANT_ID", "azure_tenant_id"),
    ("AZURE_CLIENT_SECRET", "azure_client_secret"),
    ("AZURE_FEDERATED_TOKEN_FILE", "azure_federated_token_file"),
    ("AZURE_AUTHORITY_HOST", "azure_authority_host"),
    ("IDENTITY_ENDPOINT", "azure_msi_endpoint"),
    ("MSI_ENDPOINT", "azure_msi_endpoint"),
    ("AZURE_OBJECT_ID", "azure_object_id"),
    ("AZURE_MSI_RESOURCE_ID", "azure_msi_resource_id"),
];

fn entra(kind: &'static str, why: &str) -> (AzureCreds, String) {
    let from = match kind {
        "workload_identity" => {
            "workload identity (AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE)"
        }
        "client_secret" => {
            "a service principal (AZURE_CLIENT_ID, AZURE_CLIENT_SECRET, AZURE_TENANT_ID)"
        }
        "azure_cli" => "the Azure CLI's sign-in (az login)",
        _ => "the managed identity (Azure instance metadata)",
    };
    (AzureCreds::Entra(kind), format!("{from}{why}"))
}

/// What to run when an Azure credential is refused or cannot be had.
pub fn azure_fix(credentials: &str) -> &'static str {
    if credentials.contains("az login") {
        "run `az login` (and `az account set --subscription ...`), then run the command again"
    } else if credentials.contains("workload identity") {
        "check the federated token file and the identity's federated credential"
    } else if credentials.contains("service principal") {
        "check or renew the service principal's secret"
    } else if credentials.contains("managed identity") {
        "check that the managed identity is assigned and has a Storage Blob Data role"
    } else {
        "check the account key or SAS token (a SAS token has an expiry: make a new one)"
    }
}

/// Returns the account, the credential and where it was named (never a value). Order as
/// object_store's builder chooses ("auto"): account key, workload identity, client secret, SAS,
/// the Azure CLI (`AZURE_USE_AZURE_CLI=true`), managed identity (on Azure); a remote's
/// `credential` picks one.
pub fn azure(
    location: &str,
    remote: Option<&Remote>,
) -> Result<(Option<String>, AzureCreds, String), MissingCredentials> {
    let account = remote
        .and_then(|r| r.account.clone())
        .or_else(|| env("AZURE_STORAGE_ACCOUNT_NAME"))
        .or_else(|| env("AZURE_STORAGE_ACCOUNT"));
    if let Some(r) = remote
        && let Some((c, f)) = named_by_remote(location, r)?
    {
        return Ok((account, c, f));
    }
    if account.is_none() {
        return Err(MissingCredentials {
            location: location.into(),
            hint: "set AZURE_STORAGE_ACCOUNT_NAME (or the remote's account)".into(),
        });
    }
    let want = remote.and_then(|r| r.credential.clone());
    if let Some((c, f)) = picked_identity(location, want.as_deref())? {
        return Ok((account, c, f));
    }
    match from_environment(want.as_deref()) {
        Some((c, f)) => Ok((account, c, f)),
        None => Err(MissingCredentials {
            location: location.into(),
            hint: "set AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_TOKEN for the account; or sign in with \
                   `az login` and set AZURE_USE_AZURE_CLI=true (or credential = \"azure_cli\" in a remote); or set \
                   AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET (a service principal) or \
                   AZURE_FEDERATED_TOKEN_FILE (workload identity); on an Azure VM the managed identity is used; \
                   or name the variables in a remote (account_key_env, sas_token_env)"
                .into(),
        }),
    }
}

/// What a remote's own settings name, before anything else: anonymous access, the emulator's
/// key, or the variables of an account key or SAS token (which must then be set).
fn named_by_remote(
    location: &str,
    r: &Remote,
) -> Result<Option<(AzureCreds, String)>, MissingCredentials> {
    if r.anonymous {
        return Ok(Some((
            AzureCreds::Anonymous,
            "none (the remote says anonymous = true)".into(),
        )));
    }
    if r.use_emulator && r.account_key_env.is_none() && r.sas_token_env.is_none() {
        return Ok(Some((
            AzureCreds::Emulator,
            "the storage emulator's well-known key (the remote's use_emulator)".into(),
        )));
    }
    if let Some(k) = &r.account_key_env {
        return Ok(Some((
            AzureCreds::Key(need_env(location, "account_key_env", k)?),
            format!("the environment variable {k} (the remote's account_key_env)"),
        )));
    }
    if let Some(s) = &r.sas_token_env {
        return Ok(Some((
            AzureCreds::Sas(need_env(location, "sas_token_env", s)?),
            format!("the environment variable {s} (the remote's sas_token_env)"),
        )));
    }
    Ok(None)
}

/// The Entra identity a remote's `credential` picks, refused when a variable it needs is not
/// set; `None` for any other choice (or none).
fn picked_identity(
    location: &str,
    want: Option<&str>,
) -> Result<Option<(AzureCreds, String)>, MissingCredentials> {
    let picked = " (the remote's credential)";
    let need = |vars: &[&str], kind: &str| -> Result<(), MissingCredentials> {
        match vars.iter().find(|v| env(v).is_none()) {
            Some(v) => Err(MissingCredentials {
                location: location.into(),
                hint: format!("the remote says credential = {kind:?}, which needs {v}, not set"),
            }),
            None => Ok(()),
        }
    };
    match want {
        Some("workload_identity") => {
            need(
                &[
                    "AZURE_CLIENT_ID",
                    "AZURE_TENANT_ID",
                    "AZURE_FEDERATED_TOKEN_FILE",
                ],
                "workload_identity",
            )?;
            Ok(Some(entra("workload_identity", picked)))
        }
        Some("client_secret") => {
            need(
                &["AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID"],
                "client_secret",
            )?;
            Ok(Some(entra("client_secret", picked)))
        }
        Some(k @ ("azure_cli" | "managed_identity")) => Ok(Some(entra(
            if k == "azure_cli" {
                "azure_cli"
            } else {
                "managed_identity"
            },
            picked,
        ))),
        _ => Ok(None),
    }
}

/// The environment's credential in object_store's order, when the remote picks none (`want`
/// is `None`), or the account key or SAS token it picks.
fn from_environment(want: Option<&str>) -> Option<(AzureCreds, String)> {
    let auto = want.is_none();
    if auto || want == Some("account_key") {
        for v in ["AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_ACCESS_KEY"] {
            if let Some(k) = env(v) {
                return Some((AzureCreds::Key(k), format!("the environment variable {v}")));
            }
        }
    }
    if auto {
        if [
            "AZURE_CLIENT_ID",
            "AZURE_TENANT_ID",
            "AZURE_FEDERATED_TOKEN_FILE",
        ]
        .iter()
        .all(|v| env(v).is_some())
        {
            return Some(entra("workload_identity", ""));
        }
        if ["AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID"]
            .iter()
            .all(|v| env(v).is_some())
        {
            return Some(entra("client_secret", ""));
        }
    }
    if auto || want == Some("sas_token") {
        for v in ["AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_SAS_KEY"] {
            if let Some(t) = env(v) {
                return Some((AzureCreds::Sas(t), format!("the environment variable {v}")));
            }
        }
    }
    if auto {
        if env("AZURE_USE_AZURE_CLI").is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1") {
            return Some(entra("azure_cli", " (AZURE_USE_AZURE_CLI)"));
        }
        if on_azure() {
            return Some(entra("managed_identity", ""));
        }
    }
    None
}
