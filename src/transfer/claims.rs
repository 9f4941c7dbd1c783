//! What a source object says its bytes hash to, and checking the bytes read against it.
//!
//! | the source offers | where it comes from | label |
//! |---|---|---|
//! | a plain MD5 ETag | S3 single-part uploads, GCS (listing) | `source-md5` |
//! | an S3 multipart ETag `md5(part md5s)-N` | listing, plus a HEAD of part 1 for the part size | `source-parts-etag` |
//! | moverctl's CRC64 in metadata | an object moverctl wrote earlier (GET/HEAD) | `source-crc64` |
//! | a stored CRC64/NVME full-object checksum | S3 `x-amz-checksum-crc64nvme` (checksum mode) | `source-checksum` |
//! | an MD5 property | Azure `Content-MD5` / `x-ms-blob-content-md5`, GCS `x-goog-hash: md5` | `source-md5` |
//! | a CRC32C | GCS `x-goog-hash: crc32c` (composite objects have no MD5) | `source-crc32c` |
//!
//! An S3 ETag is a digest only of an object that is not encrypted with SSE-KMS (or DSSE-KMS) or
//! SSE-C: an answer (GET or HEAD) that shows such encryption voids the MD5 and multipart ETag
//! the listing's ETag gave ([`Claims::void_etag`]), and the object is then checked by what else it
//! states (a stored CRC, looked for with one HEAD), or by its size.
//!
//! Every claim found is checked; the label names the first that applies, in the order
//! moverctl's CRC64, MD5, multipart ETag, stored CRC64, CRC32C. With none, only the
//! byte count is checked (`source-size`). On the checksum-only path (the destination checks a
//! CRC64 on arrival) a source that states a CRC is checked by its CRCs alone
//! ([`Claims::prefer_crc`]): no MD5 is computed for it.

use super::copy::context::CopyError;
use super::verification::ReadCheck;
use crate::checksum;
use crate::store::http::DigestHeaders;
use crc_fast::{CrcAlgorithm, Digest as Crc};
use md5::Digest as _;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claims {
    pub md5: Option<[u8; 16]>,
    /// `md5` is the listing's S3 ETag (not a digest the store states separately).
    pub md5_is_etag: bool,
    /// An answer showed the object encrypted with SSE-KMS or SSE-C: its ETag is no digest.
    pub etag_opaque: bool,
    /// The source's own part size and its multipart ETag (normalised).
    pub parts_etag: Option<(u64, String)>,
    /// An S3 multipart source whose parts are not all one size: every part's size (learned
    /// with a HEAD of each, `partNumber`) and its multipart ETag, rebuilt from the MD5s of the
    /// bytes read over those parts.
    pub parts_sizes: Option<(Vec<u64>, String)>,
    /// moverctl's CRC64 from the source's metadata.
    pub crc64_meta: Option<u64>,
    /// A CRC64/NVME the source store computed and stored.
    pub crc64_stored: Option<u64>,
    /// A full-object CRC64/NVME a HEAD of part 1 showed (`x-amz-checksum-type: FULL_OBJECT`):
    /// a hint only, no claim about the bytes — a server-side copy confirms it with a HEAD of the
    /// whole object before relying on it.
    pub crc64_part_hint: Option<u64>,
    pub crc32c: Option<u32>,
    /// The content headers and user metadata an answer showed (not a claim about the bytes:
    /// [`Claims::is_empty`] ignores it).
    pub meta: Option<super::fidelity::ObjectMeta>,
    /// Azure reads of a blob without a digest ([`super::range_md5`]): ranges whose bytes matched
    /// the MD5 the service computed for them, and ranges it answered without one.
    pub ranges_checked: u64,
    pub ranges_unchecked: u64,
}

impl Claims {
    /// Claims that need the bytes hashed in order (everything but CRC64, which combines).
    pub fn needs_in_order(&self) -> bool {
        self.md5.is_some()
            || self.parts_etag.is_some()
            || self.parts_sizes.is_some()
            || self.crc32c.is_some()
    }

    /// Whether the source states a CRC of its bytes (moverctl's CRC64, a stored CRC64, a
    /// CRC32C): all of them are checked at CRC speed.
    pub fn states_crc(&self) -> bool {
        self.crc64_meta.is_some() || self.crc64_stored.is_some() || self.crc32c.is_some()
    }

    /// The checksum-only path: where the source states a CRC, its MD5 and multipart ETag are
    /// not hashed for (MD5 is computed only where it is the only proof the source offers).
    /// Returns whether anything was dropped.
    pub fn prefer_crc(&mut self) -> bool {
        if !self.states_crc()
            || (self.md5.is_none() && self.parts_etag.is_none() && self.parts_sizes.is_none())
        {
            return false;
        }
        self.md5 = None;
        self.parts_etag = None;
        self.parts_sizes = None;
        true
    }

