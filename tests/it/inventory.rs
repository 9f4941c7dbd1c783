//! Runs driven by an inventory report (`copy --inventory`): the reports are written in each
//! service's layout (S3 Inventory CSV gzipped with URL-encoded keys, Parquet written with the
//! `parquet` crate, Azure and GCS layouts) and read back; against Garage, objects are copied with
//! no source LIST, and an object changed or deleted since the inventory is reported and never
//! journaled as copied.

use super::{expect, moverctl, remotes_toml, servers, summary, text, unique};
use object_store::ObjectStoreExt;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

fn gz(text: &str) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(text.as_bytes()).unwrap();
    e.finish().unwrap()
}

/// A Parquet file with a UTF-8 name column, an int64 size column and an optional UTF-8 ETag
/// column (names as the service writes them), snappy-compressed.
fn parquet_file(path: &Path, cols: [&str; 3], rows: &[(&str, i64, Option<&str>)]) {
    use parquet::basic::{Compression, ConvertedType, Repetition, Type as Physical};
    use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::types::Type;
    let text = |name: &str, rep| {
        Arc::new(
            Type::primitive_type_builder(name, Physical::BYTE_ARRAY)
                .with_converted_type(ConvertedType::UTF8)
                .with_repetition(rep)
                .build()
                .unwrap(),
        )
    };
    let size = Arc::new(
        Type::primitive_type_builder(cols[1], Physical::INT64)
            .with_repetition(Repetition::REQUIRED)
            .build()
            .unwrap(),
    );
    let schema = Arc::new(
        Type::group_type_builder("schema")
            .with_fields(vec![
                text(cols[0], Repetition::REQUIRED),
                size,
                text(cols[2], Repetition::OPTIONAL),
            ])
            .build()
            .unwrap(),
    );
    let props = Arc::new(
        WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .build(),
    );
    let f = std::fs::File::create(path).unwrap();
    let mut w = SerializedFileWriter::new(f, schema, props).unwrap();
    let mut rg = w.next_row_group().unwrap();
    let mut i = 0;
    while let Some(mut col) = rg.next_column().unwrap() {
        match i {
            0 => {
                let v: Vec<ByteArray> = rows.iter().map(|r| ByteArray::from(r.0)).collect();
                col.typed::<ByteArrayType>()
                    .write_batch(&v, None, None)
                    .unwrap();
            }
            1 => {
                let v: Vec<i64> = rows.iter().map(|r| r.1).collect();
                col.typed::<Int64Type>()
                    .write_batch(&v, None, None)
                    .unwrap();
            }
            _ => {
                let v: Vec<ByteArray> = rows
                    .iter()
                    .filter_map(|r| r.2)
                    .map(ByteArray::from)
                    .collect();
                let def: Vec<i16> = rows.iter().map(|r| i16::from(r.2.is_some())).collect();
                col.typed::<ByteArrayType>()
                    .write_batch(&v, Some(&def), None)
                    .unwrap();
            }
        }
        col.close().unwrap();
        i += 1;
    }
    rg.close().unwrap();
    w.close().unwrap();
}

async fn rows_of(manifest: &Path) -> Vec<moverctl::inventory::rows::Row> {
    let inv = moverctl::inventory::open(manifest.to_str().unwrap(), &Default::default())
        .await
        .unwrap();
    let mut rows = Vec::new();
    inv.for_each_row(&mut |r| {
        rows.push(r);
        Ok(())
    })
    .await
    .unwrap();
    rows
}

