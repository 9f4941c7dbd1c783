//! Local destinations and sources as first-class stores (a parallel file system mount, node-local
//! NVMe): temporary files after `kill -9`, a full disk, a file system without preallocation,
//! file times and modes through a round trip.

use super::{expect, moverctl, remotes, remotes_toml, servers, text, unique};
use moverctl::store::Store;
use object_store::{ObjectStoreExt, PutPayload};
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

fn data(key: &str, size: u64) -> Vec<u8> {
    let seed = key
        .bytes()
        .fold(7u64, |a, b| a.wrapping_mul(31).wrapping_add(b as u64));
    (0..size)
        .map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) >> 5) as u8)
        .collect()
}

/// Every file under `dir` (recursively) whose name marks a moverctl temporary file.
fn partials(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if e
                .file_name()
                .to_string_lossy()
                .contains(".moverctl-partial-")
            {
                out.push(p);
            }
        }
    }
    out
}

/// A tmpfs or ramfs mounted for one test, unmounted when dropped. None when this machine does
/// not let the test mount (not root, no CAP_SYS_ADMIN): the caller says so and returns.
struct Mount(tempfile::TempDir);

impl Mount {
    fn new(fstype: &str, opts: Option<&str>) -> Option<Mount> {
        let dir = tempfile::tempdir().unwrap();
        let mut c = std::process::Command::new("mount");
        c.args(["-t", fstype]);
        if let Some(o) = opts {
            c.args(["-o", o]);
        }
        let ok = c
            .arg(fstype)
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("note: cannot mount {fstype} here; this test checks nothing");
            return None;
        }
        Some(Mount(dir))
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.0.path())
            .status();
    }
}

/// Staging from S3 onto a local folder, killed with SIGKILL while large objects are being
/// written: no temporary file is ever listed, the resumed run removes the ones left behind, and
/// every file ends exact. Fails if the sweep of a destination's walk is removed (the temporary
/// files stay), or if temporary files are listed (`ls`).
#[test]
fn kill_nine_mid_write_to_a_folder_then_resume() {
    let Some(s) = servers() else { return };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let prefix = unique("kill9-local");
    let src_loc = format!("garage:{}/{prefix}", s.bucket_a);
    let src = Store::open(&src_loc, &remotes(&s)).unwrap();
    let objs: Vec<(String, u64)> = (0..3)
        .map(|i| (format!("shard-{i}.bin"), 24 * MIB + i * 4097))
        .chain([("small/a.txt".to_string(), 1000)])
        .collect();
    rt.block_on(async {
        for (k, n) in &objs {
            src.inner
                .put(&src.path_of(k).unwrap(), PutPayload::from(data(k, *n)))
                .await
                .unwrap();
        }
    });
    let work = tempfile::tempdir().unwrap();
    let conf = work.path().join("remotes.toml");
    std::fs::write(&conf, remotes_toml(&s)).unwrap();
    let journal = work.path().join("journal.sqlite");
    let dst = work.path().join("pfs");
    let copy = |slow: bool| {
        let mut c = moverctl();
        c.arg("--config").arg(&conf).arg("copy").arg(&src_loc);
        c.arg(&dst).arg("--journal").arg(&journal);
        c.args(["--part-size", "5MiB", "--multipart-threshold", "5MiB"]);
        if slow {
            c.args(["--bwlimit", "8MiB/s"]);
        }
        c
    };
    let mut child = copy(true)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while partials(&dst).is_empty() {
        assert!(std::time::Instant::now() < deadline, "no temporary file");
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(700));
    child.kill().unwrap();
    child.wait().unwrap();
    let left = partials(&dst);
    assert!(!left.is_empty(), "the kill did not land mid-write");
    // Whatever is under a final name is complete and exact; temporary files are not objects.
    for (k, n) in &objs {
        if let Ok(got) = std::fs::read(dst.join(k)) {
            assert!(got == data(k, *n), "{k} is visible but not exact");
        }
    }
    let ls = moverctl().arg("ls").arg(&dst).output().unwrap();
    expect(&ls, 0);
    assert!(
        !String::from_utf8_lossy(&ls.stdout).contains("moverctl-partial"),
        "{}",
        text(&ls)
    );
    // Resume: the temporary files of the killed run go, every object ends exact.
    let out = copy(false).output().unwrap();
    expect(&out, 0);
    assert_eq!(partials(&dst), Vec::<PathBuf>::new(), "{}", text(&out));
    for (k, n) in &objs {
        assert!(
            std::fs::read(dst.join(k)).unwrap() == data(k, *n),
            "{k} not exact"
        );
    }
    // Staged files carry the source's last-modified time (--preserve-mtime is the default).
    rt.block_on(async {
        let head = src.inner.head(&src.path_of(&objs[0].0).unwrap()).await;
        let want: std::time::SystemTime = head.unwrap().last_modified.into();
        let got = std::fs::metadata(dst.join(&objs[0].0))
            .unwrap()
            .modified()
            .unwrap();
        // HEAD shows whole seconds; the listing the copy used, milliseconds.
        let secs =
            |t: std::time::SystemTime| t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        assert_eq!(secs(got), secs(want));
    });
}

