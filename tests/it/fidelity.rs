//! Metadata fidelity (issue 25, item 1): the five content headers (Content-Type,
//! Content-Encoding, Content-Language, Content-Disposition, Cache-Control) and user metadata
//! (one key with a dash) travel on every path the engine picks — a small streamed PUT, a large
//! object in parts, a large single-part object in one streamed PUT, server-side CopyObject /
//! UploadPartCopy (S3 → S3), Put Block From URL (Azure → Azure) — between S3 (Garage), Azure
//! (Azurite), GCS (fake-gcs-server behind the XML shim) and local folders; moverctl's own keys
//! (file times) survive server-side copies; a local `x.json` gets `application/json`;
//! `--metadata-set` overrides, `--no-metadata` drops user keys.
//!
//! What a server cannot show: the GCS XML shim in front of fake-gcs-server keeps only the user
//! metadata of what it is sent (it stores every upload as application/octet-stream and drops the
//! other four headers), so into GCS only user metadata is checked. GCS as a source (seeded
//! through fake-gcs-server's JSON API) shows all five headers.

use super::faults::{data, go};
use super::{Servers, expect, moverctl, remotes, remotes_toml, servers, text, unique};
use moverctl::catalog::parts::{MIB, PartRule};
use moverctl::store::Store;
use moverctl::transfer::CopyOptions;
use object_store::{
    Attribute, Attributes, GetOptions, ObjectStore, PutMultipartOptions, PutOptions, PutPayload,
    WriteMultipart,
};
use std::collections::BTreeMap;

const PART: u64 = 5 * MIB;
/// Above the test's 5 MiB threshold: two parts.
const LARGE: u64 = 6 * MIB;

const HEADERS: [(&str, &str); 5] = [
    ("content-type", "text/plain; charset=utf-8"),
    ("content-encoding", "x-test"),
    ("content-language", "fr-CA"),
    ("content-disposition", "attachment; filename=\"a.txt\""),
    ("cache-control", "max-age=60"),
];
const USER: [(&str, &str); 2] = [("owner", "team-a"), ("owner-team", "blue")];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum K {
    S3,
    Azure,
    Gcs,
    Local,
}

fn header_attr(name: &str) -> Attribute {
    match name {
        "content-type" => Attribute::ContentType,
        "content-encoding" => Attribute::ContentEncoding,
        "content-language" => Attribute::ContentLanguage,
        "content-disposition" => Attribute::ContentDisposition,
        "cache-control" => Attribute::CacheControl,
        _ => unreachable!(),
    }
}

fn seeded_attributes() -> Attributes {
    let mut a = Attributes::new();
    for (k, v) in HEADERS {
        a.insert(header_attr(k), v.into());
    }
    for (k, v) in USER {
        // Azure names must be identifiers: seeded as moverctl would write them.
        a.insert(Attribute::Metadata(k.to_string().into()), v.into());
    }
    a
}

fn open(s: &Servers, k: K, source: bool) -> (Store, Option<tempfile::TempDir>) {
    let r = remotes(s);
    let p = unique("fidelity");
    match k {
        K::S3 => {
            let b = if source { &s.bucket_a } else { &s.bucket_b };
            (Store::open(&format!("garage:{b}/{p}"), &r).unwrap(), None)
        }
        K::Azure => {
            let c = if source {
                &s.az_container
            } else {
                &s.az_container2
            };
            (Store::open(&format!("azurite:{c}/{p}"), &r).unwrap(), None)
        }
        K::Gcs => (
            Store::open(&format!("gcsxml:{}/{p}", s.gcs_bucket), &r).unwrap(),
            None,
        ),
        K::Local => {
            let d = tempfile::tempdir().unwrap();
            (
                Store::open(&d.path().display().to_string(), &r).unwrap(),
                Some(d),
            )
        }
    }
}

