//! The plan file (`plans/NAME.toml`): what `moverctl plan --save` writes and `moverctl exec` reads.
//! Versioned header first; the catalog digest and price dates it was priced with; the chosen
//! destination; the part sizes and limits the executor must respect; the prediction to report
//! against. It never holds a credential: locations are URLs without user info or query strings.

use super::model::{Assumptions, Candidate};
use crate::catalog::parts::PartRule;
use crate::catalog::{Catalog, Place, Tristate};
use crate::tomlfile::{self, FileError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub const PLAN_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanFile {
    pub moverctl_plan: Header,
    pub catalog: CatalogUsed,
    pub source: Endpoint,
    pub destination: Endpoint,
    pub corpus: CorpusSummary,
    pub transfer: TransferSettings,
    pub prediction: Prediction,
    #[serde(default)]
    pub alternatives: Vec<Alternative>,
    /// The move split into key ranges for many machines (`plan --shards N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<Shards>,
    /// One leg of a multi-hop plan (`plan --then`): which, of how many, and the next leg's file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leg: Option<LegOf>,
}

/// `[leg]`: this plan is leg `index` of `of`; `next` is the next leg's plan file (beside this
/// one), run after this leg has finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LegOf {
    pub index: u32,
    pub of: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// `[shards]`: N contiguous key ranges (see [`crate::shard`]), each run by `exec --shard K/N`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shards {
    /// Names this split: progress records live under `<progress>/<id>/shard-K/`.
    pub id: String,
    pub count: u32,
    /// Where shards keep their progress records (default: `.moverctl-progress/` in the
    /// destination bucket beside the copied prefix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    /// `--bwlimit` and `--tpslimit` of `exec` apply to each shard process, not to the move.
    pub limits_are_per_shard: bool,
    /// Seconds the plan predicts for one shard when `workers` machines run the shards.
    pub seconds_per_shard: String,
    #[serde(rename = "range")]
    pub ranges: Vec<ShardRange>,
}

/// One range: the keys `start < key <= end` (byte order); no `end` on the last.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardRange {
    pub index: u32,
    pub start: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
    pub objects: u64,
    pub bytes: u64,
}

impl Shards {
    pub fn boundaries(&self) -> Vec<String> {
        self.ranges.iter().filter_map(|r| r.end.clone()).collect()
    }

