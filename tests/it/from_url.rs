//! Copies into Azure from a signed URL of the source (issue 15: Put Block From URL), on Azurite
//! (3.37 copies from URLs of its own blobs only), every request counted at a proxy in front of
//! it: Azure sources are copied by the service itself, no object byte passes through moverctl,
//! and every object is proven by the digests the service answered for the blocks it fetched; a
//! block that does not match the source's digest is never committed; a source the service
//! cannot read (Garage, another host to Azurite) streams after one refused attempt.

use super::faults::data;
use super::faults::proxy::{PFault, Proxy, Seen};
use super::{Servers, expect, has_header, remotes, remotes_toml, servers, text, unique, verified};
use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use moverctl::checksum::{crc64_hex, crc64_of};
use moverctl::store::Store;
use object_store::signer::{Method, Signer};
use object_store::{Attribute, ObjectStoreExt, PutPayload};
use serde_json::Value;
use std::time::Duration;

const MIB: u64 = 1 << 20;

struct Setup {
    dir: tempfile::TempDir,
    conf: std::path::PathBuf,
    proxy: Proxy,
    s: Servers,
}

/// A proxy in front of Azurite, keeping the client's Host header (Azurite copies from a URL only
/// when its host is the one the request came to), and a remote `azproxy` through it.
async fn setup() -> Option<Setup> {
    let s = servers()?;
    let endpoint = std::env::var("MOVERCTL_TEST_AZURE_ENDPOINT").unwrap();
    let upstream = endpoint
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let proxy = Proxy::start(upstream).await;
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("remotes.toml");
    std::fs::write(
        &conf,
        format!(
            "{}\n[remotes.azproxy]\ntype = \"azure\"\nendpoint = \"{}/{}\"\naccount = \"{}\"\naccount_key_env = \"MOVERCTL_TEST_AZURE_KEY\"\n",
            remotes_toml(&s),
            proxy.endpoint(),
            std::env::var("MOVERCTL_TEST_AZURE_ACCOUNT").unwrap(),
            std::env::var("MOVERCTL_TEST_AZURE_ACCOUNT").unwrap(),
        ),
    )
    .unwrap();
    Some(Setup {
        dir,
        conf,
        proxy,
        s,
    })
}

impl Setup {
    fn azure(&self, container: &str, prefix: &str) -> Store {
        Store::open(&format!("azurite:{container}/{prefix}"), &remotes(&self.s)).unwrap()
    }

    /// `moverctl copy --json` with small parts (5 MiB) so that a 12 MiB object has three.
    async fn copy(&self, src: &str, dst: &str, extra: &[&str]) -> (std::process::Output, Value) {
        let mut c = super::moverctl();
        c.args(["copy", "--json", "--part-size", "5MiB"])
            .args(["--multipart-threshold", "5MiB", "--config"])
            .arg(&self.conf)
            .args(extra)
            .arg(src)
            .arg(dst)
            .env("MOVERCTL_STATE_DIR", self.dir.path().join("state"));
        let o = tokio::task::spawn_blocking(move || c.output().unwrap())
            .await
            .unwrap();
        let v = String::from_utf8_lossy(&o.stdout)
            .lines()
            .rfind(|l| l.contains("\"summary\""))
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or(Value::Null);
        (o, v)
    }

    fn log(&self) -> Vec<Seen> {
        self.proxy.log()
    }
}

/// Put Block From URL requests the proxy saw (PUTs with `x-ms-copy-source`).
fn from_url_requests(log: &[Seen]) -> usize {
    log.iter()
        .filter(|(m, _, h)| m == "PUT" && has_header(h, "x-ms-copy-source"))
        .count()
}

/// Bytes of request bodies sent to the store, and the GETs of blobs (not listings).
fn bytes_through(log: &[Seen]) -> (u64, usize) {
    let gets = log
        .iter()
        .filter(|(m, target, _)| {
            m == "GET" && !target.contains("comp=list") && !target.contains("restype=")
        })
        .count();
    (super::body_bytes(log), gets)
}

