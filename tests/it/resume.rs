//! kill -9 at random moments, then finish: every object identical, nothing partial ever visible,
//! nothing verified copied again, and parts of interrupted multipart uploads reused.

use super::copy::assert_same;
use super::{moverctl, remotes, remotes_toml, servers, unique};
use futures::TryStreamExt;
use moverctl::journal::Journal;
use moverctl::store::Store;
use moverctl::store::list::{Listed, list};
use object_store::ObjectStoreExt;
use std::collections::BTreeSet;
use std::io::Write;

fn write_corpus(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    let mut write = |name: &str, size: usize, seed: u8| {
        let data: Vec<u8> = (0..size)
            .map(|i| ((i * 131 + seed as usize * 7) % 253) as u8)
            .collect();
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::File::create(p).unwrap().write_all(&data).unwrap();
        total += size as u64;
    };
    // Large objects sort first, so the first kill lands in their multipart uploads.
    for i in 0..3 {
        write(&format!("a-large-{i}.bin"), 31 << 20, i);
    }
    for i in 0..40 {
        write(&format!("b-small/{i:03}.bin"), 50_000 + i * 997, i as u8);
    }
    total
}

/// Journal records so far: verified objects plus completed parts.
fn progress(journal: &std::path::Path, src: &Store, dst: &Store) -> usize {
    if !journal.exists() {
        return 0;
    }
    let Ok(j) = Journal::open(journal, &src.shown(), &dst.shown()) else {
        return 0;
    };
    let verified = j.summary().map(|s| s.verified as usize).unwrap_or(0);
    let parts: usize = j
        .open_uploads()
        .unwrap_or_default()
        .iter()
        .map(|(k, _)| j.parts(k).map(|p| p.len()).unwrap_or(0))
        .sum();
    verified + parts
}

#[test]
fn kill_nine_then_finish() {
    let Some(s) = servers() else { return };
    let src_dir = tempfile::tempdir().unwrap();
    let total = write_corpus(src_dir.path());
    let work = tempfile::tempdir().unwrap();
    let conf = work.path().join("remotes.toml");
    std::fs::write(&conf, remotes_toml(&s)).unwrap();
    let journal = work.path().join("journal.sqlite");
    let dst = format!("garage:{}/{}", s.bucket_b, unique("kill9"));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let src_store = Store::open(src_dir.path().to_str().unwrap(), &Default::default()).unwrap();
    let dst_store = Store::open(&dst, &remotes(&s)).unwrap();
    let args = |json: bool| {
        let mut c = moverctl();
        c.args(["--config"])
            .arg(&conf)
            .arg("copy")
            .arg(src_dir.path())
            .arg(&dst);
        c.args(["--journal"]).arg(&journal);
        c.args([
            "--transfers",
            "4",
            "--part-size",
            "5MiB",
            "--multipart-threshold",
            "5MiB",
        ]);
        c.args(["--bwlimit", "16MiB/s"]);
        if json {
            c.arg("--json");
        }
        c
    };
    // Deterministic "random" kill times, spread over the run.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ std::process::id() as u64;
    for round in 0..3 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut child = args(false)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Kill once the journal has moved on by a few records since the last round (robust on a
        // loaded machine), plus a pseudo-random extra delay so kills land at different moments.
        let target = progress(&journal, &src_store, &dst_store) + 2 + round as usize;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while progress(&journal, &src_store, &dst_store) < target {
            assert!(
                std::time::Instant::now() < deadline,
                "round {round}: the run made no progress"
            );
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_millis(seed % 400));
        // SIGKILL: no cleanup, no journal flush, nothing.
        child.kill().unwrap();
        child.wait().unwrap();
        // Whatever is visible under a final key is complete and exact.
        rt.block_on(async {
            let visible: Vec<Listed> = list(&dst_store).try_collect().await.unwrap();
            for l in &visible {
                let got = dst_store
                    .inner
                    .get(&dst_store.path_of(l.key()).unwrap())
                    .await
                    .unwrap()
                    .bytes()
                    .await
                    .unwrap();
                let want = std::fs::read(src_dir.path().join(l.key())).unwrap();
                assert!(
                    got == want,
                    "round {round}: partial or wrong object visible: {}",
                    l.key()
                );
            }
        });
    }
    // What the journal proved before the final run, and the parts it holds.
    let (verified, open_parts) = {
        let j = Journal::open(&journal, &src_store.shown(), &dst_store.shown()).unwrap();
        let mut verified = BTreeSet::new();
        for entry in std::fs::read_dir(src_dir.path().join("b-small")).unwrap() {
            let k = format!("b-small/{}", entry.unwrap().file_name().to_string_lossy());
            if j.get(&k)
                .unwrap()
                .is_some_and(|r| r.state == moverctl::journal::State::Verified)
            {
                verified.insert(k);
            }
        }
        for i in 0..3 {
            let k = format!("a-large-{i}.bin");
            if j.get(&k)
                .unwrap()
                .is_some_and(|r| r.state == moverctl::journal::State::Verified)
            {
                verified.insert(k);
            }
        }
        let open: usize = j
            .open_uploads()
            .unwrap()
            .iter()
            .map(|(k, _)| j.parts(k).unwrap().len())
            .sum();
        (verified, open)
    };
    assert!(
        open_parts > 0 || !verified.is_empty(),
        "the kills came before anything was journaled; the test would prove nothing"
    );
    let out = args(true).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut skipped = BTreeSet::new();
    let mut summary = serde_json::Value::Null;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        match v["event"].as_str() {
            Some("skipped") => {
                skipped.insert(v["key"].as_str().unwrap().to_string());
            }
            Some("summary") => summary = v,
            _ => {}
        }
    }
    assert!(
        verified.is_subset(&skipped),
        "verified before, copied again: {:?}",
        verified.difference(&skipped).collect::<Vec<_>>()
    );
    assert_eq!(summary["failed"]["objects"], 0);
    assert!(
        summary["resumed_parts"].as_u64().unwrap() >= open_parts as u64,
        "parts journaled before the final run are reused: {summary}"
    );
    let copied = summary["copied"]["bytes"].as_u64().unwrap();
    assert_eq!(
        copied + summary["skipped"]["bytes"].as_u64().unwrap(),
        total
    );
    eprintln!(
        "kill -9 x3: {} objects verified before the final run, {open_parts} parts reused, final run copied {copied} of {total} bytes",
        verified.len()
    );
    rt.block_on(assert_same(&src_store, &dst_store));
}

