//! The provider file format (`providers/*.toml`, schema 1). One file per provider; the file is the
//! documentation of each field's meaning, so keep these doc comments and `providers/README.md` in step.
//!
//! Conventions:
//! - Every price is a TOML **string** ("0.023") so it stays exact; a bare float is rejected.
//! - Prices are in the file's currency (USD unless `[currency]` says otherwise); the loader
//!   converts to USD with the rate that section gives.
//! - A "GB" is `billing.bytes_per_gb` bytes for this provider (2^30 for AWS and GCS, 10^9 where the
//!   provider bills decimal GB; the file says which and why).
//! - Every priced section carries `source` (where the number comes from) and `as_of` (a TOML date).

use crate::money::Dec;
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::value::Datetime;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderFile {
    /// Must be 1.
    pub schema: u32,
    /// Short name used on the command line (`aws`, `backblaze-b2`); must match the file name.
    pub id: String,
    /// Other names accepted on the command line (`b2` for `backblaze-b2`), shown by `providers`.
    #[serde(default)]
    pub aliases: Vec<String>,
    pub name: String,
    pub kind: ProviderKind,
    #[serde(default)]
    pub homepage: Option<String>,
    /// Free-form facts a user should read before choosing this provider.
    #[serde(default)]
    pub notes: Vec<String>,
    pub default_region: String,
    pub default_class: String,
    #[serde(default)]
    pub currency: Option<Currency>,
    pub billing: Billing,
    pub egress: Egress,
    pub transfer: Transfer,
    pub classes: Vec<StorageClass>,
    pub regions: Vec<Region>,
    pub limits: Limits,
    #[serde(default)]
    pub exit_waiver: Option<ExitWaiver>,
    /// Lazy (read-through) migration into this provider: a miss is served from the source and
    /// copied in (Cloudflare Sippy, Tigris shadow buckets); see [`LazyMigration`].
    #[serde(default)]
    pub lazy_migration: Option<LazyMigration>,
    /// A published sustained read (egress) rate of one bucket or account (see [`ReadRate`]).
    #[serde(default)]
    pub read_rate: Option<ReadRate>,
    #[serde(default)]
    pub minimum_monthly: Option<MinimumMonthly>,
    /// Managed fast tiers (parallel file systems) this provider sells next to its object storage,
    /// priced for `plan --tiering` ([`FastTier`]).
    #[serde(default)]
    pub fast_tiers: Vec<FastTier>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderKind {
    Hyperscaler,
    ZeroEgress,
    Neocloud,
    Onprem,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Hyperscaler => "hyperscaler",
            ProviderKind::ZeroEgress => "zero-egress",
            ProviderKind::Neocloud => "neocloud",
            ProviderKind::Onprem => "onprem",
        }
    }
}

/// Prices in this file are in `code`; one unit is worth `usd_per_unit` US dollars.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Currency {
    pub code: String,
    pub usd_per_unit: Dec,
    pub source: String,
    pub as_of: Datetime,
}

/// What one billed "GB" is.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Billing {
    pub bytes_per_gb: u64,
    pub source: String,
    pub as_of: Datetime,
    #[serde(default)]
    pub note: Option<String>,
}