/// The source objects: `small`, `large-single` (one PUT, above the threshold) and, where the
/// store takes parts from object_store, `large-parts` (a multipart upload).
async fn seed(s: &Servers, k: K, st: &Store) -> Vec<String> {
    let mut keys = vec!["small".to_string(), "large-single".to_string()];
    let azure = k == K::Azure;
    let mut attrs = seeded_attributes();
    if azure {
        attrs = Attributes::new();
        for (h, v) in HEADERS {
            attrs.insert(header_attr(h), v.into());
        }
        for (u, v) in USER {
            attrs.insert(
                Attribute::Metadata(moverctl::transfer::fidelity::to_azure(u).into()),
                v.into(),
            );
        }
    }
    match k {
        K::Gcs => {
            for key in &keys {
                gcs_seed(s, st, key, data(key, size_of(key))).await;
            }
        }
        K::S3 | K::Azure => {
            for key in &keys {
                st.inner
                    .put_opts(
                        &st.path_of(key).unwrap(),
                        PutPayload::from(data(key, size_of(key))),
                        PutOptions {
                            attributes: attrs.clone(),
                            ..Default::default()
                        },
                    )
                    .await
                    .unwrap();
            }
            let key = "large-parts";
            let up = st
                .inner
                .put_multipart_opts(
                    &st.path_of(key).unwrap(),
                    PutMultipartOptions {
                        attributes: attrs.clone(),
                        ..Default::default()
                    },
                )
                .await
                .unwrap();
            let mut w = WriteMultipart::new_with_chunk_size(up, PART as usize);
            w.put(data(key, LARGE));
            w.finish().await.unwrap();
            keys.push(key.into());
        }
        K::Local => unreachable!(),
    }
    keys
}

fn size_of(key: &str) -> u64 {
    if key == "small" { 1000 } else { LARGE }
}

/// An object written through fake-gcs-server's JSON API with all five headers and the user
/// keys (the XML shim keeps only some of them).
async fn gcs_seed(s: &Servers, st: &Store, key: &str, body: bytes::Bytes) {
    let name = st.path_of(key).unwrap().to_string();
    let mut meta = serde_json::Map::new();
    for (k, v) in USER {
        meta.insert(k.into(), v.into());
    }
    let resource = serde_json::json!({
        "name": name,
        "contentType": HEADERS[0].1,
        "contentEncoding": HEADERS[1].1,
        "contentLanguage": HEADERS[2].1,
        "contentDisposition": HEADERS[3].1,
        "cacheControl": HEADERS[4].1,
        "metadata": meta,
    });
    let mut b = Vec::new();
    b.extend_from_slice(b"--XX\r\nContent-Type: application/json\r\n\r\n");
    b.extend_from_slice(resource.to_string().as_bytes());
    // fake-gcs-server takes the type from the media part.
    b.extend_from_slice(format!("\r\n--XX\r\nContent-Type: {}\r\n\r\n", HEADERS[0].1).as_bytes());
    b.extend_from_slice(&body);
    b.extend_from_slice(b"\r\n--XX--\r\n");
    let r = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(format!(
            "{}/upload/storage/v1/b/{}/o?uploadType=multipart",
            s.gcs_endpoint, s.gcs_bucket
        ))
        .header("content-type", "multipart/related; boundary=XX")
        .body(b)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{:?}", r.text().await);
}