#[tokio::test]
async fn parquet_and_csv_reports_of_azure_and_gcs_read_back_row_by_row() {
    let dir = tempfile::tempdir().unwrap();
    // Azure Blob Inventory, Parquet: Name begins with the container.
    let run = dir.path().join("2026/01/02/03-04-05/r1");
    std::fs::create_dir_all(&run).unwrap();
    parquet_file(
        &run.join("r1_1000000_0.parquet"),
        ["Name", "Content-Length", "Etag"],
        &[("cont/b/two", 22, Some("0x8DB2")), ("cont/a/one", 1, None)],
    );
    let m = run.join("r1-manifest.json");
    std::fs::write(
        &m,
        r#"{"destinationContainer":"inv","endpoint":"https://acct.blob.core.windows.net",
        "files":[{"blob":"2026/01/02/03-04-05/r1/r1_1000000_0.parquet","size":1}],
        "ruleDefinition":{"filters":{"blobTypes":["blockBlob"]},"format":"parquet","objectType":"blob",
          "schedule":"daily","schemaFields":["Name","Content-Length","Etag"]},
        "ruleName":"r1","status":"Succeeded","summary":{"objectCount":2,"totalObjectSize":23},"version":"1.0"}"#,
    )
    .unwrap();
    let rows = rows_of(&m).await;
    assert_eq!(rows.len(), 2);
    assert_eq!((rows[0].key.as_str(), rows[0].size), ("b/two", 22));
    assert_eq!(rows[0].bucket.as_deref(), Some("cont"));
    assert_eq!(rows[0].e_tag.as_deref(), Some("\"0x8DB2\""));
    assert_eq!(rows[1].e_tag, None);
    // GCS inventory report, CSV with a header row; md5Hash gives the comparable ETag.
    let g = dir.path().join("gcs");
    std::fs::create_dir_all(&g).unwrap();
    std::fs::write(
        g.join("cfg_2026-01-02T00:00_0.csv"),
        "bucket,name,size,etag,md5Hash\nsrc,\"x,1\",0,CJj8,1B2M2Y8AsgTpgAmY7PhCfg==\nsrc,dir/,0,CJj9,\n",
    )
    .unwrap();
    let gm = g.join("cfg_2026-01-02T00:00_manifest.json");
    std::fs::write(
        &gm,
        r#"{"report_config":{"csv_options":{"delimiter":",","record_separator":"\n","header_required":true},
           "object_metadata_report_options":{"metadata_fields":["bucket","name","size","etag","md5Hash"]}},
           "records_processed":2,"snapshot_time":"2026-01-02T00:00:00Z","shard_count":1,
           "report_shards_file_names":["cfg_2026-01-02T00:00_0.csv"]}"#,
    )
    .unwrap();
    let rows = rows_of(&gm).await;
    // The folder marker is no object.
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].key, "x,1");
    assert_eq!(
        rows[0].e_tag.as_deref(),
        Some("\"d41d8cd98f00b204e9800998ecf8427e\"")
    );
    // S3 Inventory, Parquet (keys not URL-encoded there).
    let s = dir.path().join("s3");
    std::fs::create_dir_all(s.join("data")).unwrap();
    parquet_file(
        &s.join("data/f.parquet"),
        ["key", "size", "e_tag"],
        &[("a%20b", 3, Some("abc"))],
    );
    let sm = s.join("manifest.json");
    std::fs::write(
        &sm,
        r#"{"sourceBucket":"src","destinationBucket":"arn:aws:s3:::inv","version":"2016-11-30",
          "fileFormat":"Parquet","fileSchema":"message s3.inventory { required binary key (UTF8); required int64 size; optional binary e_tag (UTF8);}",
          "files":[{"key":"inv/src/cfg/data/f.parquet","size":1,"MD5checksum":"x"}]}"#,
    )
    .unwrap();
    let rows = rows_of(&sm).await;
    assert_eq!((rows[0].key.as_str(), rows[0].size), ("a%20b", 3));
}