/// Internet egress out of this provider, billed per month.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Egress {
    /// GB per month that cost nothing before the tiers start (AWS: 100).
    #[serde(default)]
    pub free_gb_per_month: Dec,
    /// Monthly volume tiers in ascending order; the last has no `up_to_gb`. Empty: egress is free.
    #[serde(default)]
    pub tiers: Vec<EgressTier>,
    /// Zero-egress rules: egress up to this multiple of the average stored bytes in a month is free
    /// (B2: 3, Wasabi: 1). Above it, `over_multiple` says what happens.
    #[serde(default)]
    pub free_multiple_of_stored: Option<Dec>,
    #[serde(default)]
    pub over_multiple: Option<OverMultiple>,
    /// Conditions a user must know (fair use, partner-only, …); printed as warnings.
    #[serde(default)]
    pub caveats: Vec<String>,
    pub source: String,
    pub as_of: Datetime,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OverMultiple {
    /// Egress above the multiple is billed at `tiers`.
    Billed,
    /// Nothing is billed, but the provider may limit or suspend the account (Wasabi).
    PolicyRisk,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EgressTier {
    /// Upper bound of this tier in GB per month, counted from the month's first GB (the free
    /// allowance is taken out of the lowest tier); absent on the last tier.
    #[serde(default)]
    pub up_to_gb: Option<Dec>,
    pub per_gb: Dec,
}

/// Moves that stay inside this provider.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Transfer {
    /// Reads inside one region of this provider (to its own compute there, or a copy between two
    /// buckets of that region).
    pub same_region_per_gb: Dec,
    /// Said when reads are priced at `same_region_per_gb` but the sources do not confirm it.
    #[serde(default)]
    pub same_region_caveat: Option<String>,
    pub inter_region_per_gb: Dec,
    pub source: String,
    pub as_of: Datetime,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageClass {
    pub id: String,
    pub name: String,
    /// The class's name on the wire when it is not the id in upper case with `_` (S3
    /// `x-amz-storage-class`, GCS `x-goog-storage-class`); Azure access tiers are the id with a
    /// capital first letter.
    #[serde(default)]
    pub wire_name: Option<String>,
    /// Monthly storage price tiers, ascending; the last has no `up_to_gb`.
    pub storage: Vec<StorageTier>,
    /// Objects deleted (or overwritten, or moved) earlier are billed for the rest of this period.
    #[serde(default)]
    pub min_duration_days: u32,
    /// Each object is billed as at least this many bytes.
    #[serde(default)]
    pub min_object_bytes: u64,
    /// Bytes added to every object's billed size (Glacier's index overhead).
    #[serde(default)]
    pub overhead_bytes_per_object: u64,
    /// Free stored GB per month (B2, R2: 10).
    #[serde(default)]
    pub free_gb_month: Dec,
    /// Per GB read out of this class.
    #[serde(default)]
    pub retrieval_per_gb: Dec,
    /// Per restore/retrieval request, for classes that need one.
    #[serde(default)]
    pub retrieval_request: Option<RequestPrice>,
    /// Objects must be restored (taking hours) before they can be read.
    #[serde(default)]
    pub archive: bool,
    #[serde(default)]
    pub restore_hours: Option<u32>,
    /// The restore speeds an archive class offers (`plan --restore-tier`); the class's own
    /// `retrieval_per_gb`, `retrieval_request` and `restore_hours` are what is priced without the flag.
    #[serde(default)]
    pub restore_tiers: Vec<RestoreTier>,
    /// Writes: PUT, POST, COPY, multipart create, upload part and complete.
    pub put: RequestPrice,
    /// Reads: GET and HEAD.
    pub get: RequestPrice,
    /// LIST calls (one call returns up to 1,000 keys).
    pub list: RequestPrice,
    #[serde(default)]
    pub note: Option<String>,
    pub source: String,
    pub as_of: Datetime,
}

/// One restore speed of an archive class: `bulk`, `standard` or `expedited`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestoreTier {
    pub id: String,
    pub retrieval_per_gb: Dec,
    #[serde(default)]
    pub retrieval_request: Option<RequestPrice>,
    /// Hours until restored objects can be read; absent when no source gives it (the planner then
    /// assumes the class's `restore_hours`, or 12, and says so).
    #[serde(default)]
    pub hours: Option<u32>,
    pub source: String,
    pub as_of: Datetime,
}

pub const RESTORE_TIERS: &[&str] = &["bulk", "standard", "expedited"];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageTier {
    #[serde(default)]
    pub up_to_gb: Option<Dec>,
    pub per_gb_month: Dec,
}

