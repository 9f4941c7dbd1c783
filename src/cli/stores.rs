//! Facts about an opened store that every command resolves the same way: which catalog provider
//! it is (for prices, part limits and the destination's classes), and its capabilities narrowed
//! by the catalog and by a saved probe of the location.

use crate::catalog::{Catalog, Provider, Tristate};
use crate::probe::{ProbeReport, Status};
use crate::store::Store;
use crate::store::caps::Capabilities;
use crate::store::location::Location;

/// The catalog provider of a store: its remote's `provider`, else what the URL implies when no
/// custom endpoint is involved (`s3://` is AWS, `gs://` Google Cloud, `az://` Azure), else none.
/// `copy`, `exec`, `sync` and the probe all ask this one function.
pub fn provider_of<'c>(catalog: &'c Catalog, store: &Store) -> Option<&'c Provider> {
    if let Some(p) = &store.provider {
        return catalog.get(p).ok();
    }
    let custom = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    let id = match &store.location {
        Location::S3 { remote: None, .. }
            if !custom("AWS_ENDPOINT_URL") && !custom("AWS_ENDPOINT_URL_S3") =>
        {
            "aws"
        }
        Location::Gcs { remote: None, .. } => "gcp",
        Location::Azure { remote: None, .. } => "azure",
        _ => return None,
    };
    catalog.get(id).ok()
}

fn status(s: Status) -> Option<bool> {
    match s {
        Status::Yes => Some(true),
        Status::No => Some(false),
        Status::Unknown | Status::NotTested => None,
    }
}

/// Narrows `store.caps` with the catalog's entry for its provider and the saved probe of its
/// location (both optional): what they say a store does not do is not relied on.
pub fn refine_caps(catalog: &Catalog, store: &mut Store) {
    let provider = provider_of(catalog, store);
    if let Some(p) = provider {
        let md5 = match p.file.limits.single_part_etag_is_md5 {
            Tristate::Yes => Some(true),
            Tristate::No => Some(false),
            Tristate::Unknown => None,
        };
        let source = format!("catalog {}", p.file.id);
        store.caps.refine(&source, md5, None, None);
    }
    let group = provider
        .map(|p| p.file.id.clone())
        .unwrap_or_else(|| store.kind.as_str().to_string());
    if let Some(r) = crate::probe::saved::for_location(&group, &store.shown()) {
        apply_probe(&mut store.caps, &r);
    }
}

/// Narrows capabilities with what a probe measured: an ETag that is not the body's MD5, a wrong
/// `Content-MD5` that was accepted, metadata that was dropped.
pub fn apply_probe(caps: &mut Capabilities, r: &ProbeReport) {
    let source = format!("probe of {} ({})", r.location, r.timestamp);
    caps.refine(
        &source,
        status(r.status("single_part_etag_md5")),
        status(r.status("content_md5_checked")),
        status(r.status("user_metadata")),
    );
}