/// A journaled `copy` of one large object into a local folder (`pfs` in a scratch folder), in
/// small parts, one part in flight, with JSON output; killed part way and run again.
struct Resume {
    _work: tempfile::TempDir,
    /// `--config` for an S3 source.
    conf: Option<PathBuf>,
    src: String,
    dst: PathBuf,
    journal: PathBuf,
    part: u64,
}

impl Resume {
    fn new(src: impl Fn(&Path) -> String, conf: Option<String>, part: u64) -> Resume {
        let work = tempfile::tempdir().unwrap();
        let conf = conf.map(|c| {
            let p = work.path().join("remotes.toml");
            std::fs::write(&p, c).unwrap();
            p
        });
        Resume {
            src: src(work.path()),
            dst: work.path().join("pfs"),
            journal: work.path().join("journal.sqlite"),
            conf,
            part,
            _work: work,
        }
    }

    /// A local folder holding `key`.
    fn local(key: &str, size: u64) -> Resume {
        Resume::new(
            |w| {
                write_files(&w.join("nvme"), &[(key, size)]);
                w.join("nvme").display().to_string()
            },
            None,
            4 * MIB,
        )
    }

    /// A Garage prefix holding `key`, written as one PUT or (`parts`) in 5 MiB parts.
    fn s3(s: &super::Servers, name: &str, key: &str, size: u64, parts: bool) -> Resume {
        let loc = format!("garage:{}/{}", s.bucket_a, unique(name));
        let src = Store::open(&loc, &remotes(s)).unwrap();
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let path = src.path_of(key).unwrap();
            if parts {
                let up = src.inner.put_multipart(&path).await.unwrap();
                let mut w = object_store::WriteMultipart::new_with_chunk_size(up, 5 << 20);
                w.write(&data(key, size));
                w.finish().await.unwrap();
            } else {
                let body = PutPayload::from(data(key, size));
                src.inner.put(&path, body).await.unwrap();
            }
        });
        Resume::new(|_| loc.clone(), Some(remotes_toml(s)), 5 * MIB)
    }

    /// The copy; `slow` adds `--bwlimit 8MiB/s`, so that it can be killed part way.
    fn copy(&self, slow: bool) -> std::process::Command {
        let mut c = moverctl();
        if let Some(conf) = &self.conf {
            c.arg("--config").arg(conf);
        }
        let part = format!("{}MiB", self.part / MIB);
        c.arg("copy").arg(&self.src).arg(&self.dst);
        c.arg("--journal").arg(&self.journal);
        c.args(["--part-size", &part, "--multipart-threshold", &part]);
        c.args(["--part-concurrency", "1", "--json"]);
        if slow {
            c.args(["--bwlimit", "8MiB/s"]);
        }
        c
    }

    /// Starts the slowed-down copy, waits until its temporary file has been written for
    /// `for_ms`, kills it with SIGKILL and returns the temporary file it left.
    fn kill_mid_file(&self, for_ms: u64) -> PathBuf {
        let mut child = self
            .copy(true)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while partials(&self.dst).is_empty() {
            assert!(std::time::Instant::now() < deadline, "no temporary file");
            assert!(child.try_wait().unwrap().is_none(), "the run ended early");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(for_ms));
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        child.kill().unwrap();
        child.wait().unwrap();
        let left = partials(&self.dst);
        assert_eq!(left.len(), 1, "{left:?}");
        left[0].clone()
    }

    /// The copy run again to the end: its summary.
    fn resume(&self) -> (std::process::Output, serde_json::Value) {
        let out = self.copy(false).output().unwrap();
        expect(&out, 0);
        let v = super::summary(&out);
        (out, v)
    }

    /// `key` is exact under its final name and no temporary file is left.
    fn assert_exact(&self, key: &str, size: u64) {
        assert!(
            std::fs::read(self.dst.join(key)).unwrap() == data(key, size),
            "{key} is not exact"
        );
        assert_eq!(partials(&self.dst), Vec::<PathBuf>::new());
    }
}