/// A request price with its unit: `{ price = "0.005", per = 1000 }` is $0.005 per 1,000 requests.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestPrice {
    pub price: Dec,
    pub per: u64,
    /// Requests per month that cost nothing (R2: 1,000,000 class A).
    #[serde(default)]
    pub free_per_month: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Region {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    /// Replaces the provider's `[egress]` for this region.
    #[serde(default)]
    pub egress: Option<Egress>,
    #[serde(default)]
    pub inter_region_per_gb: Option<Dec>,
    /// Replaces `inter_region_per_gb` towards the named regions of this provider:
    /// `{ us-east-2 = "0.01" }` (a region pair priced below the provider's default).
    #[serde(default)]
    pub inter_region_to: BTreeMap<String, Dec>,
    /// Replaces a class's storage price in this region: `{ standard = "0.023" }` (one flat tier).
    #[serde(default)]
    pub storage_per_gb_month: BTreeMap<String, Dec>,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub as_of: Option<Datetime>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    pub max_parts: u32,
    pub min_part_bytes: u64,
    pub max_part_bytes: u64,
    pub max_object_bytes: u64,
    pub max_single_put_bytes: u64,
    /// All parts but the last must be the same size (R2).
    #[serde(default)]
    pub equal_part_sizes: bool,
    /// A single-part upload's ETag is the hex MD5 of the body: "yes", "no" or "unknown".
    pub single_part_etag_is_md5: Tristate,
    /// A CopyObject of a multipart object keeps its parts, so the copy's ETag is the source's
    /// multipart ETag: "yes", "no" or "unknown" (the default). `plan` counts one request for such
    /// a server-side copy where "yes", else one per part; `exec` learns it from the first answer.
    #[serde(default = "Tristate::unknown")]
    pub copy_keeps_multipart_etag: Tristate,
    /// Integrity headers the store accepts on upload: content-md5, crc32, crc32c, crc64nvme, sha1,
    /// sha256; `crc64nvme-trailer`: the CRC64 is also checked when sent as the trailer of an
    /// `aws-chunked` body.
    #[serde(default)]
    pub checksum_headers: Vec<String>,
    /// Sustained request rates before throttling, and what they apply to.
    #[serde(default)]
    pub write_requests_per_second: Option<u32>,
    #[serde(default)]
    pub read_requests_per_second: Option<u32>,
    #[serde(default)]
    pub rate_scope: Option<RateScope>,
    #[serde(default)]
    pub notes: Vec<String>,
    pub source: String,
    pub as_of: Datetime,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tristate {
    Yes,
    No,
    Unknown,
}

impl Tristate {
    fn unknown() -> Tristate {
        Tristate::Unknown
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RateScope {
    Prefix,
    Bucket,
    Account,
}

impl RateScope {
    pub fn as_str(self) -> &'static str {
        match self {
            RateScope::Prefix => "prefix",
            RateScope::Bucket => "bucket",
            RateScope::Account => "account",
        }
    }
}

/// The 2024 "leaving the cloud" egress credits.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExitWaiver {
    pub announced: Datetime,
    pub requires_full_exit: bool,
    pub window_days: u32,
    pub credit_not_waiver: bool,
    pub requires_approval: bool,
    #[serde(default)]
    pub premium_tier_only: bool,
    #[serde(default)]
    pub storage_egress_only: bool,
    /// When the `window_days` start counting: `approval` (the provider's approval notice),
    /// `start-date` (the planned start date given in the request) or `unstated`.
    pub window_starts: WindowStart,
    /// The notice the provider asks for before the move (a sentence, printed with the plan).
    pub notice: String,
    /// What share of the account's data the credit covers, where the provider publishes it
    /// (Google: the data held when the form was submitted); absent: not published.
    #[serde(default)]
    pub credit_covers: Option<String>,
    pub conditions: Vec<String>,
    pub source: String,
    pub as_of: Datetime,
}

/// When an exit waiver's window starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WindowStart {
    Approval,
    StartDate,
    Unstated,
}

impl WindowStart {
    pub fn as_str(self) -> &'static str {
        match self {
            WindowStart::Approval => "approval",
            WindowStart::StartDate => "start-date",
            WindowStart::Unstated => "unstated",
        }
    }
}

/// Lazy (read-through) migration the provider offers: a read that misses is served from the
/// source bucket and the object copied in, so training can start at once and each object is
/// pulled over by its first read.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LazyMigration {
    /// The provider's name for it (`Sippy`, `shadow bucket`).
    pub name: String,
    /// Source providers it reads from (catalog ids).
    pub sources: Vec<String>,
    /// Any other source that speaks the S3 API is accepted too.
    #[serde(default)]
    pub any_s3_source: bool,
    #[serde(default)]
    pub note: Option<String>,
    pub source: String,
    pub as_of: Datetime,
}

