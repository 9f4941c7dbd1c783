//! An inventory report's manifest: which service wrote it, in which format, and which data files
//! it names. Recognised by its fields (never by the file name alone):
//!
//! - **S3 Inventory** (`manifest.json`; docs.aws.amazon.com/AmazonS3/latest/userguide/
//!   storage-inventory-location.html): `sourceBucket`, `destinationBucket` (an ARN),
//!   `fileFormat` (`CSV`, `ORC` or `Parquet`), `fileSchema` (CSV: the column names in order,
//!   e.g. `Bucket, Key, Size, LastModifiedDate, ETag, StorageClass`; Parquet: a message schema)
//!   and `files[]` of `{key, size, MD5checksum}`, each `key` a key in the destination bucket.
//!   CSV files are gzipped, have no header line, and their keys are URL-encoded.
//! - **Azure Blob Inventory** (`<ruleName>-manifest.json`; learn.microsoft.com/azure/storage/
//!   blobs/blob-inventory, "Inventory files"): `destinationContainer`, `files[]` of `{blob,
//!   size}` (blob names in that container), `ruleDefinition.format` (`csv` or `parquet`),
//!   `ruleDefinition.schemaFields` (`Name`, `Content-Length`, `Etag`, `Content-MD5`, …),
//!   `status` (`Succeeded` once complete). CSV files start with a header row; `Name` begins with
//!   the container's name; rows are in no particular order and may repeat.
//! - **GCS Storage Insights inventory reports** (`<config>_<snapshot>_manifest.json`;
//!   cloud.google.com/storage/docs/insights/inventory-reports): `report_config` (with
//!   `csv_options` {`delimiter`, `record_separator`, `header_required`} or `parquet_options`,
//!   and `object_metadata_report_options.metadata_fields`), `records_processed`, `shard_count`
//!   and `report_shards_file_names` (the shards, beside the manifest). Columns are the metadata
//!   field names (`name`, `size`, `etag`, `md5Hash`, `crc32c`, `storageClass`, …).

use super::InventoryError;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    S3,
    Azure,
    Gcs,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::S3 => "S3 Inventory",
            Provider::Azure => "Azure Blob Inventory",
            Provider::Gcs => "GCS inventory report",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    Csv,
    Parquet,
}

/// Where a data file named by a manifest is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileRef {
    /// A key from the root of the bucket or container the manifest is in.
    FromRoot(String),
    /// A name beside the manifest.
    Beside(String),
}

impl FileRef {
    pub fn name(&self) -> &str {
        match self {
            FileRef::FromRoot(k) | FileRef::Beside(k) => k,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Manifest {
    pub provider: Provider,
    pub format: FileFormat,
    /// The bucket (S3) or container (Azure: found in each row's `Name`) the inventory lists,
    /// when the manifest says.
    pub source_bucket: Option<String>,
    pub files: Vec<FileRef>,
    /// Column names when the data files have no header row (S3 CSV, GCS CSV without
    /// `header_required`).
    pub columns: Option<Vec<String>>,
    pub delimiter: u8,
}

impl Manifest {
    /// The manifest in `text` (read from `shown`).
    pub fn parse(text: &str, shown: &str) -> Result<Manifest, InventoryError> {
        let bad = |m: String| InventoryError::Manifest {
            file: shown.to_string(),
            message: m,
        };
        let v: Value =
            serde_json::from_str(text).map_err(|e| bad(format!("not valid JSON: {e}")))?;
        let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        if v.get("fileSchema").is_some() && v.get("files").is_some() {
            return s3(&v, &bad);
        }
        if v.get("destinationContainer").is_some() || v.get("ruleDefinition").is_some() {
            if let Some(st) = s(&v, "status")
                && st != "Succeeded"
            {
                return Err(bad(format!(
                    "the Azure inventory run's status is {st:?}, not \"Succeeded\": its files may be incomplete; wait for the run to finish or take an earlier report"
                )));
            }
            return azure(&v, &bad);
        }
        if v.get("report_shards_file_names").is_some() {
            return gcs(&v, &bad);
        }
        Err(bad(
            "not an inventory manifest: expected an S3 Inventory manifest.json (fileSchema, files), an Azure Blob Inventory <rule>-manifest.json (destinationContainer, files, ruleDefinition) or a GCS inventory report manifest (report_shards_file_names)".into(),
        ))
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn s3(v: &Value, bad: &dyn Fn(String) -> InventoryError) -> Result<Manifest, InventoryError> {
    let format = match v.get("fileFormat").and_then(Value::as_str).unwrap_or("CSV") {
        f if f.eq_ignore_ascii_case("csv") => FileFormat::Csv,
        f if f.eq_ignore_ascii_case("parquet") => FileFormat::Parquet,
        other => {
            return Err(bad(format!(
                "S3 Inventory fileFormat {other:?}: moverctl reads CSV and Parquet inventories (set the inventory configuration's format to one of them)"
            )));
        }
    };
    let schema = v.get("fileSchema").and_then(Value::as_str).unwrap_or("");
    let columns = (format == FileFormat::Csv).then(|| {
        schema
            .split(',')
            .map(|c| c.trim().to_string())
            .collect::<Vec<_>>()
    });
    let files: Vec<FileRef> = v
        .get("files")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| f.get("key").and_then(Value::as_str))
                .map(|k| FileRef::FromRoot(k.to_string()))
                .collect()
        })
        .unwrap_or_default();
    if files.is_empty() {
        return Err(bad("the S3 Inventory manifest names no files".into()));
    }
    Ok(Manifest {
        provider: Provider::S3,
        format,
        source_bucket: v
            .get("sourceBucket")
            .and_then(Value::as_str)
            .map(str::to_string),
        files,
        columns,
        delimiter: b',',
    })
}

fn azure(v: &Value, bad: &dyn Fn(String) -> InventoryError) -> Result<Manifest, InventoryError> {
    let def = v.get("ruleDefinition");
    if let Some(t) = def
        .and_then(|d| d.get("objectType"))
        .and_then(Value::as_str)
        && t != "blob"
    {
        return Err(bad(format!(
            "the Azure inventory rule lists {t:?} objects; an inventory of blobs is needed"
        )));
    }
    let format = match def
        .and_then(|d| d.get("format"))
        .and_then(Value::as_str)
        .unwrap_or("csv")
    {
        f if f.eq_ignore_ascii_case("csv") => FileFormat::Csv,
        f if f.eq_ignore_ascii_case("parquet") => FileFormat::Parquet,
        other => return Err(bad(format!("Azure inventory format {other:?}"))),
    };
    let files: Vec<FileRef> = v
        .get("files")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| f.get("blob").and_then(Value::as_str))
                .map(|k| FileRef::FromRoot(k.to_string()))
                .collect()
        })
        .unwrap_or_default();
    if files.is_empty() {
        return Err(bad("the Azure inventory manifest names no files".into()));
    }
    Ok(Manifest {
        provider: Provider::Azure,
        format,
        source_bucket: None,
        files,
        columns: None,
        delimiter: b',',
    })
}

