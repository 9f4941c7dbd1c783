//! The resume journal and the merge-join at scale, without a server (bench/journal.sh runs it).
//!
//!   cargo run --release --example journal_scale -- N DIR
//!
//! 1. insert: N objects recorded as the engine records them (a `copying` row when the copy
//!    starts, the `verified` row with its evidence when it ends; batches of 256 rows, one
//!    transaction each), keys `dNNNNN/fNNNNNNNNN` (1,000 a folder);
//! 2. reopen: the journal opened again, as a resumed run does, and the queries a run makes at its
//!    ends (`open_uploads`, from its partial index, and the same question reading every row;
//!    `summary`, which shards and `status` ask);
//! 3. resume: the no-op re-run's join: a synthetic sorted source and destination listing of the
//!    N objects merge-joined by `Differ` with one journal lookup per key, every key skipped as
//!    `verified earlier`; resident memory is read at every tenth of the way;
//! 4. lookups: 100,000 random keys looked up.
//!
//! One JSON object per phase on stdout; bytes on disk per object from the file's size.

use futures::stream::{self, StreamExt};
use moverctl::journal::{Journal, ObjectRecord, State};
use moverctl::store::list::{Entry, Listed};
use moverctl::transfer::diff::{Decision, Differ, Joined};
use std::time::Instant;

fn key(i: u64) -> String {
    format!("d{:05}/f{i:09}", i / 1000)
}

fn record(i: u64, state: State) -> ObjectRecord {
    let verified = state == State::Verified;
    ObjectRecord {
        key: key(i),
        size: 262_144,
        src_etag: Some(format!(
            "\"{:032x}\"",
            i.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        )),
        src_mtime: Some("2026-12-06T05:51:35Z".into()),
        state,
        crc64: verified.then(|| format!("{:016x}", i.wrapping_mul(31))),
        md5: verified.then(|| format!("{:032x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15))),
        dst_etag: verified.then(|| format!("\"{:032x}\"", i.wrapping_mul(0x9e37_79b9_7f4a_7c15))),
        verified_by: verified.then(|| "md5".into()),
        attempts: 1,
        error: None,
        upload_id: None,
        part_size: None,
    }
}

fn entry(i: u64) -> Entry {
    Entry {
        key: key(i),
        size: 262_144,
        last_modified: chrono::DateTime::from_timestamp(1_796_000_000, 0).unwrap(),
        e_tag: Some(format!(
            "\"{:032x}\"",
            i.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        )),
    }
}

/// Resident and peak resident memory (kB) of this process.
fn memory() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        s.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn disk(path: &std::path::Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|s| std::fs::metadata(format!("{}{s}", path.display())).ok())
        .map(|m| m.len())
        .sum()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let dir = std::path::PathBuf::from(args.get(2).cloned().unwrap_or_else(|| ".".into()));
    let path = dir.join("journal-scale.sqlite");
    for s in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{s}", path.display()));
    }
    let (src, dst) = ("s3://bench-src/corpus", "s3://bench-dst/corpus");

    // 1. insert, as the engine does: copying, then verified, 256 rows a transaction.
    let t = Instant::now();
    {
        let mut j = Journal::open(&path, src, dst).unwrap();
        let mut i = 0;
        while i < n {
            let end = (i + 256).min(n);
            let copying: Vec<ObjectRecord> = (i..end).map(|k| record(k, State::Copying)).collect();
            j.put_all(&copying).unwrap();
            let done: Vec<ObjectRecord> = (i..end).map(|k| record(k, State::Verified)).collect();
            j.put_all(&done).unwrap();
            i = end;
        }
    }
    let insert = t.elapsed().as_secs_f64();
    let bytes = disk(&path);
    println!(
        "{{\"phase\":\"insert\",\"objects\":{n},\"seconds\":{insert:.2},\"objects_per_second\":{:.0},\"bytes_on_disk\":{bytes},\"bytes_per_object\":{:.1},\"rss_kb\":{},\"peak_rss_kb\":{}}}",
        n as f64 / insert,
        bytes as f64 / n as f64,
        memory().0,
        memory().1
    );

    // 2. reopen, and what a run asks at its ends.
    let t = Instant::now();
    let j = Journal::open(&path, src, dst).unwrap();
    let open = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let open_uploads = j.open_uploads().unwrap().len();
    let uploads = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let summary = j.summary().unwrap();
    let summary_s = t.elapsed().as_secs_f64();
    assert_eq!(summary.verified, n);
    // The same question without the partial index: every row read (the journal before it).
    let raw = rusqlite::Connection::open(&path).unwrap();
    let t = Instant::now();
    let scanned: i64 = raw
        .query_row(
            "SELECT COUNT(*) FROM objects NOT INDEXED WHERE state = 'copying' AND upload_id IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let scan = t.elapsed().as_secs_f64();
    drop(raw);
    println!(
        "{{\"phase\":\"reopen\",\"open_seconds\":{open:.3},\"open_uploads_seconds\":{uploads:.4},\"open_uploads\":{open_uploads},\"open_uploads_full_scan_seconds\":{scan:.3},\"full_scan_found\":{scanned},\"summary_seconds\":{summary_s:.3}}}"
    );

    // 3. the no-op re-run's join, memory read every tenth.
    let lister = |_| {
        stream::iter(0..n)
            .map(|i| Ok(Listed::Object(entry(i))))
            .boxed()
    };
    let mut differ = Differ::new(lister(()), lister(()));
    let journal = std::sync::Mutex::new(j);
    let t = Instant::now();
    let mut skipped = 0u64;
    let mut samples = Vec::new();
    let mut seen = 0u64;
    while let Some(item) = differ.next(Some(&journal)).await {
        if let Joined::Action(a) = item.unwrap()
            && a.decision == Decision::Skip("verified earlier")
        {
            skipped += 1;
        }
        seen += 1;
        if seen.is_multiple_of((n / 10).max(1)) {
            samples.push(format!("[{seen},{}]", memory().0));
        }
    }
    let join = t.elapsed().as_secs_f64();
    assert_eq!(skipped, n, "every key skipped on the journal's proof");
    println!(
        "{{\"phase\":\"resume_join\",\"objects\":{n},\"seconds\":{join:.2},\"objects_per_second\":{:.0},\"rss_kb_at\":[{}],\"peak_rss_kb\":{}}}",
        n as f64 / join,
        samples.join(","),
        memory().1
    );

    // 4. random lookups.
    let j = journal.into_inner().unwrap();
    let t = Instant::now();
    let mut x: u64 = 88172645463325252;
    let lookups = 100_000u64;
    for _ in 0..lookups {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        assert!(j.get(&key(x % n)).unwrap().is_some());
    }
    let look = t.elapsed().as_secs_f64();
    println!(
        "{{\"phase\":\"random_lookups\",\"lookups\":{lookups},\"seconds\":{look:.2},\"per_second\":{:.0}}}",
        lookups as f64 / look
    );
}
