//! Loading provider files: the embedded set, then `--providers DIR` / `MOVERCTL_PROVIDERS` files that
//! replace (same id) or extend it. Every error names the file, line, column and field.

use super::schema::*;
use crate::money::Dec;
use crate::tomlfile::{self, FileError};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded_providers.rs"));
}

/// One loaded provider: the parsed file, prices already converted to USD.
#[derive(Debug, Clone)]
pub struct Provider {
    pub file: ProviderFile,
    /// `embedded providers/aws.toml` or the path it was read from.
    pub origin: String,
    /// SHA-256 of the file's text.
    pub sha256: String,
}

#[derive(Debug, Clone)]
pub struct Catalog {
    providers: BTreeMap<String, Provider>,
    /// Other names of a provider (`b2` → `backblaze-b2`), from each file's `aliases`.
    aliases: BTreeMap<String, String>,
}

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error(transparent)]
    Invalid(#[from] FileError),
    #[error("{file}: {message}")]
    Io { file: String, message: String },
    /// `hint` is `" (did you mean X?)"` or empty, here and below.
    #[error("unknown provider {name:?}{hint}; known providers: {known}")]
    UnknownProvider {
        name: String,
        hint: String,
        known: String,
    },
    #[error(
        "unknown fast tier {name:?}{hint}; known fast tiers: {known} (or `onprem` with --fast-tier-price and --fast-tier-throughput)"
    )]
    UnknownFastTier {
        name: String,
        hint: String,
        known: String,
    },
    #[error("provider {provider:?} has no region {region:?}{hint}; its regions: {known}")]
    UnknownRegion {
        provider: String,
        region: String,
        hint: String,
        known: String,
    },
    #[error("provider {provider:?} has no storage class {class:?}{hint}; its classes: {known}")]
    UnknownClass {
        provider: String,
        class: String,
        hint: String,
        known: String,
    },
}

impl Catalog {
    /// The providers built into the binary.
    pub fn embedded() -> Result<Catalog, CatalogError> {
        Self::load(None)
    }

    /// Embedded providers, then every `*.toml` in `dir` (a file with an existing id replaces it).
    pub fn load(dir: Option<&Path>) -> Result<Catalog, CatalogError> {
        let mut providers = BTreeMap::new();
        for (name, text) in embedded::EMBEDDED {
            let p = parse_provider(&format!("providers/{name}"), name, text, "embedded")?;
            providers.insert(p.file.id.clone(), p);
        }
        if let Some(dir) = dir {
            let entries = std::fs::read_dir(dir).map_err(|e| CatalogError::Io {
                file: dir.display().to_string(),
                message: format!("cannot read the providers folder: {e}"),
            })?;
            let mut paths: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect();
            paths.sort();
            for path in paths {
                let text = std::fs::read_to_string(&path).map_err(|e| CatalogError::Io {
                    file: path.display().to_string(),
                    message: e.to_string(),
                })?;
                let shown = path.display().to_string();
                let fname = path.file_name().unwrap().to_string_lossy().to_string();
                let p = parse_provider(&shown, &fname, &text, &shown)?;
                providers.insert(p.file.id.clone(), p);
            }
        }
        let aliases = aliases_of(&providers)?;
        Ok(Catalog { providers, aliases })
    }

    /// The provider `id`, or the one `id` is an alias of (`b2`); an unknown name lists the
    /// known ones and the nearest.
    pub fn get(&self, id: &str) -> Result<&Provider, CatalogError> {
        let id = id.trim();
        let found = (self.aliases.get(id)).map_or(id, String::as_str);
        self.providers
            .get(found)
            .ok_or_else(|| CatalogError::UnknownProvider {
                name: id.to_string(),
                hint: super::suggest::hint(
                    id,
                    (self.providers.keys().chain(self.aliases.keys())).map(String::as_str),
                ),
                known: self.ids().join(", "),
            })
    }

    pub fn ids(&self) -> Vec<String> {
        self.providers.keys().cloned().collect()
    }

    pub fn providers(&self) -> impl Iterator<Item = &Provider> {
        self.providers.values()
    }

