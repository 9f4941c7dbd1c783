//! The copy engine over every pair of store kinds the issue names, on real servers: exact bytes,
//! idempotent re-runs, changed objects re-copied, odd keys and sizes around part boundaries.

use super::{Servers, remotes, servers, unique};
use bytes::Bytes;
use futures::TryStreamExt;
use moverctl::catalog::parts::{MIB, PartRule};
use moverctl::limit::Limits;
use moverctl::store::Store;
use moverctl::store::list::{Listed, list};
use moverctl::transfer::{CopyOptions, Report, Run, Verify};
use object_store::{ObjectStoreExt, PutPayload};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

const PART: u64 = 5 * MIB;

/// Keys and sizes around the part boundaries (threshold = one 5 MiB part).
fn corpus() -> Vec<(String, u64)> {
    vec![
        ("empty".into(), 0),
        ("one-byte".into(), 1),
        ("dir/with space/ünï 😀.bin".into(), 1000),
        ("exactly-one-part".into(), PART),
        ("one-byte-over".into(), PART + 1),
        ("three-parts-and-a-bit".into(), 3 * PART + 7),
        ("per%cent+plus#hash?q".into(), 4096),
    ]
}

fn bytes_for(key: &str, size: u64, version: u8) -> Bytes {
    let seed = key.bytes().fold(version as u64, |a, b| {
        a.wrapping_mul(31).wrapping_add(b as u64)
    });
    Bytes::from(
        (0..size)
            .map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) >> 3) as u8)
            .collect::<Vec<u8>>(),
    )
}

pub fn options() -> CopyOptions {
    let catalog = moverctl::catalog::Catalog::embedded().unwrap();
    CopyOptions {
        transfers: 8,
        part_concurrency: 3,
        ranged_reads: false,
        part_rule: PartRule {
            threshold: PART,
            preferred_part: PART,
        },
        dst_limits: catalog.get("onprem").unwrap().file.limits.clone(),
        max_buffer: 64 * MIB,
        retries: 2,
        verify: Verify::Auto,
        dry_run: false,
        include: None,
        exclude: None,
        select: Default::default(),
        size_only: false,
        checkers: None,
        counters: None,
        fsync: moverctl::transfer::Fsync::Object,
        preserve_mtime: true,
        size_ahead: false,
        server_side: false,
        stream_single_put: false,
        metadata: Default::default(),
        journal_proof_only: false,
        inventory: None,
        list_streams: 1,
        list_split_after: moverctl::transfer::LIST_SPLIT_AFTER,
    }
}

pub async fn run(src: &Store, dst: &Store, journal: &std::path::Path) -> Report {
    let j = moverctl::journal::Journal::open(journal, &src.shown(), &dst.shown()).unwrap();
    Run {
        src: src.clone(),
        dst: dst.clone(),
        opts: options(),
        limits: Limits::unlimited().with_concurrency(8),
        journal: Some(j),
        stop: Arc::new(AtomicBool::new(false)),
    }
    .run(|_| {})
    .await
    .unwrap()
}

async fn seed(store: &Store, version: u8) {
    for (k, size) in corpus() {
        store
            .inner
            .put(
                &store.path_of(&k).unwrap(),
                PutPayload::from(bytes_for(&k, size, version)),
            )
            .await
            .unwrap();
    }
}

/// Every source object is at the destination with identical bytes (read independently of the
/// copy engine), and the destination holds nothing else under the prefix.
pub async fn assert_same(src: &Store, dst: &Store) {
    let s: Vec<Listed> = list(src).try_collect().await.unwrap();
    let d: Vec<Listed> = list(dst).try_collect().await.unwrap();
    let keys = |v: &[Listed]| v.iter().map(|l| l.key().to_string()).collect::<Vec<_>>();
    assert_eq!(keys(&s), keys(&d), "{} vs {}", src.shown(), dst.shown());
    for l in &s {
        let a = src
            .inner
            .get(&src.path_of(l.key()).unwrap())
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let b = dst
            .inner
            .get(&dst.path_of(l.key()).unwrap())
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert!(
            a == b,
            "{} differs ({} vs {} bytes)",
            l.key(),
            a.len(),
            b.len()
        );
    }
}

