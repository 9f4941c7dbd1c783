//! FaultStore over in-memory stores: always run, no servers needed. In-memory stores have no
//! content-derived ETags, so short reads are caught by the byte count and write-side flips only
//! by `Verify::Readback`; read-side flips are undetectable here (no source digest) and are
//! covered against Garage instead.

use super::wrapper::{Fault, Op, Plan, faulty};
use super::*;
use moverctl::journal::State;
use moverctl::transfer::Verify;

fn stores() -> (Store, Store) {
    (
        Store::open("memory://src/", &Default::default()).unwrap(),
        Store::open("memory://dst/", &Default::default()).unwrap(),
    )
}

#[tokio::test]
async fn transient_read_faults_are_retried_and_verified() {
    let (src, dst) = stores();
    seed(&src, &corpus()).await;
    let plan = Plan::new();
    plan.add(SMALL_A.0, Op::Get, Fault::Unavailable, 0, 1)
        .add(SMALL_B.0, Op::Get, Fault::Truncate, 40_000, 2)
        .add(SMALL_C.0, Op::Get, Fault::ErrorMidStream, 100_000, 1)
        // The second part of m-multi ends short; the tail part of n-multi errors mid-stream.
        .add(MULTI_M.0, Op::Get, Fault::Truncate, PART + 123, 1)
        .add(MULTI_N.0, Op::Get, Fault::ErrorMidStream, 2 * PART + 50, 1);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&faulty(&src, &plan), &dst, &j, opts(Verify::Auto)).await;
    assert!(plan.unspent().is_empty(), "{:?}", plan.unspent());
    assert_all_copied(&out, 5);
    // Each injected fault cost exactly one attempt of its object, and only that.
    assert_eq!(out.report.retries, 6, "{:?}", plan.hits());
    assert!(
        out.report.throttle_events >= 1,
        "the 503 counts as throttling"
    );
    assert!(
        out.report.resumed_parts >= 1,
        "the multipart retry reused parts"
    );
    check(&src, &dst, &out).await;
    super::super::copy::assert_same(&src, &dst).await;
}

#[tokio::test]
async fn persistent_short_reads_fail_as_integrity_errors_and_are_never_recorded() {
    let (src, dst) = stores();
    seed(&src, &corpus()).await;
    let plan = Plan::new();
    // retries = 2: three attempts, all short.
    plan.add(SMALL_B.0, Op::Get, Fault::Truncate, 1000, 3).add(
        MULTI_M.0,
        Op::Get,
        Fault::Truncate,
        PART + 123,
        3,
    );
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&faulty(&src, &plan), &dst, &j, opts(Verify::Auto)).await;
    assert!(plan.unspent().is_empty(), "{:?}", plan.unspent());
    assert_eq!(out.copied.len(), 3, "{:?}", out.failed);
    assert_integrity_failure(&out, SMALL_B.0);
    assert_integrity_failure(&out, MULTI_M.0);
    assert_eq!(record(&out, SMALL_B.0).unwrap().state, State::Failed);
    // The multipart upload stays open (journaled `copying`) for the next run to resume.
    assert_eq!(record(&out, MULTI_M.0).unwrap().state, State::Copying);
    assert!(bytes_at(&dst, SMALL_B.0).await.is_none());
    assert!(bytes_at(&dst, MULTI_M.0).await.is_none());
    check(&src, &dst, &out).await;

    // The next run, without faults, finishes both, reusing the open upload's good parts.
    let again = go(&src, &dst, &j, opts(Verify::Auto)).await;
    assert_all_copied(&again, 2);
    assert!(again.report.resumed_parts >= 1);
    check(&src, &dst, &again).await;
    super::super::copy::assert_same(&src, &dst).await;
}

#[tokio::test]
async fn write_side_flip_in_a_single_put_is_caught_by_readback() {
    let (src, dst) = stores();
    seed(&src, &corpus()).await;
    let plan = Plan::new();
    plan.add(SMALL_A.0, Op::Put, Fault::Flip, 10, 1).add(
        SMALL_C.0,
        Op::Put,
        Fault::Flip,
        200_000,
        2,
    );
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&src, &faulty(&dst, &plan), &j, opts(Verify::Readback)).await;
    assert!(plan.unspent().is_empty(), "{:?}", plan.unspent());
    assert_all_copied(&out, 5);
    assert_eq!(out.report.retries, 3);
    assert_eq!(out.copied[SMALL_A.0], "source-size+readback-crc64");
    check(&src, &dst, &out).await;
    super::super::copy::assert_same(&src, &dst).await;
}