    pub fn is_empty(&self) -> bool {
        Claims {
            meta: None,
            ..self.clone()
        } == Claims::default()
    }

    /// The object's ETag is no digest of its bytes (an answer showed SSE-KMS or SSE-C): the
    /// MD5 and multipart ETag taken from it are dropped.
    pub fn void_etag(&mut self) {
        self.etag_opaque = true;
        if self.md5_is_etag {
            self.md5 = None;
            self.md5_is_etag = false;
        }
        self.parts_etag = None;
        self.parts_sizes = None;
    }

    /// Voids the ETag's claims when `h` (an S3 answer for this object) shows encryption that
    /// makes ETags opaque.
    pub fn note_encryption(&mut self, h: &DigestHeaders) {
        if !h.s3_etag_can_be_md5() {
            self.void_etag();
        }
    }

    /// Adds what a response's digest headers state about the whole object.
    pub fn add_headers(&mut self, h: &DigestHeaders, ranged: bool) {
        self.note_encryption(h);
        if self.md5.is_none() {
            self.md5 = h.whole_md5(ranged);
        }
        if self.crc32c.is_none() {
            self.crc32c = h.whole_crc32c();
        }
        if self.crc64_stored.is_none()
            && h.get("x-amz-checksum-type")
                .is_none_or(|t| t.eq_ignore_ascii_case("FULL_OBJECT"))
        {
            self.crc64_stored = h.whole_crc64();
        }
    }

    pub fn add_meta_crc64(&mut self, hex: &str) {
        if self.crc64_meta.is_none() {
            self.crc64_meta = u64::from_str_radix(hex.trim(), 16).ok();
        }
    }

    /// Compares the bytes' digests with every claim; the first claim checked, or
    /// [`ReadCheck::SourceSize`] when there was none.
    pub fn check(&self, crc64: u64, ordered: Option<&Ordered>) -> Result<ReadCheck, CopyError> {
        let mut label = None;
        let mut hit = |l: ReadCheck| {
            label.get_or_insert(l);
        };
        let bad = |what: &str| {
            Err(CopyError::Mismatch(format!(
                "the source's bytes do not match {what}"
            )))
        };
        // moverctl's own digest of the original bytes names the check when present.
        if let Some(c) = self.crc64_meta {
            if c != crc64 {
                return bad("the CRC64 stored with it");
            }
            hit(ReadCheck::SourceCrc64);
        }
        if let Some(m) = self.md5 {
            if ordered.and_then(|o| o.md5) != Some(m) {
                return bad("its own MD5");
            }
            hit(ReadCheck::SourceMd5);
        }
        if let Some((_, etag)) = &self.parts_etag {
            if ordered.and_then(|o| o.parts_etag.as_deref()) != Some(etag.as_str()) {
                return bad("its multipart ETag");
            }
            hit(ReadCheck::SourcePartsEtag);
        }
        // Hashed over the parts' own sizes where the path hashes in order; a path that does not
        // (it hashes pieces of its own) leaves it unchecked, never failed.
        if let Some((_, etag)) = &self.parts_sizes {
            match ordered.and_then(|o| o.parts_sized.as_deref()) {
                Some(e) if e == etag => hit(ReadCheck::SourcePartsEtag),
                Some(_) => return bad("its multipart ETag (over its parts' own sizes)"),
                None => {}
            }
        }
        if let Some(c) = self.crc64_stored {
            if c != crc64 {
                return bad("the CRC64 the store keeps for it");
            }
            hit(ReadCheck::SourceChecksum);
        }
        if let Some(c) = self.crc32c {
            if ordered.and_then(|o| o.crc32c) != Some(c) {
                return bad("its CRC32C");
            }
            hit(ReadCheck::SourceCrc32c);
        }
        Ok(
            label.unwrap_or(if self.ranges_checked > 0 && self.ranges_unchecked == 0 {
                ReadCheck::SourceRangeMd5
            } else {
                ReadCheck::SourceSize
            }),
        )
    }

    /// Takes the range checks the reads recorded in `seen` (the claims themselves were learned
    /// before reading).
    pub fn add_ranges(&mut self, seen: &Claims) {
        self.ranges_checked = seen.ranges_checked;
        self.ranges_unchecked = seen.ranges_unchecked;
    }
}

/// Digests that need the object's bytes in order.
#[derive(Debug, Clone, Default)]
pub struct Ordered {
    pub md5: Option<[u8; 16]>,
    pub parts_etag: Option<String>,
    /// The multipart ETag rebuilt over [`Claims::parts_sizes`].
    pub parts_sized: Option<String>,
    pub crc32c: Option<u32>,
}