async fn pair(src: Store, dst: Store, seeded: bool) {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal.sqlite");
    if !seeded {
        seed(&src, 1).await;
    }
    let n = corpus().len() as u64;
    let r = run(&src, &dst, &j).await;
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    assert_eq!((r.copied, r.skipped), (n, 0));
    assert_eq!(
        r.verified_by.values().sum::<u64>(),
        n,
        "every object verified: {:?}",
        r.verified_by
    );
    assert_same(&src, &dst).await;

    // Nothing changed: nothing copied, and no object is read or written again.
    let again = run(&src, &dst, &j).await;
    assert_eq!((again.copied, again.skipped), (0, n), "{:?}", again.reasons);
    assert_eq!(
        (again.requests_get, again.requests_put, again.requests_head),
        (0, 0, 0)
    );

    if !seeded {
        // One object changes at the source: exactly that one is copied again.
        let (k, size) = corpus()[4].clone();
        src.inner
            .put(
                &src.path_of(&k).unwrap(),
                PutPayload::from(bytes_for(&k, size, 2)),
            )
            .await
            .unwrap();
        let changed = run(&src, &dst, &j).await;
        assert_eq!(
            (changed.copied, changed.skipped),
            (1, n - 1),
            "{:?}",
            changed.reasons
        );
        assert_same(&src, &dst).await;
    }
}

fn at(s: &Servers, remote: &str, bucket: &str) -> Store {
    Store::open(
        &format!("{remote}:{bucket}/{}", unique("copy")),
        &remotes(s),
    )
    .unwrap()
}

fn local() -> (tempfile::TempDir, Store) {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path().to_str().unwrap(), &Default::default()).unwrap();
    (d, s)
}

#[tokio::test]
async fn memory_to_memory() {
    let a = Store::open("memory://a/", &Default::default()).unwrap();
    let b = Store::open("memory://b/", &Default::default()).unwrap();
    pair(a, b, false).await;
}

#[tokio::test]
async fn local_to_local() {
    let (_a, src) = local();
    let (_b, dst) = local();
    pair(src, dst, false).await;
}

#[tokio::test]
async fn local_to_s3() {
    let Some(s) = servers() else { return };
    let (_d, src) = local();
    pair(src, at(&s, "garage", &s.bucket_a), false).await;
}

#[tokio::test]
async fn s3_to_s3_two_buckets() {
    let Some(s) = servers() else { return };
    pair(
        at(&s, "garage", &s.bucket_a),
        at(&s, "garage", &s.bucket_b),
        false,
    )
    .await;
}

#[tokio::test]
async fn s3_to_s3_two_providers() {
    let Some(s) = servers() else { return };
    pair(
        at(&s, "garage", &s.bucket_a),
        at(&s, "garage2", &s.bucket_c),
        false,
    )
    .await;
}

#[tokio::test]
async fn s3_to_local() {
    let Some(s) = servers() else { return };
    let (_d, dst) = local();
    pair(at(&s, "garage", &s.bucket_a), dst, false).await;
}

#[tokio::test]
async fn s3_to_azure() {
    let Some(s) = servers() else { return };
    pair(
        at(&s, "garage", &s.bucket_b),
        at(&s, "azurite", &s.az_container),
        false,
    )
    .await;
}

#[tokio::test]
async fn azure_to_s3() {
    let Some(s) = servers() else { return };
    pair(
        at(&s, "azurite", &s.az_container2),
        at(&s, "garage", &s.bucket_a),
        false,
    )
    .await;
}

#[tokio::test]
async fn gcs_to_s3() {
    let Some(s) = servers() else { return };
    let src = at(&s, "fakegcs", &s.gcs_bucket);
    for (k, size) in corpus() {
        let url = format!(
            "{}/upload/storage/v1/b/{}/o?uploadType=media&name={}",
            s.gcs_endpoint,
            s.gcs_bucket,
            url::form_urlencoded::byte_serialize(format!("{}{k}", src.prefix).as_bytes())
                .collect::<String>()
        );
        let res = reqwest::Client::new()
            .post(url)
            .body(bytes_for(&k, size, 1))
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success());
    }
    pair(src, at(&s, "garage", &s.bucket_b), true).await;
}

#[tokio::test]
async fn local_to_gcs() {
    let Some(s) = servers() else { return };
    let (_d, src) = local();
    pair(src, at(&s, "gcsxml", &s.gcs_bucket), false).await;
}