fn gcs(v: &Value, bad: &dyn Fn(String) -> InventoryError) -> Result<Manifest, InventoryError> {
    let cfg = v.get("report_config");
    let csv = cfg.and_then(|c| c.get("csv_options"));
    let files: Vec<FileRef> = strings(v.get("report_shards_file_names"))
        .into_iter()
        .map(FileRef::Beside)
        .collect();
    if files.is_empty() {
        return Err(bad("the GCS inventory manifest names no shards".into()));
    }
    let parquet = cfg.and_then(|c| c.get("parquet_options")).is_some()
        || files.iter().all(|f| f.name().ends_with(".parquet"));
    let fields = strings(
        cfg.and_then(|c| c.get("object_metadata_report_options"))
            .and_then(|o| o.get("metadata_fields")),
    );
    // header_required defaults to true in the service's configuration.
    let header = csv
        .and_then(|c| c.get("header_required"))
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let delimiter = csv
        .and_then(|c| c.get("delimiter"))
        .and_then(Value::as_str)
        .and_then(|d| d.bytes().next())
        .unwrap_or(b',');
    if !parquet && !header && fields.is_empty() {
        return Err(bad(
            "the GCS report's CSV files have no header row and the manifest lists no metadata_fields: the columns cannot be named".into(),
        ));
    }
    Ok(Manifest {
        provider: Provider::Gcs,
        format: if parquet {
            FileFormat::Parquet
        } else {
            FileFormat::Csv
        },
        // The report names its source bucket only in the configuration's resource name.
        source_bucket: None,
        files,
        columns: (!parquet && !header).then_some(fields),
        delimiter,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_services_manifest_is_recognised_by_its_fields() {
        let s3 = r#"{"sourceBucket":"src","destinationBucket":"arn:aws:s3:::inv","version":"2016-11-30",
            "fileFormat":"CSV","fileSchema":"Bucket, Key, Size, ETag",
            "files":[{"key":"inv/src/cfg/data/a.csv.gz","size":10,"MD5checksum":"x"}]}"#;
        let m = Manifest::parse(s3, "m").unwrap();
        assert_eq!(m.provider, Provider::S3);
        assert_eq!(m.columns.unwrap(), ["Bucket", "Key", "Size", "ETag"]);
        assert_eq!(m.source_bucket.as_deref(), Some("src"));
        let az = r#"{"destinationContainer":"inv","files":[{"blob":"2026/01/01/r/r.parquet","size":1}],
            "ruleDefinition":{"format":"parquet","objectType":"blob","schemaFields":["Name","Content-Length"]},
            "status":"Succeeded"}"#;
        let m = Manifest::parse(az, "m").unwrap();
        assert_eq!(
            (m.provider, m.format),
            (Provider::Azure, FileFormat::Parquet)
        );
        let pending = az.replace("Succeeded", "Pending");
        assert!(Manifest::parse(&pending, "m").is_err());
        let gcs = r#"{"report_config":{"csv_options":{"delimiter":",","header_required":true}},
            "records_processed":3,"shard_count":1,"report_shards_file_names":["c_2026_0.csv"]}"#;
        let m = Manifest::parse(gcs, "m").unwrap();
        assert_eq!((m.provider, m.format), (Provider::Gcs, FileFormat::Csv));
        assert_eq!(m.files, [FileRef::Beside("c_2026_0.csv".into())]);
        assert!(Manifest::parse("{\"a\":1}", "m").is_err());
        let orc = s3.replace("\"CSV\"", "\"ORC\"");
        assert!(
            Manifest::parse(&orc, "m")
                .unwrap_err()
                .to_string()
                .contains("ORC")
        );
    }
}