/// Content headers and user metadata of `key` as the store shows them (names as stored).
async fn shown(st: &Store, key: &str) -> BTreeMap<String, String> {
    let r = st
        .inner
        .get_opts(
            &st.path_of(key).unwrap(),
            GetOptions {
                head: true,
                ..Default::default()
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{key}: {e}"));
    let mut m = BTreeMap::new();
    for (k, v) in &r.attributes {
        let name = match k {
            Attribute::Metadata(n) => format!("meta:{n}"),
            a => match HEADERS.iter().find(|(h, _)| &header_attr(h) == a) {
                Some((h, _)) => h.to_string(),
                None => continue,
            },
        };
        m.insert(name, v.to_string());
    }
    m
}

/// What `dst` must show for an object seeded with every field: all of it, user keys named for
/// the store; into the GCS shim, user metadata only (it stores every upload as
/// application/octet-stream and drops the other headers).
fn expected(dst: K, source: bool) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for (h, v) in HEADERS {
        if dst != K::Gcs || source {
            m.insert(h.to_string(), v.to_string());
        }
    }
    for (u, v) in USER {
        let n = if dst == K::Azure {
            moverctl::transfer::fidelity::to_azure(u)
        } else {
            u.to_string()
        };
        m.insert(format!("meta:{n}"), v.to_string());
    }
    m
}

fn options(server_side: bool) -> CopyOptions {
    let mut o = super::copy::options();
    o.part_rule = PartRule {
        threshold: PART,
        preferred_part: PART,
    };
    o.server_side = server_side;
    // As the CLI does by default.
    o.stream_single_put = true;
    o
}

/// One pair, one mode: every seeded object arrives with every field; returns how each was
/// verified (which says the path it took).
async fn pair(
    s: &Servers,
    src_kind: K,
    dst_kind: K,
    server_side: bool,
) -> BTreeMap<String, String> {
    pair_with(s, src_kind, dst_kind, server_side, false).await
}

/// [`pair`]; `crc`: the destination checks and keeps `x-amz-checksum-crc64nvme` (what a saved
/// probe of Garage grants), so writes take the checksum-only path (presigned PUTs).
async fn pair_with(
    s: &Servers,
    src_kind: K,
    dst_kind: K,
    server_side: bool,
    crc: bool,
) -> BTreeMap<String, String> {
    let (src, _a) = open(s, src_kind, true);
    let (mut dst, _b) = open(s, dst_kind, false);
    dst.caps.checks_crc64nvme = crc;
    let keys = seed(s, src_kind, &src).await;
    let what = format!("{src_kind:?} -> {dst_kind:?} (server-side allowed: {server_side})");
    for key in &keys {
        let at_source = shown(&src, key).await;
        assert_eq!(
            at_source,
            expected(src_kind, true),
            "{what}: the seed of {key}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let out = go(
        &src,
        &dst,
        &dir.path().join("j.sqlite"),
        options(server_side),
    )
    .await;
    assert!(out.failed.is_empty(), "{what}: {:?}", out.failed);
    for key in &keys {
        if dst_kind == K::Local {
            continue;
        }
        let mut got = shown(&dst, key).await;
        got.retain(|k, _| {
            !k.starts_with("meta:moverctl_") && (dst_kind != K::Gcs || k.starts_with("meta:"))
        });
        assert_eq!(
            got,
            expected(dst_kind, false),
            "{what}: {key} (verified by {})",
            out.copied[key]
        );
    }
    out.copied
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_field_travels_on_every_pair_and_path() {
    let Some(s) = servers() else { return };
    let mut lines = Vec::new();
    for src in [K::S3, K::Azure, K::Gcs] {
        for dst in [K::S3, K::Azure, K::Gcs, K::Local] {
            let by = pair(&s, src, dst, false).await;
            // Every object was read through this machine: small PUT, parts, one streamed PUT.
            for (k, v) in &by {
                assert!(
                    !v.ends_with("dest-copy-etag") && !v.contains("dest-copy-block"),
                    "{src:?} -> {dst:?}: {k} by {v}"
                );
                lines.push(format!("{src:?} -> {dst:?} streamed | {k} | {v}"));
            }
        }
    }
    // S3 -> S3 on one Garage: CopyObject and UploadPartCopy / one CopyObject of the parts.
    let by = pair(&s, K::S3, K::S3, true).await;
    for (k, v) in &by {
        assert!(
            v.ends_with("+dest-copy-etag"),
            "S3 -> S3 server-side: {k} by {v}"
        );
        lines.push(format!("S3 -> S3 server-side | {k} | {v}"));
    }
    // Azure -> Azure on Azurite: Put Block From URL for what states an MD5.
    let by = pair(&s, K::Azure, K::Azure, true).await;
    assert!(
        by.values().any(|v| v.contains("dest-copy-block")),
        "Azure -> Azure from URL: {by:?}"
    );
    for (k, v) in &by {
        lines.push(format!("Azure -> Azure from URL | {k} | {v}"));
    }
    // Into S3 on the checksum-only path: presigned PUTs and parts bound to the CRC64.
    let by = pair_with(&s, K::Azure, K::S3, false, true).await;
    assert!(
        by.values().any(|v| v.ends_with("+dest-checksum")),
        "checksum-only: {by:?}"
    );
    for (k, v) in &by {
        lines.push(format!("Azure -> S3 checksum-only | {k} | {v}"));
    }
    // S3 -> Azure with copies from URL allowed (Azurite cannot read an S3 URL: it streams).
    pair(&s, K::S3, K::Azure, true).await;
    eprintln!("{}", lines.join("\n"));
}

/// A local file's times and mode are moverctl's keys: they survive S3 -> S3 on the server and
/// Azure -> Azure from a URL, and a last hop back to a folder restores them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_times_survive_server_side_hops_back_to_local() {
    use std::os::unix::fs::PermissionsExt;
    let Some(s) = servers() else { return };
    let (first, first_dir) = open(&s, K::Local, true);
    let root = first_dir.as_ref().unwrap().path();
    let mtime = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
    for (key, size) in [("x.json", 1000u64), ("big.bin", LARGE)] {
        let p = root.join(key);
        std::fs::write(&p, data(key, size)).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
    }
    let (s3a, _) = open(&s, K::S3, true);
    let (s3b, _) = open(&s, K::S3, false);
    let (aza, _) = open(&s, K::Azure, true);
    let (azb, _) = open(&s, K::Azure, false);
    let (last, last_dir) = open(&s, K::Local, false);
    let dir = tempfile::tempdir().unwrap();
    let mut n = 0;
    for (a, b, ss, path) in [
        (&first, &s3a, false, ""),
        (&s3a, &s3b, true, "+dest-copy-etag"),
        (&s3b, &aza, true, ""),
        (&aza, &azb, true, "dest-copy-block"),
        (&azb, &last, false, ""),
    ] {
        n += 1;
        let out = go(a, b, &dir.path().join(format!("j{n}.sqlite")), options(ss)).await;
        assert!(out.failed.is_empty(), "hop {n}: {:?}", out.failed);
        if !path.is_empty() {
            assert!(
                out.copied.values().any(|v| v.contains(path)),
                "hop {n}: {:?}",
                out.copied
            );
        }
        if b.local_root.is_none() {
            assert_eq!(
                shown(b, "x.json")
                    .await
                    .get("content-type")
                    .map(String::as_str),
                Some("application/json"),
                "hop {n}"
            );
        }
    }
    let back = last_dir.as_ref().unwrap().path();
    for key in ["x.json", "big.bin"] {
        let m = std::fs::metadata(back.join(key)).unwrap();
        assert_eq!(m.modified().unwrap(), mtime, "{key}: mtime");
        assert_eq!(m.permissions().mode() & 0o777, 0o640, "{key}: mode");
    }
    drop(last);
}

fn cli_conf(s: &Servers) -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let c = d.path().join("remotes.toml");
    std::fs::write(&c, remotes_toml(s)).unwrap();
    (d, c)
}

/// `copy` local -> S3 with the flags: x.json gets application/json (aws-cli's guess), then
/// `--metadata-set` overrides the type and adds a key, and `--no-metadata` copies no user key
/// of the source.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_types_and_the_metadata_flags() {
    let Some(s) = servers() else { return };
    let (d, conf) = cli_conf(&s);
    let files = d.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("x.json"), b"{}").unwrap();
    std::fs::write(files.join("page.html"), b"<p>").unwrap();
    std::fs::write(files.join("noext"), b"?").unwrap();
    let p = unique("fidelity-cli");
    let dst = format!("garage:{}/{p}", s.bucket_a);
    let run = |args: &[&str], from: &str, to: &str| {
        let st = tempfile::tempdir().unwrap();
        let o = moverctl()
            .arg("--config")
            .arg(&conf)
            .arg("copy")
            .args(args)
            .arg(from)
            .arg(to)
            .env("MOVERCTL_STATE_DIR", st.path())
            .output()
            .unwrap();
        expect(&o, 0);
        text(&o)
    };
    run(&[], files.to_str().unwrap(), &dst);
    let r = remotes(&s);
    let st = Store::open(&dst, &r).unwrap();
    let t = |m: &BTreeMap<String, String>| m.get("content-type").cloned();
    assert_eq!(
        t(&shown(&st, "x.json").await).as_deref(),
        Some("application/json")
    );
    assert_eq!(
        t(&shown(&st, "page.html").await).as_deref(),
        Some("text/html")
    );
    assert_ne!(
        t(&shown(&st, "noext").await).as_deref(),
        Some("application/json")
    );

    // Seeded with user keys, copied S3 -> S3 streamed with the flags.
    let (src, _) = open(&s, K::S3, true);
    let _ = seed(&s, K::S3, &src).await;
    let src_loc = format!("garage:{}/{}", s.bucket_a, src.prefix.trim_end_matches('/'));
    for ss in [false, true] {
        let over = format!("garage:{}/{}-over-{ss}", s.bucket_b, unique("fid"));
        let mut args = vec![
            "--metadata-set",
            "Content-Type=application/x-test",
            "--metadata-set",
            "added-key=v1",
            "--multipart-threshold",
            "5MiB",
            "--part-size",
            "5MiB",
        ];
        if !ss {
            args.push("--no-server-side");
        }
        run(&args, &src_loc, &over);
        let o = Store::open(&over, &r).unwrap();
        for key in ["small", "large-single", "large-parts"] {
            let m = shown(&o, key).await;
            assert_eq!(
                m.get("content-type").map(String::as_str),
                Some("application/x-test"),
                "{key} (server-side {ss}): {m:?}"
            );
            assert_eq!(
                m.get("meta:added-key").map(String::as_str),
                Some("v1"),
                "{key}"
            );
            assert_eq!(
                m.get("meta:owner").map(String::as_str),
                Some("team-a"),
                "{key}"
            );
            assert_eq!(
                m.get("cache-control").map(String::as_str),
                Some("max-age=60")
            );
        }
        let none = format!("garage:{}/{}-none-{ss}", s.bucket_b, unique("fid"));
        let mut args = vec![
            "--no-metadata",
            "--multipart-threshold",
            "5MiB",
            "--part-size",
            "5MiB",
        ];
        if !ss {
            args.push("--no-server-side");
        }
        run(&args, &src_loc, &none);
        let o = Store::open(&none, &r).unwrap();
        for key in ["small", "large-single", "large-parts"] {
            let m = shown(&o, key).await;
            let user: Vec<&String> = m
                .keys()
                .filter(|k| k.starts_with("meta:") && !k.starts_with("meta:moverctl_"))
                .collect();
            assert!(user.is_empty(), "{key} (server-side {ss}): {user:?}");
            // moverctl's own keys are still written.
            assert!(m.contains_key("meta:moverctl_size"), "{key}: {m:?}");
        }
    }
}