#[tokio::test]
async fn s3_to_gcs() {
    let Some(s) = servers() else { return };
    pair(
        at(&s, "garage", &s.bucket_a),
        at(&s, "gcsxml", &s.gcs_bucket),
        false,
    )
    .await;
}

/// How many objects a run verified with this write-side check (labels are `read+write`).
fn written_by(r: &Report, check: &str) -> u64 {
    r.verified_by
        .iter()
        .filter(|(k, _)| k.write.as_str() == check)
        .map(|(_, v)| v)
        .sum()
}

/// GCS as a destination (XML API, through scripts/gcs-xml-shim.py): an object written in one
/// PUT is checked by its MD5 ETag; one assembled from multipart parts has no MD5 and an opaque
/// `…-N` ETag, so it is checked by the CRC32C GCS keeps. A store that kept other bytes than it
/// received is caught by that CRC32C and the object is written again, never reported copied.
#[tokio::test]
async fn gcs_destination_is_verified_by_md5_or_crc32c() {
    let Some(s) = servers() else { return };
    let (_d, src) = local();
    seed(&src, 1).await;
    let dst = at(&s, "gcsxml", &s.gcs_bucket);
    let bad = "three-parts-and-a-bit";
    let armed = reqwest::Client::new()
        .post(format!(
            "{}/_shim/corrupt-next-complete?object={}/{}{bad}",
            s.gcs_xml_endpoint, s.gcs_bucket, dst.prefix
        ))
        .send()
        .await
        .unwrap();
    assert!(armed.status().is_success());
    let dir = tempfile::tempdir().unwrap();
    let r = run(&src, &dst, &dir.path().join("journal.sqlite")).await;
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    let multipart = corpus().iter().filter(|(_, n)| *n > PART).count() as u64;
    let n = corpus().len() as u64;
    assert_eq!(r.copied, n);
    assert_eq!(
        written_by(&r, "dest-md5"),
        n - multipart,
        "{:?}",
        r.verified_by
    );
    assert_eq!(
        written_by(&r, "dest-crc32c"),
        multipart,
        "{:?}",
        r.verified_by
    );
    assert!(r.retries >= 1, "the corrupted completion was retried");
    assert_same(&src, &dst).await;
}

/// Uploads to GCS carry Content-MD5, so GCS refuses bytes damaged on the way (the fault proxy
/// flips one byte of the first PUT of each object; the shim, like GCS, answers 400 BadDigest) and
/// the object is sent again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcs_uploads_carry_content_md5() {
    use super::faults::proxy::{PFault, Proxy};
    let Some(s) = servers() else { return };
    let upstream = s
        .gcs_xml_endpoint
        .trim_start_matches("http://")
        .parse()
        .expect("the shim is http://127.0.0.1:PORT");
    let proxy = Proxy::start(upstream).await;
    let toml = format!(
        "[remotes.gcsproxy]\ntype = \"gcs\"\nendpoint = \"{}\"\nservice_account_path_env = \"MOVERCTL_TEST_GCS_SERVICE_ACCOUNT\"\n",
        proxy.endpoint()
    );
    let via = moverctl::store::config::Remotes::parse("gcs-proxy.toml", &toml).unwrap();
    let prefix = unique("gcs-md5");
    let dst = Store::open(&format!("gcsproxy:{}/{prefix}", s.gcs_bucket), &via).unwrap();
    let (_d, src) = local();
    seed(&src, 1).await;
    // object_store's GCS client percent-encodes the key ('-' as %2D): "dir/with space/…" and
    // part 2 of "three-parts-and-a-bit".
    proxy
        .add("PUT", "with%20space", "", PFault::FlipRequest, 1)
        .add(
            "PUT",
            "and%2Da%2Dbit",
            "partNumber=2",
            PFault::FlipRequest,
            1,
        );
    let dir = tempfile::tempdir().unwrap();
    let r = run(&src, &dst, &dir.path().join("journal.sqlite")).await;
    assert!(proxy.unspent().is_empty(), "{:?}", proxy.unspent());
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    let st = proxy.upstream_statuses();
    assert_eq!(st.len(), 2, "{st:?}");
    assert!(
        st.iter().all(|(_, c)| *c == 400),
        "the store refused the damaged bodies: {st:?}"
    );
    assert_eq!(r.retries, 2);
    assert_same(&src, &dst).await;
}

