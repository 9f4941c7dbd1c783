//! Rows of an inventory's data files, one at a time: CSV (gzipped or not, with a header row or
//! the manifest's column list) and Parquet (the `parquet` crate's record API, row group by row
//! group), each turned into a [`Row`] by the column names the three services use.

use super::InventoryError;
use super::manifest::{FileFormat, Manifest, Provider};
use std::io::Read;
use std::path::Path;

/// One object of an inventory, as the report states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The full key in the bucket (decoded; for Azure without the container's name).
    pub key: String,
    pub size: u64,
    /// The ETag as the store's own listing gives it (quoted), where the report has a comparable
    /// one: S3's `ETag`, Azure's `Etag`, GCS's `md5Hash` (the MD5 in hex is what the XML API's
    /// ETag of a non-composite object is; the JSON API `etag` column is not comparable).
    pub e_tag: Option<String>,
    pub class: Option<String>,
    /// When the object was last written, as the report states it (None: not in the report).
    pub modified: Option<chrono::DateTime<chrono::Utc>>,
    /// The container (Azure, from `Name`) or bucket (S3's `Bucket` column) the row is in.
    pub bucket: Option<String>,
}

/// What a row becomes: an object, or a line that is no object (a delete marker, a noncurrent
/// version, a snapshot, a deleted blob, a folder marker).
pub enum Read1 {
    Object(Row),
    Skipped,
}

/// Column positions, found once per file from its names (case-insensitive).
#[derive(Debug, Clone, Default)]
pub struct Columns {
    key: Option<usize>,
    size: Option<usize>,
    etag: Option<usize>,
    md5_b64: Option<usize>,
    class: Option<usize>,
    modified: Option<usize>,
    bucket: Option<usize>,
    /// Columns whose value `true` means "not a current object" (delete markers, deleted
    /// blobs, folders), and those whose `false` means the same (noncurrent versions).
    not_if_true: Vec<usize>,
    not_if_false: Vec<usize>,
    /// A non-empty value means a snapshot, not the base blob.
    snapshot: Option<usize>,
    provider: Option<Provider>,
}

impl Columns {
    pub fn of(names: &[String], provider: Provider) -> Columns {
        let find = |alts: &[&str]| {
            names
                .iter()
                .position(|n| alts.iter().any(|a| n.trim().eq_ignore_ascii_case(a)))
        };
        let all = |alts: &[&str]| -> Vec<usize> {
            names
                .iter()
                .enumerate()
                .filter(|(_, n)| alts.iter().any(|a| n.trim().eq_ignore_ascii_case(a)))
                .map(|(i, _)| i)
                .collect()
        };
        Columns {
            key: find(&["Key", "Name"]),
            size: find(&["Size", "Content-Length"]),
            etag: match provider {
                Provider::Gcs => None,
                _ => find(&["ETag", "e_tag"]),
            },
            md5_b64: match provider {
                Provider::Gcs => find(&["md5Hash"]),
                _ => None,
            },
            class: find(&["StorageClass", "storage_class", "AccessTier"]),
            modified: find(&[
                "LastModifiedDate",
                "last_modified_date",
                "Last-Modified",
                "updated",
            ]),
            bucket: find(&["Bucket"]),
            not_if_true: all(&[
                "IsDeleteMarker",
                "is_delete_marker",
                "Deleted",
                "hdi_isfolder",
            ]),
            not_if_false: all(&["IsLatest", "is_latest", "IsCurrentVersion"]),
            snapshot: find(&["Snapshot"]),
            provider: Some(provider),
        }
    }

    /// The key and size columns are there.
    pub fn check(&self, shown: &str) -> Result<(), InventoryError> {
        if self.key.is_none() || self.size.is_none() {
            return Err(InventoryError::Manifest {
                file: shown.to_string(),
                message: "the inventory has no key column (Key / Name / name) or no size column (Size / Content-Length / size): add them to the inventory configuration's fields".into(),
            });
        }
        Ok(())
    }

