//! Server-side copy (issue 15): two buckets of one Garage reached with the same credentials are
//! copied with CopyObject and UploadPartCopy, every request counted at a proxy in front of the
//! one service: no object byte passes through moverctl, each object is proven by the ETag the
//! server computed, a wrong answer falls back to a streamed (and verified) copy, a killed
//! multipart copy resumes at part level, and two different services stream as before.

use super::faults::data;
use super::faults::proxy::{PFault, Proxy};
use super::{expect, has_header, proxy_remote_toml, remotes, servers, text, unique, verified};
use moverctl::store::Store;
use object_store::{ObjectStoreExt, PutPayload, WriteMultipart};
use serde_json::Value;

const MIB: u64 = 1 << 20;

/// Objects as other tools write them: two single PUTs and one multipart upload in 5 MiB parts
/// (12 MiB: three parts, the last 2 MiB).
const SINGLE_A: (&str, u64) = ("one/a.bin", 10_000);
const SINGLE_B: (&str, u64) = ("one/b b+é.bin", MIB + 7);
const MULTI: (&str, u64) = ("multi/ckpt.safetensors", 12 * MIB);

async fn seed(store: &Store) {
    for (k, size) in [SINGLE_A, SINGLE_B] {
        store
            .inner
            .put(&store.path_of(k).unwrap(), PutPayload::from(data(k, size)))
            .await
            .unwrap();
    }
    let up = store
        .inner
        .put_multipart(&store.path_of(MULTI.0).unwrap())
        .await
        .unwrap();
    let mut w = WriteMultipart::new_with_chunk_size(up, 5 * MIB as usize);
    w.put(data(MULTI.0, MULTI.1));
    w.finish().await.unwrap();
}

struct Setup {
    dir: tempfile::TempDir,
    conf: std::path::PathBuf,
    proxy: Proxy,
    prefix: String,
    src: Store,
    bucket_a: String,
    bucket_b: String,
}

async fn setup(name: &str) -> Option<Setup> {
    let s = servers()?;
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::start(super::s3_upstream(&s)).await;
    let conf = dir.path().join("remotes.toml");
    std::fs::write(&conf, proxy_remote_toml(&s, &proxy.endpoint())).unwrap();
    let prefix = unique(name);
    let src = Store::open(&format!("garage:{}/{prefix}", s.bucket_a), &remotes(&s)).unwrap();
    seed(&src).await;
    Some(Setup {
        dir,
        conf,
        proxy,
        prefix,
        src,
        bucket_a: s.bucket_a.clone(),
        bucket_b: s.bucket_b.clone(),
    })
}

impl Setup {
    fn dst(&self, prefix: &str) -> Store {
        let s = servers().unwrap();
        Store::open(&format!("garage:{}/{prefix}", self.bucket_b), &remotes(&s)).unwrap()
    }

    /// `moverctl copy --json` from the source prefix to `dst_prefix` of bucket b, both through
    /// the proxy (one service).
    async fn copy(&self, dst_prefix: &str, extra: &[&str]) -> (std::process::Output, Value) {
        let mut c = super::moverctl();
        c.args(["copy", "--json", "--config"])
            .arg(&self.conf)
            .args(extra)
            .arg(format!("viaproxy:{}/{}", self.bucket_a, self.prefix))
            .arg(format!("viaproxy:{}/{dst_prefix}", self.bucket_b))
            .env("MOVERCTL_STATE_DIR", self.dir.path().join("state"));
        let o = tokio::task::spawn_blocking(move || c.output().unwrap())
            .await
            .unwrap();
        let v = summary(&o);
        (o, v)
    }

    /// Server-side copy requests the proxy saw (CopyObject and UploadPartCopy: PUTs with
    /// `x-amz-copy-source`).
    fn copy_requests(&self) -> usize {
        self.proxy
            .log()
            .iter()
            .filter(|(m, _, h)| m == "PUT" && has_header(h, "x-amz-copy-source"))
            .count()
    }

    /// Bytes of object data the proxy saw go to or come from the store: request bodies of PUTs
    /// and POSTs (object bytes or XML), and GETs of objects (not listings or HEADs).
    fn object_requests(&self) -> (Vec<String>, u64) {
        let log = self.proxy.log();
        let gets = log
            .iter()
            .filter(|(method, target, _)| method == "GET" && !target.contains("list-type"))
            .map(|(_, target, _)| target.clone())
            .collect();
        (gets, super::body_bytes(&log))
    }
}

