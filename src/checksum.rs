//! Digests computed while bytes stream, and what each store's ETag says about content.
//!
//! Always: CRC64/NVME (`crc-fast`, tens of GiB/s per core), the end-to-end digest moverctl stores
//! in destination metadata and in its journal. Part CRCs are combined into the whole-object CRC,
//! so parts can be hashed in parallel. MD5 is computed too when a store's ETag is an MD5 to
//! compare with (single-part S3-style uploads) and per part for S3 multipart ETags, which are
//! `md5(md5(part 1) ‖ … ‖ md5(part N))-N`.

use base64::Engine;
use crc_fast::{CrcAlgorithm, Digest as Crc};
use md5::Digest as _;

/// Metadata keys moverctl writes on destination objects (underscores: Azure allows no '-').
pub const META_CRC64: &str = "moverctl_crc64nvme";
pub const META_SRC_ETAG: &str = "moverctl_src_etag";
pub const META_SIZE: &str = "moverctl_size";
/// A local source file's permission bits (octal), so a copy back to a folder restores them.
pub const META_MODE: &str = "moverctl_mode";
/// A local source file's modification time (RFC 3339, nanoseconds).
pub const META_MTIME: &str = "moverctl_mtime";

#[derive(Clone)]
pub struct Hasher {
    crc: Crc,
    md5: Option<md5::Md5>,
    bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digests {
    pub crc64: u64,
    pub md5: Option<[u8; 16]>,
    pub bytes: u64,
}

impl Hasher {
    pub fn new(with_md5: bool) -> Self {
        Hasher {
            crc: Crc::new(CrcAlgorithm::Crc64Nvme),
            md5: with_md5.then(md5::Md5::new),
            bytes: 0,
        }
    }

    pub fn update(&mut self, data: &[u8]) {
        self.crc.update(data);
        if let Some(m) = &mut self.md5 {
            m.update(data);
        }
        self.bytes += data.len() as u64;
    }

    /// Bytes hashed so far.
    pub fn bytes_so_far(&self) -> u64 {
        self.bytes
    }

    pub fn finish(self) -> Digests {
        Digests {
            crc64: self.crc.finalize(),
            md5: self.md5.map(|m| m.finalize().into()),
            bytes: self.bytes,
        }
    }
}

/// The CRC64/NVME of `a ‖ b`, from the CRC of `a`, the CRC of `b` and `b`'s length.
pub fn crc64_combine(a: u64, b: u64, b_len: u64) -> u64 {
    crc_fast::checksum_combine(CrcAlgorithm::Crc64Nvme, a, b, b_len)
}

/// CRC32C (Castagnoli, what GCS keeps for every object) of chunks taken in order.
pub fn crc32c_of<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> u32 {
    let mut c = Crc::new(CrcAlgorithm::Crc32Iscsi);
    for ch in chunks {
        c.update(ch);
    }
    c.finalize() as u32
}

/// The CRC32C of `a ‖ b`, from the CRC of `a`, the CRC of `b` and `b`'s length.
pub fn crc32c_combine(a: u32, b: u32, b_len: u64) -> u32 {
    crc_fast::checksum_combine(CrcAlgorithm::Crc32Iscsi, a.into(), b.into(), b_len) as u32
}

pub fn crc64_of(data: &[u8]) -> u64 {
    crc_fast::checksum(CrcAlgorithm::Crc64Nvme, data)
}

pub fn crc64_hex(v: u64) -> String {
    format!("{v:016x}")
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The MD5 an ETag states, when it states one: a quoted or bare 32-digit hex string without a
/// part count, or (fake-gcs-server, GCS JSON) the base64 of 16 bytes.
pub fn etag_md5(etag: &str) -> Option<[u8; 16]> {
    let t = etag.trim().trim_start_matches("W/").trim_matches('"');
    if t.len() == 32 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
        let mut out = [0u8; 16];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&t[2 * i..2 * i + 2], 16).ok()?;
        }
        return Some(out);
    }
    if t.len() == 24 && t.ends_with("==") {
        let v = base64::engine::general_purpose::STANDARD.decode(t).ok()?;
        return v.try_into().ok();
    }
    None
}

/// The S3 multipart ETag of parts with these MD5s: `md5(concat)-N`.
pub fn multipart_etag(part_md5s: &[[u8; 16]]) -> String {
    let mut m = md5::Md5::new();
    for p in part_md5s {
        m.update(p);
    }
    let d: [u8; 16] = m.finalize().into();
    format!("{}-{}", hex(&d), part_md5s.len())
}