    /// A row from its values (`get(i)`: column i as text, None when missing).
    fn row<'a>(
        &self,
        get: impl Fn(usize) -> Option<&'a str>,
        url_encoded: bool,
    ) -> Result<Read1, String> {
        let val = |c: Option<usize>| c.and_then(&get).map(str::trim).unwrap_or("");
        let is = |i: &usize, v: &str| get(*i).is_some_and(|s| s.trim().eq_ignore_ascii_case(v));
        if self.not_if_true.iter().any(|i| is(i, "true"))
            || self.not_if_false.iter().any(|i| is(i, "false"))
            || !val(self.snapshot).is_empty()
        {
            return Ok(Read1::Skipped);
        }
        let raw_key = self.key.and_then(&get).ok_or("no key in this row")?;
        let size_s = val(self.size);
        if size_s.is_empty() {
            // S3 leaves Size empty for delete markers.
            return Ok(Read1::Skipped);
        }
        let size: u64 = size_s
            .parse()
            .map_err(|_| format!("size {size_s:?} is not a whole number of bytes >= 0"))?;
        let mut key = match url_encoded {
            true => percent_decoded(raw_key),
            false => raw_key.to_string(),
        };
        let mut bucket = Some(val(self.bucket))
            .filter(|b| !b.is_empty())
            .map(String::from);
        if self.provider == Some(Provider::Azure)
            && let Some((container, rest)) = key.split_once('/')
        {
            bucket = Some(container.to_string());
            key = rest.to_string();
        }
        if key.ends_with('/') && size == 0 {
            return Ok(Read1::Skipped);
        }
        let e_tag = match (self.etag, self.md5_b64) {
            (Some(_), _) => Some(val(self.etag)).filter(|e| !e.is_empty()).map(quoted),
            (None, Some(_)) => md5_hex(val(self.md5_b64)).map(|h| quoted(&h)),
            _ => None,
        };
        Ok(Read1::Object(Row {
            key,
            size,
            e_tag,
            class: Some(val(self.class))
                .filter(|c| !c.is_empty())
                .map(String::from),
            modified: parse_time(val(self.modified)),
            bucket,
        }))
    }
}

/// RFC 3339 (S3 CSV, GCS), RFC 1123, or milliseconds since 1970 (Parquet's timestamp_millis).
fn parse_time(t: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    use chrono::{DateTime, Utc};
    if t.is_empty() {
        return None;
    }
    if let Ok(ms) = t.parse::<i64>() {
        return DateTime::<Utc>::from_timestamp_millis(ms);
    }
    DateTime::parse_from_rfc3339(t)
        .or_else(|_| DateTime::parse_from_rfc2822(t))
        .ok()
        .map(|d| d.with_timezone(&Utc))
}

fn quoted(e: &str) -> String {
    let e = e.trim().trim_matches('"');
    format!("\"{e}\"")
}

/// GCS's base64 `md5Hash` as hex.
fn md5_hex(b64: &str) -> Option<String> {
    use base64::Engine;
    let raw = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    (raw.len() == 16).then(|| crate::checksum::hex(&raw))
}

/// `%XX` escapes decoded (S3 Inventory writes CSV keys URL-encoded: "When using the CSV file
/// format, the key name is URL-encoded and must be decoded before you can use it"); anything
/// that does not decode to UTF-8 is kept as written.
pub fn percent_decoded(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

/// Every row of one data file (a local file: downloaded first when it is on a store) handed to
/// `each` in the file's order; `shown` names it in errors.
pub fn read_file(
    path: &Path,
    shown: &str,
    m: &Manifest,
    each: &mut dyn FnMut(Row) -> Result<(), InventoryError>,
) -> Result<u64, InventoryError> {
    match m.format {
        FileFormat::Csv => read_csv(path, shown, m, each),
        FileFormat::Parquet => read_parquet(path, shown, m, each),
    }
}

fn io_err(shown: &str, e: impl std::fmt::Display) -> InventoryError {
    InventoryError::Data {
        file: shown.to_string(),
        line: None,
        message: e.to_string(),
    }
}

fn read_csv(
    path: &Path,
    shown: &str,
    m: &Manifest,
    each: &mut dyn FnMut(Row) -> Result<(), InventoryError>,
) -> Result<u64, InventoryError> {
    let mut f = std::fs::File::open(path).map_err(|e| io_err(shown, e))?;
    let mut magic = [0u8; 2];
    let gz = f.read_exact(&mut magic).is_ok() && magic == [0x1f, 0x8b];
    drop(f);
    let f = std::fs::File::open(path).map_err(|e| io_err(shown, e))?;
    let f = std::io::BufReader::with_capacity(1 << 20, f);
    let reader: Box<dyn Read> = match gz {
        true => Box::new(flate2::read::MultiGzDecoder::new(f)),
        false => Box::new(f),
    };
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(m.delimiter)
        .from_reader(reader);
    let mut cols = m.columns.as_ref().map(|c| Columns::of(c, m.provider));
    let url_encoded = m.provider == Provider::S3;
    let mut record = csv::StringRecord::new();
    let mut skipped = 0;
    loop {
        match rdr.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                return Err(InventoryError::Data {
                    file: shown.to_string(),
                    line: e.position().map(|p| p.line()),
                    message: format!("not valid CSV: {e}"),
                });
            }
        }
        if record.len() == 1 && record[0].trim().is_empty() {
            continue;
        }
        let Some(c) = &cols else {
            let names: Vec<String> = record.iter().map(str::to_string).collect();
            let c = Columns::of(&names, m.provider);
            c.check(shown)?;
            cols = Some(c);
            continue;
        };
        let line = record.position().map(|p| p.line());
        match c.row(|i| record.get(i), url_encoded) {
            Ok(Read1::Object(r)) => each(r)?,
            Ok(Read1::Skipped) => skipped += 1,
            Err(message) => {
                return Err(InventoryError::Data {
                    file: shown.to_string(),
                    line,
                    message,
                });
            }
        }
    }
    Ok(skipped)
}

