//! `--storage-class` on `copy` and `exec` (sync has its own, with the same rules): the class
//! written at the destination, checked against the destination provider's classes when the
//! catalog knows the provider, and sent in the store's own spelling.

use super::CliError;
use super::sync_cmd::wire_class;
use crate::catalog::Catalog;
use crate::store::{Kind, Store};

/// Sets `dst.storage_class` from `given` (a catalog class id or the store's own name).
pub fn apply(catalog: &Catalog, dst: &mut Store, given: Option<&str>) -> Result<(), CliError> {
    let Some(given) = given else { return Ok(()) };
    let usage = |m: String| CliError::Usage(format!("--storage-class {given}: {m}"));
    if matches!(dst.kind, Kind::Local | Kind::Memory) {
        return Err(usage(format!(
            "{} is a {} store, which has no storage classes",
            dst.shown(),
            dst.kind.as_str()
        )));
    }
    let Some(p) = super::stores::provider_of(catalog, dst) else {
        // No catalog entry to check against: sent as given.
        dst.storage_class = Some(given.to_string());
        return Ok(());
    };
    let kind = dst.kind;
    let c = p
        .file
        .classes
        .iter()
        .find(|c| {
            c.id.eq_ignore_ascii_case(given) || wire_class(kind, c).eq_ignore_ascii_case(given)
        })
        .ok_or_else(|| {
            usage(format!(
                "{} has no such class; known: {}",
                p.file.id,
                p.file
                    .classes
                    .iter()
                    .map(|c| format!("{} ({})", c.id, wire_class(kind, c)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
    dst.storage_class = Some(wire_class(kind, c));
    Ok(())
}
