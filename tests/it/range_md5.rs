//! Azure blobs that state no digest (block lists committed without `x-ms-blob-content-md5`, as
//! the SDKs upload large blobs; append and page blobs) under the default `--verify auto`.
//!
//! A block blob is read in ranges of at most 4 MiB with `x-ms-range-get-content-md5: true`, and
//! a byte flipped on the way (by a fault proxy in front of Azurite) is caught against the MD5
//! the service computed for that range: the copy is retried and ends exact
//! (`source-range-md5`); append and page blobs read in parts likewise. A blob whose key object_store's
//! SAS cannot sign (it needs percent-encoding) is written `unverified`, never recorded as done. Failed on the main of 2026-12-03: the
//! flipped block blob was recorded done as `source-size+…` with the CRC64 of the wrong bytes.

use super::faults::proxy::{PFault, Proxy};
use super::faults::{data, go, opts};
use super::{Servers, remotes_toml, servers, unique};
use moverctl::journal::State;
use moverctl::store::Store;
use moverctl::store::config::Remotes;
use moverctl::transfer::Verify;
use object_store::signer::{Method, Signer};
use object_store::{ObjectStoreExt, WriteMultipart};
use std::time::Duration;

const MIB: usize = 1 << 20;

fn azurite_addr() -> std::net::SocketAddr {
    let ep = std::env::var("MOVERCTL_TEST_AZURE_ENDPOINT").unwrap();
    let u = url::Url::parse(&ep).unwrap();
    format!("{}:{}", u.host_str().unwrap(), u.port().unwrap())
        .parse()
        .unwrap()
}

/// The source container through `proxy` (remote `azproxy`), and directly.
fn stores(s: &Servers, proxy: &Proxy, prefix: &str) -> (Store, Store) {
    let ep = std::env::var("MOVERCTL_TEST_AZURE_ENDPOINT").unwrap();
    let path = url::Url::parse(&ep).unwrap().path().to_string();
    let toml = format!(
        "{}\n[remotes.azproxy]\ntype = \"azure\"\nendpoint = \"{}{path}\"\naccount = \"{}\"\naccount_key_env = \"MOVERCTL_TEST_AZURE_KEY\"\n",
        remotes_toml(s),
        proxy.endpoint(),
        std::env::var("MOVERCTL_TEST_AZURE_ACCOUNT").unwrap(),
    );
    let r = Remotes::parse("range-md5.toml", &toml).unwrap();
    let via = Store::open(&format!("azproxy:{}/{prefix}", s.az_container), &r).unwrap();
    let direct = Store::open(&format!("azurite:{}/{prefix}", s.az_container), &r).unwrap();
    (via, direct)
}

/// A block list without a blob MD5 (object_store's multipart upload, as the SDKs do), in
/// blocks of `block` bytes.
async fn put_blocks(store: &Store, key: &str, bytes: bytes::Bytes, block: usize) {
    let up = store
        .inner
        .put_multipart(&store.path_of(key).unwrap())
        .await
        .unwrap();
    let mut w = WriteMultipart::new_with_chunk_size(up, block);
    w.put(bytes);
    w.finish().await.unwrap();
}

/// Creates an empty blob of the kind `headers` name through a SAS; the client and the SAS URL
/// for writing its content.
async fn create_blob(
    store: &Store,
    key: &str,
    headers: &[(&str, String)],
) -> (reqwest::Client, url::Url) {
    let az = store.azure.as_ref().unwrap();
    let path = store.path_of(key).unwrap();
    let client = reqwest::Client::new();
    let url = az
        .signed_url(Method::PUT, &path, Duration::from_secs(600))
        .await
        .unwrap();
    let mut req = client.put(url.clone()).header("content-length", "0");
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    let r = req.send().await.unwrap();
    assert!(
        r.status().is_success(),
        "create {headers:?}: {}",
        r.status()
    );
    (client, url)
}

/// An append blob of `bytes` (appends of at most 3 MiB), through a SAS.
async fn put_append(store: &Store, key: &str, bytes: &[u8]) {
    let (client, url) = create_blob(store, key, &[("x-ms-blob-type", "AppendBlob".into())]).await;
    for part in bytes.chunks(3 * MIB) {
        let mut u = url.clone();
        u.query_pairs_mut().append_pair("comp", "appendblock");
        let r = client.put(u).body(part.to_vec()).send().await.unwrap();
        assert!(r.status().is_success(), "append block: {}", r.status());
    }
}

/// A page blob of `bytes` (its length a multiple of 512; pages written at most 4 MiB at a time),
/// through a SAS.
async fn put_page(store: &Store, key: &str, bytes: &[u8]) {
    assert_eq!(bytes.len() % 512, 0);
    let (client, url) = create_blob(
        store,
        key,
        &[
            ("x-ms-blob-type", "PageBlob".into()),
            ("x-ms-blob-content-length", bytes.len().to_string()),
        ],
    )
    .await;
    for (i, part) in bytes.chunks(4 * MIB).enumerate() {
        let start = i * 4 * MIB;
        let mut u = url.clone();
        u.query_pairs_mut().append_pair("comp", "page");
        let r = client
            .put(u)
            .header("x-ms-page-write", "update")
            .header(
                "x-ms-range",
                format!("bytes={start}-{}", start + part.len() - 1),
            )
            .body(part.to_vec())
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "put page: {}", r.status());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_blobs_without_a_digest_are_checked_range_by_range() {
    let Some(s) = servers() else { return };
    let dst = Store::open(
        &format!("garage:{}/{}", s.bucket_b, unique("range-md5")),
        &super::remotes(&s),
    )
    .unwrap();
    range_by_range_into(&s, &dst).await;
}

/// The same into a local folder (staging a corpus onto a parallel file system), whose copies
/// make their own reads (local_dest.rs): a blob of one part read with one GET, and blobs
/// larger than a part read by ranged GETs in parallel. Failed before those reads were hooked to
/// the range checks: every digest-less blob ended `unverified` (exit 9).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_blobs_without_a_digest_are_checked_range_by_range_into_a_local_folder() {
    let Some(s) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let dst = Store::open(dir.path().to_str().unwrap(), &super::remotes(&s)).unwrap();
    assert!(dst.local_root.is_some());
    range_by_range_into(&s, &dst).await;
    // Files, not only objects: exactly the source's bytes under their names, no partial left.
    let blocks = std::fs::read(dir.path().join("blocks")).unwrap();
    assert!(blocks == data("blocks", (9 * MIB + 5) as u64), "blocks");
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["append", "blocks", "page", "small-blocks", "with space"]
    );
}