/// A published sustained read rate (egress bandwidth) of one bucket or account, in Gbit/s.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadRate {
    pub gbit_per_second: Dec,
    /// What it is a limit of (`account`, `bucket`).
    pub scope: RateScope,
    #[serde(default)]
    pub note: Option<String>,
    pub source: String,
    pub as_of: Datetime,
}

/// A floor on the monthly storage bill (Wasabi: 1 TB; IDrive e2: $5).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MinimumMonthly {
    pub amount: Dec,
    #[serde(default)]
    pub note: Option<String>,
    pub source: String,
    pub as_of: Datetime,
}

// Managed fast tiers: the parallel file systems a provider sells next to its object storage
// (FSx for Lustre, Azure Managed Lustre, Google Cloud Managed Lustre, Parallelstore), as
// `[[fast_tiers]]` sections of its provider file; `plan --tiering --fast-tier ID` prices one.
// A tier's throughput is bought with its capacity: `read_mb_per_s_per_tib` MB/s (10^6 bytes/s)
// for every TiB provisioned. A tier may carry no price when no source was found for it;
// `plan --tiering` then asks for `--fast-tier-price`.

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FastTier {
    /// Starts with the provider's id and '-' (`aws-fsx-lustre-persistent-ssd-125`), so ids are
    /// unique across the catalog.
    pub id: String,
    pub name: String,
    /// The region the price was read for.
    pub region: String,
    /// USD per `unit` of provisioned capacity. Absent: no sourced price (give one on the command
    /// line).
    #[serde(default)]
    pub price: Option<Dec>,
    /// What one `price` buys for a month: `gb-month` (10^9 bytes), `gib-month` (2^30),
    /// `tb-month` (10^12) or `tib-month` (2^40). Required with `price`.
    #[serde(default)]
    pub unit: Option<CapacityUnit>,
    /// Read throughput per TiB provisioned, in MB/s (10^6 bytes per second).
    pub read_mb_per_s_per_tib: Dec,
    /// Write throughput per TiB provisioned, in MB/s.
    pub write_mb_per_s_per_tib: Dec,
    /// How the price was confirmed: `primary` (the provider's own page), `third-party` (a
    /// transcription; check it), `unverified`.
    pub confidence: Confidence,
    #[serde(default)]
    pub note: Option<String>,
    pub source: String,
    pub as_of: Datetime,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CapacityUnit {
    GbMonth,
    GibMonth,
    TbMonth,
    TibMonth,
}

impl CapacityUnit {
    pub fn bytes(self) -> u64 {
        match self {
            CapacityUnit::GbMonth => 1_000_000_000,
            CapacityUnit::GibMonth => 1 << 30,
            CapacityUnit::TbMonth => 1_000_000_000_000,
            CapacityUnit::TibMonth => 1 << 40,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CapacityUnit::GbMonth => "GB-month",
            CapacityUnit::GibMonth => "GiB-month",
            CapacityUnit::TbMonth => "TB-month",
            CapacityUnit::TibMonth => "TiB-month",
        }
    }

    /// `GB-month`, `gib-month`, `TB`, `TiB-month` (case-insensitive, `-month` optional).
    pub fn parse(s: &str) -> Option<CapacityUnit> {
        let l = s.trim().to_ascii_lowercase();
        let l = l.strip_suffix("-month").unwrap_or(&l);
        match l {
            "gb" => Some(CapacityUnit::GbMonth),
            "gib" => Some(CapacityUnit::GibMonth),
            "tb" => Some(CapacityUnit::TbMonth),
            "tib" => Some(CapacityUnit::TibMonth),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Confidence {
    Primary,
    ThirdParty,
    Unverified,
}

impl Confidence {
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Primary => "primary",
            Confidence::ThirdParty => "third-party",
            Confidence::Unverified => "unverified",
        }
    }
}
