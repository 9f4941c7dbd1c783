//! What is being moved: a size histogram of the corpus, built from `--bytes/--objects` (and an
//! optional profile) or streamed from an inventory file in constant memory.
//!
//! Objects are grouped by source storage class and by size in 1/8-octave buckets (sizes within a
//! bucket differ by at most 9 %). Each bucket keeps the exact object count and exact byte total, so
//! totals are exact; per-object rules (part counts, minimum billable size) use the bucket's mean.

use crate::units::parse_count;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeBucket {
    /// Source storage class from an inventory (None: the class given with `--from`).
    pub class: Option<String>,
    pub count: u64,
    pub bytes: u64,
}

impl SizeBucket {
    /// The size each object in this bucket is assumed to have (floor of the mean) and how many
    /// objects are one byte larger, so that `count` objects add up to exactly `bytes`.
    pub fn split(&self) -> [(u64, u64); 2] {
        if self.count == 0 {
            return [(0, 0), (0, 0)];
        }
        let q = self.bytes / self.count;
        let r = self.bytes % self.count;
        [(self.count - r, q), (r, q + 1)]
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corpus {
    pub buckets: Vec<SizeBucket>,
    /// Where the numbers came from, for the report: `flags` or `inventory FILE`.
    pub origin: String,
    /// Inventory lines skipped (directory markers) — reported, never silently dropped.
    pub skipped_lines: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("{0}")]
    Flags(String),
    #[error("{file}:{line}: {message}")]
    Inventory {
        file: String,
        line: u64,
        message: String,
    },
    #[error("{file}: {message}")]
    Io { file: String, message: String },
}

impl Corpus {
    pub fn total_bytes(&self) -> u64 {
        self.buckets.iter().map(|b| b.bytes).sum()
    }

    pub fn total_objects(&self) -> u64 {
        self.buckets.iter().map(|b| b.count).sum()
    }

    /// `--bytes` and `--objects`, optionally shaped by a profile such as
    /// `70%:256KiB,25%:64MiB,5%:4GiB` (shares of the object count, with a typical size each).
    pub fn from_flags(
        bytes: Option<&str>,
        objects: Option<&str>,
        profile: Option<&str>,
    ) -> Result<Corpus, CorpusError> {
        let flag = |name: &str, r: Result<u64, String>| {
            r.map_err(|e| CorpusError::Flags(format!("{name}: {e}")))
        };
        let bytes = bytes.map(|b| flag("--bytes", parse_size(b))).transpose()?;
        let objects = objects
            .map(|o| flag("--objects", parse_count(o)))
            .transpose()?;
        let buckets = match (profile, bytes, objects) {
            (None, Some(b), Some(o)) => {
                if o == 0 && b > 0 {
                    return Err(CorpusError::Flags(
                        "--objects 0 with --bytes above zero: a corpus with bytes has objects"
                            .into(),
                    ));
                }
                vec![SizeBucket {
                    class: None,
                    count: o,
                    bytes: b,
                }]
            }
            (None, _, _) => {
                return Err(CorpusError::Flags(
                    "say what to move: --bytes and --objects (e.g. --bytes 2PB --objects 40M), or --inventory FILE"
                        .into(),
                ));
            }
            (Some(p), b, Some(o)) => profile_buckets(p, o, b)?,
            (Some(_), _, None) => {
                return Err(CorpusError::Flags(
                    "--profile needs --objects (the profile gives shares of the object count)"
                        .into(),
                ));
            }
        };
        Ok(Corpus {
            buckets,
            origin: "flags".into(),
            skipped_lines: 0,
        })
    }

    /// Stream an inventory: CSV (`key,size[,storage_class]`, with or without that header line),
    /// S3 Inventory CSV (give its column list from the manifest's `fileSchema`), or JSON lines
    /// (`{"key": "...", "size": 123, "storage_class": "STANDARD"}`). Memory stays constant.
    pub fn from_inventory(path: &Path, format: InventoryFormat) -> Result<Corpus, CorpusError> {
        Self::from_inventory_keys(path, format, None)
    }

