//! Group commit (`--fsync batch`, the default into a local folder): no journal row claims a file
//! that is not whole on disk, after a kill -9 at any moment and after a simulated loss of every
//! write no sync covered.
//!
//! How the loss is simulated, and what that proves: the engine's durability log
//! (`MOVERCTL_DURABILITY_LOG`, see `transfer::local_dest::commit`) records "file renamed",
//! "sync started / returned" and "journal row committed" in the order they happen, and
//! `MOVERCTL_DURABILITY_KILL_AT` kills the process with SIGKILL right after any chosen event. After
//! the kill, every file in the destination that no *returned* sync had started after its rename
//! (and no per-file sync covered) is treated as lost by a power cut: removed, emptied, zeroed or
//! cut in half. Then every `verified` row of the real journal must still name a whole file with
//! the source's bytes, and the next run must repair the rest. This proves the engine's order —
//! no row is committed before a sync that covers its file has returned — at every kill point
//! tried, and that the next run recopies whatever a crash took. It does not prove that
//! `syncfs`/`fsync` themselves make data durable on a given disk or file system (the kernel and
//! the device are trusted; a disk that acknowledges a flush it did not do is not caught), and it
//! models a power cut pessimistically (everything unsynced lost) rather than a real device's
//! partial write-back. A dm-flakey device would test the kernel too, but device-mapper is not
//! available on this machine; `a_power_cut_on_a_loop_device_...` below snapshots a loop-mounted
//! ext4 image at the kill instead, where the test runs as root.
//! The negative control (`--fsync end`, which journals before it syncs) must be caught by the same
//! simulation, so the simulation is shown to see a lying row when there is one.

use super::{moverctl, remotes, remotes_toml, servers, unique};
use moverctl::journal::{Journal, State};
use moverctl::store::Store;
use object_store::{ObjectStoreExt, PutPayload};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Small files in a few folders, each with its own bytes: key → bytes.
fn corpus(n: usize) -> BTreeMap<String, Vec<u8>> {
    (0..n)
        .map(|i| {
            let key = format!("d{}/f{i:04}.bin", i % 7);
            let size = 2_000 + (i * 7919) % 38_000;
            let bytes = (0..size)
                .map(|j| ((j * 131 + i * 17) % 251) as u8)
                .collect();
            (key, bytes)
        })
        .collect()
}

fn write_corpus(dir: &Path, files: &BTreeMap<String, Vec<u8>>) {
    for (k, v) in files {
        let p = dir.join(k);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, v).unwrap();
    }
}

/// Keys whose journal row says `verified` but whose file is missing or not the source's bytes.
fn lying_rows(
    journal: &Path,
    src: &Store,
    dst: &Store,
    dst_dir: &Path,
    files: &BTreeMap<String, Vec<u8>>,
) -> (usize, Vec<String>) {
    if !journal.exists() {
        return (0, Vec::new());
    }
    let j = Journal::open(journal, &src.shown(), &dst.shown()).unwrap();
    let mut verified = 0;
    let mut lies = Vec::new();
    for (k, want) in files {
        if j.get(k)
            .unwrap()
            .is_some_and(|r| r.state == State::Verified)
        {
            verified += 1;
            if std::fs::read(dst_dir.join(k)).ok().as_ref() != Some(want) {
                lies.push(k.clone());
            }
        }
    }
    (verified, lies)
}

fn assert_whole(dst_dir: &Path, files: &BTreeMap<String, Vec<u8>>) {
    for (k, want) in files {
        let got = std::fs::read(dst_dir.join(k)).unwrap_or_default();
        assert!(
            &got == want,
            "{k} is not the source's bytes after the final run"
        );
    }
}