/// Flips the byte at `at` of a file (as a crash may tear a write).
fn damage(path: &Path, at: u64) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut b = [0u8; 1];
    f.read_at(&mut b, at).unwrap();
    f.write_at(&[b[0] ^ 0x5a], at).unwrap();
}

/// A large file copied part by part from a local folder, killed with SIGKILL part way: the next
/// run takes over the temporary file, keeps the parts whose bytes still have the CRC64 the
/// journal recorded and reads only the rest from the source. One byte of a kept part is damaged
/// before the resume (as a crash may tear a write): that part alone is copied again, and the file
/// ends exact. Fails if resumed parts are not read back (the damage would stay), or if nothing is
/// resumed.
#[test]
fn a_killed_copy_of_a_large_local_file_resumes_from_its_parts() {
    let (key, size) = ("ckpt/model.safetensors", 48 * MIB + 123);
    let t = Resume::local(key, size);
    // The first part is journaled by now (4 MiB at 8 MiB/s).
    damage(&t.kill_mid_file(2500), 1000);
    let (out, v) = t.resume();
    let resumed = v["resumed_parts"].as_u64().unwrap();
    let read = v["bytes_read"].as_u64().unwrap();
    assert!(resumed >= 1, "nothing resumed: {}", text(&out));
    // Every part not kept was read from the source: the damaged one among them.
    assert!(read <= size - resumed * 4 * MIB, "{}", text(&out));
    // A local source states no digest: had the damaged part been kept, nothing would have told.
    t.assert_exact(key, size);
}

/// A temporary file the journal names but that belongs to another host (a parallel file system
/// shared by several nodes: its writer may still be running there) is never taken over, changed
/// or removed: the copy starts a file of its own and ends exact.
#[test]
fn another_hosts_temporary_file_is_left_alone() {
    let (key, size) = ("ckpt/model.safetensors", 24 * MIB + 9);
    let t = Resume::local(key, size);
    let tmp = t.kill_mid_file(1500);
    // The same file, as if another node had been writing it.
    let theirs = tmp.with_file_name(".model.safetensors.moverctl-partial-4242-0@another-node");
    std::fs::rename(&tmp, &theirs).unwrap();
    let before = std::fs::read(&theirs).unwrap();
    {
        let mut j = moverctl::journal::Journal::open_existing(&t.journal).unwrap();
        let mut r = j
            .get(key)
            .unwrap()
            .expect("the killed run journaled the object");
        assert!(r.upload_id.is_some(), "{r:?}");
        r.upload_id = theirs.file_name().unwrap().to_str().map(str::to_string);
        j.put_all(&[r]).unwrap();
    }
    let (out, v) = t.resume();
    assert_eq!(v["resumed_parts"], 0, "{}", text(&out));
    assert_eq!(v["bytes_read"], size, "{}", text(&out));
    assert!(std::fs::read(t.dst.join(key)).unwrap() == data(key, size));
    assert_eq!(
        std::fs::read(&theirs).unwrap(),
        before,
        "another host's file changed"
    );
}

