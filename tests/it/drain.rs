//! `moverctl drain`: complete checkpoints (DCP's `.metadata`, a marker file, or quiet for a while)
//! copied newest first with a durability receipt beside each and at the destination; never one
//! still being written, never a receipt for a checkpoint whose files were not all verified; one
//! changed after its receipt is drained again; the `--on-durable` hook runs per receipt.

mod retention;

use super::faults::proxy::{PFault, Proxy};
use super::{moverctl, proxy_remote_toml, remotes_toml, servers, text, unique};
use moverctl::job::drain::Receipt;
use std::path::Path;

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// A DCP-layout checkpoint: shard files, then `.metadata` when `complete`.
fn dcp(dir: &Path, name: &str, shards: usize, complete: bool) {
    for i in 0..shards {
        let data: Vec<u8> = (0..(200_000 + i * 1000))
            .map(|j| ((i * 31 + j) % 251) as u8)
            .collect();
        write(&dir.join(name).join(format!("__{i}_0.distcp")), &data);
    }
    if complete {
        write(&dir.join(name).join(".metadata"), b"dcp metadata");
    }
}

/// The receipt at `path`, checked against its schema in docs/json.md.
fn receipt(path: &Path) -> Receipt {
    let text = std::fs::read_to_string(path).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let all = super::json_schema::schemas();
    assert_eq!(
        super::json_schema::validate(&v, &all).unwrap_or_else(|e| panic!("{e:?}")),
        "moverctl.receipt/1"
    );
    serde_json::from_value(v).unwrap()
}

fn drain(ckpt: &Path, dst: &str, extra: &[&str]) -> std::process::Output {
    moverctl()
        .arg("drain")
        .arg(ckpt)
        .arg(dst)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn complete_checkpoints_are_drained_with_receipts_and_incomplete_ones_wait() {
    let work = tempfile::tempdir().unwrap();
    let (ckpt, dst) = (work.path().join("ckpt"), work.path().join("durable"));
    dcp(&ckpt, "step-100", 3, true);
    dcp(&ckpt, "step-200", 2, false);
    let hook_log = work.path().join("hook.log");
    let hook = format!(
        "echo \"$MOVERCTL_CHECKPOINT $MOVERCTL_RECEIPT $MOVERCTL_DESTINATION\" >> {}",
        hook_log.display()
    );
    let o = drain(&ckpt, dst.to_str().unwrap(), &["--on-durable", &hook]);
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("durable     step-100: 4 files"), "{out}");
    assert!(
        out.contains("incomplete  step-200: no .metadata yet"),
        "{out}"
    );
    // The incomplete checkpoint is not at the destination at all.
    assert!(!dst.join("step-200").exists());
    // Every file arrived whole, and both receipts say so.
    let beside = ckpt.join("step-100.moverctl-receipt.json");
    let r = receipt(&beside);
    assert_eq!(receipt(&dst.join("step-100/.moverctl-receipt.json")), r);
    assert_eq!((r.schema.as_str(), r.objects), ("moverctl.receipt/1", 4));
    for f in &r.files {
        let want = std::fs::read(ckpt.join("step-100").join(&f.file.key)).unwrap();
        assert_eq!(
            std::fs::read(dst.join("step-100").join(&f.file.key)).unwrap(),
            want
        );
        assert_eq!(f.file.bytes, want.len() as u64);
        assert!(f.crc64nvme.is_some() && f.verified_by.is_some(), "{f:?}");
    }
    assert_eq!(r.bytes, r.files.iter().map(|f| f.file.bytes).sum::<u64>());
    let hooked = std::fs::read_to_string(&hook_log).unwrap();
    assert_eq!(hooked.lines().count(), 1, "{hooked}");
    assert!(hooked.starts_with("step-100 ") && hooked.contains("step-100.moverctl-receipt.json"));

    // Complete now: drained; the other one is unchanged and not copied again.
    write(&ckpt.join("step-200/.metadata"), b"dcp metadata");
    let o = drain(&ckpt, dst.to_str().unwrap(), &[]);
    let out = text(&o);
    assert!(out.contains("durable     step-200: 3 files"), "{out}");
    assert!(out.contains("unchanged   step-100"), "{out}");
    assert_eq!(receipt(&beside), r, "the old receipt stands");
    // Newest first: step-200 was written last.
    assert!(
        out.find("step-200").unwrap() < out.find("step-100").unwrap(),
        "{out}"
    );

    // A checkpoint rewritten after its receipt is drained again and gets a new receipt.
    write(&ckpt.join("step-100/__0_0.distcp"), b"rewritten");
    let o = drain(&ckpt, dst.to_str().unwrap(), &[]);
    let out = text(&o);
    assert!(out.contains("changed after its receipt"), "{out}");
    assert!(out.contains("durable     step-100"), "{out}");
    let again = receipt(&beside);
    assert_ne!(again, r);
    assert_eq!(
        std::fs::read(dst.join("step-100/__0_0.distcp")).unwrap(),
        b"rewritten"
    );
    assert_eq!(receipt(&dst.join("step-100/.moverctl-receipt.json")), again);
}