/// A small xorshift, seeded per process (kills land at different moments in each test run).
struct Rng(u64);
impl Rng {
    fn new() -> Rng {
        Rng(0x9e37_79b9_7f4a_7c15 ^ (std::process::id() as u64) << 7)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// Rounds of `copy` killed with SIGKILL — by the engine right after a random event (even rounds)
/// or from outside after a random delay (odd rounds) — each followed by the check that no
/// verified row lies; then a final run, and every file whole.
fn kill_nine_rounds(
    name: &str,
    copy: &dyn Fn() -> Command,
    src: &Store,
    dst: &Store,
    dst_dir: &Path,
    journal: &Path,
    files: &BTreeMap<String, Vec<u8>>,
) {
    let mut rng = Rng::new();
    let mut seen_verified = 0;
    for round in 0..8 {
        let left = files.len() - lying_rows(journal, src, dst, dst_dir, files).0;
        let mut c = copy();
        c.stdout(Stdio::null()).stderr(Stdio::null());
        if round % 2 == 0 {
            let at = 1 + rng.below(2 * left as u64);
            c.env("MOVERCTL_DURABILITY_LOG", dst_dir.with_extension("log"))
                .env("MOVERCTL_DURABILITY_KILL_AT", at.to_string());
            c.status().unwrap();
        } else {
            let mut child = c.spawn().unwrap();
            std::thread::sleep(Duration::from_millis(50 + rng.below(700)));
            child.kill().unwrap();
            child.wait().unwrap();
        }
        let (verified, lies) = lying_rows(journal, src, dst, dst_dir, files);
        assert!(
            lies.is_empty(),
            "{name}, round {round}: verified rows without their whole file: {lies:?}"
        );
        seen_verified = verified;
    }
    assert!(
        seen_verified > 0,
        "{name}: nothing was journaled before the kills; the test proved nothing"
    );
    let out = copy().output().unwrap();
    assert!(out.status.success(), "{}", super::text(&out));
    assert_whole(dst_dir, files);
    eprintln!(
        "{name}: 8 kills, {seen_verified} of {} verified before the final run, no lying row",
        files.len()
    );
}

#[test]
fn kill_nine_at_random_moments_local_to_local_leaves_no_lying_row() {
    let work = tempfile::tempdir().unwrap();
    let files = corpus(600);
    let src_dir = work.path().join("src");
    write_corpus(&src_dir, &files);
    let dst_dir = work.path().join("dst");
    let journal = work.path().join("journal.sqlite");
    let copy = || {
        let mut c = moverctl();
        c.arg("copy").arg(&src_dir).arg(&dst_dir);
        c.arg("--journal").arg(&journal).args(["--transfers", "8"]);
        c
    };
    let src = Store::open(src_dir.to_str().unwrap(), &Default::default()).unwrap();
    std::fs::create_dir_all(&dst_dir).unwrap();
    let dst = Store::open(dst_dir.to_str().unwrap(), &Default::default()).unwrap();
    kill_nine_rounds(
        "local->local",
        &copy,
        &src,
        &dst,
        &dst_dir,
        &journal,
        &files,
    );
}

#[test]
fn kill_nine_at_random_moments_s3_to_local_leaves_no_lying_row() {
    let Some(s) = servers() else { return };
    let files = corpus(300);
    let src_loc = format!("garage:{}/{}", s.bucket_a, unique("durable"));
    let src = Store::open(&src_loc, &remotes(&s)).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let puts = files.iter().map(|(k, v)| {
            let path = src.path_of(k).unwrap();
            let store = src.inner.clone();
            let body = PutPayload::from(v.clone());
            async move { store.put(&path, body).await }
        });
        for r in futures::future::join_all(puts).await {
            r.unwrap();
        }
    });
    let work = tempfile::tempdir().unwrap();
    let conf = work.path().join("remotes.toml");
    std::fs::write(&conf, remotes_toml(&s)).unwrap();
    let dst_dir = work.path().join("dst");
    let journal = work.path().join("journal.sqlite");
    let copy = || {
        let mut c = moverctl();
        c.arg("--config").arg(&conf).arg("copy").arg(&src_loc);
        c.arg(&dst_dir).arg("--journal").arg(&journal);
        c.args(["--transfers", "16"]);
        c
    };
    std::fs::create_dir_all(&dst_dir).unwrap();
    let dst = Store::open(dst_dir.to_str().unwrap(), &Default::default()).unwrap();
    kill_nine_rounds("S3->local", &copy, &src, &dst, &dst_dir, &journal, &files);
}

/// What a power cut at the end of `log` could have left: the files proven durable (their rename
/// came before the start of a sync that returned, or a per-file sync covered them), and for each
/// `journaled KEY Verified` line whether its file was durable when the row was committed.
struct Durability {
    durable: BTreeSet<PathBuf>,
    rows_before_their_sync: Vec<String>,
}

fn read_log(log: &Path, dst_dir: &Path) -> Durability {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut renamed: Vec<(usize, PathBuf)> = Vec::new();
    let mut started: BTreeMap<String, usize> = BTreeMap::new();
    let mut covered_upto = 0;
    let mut durable = BTreeSet::new();
    let mut rows_before_their_sync = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let (kind, what) = line.split_once(' ').unwrap_or((line, ""));
        match kind {
            "renamed" => renamed.push((i, PathBuf::from(what))),
            "durable" => {
                durable.insert(PathBuf::from(what));
            }
            "sync-start" => {
                started.insert(what.to_string(), i);
            }
            "sync-end" => {
                covered_upto = covered_upto.max(started[what]);
                durable.extend(
                    renamed
                        .iter()
                        .filter(|(at, _)| *at < covered_upto)
                        .map(|(_, p)| p.clone()),
                );
            }
            "journaled" => {
                let (key, state) = what.rsplit_once(' ').unwrap();
                if state == "Verified" && !durable.contains(&dst_dir.join(key)) {
                    rows_before_their_sync.push(key.to_string());
                }
            }
            _ => {}
        }
    }
    Durability {
        durable,
        rows_before_their_sync,
    }
}

