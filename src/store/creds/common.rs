//! What every provider's credentials share: the error naming what would satisfy a location,
//! and reading the environment (an empty variable counts as unset).

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("no credentials for {location}: {hint}")]
pub struct MissingCredentials {
    pub location: String,
    pub hint: String,
}

pub(super) fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

pub(super) fn need_env(
    location: &str,
    field: &str,
    name: &str,
) -> Result<String, MissingCredentials> {
    env(name).ok_or_else(|| MissingCredentials {
        location: location.to_string(),
        hint: format!(
            "the remote's {field} names the environment variable {name}, which is not set"
        ),
    })
}
