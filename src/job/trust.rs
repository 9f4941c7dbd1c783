//! What a store is trusted with: capabilities refined by the catalog and a saved probe.
//!
//! Facts about an opened store that every command resolves the same way: which catalog provider
//! it is (for prices, part limits and the destination's classes), and its capabilities narrowed
//! by the catalog and by a saved probe of the location. The one place: a library caller gets the
//! same answers as the binary.

pub mod first_use;
pub mod remotes;

use super::JobError;
use crate::catalog::{Catalog, Provider, StorageClass, Tristate};
use crate::probe::{ProbeReport, Status};
use crate::store::caps::Capabilities;
use crate::store::config::Remotes;
use crate::store::location::Location;
use crate::store::{Kind, Store};

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
        // A provider whose catalog entry lists the integrity headers it accepts, without
        // `content-md5` among them, is not trusted to refuse a body that does not match one.
        let checks_md5 = catalog_checks_md5(&p.file.limits.checksum_headers);
        let source = format!("catalog {}", p.file.id);
        store.caps.refine(&source, md5, checks_md5, None);
    }
    let group = provider
        .map(|p| p.file.id.clone())
        .unwrap_or_else(|| store.kind.as_str().to_string());
    // The probe of this location or of the nearest folder above it (a bucket probed once covers
    // every prefix in it: a server's integrity behaviour does not change from prefix to prefix).
    let saved = crate::probe::saved::covering(&group, &store.shown()).map(|(_, r)| r);
    if let Some(r) = &saved {
        apply_probe(&mut store.caps, r);
    }
    grant_crc64(catalog, store, saved.as_ref());
}

/// Whether writes into `store` may be proven by CRC64 alone: what a probe of it measured wins,
/// else its catalog entry's `checksum_headers`.
pub(crate) fn grant_crc64(catalog: &Catalog, store: &mut Store, probed: Option<&ProbeReport>) {
    let provider = provider_of(catalog, store);
    let catalog_crc = provider.map(|p| {
        (
            format!("catalog {}", p.file.id),
            p.file
                .limits
                .checksum_headers
                .iter()
                .any(|h| h == "crc64nvme"),
        )
    });
    let trailer = provider.is_some_and(|p| {
        p.file
            .limits
            .checksum_headers
            .iter()
            .any(|h| h == "crc64nvme-trailer")
    });
    let probe_crc = probed.and_then(|r| {
        probe_crc64(r).map(|v| (format!("probe of {} ({})", r.location, r.timestamp), v))
    });
    let (cat_by, cat) = catalog_crc.unwrap_or_else(|| ("no catalog entry".into(), false));
    let kind = store.kind;
    store.caps.grant_crc64(
        kind,
        (&cat_by, cat),
        probe_crc.as_ref().map(|(by, v)| (by.as_str(), *v)),
    );
    // The remote's `trailing_checksum`, where set, overrides the catalog.
    let wanted = store.crc_writer.as_ref().and_then(|w| w.trailer);
    store.caps.trailer_crc64 = store.caps.checks_crc64nvme && wanted.unwrap_or(trailer);
}

/// Opens `src` and `dst` (see [`Store::open_pair`]) and narrows both stores' capabilities with
/// the catalog and their saved probes ([`refine_caps`]): the pair every run works on. Both are
/// checked before any request ([`super::preflight`]): no glob, endpoints reachable.
pub fn open_pair(
    catalog: &Catalog,
    src: &str,
    dst: &str,
    remotes: &Remotes,
) -> Result<(Store, Store), JobError> {
    open_pair_guarded(catalog, src, dst, remotes, true)
}

/// [`open_pair`], and unless `allow_empty`, a source that lists no object is refused before the
/// destination is opened (`copy`, `exec`: nothing is created there).
pub fn open_pair_guarded(
    catalog: &Catalog,
    src: &str,
    dst: &str,
    remotes: &Remotes,
    allow_empty: bool,
) -> Result<(Store, Store), JobError> {
    let (src, dst) = Store::open_pair_with(src, dst, remotes, |s| {
        super::preflight::source(s, allow_empty)
            .map_err(|e| e.naming_credentials(&credentials_hint(&[s])))
    })?;
    super::preflight::reachable(&dst)?;
    Ok(refined(catalog, (src, dst)))
}