/// Every file below `dir` not in `durable` loses its unsynced writes: removed, emptied, zeroed
/// or cut in half, in turn. Returns how many were damaged.
fn lose_unsynced(dir: &Path, durable: &BTreeSet<PathBuf>) -> usize {
    let mut damaged = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if durable.contains(&p) {
                continue;
            }
            let len = std::fs::metadata(&p).unwrap().len();
            match damaged % 4 {
                0 => std::fs::remove_file(&p).unwrap(),
                1 => std::fs::write(&p, b"").unwrap(),
                2 => std::fs::write(&p, vec![0u8; len as usize]).unwrap(),
                _ => std::fs::OpenOptions::new()
                    .write(true)
                    .open(&p)
                    .and_then(|f| f.set_len(len / 2))
                    .unwrap(),
            }
            damaged += 1;
        }
    }
    damaged
}

/// One local->local run with `--fsync MODE`, killed right after event `kill_at`, then the
/// simulated loss: the lying rows it leaves, how many files it damaged and how many rows the
/// journal had verified.
fn killed_then_lost(mode: &str, kill_at: &str, files: &BTreeMap<String, Vec<u8>>) -> Outcome {
    let work = tempfile::tempdir().unwrap();
    let src_dir = work.path().join("src");
    write_corpus(&src_dir, files);
    let dst_dir = work.path().join("dst");
    std::fs::create_dir_all(&dst_dir).unwrap();
    let journal = work.path().join("journal.sqlite");
    let log = work.path().join("durability.log");
    let copy = || {
        let mut c = moverctl();
        c.arg("copy").arg(&src_dir).arg(&dst_dir);
        c.arg("--journal").arg(&journal);
        c.args(["--transfers", "8", "--fsync", mode]);
        c
    };
    copy()
        .env("MOVERCTL_DURABILITY_LOG", &log)
        .env("MOVERCTL_DURABILITY_KILL_AT", kill_at)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let d = read_log(&log, &dst_dir);
    let damaged = lose_unsynced(&dst_dir, &d.durable);
    let src = Store::open(src_dir.to_str().unwrap(), &Default::default()).unwrap();
    let dst = Store::open(dst_dir.to_str().unwrap(), &Default::default()).unwrap();
    let (verified, lies) = lying_rows(&journal, &src, &dst, &dst_dir, files);
    // Whatever the power cut took, the next run puts back (a file without a row is recopied).
    let out = copy().output().unwrap();
    assert!(out.status.success(), "{}", super::text(&out));
    assert_whole(&dst_dir, files);
    Outcome {
        lies,
        logged_out_of_order: d.rows_before_their_sync,
        damaged,
        verified,
    }
}

struct Outcome {
    lies: Vec<String>,
    logged_out_of_order: Vec<String>,
    damaged: usize,
    verified: usize,
}

#[test]
fn a_simulated_loss_of_unsynced_writes_leaves_no_lying_row() {
    let files = corpus(700);
    let mut rng = Rng::new();
    let (mut damaged, mut verified) = (0, 0);
    // Kill points: the first row, the first sync's start and end, and random events.
    let mut points = vec![
        "journaled:1".to_string(),
        "sync-start:1".to_string(),
        "sync-end:1".to_string(),
        "sync-start:2".to_string(),
    ];
    points.extend((0..4).map(|_| (1 + rng.below(2 * files.len() as u64)).to_string()));
    for at in &points {
        let o = killed_then_lost("batch", at, &files);
        assert!(
            o.lies.is_empty() && o.logged_out_of_order.is_empty(),
            "--fsync batch killed at {at}: rows claiming files a power cut took: {:?} (logged before their sync: {:?})",
            o.lies,
            o.logged_out_of_order
        );
        damaged += o.damaged;
        verified += o.verified;
    }
    assert!(
        damaged > 0 && verified > 0,
        "the kills left nothing unsynced or nothing journaled: the test proved nothing"
    );
    // Per-file syncs keep the same promise.
    let o = killed_then_lost("object", &(files.len() as u64).to_string(), &files);
    assert!(o.lies.is_empty(), "--fsync object: {:?}", o.lies);
    // The negative control: `end` journals rows before anything is synced, and the simulation
    // must see that as lying rows (else it could not see a broken group commit either).
    let o = killed_then_lost("end", "journaled:1", &files);
    assert!(
        !o.lies.is_empty() && !o.logged_out_of_order.is_empty(),
        "--fsync end killed after its first row: the simulated loss found no lying row ({} damaged, {} verified)",
        o.damaged,
        o.verified
    );
    eprintln!(
        "simulated loss: {} kill points, {damaged} unsynced files damaged, {verified} verified rows all whole; --fsync end: {} lying rows",
        points.len(),
        o.lies.len()
    );
}

