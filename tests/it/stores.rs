//! One conformance suite run against every store kind: memory, local folders, Garage (S3, two
//! instances), Azurite (Azure Blob) and fake-gcs-server (GCS, read side: see docs/testing.md).

use super::{Servers, remotes, servers, unique};
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use moverctl::store::list::{Listed, list, list_pages_of};
use moverctl::store::{Kind, Store};
use object_store::{Attribute, Attributes, ObjectStoreExt, PutOptions, PutPayload};

/// Keys that break naive tools: spaces, unicode, URL metacharacters, and a 1,000-byte key.
fn odd_keys(prefix_len: usize) -> Vec<String> {
    let mut keys: Vec<String> = [
        "with space",
        "ünïcødé/名前.bin",
        "per%cent",
        "plus+sign",
        "hash#tag",
        "question?mark",
        "tilde~and'quote",
        "brackets[1]{2}",
        "emoji-😀",
        "zero-bytes",
        "a-b",
        "a/c",
        "a0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Exactly 1,000 bytes of full key, in 100-byte folder names (local file names stop at 255).
    let mut long = String::from("long");
    while prefix_len + long.len() < 1000 {
        let seg = 99.min(1000 - prefix_len - long.len() - 1);
        long.push('/');
        long.push_str(&"x".repeat(seg));
    }
    assert_eq!(prefix_len + long.len(), 1000);
    keys.push(long);
    keys
}

fn body_of(key: &str) -> Bytes {
    if key == "zero-bytes" {
        Bytes::new()
    } else {
        Bytes::from(format!("contents of {key}").into_bytes())
    }
}

async fn put(store: &Store, key: &str, body: Bytes) {
    let path = store
        .path_of(key)
        .unwrap_or_else(|e| panic!("{key:?}: {e}"));
    store
        .inner
        .put(&path, PutPayload::from(body))
        .await
        .unwrap_or_else(|e| panic!("put {key:?} on {}: {e}", store.shown()));
}

async fn listed(store: &Store) -> Vec<Listed> {
    list(store)
        .try_collect()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn object_keys(items: &[Listed]) -> Vec<String> {
    items
        .iter()
        .filter_map(|l| match l {
            Listed::Object(e) => Some(e.key.clone()),
            _ => None,
        })
        .collect()
}

/// put, get, head, list, delete of the odd keys; listing comes back complete and byte-sorted.
async fn odd_keys_round_trip(store: Store) {
    let keys = odd_keys(store.prefix.len());
    futures::stream::iter(keys.iter().cloned())
        .for_each_concurrent(8, |k| {
            let store = store.clone();
            async move { put(&store, &k, body_of(&k)).await }
        })
        .await;
    for k in &keys {
        let path = store.path_of(k).unwrap();
        let got = store.inner.get(&path).await.unwrap().bytes().await.unwrap();
        assert_eq!(got, body_of(k), "{k:?} on {}", store.shown());
        let head = store.inner.head(&path).await.unwrap();
        assert_eq!(head.size, body_of(k).len() as u64, "{k:?}");
    }
    let items = listed(&store).await;
    let mut want = keys.clone();
    want.sort();
    assert_eq!(object_keys(&items), want, "listing of {}", store.shown());
    for item in &items {
        if let Listed::Object(e) = item {
            assert_eq!(e.size, body_of(&e.key).len() as u64, "{}", e.key);
        }
    }
    for k in &keys {
        store
            .inner
            .delete(&store.path_of(k).unwrap())
            .await
            .unwrap();
    }
    assert!(listed(&store).await.is_empty(), "everything deleted");
    let gone = store.inner.head(&store.path_of(&keys[0]).unwrap()).await;
    assert!(
        matches!(gone, Err(object_store::Error::NotFound { .. })),
        "{gone:?}"
    );
}

/// More keys than one listing page holds come back sorted and complete: with the store's own
/// page size, and with pages of 97 keys (a dozen page boundaries on every paged store).
async fn listing_past_pages(store: Store, n: usize) {
    let keys: Vec<String> = (0..n)
        .map(|i| format!("k/{:05}-{}", (i * 7919) % n, i % 3))
        .collect();
    futures::stream::iter(keys.iter().cloned())
        .for_each_concurrent(32, |k| {
            let store = store.clone();
            async move { put(&store, &k, Bytes::from_static(b"x")).await }
        })
        .await;
    let got = object_keys(&listed(&store).await);
    let mut want = keys.clone();
    want.sort();
    assert_eq!(got.len(), n);
    assert_eq!(got, want);
    let small: Vec<Listed> = list_pages_of(&store, Some(97)).try_collect().await.unwrap();
    assert_eq!(
        object_keys(&small),
        want,
        "pages of 97 on {}",
        store.shown()
    );
}

/// A multipart upload of three 5 MiB parts and a 1-byte tail reads back exactly.
async fn multipart(store: Store) {
    const PART: usize = 5 << 20;
    let data: Vec<u8> = (0..3 * PART + 1).map(|i| (i % 251) as u8).collect();
    let path = store.path_of("multi/part.bin").unwrap();
    let mut up = store.inner.put_multipart(&path).await.unwrap();
    for chunk in data.chunks(PART) {
        up.put_part(PutPayload::from(Bytes::copy_from_slice(chunk)))
            .await
            .unwrap();
    }
    up.complete().await.unwrap();
    let got = store.inner.get(&path).await.unwrap().bytes().await.unwrap();
    assert_eq!(got.len(), data.len());
    assert!(got == data, "multipart bytes differ on {}", store.shown());
}

/// User metadata written with an object comes back on GET.
async fn metadata_round_trip(store: Store) {
    let path = store.path_of("meta/object").unwrap();
    let mut attrs = Attributes::new();
    attrs.insert(Attribute::Metadata("moverctlcrc".into()), "0123abcd".into());
    let opts = PutOptions {
        attributes: attrs,
        ..Default::default()
    };
    let res = store
        .inner
        .put_opts(&path, PutPayload::from_static(b"m"), opts)
        .await;
    if store.kind == Kind::Local {
        assert!(
            matches!(res, Err(object_store::Error::NotImplemented { .. })),
            "local stores keep no metadata"
        );
        return;
    }
    res.unwrap();
    let got = store.inner.get(&path).await.unwrap();
    let v = got
        .attributes
        .get(&Attribute::Metadata("moverctlcrc".into()));
    assert_eq!(
        v.map(|v| v.as_ref()),
        Some("0123abcd"),
        "metadata on {}",
        store.shown()
    );
}

fn memory() -> Store {
    Store::open("memory://suite/", &Default::default()).unwrap()
}

fn local() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(dir.path().to_str().unwrap(), &Default::default()).unwrap();
    (dir, s)
}

fn remote(s: &Servers, remote: &str, bucket: &str, test: &str) -> Store {
    Store::open(&format!("{remote}:{bucket}/{}", unique(test)), &remotes(s)).unwrap()
}

macro_rules! each_writable_store {
    ($name:ident, $suite:expr) => {
        mod $name {
            use super::*;

            #[tokio::test]
            async fn memory() {
                ($suite)(super::memory()).await;
            }

            #[tokio::test]
            async fn local() {
                let (_dir, s) = super::local();
                ($suite)(s).await;
            }

            #[tokio::test]
            async fn garage() {
                let Some(s) = servers() else { return };
                ($suite)(remote(&s, "garage", &s.bucket_a, stringify!($name))).await;
            }

            #[tokio::test]
            async fn garage_second_instance() {
                let Some(s) = servers() else { return };
                ($suite)(remote(&s, "garage2", &s.bucket_c, stringify!($name))).await;
            }

            #[tokio::test]
            async fn azurite() {
                let Some(s) = servers() else { return };
                ($suite)(remote(&s, "azurite", &s.az_container, stringify!($name))).await;
            }
        }
    };
}

each_writable_store!(odd_keys, odd_keys_round_trip);
each_writable_store!(pages, |s: Store| listing_past_pages(s, 1_100));
each_writable_store!(multipart_upload, multipart);
each_writable_store!(metadata, metadata_round_trip);

// ---- keys object_store refuses are reported, and the listing goes on ----

/// A minimal SigV4 PUT, so the test can create keys (`a//b`) that object_store itself refuses
/// to write. Test-only; moverctl never signs requests by hand.
pub async fn raw_s3_put(s: &Servers, bucket: &str, key: &str, body: &[u8]) {
    use hmac::{Hmac, Mac};
    use sha2::{Digest, Sha256};
    type H = Hmac<Sha256>;
    fn mac(k: &[u8], m: &str) -> Vec<u8> {
        let mut h = H::new_from_slice(k).unwrap();
        h.update(m.as_bytes());
        h.finalize().into_bytes().to_vec()
    }
    let now = chrono::Utc::now();
    let amz_date = now.format("%Y%m%dT%H%M%SZ").to_string();
    let date = now.format("%Y%m%d").to_string();
    let enc: String = key
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    let uri = format!("/{bucket}/{enc}");
    let host = s.s3_endpoint.trim_start_matches("http://").to_string();
    let payload = hex::encode(Sha256::digest(body));
    let canonical = format!(
        "PUT\n{uri}\n\nhost:{host}\nx-amz-content-sha256:{payload}\nx-amz-date:{amz_date}\n\nhost;x-amz-content-sha256;x-amz-date\n{payload}"
    );
    let scope = format!("{date}/{}/s3/aws4_request", s.region);
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex::encode(Sha256::digest(canonical.as_bytes()))
    );
    let k = mac(format!("AWS4{}", s.secret).as_bytes(), &date);
    let k = mac(&k, &s.region);
    let k = mac(&k, "s3");
    let k = mac(&k, "aws4_request");
    let sig = hex::encode(mac(&k, &to_sign));
    let auth = format!(
        "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature={sig}",
        s.key_id
    );
    let res = reqwest::Client::new()
        .put(format!("{}{uri}", s.s3_endpoint))
        .header("x-amz-date", amz_date)
        .header("x-amz-content-sha256", payload)
        .header("authorization", auth)
        .body(body.to_vec())
        .send()
        .await
        .unwrap();
    assert!(
        res.status().is_success(),
        "raw PUT {key:?}: {}",
        res.text().await.unwrap()
    );
}