/// Writes `bytes` as a block blob of `block`-byte blocks the way other tools do (Put Block, Put
/// Block List: no Content-MD5 property unless given), with extra headers on the commit.
async fn commit_blocks(
    store: &Store,
    key: &str,
    bytes: &[u8],
    block: usize,
    extra: &[(&str, String)],
) {
    let az = store.azure.as_ref().unwrap();
    let path = store.path_of(key).unwrap();
    let client = reqwest::Client::new();
    let mut ids = Vec::new();
    for (i, chunk) in bytes.chunks(block).enumerate() {
        let id = BASE64_STANDARD.encode(format!("{i:032}"));
        let mut url = az
            .signed_url(Method::PUT, &path, Duration::from_secs(600))
            .await
            .unwrap();
        url.query_pairs_mut()
            .append_pair("comp", "block")
            .append_pair("blockid", &id);
        let r = client.put(url).body(chunk.to_vec()).send().await.unwrap();
        assert!(r.status().is_success(), "Put Block: {}", r.status());
        ids.push(id);
    }
    let mut url = az
        .signed_url(Method::PUT, &path, Duration::from_secs(600))
        .await
        .unwrap();
    url.query_pairs_mut().append_pair("comp", "blocklist");
    let list = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>{}</BlockList>",
        ids.iter()
            .map(|i| format!("<Latest>{i}</Latest>"))
            .collect::<String>()
    );
    let mut r = client.put(url).body(list);
    for (k, v) in extra {
        r = r.header(*k, v);
    }
    let r = r.send().await.unwrap();
    assert!(r.status().is_success(), "Put Block List: {}", r.status());
}

async fn exact(store: &Store, key: &str, want: &[u8]) {
    let got = store
        .inner
        .get(&store.path_of(key).unwrap())
        .await
        .unwrap_or_else(|e| panic!("{key}: {e}"))
        .bytes()
        .await
        .unwrap();
    assert!(got == want, "{key}: not exact ({} bytes)", got.len());
}

