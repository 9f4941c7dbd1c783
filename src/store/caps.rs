//! One description of what a store does for integrity, read by the executor instead of the store
//! kind: which digests it checks on arrival, which it reports, whether its ETags are MD5s, whether
//! it keeps metadata. [`Capabilities::for_kind`] gives what each kind of store does as
//! documented (the defaults every opened store starts with); [`Capabilities::refine`] narrows it
//! with what the catalog says of the provider and what a saved probe of the location measured
//! (`moverctl probe`), so a store that does less than its kind promises (an S3-compatible server
//! that checks no `Content-MD5`, whose ETags are not MD5s, or that drops metadata) is not trusted
//! for what it does not do.

use super::Kind;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// Objects are read from a file on this machine (a local folder), not over the network: no
    /// read can be pinned to an ETag, and the bytes are the source of truth.
    pub in_process: bool,
    /// Reads can be pinned to the listed ETag (`If-Match`) and carry digest headers.
    pub pins_reads: bool,
    /// The ETag of an object written in one PUT is the MD5 of its content (listed and answered).
    pub put_etag_is_md5: bool,
    /// A multipart object's ETag is `md5(part md5s)-N` (S3), and a HEAD of part 1 (`partNumber`)
    /// gives the part size, so it can be recomputed.
    pub multipart_etag_is_md5_of_parts: bool,
    /// Writes carry the MD5 of the bytes read as `Content-MD5`, and the store refuses a body
    /// that does not match it.
    pub checks_content_md5: bool,
    /// A write's answer states the MD5 of the bytes received (Azure `Content-MD5`, GCS
    /// `x-goog-hash`).
    pub answers_received_md5: bool,
    /// Each uploaded block's answer states its MD5 (Azure Put Block).
    pub answers_block_md5: bool,
    /// Writes can carry `x-amz-checksum-crc64nvme` (per part, for a full-object checksum of a
    /// multipart upload); the store refuses a body that does not match it and keeps the
    /// full-object value (HEAD with checksum mode shows it). No kind is trusted with this by
    /// default: only the catalog (`checksum_headers` lists `crc64nvme`) or a saved probe that
    /// saw a wrong value refused and the right one stored grants it ([`Capabilities::grant_crc64`]).
    /// Where it holds, copies are verified by CRC64 on both ends and no MD5 is computed.
    pub checks_crc64nvme: bool,
    /// Where [`Capabilities::checks_crc64nvme`] holds: the CRC64 is checked as well when it
    /// follows an `aws-chunked` body as a trailer, so a local file's parts can be sent as they
    /// are read (`transfer/copy/trailer.rs`). Granted by the catalog (`crc64nvme-trailer`) or
    /// the remote's `trailing_checksum`.
    pub trailer_crc64: bool,
    /// The store keeps a CRC32C of every object and shows it on HEAD (GCS): the only digest of
    /// an object assembled from multipart parts there.
    pub keeps_crc32c: bool,
    /// User metadata (moverctl's CRC64, source ETag and size) is kept with objects.
    pub keeps_metadata: bool,
    /// Metadata can be given when a multipart upload starts (not through Azure's block API).
    pub metadata_on_multipart: bool,
    /// Keys this store would rewrite or cannot hold (see [`KeyRules`]).
    pub keys: KeyRules,
    /// Where each refinement came from, for `moverctl probe` and messages.
    pub notes: Vec<String>,
}

/// What a store does to the keys it is given, as data: a key it would store under another name
/// (Azure turns `\` into `/`) would make every later listing miss it, so the next run copies it
/// again and `sync --delete` deletes the rewritten copy; a key it cannot hold fails on write.
/// Such keys are refused by name before any write ([`KeyRules::refusal`]), which also keeps that
/// run from deleting anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRules {
    /// Characters the store replaces, and with what (shown in the refusal).
    pub rewritten_chars: &'static [(char, &'static str)],
    /// Characters a key cannot end with (the store drops them).
    pub dropped_at_end: &'static [char],
    /// Characters the store refuses anywhere in a key.
    pub refused_chars: &'static [char],
    /// The longest key, in UTF-8 bytes (the whole key, prefix included).
    pub max_key_bytes: usize,
    /// The longest segment between '/', in bytes (file systems' NAME_MAX).
    pub max_segment_bytes: usize,
}