    /// A digest over the providers a plan used (id and file hash, sorted), recorded in plan files so a
    /// later run can tell whether it is priced with the same data.
    pub fn digest_of<'a>(&self, ids: impl IntoIterator<Item = &'a str>) -> String {
        let set: BTreeSet<&str> = ids.into_iter().collect();
        let mut h = Sha256::new();
        for id in set {
            if let Some(p) = self.providers.get(id) {
                h.update(id.as_bytes());
                h.update(b"\0");
                h.update(p.sha256.as_bytes());
                h.update(b"\n");
            }
        }
        format!("sha256:{}", hex(&h.finalize()))
    }
}

/// Every alias to its provider's id; an alias that is also an id, or names two providers, is an
/// error naming both files.
fn aliases_of(
    providers: &BTreeMap<String, Provider>,
) -> Result<BTreeMap<String, String>, CatalogError> {
    let mut aliases: BTreeMap<String, String> = BTreeMap::new();
    for p in providers.values() {
        for a in &p.file.aliases {
            let clash = match (providers.get(a), aliases.get(a)) {
                (Some(other), _) => Some(other.origin.clone()),
                (None, Some(id)) => Some(providers[id].origin.clone()),
                (None, None) => None,
            };
            if let Some(other) = clash {
                return Err(CatalogError::Io {
                    file: p.origin.clone(),
                    message: format!(
                        "alias {a:?} is already a name of {other}; give each alias to one provider"
                    ),
                });
            }
            aliases.insert(a.clone(), p.file.id.clone());
        }
    }
    Ok(aliases)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parse and validate one provider file. `shown` names it in errors.
pub fn parse_provider(
    shown: &str,
    file_name: &str,
    text: &str,
    origin: &str,
) -> Result<Provider, CatalogError> {
    let mut file: ProviderFile = tomlfile::parse(shown, text)?;
    if let Err((path, message)) = validate(&file, file_name) {
        return Err(tomlfile::invalid(shown, text, &path, message).into());
    }
    if let Some(c) = &file.currency {
        let rate = c.usd_per_unit.0;
        convert_prices(&mut file, rate);
    }
    Ok(Provider {
        file,
        origin: origin.to_string(),
        sha256: hex(&Sha256::digest(text.as_bytes())),
    })
}

type Invalid = (String, String);

const CHECKSUM_HEADERS: &[&str] = &[
    "content-md5",
    "crc32",
    "crc32c",
    "crc64nvme",
    "crc64nvme-trailer",
    "sha1",
    "sha256",
];

/// The refusal of the field at `p`, saying `m`.
fn err<T>(p: &str, m: String) -> Result<T, Invalid> {
    Err((p.to_string(), m))
}

fn validate(f: &ProviderFile, file_name: &str) -> Result<(), Invalid> {
    if f.schema != 1 {
        return err(
            "schema",
            format!(
                "schema {} is not supported (this moverctl reads schema 1)",
                f.schema
            ),
        );
    }
    for (i, a) in f.aliases.iter().enumerate() {
        let ok = (a.chars()).all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if a.is_empty() || !ok || *a == f.id {
            return err(
                &format!("aliases[{i}]"),
                format!("alias {a:?}: give another short name of lowercase letters, digits and -"),
            );
        }
    }
    let stem = file_name.trim_end_matches(".toml");
    if f.id != stem {
        return err(
            "id",
            format!("id {:?} must match the file name {file_name:?}", f.id),
        );
    }
    if f.id.is_empty()
        || !f
            .id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return err(
            "id",
            format!("id {:?} must be lower-case letters, digits and '-'", f.id),
        );
    }
    if f.billing.bytes_per_gb == 0 {
        return err("billing.bytes_per_gb", "must be above zero".into());
    }
    if let Some(c) = &f.currency
        && c.usd_per_unit.0.is_zero()
    {
        return err("currency.usd_per_unit", "must be above zero".into());
    }
    check_date("billing.as_of", &f.billing.as_of)?;
    check_egress("egress", &f.egress)?;
    check_date("transfer.as_of", &f.transfer.as_of)?;
    let class_ids = check_classes(&f.classes)?;
    if !class_ids.contains(f.default_class.as_str()) {
        return err(
            "default_class",
            format!(
                "{:?} is not one of the classes: {}",
                f.default_class,
                join(&class_ids)
            ),
        );
    }
    let region_ids = check_regions(&f.regions, &class_ids)?;
    if !region_ids.contains(f.default_region.as_str()) {
        return err(
            "default_region",
            format!(
                "{:?} is not one of the regions: {}",
                f.default_region,
                join(&region_ids)
            ),
        );
    }
    check_limits(&f.limits)?;
    if let Some(w) = &f.exit_waiver {
        check_date("exit_waiver.as_of", &w.as_of)?;
        check_date("exit_waiver.announced", &w.announced)?;
    }
    if let Some(l) = &f.lazy_migration {
        check_date("lazy_migration.as_of", &l.as_of)?;
    }
    if let Some(r) = &f.read_rate {
        check_date("read_rate.as_of", &r.as_of)?;
        if r.gbit_per_second.0 <= rust_decimal::Decimal::ZERO {
            return err("read_rate.gbit_per_second", "must be above 0".to_string());
        }
    }
    if let Some(m) = &f.minimum_monthly {
        check_date("minimum_monthly.as_of", &m.as_of)?;
    }
    check_fast_tiers(&f.id, &f.fast_tiers)?;
    Ok(())
}