/// The same from S3, for an object another tool wrote in 5 MiB parts (its multipart ETag is
/// checked from the MD5s of its parts, read back from the kept parts for those): killed part way,
/// resumed, proven by the source's multipart ETag, exact.
#[test]
fn a_killed_staging_of_a_multipart_object_resumes_from_its_parts() {
    let Some(s) = servers() else { return };
    let (key, size) = ("ckpt/shard-0.bin", 40 * MIB + 77);
    let t = Resume::s3(&s, "resume-local", key, size, true);
    t.kill_mid_file(2500);
    let (out, v) = t.resume();
    let resumed = v["resumed_parts"].as_u64().unwrap();
    assert!(resumed >= 1, "nothing resumed: {}", text(&out));
    assert!(
        v["bytes_read"].as_u64().unwrap() <= size - resumed * 5 * MIB,
        "{}",
        text(&out)
    );
    assert_eq!(
        v["verified_by"]["source-parts-etag+dest-written-crc64"],
        1,
        "{}",
        text(&out)
    );
    t.assert_exact(key, size);
}

/// An object whose digest needs its bytes in order (a single-part MD5 ETag: read with one GET)
/// resumes from the longest run of kept parts from its first byte: they are read back through
/// the MD5, and one ranged GET fetches the rest. The second part is damaged before the resume:
/// the first is kept, everything from the second on is fetched again, the MD5 of the whole
/// proves it, exact.
#[test]
fn a_killed_staging_of_a_single_part_object_resumes_in_order() {
    let Some(s) = servers() else { return };
    let (key, size) = ("data/corpus-00.tar", 40 * MIB + 5);
    let t = Resume::s3(&s, "resume-stream", key, size, false);
    damage(&t.kill_mid_file(2500), 5 * MIB + 1000);
    let (out, v) = t.resume();
    assert_eq!(v["resumed_parts"], 1, "{}", text(&out));
    assert_eq!(v["bytes_read"], size - 5 * MIB, "{}", text(&out));
    assert_eq!(
        v["verified_by"]["source-md5+dest-written-crc64"],
        1,
        "{}",
        text(&out)
    );
    t.assert_exact(key, size);
}

fn write_files(dir: &Path, files: &[(&str, u64)]) {
    for (k, n) in files {
        let p = dir.join(k);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, data(k, *n)).unwrap();
    }
}

/// A destination that runs out of space: a clear error naming the file, nothing partial under a
/// final name or left as a temporary file; once space is freed, a re-run ends exact.
#[test]
fn a_full_disk_is_a_clear_error_and_resume_is_exact() {
    let Some(m) = Mount::new("tmpfs", Some("size=20m")) else {
        return;
    };
    let src = tempfile::tempdir().unwrap();
    let files = [
        ("a.bin", 6 * MIB + 3),
        ("b.bin", 6 * MIB + 5),
        ("c/d.bin", 3 * MIB),
    ];
    write_files(src.path(), &files);
    // 12 MiB of the 20 are taken: not every file fits.
    let filler = m.path().join("filler");
    std::fs::write(&filler, vec![1u8; 12 * MIB as usize]).unwrap();
    let dst = m.path().join("dst");
    let work = tempfile::tempdir().unwrap();
    let journal = work.path().join("j.sqlite");
    let copy = || {
        let mut c = moverctl();
        c.arg("copy").arg(src.path()).arg(&dst);
        c.arg("--journal").arg(&journal);
        c.args(["--part-size", "1MiB", "--multipart-threshold", "1MiB"]);
        c.output().unwrap()
    };
    let out = copy();
    expect(&out, 3);
    let all = text(&out);
    assert!(all.contains("No space left on device"), "{all}");
    assert!(all.contains(&dst.display().to_string()), "{all}");
    assert_eq!(partials(m.path()), Vec::<PathBuf>::new());
    let mut failed = 0;
    for (k, n) in &files {
        match std::fs::read(dst.join(k)) {
            Ok(got) => assert!(got == data(k, *n), "{k}: a partial file under its name"),
            Err(_) => failed += 1,
        }
    }
    assert!(failed > 0, "every file fitted: {all}");
    std::fs::remove_file(&filler).unwrap();
    let out = copy();
    expect(&out, 0);
    for (k, n) in &files {
        assert!(std::fs::read(dst.join(k)).unwrap() == data(k, *n), "{k}");
    }
    assert_eq!(partials(m.path()), Vec::<PathBuf>::new());
}