/// Seeds digest-less blobs behind a fault proxy that flips the first range read of each, copies
/// them into `dst` under `--verify auto`, and checks every flip was caught and retried to exact
/// bytes (`source-range-md5`), in ranges of at most 4 MiB asking for their MD5.
async fn range_by_range_into(s: &Servers, dst: &Store) {
    let proxy = Proxy::start(azurite_addr()).await;
    let prefix = unique("range-md5");
    let (via, direct) = stores(s, &proxy, &prefix);
    let size = 9 * MIB + 5;
    put_blocks(&direct, "blocks", data("blocks", size as u64), 4 * MIB).await;
    let small = 4 * MIB + 500_000;
    put_blocks(
        &direct,
        "small-blocks",
        data("small-blocks", small as u64),
        100_000,
    )
    .await;
    put_append(&direct, "append", &data("append", size as u64)).await;
    let pages = 9 * MIB;
    put_page(&direct, "page", &data("page", pages as u64)).await;
    // A key object_store's SAS gets wrong (it needs percent-encoding): no range can be asked
    // for its MD5.
    put_blocks(&direct, "with space", data("with space", small as u64), MIB).await;
    // The first read of each that carries a SAS (the range reads) has a byte flipped on the way.
    let checked = [
        ("blocks", size),
        ("small-blocks", small),
        ("append", size),
        ("page", pages),
    ];
    for (k, _) in checked {
        proxy.add(
            "GET",
            &format!("/{}/{prefix}/{k}", s.az_container),
            "sig=",
            PFault::FlipResponse,
            1,
        );
    }
    let jd = tempfile::tempdir().unwrap();
    let j = jd.path().join("j.sqlite");
    let out = go(&via, dst, &j, opts(Verify::Auto)).await;
    assert!(
        proxy.unspent().is_empty(),
        "{:?} {:?} {:?}",
        proxy.unspent(),
        out.copied,
        out.unverified
    );
    assert_eq!(
        proxy
            .hits()
            .iter()
            .filter(|h| h.2 == PFault::FlipResponse)
            .count(),
        4
    );
    assert!(out.report.failed.is_empty(), "{:?}", out.report.failed);
    for (k, n) in checked {
        let by = out
            .copied
            .get(k)
            .unwrap_or_else(|| panic!("{k}: {:?}", out.unverified));
        assert!(by.starts_with("source-range-md5+"), "{k}: {by}");
        let exact = super::faults::bytes_at(dst, k).await == Some(data(k, n as u64));
        assert!(exact, "{k}: the destination holds other bytes");
    }
    // The flipped reads were caught and retried.
    assert!(out.report.retries >= 4, "retries {}", out.report.retries);
    // Ranges of at most 4 MiB, each asking for its MD5.
    let ranged: Vec<_> = proxy
        .log()
        .into_iter()
        .filter(|(m, t, _)| m == "GET" && t.contains("sig="))
        .collect();
    // 9 MiB + 5 in three ranges twice (append, blocks), two for 4.5 MiB, plus the retries.
    assert!(ranged.len() >= 8, "{ranged:#?}");
    for (_, _, h) in &ranged {
        let get = |n: &str| {
            h.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(n))
                .map(|(_, v)| v.clone())
        };
        assert_eq!(get("x-ms-range-get-content-md5").as_deref(), Some("true"));
        let r = get("x-ms-range").unwrap();
        let (a, b) = r.trim_start_matches("bytes=").split_once('-').unwrap();
        let len = b.parse::<u64>().unwrap() - a.parse::<u64>().unwrap() + 1;
        assert!(len <= 4 * MIB as u64, "{r}");
    }
    // Unchecked: written, never recorded as done, never stamped with a CRC64.
    let by = &out.unverified["with space"];
    assert!(by.starts_with("unverified+"), "{by}");
    let rec = super::faults::record(&out, "with space").unwrap();
    assert_eq!(rec.state, State::Failed);
    assert_eq!(out.report.unverified, vec!["with space".to_string()]);

    // The next run copies nothing again: the checked ones are verified earlier, the unchecked
    // one is `unverified earlier` (a second copy could be checked no better) and still counted.
    let again = go(&via, dst, &j, opts(Verify::Auto)).await;
    assert_eq!(again.report.copied, 0, "{:?}", again.copied);
    assert_eq!(again.report.unverified, vec!["with space".to_string()]);
    assert_eq!(again.report.reasons.get("unverified earlier"), Some(&1));
    assert_eq!(
        again.report.reasons.get("verified earlier"),
        Some(&(checked.len() as u64)),
        "{:?}",
        again.report.reasons
    );
}