/// The storage classes: at least one, each once, with sound prices, dates and restore tiers.
/// Returns their ids.
fn check_classes(classes: &[StorageClass]) -> Result<BTreeSet<&str>, Invalid> {
    if classes.is_empty() {
        return err("classes", "at least one storage class is needed".into());
    }
    let mut class_ids = BTreeSet::new();
    for (i, c) in classes.iter().enumerate() {
        let at = format!("classes[{i}]");
        if !class_ids.insert(c.id.as_str()) {
            return err(
                &format!("{at}.id"),
                format!("class {:?} appears twice", c.id),
            );
        }
        check_storage_tiers(&format!("{at}.storage"), &c.storage)?;
        for (name, rp) in [("put", &c.put), ("get", &c.get), ("list", &c.list)] {
            if rp.per == 0 {
                return err(
                    &format!("{at}.{name}.per"),
                    "must be above zero (1000, 10000 or 1000000)".into(),
                );
            }
        }
        if let Some(rp) = &c.retrieval_request
            && rp.per == 0
        {
            return err(
                &format!("{at}.retrieval_request.per"),
                "must be above zero".into(),
            );
        }
        check_date(&format!("{at}.as_of"), &c.as_of)?;
        check_restore_tiers(&at, c)?;
    }
    Ok(class_ids)
}

/// A class's restore tiers (the class at `at`): known ids, each once, only on an archive
/// class, with sound prices and dates.
fn check_restore_tiers(at: &str, c: &StorageClass) -> Result<(), Invalid> {
    let mut tier_ids = BTreeSet::new();
    for (j, t) in c.restore_tiers.iter().enumerate() {
        let tat = format!("{at}.restore_tiers[{j}]");
        if !RESTORE_TIERS.contains(&t.id.as_str()) {
            return err(
                &format!("{tat}.id"),
                format!("{:?} is not one of {}", t.id, RESTORE_TIERS.join(", ")),
            );
        }
        if !tier_ids.insert(t.id.as_str()) {
            return err(
                &format!("{tat}.id"),
                format!("restore tier {:?} appears twice", t.id),
            );
        }
        if !c.archive {
            return err(
                &tat,
                "restore tiers need an archive class (archive = true)".into(),
            );
        }
        if let Some(rp) = &t.retrieval_request
            && rp.per == 0
        {
            return err(
                &format!("{tat}.retrieval_request.per"),
                "must be above zero".into(),
            );
        }
        check_date(&format!("{tat}.as_of"), &t.as_of)?;
    }
    Ok(())
}

/// The regions: at least one, each once, overriding prices only of known classes and then
/// with their own source and date. Returns their ids.
fn check_regions<'f>(
    regions: &'f [Region],
    class_ids: &BTreeSet<&str>,
) -> Result<BTreeSet<&'f str>, Invalid> {
    if regions.is_empty() {
        return err("regions", "at least one region is needed".into());
    }
    let mut region_ids = BTreeSet::new();
    for (i, r) in regions.iter().enumerate() {
        let at = format!("regions[{i}]");
        if !region_ids.insert(r.id.as_str()) {
            return err(
                &format!("{at}.id"),
                format!("region {:?} appears twice", r.id),
            );
        }
        for k in r.storage_per_gb_month.keys() {
            if !class_ids.contains(k.as_str()) {
                return err(
                    &format!("{at}.storage_per_gb_month.{k}"),
                    format!("{k:?} is not one of the classes: {}", join(class_ids)),
                );
            }
        }
        if let Some(e) = &r.egress {
            check_egress(&format!("{at}.egress"), e)?;
        }
        for k in r.inter_region_to.keys() {
            if !regions.iter().any(|o| o.id == *k) || *k == r.id {
                return err(
                    &format!("{at}.inter_region_to.{k}"),
                    format!("{k:?} is not another region of this provider"),
                );
            }
        }
        let overrides = !r.storage_per_gb_month.is_empty()
            || r.inter_region_per_gb.is_some()
            || !r.inter_region_to.is_empty();
        if overrides && (r.source.is_none() || r.as_of.is_none()) {
            return err(
                &at,
                "a region that overrides prices needs its own source and as_of".into(),
            );
        }
        if let Some(d) = &r.as_of {
            check_date(&format!("{at}.as_of"), d)?;
        }
    }
    Ok(region_ids)
}