/// Both stores of an opened pair with their capabilities refined ([`refine_caps`]).
pub fn refined(catalog: &Catalog, (mut src, mut dst): (Store, Store)) -> (Store, Store) {
    refine_caps(catalog, &mut src);
    refine_caps(catalog, &mut dst);
    (src, dst)
}

/// The destination a hint after a copy would name ([`crc_probe_hint`]): an S3-API store that
/// nothing says checks `x-amz-checksum-crc64nvme` (no catalog entry says so, no saved probe covers
/// the location), shown as given. Taken before the run (the run consumes the store).
pub fn unprobed_s3(catalog: &Catalog, dst: &Store) -> Option<String> {
    if dst.kind != Kind::S3 || dst.caps.checks_crc64nvme {
        return None;
    }
    let group = provider_of(catalog, dst)
        .map(|p| p.file.id.clone())
        .unwrap_or_else(|| dst.kind.as_str().to_string());
    let shown = dst.shown();
    crate::probe::saved::covering(&group, &shown)
        .is_none()
        .then_some(shown)
}

/// A one-line hint after a copy into an [`unprobed_s3`] destination whose writes were verified
/// by MD5: one `moverctl probe` would let later copies into it skip the MD5 (about 1.7 s of CPU
/// per GiB). Only where at least 1 GiB was written and `--verify` allows the checksum-only path.
pub fn crc_probe_hint(
    unprobed: Option<&str>,
    verified_by: &std::collections::BTreeMap<crate::transfer::Verification, u64>,
    written_bytes: u64,
    verify: crate::transfer::Verify,
) -> Option<String> {
    use crate::transfer::WriteCheck;
    let shown = unprobed?;
    if !verify.allows_checksum_only() || written_bytes < 1 << 30 {
        return None;
    }
    let by_md5: u64 = verified_by
        .iter()
        .filter(|(v, _)| {
            matches!(
                v.write,
                WriteCheck::DestMd5 | WriteCheck::DestContentMd5 | WriteCheck::DestMultipartEtag
            )
        })
        .map(|(_, n)| n)
        .sum();
    (by_md5 > 0).then(|| format!(
        "hint: {} written with an MD5 of every byte as {} proof (about 1.7 s of CPU per GiB); if {shown} checks x-amz-checksum-crc64nvme on arrival (S3 does since December 2024, so does Garage), `moverctl probe {shown}` once (or its bucket) lets later copies into it be verified by CRC64 alone",
        crate::words::were(by_md5, "object"),
        if by_md5 == 1 { "its" } else { "their" }
    ))
}

/// What a probe measured of `x-amz-checksum-crc64nvme`: a wrong value refused and the right one
/// stored (true), either not (false), or not measured (None).
pub(crate) fn probe_crc64(r: &ProbeReport) -> Option<bool> {
    let checked = status(r.status("checksum_crc64nvme_checked"))?;
    let stored = status(r.status("checksum_crc64nvme_stored"))?;
    Some(checked && stored)
}