fn read_parquet(
    path: &Path,
    shown: &str,
    m: &Manifest,
    each: &mut dyn FnMut(Row) -> Result<(), InventoryError>,
) -> Result<u64, InventoryError> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    let f = std::fs::File::open(path).map_err(|e| io_err(shown, e))?;
    let reader = SerializedFileReader::new(f)
        .map_err(|e| io_err(shown, format!("not a Parquet file: {e}")))?;
    let names: Vec<String> = reader
        .metadata()
        .file_metadata()
        .schema_descr()
        .root_schema()
        .get_fields()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    let cols = Columns::of(&names, m.provider);
    cols.check(shown)?;
    let mut skipped = 0;
    let mut text: Vec<String> = vec![String::new(); names.len()];
    let mut present: Vec<bool> = vec![false; names.len()];
    for (n, row) in reader
        .get_row_iter(None)
        .map_err(|e| io_err(shown, e))?
        .enumerate()
    {
        let row = row.map_err(|e| io_err(shown, format!("row {}: {e}", n + 1)))?;
        for (i, (_, field)) in row.get_column_iter().enumerate().take(names.len()) {
            let t = &mut text[i];
            t.clear();
            present[i] = true;
            use std::fmt::Write;
            match field {
                Field::Str(s) => t.push_str(s),
                Field::Null => present[i] = false,
                Field::Bool(b) => t.push_str(if *b { "true" } else { "false" }),
                Field::Bytes(b) => t.push_str(&String::from_utf8_lossy(b.data())),
                Field::TimestampMillis(v) => write!(t, "{v}").expect("a String takes writes"),
                Field::TimestampMicros(v) => {
                    write!(t, "{}", v / 1000).expect("a String takes writes")
                }
                Field::Long(v) => write!(t, "{v}").expect("a String takes writes"),
                Field::Int(v) => write!(t, "{v}").expect("a String takes writes"),
                Field::ULong(v) => write!(t, "{v}").expect("a String takes writes"),
                Field::UInt(v) => write!(t, "{v}").expect("a String takes writes"),
                other => write!(t, "{other}").expect("a String takes writes"),
            }
        }
        let got = |i: usize| {
            present
                .get(i)
                .copied()
                .unwrap_or(false)
                .then(|| text[i].as_str())
        };
        match cols.row(got, false) {
            Ok(Read1::Object(r)) => each(r)?,
            Ok(Read1::Skipped) => skipped += 1,
            Err(message) => {
                return Err(InventoryError::Data {
                    file: shown.to_string(),
                    line: Some(n as u64 + 1),
                    message,
                });
            }
        }
    }
    Ok(skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_csv_keys_are_url_decoded_and_delete_markers_skipped() {
        let names: Vec<String> = ["Bucket", "Key", "Size", "ETag", "IsDeleteMarker"]
            .map(String::from)
            .to_vec();
        let c = Columns::of(&names, Provider::S3);
        let vals = ["b", "a%20b%2Fc", "5", "abc", "false"];
        let Ok(Read1::Object(r)) = c.row(|i| vals.get(i).copied(), true) else {
            panic!("an object")
        };
        assert_eq!(
            (r.key.as_str(), r.size, r.e_tag.as_deref()),
            ("a b/c", 5, Some("\"abc\""))
        );
        let marker = ["b", "x", "", "", "true"];
        assert!(matches!(
            c.row(|i| marker.get(i).copied(), true),
            Ok(Read1::Skipped)
        ));
    }

    #[test]
    fn azure_names_lose_their_container_and_gcs_md5_becomes_the_etag() {
        let names: Vec<String> = ["Name", "Content-Length", "Etag"]
            .map(String::from)
            .to_vec();
        let c = Columns::of(&names, Provider::Azure);
        let vals = ["cont/dir/f", "7", "0x8D1"];
        let Ok(Read1::Object(r)) = c.row(|i| vals.get(i).copied(), false) else {
            panic!()
        };
        assert_eq!(
            (r.bucket.as_deref(), r.key.as_str()),
            (Some("cont"), "dir/f")
        );
        assert_eq!(r.e_tag.as_deref(), Some("\"0x8D1\""));
        let names: Vec<String> = ["name", "size", "etag", "md5Hash"]
            .map(String::from)
            .to_vec();
        let c = Columns::of(&names, Provider::Gcs);
        // MD5 of the empty string.
        let vals = ["k", "0", "CJj8", "1B2M2Y8AsgTpgAmY7PhCfg=="];
        let Ok(Read1::Object(r)) = c.row(|i| vals.get(i).copied(), false) else {
            panic!()
        };
        assert_eq!(
            r.e_tag.as_deref(),
            Some("\"d41d8cd98f00b204e9800998ecf8427e\"")
        );
    }
}