    /// As [`Corpus::from_inventory`], handing every object's key (decoded) and size to `on_key`
    /// as it streams by (the shard split of `plan --shards`).
    pub fn from_inventory_keys(
        path: &Path,
        format: InventoryFormat,
        on_key: Option<KeySink>,
    ) -> Result<Corpus, CorpusError> {
        let shown = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|e| CorpusError::Io {
            file: shown.clone(),
            message: format!("cannot open the inventory: {e}"),
        })?;
        let reader = std::io::BufReader::with_capacity(1 << 20, file);
        let mut hist = Histogram {
            sink: on_key,
            ..Default::default()
        };
        let format = match format {
            InventoryFormat::Auto => {
                if shown.ends_with(".jsonl")
                    || shown.ends_with(".ndjson")
                    || shown.ends_with(".json")
                {
                    InventoryFormat::JsonLines
                } else {
                    InventoryFormat::Csv
                }
            }
            f => f,
        };
        match format {
            InventoryFormat::JsonLines => read_jsonl(reader, &shown, &mut hist)?,
            InventoryFormat::Csv => read_csv(reader, &shown, None, &mut hist)?,
            InventoryFormat::S3Inventory(cols) => read_csv(reader, &shown, Some(cols), &mut hist)?,
            InventoryFormat::Auto => unreachable!(),
        }
        if hist.objects == 0 {
            return Err(CorpusError::Io {
                file: shown,
                message: "the inventory lists no objects".into(),
            });
        }
        let skipped_lines = hist.skipped;
        Ok(Corpus {
            buckets: hist.into_buckets(),
            origin: format!("inventory {shown}"),
            skipped_lines,
        })
    }
}

/// A corpus built one object at a time (a live listing), in constant memory: only the size
/// histogram is kept.
#[derive(Default)]
pub struct CorpusBuilder {
    hist: Histogram,
    bytes: u64,
}

impl CorpusBuilder {
    pub fn add(&mut self, size: u64, class: Option<&str>) {
        self.hist.add("", size, class);
        self.bytes = self.bytes.saturating_add(size);
    }