/// ramfs has no fallocate: files are sized with set_len instead, and the copy is exact.
#[test]
fn a_file_system_without_preallocation_still_works() {
    let Some(m) = Mount::new("ramfs", None) else {
        return;
    };
    let probe = std::process::Command::new("fallocate")
        .args(["-l", "1M"])
        .arg(m.path().join("probe"))
        .status();
    assert!(
        probe.is_ok_and(|s| !s.success()),
        "ramfs supports fallocate here: the test would not test the fallback"
    );
    let _ = std::fs::remove_file(m.path().join("probe"));
    let src = tempfile::tempdir().unwrap();
    let files = [("big.bin", 9 * MIB + 1), ("small", 10)];
    write_files(src.path(), &files);
    let dst = m.path().join("dst");
    let journal = tempfile::tempdir().unwrap();
    let out = moverctl()
        .arg("copy")
        .arg(src.path())
        .arg(&dst)
        .args(["--part-size", "2MiB", "--multipart-threshold", "2MiB"])
        .arg("--journal")
        .arg(journal.path().join("j.sqlite"))
        .output()
        .unwrap();
    expect(&out, 0);
    for (k, n) in &files {
        assert!(std::fs::read(dst.join(k)).unwrap() == data(k, *n), "{k}");
    }
}

/// Local files to S3 and back: the mode and modification time come back (moverctl_mode and
/// moverctl_mtime in the object's metadata); with --preserve-mtime=false the time is the copy's.
#[test]
fn mode_and_mtime_survive_a_round_trip_through_s3() {
    let Some(s) = servers() else { return };
    let work = tempfile::tempdir().unwrap();
    let conf = work.path().join("remotes.toml");
    std::fs::write(&conf, remotes_toml(&s)).unwrap();
    let src = work.path().join("src");
    write_files(
        &src,
        &[("run/ckpt.safetensors", 7 * MIB + 9), ("run/notes", 12)],
    );
    use std::os::unix::fs::PermissionsExt;
    let when = std::time::UNIX_EPOCH + std::time::Duration::new(1_600_000_000, 123_456_789);
    for (k, mode) in [("run/ckpt.safetensors", 0o600), ("run/notes", 0o751)] {
        let p = src.join(k);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }
    let bucket = format!("garage:{}/{}", s.bucket_a, unique("roundtrip"));
    let run =
        |from: &dyn AsRef<std::ffi::OsStr>, to: &dyn AsRef<std::ffi::OsStr>, extra: &[&str]| {
            let out = moverctl()
                .arg("--config")
                .arg(&conf)
                .arg("copy")
                .arg(from)
                .arg(to)
                .args(["--part-size", "5MiB", "--multipart-threshold", "5MiB"])
                .args(extra)
                .output()
                .unwrap();
            expect(&out, 0);
        };
    run(&src, &bucket, &[]);
    let back = work.path().join("back");
    run(&bucket, &back, &[]);
    for (k, mode) in [("run/ckpt.safetensors", 0o600), ("run/notes", 0o751)] {
        let m = std::fs::metadata(back.join(k)).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, mode, "{k}");
        assert_eq!(m.modified().unwrap(), when, "{k}");
        assert!(std::fs::read(back.join(k)).unwrap() == std::fs::read(src.join(k)).unwrap());
    }
    let fresh = work.path().join("fresh");
    run(&bucket, &fresh, &["--preserve-mtime=false"]);
    let m = std::fs::metadata(fresh.join("run/notes")).unwrap();
    assert_ne!(m.modified().unwrap(), when);
}

