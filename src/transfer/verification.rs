//! How a copied object was verified: one check on the read side (what the source's bytes were
//! compared with) and one on the write side (what proves the destination holds them). Shown as
//! `read+write` labels (`source-md5+dest-multipart-etag`) in summaries, `--json` and the
//! journal's `verified_by` column; the labels are the enums' Display and never change.

use std::fmt;

macro_rules! labelled {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident => $l:literal,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vm])* $v,)*
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$v,)*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$v => $l,)*
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<$name, String> {
                $name::ALL
                    .iter()
                    .copied()
                    .find(|c| c.as_str() == s)
                    .ok_or_else(|| format!("unknown check {s:?}"))
            }
        }
    };
}

labelled!(
    /// What the bytes read were compared with.
    ReadCheck {
        /// The CRC64 moverctl stored with the source object (a copy of a copy).
        SourceCrc64 => "source-crc64",
        /// The source's plain MD5 ETag (single-part S3, GCS).
        SourceMd5 => "source-md5",
        /// The source's multipart ETag, recomputed from its part layout.
        SourcePartsEtag => "source-parts-etag",
        /// A full-object CRC64 the store keeps.
        SourceChecksum => "source-checksum",
        /// The CRC32C the store keeps (GCS).
        SourceCrc32c => "source-crc32c",
        /// Azure, a blob without a digest of its own: read in ranges of at most 4 MiB, each
        /// matching the MD5 the service computed for it as it served it.
        SourceRangeMd5 => "source-range-md5",
        /// Nothing but the listed size: the source states no digest, and `--verify size` accepts
        /// that (local files, read here from the file itself, are labelled so too).
        SourceSize => "source-size",
        /// Nothing but the listed size, and no `--verify size` to accept it: the object was
        /// written (without moverctl's CRC64, which a later copy would take for the source's),
        /// but it is not recorded as done, and the run exits with its own code.
        Unverified => "unverified",
    }
);

labelled!(
    /// What proves the destination holds the bytes sent.
    WriteCheck {
        /// The destination's MD5 ETag (or Content-MD5 answer) equals the bytes' MD5.
        DestMd5 => "dest-md5",
        /// The store checked the Content-MD5 sent with the body (its ETag holds no MD5).
        DestContentMd5 => "dest-content-md5",
        /// Azure: every block went with an MD5 the store checked.
        DestBlockMd5 => "dest-block-md5",
        /// Azure: the store answered every block with the CRC64/NVME of the bytes it received
        /// (or its MD5), equal to the CRC64 of the bytes sent.
        DestBlockCrc64 => "dest-block-crc64",
        /// The multipart ETag equals the one computed from the parts sent.
        DestMultipartEtag => "dest-multipart-etag",
        /// The CRC32C the store keeps (GCS) equals the bytes'.
        DestCrc32c => "dest-crc32c",
        /// The full-object CRC64/NVME the store keeps equals the bytes' (S3 checksum-only path:
        /// every write carried `x-amz-checksum-crc64nvme`, which the store checks on arrival).
        DestChecksum => "dest-checksum",
        /// Only the destination's size (its ETags are not content hashes).
        DestSize => "dest-size",
        /// Copied by the destination service itself (CopyObject / UploadPartCopy): the ETag it
        /// computed over the bytes it wrote equals the source's content ETag (its MD5, or its
        /// multipart ETag with every part's ETag composing to it).
        DestCopyEtag => "dest-copy-etag",
        /// Copied by the destination service from a signed URL of the source (Azure Put Block
        /// From URL): the MD5s it answered for the blocks it fetched are the source's MD5, or
        /// compose to its multipart ETag.
        DestCopyBlockMd5 => "dest-copy-block-md5",
        /// As `DestCopyBlockMd5`, by the CRC64s the service answered for the blocks, combined.
        DestCopyBlockCrc64 => "dest-copy-block-crc64",
        /// Copied by the destination service itself (one CopyObject of a multipart source whose
        /// answer has another ETag): the full-object CRC64/NVME the service keeps for the copy
        /// equals the one it keeps for the source (each read by a HEAD, the source's pinned to
        /// its listed ETag).
        DestCopyChecksum => "dest-copy-checksum",
        /// Read back and compared by CRC64.
        ReadbackCrc64 => "readback-crc64",
        /// A local file: the CRC64 of the bytes written, computed once as they were handed to
        /// the file system, every write complete and the file's size exact (`--verify readback`
        /// reads it back instead).
        WrittenCrc64 => "dest-written-crc64",
    }
);

/// Both sides of one object's verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Verification {
    pub read: ReadCheck,
    pub write: WriteCheck,
}

impl Verification {
    pub fn new(read: ReadCheck, write: WriteCheck) -> Verification {
        Verification { read, write }
    }
}

impl fmt::Display for Verification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}+{}", self.read, self.write)
    }
}

impl std::str::FromStr for Verification {
    type Err = String;
    fn from_str(s: &str) -> Result<Verification, String> {
        let (r, w) = s
            .split_once('+')
            .ok_or_else(|| format!("not read+write: {s:?}"))?;
        Ok(Verification::new(r.parse()?, w.parse()?))
    }
}

/// In the order of the labels (summaries list them sorted as text; no read label is a prefix
/// of another, so comparing read then write labels is comparing the whole label).
impl Ord for Verification {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.read.as_str(), self.write.as_str()).cmp(&(other.read.as_str(), other.write.as_str()))
    }
}

impl PartialOrd for Verification {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// As its label (so a map of them is a JSON object keyed by label).
impl serde::Serialize for Verification {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<Verification> {
        ReadCheck::ALL
            .iter()
            .flat_map(|&r| {
                WriteCheck::ALL
                    .iter()
                    .map(move |&w| Verification::new(r, w))
            })
            .collect()
    }

    #[test]
    fn labels_are_todays_and_parse_back() {
        let v = Verification::new(ReadCheck::SourceSize, WriteCheck::DestMultipartEtag);
        assert_eq!(v.to_string(), "source-size+dest-multipart-etag");
        assert_eq!(
            Verification::new(ReadCheck::SourceMd5, WriteCheck::ReadbackCrc64).to_string(),
            "source-md5+readback-crc64"
        );
        for v in all() {
            assert_eq!(v.to_string().parse::<Verification>(), Ok(v));
        }
        assert!("source-md5".parse::<Verification>().is_err());
        assert!("source-x+dest-md5".parse::<Verification>().is_err());
    }

    #[test]
    fn ordered_as_their_labels() {
        let mut typed = all();
        typed.sort();
        let mut text: Vec<String> = typed.iter().map(|v| v.to_string()).collect();
        let shown = text.clone();
        text.sort();
        assert_eq!(shown, text);
    }

    #[test]
    fn a_map_of_them_is_a_json_object_keyed_by_label() {
        let mut m = std::collections::BTreeMap::new();
        m.insert(
            Verification::new(ReadCheck::SourceMd5, WriteCheck::DestMd5),
            3u64,
        );
        m.insert(
            Verification::new(ReadCheck::SourceCrc64, WriteCheck::DestSize),
            1u64,
        );
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            r#"{"source-crc64+dest-size":1,"source-md5+dest-md5":3}"#
        );
    }
}