/// Part-wise MD5s over given part sizes: (every part's size, bytes in the current part, its MD5,
/// MD5s of finished parts).
type Sized = (Vec<u64>, u64, md5::Md5, Vec<[u8; 16]>);

/// Hashes an object's bytes in order for the claims that need it.
#[derive(Clone)]
pub struct InOrder {
    md5: Option<md5::Md5>,
    /// (part size, bytes in the current part, its MD5, MD5s of finished parts)
    parts: Option<(u64, u64, md5::Md5, Vec<[u8; 16]>)>,
    /// (every part's size, bytes in the current part, its MD5, MD5s of finished parts)
    sized: Option<Sized>,
    crc32c: Option<Crc>,
}

impl InOrder {
    pub fn new(c: &Claims) -> InOrder {
        InOrder {
            md5: c.md5.map(|_| md5::Md5::new()),
            parts: c
                .parts_etag
                .as_ref()
                .map(|(size, _)| (*size, 0, md5::Md5::new(), Vec::new())),
            sized: c
                .parts_sizes
                .as_ref()
                .map(|(sizes, _)| (sizes.clone(), 0, md5::Md5::new(), Vec::new())),
            crc32c: c.crc32c.map(|_| Crc::new(CrcAlgorithm::Crc32Iscsi)),
        }
    }

    pub fn update(&mut self, data: &[u8]) {
        if let Some((sizes, filled, cur, done)) = &mut self.sized {
            let mut d = data;
            while !d.is_empty() {
                // Bytes past the last part (more than the sizes add up to) go into one more
                // part, so the ETag cannot match.
                let size = sizes.get(done.len()).copied().unwrap_or(u64::MAX);
                let take = ((size - *filled) as usize).min(d.len());
                cur.update(&d[..take]);
                *filled += take as u64;
                d = &d[take..];
                if *filled == size {
                    done.push(std::mem::replace(cur, md5::Md5::new()).finalize().into());
                    *filled = 0;
                }
            }
        }
        self.update_rest(data);
    }

    fn update_rest(&mut self, mut data: &[u8]) {
        if let Some(m) = &mut self.md5 {
            m.update(data);
        }
        if let Some(c) = &mut self.crc32c {
            c.update(data);
        }
        if let Some((size, filled, cur, done)) = &mut self.parts {
            while !data.is_empty() {
                let take = ((*size - *filled) as usize).min(data.len());
                cur.update(&data[..take]);
                *filled += take as u64;
                data = &data[take..];
                if *filled == *size {
                    done.push(std::mem::replace(cur, md5::Md5::new()).finalize().into());
                    *filled = 0;
                }
            }
        }
    }

    pub fn finish(self) -> Ordered {
        Ordered {
            md5: self.md5.map(|m| m.finalize().into()),
            parts_etag: self.parts.map(|(_, filled, cur, mut done)| {
                if filled > 0 {
                    done.push(cur.finalize().into());
                }
                checksum::multipart_etag(&done)
            }),
            parts_sized: self.sized.map(|(_, filled, cur, mut done)| {
                if filled > 0 {
                    done.push(cur.finalize().into());
                }
                checksum::multipart_etag(&done)
            }),
            crc32c: self.crc32c.map(|c| c.finalize() as u32),
        }
    }
}