/// Tags of `key` on moto, read with GetObjectTagging.
async fn moto_tags(s3: &object_store::aws::AmazonS3, key: &str) -> Vec<(String, String)> {
    use object_store::signer::{Method, SignedUrlOptions, Signer};
    let opts = SignedUrlOptions::default().with_query([("tagging", String::new())]);
    let url = s3
        .signed_url_opts(
            Method::GET,
            &object_store::path::Path::from(key),
            std::time::Duration::from_secs(60),
            &opts,
        )
        .await
        .unwrap();
    let body = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .get(url)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let mut out: Vec<(String, String)> = body
        .split("<Tag>")
        .skip(1)
        .map(|t| {
            let f = |n: &str| {
                t.split(&format!("<{n}>"))
                    .nth(1)
                    .and_then(|r| r.split(&format!("</{n}>")).next())
                    .unwrap_or_default()
                    .to_string()
            };
            (f("Key"), f("Value"))
        })
        .collect();
    out.sort();
    out
}

/// S3 -> S3 keeps object tags: streamed (GetObjectTagging, then `x-amz-tagging` on the PUT, the
/// one streamed PUT and the multipart upload) and on the server (CopyObject's tagging directive
/// COPY). Garage implements no tagging, so this runs on a moto server of its own (moto answers
/// a pinned HEAD of part 1 of its own multipart uploads 412, so the sources are single-part).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_tags_travel_s3_to_s3() {
    let Some(mut moto) = super::probe::start_moto() else {
        return;
    };
    moto.create_bucket("tsrc");
    moto.create_bucket("tdst");
    let client = |bucket: &str| {
        object_store::aws::AmazonS3Builder::new()
            .with_endpoint(format!("http://127.0.0.1:{}", moto.port))
            .with_allow_http(true)
            .with_region("us-east-1")
            .with_bucket_name(bucket)
            .with_access_key_id("testing")
            .with_secret_access_key("testing")
            .build()
            .unwrap()
    };
    let src = client("tsrc");
    let mut tags = object_store::TagSet::default();
    tags.push("team", "a b");
    tags.push("tier", "gold");
    let want = vec![
        ("team".to_string(), "a b".to_string()),
        ("tier".to_string(), "gold".to_string()),
    ];
    for (key, n) in [("p/small", 1000u64), ("p/large-single", LARGE)] {
        src.put_opts(
            &object_store::path::Path::from(key),
            PutPayload::from(data(key, n)),
            PutOptions {
                tags: tags.clone(),
                attributes: seeded_attributes(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    }
    for key in ["p/small", "p/large-single"] {
        assert_eq!(moto_tags(&src, key).await, want, "seed {key}");
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("remotes.toml");
    std::fs::write(
        &cfg,
        format!(
            "[remotes.moto]\ntype = \"s3\"\nendpoint = \"http://127.0.0.1:{}\"\nregion = \"us-east-1\"\naccess_key_id_env = \"FID_MOTO_KEY\"\nsecret_access_key_env = \"FID_MOTO_SECRET\"\n",
            moto.port
        ),
    )
    .unwrap();
    let dst = client("tdst");
    // Streamed (one PUT; the large one in one streamed PUT), streamed in parts, on the server.
    for (server_side, parts) in [(false, false), (false, true), (true, false)] {
        let to = format!("out-{server_side}-{parts}");
        let mut c = moverctl();
        c.env("FID_MOTO_KEY", "testing")
            .env("FID_MOTO_SECRET", "testing")
            .arg("--config")
            .arg(&cfg)
            .args([
                "copy",
                "--json",
                "--multipart-threshold",
                "5MiB",
                "--part-size",
                "5MiB",
            ]);
        if !server_side {
            c.arg("--no-server-side");
        }
        if parts {
            c.arg("--no-streamed-put");
        }
        let o = c
            .arg("moto:tsrc/p")
            .arg(format!("moto:tdst/{to}"))
            .output()
            .unwrap();
        expect(&o, 0);
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        let summary: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        assert_eq!(summary["copied"]["objects"], 2, "{out}");
        if server_side {
            assert_eq!(summary["server_side"]["objects"], 2, "{out}");
        }
        for key in ["small", "large-single"] {
            assert_eq!(
                moto_tags(&dst, &format!("{to}/{key}")).await,
                want,
                "{key} (server-side {server_side}): {out}"
            );
        }
    }
}