/// The `--json` summary line of a run (Null when it printed none).
fn summary(o: &std::process::Output) -> Value {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .rfind(|l| l.contains("\"summary\""))
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_service_copies_on_the_server_and_proves_every_object() {
    let Some(t) = setup("ss-copy").await else {
        return;
    };
    let dst = unique("ss-copy-dst");
    let (o, v) = t.copy(&dst, &[]).await;
    expect(&o, 0);
    assert_eq!(verified(&v, "source-md5+dest-copy-etag"), 2, "{}", text(&o));
    assert_eq!(
        verified(&v, "source-parts-etag+dest-copy-etag"),
        1,
        "{}",
        text(&o)
    );
    assert_eq!(v["server_side"]["objects"], 3, "{v}");
    assert_eq!(
        v["server_side"]["bytes"].as_u64(),
        Some(SINGLE_A.1 + SINGLE_B.1 + MULTI.1)
    );
    assert_eq!(v["bytes_read"], 0, "{v}");
    assert_eq!(v["bytes_written"], 0, "{v}");
    // At the proxy: no GET of an object, and request bodies only of XML (the completion).
    let (gets, body) = t.object_requests();
    assert!(gets.is_empty(), "objects were read: {gets:?}");
    assert!(body < 4_096, "{body} bytes of request bodies went through");
    let copies = t.copy_requests();
    // Three CopyObject: Garage keeps a copied object's parts, so the multipart object's copy
    // answers with its own multipart ETag and needs no part copies.
    assert_eq!(copies, 3);
    assert!(
        !t.proxy
            .log()
            .iter()
            .any(|(m, p, _)| m == "PUT" && p.contains("partNumber=")),
        "part copies were made"
    );
    // Byte-exact, and moverctl's metadata is on the copies.
    let d = t.dst(&dst);
    super::copy::assert_same(&t.src, &d).await;
    for (k, size) in [SINGLE_A, SINGLE_B, MULTI] {
        let head = d
            .inner
            .get_opts(
                &d.path_of(k).unwrap(),
                object_store::GetOptions {
                    head: true,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(
            head.attributes
                .get(&object_store::Attribute::Metadata(
                    moverctl::checksum::META_SIZE.into()
                ))
                .map(|v| v.to_string()),
            Some(size.to_string()),
            "{k}"
        );
    }
    // The human summary says what happened.
    let o = super::moverctl()
        .args(["copy", "--config"])
        .arg(&t.conf)
        .arg(format!("viaproxy:{}/{}", t.bucket_a, t.prefix))
        .arg(format!(
            "viaproxy:{}/{}",
            t.bucket_b,
            unique("ss-copy-human")
        ))
        .env("MOVERCTL_STATE_DIR", t.dir.path().join("state"))
        .output()
        .unwrap();
    expect(&o, 0);
    assert!(
        text(&o).contains("server-side: 3 objects")
            && text(&o).contains("no bytes through this machine"),
        "{}",
        text(&o)
    );
    // The rate counts the bytes the service copied.
    assert!(
        text(&o).contains("time: ") && !text(&o).contains(" at 0 B/s"),
        "{}",
        text(&o)
    );
    // A second run finds everything there.
    let (o, v) = t.copy(&dst, &[]).await;
    expect(&o, 0);
    assert_eq!(v["skipped"]["objects"], 3, "{v}");

    // --no-server-side streams the same objects through this machine.
    let streamed = unique("ss-copy-streamed");
    let (o, v) = t.copy(&streamed, &["--no-server-side"]).await;
    expect(&o, 0);
    assert_eq!(v["server_side"]["objects"], 0, "{v}");
    assert_eq!(
        v["bytes_read"].as_u64(),
        Some(SINGLE_A.1 + SINGLE_B.1 + MULTI.1)
    );
    assert_eq!(verified(&v, "source-md5+dest-md5"), 2, "{v}");
    super::copy::assert_same(&t.src, &t.dst(&streamed)).await;
}

/// A copy answer whose ETag is not the source's (a server that wrote other bytes) is never
/// taken for a copy: the object is deleted and streamed, and verified that way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_copy_answer_falls_back_to_a_verified_streamed_copy() {
    let Some(t) = setup("ss-bogus").await else {
        return;
    };
    let dst = unique("ss-bogus-dst");
    // The CopyObject of b.bin; the CopyObject of the multipart object (the run then copies it
    // part by part) and its second part copy.
    t.proxy
        .add("PUT", &format!("{dst}/one/b"), "", PFault::BogusEtag, 1);
    t.proxy
        .add("PUT", &format!("{dst}/multi"), "", PFault::BogusEtag, 1);
    t.proxy.add(
        "PUT",
        &format!("{dst}/multi"),
        "partNumber=2",
        PFault::BogusEtag,
        1,
    );
    let (o, v) = t.copy(&dst, &[]).await;
    expect(&o, 0);
    assert!(t.proxy.unspent().is_empty(), "{:?}", t.proxy.unspent());
    assert_eq!(verified(&v, "source-md5+dest-copy-etag"), 1, "{}", text(&o));
    assert_eq!(verified(&v, "source-md5+dest-md5"), 1, "{}", text(&o));
    // 12 MiB streams as one PUT (below the 64 MiB multipart threshold).
    assert_eq!(
        verified(&v, "source-parts-etag+dest-md5"),
        1,
        "{}",
        text(&o)
    );
    assert_eq!(v["server_side"]["objects"], 1, "{v}");
    assert_eq!(v["bytes_read"].as_u64(), Some(SINGLE_B.1 + MULTI.1), "{v}");
    super::copy::assert_same(&t.src, &t.dst(&dst)).await;
}

/// A multipart server-side copy that fails at its last part keeps the parts already copied;
/// the next run copies only the missing part and completes with the source's ETag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_multipart_copy_resumes_at_part_level() {
    let Some(t) = setup("ss-resume").await else {
        return;
    };
    let dst = unique("ss-resume-dst");
    // A wrong answer to the one CopyObject sends the object to part copies; part 3 then fails.
    t.proxy
        .add("PUT", &format!("{dst}/multi"), "", PFault::BogusEtag, 1);
    t.proxy.add(
        "PUT",
        &format!("{dst}/multi"),
        "partNumber=3",
        PFault::ServerError,
        1_000,
    );
    let (o, v) = t
        .copy(&dst, &["--retry-timeout", "1s", "--part-concurrency", "1"])
        .await;
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(v["failed"]["objects"], 1, "{v}");
    t.proxy.clear();
    let before = t.proxy.log().len();
    let (o, v) = t.copy(&dst, &[]).await;
    expect(&o, 0);
    assert_eq!(v["resumed_parts"], 2, "{v}");
    assert_eq!(
        verified(&v, "source-parts-etag+dest-copy-etag"),
        1,
        "{}",
        text(&o)
    );
    let part_copies: Vec<String> = t.proxy.log()[before..]
        .iter()
        .filter(|(m, p, _)| m == "PUT" && p.contains("partNumber="))
        .map(|(_, p, _)| p.clone())
        .collect();
    assert_eq!(part_copies.len(), 1, "{part_copies:?}");
    assert!(part_copies[0].contains("partNumber=3"), "{part_copies:?}");
    super::copy::assert_same(&t.src, &t.dst(&dst)).await;
}

/// A copy answer that says the destination encrypts with SSE-KMS (its ETags are not MD5s) turns
/// server-side copy off for the run: that copy is deleted and every object streams, verified.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_encrypting_destination_turns_server_side_copy_off() {
    let Some(t) = setup("ss-kms").await else {
        return;
    };
    let dst = unique("ss-kms-dst");
    // One object at a time: the multipart object comes first in key order.
    t.proxy
        .add("PUT", &format!("{dst}/multi"), "", PFault::KmsEtag, 1);
    let (o, v) = t.copy(&dst, &["--transfers", "1"]).await;
    expect(&o, 0);
    assert!(t.proxy.unspent().is_empty(), "{:?}", t.proxy.unspent());
    assert_eq!(v["server_side"]["objects"], 0, "{v}");
    let copies = t.copy_requests();
    assert_eq!(
        copies, 1,
        "server-side copies went on after the SSE-KMS answer"
    );
    assert!(
        text(&o).contains("SSE-KMS"),
        "the run does not say why it streams: {}",
        text(&o)
    );
    assert_eq!(
        v["bytes_read"].as_u64(),
        Some(SINGLE_A.1 + SINGLE_B.1 + MULTI.1)
    );
    super::copy::assert_same(&t.src, &t.dst(&dst)).await;
}