#[tokio::test]
async fn s3_refused_keys_are_reported_and_listing_continues() {
    let Some(s) = servers() else { return };
    let store = remote(&s, "garage", &s.bucket_a, "refused");
    for k in ["a", "b//c", "d", "e//f", "g"] {
        raw_s3_put(&s, &s.bucket_a, &format!("{}{k}", store.prefix), b"x").await;
    }
    let items = listed(&store).await;
    let summary: Vec<(String, bool)> = items
        .iter()
        .map(|l| (l.key().to_string(), matches!(l, Listed::Refused { .. })))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("a".into(), false),
            ("b//c".into(), true),
            ("d".into(), false),
            ("e//f".into(), true),
            ("g".into(), false)
        ]
    );
}

// ---- GCS (fake-gcs-server): objects are seeded through its JSON API ----

async fn gcs_seed(s: &Servers, key: &str, body: &[u8]) {
    let url = format!(
        "{}/upload/storage/v1/b/{}/o?uploadType=media&name={}",
        s.gcs_endpoint,
        s.gcs_bucket,
        url::form_urlencoded::byte_serialize(key.as_bytes()).collect::<String>()
    );
    let res = reqwest::Client::new()
        .post(url)
        .body(body.to_vec())
        .send()
        .await
        .unwrap();
    assert!(
        res.status().is_success(),
        "seeding {key:?}: {}",
        res.status()
    );
}

