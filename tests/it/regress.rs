//! Regression tests named after the trust defects of issue 11 (each failed on the main of
//! 2026-12-01, as its comment says), plus the retry policy measured on a 503 storm.

use super::faults::proxy::{PFault, Proxy};
use super::faults::wrapper::{Fault, Op, Plan, faulty};
use super::faults::{PART, data, go, opts, seed, seed_multipart};
use super::{Servers, remotes, remotes_toml, servers, unique};
use moverctl::journal::State;
use moverctl::store::Store;
use moverctl::store::config::Remotes;
use moverctl::transfer::Verify;
use object_store::{Attribute, Attributes, ObjectStoreExt, PutOptions, PutPayload};
use std::time::{Duration, Instant};

fn upstream(s: &Servers) -> std::net::SocketAddr {
    super::s3_upstream(s)
}

fn via(proxy: &Proxy, s: &Servers) -> String {
    super::proxy_remote_toml(s, &proxy.endpoint())
}

/// Issue 11, defect 1: S3 -> local folder, a foreign object above the multipart threshold. Its
/// GET bytes were corrupted on the way and the file was written wrong, labelled
/// `source-size+readback-crc64`, exit 0: the local path never learned the source's digest.
/// Failed on the main of 2026-12-01 (both objects reported copied with other bytes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_to_local_large_foreign_objects_are_checked_against_the_source_digest() {
    let Some(s) = servers() else { return };
    let src = Store::open(
        &format!("garage:{}/{}", s.bucket_a, unique("reg-s3-local")),
        &remotes(&s),
    )
    .unwrap();
    let single = ("single-large", 2 * PART + 11);
    let multi = ("multi-large", 3 * PART + 5);
    seed(&src, &[single]).await;
    seed_multipart(&src, multi.0, multi.1).await;
    let dir = tempfile::tempdir().unwrap();
    let dst = Store::open(&dir.path().display().to_string(), &remotes(&s)).unwrap();
    let plan = Plan::new();
    // Every GET of both objects is corrupted: nothing may be recorded.
    plan.add(single.0, Op::Get, Fault::Flip, PART + 3, 100).add(
        multi.0,
        Op::Get,
        Fault::Flip,
        2 * PART + 1,
        100,
    );
    let j = dir.path().join("journal.sqlite");
    let mut o = opts(Verify::Auto);
    o.retries = 1;
    let out = go(&faulty(&src, &plan), &dst, &j, o).await;
    assert!(out.copied.is_empty(), "copied: {:?}", out.copied);
    for k in [single.0, multi.0] {
        assert!(
            out.failed[k].starts_with("integrity:"),
            "{k}: {}",
            out.failed[k]
        );
        assert!(
            !dir.path().join(k).exists(),
            "{k} is visible at the destination"
        );
    }
    // A clean re-run repairs both (nothing was recorded as verified).
    let again = go(&src, &dst, &j, opts(Verify::Auto)).await;
    assert!(again.report.failed.is_empty(), "{:?}", again.report.failed);
    assert_eq!(
        std::fs::read(dir.path().join(single.0)).unwrap(),
        data(single.0, single.1)
    );
    assert_eq!(
        std::fs::read(dir.path().join(multi.0)).unwrap(),
        data(multi.0, multi.1)
    );
    assert_eq!(again.copied[single.0], "source-md5+dest-written-crc64");
    assert_eq!(
        again.copied[multi.0],
        "source-parts-etag+dest-written-crc64"
    );
}

/// Issue 11, defect 2: S3 -> S3, a foreign multipart source whose part-layout HEAD got a 503
/// (not retried) fell back to `source-size`; with corrupted GET bytes the wrong object was
/// stored, exit 0. Now the HEAD is retried (here a short storm is absorbed, and the flipped read
/// is caught), and a HEAD that keeps failing fails the object. Failed on the main of 2026-12-01.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multipart_source_head_failure_never_falls_back_to_size() {
    let Some(s) = servers() else { return };
    let proxy = Proxy::start(upstream(&s)).await;
    let p = unique("reg-head");
    let raw = Store::open(&format!("garage:{}/{p}", s.bucket_a), &remotes(&s)).unwrap();
    seed_multipart(&raw, "mp", 2 * PART + 9).await;
    seed_multipart(&raw, "mp-storm", 2 * PART + 9).await;
    let via = Remotes::parse("via.toml", &via(&proxy, &s)).unwrap();
    let mut src = Store::open(&format!("viaproxy:{}/{p}", s.bucket_a), &via).unwrap();
    src.retry_window = Duration::from_secs(2);
    let path = format!("/{}/{p}/", s.bucket_a);
    // Two 503s on mp's HEAD (retried, then it succeeds); a storm on mp-storm's.
    proxy
        .add(
            "HEAD",
            &format!("{path}mp"),
            "partNumber=1",
            PFault::SlowDown,
            2,
        )
        .add(
            "HEAD",
            &format!("{path}mp-storm"),
            "",
            PFault::SlowDown,
            1_000_000,
        );
    let plan = Plan::new();
    plan.add("mp", Op::Get, Fault::Flip, PART + 100, 1);
    let dst = Store::open(
        &format!("garage:{}/{}", s.bucket_b, unique("reg-head-dst")),
        &remotes(&s),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let mut o = opts(Verify::Auto);
    o.retries = 1;
    let out = go(&faulty(&src, &plan), &dst, &j, o).await;
    assert_eq!(plan.hits().len(), 1, "the flip fired");
    assert_eq!(
        out.copied.get("mp").map(String::as_str),
        Some("source-parts-etag+dest-multipart-etag")
    );
    assert_eq!(
        super::faults::bytes_at(&dst, "mp").await,
        Some(data("mp", 2 * PART + 9))
    );
    let e = &out.failed["mp-storm"];
    assert!(e.contains("part size") && e.contains("503"), "{e}");
    assert!(super::faults::bytes_at(&dst, "mp-storm").await.is_none());
    assert_ne!(
        super::faults::record(&out, "mp-storm").map(|r| r.state),
        Some(State::Verified)
    );
}

