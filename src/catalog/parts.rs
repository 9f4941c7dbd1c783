//! How an object is cut into upload parts. The planner prices exactly what the executor will do, so
//! both call [`part_plan`].
//!
//! | object size                                   | upload                                      |
//! |-----------------------------------------------|---------------------------------------------|
//! | `<= threshold` and `<= max_single_put_bytes`  | one PUT                                     |
//! | otherwise                                     | multipart, parts of `part_size` (below)     |
//!
//! `part_size` starts at the preferred size, is raised to the store's minimum, then doubled (in
//! whole MiB) until the object fits in `max_parts`; if that passes the store's maximum part size, the
//! object cannot be uploaded. All parts but the last have the same size, which satisfies stores
//! that require equal parts (R2) and those that do not.

use super::Limits;

pub const MIB: u64 = 1 << 20;
/// Objects up to this size go as one PUT (unless the store's single-PUT limit is lower).
pub const DEFAULT_MULTIPART_THRESHOLD: u64 = 64 * MIB;
/// Preferred part size before limits are applied.
pub const DEFAULT_PART_SIZE: u64 = 64 * MIB;

/// The largest block fetched from a URL (Put Block From URL): Azure documented 100 MiB (newer
/// service versions take more), and a refused range would turn the call off for the run. Both
/// the executor and the planner read it here.
pub const MAX_FROM_URL_BLOCK: u64 = 100 * MIB;

/// The largest block a copy from a URL can fetch at a store with `limits`: its part limit, at
/// most [`MAX_FROM_URL_BLOCK`].
pub fn from_url_max_block(limits: &Limits) -> u64 {
    limits.max_part_bytes.min(MAX_FROM_URL_BLOCK)
}

/// Whether an object of `size` bytes can be fetched from a URL in blocks of `block` bytes: the
/// block within the store's part limits and [`MAX_FROM_URL_BLOCK`], and no more blocks than the
/// store's part count. The executor (`transfer::from_url`) and the planner both decide with it.
pub fn from_url_fits(size: u64, block: u64, limits: &Limits) -> bool {
    block >= limits.min_part_bytes.max(1)
        && block <= from_url_max_block(limits)
        && size.div_ceil(block) <= u64::from(limits.max_parts)
}