#[tokio::test]
async fn dry_run_changes_nothing_and_says_why() {
    let (_a, src) = local();
    let (_b, dst) = local();
    seed(&src, 1).await;
    let mut o = options();
    o.dry_run = true;
    let r = Run {
        src: src.clone(),
        dst: dst.clone(),
        opts: o,
        limits: Limits::unlimited(),
        journal: None,
        stop: Arc::new(AtomicBool::new(false)),
    }
    .run(|_| {})
    .await
    .unwrap();
    assert_eq!(r.copied, corpus().len() as u64);
    assert_eq!(r.reasons.get("new"), Some(&(corpus().len() as u64)));
    assert_eq!(r.requests_put, 0);
    let d: Vec<Listed> = list(&dst).try_collect().await.unwrap();
    assert!(d.is_empty());
}

#[tokio::test]
async fn include_and_exclude_filter_keys() {
    let (_a, src) = local();
    let (_b, dst) = local();
    seed(&src, 1).await;
    let mut o = options();
    let glob = |p: &str| {
        let mut b = globset::GlobSetBuilder::new();
        b.add(
            globset::GlobBuilder::new(p)
                .literal_separator(true)
                .build()
                .unwrap(),
        );
        Some(b.build().unwrap())
    };
    o.include = glob("*-*");
    o.exclude = glob("one-*");
    let r = Run {
        src: src.clone(),
        dst: dst.clone(),
        opts: o,
        limits: Limits::unlimited(),
        journal: None,
        stop: Arc::new(AtomicBool::new(false)),
    }
    .run(|_| {})
    .await
    .unwrap();
    let d: Vec<String> = list(&dst)
        .try_collect::<Vec<_>>()
        .await
        .unwrap()
        .iter()
        .map(|l| l.key().to_string())
        .collect();
    assert_eq!(d, vec!["exactly-one-part", "three-parts-and-a-bit"]);
    assert_eq!(r.filtered, corpus().len() as u64 - 2);
}

