//! The job layer called as a library, as a program embedding moverctl would (no binary
//! launched): a held lock refuses a second run, a shard resumes from its progress records on a
//! machine with no journal, and a run is priced against its plan to the micro-dollar.

#![allow(clippy::result_large_err)] // the library's JobError, as a caller gets it

use moverctl::catalog::Catalog;
use moverctl::exit::Exit;
use moverctl::job::copy::{CopyJob, CopyOutcome};
use moverctl::job::plan::{PlanSpec, Save, ShardSplit};
use moverctl::job::sync::SyncJob;
use moverctl::job::{self, JobError, Observer};
use moverctl::plan::file::PlanFile;
use moverctl::store::config::Remotes;
use moverctl::transfer::CopyOptions;
use std::path::Path;
use std::sync::Mutex;

/// Notes a job sent up, kept for the test to read.
#[derive(Default)]
struct Kept(Mutex<Vec<String>>);

impl Observer for Kept {
    fn note(&self, message: &str) {
        self.0.lock().unwrap().push(message.to_string());
    }
}

fn files(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..n {
        std::fs::write(dir.join(format!("f{i:03}.bin")), vec![i as u8; 1000 + i]).unwrap();
    }
}

fn opts(catalog: &Catalog) -> CopyOptions {
    CopyOptions::new(catalog.get("onprem").unwrap().file.limits.clone())
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_held_lock_refuses_a_second_run_with_exit_6_and_copies_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
    files(&src, 3);
    let catalog = Catalog::load(None).unwrap();
    let remotes = Remotes::default();
    let lock = dir.path().join("pair.lock");
    let (held, _) = moverctl::lock::RunLock::acquire(&lock, "sync elsewhere").unwrap();
    let run = || {
        let (a, b) = job::trust::open_pair(&catalog, s(&src), s(&dst), &remotes).unwrap();
        let mut job = SyncJob::new(opts(&catalog), dir.path().join("journal.db"));
        job.lock = Some(lock.clone());
        job::sync::run(&catalog, &remotes, a, b, job, &job::Quiet)
    };
    let refused = run().err().expect("the lock is held");
    assert!(matches!(refused, JobError::Lock(_)), "{refused}");
    assert_eq!(refused.exit(), Exit::Locked);
    assert!(refused.to_string().contains("holds"), "{refused}");
    assert!(!dst.join("f000.bin").exists(), "nothing was copied");
    // Released, the same run goes ahead.
    drop(held);
    let out = run().unwrap();
    assert_eq!((out.report.copied, out.exit), (3, Exit::Success));
}

/// A plan of `src` → `dst` (both local folders) split into `shards`, saved in `plans`.
fn sharded_plan(catalog: &Catalog, src: &Path, dst: &Path, plans: &Path, shards: u32) -> PlanFile {
    let split = job::shard::split::split(shards, Some(s(src)), None, false, None).unwrap();
    let mut spec = PlanSpec::new("onprem", &["onprem"], split.corpus);
    spec.src = Some(s(src).to_string());
    spec.dst = Some(s(dst).to_string());
    spec.save = Some(Save {
        name: "sharded".into(),
        pick: None,
        plans_dir: plans.to_path_buf(),
        shards: Some(ShardSplit {
            ranges: split.ranges,
            progress: Some(s(&plans.join("progress")).to_string()),
        }),
    });
    let out = job::plan::plan(catalog, &spec, &job::Quiet).unwrap();
    let saved = out.saved.expect("asked to save").unwrap();
    PlanFile::load(&saved.path).unwrap()
}

fn run_shard(
    catalog: &Catalog,
    plan: &PlanFile,
    k: u32,
    journal: &Path,
    obs: &Kept,
) -> CopyOutcome {
    let remotes = Remotes::default();
    let (src_loc, dst_loc) = (
        plan.source.location.clone().unwrap(),
        plan.destination.location.clone().unwrap(),
    );
    let (mut src, mut dst) = job::trust::open_pair(catalog, &src_loc, &dst_loc, &remotes).unwrap();
    let spec = format!("{k}/{}", plan.shards.as_ref().unwrap().count);
    let shard = job::shard::for_exec(
        plan,
        Some(&spec),
        None,
        &dst_loc,
        &mut src,
        &mut dst,
        &remotes,
    )
    .unwrap()
    .expect("a shard");
    let job = CopyJob {
        opts: opts(catalog),
        limits: moverctl::limit::Limits::new(None, None),
        journal_path: journal.to_path_buf(),
        plan: Some(plan),
        shard: Some(shard),
        inventory: None,
    };
    job::copy::run(catalog, src, dst, job, obs).unwrap()
}