    pub fn objects(&self) -> u64 {
        self.hist.objects
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The corpus, or an error if nothing was added.
    pub fn finish(self, origin: String) -> Result<Corpus, CorpusError> {
        if self.hist.objects == 0 {
            return Err(CorpusError::Io {
                file: origin,
                message: "the listing found no objects".into(),
            });
        }
        Ok(Corpus {
            buckets: self.hist.into_buckets(),
            origin,
            skipped_lines: 0,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InventoryFormat {
    Auto,
    Csv,
    JsonLines,
    /// S3 Inventory CSV: no header; the column names in order (e.g.
    /// `Bucket,Key,Size,LastModifiedDate,ETag,StorageClass`), keys URL-encoded.
    S3Inventory(Vec<String>),
}

fn profile_buckets(
    p: &str,
    objects: u64,
    bytes: Option<u64>,
) -> Result<Vec<SizeBucket>, CorpusError> {
    let bad = |m: String| CorpusError::Flags(format!("--profile {p:?}: {m}"));
    let mut parts = Vec::new();
    let mut share_sum = rust_decimal::Decimal::ZERO;
    for item in p.split(',') {
        let (share, size) = item
            .split_once(':')
            .ok_or_else(|| bad(format!("{item:?} should look like 70%:256KiB")))?;
        let share = share.trim().trim_end_matches('%');
        let share: rust_decimal::Decimal = share
            .parse()
            .map_err(|_| bad(format!("{share:?} is not a percentage")))?;
        if share <= rust_decimal::Decimal::ZERO {
            return Err(bad(format!("share {share}% must be above zero")));
        }
        let size = parse_size(size).map_err(bad)?;
        share_sum += share;
        parts.push((share, size));
    }
    if share_sum != rust_decimal::Decimal::from(100) {
        return Err(bad(format!("the shares add up to {share_sum}%, not 100%")));
    }
    use rust_decimal::prelude::ToPrimitive;
    let mut counts: Vec<u64> = parts
        .iter()
        .map(|(s, _)| {
            (rust_decimal::Decimal::from(objects) * s / rust_decimal::Decimal::from(100))
                .floor()
                .to_u64()
                .unwrap_or(0)
        })
        .collect();
    let assigned: u64 = counts.iter().sum();
    counts[0] += objects - assigned;
    let raw: u128 = parts
        .iter()
        .zip(&counts)
        .map(|((_, size), c)| u128::from(*size) * u128::from(*c))
        .sum();
    let mut buckets: Vec<SizeBucket> = parts
        .iter()
        .zip(&counts)
        .map(|((_, size), c)| SizeBucket {
            class: None,
            count: *c,
            bytes: size * c,
        })
        .collect();
    if let Some(target) = bytes {
        // Scale every size so the total matches --bytes exactly.
        if raw == 0 {
            return Err(bad(
                "every size is zero, so it cannot be scaled to --bytes".into()
            ));
        }
        let mut left = target;
        let n = buckets.len();
        for (i, b) in buckets.iter_mut().enumerate() {
            b.bytes = if i + 1 == n {
                left
            } else {
                (u128::from(b.bytes) * u128::from(target) / raw) as u64
            };
            left -= b.bytes;
        }
    }
    Ok(buckets.into_iter().filter(|b| b.count > 0).collect())
}

/// Receives each object's key and size while a corpus is read.
pub type KeySink = Box<dyn FnMut(&str, u64)>;

#[derive(Default)]
struct Histogram {
    map: BTreeMap<(Option<String>, u32), (u64, u64)>,
    objects: u64,
    skipped: u64,
    sink: Option<KeySink>,
}

impl Histogram {
    fn add(&mut self, key: &str, size: u64, class: Option<&str>) {
        if let Some(f) = &mut self.sink {
            f(key, size);
        }
        let class = class.filter(|c| !c.is_empty()).map(str::to_string);
        let e = self.map.entry((class, bucket_of(size))).or_insert((0, 0));
        e.0 += 1;
        e.1 += size;
        self.objects += 1;
    }

    fn into_buckets(self) -> Vec<SizeBucket> {
        self.map
            .into_iter()
            .map(|((class, _), (count, bytes))| SizeBucket {
                class,
                count,
                bytes,
            })
            .collect()
    }
}

/// 1/8-octave bucket index: sizes in one bucket differ by less than 2^(1/8) ≈ 1.09.
fn bucket_of(size: u64) -> u32 {
    if size < 16 {
        return size as u32;
    }
    let lg = 63 - size.leading_zeros();
    let frac = ((size >> (lg - 3)) & 0b111) as u32;
    16 + (lg - 4) * 8 + frac
}

fn read_jsonl(reader: impl BufRead, shown: &str, hist: &mut Histogram) -> Result<(), CorpusError> {
    #[derive(Deserialize)]
    struct Line {
        key: String,
        size: serde_json::Value,
        #[serde(default)]
        storage_class: Option<String>,
    }
    for (i, line) in reader.lines().enumerate() {
        let n = i as u64 + 1;
        let err = |message: String| CorpusError::Inventory {
            file: shown.to_string(),
            line: n,
            message,
        };
        let line = line.map_err(|e| err(format!("cannot read: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let l: Line = serde_json::from_str(&line)
            .map_err(|e| err(format!("not a JSON object with \"key\" and \"size\": {e}")))?;
        let size = match &l.size {
            serde_json::Value::Number(num) => num
                .as_u64()
                .ok_or_else(|| err(format!("size {num} is not a whole number of bytes >= 0")))?,
            serde_json::Value::String(s) => s
                .parse::<u64>()
                .map_err(|_| err(format!("size {s:?} is not a whole number of bytes >= 0")))?,
            other => return Err(err(format!("size {other} is not a number"))),
        };
        if l.key.ends_with('/') && size == 0 {
            hist.skipped += 1;
            continue;
        }
        hist.add(&l.key, size, l.storage_class.as_deref());
    }
    Ok(())
}

fn read_csv(
    reader: impl std::io::Read,
    shown: &str,
    columns: Option<Vec<String>>,
    hist: &mut Histogram,
) -> Result<(), CorpusError> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(reader);
    let find = |cols: &[String], name: &str| cols.iter().position(|c| c.eq_ignore_ascii_case(name));
    // (key, size, class) column indexes; decided by the S3 column list, a header, or the default.
    let mut layout: Option<(usize, usize, Option<usize>)> = columns.as_ref().map(|cols| {
        (
            find(cols, "Key").unwrap_or(1),
            find(cols, "Size").unwrap_or(2),
            find(cols, "StorageClass"),
        )
    });
    if let Some(cols) = &columns
        && (find(cols, "Key").is_none() || find(cols, "Size").is_none())
    {
        return Err(CorpusError::Io {
            file: shown.to_string(),
            message: format!(
                "the S3 Inventory column list {cols:?} must include Key and Size (copy it from manifest.json fileSchema)"
            ),
        });
    }
    let mut record = csv::StringRecord::new();
    loop {
        let next_line = rdr.position().line();
        match rdr.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                let line = e.position().map(|p| p.line()).unwrap_or(next_line);
                return Err(CorpusError::Inventory {
                    file: shown.to_string(),
                    line,
                    message: format!("not valid CSV: {e}"),
                });
            }
        }
        let line = record.position().map(|p| p.line()).unwrap_or(next_line);
        let err = |message: String| CorpusError::Inventory {
            file: shown.to_string(),
            line,
            message,
        };
        if record.len() == 1 && record[0].trim().is_empty() {
            continue;
        }
        let (ki, si, ci) = match layout {
            Some(l) => l,
            None => {
                let header: Vec<String> = record.iter().map(|s| s.trim().to_string()).collect();
                if find(&header, "key").is_some() && find(&header, "size").is_some() {
                    layout = Some((
                        find(&header, "key").unwrap(),
                        find(&header, "size").unwrap(),
                        find(&header, "storage_class").or_else(|| find(&header, "storageclass")),
                    ));
                    continue;
                }
                layout = Some((0, 1, (record.len() > 2).then_some(2)));
                layout.unwrap()
            }
        };
        let key = record.get(ki).ok_or_else(|| {
            err(format!(
                "has {} columns; the key should be in column {}",
                record.len(),
                ki + 1
            ))
        })?;
        let size_s = record
            .get(si)
            .ok_or_else(|| {
                err(format!(
                    "has {} columns; the size should be in column {}",
                    record.len(),
                    si + 1
                ))
            })?
            .trim();
        if size_s.is_empty() && columns.is_some() {
            // S3 Inventory leaves Size empty for delete markers.
            hist.skipped += 1;
            continue;
        }
        let size: u64 = size_s.parse().map_err(|_| {
            err(format!(
                "size {size_s:?} is not a whole number of bytes >= 0"
            ))
        })?;
        if key.ends_with('/') && size == 0 {
            hist.skipped += 1;
            continue;
        }
        // S3 Inventory keys are URL-encoded.
        let key = if columns.is_some() {
            crate::inventory::rows::percent_decoded(key)
        } else {
            key.to_string()
        };
        hist.add(&key, size, ci.and_then(|c| record.get(c)).map(str::trim));
    }
    Ok(())
}

/// A size given to `plan` (`--bytes`, profile sizes, part sizes): as [`crate::units::parse_bytes`],
/// but a lowercase `b` after a prefix (`2Pb`, `64Mib`) is refused as ambiguous: the plan's rate
/// flags read it as bits (`10Gbps`), a size means bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let unit = t.trim_start_matches(|c: char| c.is_ascii_digit() || matches!(c, '.' | '_' | ','));
    let unit = unit.trim();
    if unit.len() > 1 && unit.ends_with('b') {
        let prefix = &unit[..unit.len() - 1];
        return Err(format!(
            "{t:?}: a lowercase b means bits (as in 10Gbps); for a size write {n}{u}B (bytes, powers of 1000) or {n}{u}iB (powers of 1024)",
            n = &t[..t.len() - unit.len()].trim(),
            u = prefix.trim_end_matches('i').to_ascii_uppercase(),
        ));
    }
    crate::units::parse_bytes(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write(text: &str, ext: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::Builder::new().suffix(ext).tempfile().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    #[test]
    fn flags_keep_totals_exact() {
        let c = Corpus::from_flags(Some("2PB"), Some("40M"), None).unwrap();
        assert_eq!(c.total_bytes(), 2_000_000_000_000_000);
        assert_eq!(c.total_objects(), 40_000_000);
        let [(n1, s1), (n2, s2)] = c.buckets[0].split();
        assert_eq!(n1 * s1 + n2 * s2, 2_000_000_000_000_000);
    }

    #[test]
    fn profile_scales_to_bytes() {
        let c = Corpus::from_flags(Some("1TB"), Some("1000"), Some("90%:1MB,10%:1GB")).unwrap();
        assert_eq!(c.total_objects(), 1000);
        assert_eq!(c.total_bytes(), 1_000_000_000_000);
        assert_eq!(c.buckets[0].count, 900);
        assert!(Corpus::from_flags(None, Some("10"), Some("50%:1MB,40%:1GB")).is_err());
    }

    #[test]
    fn csv_with_header_and_classes() {
        let f = write(
            "key,size,storage_class\na,10,STANDARD\nb,20,GLACIER\n",
            ".csv",
        );
        let c = Corpus::from_inventory(f.path(), InventoryFormat::Auto).unwrap();
        assert_eq!((c.total_objects(), c.total_bytes()), (2, 30));
        assert!(
            c.buckets
                .iter()
                .any(|b| b.class.as_deref() == Some("GLACIER"))
        );
    }

    #[test]
    fn csv_without_header() {
        let f = write("a,10\n\"b,with comma\",5\n", ".csv");
        let c = Corpus::from_inventory(f.path(), InventoryFormat::Auto).unwrap();
        assert_eq!((c.total_objects(), c.total_bytes()), (2, 15));
    }

    #[test]
    fn s3_inventory_columns() {
        let f = write(
            "\"bkt\",\"a%20b\",\"100\",\"2026-01-01T00:00:00.000Z\",\"etag\",\"STANDARD_IA\"\n\"bkt\",\"dir/\",\"0\",\"x\",\"e\",\"STANDARD\"\n",
            ".csv",
        );
        let cols = "Bucket,Key,Size,LastModifiedDate,ETag,StorageClass"
            .split(',')
            .map(String::from)
            .collect();
        let c = Corpus::from_inventory(f.path(), InventoryFormat::S3Inventory(cols)).unwrap();
        assert_eq!(
            (c.total_objects(), c.total_bytes(), c.skipped_lines),
            (1, 100, 1)
        );
        assert_eq!(c.buckets[0].class.as_deref(), Some("STANDARD_IA"));
    }

    #[test]
    fn malformed_lines_name_their_line() {
        let f = write("key,size\na,10\nb,ten\n", ".csv");
        let e = Corpus::from_inventory(f.path(), InventoryFormat::Auto)
            .unwrap_err()
            .to_string();
        assert!(e.contains(":3:") && e.contains("\"ten\""), "{e}");
        let f = write(
            "{\"key\":\"a\",\"size\":1}\n{\"key\":\"b\",\"size\":-4}\n",
            ".jsonl",
        );
        let e = Corpus::from_inventory(f.path(), InventoryFormat::Auto)
            .unwrap_err()
            .to_string();
        assert!(e.contains(":2:"), "{e}");
    }

    #[test]
    fn buckets_are_narrow() {
        for s in [100u64, 1000, 65_536, 1 << 30, 5_000_000_000] {
            let b = bucket_of(s);
            assert!(bucket_of(s + s / 20).saturating_sub(b) <= 1);
        }
        assert!(bucket_of(64 << 20) != bucket_of(128 << 20));
    }
}