#[test]
fn exec_runs_a_saved_plan_and_reports_against_it() {
    let (src_dir, src) = local();
    let (dst_dir, dst) = local();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(seed(&src, 1));
    let total: u64 = corpus().iter().map(|(_, s)| s).sum();
    let plans = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let o = super::moverctl()
        .args([
            "plan",
            "--from",
            "onprem",
            "--to",
            "onprem",
            "--bytes",
            &total.to_string(),
        ])
        .args([
            "--objects",
            &corpus().len().to_string(),
            "--save",
            "local-move",
            "--plans-dir",
        ])
        .arg(plans.path())
        .arg("--src")
        .arg(src_dir.path())
        .arg("--dst")
        .arg(dst_dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let plan = plans.path().join("local-move.toml");
    let o = super::moverctl()
        .args(["exec", "--json"])
        .arg(&plan)
        .env("MOVERCTL_STATE_DIR", state.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let last = String::from_utf8_lossy(&o.stdout)
        .lines()
        .last()
        .unwrap()
        .to_string();
    let v: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(v["copied"]["objects"], corpus().len());
    assert!(v["plan"]["predicted_seconds"].as_f64().unwrap() > 0.0);
    assert!(v["plan"]["actual_cost"]["egress"].is_number());
    rt.block_on(assert_same(&src, &dst));
    // The same plan again: everything verified earlier, nothing copied.
    let o = super::moverctl()
        .arg("exec")
        .arg(&plan)
        .env("MOVERCTL_STATE_DIR", state.path())
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("verified earlier"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // status reads the journal the plan's runs wrote.
    let o = super::moverctl()
        .args(["status", "--json"])
        .arg(&plan)
        .env("MOVERCTL_STATE_DIR", state.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["verified"]["objects"], corpus().len());
    assert_eq!(v["verified"]["bytes"], total);
    let _ = dst;
}

#[test]
fn exec_without_locations_says_what_to_pass() {
    let plans = tempfile::tempdir().unwrap();
    let o = super::moverctl()
        .args([
            "plan",
            "--from",
            "aws",
            "--to",
            "wasabi",
            "--bytes",
            "1TB",
            "--objects",
            "10",
            "--save",
            "p",
            "--plans-dir",
        ])
        .arg(plans.path())
        .output()
        .unwrap();
    assert!(o.status.success());
    let o = super::moverctl()
        .arg("exec")
        .arg(plans.path().join("p.toml"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--src"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A 2 GiB object (32 parts of 64 MiB) from a local file to S3, verified by its multipart ETag.
#[tokio::test]
async fn two_gib_object_local_to_s3() {
    let Some(s) = servers() else { return };
    let (dir, src) = local();
    let size: u64 = 2 << 30;
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(
            std::fs::File::create(dir.path().join("shard-00000.tar")).unwrap(),
        );
        let block: Vec<u8> = (0..(1u32 << 20))
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
            .collect();
        for i in 0..(size >> 20) {
            let mut b = block.clone();
            b[0] = i as u8;
            f.write_all(&b).unwrap();
        }
    }
    let dst = at(&s, "garage", &s.bucket_a);
    let jdir = tempfile::tempdir().unwrap();
    let mut o = options();
    o.part_rule = PartRule::default();
    let j = moverctl::journal::Journal::open(&jdir.path().join("j"), &src.shown(), &dst.shown())
        .unwrap();
    let r = Run {
        src: src.clone(),
        dst: dst.clone(),
        opts: o,
        limits: Limits::unlimited().with_concurrency(4),
        journal: Some(j),
        stop: Arc::new(AtomicBool::new(false)),
    }
    .run(|_| {})
    .await
    .unwrap();
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    assert_eq!(r.copied_bytes, size);
    assert_eq!(
        r.verified_by
            .get(&"source-size+dest-multipart-etag".parse().unwrap()),
        Some(&1),
        "{:?}",
        r.verified_by
    );
    let head = dst
        .inner
        .head(&dst.path_of("shard-00000.tar").unwrap())
        .await
        .unwrap();
    assert_eq!(head.size, size);
    assert!(head.e_tag.unwrap().ends_with("-32\""));
}

/// A copy of a copy: objects moverctl wrote carry its CRC64 in metadata, and reading them back
/// from a store whose ETags are not MD5s (Azure) is checked against it.
#[tokio::test]
async fn second_hop_reads_are_checked_against_the_stored_crc() {
    let Some(s) = servers() else { return };
    let (_a, first) = local();
    seed(&first, 1).await;
    let middle = at(&s, "azurite", &s.az_container);
    let (_b, last) = local();
    let dir = tempfile::tempdir().unwrap();
    run(&first, &middle, &dir.path().join("j1")).await;
    let r = run(&middle, &last, &dir.path().join("j2")).await;
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    let crc_checked: u64 = r
        .verified_by
        .iter()
        .filter(|(k, _)| k.read == moverctl::transfer::ReadCheck::SourceCrc64)
        .map(|(_, v)| v)
        .sum();
    // Single-PUT objects carry the CRC (multipart uploads start before it is known).
    assert!(crc_checked >= 4, "{:?}", r.verified_by);
    assert_same(&first, &last).await;
}

/// Large objects are read with one GET each by default (split into parts as they stream), or
/// with one ranged GET per part on request; both end verified and byte-identical.
#[tokio::test]
async fn large_objects_are_read_with_one_get_or_one_per_part() {
    let Some(s) = servers() else { return };
    let src = at(&s, "garage", &s.bucket_a);
    let size = 3 * PART + 7;
    for k in ["big-1", "big-2"] {
        src.inner
            .put(&src.path_of(k).unwrap(), bytes_for(k, size, 1).into())
            .await
            .unwrap();
    }
    for (ranged, gets_per_object) in [(false, 1), (true, 4)] {
        let dst = at(&s, "garage", &s.bucket_b);
        let mut o = options();
        o.ranged_reads = ranged;
        let r = Run {
            src: src.clone(),
            dst: dst.clone(),
            opts: o,
            limits: Limits::unlimited().with_concurrency(4),
            journal: None,
            stop: Arc::new(AtomicBool::new(false)),
        }
        .run(|_| {})
        .await
        .unwrap();
        assert!(r.failed.is_empty(), "{:?}", r.failed);
        assert_eq!(r.copied, 2);
        assert_eq!(r.requests_get, 2 * gets_per_object, "ranged={ranged}");
        // 1 create + 4 parts + 1 complete per object.
        assert_eq!(r.requests_put, 2 * 6, "ranged={ranged}");
        assert_eq!(
            r.verified_by
                .get(&"source-md5+dest-multipart-etag".parse().unwrap()),
            Some(&2),
            "{:?}",
            r.verified_by
        );
        assert_same(&src, &dst).await;
    }
}
