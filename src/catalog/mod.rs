//! The price and limits catalog: provider files (`providers/*.toml`), how a `PROVIDER[:REGION][/CLASS]`
//! name resolves against them, and the part-size rule shared by planner and executor.

mod load;
pub mod parts;
pub mod schema;
pub mod suggest;

pub use load::{Catalog, CatalogError, Provider, parse_provider};
use rust_decimal::Decimal;
pub use schema::*;

/// `aws:us-east-1/glacier-ir` as the user wrote it, resolved against the catalog.
#[derive(Debug, Clone)]
pub struct Place<'c> {
    pub given: String,
    pub provider: &'c Provider,
    pub region: &'c Region,
    pub class: &'c StorageClass,
}

impl<'c> Place<'c> {
    /// Parse `PROVIDER[:REGION][/CLASS]`; region and class fall back to the provider's defaults.
    pub fn resolve(catalog: &'c Catalog, given: &str) -> Result<Place<'c>, CatalogError> {
        let given = given.trim();
        let (head, class) = match given.split_once('/') {
            Some((h, c)) => (h, Some(c)),
            None => (given, None),
        };
        let (pid, region) = match head.split_once(':') {
            Some((p, r)) => (p, Some(r)),
            None => (head, None),
        };
        let provider = catalog.get(pid)?;
        let f = &provider.file;
        let pid = f.id.as_str();
        let region_id = region.unwrap_or(&f.default_region);
        let region = f
            .regions
            .iter()
            .find(|r| r.id == region_id)
            .ok_or_else(|| CatalogError::UnknownRegion {
                provider: pid.to_string(),
                region: region_id.to_string(),
                hint: suggest::hint(region_id, f.regions.iter().map(|r| r.id.as_str())),
                known: f
                    .regions
                    .iter()
                    .map(|r| r.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        let class_id = class.unwrap_or(&f.default_class);
        let class = f.classes.iter().find(|c| c.id == class_id).ok_or_else(|| {
            CatalogError::UnknownClass {
                provider: pid.to_string(),
                class: class_id.to_string(),
                hint: suggest::hint(class_id, f.classes.iter().map(|c| c.id.as_str())),
                known: f
                    .classes
                    .iter()
                    .map(|c| c.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        })?;
        Ok(Place {
            given: given.to_string(),
            provider,
            region,
            class,
        })
    }

    pub fn provider_id(&self) -> &str {
        &self.provider.file.id
    }

    /// `aws:us-east-1/standard`, always fully spelled out.
    pub fn canonical(&self) -> String {
        format!(
            "{}:{}/{}",
            self.provider.file.id, self.region.id, self.class.id
        )
    }

    pub fn bytes_per_gb(&self) -> u64 {
        self.provider.file.billing.bytes_per_gb
    }

    /// Internet egress rules in force in this region.
    pub fn egress(&self) -> &'c Egress {
        self.region
            .egress
            .as_ref()
            .unwrap_or(&self.provider.file.egress)
    }

    pub fn inter_region_per_gb(&self) -> Decimal {
        self.region
            .inter_region_per_gb
            .unwrap_or(self.provider.file.transfer.inter_region_per_gb)
            .0
    }

    /// Between this region and `to` (another region of the provider): the pair's own price
    /// (`inter_region_to`, looked up from either side), else this region's.
    pub fn inter_region_to(&self, to: &str) -> Decimal {
        let back = self
            .provider
            .file
            .regions
            .iter()
            .find(|r| r.id == to)
            .and_then(|r| r.inter_region_to.get(&self.region.id));
        match self.region.inter_region_to.get(to).or(back) {
            Some(p) => p.0,
            None => self.inter_region_per_gb(),
        }
    }

    /// Storage tiers of the class in this region (a region override is one flat tier).
    pub fn storage_tiers(&self) -> Vec<(Option<Decimal>, Decimal)> {
        if let Some(p) = self.region.storage_per_gb_month.get(&self.class.id) {
            return vec![(None, p.0)];
        }
        self.class
            .storage
            .iter()
            .map(|t| (t.up_to_gb.map(|d| d.0), t.per_gb_month.0))
            .collect()
    }

    pub fn limits(&self) -> &'c Limits {
        &self.provider.file.limits
    }
}

/// Oldest and newest `as_of` dates among a provider's priced sections.
pub fn price_dates(f: &ProviderFile) -> (String, String) {
    let mut dates: Vec<String> = vec![
        f.billing.as_of.to_string(),
        f.egress.as_of.to_string(),
        f.transfer.as_of.to_string(),
        f.limits.as_of.to_string(),
    ];
    dates.extend(f.classes.iter().map(|c| c.as_of.to_string()));
    dates.extend(
        f.regions
            .iter()
            .filter_map(|r| r.as_of.map(|d| d.to_string())),
    );
    if let Some(w) = &f.exit_waiver {
        dates.push(w.as_of.to_string());
    }
    dates.extend(f.lazy_migration.iter().map(|l| l.as_of.to_string()));
    dates.extend(f.read_rate.iter().map(|r| r.as_of.to_string()));
    dates.extend(f.fast_tiers.iter().map(|t| t.as_of.to_string()));
    dates.sort();
    (
        dates.first().cloned().unwrap_or_default(),
        dates.last().cloned().unwrap_or_default(),
    )
}