/// The provider's limits: part counts and sizes that can be met, known checksum headers.
fn check_limits(l: &Limits) -> Result<(), Invalid> {
    if l.max_parts == 0 {
        return err("limits.max_parts", "must be above zero".into());
    }
    if l.min_part_bytes == 0 || l.min_part_bytes > l.max_part_bytes {
        return err(
            "limits.min_part_bytes",
            format!(
                "must be above zero and at most max_part_bytes ({})",
                l.max_part_bytes
            ),
        );
    }
    if l.max_single_put_bytes > l.max_object_bytes {
        return err(
            "limits.max_single_put_bytes",
            "must be at most max_object_bytes".into(),
        );
    }
    for (i, h) in l.checksum_headers.iter().enumerate() {
        if !CHECKSUM_HEADERS.contains(&h.as_str()) {
            return err(
                &format!("limits.checksum_headers[{i}]"),
                format!("{h:?} is not one of {}", CHECKSUM_HEADERS.join(", ")),
            );
        }
    }
    check_date("limits.as_of", &l.as_of)
}

fn join(s: &BTreeSet<&str>) -> String {
    s.iter().copied().collect::<Vec<_>>().join(", ")
}

fn check_date(path: &str, d: &toml::value::Datetime) -> Result<(), Invalid> {
    if d.date.is_none() || d.time.is_some() {
        return Err((
            path.to_string(),
            format!("{d} must be a plain date such as 2026-09-20"),
        ));
    }
    Ok(())
}

fn check_egress(at: &str, e: &Egress) -> Result<(), Invalid> {
    check_date(&format!("{at}.as_of"), &e.as_of)?;
    check_ascending(
        &format!("{at}.tiers"),
        e.tiers.iter().map(|t| t.up_to_gb),
        true,
    )?;
    match (&e.free_multiple_of_stored, &e.over_multiple) {
        (Some(_), None) => {
            return Err((
                format!("{at}.over_multiple"),
                "free_multiple_of_stored needs over_multiple (\"billed\" or \"policy-risk\")"
                    .into(),
            ));
        }
        (None, Some(_)) => {
            return Err((
                format!("{at}.free_multiple_of_stored"),
                "over_multiple needs free_multiple_of_stored".into(),
            ));
        }
        (Some(_), Some(OverMultiple::Billed)) if e.tiers.is_empty() => {
            return Err((
                format!("{at}.tiers"),
                "over_multiple = \"billed\" needs at least one tier to bill the excess at".into(),
            ));
        }
        _ => {}
    }
    Ok(())
}

fn check_storage_tiers(at: &str, tiers: &[StorageTier]) -> Result<(), Invalid> {
    if tiers.is_empty() {
        return Err((
            at.to_string(),
            "at least one tier ({ per_gb_month = \"…\" }) is needed".into(),
        ));
    }
    check_ascending(at, tiers.iter().map(|t| t.up_to_gb), false)
}

fn check_ascending(
    at: &str,
    bounds: impl Iterator<Item = Option<Dec>>,
    may_be_empty: bool,
) -> Result<(), Invalid> {
    let bounds: Vec<_> = bounds.collect();
    if bounds.is_empty() {
        return if may_be_empty {
            Ok(())
        } else {
            Err((at.to_string(), "no tiers".into()))
        };
    }
    let mut prev = None;
    for (i, b) in bounds.iter().enumerate() {
        let last = i + 1 == bounds.len();
        match b {
            None if !last => {
                return Err((
                    format!("{at}[{i}].up_to_gb"),
                    "only the last tier may leave out up_to_gb".into(),
                ));
            }
            Some(_) if last => {
                return Err((
                    format!("{at}[{i}].up_to_gb"),
                    "the last tier must leave out up_to_gb (it covers everything above)".into(),
                ));
            }
            Some(v) => {
                if let Some(p) = prev
                    && v.0 <= p
                {
                    return Err((
                        format!("{at}[{i}].up_to_gb"),
                        format!("{} must be above the previous tier's {}", v.0, p),
                    ));
                }
                prev = Some(v.0);
            }
            None => {}
        }
    }
    Ok(())
}