#[test]
fn a_shard_resumes_from_its_progress_records_on_a_machine_without_its_journal() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst, plans) = (
        dir.path().join("src"),
        dir.path().join("dst"),
        dir.path().join("plans"),
    );
    files(&src, 40);
    std::fs::create_dir_all(&dst).unwrap();
    let catalog = Catalog::load(None).unwrap();
    let plan = sharded_plan(&catalog, &src, &dst, &plans, 2);
    let planned = &plan.shards.as_ref().unwrap().ranges[0];
    let kept = Kept::default();
    let first = run_shard(&catalog, &plan, 0, &dir.path().join("a.db"), &kept);
    assert_eq!(first.exit, Exit::Success);
    assert_eq!(first.report.copied, planned.objects);
    let view = first.shard.as_ref().expect("a shard's view");
    assert_eq!((view.done.objects, view.attempts), (planned.objects, 1));
    // Another machine, no journal: the shard rebuilds it from its records and copies nothing.
    let kept = Kept::default();
    let again = run_shard(&catalog, &plan, 0, &dir.path().join("b.db"), &kept);
    assert_eq!((again.report.copied, again.exit), (0, Exit::Success));
    assert_eq!(again.report.skipped, planned.objects);
    let notes = kept.0.lock().unwrap();
    let taken = format!("shard 0/2: {} verified objects taken from", planned.objects);
    assert!(notes.iter().any(|n| n.starts_with(&taken)), "{notes:?}");
    let view = again.shard.as_ref().unwrap();
    assert_eq!((view.done.objects, view.attempts), (planned.objects, 2));
    // The other shard's range is still to do.
    let rest = run_shard(
        &catalog,
        &plan,
        1,
        &dir.path().join("c.db"),
        &Kept::default(),
    );
    assert_eq!(first.report.copied + rest.report.copied, 40);
    let so_far = rest.shard.as_ref().unwrap().so_far.as_ref().unwrap();
    assert_eq!((so_far.done, so_far.figures.objects), (2, 40));
}

#[test]
fn a_run_is_priced_against_its_plan_to_the_micro_dollar() {
    let Some(servers) = super::servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("remotes.toml");
    std::fs::write(&conf, super::remotes_toml(&servers)).unwrap();
    let remotes = super::remotes(&servers);
    let prefix = super::unique("job-priced");
    let src_loc = format!("garage:{}/{prefix}", servers.bucket_a);
    let dst_loc = format!("garage2:{}/{prefix}", servers.bucket_c);
    let catalog = Catalog::load(None).unwrap();
    let (a, b) = job::trust::open_pair(&catalog, &src_loc, &dst_loc, &remotes).unwrap();
    let rt = job::runtime().unwrap();
    rt.block_on(async {
        use object_store::{ObjectStoreExt, PutPayload};
        for i in 0..5u8 {
            let key = a.path_of(&format!("shard-{i}.bin")).unwrap();
            a.inner
                .put(&key, PutPayload::from(vec![i; 10_000_000]))
                .await
                .unwrap();
        }
    });
    // The move planned as one between two AWS regions (no free allowance, $0.02/GB): the run on
    // the test servers is priced on the plan's places.
    let corpus = moverctl::plan::corpus::Corpus::from_flags(Some("50000000B"), Some("5"), None);
    let mut spec = PlanSpec::new("aws:us-east-1", &["aws:us-west-2"], corpus.unwrap());
    spec.src = Some(src_loc.clone());
    spec.dst = Some(dst_loc.clone());
    spec.config = Some(conf);
    spec.save = Some(Save {
        name: "priced".into(),
        pick: None,
        plans_dir: dir.path().join("plans"),
        shards: None,
    });
    let saved = job::plan::plan(&catalog, &spec, &job::Quiet)
        .unwrap()
        .saved
        .unwrap()
        .unwrap();
    let plan = PlanFile::load(&saved.path).unwrap();
    let job = CopyJob {
        opts: opts(&catalog),
        limits: moverctl::limit::Limits::new(None, None),
        journal_path: dir.path().join("journal.db"),
        plan: Some(&plan),
        shard: None,
        inventory: None,
    };
    let out = job::copy::run(&catalog, a, b, job, &job::Quiet).unwrap();
    let r = &out.report;
    assert_eq!((r.copied, r.read_bytes), (5, 50_000_000));
    assert_eq!((r.requests_get, r.requests_put), (5, 5));
    let vs = out.vs_plan.expect("priced against the plan");
    // By hand, with providers/aws.toml's published prices: 50,000,000 bytes of 2^30-byte GB at
    // $0.02 between regions; LIST and PUT at $0.005, GET and HEAD at $0.0004 per 1,000.
    let d = |v: &str| v.parse::<rust_decimal::Decimal>().unwrap();
    let per_k = |n: u64, price: &str| rust_decimal::Decimal::from(n) * d(price) / d("1000");
    let [egress, source, destination] = vs.actual();
    assert_eq!(
        egress.0,
        d("0.000931322574615478515625"),
        "50 MB at $0.02/GB"
    );
    assert_eq!(egress.0.round_dp(6), d("0.000931"));
    let source_by_hand = per_k(r.requests_list_src, "0.005") + per_k(r.requests_get, "0.0004");
    assert_eq!(source.0, source_by_hand);
    let destination_by_hand = per_k(r.requests_list_dst, "0.005")
        + per_k(r.requests_put, "0.005")
        + per_k(r.requests_head, "0.0004");
    assert_eq!(destination.0, destination_by_hand);
    assert!(destination.0 >= d("0.000025"), "at least the 5 PUTs");
    let planned = vs.json();
    assert_eq!(planned["predicted_cost"]["egress"].to_string(), "0.000931");
}