/// How the executor moves an object of `size` bytes into a store with `limits` when it may
/// fetch it from the source's URL and the source states a digest for it: in blocks of the
/// streamed copy's part size (capped at one block's limit) — `Some(block)` — or, when that
/// does not fit ([`from_url_fits`]), streamed through the workers (`None`). `Err`: the store
/// cannot take the object at all, whichever way it is sent.
pub fn from_url_block(
    size: u64,
    limits: &Limits,
    rule: PartRule,
) -> Result<Option<u64>, PartError> {
    let part = match part_plan(size, limits, rule)? {
        Upload::Single => size,
        Upload::Multipart { part_size, .. } => part_size,
    };
    if size == 0 {
        // An empty object has no block to fetch: the executor streams it.
        return Ok(None);
    }
    let block = part.min(from_url_max_block(limits));
    Ok(from_url_fits(size, block, limits).then_some(block))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartRule {
    pub threshold: u64,
    pub preferred_part: u64,
}

impl Default for PartRule {
    fn default() -> Self {
        PartRule {
            threshold: DEFAULT_MULTIPART_THRESHOLD,
            preferred_part: DEFAULT_PART_SIZE,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upload {
    Single,
    Multipart { part_size: u64, parts: u64 },
}

impl Upload {
    /// The part size of a multipart upload; a single upload's whole size is not known here, so
    /// `u64::MAX` (one part).
    pub fn part_size(&self) -> u64 {
        match self {
            Upload::Single => u64::MAX,
            Upload::Multipart { part_size, .. } => *part_size,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartError {
    #[error("an object of {size} bytes is larger than the store's maximum object size ({max})")]
    TooLarge { size: u64, max: u64 },
    #[error(
        "an object of {size} bytes needs parts over the store's {max_part}-byte part limit to stay within {max_parts} parts"
    )]
    TooManyParts {
        size: u64,
        max_parts: u32,
        max_part: u64,
    },
}

/// How an object of `size` bytes is uploaded to a store with `limits`.
pub fn part_plan(size: u64, limits: &Limits, rule: PartRule) -> Result<Upload, PartError> {
    if size > limits.max_object_bytes {
        return Err(PartError::TooLarge {
            size,
            max: limits.max_object_bytes,
        });
    }
    if size <= rule.threshold.min(limits.max_single_put_bytes) {
        return Ok(Upload::Single);
    }
    let mut part = rule.preferred_part.max(limits.min_part_bytes);
    let max_parts = u64::from(limits.max_parts);
    while size.div_ceil(part) > max_parts {
        part = part.saturating_mul(2);
    }
    // Whole MiB keeps parts aligned for stores and readers that like it.
    part = part.div_ceil(MIB) * MIB;
    if part > limits.max_part_bytes {
        // The doubling overshot; the smallest size that fits may still be allowed.
        let needed = size.div_ceil(max_parts).div_ceil(MIB) * MIB;
        if needed <= limits.max_part_bytes {
            part = needed.max(limits.min_part_bytes);
        } else {
            return Err(PartError::TooManyParts {
                size,
                max_parts: limits.max_parts,
                max_part: limits.max_part_bytes,
            });
        }
    }
    Ok(Upload::Multipart {
        part_size: part,
        parts: size.div_ceil(part),
    })
}

/// Limits for unit tests: these counts and sizes, nothing else published.
#[cfg(test)]
pub(crate) fn example_limits(
    max_parts: u32,
    min_part_bytes: u64,
    max_part_bytes: u64,
    max_object_bytes: u64,
    max_single_put_bytes: u64,
) -> Limits {
    Limits {
        max_parts,
        min_part_bytes,
        max_part_bytes,
        max_object_bytes,
        max_single_put_bytes,
        equal_part_sizes: false,
        single_part_etag_is_md5: super::Tristate::Yes,
        copy_keeps_multipart_etag: super::Tristate::Unknown,
        checksum_headers: vec![],
        write_requests_per_second: None,
        read_requests_per_second: None,
        rate_scope: None,
        notes: vec![],
        source: String::new(),
        as_of: "2026-01-01".parse().unwrap(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::schema::Limits;

    fn s3() -> Limits {
        example_limits(10_000, 5 * MIB, 5 << 30, 5 << 40, 5 << 30)
    }

    #[test]
    fn small_is_single_put() {
        assert_eq!(part_plan(0, &s3(), PartRule::default()), Ok(Upload::Single));
        assert_eq!(
            part_plan(64 * MIB, &s3(), PartRule::default()),
            Ok(Upload::Single)
        );
    }

    #[test]
    fn one_byte_over_threshold_is_two_parts() {
        assert_eq!(
            part_plan(64 * MIB + 1, &s3(), PartRule::default()),
            Ok(Upload::Multipart {
                part_size: 64 * MIB,
                parts: 2
            })
        );
    }

    #[test]
    fn exactly_ten_thousand_parts_keeps_the_preferred_size() {
        let size = 10_000 * 64 * MIB;
        assert_eq!(
            part_plan(size, &s3(), PartRule::default()),
            Ok(Upload::Multipart {
                part_size: 64 * MIB,
                parts: 10_000
            })
        );
        // One byte more no longer fits in 10,000 parts: the part size doubles.
        assert_eq!(
            part_plan(size + 1, &s3(), PartRule::default()),
            Ok(Upload::Multipart {
                part_size: 128 * MIB,
                parts: 5_001
            })
        );
    }

    #[test]
    fn largest_object_finds_a_part_size_within_limits() {
        let l = s3();
        let Upload::Multipart { part_size, parts } =
            part_plan(l.max_object_bytes, &l, PartRule::default()).unwrap()
        else {
            panic!("multipart expected")
        };
        assert!(parts <= 10_000 && part_size <= l.max_part_bytes);
    }

    #[test]
    fn too_large_is_an_error() {
        let l = s3();
        assert!(matches!(
            part_plan(l.max_object_bytes + 1, &l, PartRule::default()),
            Err(PartError::TooLarge { .. })
        ));
        let mut tight = s3();
        tight.max_part_bytes = 100 * MIB;
        assert!(matches!(
            part_plan(10_000 * 100 * MIB + 1, &tight, PartRule::default()),
            Err(PartError::TooManyParts { .. })
        ));
    }
}