    pub fn range(&self, k: u32) -> crate::shard::KeyRange {
        let r = &self.ranges[k as usize];
        crate::shard::KeyRange {
            start: (k > 0).then(|| r.start.clone()),
            end: r.end.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    pub version: u32,
    pub created: String,
    pub moverctl: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogUsed {
    pub digest: String,
    pub providers: Vec<ProviderUsed>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderUsed {
    pub id: String,
    pub origin: String,
    /// Oldest and newest `as_of` date among the provider's prices.
    pub oldest_price: String,
    pub newest_price: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Endpoint {
    /// `provider:region/class`.
    pub place: String,
    /// Where the bytes are: `s3://bucket/prefix`, `gs://…`, `az://…`, a path, or a remote
    /// `NAME:bucket/prefix`. Absent: give it to `exec` on the command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorpusSummary {
    pub bytes: u64,
    pub objects: u64,
    pub origin: String,
}

/// What the executor must do to match what was priced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransferSettings {
    pub multipart_threshold: u64,
    pub part_size: u64,
    pub max_parts: u32,
    pub min_part_bytes: u64,
    pub max_part_bytes: u64,
    pub max_object_bytes: u64,
    pub max_single_put_bytes: u64,
    pub equal_part_sizes: bool,
    pub single_part_etag_is_md5: String,
    pub checksum_headers: Vec<String>,
    pub concurrency: u32,
    pub workers: u32,
    /// Bytes per second the plan assumed for the whole move.
    pub bandwidth: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prediction {
    pub seconds: String,
    pub bound: String,
    pub months: u32,
    /// USD line items as exact decimal strings (`egress`, …, `total`).
    pub cost: BTreeMap<String, String>,
    #[serde(default)]
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Alternative {
    pub destination: String,
    pub total: String,
    pub seconds: String,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    Invalid(#[from] FileError),
    #[error("{file}: {message}")]
    Io { file: String, message: String },
    #[error(
        "{what} {location:?} carries credentials (user info or a query string); plan files never hold secrets: give the location without them and set credentials in the environment or a profile"
    )]
    SecretInLocation {
        what: &'static str,
        location: String,
    },
}

/// Refuse locations that would put a secret into a file (`https://key@…`, `?sig=…`, `?X-Amz-…`).
pub fn check_location(what: &'static str, loc: &str) -> Result<(), PlanError> {
    let secret = loc.contains('?')
        || loc.split_once("://").is_some_and(|(_, rest)| {
            rest.split('/')
                .next()
                .is_some_and(|host| host.contains('@'))
        });
    if secret {
        return Err(PlanError::SecretInLocation {
            what,
            location: redact(loc),
        });
    }
    Ok(())
}

fn redact(loc: &str) -> String {
    let base = loc.split('?').next().unwrap_or(loc);
    match base.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('@') {
            Some((_, host)) => format!("{scheme}://***@{host}"),
            None => format!("{scheme}://{rest}"),
        },
        None => base.to_string(),
    }
}

pub struct PlanInputs<'a> {
    pub catalog: &'a Catalog,
    pub source: &'a Place<'a>,
    pub source_location: Option<String>,
    pub destination: &'a Place<'a>,
    pub destination_location: Option<String>,
    pub corpus_bytes: u64,
    pub corpus_objects: u64,
    pub corpus_origin: String,
    pub assumptions: &'a Assumptions,
    pub chosen: &'a Candidate,
    pub others: &'a [Candidate],
    pub created: String,
}

impl PlanFile {
    pub fn build(i: PlanInputs) -> Result<PlanFile, PlanError> {
        if let Some(l) = &i.source_location {
            check_location("--src", l)?;
        }
        if let Some(l) = &i.destination_location {
            check_location("--dst", l)?;
        }
        let ids = [i.source.provider_id(), i.destination.provider_id()];
        let mut providers: Vec<ProviderUsed> = Vec::new();
        for id in ids {
            if providers.iter().any(|p| p.id == id) {
                continue;
            }
            let p = i
                .catalog
                .get(id)
                .expect("resolved places come from the catalog");
            let (oldest, newest) = crate::catalog::price_dates(&p.file);
            providers.push(ProviderUsed {
                id: id.to_string(),
                origin: p.origin.clone(),
                oldest_price: oldest,
                newest_price: newest,
            });
        }
        let l = i.destination.limits();
        let a = i.assumptions;
        let c = i.chosen;
        Ok(PlanFile {
            moverctl_plan: Header {
                version: PLAN_VERSION,
                created: i.created,
                moverctl: env!("CARGO_PKG_VERSION").to_string(),
            },
            catalog: CatalogUsed {
                digest: i.catalog.digest_of(ids),
                providers,
            },
            source: Endpoint {
                place: i.source.canonical(),
                location: i.source_location,
            },
            destination: Endpoint {
                place: c.resolved.clone(),
                location: i.destination_location,
            },
            corpus: CorpusSummary {
                bytes: i.corpus_bytes,
                objects: i.corpus_objects,
                origin: i.corpus_origin,
            },
            transfer: TransferSettings {
                multipart_threshold: a.part_rule.threshold,
                part_size: a.part_rule.preferred_part,
                max_parts: l.max_parts,
                min_part_bytes: l.min_part_bytes,
                max_part_bytes: l.max_part_bytes,
                max_object_bytes: l.max_object_bytes,
                max_single_put_bytes: l.max_single_put_bytes,
                equal_part_sizes: l.equal_part_sizes,
                single_part_etag_is_md5: match l.single_part_etag_is_md5 {
                    Tristate::Yes => "yes",
                    Tristate::No => "no",
                    Tristate::Unknown => "unknown",
                }
                .to_string(),
                checksum_headers: l.checksum_headers.clone(),
                concurrency: a.concurrency,
                workers: a.workers,
                bandwidth: c.time.effective_bandwidth.round_dp(0).to_string(),
            },
            prediction: Prediction {
                seconds: c.time.seconds.round_dp(3).normalize().to_string(),
                bound: c.time.bound.as_str().to_string(),
                months: a.months,
                cost: c
                    .cost
                    .items()
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.micros().to_string()))
                    .collect(),
                warnings: c.warnings.clone(),
            },
            alternatives: i
                .others
                .iter()
                .map(|o| Alternative {
                    destination: o.resolved.clone(),
                    total: o.cost.total().micros().to_string(),
                    seconds: o.time.seconds.round_dp(3).normalize().to_string(),
                })
                .collect(),
            shards: None,
            leg: None,
        })
    }

    pub fn part_rule(&self) -> PartRule {
        PartRule {
            threshold: self.transfer.multipart_threshold,
            preferred_part: self.transfer.part_size,
        }
    }

    pub fn to_toml(&self) -> String {
        let body = toml::to_string_pretty(self).expect("a plan always serializes");
        format!(
            "# moverctl plan file (format version {PLAN_VERSION}). Run it with: moverctl exec <this file>\n\
             # Edit with care: the executor follows [transfer]; [prediction] is what the run is reported against.\n\n{body}"
        )
    }

    /// Read and check a plan file; errors name the file, line and field.
    pub fn load(path: &Path) -> Result<PlanFile, PlanError> {
        let shown = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| PlanError::Io {
            file: shown.clone(),
            message: format!("cannot read the plan: {e}"),
        })?;
        Self::parse(&shown, &tomlfile::text(&shown, bytes)?)
    }