/// The part size an S3 multipart ETag implies, given the size of part 1: every part but the
/// last has that size, so `N = ceil(size / part1)` must hold.
pub fn parts_layout(etag: &str, size: u64, part1: u64) -> Option<(u64, String)> {
    let e = checksum::etag_norm(etag);
    let (_, n) = e.rsplit_once('-')?;
    let n: u64 = n.parse().ok()?;
    (part1 > 0 && size.div_ceil(part1) == n).then_some((part1, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 31 % 251) as u8).collect()
    }

    #[test]
    fn parts_etag_is_recomputed_whatever_the_chunking() {
        let data = bytes(10_000);
        let md5s: Vec<[u8; 16]> = data
            .chunks(4096)
            .map(|c| md5::Md5::digest(c).into())
            .collect();
        let etag = checksum::multipart_etag(&md5s);
        let claims = Claims {
            parts_etag: parts_layout(&format!("\"{etag}\""), 10_000, 4096),
            ..Default::default()
        };
        assert!(claims.parts_etag.is_some());
        for chunk in [1, 7, 4096, 5000, 10_000] {
            let mut h = InOrder::new(&claims);
            for c in data.chunks(chunk) {
                h.update(c);
            }
            let o = h.finish();
            assert_eq!(
                claims.check(checksum::crc64_of(&data), Some(&o)).unwrap(),
                ReadCheck::SourcePartsEtag
            );
        }
        let mut flipped = data.clone();
        flipped[5000] ^= 1;
        let mut h = InOrder::new(&claims);
        h.update(&flipped);
        assert!(
            claims
                .check(checksum::crc64_of(&flipped), Some(&h.finish()))
                .is_err()
        );
    }

    #[test]
    fn an_encrypted_objects_etag_is_no_claim() {
        let data = b"hello world";
        let h = |sse: &[(&str, &str)]| {
            DigestHeaders(
                sse.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        };
        // An SSE-KMS object's ETag (no MD5 of its bytes), and a multipart one.
        let listed = Claims {
            md5: Some([7; 16]),
            md5_is_etag: true,
            parts_etag: Some((5 << 20, "0123-2".into())),
            ..Default::default()
        };
        let o = Ordered {
            md5: Some(md5::Md5::digest(data).into()),
            ..Default::default()
        };
        assert!(listed.check(checksum::crc64_of(data), Some(&o)).is_err());
        for sse in [
            ("x-amz-server-side-encryption", "aws:kms"),
            ("x-amz-server-side-encryption", "aws:kms:dsse"),
            ("x-amz-server-side-encryption-customer-algorithm", "AES256"),
        ] {
            let mut c = listed.clone();
            c.add_headers(&h(&[sse]), false);
            assert!(
                c.etag_opaque && c.md5.is_none() && c.parts_etag.is_none(),
                "{sse:?}"
            );
            assert_eq!(
                c.check(checksum::crc64_of(data), Some(&o)).unwrap(),
                ReadCheck::SourceSize
            );
        }
        // SSE-S3 ETags are MD5s; an MD5 the store states itself (Azure, GCS) is kept.
        let mut c = listed.clone();
        c.add_headers(&h(&[("x-amz-server-side-encryption", "AES256")]), false);
        assert_eq!(c, listed);
        let mut azure = Claims {
            md5: o.md5,
            ..Default::default()
        };
        azure.void_etag();
        assert_eq!(azure.md5, o.md5);
    }

    #[test]
    fn uneven_parts_rebuild_the_etag_over_their_own_sizes() {
        let data = bytes(12_000);
        let sizes = vec![5000u64, 6000, 1000];
        let mut at = 0usize;
        let md5s: Vec<[u8; 16]> = sizes
            .iter()
            .map(|n| {
                let m = md5::Md5::digest(&data[at..at + *n as usize]).into();
                at += *n as usize;
                m
            })
            .collect();
        let etag = checksum::multipart_etag(&md5s);
        let claims = Claims {
            parts_sizes: Some((sizes, etag)),
            ..Default::default()
        };
        for chunk in [1, 999, 5000, 12_000] {
            let mut h = InOrder::new(&claims);
            for c in data.chunks(chunk) {
                h.update(c);
            }
            assert_eq!(
                claims
                    .check(checksum::crc64_of(&data), Some(&h.finish()))
                    .unwrap(),
                ReadCheck::SourcePartsEtag
            );
        }
        let mut flipped = data.clone();
        flipped[5500] ^= 1;
        let mut h = InOrder::new(&claims);
        h.update(&flipped);
        assert!(
            claims
                .check(checksum::crc64_of(&flipped), Some(&h.finish()))
                .is_err()
        );
        // A path that hashed nothing in order leaves it unchecked.
        assert_eq!(claims.check(0, None).unwrap(), ReadCheck::SourceSize);
    }

    #[test]
    fn layout_must_agree_with_the_part_count() {
        assert!(parts_layout("abc-3", 10_000, 4096).is_some());
        assert!(parts_layout("abc-2", 10_000, 4096).is_none());
        assert!(parts_layout("abc", 10_000, 4096).is_none());
        assert!(parts_layout("abc-3", 10_000, 0).is_none());
    }

    #[test]
    fn crc32c_and_crc64_claims_are_checked() {
        let data = b"hello world";
        let claims = Claims {
            crc32c: Some(0xc99465aa),
            crc64_meta: Some(checksum::crc64_of(data)),
            ..Default::default()
        };
        let mut h = InOrder::new(&claims);
        h.update(data);
        let o = h.finish();
        assert_eq!(
            claims.check(checksum::crc64_of(data), Some(&o)).unwrap(),
            ReadCheck::SourceCrc64
        );
        assert!(
            claims
                .check(checksum::crc64_of(b"hello worle"), Some(&o))
                .is_err()
        );
        let wrong = Claims {
            crc32c: Some(1),
            ..Default::default()
        };
        assert!(wrong.check(0, Some(&o)).is_err());
        assert_eq!(
            Claims::default().check(0, None).unwrap(),
            ReadCheck::SourceSize
        );
    }
}