#[test]
fn a_source_changed_since_the_upload_started_is_restarted_not_stitched() {
    let Some(s) = servers() else { return };
    let src_dir = tempfile::tempdir().unwrap();
    let file = src_dir.path().join("model.safetensors");
    let v1: Vec<u8> = (0..40u32 << 20).map(|i| (i % 251) as u8).collect();
    std::fs::write(&file, &v1).unwrap();
    let work = tempfile::tempdir().unwrap();
    let conf = work.path().join("remotes.toml");
    std::fs::write(&conf, remotes_toml(&s)).unwrap();
    let journal = work.path().join("journal.sqlite");
    let dst = format!("garage:{}/{}", s.bucket_a, unique("changed"));
    let cmd = || {
        let mut c = moverctl();
        c.args(["--config"])
            .arg(&conf)
            .arg("copy")
            .arg(src_dir.path())
            .arg(&dst);
        c.args(["--journal"]).arg(&journal);
        c.args([
            "--part-size",
            "5MiB",
            "--multipart-threshold",
            "5MiB",
            "--part-concurrency",
            "1",
        ]);
        c
    };
    let mut child = cmd()
        .args(["--bwlimit", "8MiB/s"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until some parts are journaled, then kill.
    let src_store = Store::open(src_dir.path().to_str().unwrap(), &Default::default()).unwrap();
    let dst_store = Store::open(&dst, &remotes(&s)).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        std::thread::sleep(std::time::Duration::from_millis(200));
        if journal.exists()
            && let Ok(j) = Journal::open(&journal, &src_store.shown(), &dst_store.shown())
            && j.parts("model.safetensors").map(|p| p.len()).unwrap_or(0) >= 2
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no parts journaled in time"
        );
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // Same size, other bytes: the old parts must not be reused.
    let v2: Vec<u8> = v1.iter().map(|b| b.wrapping_add(1)).collect();
    std::fs::write(&file, &v2).unwrap();
    let out = cmd().arg("--json").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(summary["resumed_parts"], 0, "{summary}");
    assert_eq!(summary["aborted_uploads"], 1, "{summary}");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let got = rt.block_on(async {
        dst_store
            .inner
            .get(&dst_store.path_of("model.safetensors").unwrap())
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
    });
    assert!(
        got == v2,
        "the destination must hold the new version, whole"
    );
}

/// Ctrl-C (SIGINT) stops the run (the objects in flight abandoned, the finished ones journaled),
/// exits 130, and the next run resumes.
#[test]
fn sigint_drains_and_exits_130() {
    let src = tempfile::tempdir().unwrap();
    for i in 0..200 {
        std::fs::write(src.path().join(format!("f{i:03}")), vec![i as u8; 200_000]).unwrap();
    }
    let dst = tempfile::tempdir().unwrap();
    let journal = dst.path().join("j.sqlite");
    let out_dir = dst.path().join("out");
    let cmd = || {
        let mut c = moverctl();
        c.arg("copy")
            .arg(src.path())
            .arg(&out_dir)
            .arg("--journal")
            .arg(&journal);
        c.args(["--bwlimit", "4MiB/s", "--transfers", "2"]);
        c
    };
    let child = cmd()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the run is copying (a loaded machine can take seconds to get there: a
    // SIGINT before the handler is installed would kill it instead of draining it).
    let started = std::time::Instant::now();
    while std::fs::read_dir(&out_dir).map_or(0, |d| d.count()) < 2
        && started.elapsed() < std::time::Duration::from_secs(60)
    {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let st = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted"));
    let j = Journal::open(
        &journal,
        &src.path().display().to_string(),
        &out_dir.display().to_string(),
    )
    .unwrap();
    let done = j.summary().unwrap().verified;
    assert!(
        done > 0 && done < 200,
        "{done} verified before the interrupt"
    );
    let out = cmd().arg("--json").output().unwrap();
    assert!(out.status.success());
    let summary: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(summary["skipped"]["objects"], done);
    assert_eq!(summary["copied"]["objects"].as_u64().unwrap() + done, 200);
}
