//! One streamed PUT instead of parts (issue 15): a large single-part source whose MD5 the
//! destination checks on arrival goes in one PUT carrying the source's own MD5, streamed from its
//! GET (no part buffers, no MD5 computed here, one request). Checked at a proxy in front of one
//! Garage: the requests that went, a byte flipped on either side refused or caught and the object
//! copied again, and the limits of the rule (`--no-streamed-put`, objects over 4 parts' size).

use super::faults::data;
use super::faults::proxy::{PFault, Proxy};
use super::{expect, has_header, proxy_remote_toml, remotes, servers, text, unique, verified};
use moverctl::store::Store;
use object_store::{ObjectStoreExt, PutPayload};
use serde_json::Value;

const MIB: u64 = 1 << 20;
/// Single-part objects written by another tool: two of 2.5 parts' size, one of 5 parts' size.
const A: (&str, u64) = ("s/a.bin", 20 * MIB + 3);
const B: (&str, u64) = ("s/b.bin", 20 * MIB);
const BIG: (&str, u64) = ("s/big.bin", 40 * MIB + 1);

/// A fault proxy in front of one Garage, a remote (`viaproxy`) through it, and a source prefix
/// in bucket a; copies go to prefixes of bucket b through the proxy, streamed (no server-side
/// copy), with 8 MiB parts above 8 MiB. Shared with `encrypted_source.rs`.
pub(super) struct Setup {
    dir: tempfile::TempDir,
    conf: std::path::PathBuf,
    pub proxy: Proxy,
    pub bucket_a: String,
    bucket_b: String,
    pub prefix: String,
}

impl Setup {
    /// The setup and its source prefix, empty, reached directly (for seeding).
    pub(super) async fn new(name: &str) -> Option<(Setup, Store)> {
        let s = servers()?;
        let dir = tempfile::tempdir().unwrap();
        let proxy = Proxy::start(super::s3_upstream(&s)).await;
        let conf = dir.path().join("remotes.toml");
        std::fs::write(&conf, proxy_remote_toml(&s, &proxy.endpoint())).unwrap();
        let prefix = unique(name);
        let src = Store::open(&format!("garage:{}/{prefix}", s.bucket_a), &remotes(&s)).unwrap();
        let t = Setup {
            dir,
            conf,
            proxy,
            bucket_a: s.bucket_a.clone(),
            bucket_b: s.bucket_b.clone(),
            prefix,
        };
        Some((t, src))
    }

    /// `moverctl copy --json` of the source prefix into `dst` of bucket b, whatever its exit.
    pub(super) async fn run(&self, dst: &str, extra: &[&str]) -> (std::process::Output, Value) {
        let mut c = super::moverctl();
        c.args(["copy", "--json", "--no-server-side", "--config"])
            .arg(&self.conf)
            .args(["--multipart-threshold", "8MiB", "--part-size", "8MiB"])
            .args(extra)
            .arg(format!("viaproxy:{}/{}", self.bucket_a, self.prefix))
            .arg(format!("viaproxy:{}/{dst}", self.bucket_b))
            .env("MOVERCTL_STATE_DIR", self.dir.path().join("state"));
        // The proxy runs on the test's runtime: the CLI is waited for off its workers.
        let o = tokio::task::spawn_blocking(move || c.output().unwrap())
            .await
            .unwrap();
        let v = super::summary(&o);
        (o, v)
    }

    /// [`Setup::run`], which must succeed.
    async fn copy(&self, dst: &str, extra: &[&str]) -> (std::process::Output, Value) {
        let (o, v) = self.run(dst, extra).await;
        expect(&o, 0);
        (o, v)
    }

    /// (method, target, headers) of the writes into `dst` of bucket b.
    pub(super) fn writes(&self, dst: &str) -> Vec<super::faults::proxy::Seen> {
        let at = format!("/{}/{dst}/", self.bucket_b);
        self.proxy
            .log()
            .into_iter()
            .filter(|(m, t, _)| (m == "PUT" || m == "POST") && t.contains(&at))
            .collect()
    }