/// What a catalog entry's `checksum_headers` says of `Content-MD5`: None when it lists nothing.
fn catalog_checks_md5(headers: &[String]) -> Option<bool> {
    (!headers.is_empty()).then(|| headers.iter().any(|h| h == "content-md5"))
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

/// Where each cloud store's credentials came from, for a message about refused credentials:
/// `credentials in use: garage:b/p from the environment variables K and S (…)`. Names only.
pub fn credentials_hint(stores: &[&Store]) -> String {
    let parts: Vec<String> = stores
        .iter()
        .filter(|s| !matches!(s.kind, Kind::Local | Kind::Memory))
        .map(|s| {
            let fix = match s.kind {
                Kind::S3 => s
                    .aws_credentials
                    .as_ref()
                    .map(|c| c.explain().fix.clone())
                    .unwrap_or_default(),
                Kind::Azure => crate::store::creds::azure_fix(&s.credentials).to_string(),
                Kind::Gcs if s.credentials.contains("application-default") => {
                    "run `gcloud auth application-default login`".to_string()
                }
                _ => String::new(),
            };
            if fix.is_empty() {
                format!("{} from {}", s.shown(), s.credentials)
            } else {
                format!("{} from {} (to fix: {fix})", s.shown(), s.credentials)
            }
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("credentials in use: {}", parts.join("; "))
    }
}

/// The region a store's remote names, if any (for pricing; an unknown region falls back to the
/// provider's default where it is used).
pub fn region_of(remotes: &Remotes, store: &Store) -> Option<String> {
    match &store.location {
        Location::S3 { remote, .. }
        | Location::Gcs { remote, .. }
        | Location::Azure { remote, .. } => remote
            .as_deref()
            .and_then(|r| remotes.get(r))
            .and_then(|r| r.region.clone()),
        _ => None,
    }
}

/// The name a store's API expects for a catalog class: the provider file's `wire_name` when it
/// has one, else S3/GCS the id in upper case with `_` (`GLACIER_IR`, `NEARLINE`), Azure access
/// tiers the id with a capital first letter (`Cool`).
pub fn wire_class(kind: Kind, class: &StorageClass) -> String {
    if let Some(w) = &class.wire_name {
        return w.clone();
    }
    let c = &class.id;
    match kind {
        Kind::Azure => {
            let mut ch = c.chars();
            ch.next()
                .map(|f| f.to_uppercase().chain(ch).collect())
                .unwrap_or_default()
        }
        _ => c.to_uppercase().replace('-', "_"),
    }
}

/// A class name as given (catalog id or API name) matched against a provider's classes.
pub fn find_class<'p>(p: &'p Provider, kind: Kind, given: &str) -> Option<&'p StorageClass> {
    p.file.classes.iter().find(|c| {
        c.id.eq_ignore_ascii_case(given) || wire_class(kind, c).eq_ignore_ascii_case(given)
    })
}