/// A source encrypted with SSE-KMS: its ETags are no MD5s (AWS documents it), so the copy's MD5
/// ETag cannot match the source's. Garage keeps MD5 ETags, so the proxy answers the source's GETs
/// and HEADs as AWS does for such objects and the CopyObject of the first single object with an
/// ETag other than the listed one. The multipart object (first in key order) is streamed at once
/// (its part-1 HEAD shows the encryption); the first single object's copy is deleted, one HEAD
/// of the source shows why, and the run streams from then on: one CopyObject in all, not one per
/// object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_encrypted_source_turns_server_side_copy_off() {
    let Some(t) = setup("ss-kms-src").await else {
        return;
    };
    let dst = unique("ss-kms-src-dst");
    for m in ["GET", "HEAD"] {
        let at = format!("/{}/{}/", t.bucket_a, t.prefix);
        t.proxy.add(m, &at, "", PFault::SourceKms, u32::MAX);
    }
    t.proxy.add(
        "PUT",
        &format!("{dst}/{}", SINGLE_A.0),
        "",
        PFault::BogusEtag,
        1,
    );
    let (o, v) = t.copy(&dst, &["--transfers", "1"]).await;
    // The streamed copies are exact, but nothing the source states proves its bytes (its ETags
    // are no MD5s and it keeps no checksum): unverified under the default --verify auto.
    expect(&o, 9);
    assert_eq!(v["unverified"]["objects"], 3, "{v}");
    assert_eq!(v["server_side"]["objects"], 0, "{v}");
    assert_eq!(t.copy_requests(), 1, "{}", text(&o));
    assert!(
        text(&o).contains("the source is encrypted"),
        "the run does not say why it streams: {}",
        text(&o)
    );
    assert_eq!(
        v["bytes_read"].as_u64(),
        Some(SINGLE_A.1 + SINGLE_B.1 + MULTI.1)
    );
    super::copy::assert_same(&t.src, &t.dst(&dst)).await;
}