fn convert_prices(f: &mut ProviderFile, rate: rust_decimal::Decimal) {
    let c = |d: &mut Dec| d.0 *= rate;
    let egress = |e: &mut Egress| {
        for t in &mut e.tiers {
            c(&mut t.per_gb);
        }
    };
    egress(&mut f.egress);
    c(&mut f.transfer.same_region_per_gb);
    c(&mut f.transfer.inter_region_per_gb);
    for t in &mut f.fast_tiers {
        if let Some(p) = &mut t.price {
            c(p);
        }
    }
    for cl in &mut f.classes {
        for t in &mut cl.storage {
            c(&mut t.per_gb_month);
        }
        c(&mut cl.retrieval_per_gb);
        for rp in [&mut cl.put, &mut cl.get, &mut cl.list] {
            c(&mut rp.price);
        }
        if let Some(rp) = &mut cl.retrieval_request {
            c(&mut rp.price);
        }
        for t in &mut cl.restore_tiers {
            c(&mut t.retrieval_per_gb);
            if let Some(rp) = &mut t.retrieval_request {
                c(&mut rp.price);
            }
        }
    }
    for r in &mut f.regions {
        if let Some(e) = &mut r.egress {
            egress(e);
        }
        if let Some(v) = &mut r.inter_region_per_gb {
            c(v);
        }
        for v in r.storage_per_gb_month.values_mut() {
            c(v);
        }
    }
    if let Some(m) = &mut f.minimum_monthly {
        c(&mut m.amount);
    }
}

/// The fast tiers of provider `provider`: ids unique and prefixed, a unit with every price,
/// prices and throughputs above zero, plain dates.
fn check_fast_tiers(provider: &str, tiers: &[FastTier]) -> Result<(), Invalid> {
    let mut ids = BTreeSet::new();
    for (i, t) in tiers.iter().enumerate() {
        let at = format!("fast_tiers[{i}]");
        let bad = |field: &str, m: String| Err((format!("{at}.{field}"), m));
        if !t.id.starts_with(&format!("{provider}-")) {
            return bad(
                "id",
                format!(
                    "{:?} must start with the provider id {provider:?} and '-'",
                    t.id
                ),
            );
        }
        if !ids.insert(t.id.as_str()) {
            return bad("id", format!("fast tier {:?} appears twice", t.id));
        }
        match (&t.price, &t.unit) {
            (Some(p), Some(_)) if p.0.is_sign_negative() || p.0.is_zero() => {
                return bad("price", "must be above zero".into());
            }
            (Some(_), None) => {
                return bad(
                    "unit",
                    "a price needs its unit: gb-month, gib-month, tb-month or tib-month".into(),
                );
            }
            _ => {}
        }
        for (field, v) in [
            ("read_mb_per_s_per_tib", &t.read_mb_per_s_per_tib),
            ("write_mb_per_s_per_tib", &t.write_mb_per_s_per_tib),
        ] {
            if v.0.is_sign_negative() || v.0.is_zero() {
                return bad(
                    field,
                    "must be above zero (MB/s per TiB provisioned)".into(),
                );
            }
        }
        check_date(&format!("{at}.as_of"), &t.as_of)?;
    }
    Ok(())
}

impl Catalog {
    /// Every fast tier of every provider, by id.
    pub fn fast_tiers(&self) -> Vec<&FastTier> {
        self.providers()
            .flat_map(|p| p.file.fast_tiers.iter())
            .collect()
    }

    /// The fast tier `id`; an unknown id lists the known ones.
    pub fn fast_tier(&self, id: &str) -> Result<&FastTier, CatalogError> {
        let all = self.fast_tiers();
        all.iter()
            .find(|t| t.id == id.trim())
            .copied()
            .ok_or_else(|| CatalogError::UnknownFastTier {
                name: id.to_string(),
                hint: super::suggest::hint(id, all.iter().map(|t| t.id.as_str())),
                known: all
                    .iter()
                    .map(|t| t.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}