/// Objects under `prefix` put at Garage, and an S3 Inventory of them (two gzipped CSV files, in
/// no key order) put beside them; returns the manifest's location.
async fn s3_inventory(
    s: &super::Servers,
    prefix: &str,
    objects: &[(&str, &[u8])],
) -> (moverctl::store::Store, String) {
    let root = moverctl::store::Store::open(
        &format!("garage:{}/{prefix}/", s.bucket_a),
        &super::remotes(s),
    )
    .unwrap();
    let mut lines = Vec::new();
    for (k, body) in objects {
        let p = root.path_of(&format!("src/{k}")).unwrap();
        let put = root.inner.put(&p, body.to_vec().into()).await.unwrap();
        let etag = put.e_tag.unwrap().trim_matches('"').to_string();
        let key = format!("{prefix}/src/{}", k.replace(' ', "%20"));
        lines.push(format!(
            "\"{}\",\"{key}\",\"{}\",\"{etag}\",\"STANDARD\"\n",
            s.bucket_a,
            body.len()
        ));
    }
    lines.reverse();
    let half = lines.len() / 2;
    let mut files = Vec::new();
    for (i, part) in [&lines[..half], &lines[half..]].iter().enumerate() {
        let key = format!("inv/{}/cfg/data/f{i}.csv.gz", s.bucket_a);
        let p = root.path_of(&key).unwrap();
        root.inner.put(&p, gz(&part.concat()).into()).await.unwrap();
        files.push(format!(
            r#"{{"key":"{prefix}/{key}","size":1,"MD5checksum":"x"}}"#
        ));
    }
    let manifest = format!(
        r#"{{"sourceBucket":"{b}","destinationBucket":"arn:aws:s3:::{b}","version":"2016-11-30",
        "creationTimestamp":"1767225600000","fileFormat":"CSV",
        "fileSchema":"Bucket, Key, Size, ETag, StorageClass","files":[{}]}}"#,
        files.join(","),
        b = s.bucket_a
    );
    let mkey = format!("inv/{}/cfg/2026-01-01T00-00Z/manifest.json", s.bucket_a);
    root.inner
        .put(&root.path_of(&mkey).unwrap(), manifest.into_bytes().into())
        .await
        .unwrap();
    (root, format!("garage:{}/{prefix}/{mkey}", s.bucket_a))
}

/// `copy --json --inventory MANIFEST SRC DST` with its journal.
fn copy_by_inventory(
    conf: &Path,
    journal: &Path,
    manifest: &str,
    src: &str,
    dst: &Path,
) -> std::process::Output {
    moverctl()
        .args(["copy", "--json", "--config"])
        .arg(conf)
        .arg("--journal")
        .arg(journal)
        .args(["--inventory", manifest, src])
        .arg(dst)
        .output()
        .unwrap()
}

/// A first run over an inventory whose `changed` object was rewritten and whose `gone` object
/// was deleted since: no source LIST, `copied` objects copied, the two reported at their first
/// failed read (no retry), nothing failed, exit 3; neither journaled as copied. Its summary.
fn assert_changed_and_gone_reported(
    o: &std::process::Output,
    copied: u64,
    journal: &Path,
) -> serde_json::Value {
    expect(o, 3);
    let v = summary(o);
    assert_eq!(v["requests"]["list_source"], 0, "{}", text(o));
    assert_eq!(v["copied"]["objects"], copied, "{}", text(o));
    assert_eq!(v["since_inventory"]["changed"]["objects"], 1, "{}", text(o));
    assert_eq!(v["since_inventory"]["changed"]["keys"][0]["key"], "changed");
    assert_eq!(v["since_inventory"]["gone"]["objects"], 1, "{}", text(o));
    assert_eq!(v["failed"]["objects"], 0, "{}", text(o));
    // Found out at once, not read again (a store that ignores the read's If-Match gives it away
    // by the other size).
    assert_eq!(v["retries"], 0, "{}", text(o));
    let j = moverctl::journal::Journal::open_existing(journal).unwrap();
    for k in ["changed", "gone"] {
        let rec = j.get(k).unwrap();
        assert!(
            rec.as_ref()
                .is_none_or(|r| r.state != moverctl::journal::State::Verified),
            "{k}: {rec:?}"
        );
    }
    v
}