    /// Each of `keys` at `dst` of bucket b holds exactly the bytes seeded.
    pub(super) async fn assert_exact(&self, dst: &str, keys: &[(&str, u64)]) {
        let s = servers().unwrap();
        let d = Store::open(&format!("garage:{}/{dst}", s.bucket_b), &remotes(&s)).unwrap();
        for (k, size) in keys {
            assert_eq!(
                super::faults::bytes_at(&d, k).await,
                Some(data(k, *size)),
                "{k} is not exact"
            );
        }
    }
}

/// The setup with A, B and BIG seeded.
async fn setup(name: &str) -> Option<Setup> {
    let (t, src) = Setup::new(name).await?;
    for (k, size) in [A, B, BIG] {
        src.inner
            .put(&src.path_of(k).unwrap(), PutPayload::from(data(k, size)))
            .await
            .unwrap();
    }
    Some(t)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_part_source_of_a_few_parts_goes_in_one_streamed_put() {
    let Some(t) = setup("sput").await else {
        return;
    };
    let dst = unique("sput-dst");
    let (o, v) = t.copy(&dst, &[]).await;
    expect(&o, 0);
    // a and b: one PUT each with the source's MD5; big (5 parts' size): in parts.
    assert_eq!(verified(&v, "source-md5+dest-md5"), 2, "{}", text(&o));
    assert_eq!(
        verified(&v, "source-md5+dest-multipart-etag"),
        1,
        "{}",
        text(&o)
    );
    let writes = t.writes(&dst);
    for (k, _) in [A, B] {
        let w: Vec<_> = writes.iter().filter(|(_, tg, _)| tg.contains(k)).collect();
        assert_eq!(w.len(), 1, "{k}: {w:#?}");
        let (m, tg, h) = w[0];
        assert!(m == "PUT" && !tg.contains("partNumber"), "{tg}");
        assert!(has_header(h, "content-md5"), "{tg}: {h:?}");
    }
    assert!(
        writes
            .iter()
            .any(|(m, tg, _)| m == "POST" && tg.contains(BIG.0)),
        "the 5-part object was not uploaded in parts"
    );
    t.assert_exact(&dst, &[A, B, BIG]).await;

    // --no-streamed-put: every large object in parts.
    let dst2 = unique("sput-parts");
    let (o, v) = t.copy(&dst2, &["--no-streamed-put"]).await;
    expect(&o, 0);
    assert_eq!(verified(&v, "source-md5+dest-md5"), 0, "{}", text(&o));
    assert_eq!(
        t.writes(&dst2)
            .iter()
            .filter(|(m, tg, _)| m == "POST" && tg.contains("uploads"))
            .count(),
        3
    );
    t.assert_exact(&dst2, &[A, B, BIG]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_byte_in_a_streamed_put_is_refused_either_way() {
    let Some(t) = setup("sput-flip").await else {
        return;
    };
    let dst = unique("sput-flip-dst");
    // On the way to the store (a's PUT), and on the way from the source (b's GET): either way
    // the store compares the body with the source's own MD5 and refuses it.
    t.proxy
        .add(
            "PUT",
            &format!("/{}/{dst}/{}", t.bucket_b, A.0),
            "",
            PFault::FlipRequest,
            1,
        )
        .add(
            "GET",
            &format!("/{}/{}/{}", t.bucket_a, t.prefix, B.0),
            "",
            PFault::FlipResponse,
            1,
        );
    let (o, v) = t.copy(&dst, &[]).await;
    expect(&o, 0);
    assert!(t.proxy.unspent().is_empty(), "{:?}", t.proxy.unspent());
    for (target, status) in t.proxy.upstream_statuses() {
        if target.contains(A.0) {
            assert_eq!(status, 400, "{target}: the store took a flipped body");
        }
    }
    assert_eq!(verified(&v, "source-md5+dest-md5"), 2, "{}", text(&o));
    assert!(v["retries"].as_u64() >= Some(2), "{v}");
    t.assert_exact(&dst, &[A, B, BIG]).await;
}