/// README, "Feeding a training cluster", example 1: price the staging (GPU idle time included)
/// with `plan --to onprem --bandwidth`, then stage a corpus from S3 onto a PFS mount (here a
/// folder) with the README's flags; every shard exact and checked against the source's digest.
#[test]
fn readme_stage_a_corpus_onto_a_pfs_mount() {
    let Some(s) = servers() else { return };
    let plan = moverctl()
        .args(["plan", "--from", "aws:us-east-1", "--to", "onprem"])
        .args(["--bytes", "20TiB", "--objects", "80k"])
        .args(["--bandwidth", "100Gbps", "--worker-nic", "100Gbps"])
        .args(["--gpus", "256", "--gpu-rate", "2.50"])
        .output()
        .unwrap();
    expect(&plan, 0);
    let p = text(&plan);
    assert!(p.contains("GPU idle") && p.contains("onprem"), "{p}");
    assert!(
        p.contains("the GPU cluster idles for the whole transfer"),
        "{p}"
    );

    let rt = tokio::runtime::Runtime::new().unwrap();
    let prefix = unique("stage");
    let src_loc = format!("garage:{}/{prefix}", s.bucket_a);
    let src = Store::open(&src_loc, &remotes(&s)).unwrap();
    let shards: Vec<(String, u64)> = (0..6)
        .map(|i| (format!("corpus/v3/shard-{i:05}.tar"), 3 * MIB + i * 1001))
        .chain([("corpus/v3/index.json".to_string(), 2000)])
        .collect();
    rt.block_on(async {
        for (k, n) in &shards {
            src.inner
                .put(&src.path_of(k).unwrap(), PutPayload::from(data(k, *n)))
                .await
                .unwrap();
        }
    });
    let work = tempfile::tempdir().unwrap();
    let conf = work.path().join("remotes.toml");
    std::fs::write(&conf, remotes_toml(&s)).unwrap();
    let mnt = work.path().join("mnt/weka/corpus/v3");
    let out = moverctl()
        .arg("--config")
        .arg(&conf)
        .arg("copy")
        .arg(format!("{src_loc}/corpus/v3/"))
        .arg(&mnt)
        .args([
            "--transfers",
            "64",
            "--part-concurrency",
            "8",
            "--fsync",
            "end",
        ])
        .args(["--multipart-threshold", "2MiB", "--part-size", "1MiB"])
        .arg("--json")
        .output()
        .unwrap();
    expect(&out, 0);
    let v = super::summary(&out);
    assert_eq!(v["copied"]["objects"], shards.len(), "{v}");
    for (k, n) in &shards {
        let f = mnt.join(k.trim_start_matches("corpus/v3/"));
        assert!(std::fs::read(&f).unwrap() == data(k, *n), "{k}");
    }
    // Every shard checked against the digest S3 states for it (a plain MD5 ETag here).
    let stdout = String::from_utf8_lossy(&out.stdout);
    let checked = stdout
        .lines()
        .filter(|l| {
            l.contains("\"event\":\"copied\"") && l.contains("source-md5+dest-written-crc64")
        })
        .count();
    assert_eq!(checked, shards.len(), "{stdout}");
}