/// fake-gcs-server's XML listing ignores `max-keys` and `start-after` (it returns everything in
/// one page), so paging and stepping over refused keys cannot be exercised against it; S3 covers
/// both. What it does show: complete sorted listings and exact reads of seeded objects, and that a
/// refused key on a store that ignores offsets ends the listing with an error naming the key
/// instead of looping.
#[tokio::test]
async fn gcs_read_side() {
    let Some(s) = servers() else { return };
    let store = remote(&s, "fakegcs", &s.gcs_bucket, "gcs");
    let mut keys: Vec<String> = odd_keys(store.prefix.len());
    keys.extend((0..1_050).map(|i| format!("many/{i:05}")));
    futures::stream::iter(keys.iter().cloned())
        .for_each_concurrent(16, |k| {
            let (s, full) = (&s, format!("{}{k}", store.prefix));
            async move { gcs_seed(s, &full, &body_of(&k)).await }
        })
        .await;
    let items = listed(&store).await;
    let mut want = keys.clone();
    want.sort();
    assert_eq!(object_keys(&items), want);
    for k in keys.iter().take(14) {
        let got = store
            .inner
            .get(&store.path_of(k).unwrap())
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert_eq!(got, body_of(k), "{k:?}");
    }
    gcs_seed(&s, &format!("{}odd//key", store.prefix), b"x").await;
    let res: Result<Vec<Listed>, _> = list(&store).try_collect().await;
    let e = res
        .expect_err("a store that ignores offsets cannot step over a refused key")
        .to_string();
    assert!(e.contains("odd//key"), "{e}");
}