const SMALL: (&str, u64) = ("one/small.bin", 1_000);
const MID: (&str, u64) = ("one/mid+1.bin", 3 * MIB + 7);
/// A name Azure signs decoded and object_store's SAS encoded: streamed.
const ODD: (&str, u64) = ("odd/a b é.bin", 2_000);
const BLOCKS: (&str, u64) = ("blocks/ckpt.safetensors", 12 * MIB);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_blobs_are_copied_by_the_service_from_their_url_and_proven() {
    let Some(t) = setup().await else { return };
    let prefix = unique("fromurl");
    let src = t.azure(&t.s.az_container, &prefix);
    // Blobs written with Put Blob (the service keeps their MD5), one committed from 5 MiB blocks
    // with moverctl's CRC64 in its metadata and no MD5.
    for (k, size) in [SMALL, MID, ODD] {
        src.inner
            .put(&src.path_of(k).unwrap(), PutPayload::from(data(k, size)))
            .await
            .unwrap();
    }
    let big = data(BLOCKS.0, BLOCKS.1);
    commit_blocks(
        &src,
        BLOCKS.0,
        &big,
        5 * MIB as usize,
        &[("x-ms-meta-moverctl_crc64nvme", crc64_hex(crc64_of(&big)))],
    )
    .await;
    let before = t.log().len();
    let dst_prefix = unique("fromurl-dst");
    let (o, v) = t
        .copy(
            &format!("azproxy:{}/{prefix}", t.s.az_container),
            &format!("azproxy:{}/{dst_prefix}", t.s.az_container2),
            &[],
        )
        .await;
    expect(&o, 0);
    assert_eq!(v["copied"]["objects"], 4, "{}", text(&o));
    assert_eq!(v["server_side"]["objects"], 3, "{}", text(&o));
    assert_eq!(verified(&v, "source-md5+dest-md5"), 1, "{}", text(&o));
    assert_eq!(
        verified(&v, "source-md5+dest-copy-block-md5"),
        2,
        "{}",
        text(&o)
    );
    assert_eq!(
        verified(&v, "source-crc64+dest-copy-block-crc64"),
        1,
        "{}",
        text(&o)
    );
    let log = t.log()[before..].to_vec();
    // One block for each small blob, three for the 12 MiB one; no byte of them came through
    // moverctl: only the odd name was read, and the request bodies are the three block lists and
    // the odd name's 2,000 bytes.
    assert_eq!(from_url_requests(&log), 5);
    // The summary counts them as the source's GETs and bytes (billed though read by the service).
    assert_eq!(v["requests"]["get_by_destination"], 5, "{}", text(&o));
    assert_eq!(
        v["bytes_fetched_by_destination"],
        SMALL.1 + MID.1 + BLOCKS.1,
        "{}",
        text(&o)
    );
    let (body, gets) = bytes_through(&log);
    assert_eq!(gets, 1, "{log:?}");
    assert!(body < 2_000 + 4096, "{body} bytes of request bodies");
    // The signed URLs (their signatures) are never printed.
    assert!(!text(&o).contains("sig="), "{}", text(&o));
    let dst = t.azure(&t.s.az_container2, &dst_prefix);
    for (k, size) in [SMALL, MID, BLOCKS, ODD] {
        exact(&dst, k, &data(k, size)).await;
    }
    // The copy carries the CRC64 for later runs.
    let meta = dst
        .inner
        .get_opts(
            &dst.path_of(BLOCKS.0).unwrap(),
            object_store::GetOptions {
                head: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        meta.attributes
            .get(&Attribute::Metadata("moverctl_crc64nvme".into()))
            .map(|v| v.to_string()),
        Some(crc64_hex(crc64_of(&big)))
    );
    // --no-server-side streams: no copy from a URL, the bytes come through.
    let before = t.log().len();
    let (o, v) = t
        .copy(
            &format!("azproxy:{}/{prefix}", t.s.az_container),
            &format!("azproxy:{}/{}", t.s.az_container2, unique("streamed")),
            &["--no-server-side"],
        )
        .await;
    expect(&o, 0);
    assert_eq!(v["copied"]["objects"], 4, "{}", text(&o));
    let log = t.log()[before..].to_vec();
    assert_eq!(from_url_requests(&log), 0);
    assert!(bytes_through(&log).0 >= 12 * MIB, "{}", text(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_that_does_not_match_the_sources_digest_is_never_committed() {
    let Some(t) = setup().await else { return };
    let prefix = unique("fromurl-bad");
    let src = t.azure(&t.s.az_container, &prefix);
    // One blob whose MD5 property says other bytes (Put Block List does not check it), one whose
    // CRC64 metadata does.
    let a = data("bad/md5.bin", 2 * MIB);
    commit_blocks(
        &src,
        "bad/md5.bin",
        &a,
        MIB as usize,
        &[(
            "x-ms-blob-content-md5",
            BASE64_STANDARD.encode(md5_of(b"other bytes")),
        )],
    )
    .await;
    let b = data("bad/crc.bin", 11 * MIB);
    commit_blocks(
        &src,
        "bad/crc.bin",
        &b,
        5 * MIB as usize,
        &[("x-ms-meta-moverctl_crc64nvme", crc64_hex(crc64_of(&b) ^ 1))],
    )
    .await;
    let dst_prefix = unique("fromurl-bad-dst");
    let before = t.log().len();
    let (o, v) = t
        .copy(
            &format!("azproxy:{}/{prefix}", t.s.az_container),
            &format!("azproxy:{}/{dst_prefix}", t.s.az_container2),
            &[],
        )
        .await;
    // The service fetched them (one block, three blocks), no block list was committed, and the
    // streamed copy that followed found the source's bytes differ from its digests: both fail.
    expect(&o, 3);
    assert_eq!(v["failed"]["objects"], 2, "{}", text(&o));
    assert_eq!(v["copied"]["objects"], 0, "{}", text(&o));
    let log = t.log()[before..].to_vec();
    assert_eq!(from_url_requests(&log), 4, "{log:?}");
    assert!(
        !log.iter()
            .any(|(m, target, _)| m == "PUT" && target.contains("comp=blocklist")),
        "a block list was committed: {log:?}"
    );
    let dst = t.azure(&t.s.az_container2, &dst_prefix);
    assert!(super::keys_at(&dst).await.is_empty());
}

fn md5_of(b: &[u8]) -> [u8; 16] {
    use md5::Digest;
    md5::Md5::digest(b).into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_the_service_cannot_read_is_streamed() {
    let Some(t) = setup().await else { return };
    let prefix = unique("fromurl-s3");
    let src = Store::open(&format!("garage:{}/{prefix}", t.s.bucket_a), &remotes(&t.s)).unwrap();
    for (k, size) in [SMALL, MID] {
        src.inner
            .put(&src.path_of(k).unwrap(), PutPayload::from(data(k, size)))
            .await
            .unwrap();
    }
    let dst_prefix = unique("fromurl-s3-dst");
    let before = t.log().len();
    let (o, v) = t
        .copy(
            &format!("garage:{}/{prefix}", t.s.bucket_a),
            &format!("azproxy:{}/{dst_prefix}", t.s.az_container2),
            &["--transfers", "1"],
        )
        .await;
    expect(&o, 0);
    assert_eq!(v["copied"]["objects"], 2, "{}", text(&o));
    // Azurite cannot fetch from another host: the first attempt is refused, the run streams.
    let log = t.log()[before..].to_vec();
    assert_eq!(from_url_requests(&log), 1, "{log:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("streams every object through this machine"),
        "{}",
        text(&o)
    );
    assert_eq!(verified(&v, "source-md5+dest-md5"), 2, "{}", text(&o));
    let dst = t.azure(&t.s.az_container2, &dst_prefix);
    for (k, size) in [SMALL, MID] {
        exact(&dst, k, &data(k, size)).await;
    }
    // The source URL (its signature) is never printed.
    let all = text(&o);
    assert!(!all.contains("X-Amz-Signature"), "{all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_commit_resumes_without_fetching_the_blocks_again() {
    let Some(t) = setup().await else { return };
    let prefix = unique("fromurl-resume");
    let src = t.azure(&t.s.az_container, &prefix);
    let big = data(BLOCKS.0, BLOCKS.1);
    commit_blocks(
        &src,
        BLOCKS.0,
        &big,
        5 * MIB as usize,
        &[("x-ms-meta-moverctl_crc64nvme", crc64_hex(crc64_of(&big)))],
    )
    .await;
    let dst_prefix = unique("fromurl-resume-dst");
    let from = format!("azproxy:{}/{prefix}", t.s.az_container);
    let to = format!("azproxy:{}/{dst_prefix}", t.s.az_container2);
    // Every block is fetched, but the block list cannot be committed.
    t.proxy.add(
        "PUT",
        &dst_prefix,
        "comp=blocklist",
        PFault::ServerError,
        1_000,
    );
    let (o, v) = t.copy(&from, &to, &["--retry-timeout", "1s"]).await;
    assert_eq!(v["failed"]["objects"], 1, "{}", text(&o));
    assert_eq!(from_url_requests(&t.log()), 3, "{}", text(&o));
    t.proxy.clear();
    let before = t.log().len();
    let (o, v) = t.copy(&from, &to, &[]).await;
    expect(&o, 0);
    // The three journaled blocks are kept (their CRC64s prove them), only the list is sent.
    assert_eq!(v["resumed_parts"], 3, "{}", text(&o));
    assert_eq!(
        verified(&v, "source-crc64+dest-copy-block-crc64"),
        1,
        "{}",
        text(&o)
    );
    let log = t.log()[before..].to_vec();
    assert_eq!(from_url_requests(&log), 0, "{log:?}");
    exact(&t.azure(&t.s.az_container2, &dst_prefix), BLOCKS.0, &big).await;
}

// A blob that states no digest (committed from blocks by another tool: no MD5, no CRC64) cannot
// be proven after a copy from its URL, so it is streamed; the HEAD that found nothing is not
// asked again by the streamed copy (one HEAD per object, not two).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blob_without_a_digest_is_streamed_after_one_head() {
    let Some(t) = setup().await else { return };
    let prefix = unique("fromurl-noproof");
    let src = t.azure(&t.s.az_container, &prefix);
    let key = "noproof/blocks.bin";
    let size = 11 * MIB + 3;
    commit_blocks(&src, key, &data(key, size), 5 * MIB as usize, &[]).await;
    let before = t.log().len();
    let dst_prefix = unique("fromurl-noproof-dst");
    let (o, v) = t
        .copy(
            &format!("azproxy:{}/{prefix}", t.s.az_container),
            &format!("azproxy:{}/{dst_prefix}", t.s.az_container2),
            &[],
        )
        .await;
    expect(&o, 0);
    assert_eq!(v["copied"]["objects"], 1, "{}", text(&o));
    assert_eq!(v["server_side"]["objects"], 0, "{}", text(&o));
    let log = t.log()[before..].to_vec();
    assert_eq!(from_url_requests(&log), 0, "{log:?}");
    let heads: Vec<_> = log
        .iter()
        .filter(|(m, target, _)| m == "HEAD" && target.contains(key))
        .collect();
    assert_eq!(heads.len(), 1, "{heads:#?}");
    exact(
        &t.azure(&t.s.az_container2, &dst_prefix),
        key,
        &data(key, size),
    )
    .await;
}
