//! Fault injection: a store wrapper ([`wrapper::FaultStore`]) and an HTTP proxy on 127.0.0.1
//! ([`proxy::Proxy`]) inject 503s, connection resets, truncated bodies and flipped bytes on the
//! read and the write side. Whatever is injected, the run completes, every corruption is
//! detected, nothing corrupt is reported copied or journaled `verified`, and the destination
//! never holds other bytes than the source under a key reported copied.
//!
//! - `memory`: FaultStore over in-memory stores (always run).
//! - `garage`: FaultStore over Garage S3 (needs the test servers).
//! - `http`: the proxy in front of Garage, reached through a moverctl remote (needs the servers).
//!
//! What detects what (see src/transfer/copy.rs):
//! - short reads: the byte count, on every store;
//! - read-side flips: only the source's MD5 ETag (S3/GCS objects uploaded in one PUT), so a
//!   flip is undetectable from sources without one (memory, local, Azure, S3 multipart objects);
//! - write-side flips: the destination's MD5 ETag (single PUT) or multipart ETag on S3-style
//!   stores; elsewhere only `Verify::Readback` (and local destinations) read the bytes back.

mod garage;
mod http;
mod memory;
pub mod proxy;
pub mod wrapper;

use super::copy::options;
use bytes::Bytes;
use moverctl::catalog::parts::MIB;
use moverctl::journal::{Journal, ObjectRecord, State};
use moverctl::limit::Limits;
use moverctl::store::Store;
use moverctl::transfer::{CopyOptions, Event, Report, Run, Verify};
use object_store::{ObjectStoreExt, PutPayload, WriteMultipart};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

pub const PART: u64 = 5 * MIB;

/// Objects used by most fault tests: three single PUTs and two multipart copies (4 and 3 parts).
pub const SMALL_A: (&str, u64) = ("a-small", 1000);
pub const SMALL_B: (&str, u64) = ("b-small", 64 << 10);
pub const SMALL_C: (&str, u64) = ("c-small", 300 << 10);
pub const MULTI_M: (&str, u64) = ("m-multi", 3 * PART + 7);
pub const MULTI_N: (&str, u64) = ("n-multi", 2 * PART + 100);

pub fn corpus() -> Vec<(&'static str, u64)> {
    vec![SMALL_A, SMALL_B, SMALL_C, MULTI_M, MULTI_N]
}