/// Issue 11, defect 11: `copy` skipped a destination whose stale moverctl metadata named the
/// right source version although both listed MD5 ETags differed (sync caught it). Failed on the
/// main of 2026-12-01 (skipped as `same source version`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_recopies_when_listed_md5s_differ_despite_stale_metadata() {
    let Some(s) = servers() else { return };
    let src = Store::open(
        &format!("garage:{}/{}", s.bucket_a, unique("reg-md5")),
        &remotes(&s),
    )
    .unwrap();
    let dst = Store::open(
        &format!("garage:{}/{}", s.bucket_b, unique("reg-md5")),
        &remotes(&s),
    )
    .unwrap();
    src.inner
        .put(
            &src.path_of("k").unwrap(),
            PutPayload::from(data("k", 5000)),
        )
        .await
        .unwrap();
    let listed = src.inner.head(&src.path_of("k").unwrap()).await.unwrap();
    // Another tool wrote other bytes of the same size, keeping moverctl's metadata.
    let mut attrs = Attributes::new();
    attrs.insert(
        Attribute::Metadata(moverctl::checksum::META_SRC_ETAG.into()),
        moverctl::checksum::etag_norm(listed.e_tag.as_deref().unwrap()).into(),
    );
    attrs.insert(
        Attribute::Metadata(moverctl::checksum::META_SIZE.into()),
        "5000".into(),
    );
    dst.inner
        .put_opts(
            &dst.path_of("k").unwrap(),
            PutPayload::from(data("other", 5000)),
            PutOptions {
                attributes: attrs,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let env = tempfile::tempdir().unwrap();
    std::fs::write(env.path().join("remotes.toml"), remotes_toml(&s)).unwrap();
    let o = super::moverctl()
        .arg("--config")
        .arg(env.path().join("remotes.toml"))
        .args(["copy", &src.shown(), &dst.shown(), "--json"])
        .env("MOVERCTL_STATE_DIR", env.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("\"md5 differs\""), "{text}");
    assert_eq!(
        super::faults::bytes_at(&dst, "k").await,
        Some(data("k", 5000))
    );
}

/// The retry policy on a 503 storm, through the binary: a GET (retried by object_store) and a
/// presigned HEAD (retried by moverctl) each give up once `--retry-timeout` has passed, not
/// after a fixed count (the old policy: 8 retries, 3–7 s), and nothing is recorded. The total is
/// the window plus at most one last wait (each wait is at most twice the one before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_503_storm_is_retried_for_the_retry_timeout_then_reported() {
    let Some(s) = servers() else { return };
    let proxy = Proxy::start(upstream(&s)).await;
    let p = unique("reg-storm");
    let raw = Store::open(&format!("garage:{}/{p}", s.bucket_a), &remotes(&s)).unwrap();
    seed(&raw, &[("small", 1000)]).await;
    seed_multipart(&raw, "large", 2 * PART + 1).await;
    let env = tempfile::tempdir().unwrap();
    std::fs::write(env.path().join("remotes.toml"), via(&proxy, &s)).unwrap();
    let dst = env.path().join("out");
    let path = format!("/{}/{p}/", s.bucket_a);
    for (method, key) in [("GET", "small"), ("HEAD", "large")] {
        proxy.add(
            method,
            &format!("{path}{key}"),
            "",
            PFault::SlowDown,
            1_000_000,
        );
        let started = Instant::now();
        let mut c = super::moverctl();
        c.arg("--config")
            .arg(env.path().join("remotes.toml"))
            .args(["--retry-timeout", "4s", "copy"])
            .arg(format!("viaproxy:{}/{p}", s.bucket_a))
            .arg(&dst)
            .args([
                "--retries",
                "0",
                "--include",
                key,
                "--multipart-threshold",
                "8MiB",
            ])
            .env("MOVERCTL_STATE_DIR", env.path());
        let o = tokio::task::spawn_blocking(move || c.output().unwrap())
            .await
            .unwrap();
        let took = started.elapsed();
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        eprintln!("{method} storm: gave up after {took:.1?}");
        assert_eq!(o.status.code(), Some(3), "{err}");
        assert!(err.contains(key) && err.contains("503"), "{err}");
        assert!(
            took >= Duration::from_secs(4) && took < Duration::from_secs(14),
            "{method} storm took {took:?}"
        );
        assert!(!dst.join(key).exists());
    }
}