#[test]
fn marker_and_quiet_rules() {
    let work = tempfile::tempdir().unwrap();
    let (ckpt, dst) = (work.path().join("ckpt"), work.path().join("durable"));
    write(&ckpt.join("ep1/model.pt"), b"weights");
    let o = drain(
        &ckpt,
        dst.to_str().unwrap(),
        &["--complete-when", "COMPLETE"],
    );
    assert!(
        text(&o).contains("incomplete  ep1: no marker file \"COMPLETE\" yet"),
        "{}",
        text(&o)
    );
    write(&ckpt.join("ep1/COMPLETE"), b"");
    let o = drain(
        &ckpt,
        dst.to_str().unwrap(),
        &["--complete-when", "COMPLETE"],
    );
    assert!(
        text(&o).contains("durable     ep1: 2 files"),
        "{}",
        text(&o)
    );
    // Just written: not quiet for an hour.
    write(&ckpt.join("ep2/model.pt"), b"weights 2");
    let o = drain(
        &ckpt,
        dst.to_str().unwrap(),
        &["--complete-when", "quiet=1h"],
    );
    assert!(
        text(&o).contains("incomplete  ep2: a file changed"),
        "{}",
        text(&o)
    );
    assert!(!dst.join("ep2").exists());
    let o = drain(
        &ckpt,
        dst.to_str().unwrap(),
        &["--complete-when", "quiet=1s"],
    );
    assert!(text(&o).contains("incomplete  ep2") || text(&o).contains("durable     ep2"));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let o = drain(
        &ckpt,
        dst.to_str().unwrap(),
        &["--complete-when", "quiet=1s"],
    );
    assert!(dst.join("ep2/model.pt").exists(), "{}", text(&o));
    let o = drain(&ckpt, dst.to_str().unwrap(), &["--complete-when", "a/b"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn into_s3_the_receipt_is_written_only_when_every_file_verified() {
    let Some(s) = servers() else { return };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let proxy = rt.block_on(Proxy::start(super::s3_upstream(&s)));
    let work = tempfile::tempdir().unwrap();
    let conf = work.path().join("remotes.toml");
    let toml = format!(
        "{}\n{}",
        remotes_toml(&s),
        proxy_remote_toml(&s, &proxy.endpoint())
    );
    std::fs::write(&conf, toml).unwrap();
    let ckpt = work.path().join("ckpt");
    dcp(&ckpt, "step-1", 2, true);
    let prefix = unique("drain");
    let dst = format!("viaproxy:{}/{prefix}", s.bucket_a);
    // Every PUT of one shard file fails: the checkpoint is not durable, and no receipt says so.
    proxy.add("PUT", "__1_0.distcp", "", PFault::ServerError, 100);
    let o = moverctl()
        .args(["--config", conf.to_str().unwrap(), "drain"])
        .arg(&ckpt)
        .arg(&dst)
        .args(["--retries", "0"])
        .env("MOVERCTL_RETRY_TIMEOUT", "1s")
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("checkpoint step-1 is not durable"),
        "{}",
        text(&o)
    );
    assert!(!ckpt.join("step-1.moverctl-receipt.json").exists());
    let remotes = super::remotes(&s);
    let at =
        moverctl::store::Store::open(&format!("garage:{}/{prefix}/step-1", s.bucket_a), &remotes)
            .unwrap();
    let keys = rt.block_on(super::keys_at(&at));
    assert!(
        !keys.iter().any(|k| k == ".moverctl-receipt.json"),
        "{keys:?}"
    );
    // The store answers again: the next pass finishes it.
    proxy.clear();
    let o = moverctl()
        .args(["--config", conf.to_str().unwrap(), "drain"])
        .arg(&ckpt)
        .arg(&dst)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let keys = rt.block_on(super::keys_at(&at));
    assert_eq!(
        keys,
        [
            ".metadata",
            ".moverctl-receipt.json",
            "__0_0.distcp",
            "__1_0.distcp"
        ]
    );
    let r = receipt(&ckpt.join("step-1.moverctl-receipt.json"));
    assert_eq!(r.objects, 3);
    assert!(
        r.files
            .iter()
            .all(|f| f.md5.is_some() || f.crc64nvme.is_some()),
        "{r:?}"
    );
}

#[test]
fn a_drain_killed_mid_copy_leaves_no_receipt_and_the_next_pass_finishes() {
    let work = tempfile::tempdir().unwrap();
    let (ckpt, dst) = (work.path().join("ckpt"), work.path().join("durable"));
    let big: Vec<u8> = (0..48u32 << 20).map(|i| (i % 253) as u8).collect();
    write(&ckpt.join("step-9/__0_0.distcp"), &big);
    write(&ckpt.join("step-9/.metadata"), b"dcp metadata");
    let mut child = moverctl()
        .arg("drain")
        .arg(&ckpt)
        .arg(&dst)
        .args(["--bwlimit", "16MiB/s"])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1200));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(!ckpt.join("step-9.moverctl-receipt.json").exists());
    assert!(!dst.join("step-9/.moverctl-receipt.json").exists());
    let o = drain(&ckpt, dst.to_str().unwrap(), &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("durable     step-9: 2 files"),
        "{}",
        text(&o)
    );
    assert_eq!(std::fs::read(dst.join("step-9/__0_0.distcp")).unwrap(), big);
    assert_eq!(
        receipt(&ckpt.join("step-9.moverctl-receipt.json")).objects,
        2
    );
}