impl KeyRules {
    pub fn for_kind(kind: Kind) -> KeyRules {
        match kind {
            // Azure Blob: `\` is stored as `/` (seen on Azurite; the service documents URL path
            // normalisation), trailing dots are trimmed, names are at most 1,024 characters.
            Kind::Azure => KeyRules {
                rewritten_chars: &[('\\', "/")],
                dropped_at_end: &['.'],
                refused_chars: &[],
                max_key_bytes: 1024,
                max_segment_bytes: usize::MAX,
            },
            // S3: keys are at most 1,024 bytes of UTF-8.
            Kind::S3 => KeyRules {
                rewritten_chars: &[],
                dropped_at_end: &[],
                refused_chars: &[],
                max_key_bytes: 1024,
                max_segment_bytes: usize::MAX,
            },
            // GCS: at most 1,024 bytes; carriage return and line feed are not allowed.
            Kind::Gcs => KeyRules {
                rewritten_chars: &[],
                dropped_at_end: &[],
                refused_chars: &['\r', '\n'],
                max_key_bytes: 1024,
                max_segment_bytes: usize::MAX,
            },
            // Local folders: a file or folder name is at most 255 bytes (NAME_MAX), a path 4,096.
            Kind::Local => KeyRules {
                rewritten_chars: &[],
                dropped_at_end: &[],
                refused_chars: &['\0'],
                max_key_bytes: 4096,
                max_segment_bytes: 255,
            },
            Kind::Memory => KeyRules {
                rewritten_chars: &[],
                dropped_at_end: &[],
                refused_chars: &[],
                max_key_bytes: usize::MAX,
                max_segment_bytes: usize::MAX,
            },
        }
    }

    /// Why `key` (the whole destination key, prefix included) cannot be written as it is, or
    /// None when it can.
    pub fn refusal(&self, key: &str) -> Option<String> {
        if let Some((c, to)) = self.rewritten_chars.iter().find(|(c, _)| key.contains(*c)) {
            return Some(format!(
                "the destination would store this key with {c:?} turned into {to:?}, under another name: every later run would copy it again and sync --delete would delete the copy; rename it at the source"
            ));
        }
        if let Some(c) = self.dropped_at_end.iter().find(|c| key.ends_with(**c)) {
            return Some(format!(
                "the destination drops a trailing {c:?} from keys, so it would store this one under another name; rename it at the source"
            ));
        }
        if let Some(c) = self.refused_chars.iter().find(|c| key.contains(**c)) {
            return Some(format!(
                "the destination cannot hold a key containing {c:?}"
            ));
        }
        if key.len() > self.max_key_bytes {
            return Some(format!(
                "the key is {} bytes, longer than the destination's limit of {} bytes",
                key.len(),
                self.max_key_bytes
            ));
        }
        if let Some(seg) = key.split('/').find(|s| s.len() > self.max_segment_bytes) {
            return Some(format!(
                "a name in the key is {} bytes, longer than the destination's limit of {} bytes",
                seg.len(),
                self.max_segment_bytes
            ));
        }
        None
    }
}

impl Capabilities {
    /// What a store of this kind does as documented.
    pub fn for_kind(kind: Kind) -> Capabilities {
        let cloud = matches!(kind, Kind::S3 | Kind::Gcs | Kind::Azure);
        Capabilities {
            in_process: !cloud,
            pins_reads: cloud,
            put_etag_is_md5: matches!(kind, Kind::S3 | Kind::Gcs),
            multipart_etag_is_md5_of_parts: kind == Kind::S3,
            checks_content_md5: matches!(kind, Kind::S3 | Kind::Gcs),
            answers_received_md5: matches!(kind, Kind::Azure | Kind::Gcs),
            answers_block_md5: kind == Kind::Azure,
            keeps_crc32c: kind == Kind::Gcs,
            checks_crc64nvme: false,
            trailer_crc64: false,
            keeps_metadata: kind != Kind::Local,
            metadata_on_multipart: kind != Kind::Azure,
            keys: KeyRules::for_kind(kind),
            notes: Vec::new(),
        }
    }

    /// Narrows the defaults with facts: `etag_is_md5` (the catalog's `single_part_etag_is_md5`,
    /// or the probe's finding), `checks_md5` (the probe's `content_md5_checked`), `metadata`
    /// (the probe's `user_metadata`). `None` keeps the default; a fact can only take a
    /// capability away (nothing is trusted beyond what the kind documents).
    pub fn refine(
        &mut self,
        source: &str,
        etag_is_md5: Option<bool>,
        checks_md5: Option<bool>,
        metadata: Option<bool>,
    ) {
        if etag_is_md5 == Some(false)
            && (self.put_etag_is_md5 || self.multipart_etag_is_md5_of_parts)
        {
            self.put_etag_is_md5 = false;
            self.multipart_etag_is_md5_of_parts = false;
            self.notes
                .push(format!("{source}: single-part ETags are not MD5s"));
        }
        if checks_md5 == Some(false) && self.checks_content_md5 {
            self.checks_content_md5 = false;
            self.notes
                .push(format!("{source}: a wrong Content-MD5 is not refused"));
        }
        if metadata == Some(false) && self.keeps_metadata {
            self.keeps_metadata = false;
            self.metadata_on_multipart = false;
            self.notes
                .push(format!("{source}: user metadata is not kept"));
        }
    }
}