/// Two different services (two Garage clusters): nothing can be copied on the server, and the
/// run streams as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_services_stream() {
    let Some(s) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("remotes.toml");
    std::fs::write(&conf, super::remotes_toml(&s)).unwrap();
    let p = unique("ss-two");
    let src = Store::open(&format!("garage:{}/{p}", s.bucket_a), &remotes(&s)).unwrap();
    seed(&src).await;
    let o = super::moverctl()
        .args(["copy", "--json", "--config"])
        .arg(&conf)
        .arg(format!("garage:{}/{p}", s.bucket_a))
        .arg(format!("garage2:{}/{p}", s.bucket_c))
        .env("MOVERCTL_STATE_DIR", dir.path().join("state"))
        .output()
        .unwrap();
    expect(&o, 0);
    let v = summary(&o);
    assert_eq!(v["server_side"]["objects"], 0, "{v}");
    assert_eq!(
        v["bytes_read"].as_u64(),
        Some(SINGLE_A.1 + SINGLE_B.1 + MULTI.1)
    );
}

/// Streamed between two services, a multipart source in 16 MiB parts is copied in its own
/// layout (not the planned 64 MiB): its multipart ETag is checked from the part MD5s the upload
/// computes anyway, and the copy's ETag is the source's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_multipart_source_keeps_its_part_layout() {
    let Some(s) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("remotes.toml");
    std::fs::write(&conf, super::remotes_toml(&s)).unwrap();
    let p = unique("ss-layout");
    let src = Store::open(&format!("garage:{}/{p}", s.bucket_a), &remotes(&s)).unwrap();
    let key = "ckpt/model-00001.safetensors";
    let size = 40 * MIB + 5;
    let up = src
        .inner
        .put_multipart(&src.path_of(key).unwrap())
        .await
        .unwrap();
    let mut w = WriteMultipart::new_with_chunk_size(up, 16 * MIB as usize);
    w.put(data(key, size));
    w.finish().await.unwrap();
    let o = super::moverctl()
        .args([
            "copy",
            "--json",
            "--multipart-threshold",
            "16MiB",
            "--config",
        ])
        .arg(&conf)
        .arg(format!("garage:{}/{p}", s.bucket_a))
        .arg(format!("garage2:{}/{p}", s.bucket_c))
        .env("MOVERCTL_STATE_DIR", dir.path().join("state"))
        .output()
        .unwrap();
    expect(&o, 0);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("source-parts-etag+dest-multipart-etag"),
        "{}",
        text(&o)
    );
    let dst = Store::open(&format!("garage2:{}/{p}", s.bucket_c), &remotes(&s)).unwrap();
    let etag = |st: &Store| {
        let st = st.clone();
        async move {
            st.inner
                .head(&st.path_of(key).unwrap())
                .await
                .unwrap()
                .e_tag
                .map(|e| moverctl::checksum::etag_norm(&e))
        }
    };
    let (a, b) = (etag(&src).await, etag(&dst).await);
    assert!(a.as_deref().is_some_and(|e| e.ends_with("-3")), "{a:?}");
    assert_eq!(a, b, "the copy was not made in the source's 16 MiB parts");
}

