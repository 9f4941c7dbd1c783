//! FaultStore over Garage S3 (bucket a → bucket b): read-side flips are caught by the source's
//! MD5 ETag, write-side flips by the destination's MD5 / multipart ETag.

use super::super::{Servers, remotes, servers, unique};
use super::wrapper::{Fault, Op, Plan, faulty};
use super::*;
use moverctl::journal::State;
use moverctl::transfer::Verify;

fn pair(s: &Servers, name: &str) -> (Store, Store) {
    let r = remotes(s);
    let p = unique(name);
    (
        Store::open(&format!("garage:{}/{p}", s.bucket_a), &r).unwrap(),
        Store::open(&format!("garage:{}/{p}", s.bucket_b), &r).unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_side_flips_in_single_puts_are_caught_by_the_source_md5() {
    let Some(s) = servers() else { return };
    let (src, dst) = pair(&s, "flip-read");
    let objs = [SMALL_A, SMALL_B, SMALL_C];
    seed(&src, &objs).await;
    let plan = Plan::new();
    plan.add(SMALL_A.0, Op::Get, Fault::Flip, 500, 1)
        .add(SMALL_C.0, Op::Get, Fault::Flip, 299_999, 2)
        .add(SMALL_B.0, Op::Get, Fault::Truncate, 30_000, 1);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&faulty(&src, &plan), &dst, &j, opts(Verify::Auto)).await;
    assert!(plan.unspent().is_empty(), "{:?}", plan.unspent());
    assert_all_copied(&out, 3);
    assert_eq!(out.report.retries, 4);
    for (k, _) in objs {
        assert_eq!(out.copied[k], "source-md5+dest-md5");
    }
    check(&src, &dst, &out).await;
    super::super::copy::assert_same(&src, &dst).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persistent_read_side_flip_fails_as_an_integrity_error() {
    let Some(s) = servers() else { return };
    let (src, dst) = pair(&s, "flip-read-persist");
    seed(&src, &[SMALL_A, SMALL_B]).await;
    let plan = Plan::new();
    plan.add(SMALL_A.0, Op::Get, Fault::Flip, 500, 3);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&faulty(&src, &plan), &dst, &j, opts(Verify::Auto)).await;
    assert!(plan.unspent().is_empty(), "{:?}", plan.unspent());
    assert_integrity_failure(&out, SMALL_A.0);
    assert_eq!(record(&out, SMALL_A.0).unwrap().state, State::Failed);
    // Caught before anything was written.
    assert!(bytes_at(&dst, SMALL_A.0).await.is_none());
    assert_eq!(out.copied.len(), 1);
    check(&src, &dst, &out).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_side_flip_in_a_part_is_caught_by_the_source_md5_and_retried() {
    let Some(s) = servers() else { return };
    let (src, dst) = pair(&s, "flip-read-part");
    seed(&src, &[MULTI_M]).await;
    let plan = Plan::new();
    plan.add(MULTI_M.0, Op::Get, Fault::Flip, PART + 5, 1);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&faulty(&src, &plan), &dst, &j, opts(Verify::Auto)).await;
    assert!(plan.unspent().is_empty(), "{:?}", plan.unspent());
    check(&src, &dst, &out).await;
    assert_all_copied(&out, 1);
    assert_eq!(out.copied[MULTI_M.0], "source-md5+dest-multipart-etag");
    assert_eq!(out.report.retries, 1);
    super::super::copy::assert_same(&src, &dst).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_part_read_corrupt_before_a_retry_is_never_stitched_in() {
    let Some(s) = servers() else { return };
    let (src, dst) = pair(&s, "flip-read-resume");
    seed(&src, &[MULTI_M]).await;
    let plan = Plan::new();
    // Part 0 arrives with a flipped byte and is uploaded and journaled; part 3 (started only
    // after part 0 finished, part_concurrency = 3) then fails with a 503, so the attempt ends
    // before the whole-object MD5 is compared.
    plan.add(MULTI_M.0, Op::Get, Fault::Flip, 100, 1).add(
        MULTI_M.0,
        Op::Get,
        Fault::Unavailable,
        3 * PART + 1,
        1,
    );
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&faulty(&src, &plan), &dst, &j, opts(Verify::Auto)).await;
    assert!(plan.unspent().is_empty(), "{:?}", plan.unspent());
    check(&src, &dst, &out).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_side_flips_in_single_puts_are_caught_by_the_destination_md5() {
    let Some(s) = servers() else { return };
    let (src, dst) = pair(&s, "flip-write");
    let objs = [SMALL_A, SMALL_B, SMALL_C];
    seed(&src, &objs).await;
    let plan = Plan::new();
    plan.add(SMALL_A.0, Op::Put, Fault::Flip, 0, 1)
        .add(SMALL_B.0, Op::Put, Fault::Flip, 65_535, 2)
        .add(SMALL_C.0, Op::Put, Fault::Unavailable, 0, 1);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&src, &faulty(&dst, &plan), &j, opts(Verify::Auto)).await;
    assert!(plan.unspent().is_empty(), "{:?}", plan.unspent());
    assert_all_copied(&out, 3);
    assert_eq!(out.report.retries, 4);
    for (k, _) in objs {
        assert_eq!(out.copied[k], "source-md5+dest-md5");
    }
    check(&src, &dst, &out).await;
    super::super::copy::assert_same(&src, &dst).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persistent_write_side_flip_fails_as_an_integrity_error() {
    let Some(s) = servers() else { return };
    let (src, dst) = pair(&s, "flip-write-persist");
    seed(&src, &[SMALL_A, SMALL_B]).await;
    let plan = Plan::new();
    plan.add(SMALL_A.0, Op::Put, Fault::Flip, 10, 3);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&src, &faulty(&dst, &plan), &j, opts(Verify::Auto)).await;
    assert!(plan.unspent().is_empty(), "{:?}", plan.unspent());
    assert_integrity_failure(&out, SMALL_A.0);
    assert_eq!(record(&out, SMALL_A.0).unwrap().state, State::Failed);
    assert_eq!(out.copied.len(), 1);
    check(&src, &dst, &out).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_after_a_failed_verification_copies_the_object_again() {
    let Some(s) = servers() else { return };
    let (src, dst) = pair(&s, "flip-write-rerun");
    seed(&src, &[SMALL_A]).await;
    let plan = Plan::new();
    plan.add(SMALL_A.0, Op::Put, Fault::Flip, 10, 3);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&src, &faulty(&dst, &plan), &j, opts(Verify::Auto)).await;
    assert_integrity_failure(&out, SMALL_A.0);
    let again = go(&src, &dst, &j, opts(Verify::Auto)).await;
    assert_eq!(
        again.skipped.get(SMALL_A.0),
        None,
        "skipped a corrupt object"
    );
    assert_all_copied(&again, 1);
    check(&src, &dst, &again).await;
    super::super::copy::assert_same(&src, &dst).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_side_flip_in_a_part_is_caught_by_the_multipart_etag_and_retried() {
    let Some(s) = servers() else { return };
    let (src, dst) = pair(&s, "flip-write-part");
    seed(&src, &[MULTI_M]).await;
    let plan = Plan::new();
    plan.add(MULTI_M.0, Op::Part(2), Fault::Flip, 4242, 1);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&src, &faulty(&dst, &plan), &j, opts(Verify::Auto)).await;
    assert!(plan.unspent().is_empty(), "{:?}", plan.unspent());
    check(&src, &dst, &out).await;
    assert_all_copied(&out, 1);
    assert_eq!(out.copied[MULTI_M.0], "source-md5+dest-multipart-etag");
    assert_eq!(out.report.retries, 1);
    super::super::copy::assert_same(&src, &dst).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_errors_in_multipart_uploads_are_retried_and_resumed() {
    let Some(s) = servers() else { return };
    let (src, dst) = pair(&s, "mp-errors");
    seed(&src, &[MULTI_M, MULTI_N]).await;
    let plan = Plan::new();
    plan.add(MULTI_M.0, Op::Part(1), Fault::Unavailable, 0, 1)
        .add(MULTI_N.0, Op::Complete, Fault::Unavailable, 0, 1)
        .add(MULTI_N.0, Op::Create, Fault::Unavailable, 0, 1);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&src, &faulty(&dst, &plan), &j, opts(Verify::Auto)).await;
    assert!(plan.unspent().is_empty(), "{:?}", plan.unspent());
    assert_all_copied(&out, 2);
    assert_eq!(out.report.retries, 3);
    assert!(out.report.resumed_parts >= 1);
    // (A resumed upload is verified by its multipart ETag only; see the ignored
    // a_part_read_corrupt_before_a_retry_is_never_stitched_in.)
    for k in [MULTI_M.0, MULTI_N.0] {
        assert!(
            out.copied[k].ends_with("+dest-multipart-etag"),
            "{k}: {}",
            out.copied[k]
        );
    }
    check(&src, &dst, &out).await;
    super::super::copy::assert_same(&src, &dst).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_side_flip_from_a_multipart_uploaded_source_is_detected() {
    let Some(s) = servers() else { return };
    let (src, dst) = pair(&s, "flip-read-mpsrc");
    seed_multipart(&src, MULTI_N.0, MULTI_N.1).await;
    seed(&src, &[SMALL_A]).await;
    let plan = Plan::new();
    plan.add(MULTI_N.0, Op::Get, Fault::Flip, PART + 1, 1);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&faulty(&src, &plan), &dst, &j, opts(Verify::Auto)).await;
    assert!(plan.unspent().is_empty(), "{:?}", plan.unspent());
    check(&src, &dst, &out).await;
}