#[test]
fn copy_from_an_s3_inventory_lists_no_source_and_reports_changed_and_gone_objects() {
    let Some(s) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("remotes.toml");
    std::fs::write(&conf, remotes_toml(&s)).unwrap();
    let prefix = unique("inventory");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let objects: [(&str, &[u8]); 5] = [
        ("a", b"alpha"),
        ("b c", b"with a space"),
        ("d/e", b"deeper"),
        ("changed", b"before"),
        ("gone", b"soon deleted"),
    ];
    let (root, manifest) = rt.block_on(async {
        let (root, m) = s3_inventory(&s, &prefix, &objects).await;
        // Since the inventory: one object rewritten (another size), one deleted.
        let p = root.path_of("src/changed").unwrap();
        root.inner
            .put(&p, b"after, longer".to_vec().into())
            .await
            .unwrap();
        root.inner
            .delete(&root.path_of("src/gone").unwrap())
            .await
            .unwrap();
        (root, m)
    });
    let dst = dir.path().join("dst");
    let journal = dir.path().join("j.db");
    let src = format!("garage:{}/{prefix}/src/", s.bucket_a);
    let run = || copy_by_inventory(&conf, &journal, &manifest, &src, &dst);
    let o = run();
    // A changed object is a partial run.
    assert_changed_and_gone_reported(&o, 3, &journal);
    assert_eq!(std::fs::read(dst.join("b c")).unwrap(), b"with a space");
    assert_eq!(std::fs::read(dst.join("d/e")).unwrap(), b"deeper");
    assert!(!dst.join("changed").exists() && !dst.join("gone").exists());
    let schemas = super::json_schema::schemas();
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let l: serde_json::Value = serde_json::from_str(line).unwrap();
        super::json_schema::validate(&l, &schemas).unwrap_or_else(|e| panic!("{e:?}: {line}"));
    }
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("\"event\":\"gone_since_inventory\""),
        "{stdout}"
    );
    let j = moverctl::journal::Journal::open_existing(&journal).unwrap();
    assert_eq!(
        j.get("a").unwrap().map(|r| r.state),
        Some(moverctl::journal::State::Verified)
    );
    drop(j);
    // Resume: the three are skipped by the journal, the two reported again; still no LIST.
    let o = run();
    expect(&o, 3);
    let v = summary(&o);
    assert_eq!(v["requests"]["list_source"], 0, "{}", text(&o));
    assert_eq!(v["copied"]["objects"], 0, "{}", text(&o));
    assert_eq!(v["skipped"]["objects"], 3, "{}", text(&o));
    assert_eq!(v["since_inventory"]["changed"]["objects"], 1);
    assert_eq!(v["since_inventory"]["gone"]["objects"], 1);
    drop(root);
}

/// MD5 of `b` (a GCS inventory's `md5Hash`, base64).
fn md5_b64(b: &[u8]) -> String {
    let mut h = moverctl::checksum::Hasher::new(true);
    h.update(b);
    base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        h.finish().md5.unwrap(),
    )
}

/// Objects put under `prefix/src/` at `location` (a bucket or container root), and an inventory
/// report of them in the service's own layout (Azure Blob Inventory CSV: a header row, `Name`
/// with the container in front; GCS Storage Insights CSV: a header row, `md5Hash`) put in the same
/// bucket, with `extra` rows for objects that do not exist, over three data files in reverse key
/// order; the manifest's location. `(location, written)`: where it is read, and where it is
/// written (fake-gcs-server takes writes through its XML shim).
async fn report_on_server(
    s: &super::Servers,
    (location, written): (&str, &str),
    prefix: &str,
    objects: &[(&str, &[u8])],
    extra: usize,
) -> String {
    let azure = location.starts_with("azurite:");
    let container = location.split([':', '/']).nth(1).unwrap().to_string();
    let root = moverctl::store::Store::open(written, &super::remotes(s)).unwrap();
    let mut rows = Vec::new();
    for (k, body) in objects {
        let p = root.path_of(&format!("{prefix}/src/{k}")).unwrap();
        let put = root.inner.put(&p, body.to_vec().into()).await.unwrap();
        let key = format!("{prefix}/src/{k}");
        rows.push(match azure {
            true => format!(
                "\"{container}/{key}\",{},\"{}\"\n",
                body.len(),
                put.e_tag.unwrap()
            ),
            false => format!("{container},\"{key}\",{},x,{}\n", body.len(), md5_b64(body)),
        });
    }
    for i in 0..extra {
        let key = format!("{prefix}/none/{i:06}");
        rows.push(match azure {
            true => format!("\"{container}/{key}\",{i},\"0x8D{i:X}\"\n"),
            false => format!("{container},{key},{i},x,{}\n", md5_b64(key.as_bytes())),
        });
    }
    rows.reverse();
    let header = match azure {
        true => "Name,Content-Length,Etag\n",
        false => "bucket,name,size,etag,md5Hash\n",
    };
    let run = format!("{prefix}/inv/2026/01/02/03-04-05/r1");
    let third = rows.len().div_ceil(3);
    let mut names = Vec::new();
    for (i, part) in rows.chunks(third).enumerate() {
        let name = match azure {
            true => format!("{run}/r1_1000000_{i}.csv"),
            false => format!("{run}/cfg_2026-01-02T00:00_{i}.csv"),
        };
        let text = format!("{header}{}", part.concat());
        root.inner
            .put(&root.path_of(&name).unwrap(), text.into_bytes().into())
            .await
            .unwrap();
        names.push(name);
    }
    let n = rows.len();
    let (mkey, manifest) = match azure {
        true => (
            format!("{run}/r1-manifest.json"),
            format!(
                r#"{{"destinationContainer":"{container}","files":[{}],
                "ruleDefinition":{{"format":"csv","objectType":"blob","schemaFields":["Name","Content-Length","Etag"]}},
                "ruleName":"r1","status":"Succeeded","summary":{{"objectCount":{n}}},"version":"1.0"}}"#,
                names
                    .iter()
                    .map(|b| format!(r#"{{"blob":"{b}","size":1}}"#))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        ),
        false => (
            format!("{run}/cfg_2026-01-02T00:00_manifest.json"),
            format!(
                r#"{{"report_config":{{"csv_options":{{"delimiter":",","record_separator":"\n","header_required":true}},
                "object_metadata_report_options":{{"metadata_fields":["bucket","name","size","etag","md5Hash"]}}}},
                "records_processed":{n},"shard_count":{},"report_shards_file_names":[{}]}}"#,
                names.len(),
                names
                    .iter()
                    .map(|b| format!("\"{}\"", b.rsplit('/').next().unwrap()))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        ),
    };
    root.inner
        .put(&root.path_of(&mkey).unwrap(), manifest.into_bytes().into())
        .await
        .unwrap();
    format!("{}{mkey}", location.trim_end_matches('/').to_string() + "/")
}