/// A multipart object written with a full-object CRC64 (as moverctl's checksum path and current
/// SDKs write them), put under `key` of the source.
async fn seed_crc64_multipart(store: &Store, key: &str, size: u64) {
    let w = store.crc_writer.clone().expect("an S3 store");
    let up = w
        .inner
        .put_multipart(&store.path_of(key).unwrap())
        .await
        .unwrap();
    let mut m = WriteMultipart::new_with_chunk_size(up, 5 * MIB as usize);
    m.put(data(key, size));
    m.finish().await.unwrap();
}

/// Garage copies a multipart object that keeps a full-object CRC64 as one new object with
/// another ETag (an MD5 of the whole) and the same stored CRC64: one CopyObject, proven by the
/// two stored checksums (a HEAD of each), never deleted and copied again part by part. A
/// destination that states another checksum is not taken: that copy is deleted and the object
/// copied part by part, proven by its parts' ETags.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multipart_object_with_a_stored_crc64_is_one_copy_proven_by_the_checksums() {
    let Some(t) = setup("ss-crc").await else {
        return;
    };
    const CRC: (&str, u64) = ("crc/ckpt.bin", 11 * MIB + 3);
    seed_crc64_multipart(&t.src, CRC.0, CRC.1).await;
    let dst = unique("ss-crc-dst");
    let (o, v) = t.copy(&dst, &[]).await;
    expect(&o, 0);
    assert_eq!(
        verified(&v, "source-checksum+dest-copy-checksum"),
        1,
        "{}",
        text(&o)
    );
    assert_eq!(v["server_side"]["objects"], 4, "{v}");
    assert_eq!(v["bytes_read"], 0, "{v}");
    // One CopyObject per object: no part copies, and nothing deleted.
    assert_eq!(t.copy_requests(), 4);
    let log = short_log(&t);
    assert!(
        !log.iter()
            .any(|l| l.contains("partNumber=") && l.starts_with("PUT")
                || l.starts_with("DELETE")
                || l.ends_with("?delete")),
        "{log:?}"
    );
    let d = t.dst(&dst);
    super::copy::assert_same(&t.src, &d).await;

    // The destination's HEAD states another CRC64: that copy proves nothing.
    let dst2 = unique("ss-crc-bogus");
    t.proxy.clear();
    t.proxy.add(
        "HEAD",
        &format!("{dst2}/{}", CRC.0),
        "",
        PFault::BogusChecksum,
        1,
    );
    let (o, v) = t.copy(&dst2, &[]).await;
    expect(&o, 0);
    assert!(t.proxy.unspent().is_empty(), "{:?}", t.proxy.unspent());
    assert_eq!(
        verified(&v, "source-checksum+dest-copy-checksum"),
        0,
        "{}",
        text(&o)
    );
    assert_eq!(
        verified(&v, "source-parts-etag+dest-copy-etag"),
        2,
        "{}",
        text(&o)
    );
    // The unproven copy was deleted (object_store deletes in bulk), then copied part by part.
    let log = short_log(&t);
    assert!(
        log.iter()
            .any(|l| l.starts_with("POST") && l.ends_with("?delete")
                || l.starts_with("DELETE") && l.contains(&format!("{dst2}/crc/"))),
        "{log:?}"
    );
    assert!(
        log.iter()
            .any(|l| l.starts_with("PUT") && l.contains("/crc/") && l.contains("partNumber=")),
        "{log:?}"
    );
    super::copy::assert_same(&t.src, &t.dst(&dst2)).await;
}

/// The proxy's log as `METHOD path?query` lines without signatures (for assertion messages).
fn short_log(t: &Setup) -> Vec<String> {
    t.proxy
        .log()
        .iter()
        .map(|(m, p, _)| {
            let keep: Vec<&str> = p
                .split(['?', '&'])
                .skip(1)
                .filter(|q| !q.starts_with("X-Amz-"))
                .collect();
            let path = p.split('?').next().unwrap_or(p);
            if keep.is_empty() {
                format!("{m} {path}")
            } else {
                format!("{m} {path}?{}", keep.join("&"))
            }
        })
        .collect()
}