/// README, "Feeding a training cluster", example 2: drain checkpoints from node-local NVMe to
/// a zero-egress bucket (Wasabi's catalog entry, on the local Garage) with `sync` from cron:
/// only `*.safetensors`, and a checkpoint rotated away locally stays in the bucket while it is
/// younger than Wasabi's 90-day minimum (the min-duration guard).
#[test]
fn readme_drain_checkpoints_from_nvme_to_a_zero_egress_bucket() {
    let Some(s) = servers() else { return };
    let work = tempfile::tempdir().unwrap();
    let conf = work.path().join("remotes.toml");
    std::fs::write(
        &conf,
        format!(
            "{}\n[remotes.wasabi]\ntype = \"s3\"\nprovider = \"wasabi\"\nendpoint = \"{}\"\n\
             region = \"{}\"\naccess_key_id_env = \"MOVERCTL_TEST_S3_KEY_ID\"\n\
             secret_access_key_env = \"MOVERCTL_TEST_S3_SECRET\"\n",
            remotes_toml(&s),
            s.s3_endpoint,
            s.region
        ),
    )
    .unwrap();
    let nvme = work.path().join("nvme/ckpt/run-42");
    write_files(
        &nvme,
        &[
            ("step-001000.safetensors", 3 * MIB),
            ("step-002000.safetensors", 3 * MIB + 1),
            ("optimizer-002000.pt", 1000),
        ],
    );
    let bucket = format!("wasabi:{}/{}", s.bucket_b, unique("ckpts/run-42"));
    let drain = || {
        let out = moverctl()
            .arg("--config")
            .arg(&conf)
            .arg("sync")
            .arg(&nvme)
            .arg(&bucket)
            .args([
                "--include",
                "*.safetensors",
                "--delete",
                "--max-delete",
                "10",
            ])
            .arg("--json")
            .output()
            .unwrap();
        expect(&out, 0);
        super::summary(&out)
    };
    let v = drain();
    assert_eq!(v["copied"]["objects"], 2, "{v}");
    // The next save rotates the oldest checkpoint away.
    std::fs::remove_file(nvme.join("step-001000.safetensors")).unwrap();
    write_files(&nvme, &[("step-003000.safetensors", 3 * MIB + 2)]);
    let v = drain();
    assert_eq!(v["copied"]["objects"], 1, "{v}");
    assert_eq!(v["delete"]["kept_min_duration"]["objects"], 1, "{v}");
    assert_eq!(v["delete"]["kept_min_duration"]["days"], 90, "{v}");
    assert_eq!(v["delete"]["deleted"]["objects"], 0, "{v}");
    let conf_remotes = moverctl::store::config::Remotes::load(Some(&conf)).unwrap();
    let dst = Store::open(&bucket, &conf_remotes).unwrap();
    let keys = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(super::keys_at(&dst));
    assert_eq!(
        keys,
        [
            "step-001000.safetensors",
            "step-002000.safetensors",
            "step-003000.safetensors"
        ]
    );
}

/// Staging a source that keeps a full-object CRC64 (uploaded with `x-amz-checksum-crc64nvme`, as
/// S3 does by default for new uploads) into a folder checks it by that CRC alone: no MD5 pass
/// over its parts (`source-checksum+dest-written-crc64`); `--verify md5` keeps the MD5 proof.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_that_keeps_a_crc64_is_staged_without_an_md5_pass() {
    let Some(s) = servers() else { return };
    let prefix = unique("stage-crc");
    let src = Store::open(&format!("garage:{}/{prefix}", s.bucket_a), &remotes(&s)).unwrap();
    let key = "shards/big.bin";
    let bytes = data(key, 12 * MIB + 3);
    let w = src.crc_writer.clone().expect("an S3 store");
    let up = w
        .inner
        .put_multipart(&src.path_of(key).unwrap())
        .await
        .unwrap();
    let mut m = object_store::WriteMultipart::new_with_chunk_size(up, 5 * MIB as usize);
    m.put(bytes.clone().into());
    m.finish().await.unwrap();
    let work = tempfile::tempdir().unwrap();
    let conf = work.path().join("remotes.toml");
    std::fs::write(&conf, remotes_toml(&s)).unwrap();
    for (verify, want) in [
        ("auto", "source-checksum+dest-written-crc64"),
        ("md5", "source-parts-etag+dest-written-crc64"),
    ] {
        let dir = work.path().join(verify);
        let mut c = moverctl();
        c.arg("--config")
            .arg(&conf)
            .args(["copy", "--json", "--verify", verify, "--part-size", "8MiB"])
            .args(["--multipart-threshold", "8MiB"])
            .arg(format!("garage:{}/{prefix}", s.bucket_a))
            .arg(&dir);
        let out = tokio::task::spawn_blocking(move || c.output().unwrap())
            .await
            .unwrap();
        expect(&out, 0);
        let v = super::summary(&out);
        assert_eq!(super::verified(&v, want), 1, "{verify}: {}", text(&out));
        assert!(
            std::fs::read(dir.join(key)).unwrap() == bytes,
            "{verify}: not exact"
        );
    }
}