/// Issue 11, defect 10: copy runs of one pair are kept apart by the pair's lock (two runs used
/// to abort each other's multipart uploads and report "uploads of changed sources were aborted").
/// Failed on the main of 2026-12-01 (copy took no lock).
#[test]
fn a_second_copy_of_the_same_pair_is_refused_while_one_runs() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("a"), b"x").unwrap();
    let dst = dir.path().join("dst");
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    // Hold the pair's lock as a running copy would.
    let src_s = src.display().to_string();
    let dst_s = dst.display().to_string();
    let identity = |p: &str| {
        Store::open(p, &Remotes::parse("none.toml", "").unwrap())
            .unwrap()
            .identity
    };
    std::fs::create_dir(&dst).unwrap();
    let lock_path = {
        // As lock::default_path computes it in the child (whose state folder is `state`).
        let j = moverctl::journal::default_path(&state, &identity(&src_s), &identity(&dst_s));
        state.join(format!(
            "sync-{}.lock",
            j.file_stem().unwrap().to_string_lossy()
        ))
    };
    let (_held, _) = moverctl::lock::RunLock::acquire(&lock_path, "copy (test)").unwrap();
    let o = super::moverctl()
        .args(["copy", &src_s, &dst_s])
        .env("MOVERCTL_STATE_DIR", &state)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(6), "{err}");
    assert!(err.contains("another moverctl run"), "{err}");
    assert!(!dst.join("a").exists());
}

/// An S3 multipart source whose parts are not all one size while their count still agrees with
/// part 1's size (5 MiB, 6 MiB, then 1 MiB: three parts either way) was failed as corrupt on
/// every run, because its ETag was recomputed with 5 MiB parts. (Issue 25: the ETag is now
/// rebuilt over the parts' own sizes, learned with a HEAD of each part.) Then one HEAD of the last part
/// shows the layout is irregular, the ETag proves nothing, and the copy goes on with the size
/// checked (`source-size`). Failed on the main of 2026-12-01 (integrity error, both paths).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn irregular_part_layouts_are_not_taken_for_corruption() {
    let Some(s) = servers() else { return };
    let src = Store::open(
        &format!("garage:{}/{}", s.bucket_a, unique("reg-irregular")),
        &remotes(&s),
    )
    .unwrap();
    let size = 12 * moverctl::catalog::parts::MIB;
    let bytes = data("irregular", size);
    let path = src.path_of("irregular").unwrap();
    let mp = src.multipart.clone().unwrap();
    let id = mp.create_multipart(&path).await.unwrap();
    let mut ids = Vec::new();
    let mut at = 0usize;
    for (i, n) in [5usize, 6, 1].into_iter().enumerate() {
        let end = at + n * (1 << 20);
        ids.push(
            mp.put_part(&path, &id, i, PutPayload::from(bytes.slice(at..end)))
                .await
                .unwrap(),
        );
        at = end;
    }
    mp.complete_multipart(&path, &id, ids).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let local = Store::open_destination(&dir.path().display().to_string(), &remotes(&s)).unwrap();
    let s3_dst = Store::open(
        &format!("garage:{}/{}", s.bucket_b, unique("reg-irregular")),
        &remotes(&s),
    )
    .unwrap();
    // Local: the streaming path; S3 with 5 MiB parts: the same-layout path.
    for (dst, name) in [(&local, "local"), (&s3_dst, "s3")] {
        let j = dir.path().join(format!("j-{name}.sqlite"));
        let out = go(&src, dst, &j, opts(Verify::Auto)).await;
        assert!(
            out.report.failed.is_empty(),
            "{name}: {:?}",
            out.report.failed
        );
        // Every part's size is learned (HEAD partNumber) and the ETag rebuilt over them.
        assert!(
            out.copied
                .get("irregular")
                .is_some_and(|by| by.starts_with("source-parts-etag+")),
            "{name}: {:?} {:?}",
            out.copied,
            out.unverified
        );
        assert_eq!(
            super::faults::bytes_at(dst, "irregular").await,
            Some(bytes.clone())
        );
    }
    // A real corruption of a regularly laid out object is still caught (the HEAD says regular).
    seed_multipart(&src, "regular", 2 * PART + 9).await;
    let plan = Plan::new();
    plan.add("regular", Op::Get, Fault::Flip, PART + 1, 100);
    let j = dir.path().join("j-flip.sqlite");
    let mut o = opts(Verify::Auto);
    o.retries = 0;
    o.include = Some(
        globset::GlobSetBuilder::new()
            .add(globset::Glob::new("regular").unwrap())
            .build()
            .unwrap(),
    );
    let out = go(&faulty(&src, &plan), &local, &j, o).await;
    assert!(
        out.failed["regular"].starts_with("integrity:"),
        "{:?}",
        out.failed
    );
}
