//! The remotes file checked against the catalog, before any command uses it: a `provider` the
//! catalog does not know (a typo such as "wasbi" would price the run at $0 and switch the
//! minimum-duration guard off) and a `storage_class` that provider does not have are refused,
//! naming the known ones and the line of the file.

use super::{find_class, wire_class};
use crate::catalog::Catalog;
use crate::job::JobError;
use crate::store::Kind;
use crate::store::config::Remotes;

/// Refuses a remote whose `provider` the catalog does not know or whose `storage_class` that
/// provider does not have.
pub fn check(catalog: &Catalog, remotes: &Remotes) -> Result<(), JobError> {
    for (name, r) in remotes.iter() {
        let Some(id) = &r.provider else {
            continue;
        };
        let Ok(p) = catalog.get(id) else {
            return Err(remotes
                .invalid(
                    &format!("remotes.{name}.provider"),
                    format!(
                        "unknown provider {id:?}; known providers: {} (`moverctl providers`; \
                         add your own with --providers DIR)",
                        catalog.ids().join(", ")
                    ),
                )
                .into());
        };
        let kind = match r.kind.as_str() {
            "gcs" => Kind::Gcs,
            "azure" => Kind::Azure,
            "local" => Kind::Local,
            _ => Kind::S3,
        };
        if let Some(sc) = &r.storage_class
            && find_class(p, kind, sc).is_none()
        {
            let list: Vec<String> = p
                .file
                .classes
                .iter()
                .map(|c| format!("{} ({})", c.id, wire_class(kind, c)))
                .collect();
            return Err(remotes
                .invalid(
                    &format!("remotes.{name}.storage_class"),
                    format!(
                        "provider {id:?} has no storage class {sc:?}; its classes: {}",
                        list.join(", ")
                    ),
                )
                .into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Remotes {
        Remotes::parse("r.toml", text).unwrap()
    }

    /// Fails on the main of 2026-12-01, which accepted both silently.
    #[test]
    fn unknown_providers_and_classes_are_refused_with_the_known_ones() {
        let catalog = Catalog::embedded().unwrap();
        let e = check(
            &catalog,
            &parse("[remotes.w]\ntype = \"s3\"\nprovider = \"wasbi\"\n"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("r.toml:3:") && e.contains("\"wasbi\"") && e.contains(", wasabi"),
            "{e}"
        );
        let e = check(
            &catalog,
            &parse(
                "[remotes.a]\ntype = \"s3\"\nprovider = \"aws\"\nstorage_class = \"GLACIERR\"\n",
            ),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("r.toml:4:") && e.contains("GLACIERR") && e.contains("GLACIER_IR"),
            "{e}"
        );
        for ok in [
            "[remotes.a]\ntype = \"s3\"\nprovider = \"aws\"\nstorage_class = \"GLACIER_IR\"\n",
            "[remotes.a]\ntype = \"s3\"\nprovider = \"aws\"\nstorage_class = \"glacier-ir\"\n",
            "[remotes.z]\ntype = \"azure\"\nprovider = \"azure\"\nstorage_class = \"Cool\"\n",
            "[remotes.n]\ntype = \"s3\"\nstorage_class = \"ANYTHING\"\n",
        ] {
            check(&catalog, &parse(ok)).unwrap();
        }
    }
}