/// A loop-mounted ext4 image, unmounted (and its loop device freed) when dropped.
struct LoopMount(PathBuf);

impl LoopMount {
    /// Mounts `img` at `at`; None where this process may not (not root, no loop devices).
    fn mount(img: &Path, at: &Path) -> Option<LoopMount> {
        std::fs::create_dir_all(at).ok()?;
        let ok = Command::new("mount")
            .args(["-o", "loop"])
            .arg(img)
            .arg(at)
            .stderr(Stdio::null())
            .status()
            .ok()?
            .success();
        ok.then(|| LoopMount(at.to_path_buf()))
    }
}

impl Drop for LoopMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A power cut, as near as this machine allows without device-mapper: the copy writes into an
/// ext4 file system on a loop device, is killed with SIGKILL right after a chosen event, and the
/// image file is copied at once — it holds only what the file system had written to its device
/// (dirty pages of the mounted file system are not in it), which is what a power cut would
/// leave. The copy is mounted (its ext4 journal replayed) and every `verified` row must name a
/// whole file in it. Runs only as root with loop devices (skipped elsewhere; the simulated loss
/// above runs everywhere). What it adds to the simulation: the kernel's real ext4 and `syncfs`
/// decide what reached the device. What it does not: the device below the loop (the image's own
/// file system) is trusted, and write-back the kernel did on its own between the kill and the
/// copy of the image makes a cut look luckier, never worse. `--fsync end` is run the same way and
/// its lying rows are reported, not asserted (whether the kernel wrote them back by then depends
/// on the machine's other writers).
#[test]
fn a_power_cut_on_a_loop_mounted_ext4_loses_no_verified_file() {
    let work = tempfile::tempdir().unwrap();
    let img = work.path().join("fs.img");
    let made = std::fs::File::create(&img)
        .and_then(|f| f.set_len(256 << 20))
        .is_ok()
        && Command::new("mkfs.ext4")
            .args(["-q", "-F"])
            .arg(&img)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    let mnt = work.path().join("mnt");
    let Some(_fs) = made.then(|| LoopMount::mount(&img, &mnt)).flatten() else {
        eprintln!("skipped: cannot make and mount a loop ext4 here (needs root and loop devices)");
        return;
    };
    let files = corpus(500);
    let src_dir = work.path().join("src");
    write_corpus(&src_dir, &files);
    let src = Store::open(src_dir.to_str().unwrap(), &Default::default()).unwrap();
    let mut rng = Rng::new();
    let mut verified_total = 0;
    let points = [
        ("batch", "journaled:1".to_string()),
        ("batch", "sync-end:2".to_string()),
        ("batch", (1 + rng.below(1000)).to_string()),
        ("end", "journaled:1".to_string()),
    ];
    for (i, (mode, at)) in points.iter().enumerate() {
        let dst_dir = mnt.join(format!("dst{i}"));
        std::fs::create_dir_all(&dst_dir).unwrap();
        let journal = work.path().join(format!("journal{i}.sqlite"));
        let status = moverctl()
            .arg("copy")
            .arg(&src_dir)
            .arg(&dst_dir)
            .arg("--journal")
            .arg(&journal)
            .args(["--transfers", "8", "--fsync", mode])
            .env("MOVERCTL_DURABILITY_LOG", work.path().join("log"))
            .env("MOVERCTL_DURABILITY_KILL_AT", at)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        // The power cut: the device's bytes as they are now.
        let snap = work.path().join("snap.img");
        let copied = Command::new("cp")
            .arg("--sparse=always")
            .arg(&img)
            .arg(&snap)
            .status()
            .unwrap();
        assert!(copied.success());
        let (verified, lies) = {
            let snap_mnt = work.path().join("snap");
            let _m = LoopMount::mount(&snap, &snap_mnt).expect("mount the image's copy");
            let after = snap_mnt.join(format!("dst{i}"));
            let dst = Store::open(dst_dir.to_str().unwrap(), &Default::default()).unwrap();
            lying_rows(&journal, &src, &dst, &after, &files)
        };
        std::fs::remove_file(&snap).unwrap();
        if *mode == "batch" {
            assert!(
                lies.is_empty(),
                "power cut at {at} ({status}): verified rows whose file the image lacks: {lies:?}"
            );
            verified_total += verified;
        } else {
            eprintln!(
                "power cut, --fsync end at {at}: {} of {verified} verified rows name a file the image lacks",
                lies.len()
            );
        }
    }
    assert!(verified_total > 0, "nothing was journaled before the cuts");
    eprintln!(
        "power cut on a loop ext4: {verified_total} verified rows, every file whole in the image"
    );
}