#[test]
fn keep_local_prunes_only_durable_checkpoints_beyond_the_newest() {
    let work = tempfile::tempdir().unwrap();
    let (ckpt, dst) = (work.path().join("ckpt"), work.path().join("durable"));
    let d = dst.to_str().unwrap();
    for name in ["step-1", "step-2", "step-3"] {
        dcp(&ckpt, name, 1, true);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // step-0 is old and incomplete (no receipt): never pruned.
    dcp(&ckpt, "step-0", 1, false);
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for f in std::fs::read_dir(ckpt.join("step-0")).unwrap() {
        let f = std::fs::File::options()
            .write(true)
            .open(f.unwrap().path())
            .unwrap();
        f.set_modified(old).unwrap();
    }
    let dir = std::fs::File::open(ckpt.join("step-0")).unwrap();
    dir.set_modified(old).unwrap();
    let o = drain(&ckpt, d, &["--keep-local", "1"]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("pruned      step-2") && out.contains("pruned      step-1"),
        "{out}"
    );
    assert!(out.contains("kept        step-0: no receipt"), "{out}");
    assert!(ckpt.join("step-3").exists() && ckpt.join("step-0").exists());
    assert!(!ckpt.join("step-2").exists() && !ckpt.join("step-2.moverctl-receipt.json").exists());
    assert!(
        dst.join("step-2/__0_0.distcp").exists(),
        "the durable copy stays"
    );
    // A receipt the destination does not hold (its copy was lost): the checkpoint is kept.
    dcp(&ckpt, "step-4", 1, true);
    let o = drain(&ckpt, d, &[]);
    assert!(text(&o).contains("durable     step-4"), "{}", text(&o));
    std::fs::remove_file(dst.join("step-3/.moverctl-receipt.json")).unwrap();
    let o = drain(&ckpt, d, &["--keep-local", "1"]);
    let out = text(&o);
    assert!(
        out.contains("kept        step-3: the destination's receipt is missing"),
        "{out}"
    );
    assert!(ckpt.join("step-3").exists());
    // A pass killed mid-prune left a hidden folder and an orphan receipt: both go.
    std::fs::create_dir_all(ckpt.join(".moverctl-pruning-step-7")).unwrap();
    write(&ckpt.join("step-7.moverctl-receipt.json"), b"{}");
    let o = drain(&ckpt, d, &["--keep-local", "5"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!ckpt.join(".moverctl-pruning-step-7").exists());
    assert!(!ckpt.join("step-7.moverctl-receipt.json").exists());
}

/// Waits up to `secs` for `path` to exist.
fn appears(path: &Path, secs: u64) -> bool {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < until {
        if path.exists() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    false
}

/// A long-running drain picks up a checkpoint written after it started: woken by a file system
/// notification (with an hour between polls, so polling cannot be what finds it), or by polling
/// alone (as on a mount that delivers no notifications).
#[test]
fn a_running_drain_is_woken_by_notifications_and_by_polling() {
    for (mode, flags) in [
        ("notifications", &["--watch", "--every", "1h"][..]),
        ("polling", &["--every", "1s"][..]),
    ] {
        let work = tempfile::tempdir().unwrap();
        let (ckpt, dst) = (work.path().join("ckpt"), work.path().join("durable"));
        std::fs::create_dir_all(&ckpt).unwrap();
        let mut child = moverctl()
            .arg("drain")
            .arg(&ckpt)
            .arg(&dst)
            .args(flags)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Let the first pass (an empty folder) run, then write a checkpoint, .metadata last.
        std::thread::sleep(std::time::Duration::from_millis(1500));
        dcp(&ckpt, "step-1", 2, true);
        let found = appears(&ckpt.join("step-1.moverctl-receipt.json"), 20);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(found, "{mode}: no receipt within 20 s");
        assert_eq!(
            receipt(&dst.join("step-1/.moverctl-receipt.json")).objects,
            3,
            "{mode}"
        );
    }
}

#[test]
fn json_lines_are_as_documented() {
    let work = tempfile::tempdir().unwrap();
    let (ckpt, dst) = (work.path().join("ckpt"), work.path().join("durable"));
    // Oldest first: an abandoned one (never complete), two complete, one being written.
    for (name, complete) in [
        ("step-0", false),
        ("step-1", true),
        ("step-2", true),
        ("step-3", false),
    ] {
        dcp(&ckpt, name, 1, complete);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let all = super::json_schema::schemas();
    let mut seen = std::collections::BTreeSet::new();
    for checkpoints in [4, 3] {
        let o = drain(
            &ckpt,
            dst.to_str().unwrap(),
            &["--json", "--keep-local", "2"],
        );
        assert!(o.status.success(), "{}", text(&o));
        let stdout = String::from_utf8(o.stdout).unwrap();
        for l in stdout.lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let id = super::json_schema::validate(&v, &all).unwrap_or_else(|e| panic!("{e:?}"));
            seen.insert(id);
        }
        let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        let got = (last["event"].as_str(), last["checkpoints"].as_u64());
        assert_eq!(got, (Some("summary"), Some(checkpoints)), "{stdout}");
    }
    for id in [
        "durable",
        "unchanged",
        "incomplete",
        "pruned",
        "kept",
        "summary",
    ] {
        assert!(
            seen.contains(&format!("moverctl.drain/1#{id}")),
            "{id}: {seen:?}"
        );
    }
}

/// Regression: `--watch` took the file system's reports of its own reads (each pass opens every
/// receipt, each copy reads every file) as changes, so every pass woke the next one and a drain
/// with nothing to do kept a core busy (bench/drain.sh: about 7 % of a core over 10,000 files).
/// Idle, it must make no pass beyond the first until something is written.
#[test]
fn regress_an_idle_watch_is_not_woken_by_its_own_reads() {
    use std::io::{BufRead, BufReader};
    let work = tempfile::tempdir().unwrap();
    let (ckpt, dst) = (work.path().join("ckpt"), work.path().join("durable"));
    dcp(&ckpt, "step-1", 3, true);
    dcp(&ckpt, "step-2", 3, true);
    let mut child = moverctl()
        .arg("drain")
        .arg(&ckpt)
        .arg(&dst)
        .args(["--watch", "--every", "1h", "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if line.contains("\"event\":\"summary\"") {
                let _ = tx.send(line);
            }
        }
    });
    let first = rx.recv_timeout(std::time::Duration::from_secs(60));
    assert!(first.is_ok(), "no first pass within 60 s");
    // The first pass wrote receipts (a change); let the one pass that may cause settle, then
    // count the passes of four idle seconds.
    std::thread::sleep(std::time::Duration::from_secs(3));
    while rx.try_recv().is_ok() {}
    std::thread::sleep(std::time::Duration::from_secs(4));
    let idle: Vec<String> = rx.try_iter().collect();
    // Something written wakes it still.
    dcp(&ckpt, "step-3", 1, true);
    let woke = rx.recv_timeout(std::time::Duration::from_secs(20));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        idle.is_empty(),
        "{} passes while idle: {idle:?}",
        idle.len()
    );
    assert!(
        woke.is_ok_and(|l| l.contains("\"durable\":1")),
        "a new checkpoint did not wake it"
    );
}