/// Writes `byte` at `at` into the file in place (same inode, same size) and puts its
/// modification time back, as `touch -r` after an in-place edit would: only the ctime shows it.
fn rewrite_keeping_mtime(path: &Path, at: u64, byte: u8) {
    use std::os::unix::fs::FileExt;
    let before = std::fs::metadata(path).unwrap().modified().unwrap();
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.write_all_at(&[byte], at).unwrap();
    f.set_modified(before).unwrap();
    f.sync_all().unwrap();
    assert_eq!(std::fs::metadata(path).unwrap().modified().unwrap(), before);
}

/// A local file rewritten in place with its mtime restored: during a copy (to S3 and to a
/// folder) the copy fails as changed and the rerun writes the new bytes; after a verified copy,
/// the next run copies it again instead of skipping it as verified earlier (the ctime is part of
/// a local file's ETag, in the listing and the journal).
#[test]
fn a_file_rewritten_in_place_with_its_mtime_restored_is_copied_again() {
    let Some(s) = servers() else { return };
    let work = tempfile::tempdir().unwrap();
    let conf = work.path().join("remotes.toml");
    std::fs::write(&conf, remotes_toml(&s)).unwrap();
    let src = work.path().join("src");
    let size = 12 * MIB;
    write_files(&src, &[("ckpt.bin", size), ("small.json", 4096)]);
    let file = src.join("ckpt.bin");
    let bucket = format!("garage:{}/{}", s.bucket_a, unique("ctime"));
    let folder = work.path().join("dst");
    let store = moverctl::store::Store::open(&bucket, &remotes(&s)).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let remote_bytes = |key: &str| -> Vec<u8> {
        let p = store.path_of(key).unwrap();
        rt.block_on(async { store.inner.get(&p).await.unwrap().bytes().await.unwrap() })
            .to_vec()
    };
    let copy = |to: &dyn AsRef<std::ffi::OsStr>, extra: &[&str]| {
        let mut c = moverctl();
        c.arg("--config")
            .arg(&conf)
            .arg("copy")
            .arg(&src)
            .arg(to)
            .args(["--part-size", "5MiB", "--multipart-threshold", "5MiB"])
            .args(extra);
        c
    };
    let mut flip = 0u8;
    for (i, to) in [bucket.clone(), folder.display().to_string()]
        .iter()
        .enumerate()
    {
        // 1. During the copy: 12 MiB at 1 MiB/s takes 12 s; the rewrite lands at 4 s.
        let child = copy(to, &["--bwlimit", "1MiB/s"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_secs(4));
        flip += 1;
        rewrite_keeping_mtime(&file, size - 100, flip);
        let out = child.wait_with_output().unwrap();
        expect(&out, 3);
        assert!(
            text(&out).contains("changed while it was copied"),
            "{to}: {}",
            text(&out)
        );
        let out = copy(to, &[]).output().unwrap();
        expect(&out, 0);
        let want = std::fs::read(&file).unwrap();
        let got = if i == 0 {
            remote_bytes("ckpt.bin")
        } else {
            std::fs::read(folder.join("ckpt.bin")).unwrap()
        };
        assert!(got == want, "{to}: the rerun must write the new bytes");

        // 2. After a verified copy: the next run copies it again.
        flip += 1;
        rewrite_keeping_mtime(&file, 7, flip);
        let out = copy(to, &[]).output().unwrap();
        expect(&out, 0);
        let want = std::fs::read(&file).unwrap();
        let got = if i == 0 {
            remote_bytes("ckpt.bin")
        } else {
            std::fs::read(folder.join("ckpt.bin")).unwrap()
        };
        assert!(
            got == want,
            "{to}: a rewrite after the copy is copied again"
        );
        // and a run with nothing changed copies nothing
        let out = copy(to, &["--json"]).output().unwrap();
        expect(&out, 0);
        let last = String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .unwrap()
            .to_string();
        let v: serde_json::Value = serde_json::from_str(&last).unwrap();
        assert_eq!(v["copied"]["objects"], 0, "{to}: {}", text(&out));
    }
}
