//! Parallel listing (issue 30): a large source listing is cut into key ranges listed and joined
//! at once (`transfer::joins`, `store::split`). Against Garage: every key is joined exactly once
//! (copied, skipped on a re-run, or found only at the destination), the objects in flight come
//! from several prefixes at once, and every range's listing keeps the broken-answer checks.

use super::copy::options;
use super::faults::proxy::{PFault, Proxy};
use super::{keys_at, proxy_remote_toml, remotes, remotes_toml, s3_upstream, servers, unique};
use futures::StreamExt;
use moverctl::limit::Limits;
use moverctl::store::Store;
use moverctl::transfer::diff::JoinPolicy;
use moverctl::transfer::{Event, Report, Run};
use object_store::{ObjectStoreExt, PutPayload};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Eight prefixes of 25 keys each.
fn keys() -> Vec<String> {
    (0..200).map(|i| format!("k{}/x{i:03}", i / 25)).collect()
}

async fn put_all(store: &Store, keys: &[String]) {
    futures::stream::iter(keys.iter().cloned())
        .for_each_concurrent(16, |k| async move {
            store
                .inner
                .put(
                    &store.path_of(&k).unwrap(),
                    PutPayload::from(k.clone().into_bytes()),
                )
                .await
                .unwrap();
        })
        .await;
}

/// A run with `streams` list streams, cut after 20 keys, 4 copies in flight; the keys of its
/// events in order, and the keys found only at the destination.
async fn run(
    src: &Store,
    dst: &Store,
    streams: usize,
    journal: &std::path::Path,
) -> (Result<Report, String>, Vec<String>, Vec<String>) {
    let mut o = options();
    o.transfers = 4;
    o.list_streams = streams;
    o.list_split_after = 20;
    let j = moverctl::journal::Journal::open(journal, &src.shown(), &dst.shown()).unwrap();
    let mut events = Vec::new();
    let mut dest_only = Vec::new();
    let policy = JoinPolicy {
        dest_only: true,
        ..Default::default()
    };
    let r = Run {
        src: src.clone(),
        dst: dst.clone(),
        opts: o,
        limits: Limits::unlimited().with_concurrency(4),
        journal: Some(j),
        stop: Arc::new(AtomicBool::new(false)),
    }
    .run_with(
        policy,
        |ev| match ev {
            Event::Copied { key, .. } | Event::Skipped { key, .. } => events.push(key.clone()),
            _ => {}
        },
        |e| {
            dest_only.push(e.key);
            Ok(())
        },
    )
    .await
    .map_err(|e| e.to_string());
    (r, events, dest_only)
}

fn prefix(k: &str) -> &str {
    k.split('/').next().unwrap()
}

#[tokio::test]
async fn a_split_listing_joins_every_key_once_and_spreads_the_work() {
    let Some(s) = servers() else { return };
    let p = unique("list-split");
    let r = remotes(&s);
    let src = Store::open(&format!("garage:{}/{p}", s.bucket_a), &r).unwrap();
    let dst = Store::open(&format!("garage:{}/{p}", s.bucket_b), &r).unwrap();
    let all = keys();
    put_all(&src, &all).await;
    // Keys only at the destination, in three different ranges.
    let extra: Vec<String> = ["k1/zz", "k5/zz", "k7/zz"].map(String::from).to_vec();
    put_all(&dst, &extra).await;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("j.sqlite");

    let (report, events, mut dest_only) = run(&src, &dst, 4, &journal).await;
    dest_only.sort();
    let report = report.unwrap();
    assert_eq!(report.copied, 200, "{:?}", report.failed);
    let unique: BTreeSet<&String> = events.iter().collect();
    assert_eq!(unique.len(), 200, "every key once: {events:?}");
    assert_eq!(
        dest_only, extra,
        "each destination-only key once, in any order"
    );
    let mut want = all.clone();
    want.extend(extra.iter().cloned());
    want.sort();
    assert_eq!(keys_at(&dst).await, want);
    // After the cut (20 keys in), the copies come from several ranges in turn: in key order the
    // prefix would change 7 times.
    let switches = events
        .windows(2)
        .filter(|w| prefix(&w[0]) != prefix(&w[1]))
        .count();
    eprintln!("{switches} changes of prefix");
    assert!(switches > 20, "{switches} changes of prefix: {events:?}");
    // More than one listing ran: the first page of each range, and the sampling.
    assert!(report.requests_list_src > 2, "{}", report.requests_list_src);

    // A re-run joins every key once more, each skipped on the journal's proof.
    let (again, events, mut dest_only) = run(&src, &dst, 4, &journal).await;
    dest_only.sort();
    let again = again.unwrap();
    assert_eq!((again.copied, again.skipped), (0, 200));
    assert_eq!(events.iter().collect::<BTreeSet<_>>().len(), 200);
    assert_eq!(dest_only, extra);

    // One stream: key order, as before.
    let (_, events, _) = run(&src, &dst, 1, &journal).await;
    let mut sorted = events.clone();
    sorted.sort();
    assert_eq!(events, sorted);
}

#[tokio::test]
async fn every_range_of_a_split_listing_keeps_the_listing_checks() {
    let Some(s) = servers() else { return };
    let proxy = Proxy::start(s3_upstream(&s)).await;
    let toml = format!(
        "{}\n{}",
        remotes_toml(&s),
        proxy_remote_toml(&s, &proxy.endpoint())
    );
    let via = moverctl::store::config::Remotes::parse("remotes.toml", &toml).unwrap();
    let p = unique("list-split-broken");
    let raw = Store::open(&format!("garage:{}/{p}", s.bucket_a), &remotes(&s)).unwrap();
    put_all(&raw, &keys()).await;
    let src = Store::open(&format!("viaproxy:{}/{p}", s.bucket_a), &via).unwrap();
    let dst = Store::open(&format!("garage:{}/{p}", s.bucket_b), &remotes(&s)).unwrap();
    // The ranges start after k2, k4, k6; the sampling asks once after `k4` (one key), the range's
    // listing next: its first page comes back out of order.
    proxy.add_after(
        "GET",
        "",
        &format!("start-after={p}%2Fk4"),
        PFault::ListUnsorted,
        1,
        1,
    );
    let dir = tempfile::tempdir().unwrap();
    let (r, _, _) = run(&src, &dst, 4, &dir.path().join("j.sqlite")).await;
    assert_eq!(proxy.hits().len(), 1, "the fault was served");
    let err = r.expect_err("an unsorted range ends the run");
    assert!(err.contains("not in key order"), "{err}");
}