/// Normalise an ETag for comparison (quotes and weak marker off, lower case).
pub fn etag_norm(etag: &str) -> String {
    etag.trim()
        .trim_start_matches("W/")
        .trim_matches('"')
        .to_ascii_lowercase()
}

/// Whether an ETag recorded earlier (a journal's) names the same version as one listed now:
/// equal once normalised, or a local file's ETag of three fields (inode-mtime-size, as journals
/// written before the change time was added hold them) that the listed four-field one starts
/// with. Anything else, an S3 multipart `md5-N` among them, must be equal.
pub fn same_etag(recorded: Option<&str>, listed: Option<&str>) -> bool {
    match (recorded, listed) {
        (None, None) => true,
        (Some(r), Some(l)) => {
            let (r, l) = (etag_norm(r), etag_norm(l));
            if r == l {
                return true;
            }
            let hex = |f: &str| !f.is_empty() && f.bytes().all(|b| b.is_ascii_hexdigit());
            let rf: Vec<&str> = r.split('-').collect();
            let lf: Vec<&str> = l.split('-').collect();
            rf.len() == 3
                && lf.len() == 4
                && rf.iter().chain(&lf).all(|f| hex(f))
                && lf[..3] == rf[..]
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journaled_local_etag_without_ctime_is_the_same_version() {
        assert!(same_etag(Some("\"1a-2b-3c\""), Some("\"1a-2b-3c-4d\"")));
        assert!(same_etag(Some("1a-2b-3c-4d"), Some("\"1a-2b-3c-4d\"")));
        // a rewrite moves the ctime: a different version once the journal holds it
        assert!(!same_etag(Some("1a-2b-3c-4d"), Some("1a-2b-3c-4e")));
        // the other three fields still count
        assert!(!same_etag(Some("1a-2b-3d"), Some("1a-2b-3c-4d")));
        // an S3 multipart ETag is never taken as a prefix
        assert!(!same_etag(
            Some("d41d8cd98f00b204e9800998ecf8427e-2"),
            Some("d41d8cd98f00b204e9800998ecf8427e-2-1")
        ));
        assert!(!same_etag(None, Some("1a-2b-3c-4d")));
        assert!(same_etag(None, None));
    }

    #[test]
    fn crc_combines_across_parts() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let (a, b) = data.split_at(37_123);
        let whole = crc64_of(&data);
        assert_eq!(
            crc64_combine(crc64_of(a), crc64_of(b), b.len() as u64),
            whole
        );
        let mut h = Hasher::new(true);
        h.update(a);
        h.update(b);
        let d = h.finish();
        assert_eq!((d.crc64, d.bytes), (whole, 100_000));
    }

    #[test]
    fn etags_that_are_md5s() {
        // md5("hello") = 5d41402abc4b2a76b9719d911017c592
        let want = etag_md5("\"5d41402abc4b2a76b9719d911017c592\"").unwrap();
        let mut h = Hasher::new(true);
        h.update(b"hello");
        assert_eq!(h.finish().md5, Some(want));
        assert_eq!(etag_md5("XUFAKrxLKna5cZ2REBfFkg=="), Some(want));
        assert!(etag_md5("\"5d41402abc4b2a76b9719d911017c592-2\"").is_none());
        assert!(etag_md5("0x8DCF2A1B3C4D5E6").is_none());
    }

    #[test]
    fn crc32c_of_parts_combines_to_the_whole() {
        // crc32c("hello world") as GCS shows it (x-goog-hash: crc32c=yZRlqg==).
        assert_eq!(crc32c_of([b"hello world".as_slice()]), 0xc99465aa);
        let (a, b) = (b"hello ".as_slice(), b"world".as_slice());
        assert_eq!(crc32c_of([a, b]), 0xc99465aa);
        assert_eq!(
            crc32c_combine(crc32c_of([a]), crc32c_of([b]), b.len() as u64),
            0xc99465aa
        );
    }

    #[test]
    fn multipart_etag_is_md5_of_md5s() {
        // Two parts "a" and "b": md5(md5("a") ‖ md5("b")) with "-2".
        let pa: [u8; 16] = md5::Md5::digest(b"a").into();
        let pb: [u8; 16] = md5::Md5::digest(b"b").into();
        let mut cat = pa.to_vec();
        cat.extend_from_slice(&pb);
        let want: [u8; 16] = md5::Md5::digest(&cat).into();
        assert_eq!(multipart_etag(&[pa, pb]), format!("{}-2", hex(&want)));
    }
}