    pub fn parse(shown: &str, text: &str) -> Result<PlanFile, PlanError> {
        let plan: PlanFile = tomlfile::parse(shown, text)?;
        let bad = |field: &str, m: String| -> PlanError {
            tomlfile::invalid(shown, text, field, m).into()
        };
        if plan.moverctl_plan.version != PLAN_VERSION {
            return Err(bad(
                "moverctl_plan.version",
                format!(
                    "plan format version {} is not supported by this moverctl (it reads version {PLAN_VERSION})",
                    plan.moverctl_plan.version
                ),
            ));
        }
        if plan.transfer.part_size == 0
            || plan.transfer.min_part_bytes > plan.transfer.max_part_bytes
        {
            return Err(bad(
                "transfer.part_size",
                "part sizes must be above zero and min <= max".into(),
            ));
        }
        if let Some(sh) = &plan.shards {
            let ok = sh.count >= 1
                && sh.ranges.len() == sh.count as usize
                && sh
                    .ranges
                    .iter()
                    .enumerate()
                    .all(|(i, r)| r.index as usize == i)
                && sh.ranges.first().is_some_and(|r| r.start.is_empty())
                && sh.ranges.last().is_some_and(|r| r.end.is_none())
                && sh.ranges.windows(2).all(|w| {
                    w[0].end.as_ref() == Some(&w[1].start)
                        && w[0].start.as_bytes() <= w[1].start.as_bytes()
                });
            if !ok {
                return Err(bad(
                    "shards",
                    format!(
                        "the {} ranges must number 0 to count-1 = {}, start at \"\", each start where the one before ends (in key order), and the last have no end",
                        sh.ranges.len(),
                        sh.count.saturating_sub(1)
                    ),
                ));
            }
            if let Some(l) = &sh.progress {
                check_location("a plan location", l)
                    .map_err(|e| bad("shards.progress", e.to_string()))?;
            }
        }
        for (field, ep) in [
            ("source.location", &plan.source),
            ("destination.location", &plan.destination),
        ] {
            if let Some(l) = &ep.location {
                check_location("a plan location", l).map_err(|e| bad(field, e.to_string()))?;
            }
        }
        Ok(plan)
    }

    pub fn save(&self, path: &Path) -> Result<(), PlanError> {
        let io = |e: std::io::Error| PlanError::Io {
            file: path.display().to_string(),
            message: e.to_string(),
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        // Write beside it and rename, so a crash never leaves half a plan.
        let tmp = path.with_extension("toml.tmp");
        std::fs::write(&tmp, self.to_toml()).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)?;
        Ok(())
    }
}
