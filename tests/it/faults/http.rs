//! The fault proxy in front of Garage, reached through a moverctl remote (`viaproxy`, type s3,
//! endpoint http://127.0.0.1:<port>): both source (bucket a) and destination (bucket b) traffic
//! goes through it. object_store's own retries absorb 503s, resets and short bodies; flipped
//! response bytes are caught by the read-side MD5 check, flipped request bytes by Garage (the
//! payload SHA-256 is signed).

use super::super::{Servers, remotes, servers, unique};
use super::proxy::{PFault, Proxy};
use super::*;
use moverctl::store::config::Remotes;
use moverctl::transfer::Verify;

struct Setup {
    proxy: Proxy,
    /// Through the proxy.
    src: Store,
    dst: Store,
    /// Direct to Garage, for seeding and checking.
    raw_src: Store,
    raw_dst: Store,
    /// `bucket/prefix/` of each side, as it appears in request paths.
    src_path: String,
    dst_path: String,
}

async fn setup(s: &Servers, name: &str) -> Setup {
    let upstream = super::super::s3_upstream(s);
    let proxy = Proxy::start(upstream).await;
    let toml = super::super::proxy_remote_toml(s, &proxy.endpoint());
    let via = Remotes::parse("fault-remotes.toml", &toml).unwrap();
    let direct = remotes(s);
    let p = unique(name);
    let at = |r: &Remotes, remote: &str, bucket: &str| {
        Store::open(&format!("{remote}:{bucket}/{p}"), r).unwrap()
    };
    Setup {
        src: at(&via, "viaproxy", &s.bucket_a),
        dst: at(&via, "viaproxy", &s.bucket_b),
        raw_src: at(&direct, "garage", &s.bucket_a),
        raw_dst: at(&direct, "garage", &s.bucket_b),
        src_path: format!("/{}/{p}/", s.bucket_a),
        dst_path: format!("/{}/{p}/", s.bucket_b),
        proxy,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_503s_resets_and_short_bodies_are_absorbed() {
    let Some(s) = servers() else { return };
    let t = setup(&s, "proxy-absorb").await;
    seed(&t.raw_src, &corpus()).await;
    let (sp, dp) = (&t.src_path, &t.dst_path);
    let px = &t.proxy;
    px.add("GET", &format!("{sp}a-small"), "", PFault::SlowDown, 1)
        .add("GET", &format!("{sp}b-small"), "", PFault::ResetMidBody, 1)
        .add("GET", &format!("{sp}c-small"), "", PFault::TruncateBody, 1)
        .add("GET", &format!("{sp}m-multi"), "", PFault::ResetMidBody, 1)
        .add(
            "GET",
            &format!("{sp}n-multi"),
            "",
            PFault::ResetBeforeResponse,
            1,
        )
        .add("PUT", &format!("{dp}a-small"), "", PFault::SlowDown, 2)
        .add(
            "PUT",
            &format!("{dp}b-small"),
            "",
            PFault::ResetBeforeResponse,
            1,
        )
        .add(
            "POST",
            &format!("{dp}m-multi"),
            "uploads",
            PFault::SlowDown,
            1,
        )
        .add(
            "PUT",
            &format!("{dp}m-multi"),
            "partNumber=2",
            PFault::SlowDown,
            1,
        )
        .add(
            "PUT",
            &format!("{dp}n-multi"),
            "partNumber=3",
            PFault::ResetBeforeResponse,
            1,
        )
        .add(
            "POST",
            &format!("{dp}n-multi"),
            "uploadId",
            PFault::SlowDown,
            1,
        );
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let started = std::time::Instant::now();
    let out = go(&t.src, &t.dst, &j, opts(Verify::Auto)).await;
    eprintln!(
        "absorbed {} faults in {} requests, {:?}; moverctl retries {}, throttle events {}",
        px.hits().len(),
        px.requests(),
        started.elapsed(),
        out.report.retries,
        out.report.throttle_events
    );
    assert!(px.unspent().is_empty(), "{:?}", px.unspent());
    assert_all_copied(&out, 5);
    // Every fault cost at most one moverctl-level attempt (most are absorbed below it).
    assert!(out.report.retries <= px.hits().len() as u64);
    check(&t.raw_src, &t.raw_dst, &out).await;
    super::super::copy::assert_same(&t.raw_src, &t.raw_dst).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_flipped_response_bodies_are_caught_by_the_source_md5() {
    let Some(s) = servers() else { return };
    let t = setup(&s, "proxy-flip-resp").await;
    let objs = [SMALL_A, SMALL_B, SMALL_C];
    seed(&t.raw_src, &objs).await;
    let sp = &t.src_path;
    t.proxy
        .add("GET", &format!("{sp}a-small"), "", PFault::FlipResponse, 1)
        .add("GET", &format!("{sp}c-small"), "", PFault::FlipResponse, 2);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&t.src, &t.dst, &j, opts(Verify::Auto)).await;
    assert!(t.proxy.unspent().is_empty(), "{:?}", t.proxy.unspent());
    assert_all_copied(&out, 3);
    // Each flip was caught and cost one attempt.
    assert_eq!(out.report.retries, 3);
    for (k, _) in objs {
        assert_eq!(out.copied[k], "source-md5+dest-md5");
    }
    check(&t.raw_src, &t.raw_dst, &out).await;
    super::super::copy::assert_same(&t.raw_src, &t.raw_dst).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_persistent_response_flip_fails_as_an_integrity_error() {
    let Some(s) = servers() else { return };
    let t = setup(&s, "proxy-flip-persist").await;
    seed(&t.raw_src, &[SMALL_A, SMALL_B]).await;
    let sp = &t.src_path;
    t.proxy
        .add("GET", &format!("{sp}b-small"), "", PFault::FlipResponse, 3);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&t.src, &t.dst, &j, opts(Verify::Auto)).await;
    assert!(t.proxy.unspent().is_empty(), "{:?}", t.proxy.unspent());
    assert_integrity_failure(&out, SMALL_B.0);
    assert_eq!(out.copied.len(), 1);
    assert!(bytes_at(&t.raw_dst, SMALL_B.0).await.is_none());
    check(&t.raw_src, &t.raw_dst, &out).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_flipped_response_in_a_part_is_caught_and_retried() {
    let Some(s) = servers() else { return };
    let t = setup(&s, "proxy-flip-part").await;
    seed(&t.raw_src, &[MULTI_N]).await;
    let sp = &t.src_path;
    t.proxy
        .add("GET", &format!("{sp}n-multi"), "", PFault::FlipResponse, 1);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&t.src, &t.dst, &j, opts(Verify::Auto)).await;
    assert!(t.proxy.unspent().is_empty(), "{:?}", t.proxy.unspent());
    check(&t.raw_src, &t.raw_dst, &out).await;
    assert_all_copied(&out, 1);
    assert_eq!(out.report.retries, 1);
    super::super::copy::assert_same(&t.raw_src, &t.raw_dst).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_flipped_request_bodies_are_rejected_and_retried() {
    let Some(s) = servers() else { return };
    let t = setup(&s, "proxy-flip-req").await;
    seed(&t.raw_src, &[SMALL_A, SMALL_C, MULTI_N]).await;
    let dp = &t.dst_path;
    t.proxy
        .add("PUT", &format!("{dp}a-small"), "", PFault::FlipRequest, 1)
        .add("PUT", &format!("{dp}c-small"), "", PFault::FlipRequest, 2)
        .add(
            "PUT",
            &format!("{dp}n-multi"),
            "partNumber=2",
            PFault::FlipRequest,
            1,
        );
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&t.src, &t.dst, &j, opts(Verify::Auto)).await;
    eprintln!("report: {:?}", out.report);
    assert!(t.proxy.unspent().is_empty(), "{:?}", t.proxy.unspent());
    assert_all_copied(&out, 3);
    // Garage refused each corrupt body (its Content-MD5 did not match: BadDigest) with a 4xx, which
    // object_store does not retry: each cost one moverctl attempt.
    let st = t.proxy.upstream_statuses();
    assert_eq!(st.len(), 4, "{st:?}");
    assert!(st.iter().all(|(_, c)| (400..500).contains(c)), "{st:?}");
    assert_eq!(out.report.retries, 4);
    check(&t.raw_src, &t.raw_dst, &out).await;
    super::super::copy::assert_same(&t.raw_src, &t.raw_dst).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_absorbed_503s_show_in_the_report() {
    let Some(s) = servers() else { return };
    let t = setup(&s, "proxy-503-report").await;
    seed(&t.raw_src, &[SMALL_A, SMALL_B]).await;
    let (sp, dp) = (&t.src_path, &t.dst_path);
    t.proxy
        .add("GET", &format!("{sp}a-small"), "", PFault::SlowDown, 2)
        .add("PUT", &format!("{dp}b-small"), "", PFault::SlowDown, 2);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&t.src, &t.dst, &j, opts(Verify::Auto)).await;
    assert!(t.proxy.unspent().is_empty(), "{:?}", t.proxy.unspent());
    assert_all_copied(&out, 2);
    assert!(
        out.report.throttle_events >= 1,
        "4 injected 503s left no trace in the report: {:?}",
        out.report
    );
}

/// AWS documents that SSE-KMS and SSE-C objects have ETags that are not MD5s of their data. A
/// destination answering that way (the proxy rewrites the ETag and adds
/// `x-amz-server-side-encryption: aws:kms`) must not make every copy fail as "corrupt": the
/// Content-MD5 the store checked on every PUT and part is the write-side proof instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_sse_kms_etags_are_not_taken_for_md5s() {
    let Some(s) = servers() else { return };
    let t = setup(&s, "proxy-kms").await;
    seed(&t.raw_src, &[SMALL_A, SMALL_C, MULTI_N]).await;
    let dp = &t.dst_path;
    t.proxy
        .add("PUT", &format!("{dp}a-small"), "", PFault::KmsEtag, 1)
        .add("PUT", &format!("{dp}c-small"), "", PFault::KmsEtag, 1)
        .add(
            "POST",
            &format!("{dp}n-multi"),
            "uploadId=",
            PFault::KmsEtag,
            1,
        );
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&t.src, &t.dst, &j, opts(Verify::Auto)).await;
    assert!(t.proxy.unspent().is_empty(), "{:?}", t.proxy.unspent());
    assert_all_copied(&out, 3);
    assert_eq!(out.report.retries, 0);
    for (k, by) in &out.copied {
        assert!(by.ends_with("+dest-content-md5"), "{k}: {by}");
    }
    check(&t.raw_src, &t.raw_dst, &out).await;
}

/// The same rewritten ETags without the encryption header: the store claims other content
/// than was sent, and each object is written again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_wrong_destination_etags_are_caught_and_retried() {
    let Some(s) = servers() else { return };
    let t = setup(&s, "proxy-bogus-etag").await;
    seed(&t.raw_src, &[SMALL_A, MULTI_N]).await;
    let dp = &t.dst_path;
    t.proxy
        .add("PUT", &format!("{dp}a-small"), "", PFault::BogusEtag, 1)
        .add(
            "POST",
            &format!("{dp}n-multi"),
            "uploadId=",
            PFault::BogusEtag,
            1,
        );
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&t.src, &t.dst, &j, opts(Verify::Auto)).await;
    assert!(t.proxy.unspent().is_empty(), "{:?}", t.proxy.unspent());
    assert_all_copied(&out, 2);
    assert_eq!(out.report.retries, 2);
    assert!(out.copied[SMALL_A.0].ends_with("+dest-md5"));
    assert!(out.copied[MULTI_N.0].ends_with("+dest-multipart-etag"));
    check(&t.raw_src, &t.raw_dst, &out).await;
}