// Azure Blob Inventory and GCS inventory reports kept on their services (Azurite,
// fake-gcs-server) are read from there: a report of 12,005 rows over three files streams back row
// by row, and a copy driven by one lists no source, copies what is there, and reports what changed
// or went since; neither is journaled as copied.
#[test]
fn azure_and_gcs_inventories_are_read_from_their_services() {
    let Some(s) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("remotes.toml");
    std::fs::write(&conf, remotes_toml(&s)).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let objects: [(&str, &[u8]); 4] = [
        ("a", b"alpha"),
        ("d/e", b"deeper"),
        ("changed", b"before"),
        ("gone", b"soon deleted"),
    ];
    for (location, written) in [
        (
            format!("azurite:{}/", s.az_container),
            format!("azurite:{}/", s.az_container),
        ),
        (
            format!("fakegcs:{}/", s.gcs_bucket),
            format!("gcsxml:{}/", s.gcs_bucket),
        ),
    ] {
        let at = (location.as_str(), written.as_str());
        let prefix = unique("inv-svc");
        // A large report: every row comes back, in the files' order.
        let big = rt.block_on(report_on_server(&s, at, &prefix, &[], 12_005));
        let rows = rt.block_on(async {
            let inv = moverctl::inventory::open(&big, &super::remotes(&s))
                .await
                .unwrap();
            let mut n = 0u64;
            let mut bytes = 0u64;
            inv.for_each_row(&mut |r| {
                n += 1;
                bytes += r.size;
                Ok(())
            })
            .await
            .unwrap();
            (n, bytes)
        });
        assert_eq!(rows, (12_005, (0..12_005u64).sum()), "{big}");

        // A copy driven by a report of the objects themselves.
        let prefix = unique("inv-svc");
        let manifest = rt.block_on(async {
            let m = report_on_server(&s, at, &prefix, &objects, 0).await;
            let root = moverctl::store::Store::open(&written, &super::remotes(&s)).unwrap();
            let p = root.path_of(&format!("{prefix}/src/changed")).unwrap();
            root.inner
                .put(&p, b"after, longer".to_vec().into())
                .await
                .unwrap();
            let p = root.path_of(&format!("{prefix}/src/gone")).unwrap();
            root.inner.delete(&p).await.unwrap();
            m
        });
        let dst = dir.path().join(&prefix);
        let journal = dir.path().join(format!("{prefix}.db"));
        let src = format!("{location}{prefix}/src/");
        let o = copy_by_inventory(&conf, &journal, &manifest, &src, &dst);
        assert_changed_and_gone_reported(&o, 2, &journal);
        assert_eq!(std::fs::read(dst.join("d/e")).unwrap(), b"deeper");
        assert!(!dst.join("changed").exists() && !dst.join("gone").exists());
    }
}