impl Capabilities {
    /// Grants or withdraws [`Capabilities::checks_crc64nvme`] on an S3 store: `catalog` is
    /// whether the provider's catalog entry lists `crc64nvme` among the checksum headers it
    /// takes, `probe` what a saved probe measured (a wrong value refused and the right one
    /// stored: true; either not: false). A probe that saw it fail withdraws what the catalog
    /// grants; one that saw it work grants it where the catalog is silent.
    pub fn grant_crc64(&mut self, kind: Kind, catalog: (&str, bool), probe: Option<(&str, bool)>) {
        if kind != Kind::S3 {
            return;
        }
        let (granted, by) = match probe {
            Some((by, v)) => (v, by),
            None => (catalog.1, catalog.0),
        };
        if granted && !self.checks_crc64nvme {
            self.notes.push(format!(
                "{by}: x-amz-checksum-crc64nvme is checked on arrival and stored"
            ));
        } else if !granted && self.checks_crc64nvme {
            self.notes.push(format!(
                "{by}: x-amz-checksum-crc64nvme is not checked or not stored"
            ));
        }
        self.checks_crc64nvme = granted;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_a_destination_would_rewrite_or_cannot_hold_are_refused_by_name() {
        let az = KeyRules::for_kind(Kind::Azure);
        assert!(az.refusal("p/back\\slash").unwrap().contains("'\\\\'"));
        assert!(az.refusal("p/dot.").is_some());
        assert!(az.refusal(&"k".repeat(1025)).is_some());
        assert_eq!(az.refusal("p/ok.txt"), None);
        assert_eq!(KeyRules::for_kind(Kind::S3).refusal("back\\slash"), None);
        assert!(KeyRules::for_kind(Kind::Gcs).refusal("a\nb").is_some());
        let local = KeyRules::for_kind(Kind::Local);
        assert!(local.refusal(&format!("d/{}", "n".repeat(256))).is_some());
        assert_eq!(local.refusal(&format!("d/{}", "n".repeat(255))), None);
    }

    #[test]
    fn facts_only_take_capabilities_away() {
        let mut c = Capabilities::for_kind(Kind::S3);
        c.refine("probe", Some(true), Some(true), Some(true));
        assert_eq!(c, Capabilities::for_kind(Kind::S3));
        c.refine("catalog", Some(false), None, None);
        assert!(!c.put_etag_is_md5 && !c.multipart_etag_is_md5_of_parts);
        c.refine("probe", None, Some(false), Some(false));
        assert!(!c.checks_content_md5 && !c.keeps_metadata);
        assert_eq!(c.notes.len(), 3);
        let mut a = Capabilities::for_kind(Kind::Azure);
        a.refine("probe", Some(true), Some(true), None);
        assert!(!a.put_etag_is_md5 && !a.checks_content_md5, "never granted");
    }

    #[test]
    fn crc64_writes_only_where_the_catalog_or_a_probe_says_so() {
        for k in [Kind::S3, Kind::Gcs, Kind::Azure, Kind::Local, Kind::Memory] {
            assert!(!Capabilities::for_kind(k).checks_crc64nvme, "{k:?}");
        }
        let mut c = Capabilities::for_kind(Kind::S3);
        c.grant_crc64(Kind::S3, ("catalog aws", true), None);
        assert!(c.checks_crc64nvme);
        // A probe that saw it fail wins over the catalog.
        c.grant_crc64(Kind::S3, ("catalog aws", true), Some(("probe", false)));
        assert!(!c.checks_crc64nvme);
        // A probe that saw it work grants it where the catalog is silent.
        c.grant_crc64(Kind::S3, ("catalog onprem", false), Some(("probe", true)));
        assert!(c.checks_crc64nvme);
        let mut a = Capabilities::for_kind(Kind::Azure);
        a.grant_crc64(Kind::Azure, ("catalog", true), Some(("probe", true)));
        assert!(!a.checks_crc64nvme, "only S3 stores take the header");
    }
}