/// Sets the class a destination writes: `given` (a `--storage-class` flag) checked against the
/// catalog provider's classes, else the remote's `storage_class`. Returns the catalog class id
/// the writes are priced as, when the catalog knows it. A class for a store without classes, or
/// one its provider does not have, is a usage error listing the known ones.
pub fn resolve_storage_class(
    catalog: &Catalog,
    dst: &mut Store,
    given: Option<&str>,
) -> Result<Option<String>, JobError> {
    let provider = provider_of(catalog, dst);
    let Some(given) = given else {
        return Ok(match (provider, &dst.storage_class) {
            (Some(p), Some(sc)) => find_class(p, dst.kind, sc).map(|c| c.id.clone()),
            _ => None,
        });
    };
    if matches!(dst.kind, Kind::Local | Kind::Memory) {
        return Err(JobError::Usage(format!(
            "--storage-class {given}: {} is a {} store, which has no storage classes",
            dst.shown(),
            dst.kind.as_str()
        )));
    }
    let Some(p) = provider else {
        // No catalog entry to check against: sent as given.
        dst.storage_class = Some(given.to_string());
        return Ok(None);
    };
    let c = find_class(p, dst.kind, given).ok_or_else(|| {
        JobError::Usage(format!(
            "--storage-class {given}: {} has no such class; known: {}",
            p.file.id,
            p.file
                .classes
                .iter()
                .map(|c| format!("{} ({})", c.id, wire_class(dst.kind, c)))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    dst.storage_class = Some(wire_class(dst.kind, c));
    Ok(Some(c.id.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_verified_by_md5_into_an_unprobed_s3_store_hints_at_the_probe() {
        use crate::transfer::{ReadCheck, Verification, Verify, WriteCheck};
        let md5 = std::collections::BTreeMap::from([(
            Verification::new(ReadCheck::SourceSize, WriteCheck::DestMultipartEtag),
            4u64,
        )]);
        let crc = std::collections::BTreeMap::from([(
            Verification::new(ReadCheck::SourceSize, WriteCheck::DestChecksum),
            4u64,
        )]);
        let gib = 1u64 << 30;
        let h = crc_probe_hint(Some("g:bucket/x"), &md5, gib, Verify::Auto).expect("a hint");
        assert!(
            h.contains("4 objects") && h.contains("`moverctl probe g:bucket/x`"),
            "{h}"
        );
        // Not for a probed or CRC-checking destination, a small run, CRC-verified writes, or
        // --verify md5 (which asked for the MD5).
        assert_eq!(crc_probe_hint(None, &md5, gib, Verify::Auto), None);
        assert_eq!(
            crc_probe_hint(Some("g:b"), &md5, gib - 1, Verify::Auto),
            None
        );
        assert_eq!(crc_probe_hint(Some("g:b"), &crc, gib, Verify::Auto), None);
        assert_eq!(crc_probe_hint(Some("g:b"), &md5, gib, Verify::Md5), None);
    }

    #[test]
    fn catalog_classes_map_to_the_names_each_api_expects() {
        let catalog = Catalog::embedded().unwrap();
        let wire = |kind, provider: &str, class: &str| {
            let p = catalog.get(provider).unwrap();
            let c = p.file.classes.iter().find(|c| c.id == class).unwrap();
            wire_class(kind, c)
        };
        assert_eq!(wire(Kind::S3, "aws", "glacier-ir"), "GLACIER_IR");
        // These two come from the provider files' wire_name.
        assert_eq!(wire(Kind::S3, "aws", "glacier-flexible"), "GLACIER");
        assert_eq!(
            wire(Kind::S3, "cloudflare-r2", "infrequent-access"),
            "STANDARD_IA"
        );
        assert_eq!(wire(Kind::Azure, "azure", "cool"), "Cool");
        assert_eq!(wire(Kind::Gcs, "gcp", "nearline"), "NEARLINE");
    }

    // The trailer form is granted by the catalog (AWS lists `crc64nvme-trailer`), never where
    // the CRC64 itself is not checked, and the remote's `trailing_checksum` overrides the catalog
    // either way.
    #[test]
    fn a_trailing_crc64_is_granted_by_the_catalog_or_the_remote() {
        let catalog = Catalog::embedded().unwrap();
        let remote = |provider: &str, trailing: &str| {
            // Variables that exist everywhere stand in for the key's (only their names are read
            // here; nothing is sent).
            let toml = format!(
                "[remotes.r]\ntype = \"s3\"\nprovider = \"{provider}\"\nendpoint = \"http://127.0.0.1:9\"\n\
                 region = \"x\"\naccess_key_id_env = \"PATH\"\nsecret_access_key_env = \"PATH\"\n{trailing}"
            );
            let r = crate::store::config::Remotes::parse("r.toml", &toml).unwrap();
            let mut st = Store::open("r:bucket/p", &r).unwrap();
            grant_crc64(&catalog, &mut st, None);
            (st.caps.checks_crc64nvme, st.caps.trailer_crc64)
        };
        assert_eq!(remote("aws", ""), (true, true));
        assert_eq!(remote("aws", "trailing_checksum = false"), (true, false));
        assert_eq!(remote("onprem", ""), (false, false));
        // Not without the CRC64 path itself (onprem's catalog does not grant it; no probe here).
        assert_eq!(remote("onprem", "trailing_checksum = true"), (false, false));
        assert_eq!(remote("cloudflare-r2", ""), (true, false));
    }

    #[test]
    fn a_catalog_without_content_md5_in_its_headers_takes_the_check_away() {
        let catalog = Catalog::embedded().unwrap();
        let of =
            |p: &str| catalog_checks_md5(&catalog.get(p).unwrap().file.limits.checksum_headers);
        assert_eq!(of("cloudflare-r2"), Some(false));
        assert_eq!(of("aws"), Some(true));
        assert_eq!(of("onprem"), Some(true));
        assert_eq!(catalog_checks_md5(&[]), None);
        let mut caps = crate::store::caps::Capabilities::for_kind(Kind::S3);
        caps.refine("catalog cloudflare-r2", None, of("cloudflare-r2"), None);
        assert!(!caps.checks_content_md5);
    }
}