/// Deterministic, incompressible-looking bytes per key.
pub fn data(key: &str, size: u64) -> Bytes {
    let mut x = key.bytes().fold(0x9e37_79b9_7f4a_7c15u64, |a, b| {
        (a ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let mut v = Vec::with_capacity(size as usize);
    while (v.len() as u64) < size {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(size as usize);
    Bytes::from(v)
}

/// Seed with single PUTs (so an S3 source has MD5 ETags, even above the multipart threshold).
pub async fn seed(store: &Store, objs: &[(&str, u64)]) {
    for (k, size) in objs {
        store
            .inner
            .put(&store.path_of(k).unwrap(), PutPayload::from(data(k, *size)))
            .await
            .unwrap();
    }
}

/// Seed one object with a multipart upload of 5 MiB parts (an S3 ETag `…-N`, not an MD5).
pub async fn seed_multipart(store: &Store, key: &str, size: u64) {
    let up = store
        .inner
        .put_multipart(&store.path_of(key).unwrap())
        .await
        .unwrap();
    let mut w = WriteMultipart::new_with_chunk_size(up, PART as usize);
    w.put(data(key, size));
    w.finish().await.unwrap();
}

pub fn opts(verify: Verify) -> CopyOptions {
    let mut o = options();
    o.verify = verify;
    o
}

/// A run's report plus what its events said per key.
pub struct Outcome {
    pub report: Report,
    /// key → verified_by (copied and verified: recorded as done)
    pub copied: BTreeMap<String, String>,
    /// key → verified_by (`unverified+…`: written, not recorded as done)
    pub unverified: BTreeMap<String, String>,
    /// key → error
    pub failed: BTreeMap<String, String>,
    pub skipped: BTreeMap<String, String>,
    /// The run's journal and the location names it was opened with.
    pub journal: std::path::PathBuf,
    pub src_shown: String,
    pub dst_shown: String,
}

pub async fn go(src: &Store, dst: &Store, journal: &std::path::Path, o: CopyOptions) -> Outcome {
    let j = Journal::open(journal, &src.shown(), &dst.shown()).unwrap();
    let mut copied = BTreeMap::new();
    let mut unverified = BTreeMap::new();
    let mut failed = BTreeMap::new();
    let mut skipped = BTreeMap::new();
    let report = Run {
        src: src.clone(),
        dst: dst.clone(),
        opts: o,
        limits: Limits::unlimited().with_concurrency(8),
        journal: Some(j),
        stop: Arc::new(AtomicBool::new(false)),
    }
    .run(|e| match e {
        Event::Copied {
            key, verified_by, ..
        } => {
            let into = if verified_by.read == moverctl::transfer::ReadCheck::Unverified {
                &mut unverified
            } else {
                &mut copied
            };
            into.insert(key.clone(), verified_by.to_string());
        }
        Event::Failed { key, error } => {
            failed.insert(key.clone(), error.clone());
        }
        Event::Skipped { key, reason, .. } => {
            skipped.insert(key.clone(), reason.clone());
        }
        _ => {}
    })
    .await
    .expect("the run completes");
    Outcome {
        report,
        copied,
        unverified,
        failed,
        skipped,
        journal: journal.to_path_buf(),
        src_shown: src.shown(),
        dst_shown: dst.shown(),
    }
}

/// The journal row of `key` after the run.
pub fn record(out: &Outcome, key: &str) -> Option<ObjectRecord> {
    Journal::open(&out.journal, &out.src_shown, &out.dst_shown)
        .unwrap()
        .get(key)
        .unwrap()
}

pub async fn bytes_at(store: &Store, key: &str) -> Option<Bytes> {
    match store.inner.get(&store.path_of(key).unwrap()).await {
        Ok(r) => Some(r.bytes().await.unwrap()),
        Err(object_store::Error::NotFound { .. }) => None,
        Err(e) => panic!("reading {key}: {e}"),
    }
}

/// The invariants every fault test checks, reading the real stores (no faults):
/// - the report's counts agree with its events;
/// - a key reported copied holds exactly the source's bytes and is journaled `verified`;
/// - a key reported failed is not journaled `verified`;
/// - every key the journal calls `verified` holds exactly the source's bytes.
pub async fn check(src: &Store, dst: &Store, out: &Outcome) {
    let r = &out.report;
    assert_eq!(r.copied, out.copied.len() as u64, "copied count vs events");
    let failed: Vec<&String> = r.failed.iter().map(|f| &f.key).collect();
    assert_eq!(
        failed,
        out.failed.keys().collect::<Vec<_>>(),
        "failed list vs events"
    );
    // Every violation, not just the first.
    let mut bad = Vec::new();
    for (key, by) in &out.copied {
        if out.failed.contains_key(key) {
            bad.push(format!("{key} reported both copied and failed"));
        }
        let want = bytes_at(src, key).await.expect("source object");
        let got = bytes_at(dst, key).await;
        if got.as_ref() != Some(&want) {
            bad.push(format!(
                "{key} was reported copied (verified by {by}) but the destination holds {} (source {} bytes)",
                match &got {
                    None => "nothing".to_string(),
                    Some(g) if g.len() == want.len() => format!(
                        "different bytes ({} differ)",
                        g.iter().zip(want.iter()).filter(|(a, b)| a != b).count()
                    ),
                    Some(g) => format!("{} bytes", g.len()),
                },
                want.len()
            ));
        }
        match record(out, key) {
            Some(rec) if rec.state == State::Verified => {}
            rec => bad.push(format!("{key} reported copied but journaled {rec:?}")),
        }
    }
    for key in out.failed.keys() {
        if let Some(rec) = record(out, key)
            && rec.state == State::Verified
        {
            bad.push(format!("failed {key} journaled verified"));
        }
    }
    for (key, size) in corpus() {
        if let Some(rec) = record(out, key)
            && rec.state == State::Verified
            && bytes_at(dst, key).await != Some(data(key, size))
        {
            bad.push(format!(
                "{key} journaled verified ({:?}) but the destination holds other bytes",
                rec.verified_by
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// A failure that is an integrity error (never a copy).
pub fn assert_integrity_failure(out: &Outcome, key: &str) {
    assert!(!out.copied.contains_key(key), "{key} reported copied");
    let e = out
        .failed
        .get(key)
        .unwrap_or_else(|| panic!("{key} not reported failed: {:?}", out.failed));
    assert!(e.starts_with("integrity:"), "{key}: {e}");
}

pub fn assert_all_copied(out: &Outcome, n: usize) {
    assert!(
        out.report.failed.is_empty(),
        "failed: {:?}",
        out.report.failed
    );
    assert_eq!(out.copied.len(), n, "copied: {:?}", out.copied);
}