#[tokio::test]
async fn write_side_flip_in_a_part_is_caught_by_readback_and_retried() {
    let (src, dst) = stores();
    seed(&src, &corpus()).await;
    let plan = Plan::new();
    plan.add(MULTI_M.0, Op::Part(1), Fault::Flip, 777, 1);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&src, &faulty(&dst, &plan), &j, opts(Verify::Readback)).await;
    assert!(plan.unspent().is_empty(), "{:?}", plan.unspent());
    check(&src, &dst, &out).await;
    assert_all_copied(&out, 5);
    assert_eq!(out.report.retries, 1);
    super::super::copy::assert_same(&src, &dst).await;
}

#[tokio::test]
async fn persistent_write_side_flips_fail_as_integrity_errors() {
    let (src, dst) = stores();
    seed(&src, &corpus()).await;
    let plan = Plan::new();
    plan.add(SMALL_A.0, Op::Put, Fault::Flip, 10, 3)
        .add(MULTI_N.0, Op::Part(2), Fault::Flip, 5, 3);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&src, &faulty(&dst, &plan), &j, opts(Verify::Readback)).await;
    check(&src, &dst, &out).await;
    assert_integrity_failure(&out, SMALL_A.0);
    assert_eq!(record(&out, SMALL_A.0).unwrap().state, State::Failed);
    assert!(!out.copied.contains_key(MULTI_N.0));
    assert_eq!(out.copied.len(), 3);
}

#[tokio::test]
async fn persistent_write_side_flip_in_a_part_fails_as_an_integrity_error() {
    let (src, dst) = stores();
    seed(&src, &corpus()).await;
    let plan = Plan::new();
    plan.add(MULTI_N.0, Op::Part(2), Fault::Flip, 5, 3);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&src, &faulty(&dst, &plan), &j, opts(Verify::Readback)).await;
    check(&src, &dst, &out).await;
    assert_integrity_failure(&out, MULTI_N.0);
    // The corrupt object is at the destination (the upload completed before the readback):
    // a later run without faults must copy it again.
    let again = go(&src, &dst, &j, opts(Verify::Readback)).await;
    assert_eq!(
        again.skipped.get(MULTI_N.0),
        None,
        "skipped a corrupt object"
    );
    assert_all_copied(&again, 1);
    check(&src, &dst, &again).await;
    super::super::copy::assert_same(&src, &dst).await;
}

#[tokio::test]
async fn a_run_after_a_failed_verification_copies_the_object_again() {
    let (src, dst) = stores();
    seed(&src, &corpus()).await;
    let plan = Plan::new();
    plan.add(SMALL_A.0, Op::Put, Fault::Flip, 10, 3);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&src, &faulty(&dst, &plan), &j, opts(Verify::Readback)).await;
    assert_integrity_failure(&out, SMALL_A.0);
    // The next run has no faults: the object must be copied again, not skipped.
    let again = go(&src, &dst, &j, opts(Verify::Readback)).await;
    assert_eq!(
        again.skipped.get(SMALL_A.0),
        None,
        "skipped a corrupt object"
    );
    assert_all_copied(&again, 1);
    check(&src, &dst, &again).await;
    super::super::copy::assert_same(&src, &dst).await;
}

#[tokio::test]
async fn write_errors_and_503s_are_retried() {
    let (src, dst) = stores();
    seed(&src, &corpus()).await;
    let plan = Plan::new();
    plan.add(SMALL_A.0, Op::Put, Fault::Unavailable, 0, 1)
        .add(MULTI_M.0, Op::Create, Fault::Unavailable, 0, 1)
        .add(MULTI_M.0, Op::Part(2), Fault::Unavailable, 0, 1)
        .add(MULTI_N.0, Op::Complete, Fault::Unavailable, 0, 1);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&src, &faulty(&dst, &plan), &j, opts(Verify::Auto)).await;
    assert!(plan.unspent().is_empty(), "{:?}", plan.unspent());
    assert_all_copied(&out, 5);
    assert_eq!(out.report.retries, 4);
    assert!(out.report.throttle_events >= 1);
    check(&src, &dst, &out).await;
    super::super::copy::assert_same(&src, &dst).await;
}

#[tokio::test]
async fn write_side_flips_are_detected_with_verify_auto() {
    let (src, dst) = stores();
    seed(&src, &corpus()).await;
    let plan = Plan::new();
    plan.add(SMALL_A.0, Op::Put, Fault::Flip, 10, 1).add(
        MULTI_M.0,
        Op::Part(1),
        Fault::Flip,
        777,
        1,
    );
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("j.sqlite");
    let out = go(&src, &faulty(&dst, &plan), &j, opts(Verify::Auto)).await;
    assert!(plan.unspent().is_empty(), "{:?}", plan.unspent());
    check(&src, &dst, &out).await;
}
