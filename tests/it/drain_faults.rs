//! A durability receipt under faults (issue 28): flipped bytes on the way to the store, 503s, and
//! kill -9 at any moment. Whatever happens, a receipt that exists — beside the checkpoint or at the
//! destination — describes exactly what the destination holds: every file it lists is there with
//! its size and digest, and the two receipts are the same document.

use super::faults::proxy::{PFault, Proxy};
use super::{moverctl, proxy_remote_toml, remotes_toml, servers, text, unique};
use md5::Digest;
use moverctl::job::drain::{RECEIPT_AT_DESTINATION, Receipt};
use object_store::ObjectStoreExt;
use std::path::Path;

/// A DCP checkpoint of `shards` files of `size` bytes each (distinct contents), `.metadata` last.
fn dcp(dir: &Path, name: &str, shards: usize, size: usize) {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    for i in 0..shards {
        let data: Vec<u8> = (0..size)
            .map(|j| ((i * 131 + j * 7 + j / 4093) % 251) as u8)
            .collect();
        std::fs::write(d.join(format!("__{i}_0.distcp")), data).unwrap();
    }
    std::fs::write(d.join(".metadata"), b"dcp metadata").unwrap();
}

/// Every object under `at` as bytes, by key.
async fn objects(at: &moverctl::store::Store) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for key in super::keys_at(at).await {
        let path = at.path_of(&key).unwrap();
        let bytes = at.inner.get(&path).await.unwrap().bytes().await.unwrap();
        out.push((key, bytes.to_vec()));
    }
    out
}

/// The invariant: a receipt beside the checkpoint has an identical twin at the destination, and
/// a receipt at the destination lists exactly the files there with their sizes and MD5s.
fn check_receipts(
    rt: &tokio::runtime::Runtime,
    ckpt: &Path,
    name: &str,
    at: &moverctl::store::Store,
) {
    let held = rt.block_on(objects(at));
    let remote = held.iter().find(|(k, _)| k == RECEIPT_AT_DESTINATION);
    let beside = std::fs::read(ckpt.join(format!("{name}.moverctl-receipt.json"))).ok();
    if let Some(local) = &beside {
        let (_, remote) =
            remote.expect("a receipt beside the checkpoint has its twin at the destination");
        assert_eq!(local, remote, "the two receipts differ");
    }
    let Some((_, remote)) = remote else { return };
    let r: Receipt = serde_json::from_slice(remote)
        .unwrap_or_else(|e| panic!("the receipt at the destination does not parse: {e}"));
    assert_eq!(r.files.len() as u64, r.objects);
    assert_eq!(
        held.len(),
        r.files.len() + 1,
        "{:?}",
        held.iter().map(|h| &h.0).collect::<Vec<_>>()
    );
    for f in &r.files {
        let (_, bytes) = held
            .iter()
            .find(|(k, _)| *k == f.file.key)
            .unwrap_or_else(|| {
                panic!(
                    "{} is in the receipt but not at the destination",
                    f.file.key
                )
            });
        assert_eq!(bytes.len() as u64, f.file.bytes, "{}", f.file.key);
        let local = std::fs::read(ckpt.join(name).join(&f.file.key)).unwrap();
        assert_eq!(
            *bytes, local,
            "{} differs from the checkpoint's file",
            f.file.key
        );
        if let Some(md5) = &f.md5 {
            assert_eq!(*md5, hex::encode(md5::Md5::digest(bytes)), "{}", f.file.key);
        }
    }
}

fn setup(s: &super::Servers, proxy: &Proxy, work: &Path) -> std::path::PathBuf {
    let conf = work.join("remotes.toml");
    let toml = format!(
        "{}\n{}",
        remotes_toml(s),
        proxy_remote_toml(s, &proxy.endpoint())
    );
    std::fs::write(&conf, toml).unwrap();
    conf
}

#[test]
fn receipts_under_flipped_bytes_and_slowdowns_describe_exactly_what_the_destination_holds() {
    let Some(s) = servers() else { return };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let proxy = rt.block_on(Proxy::start(super::s3_upstream(&s)));
    let work = tempfile::tempdir().unwrap();
    let conf = setup(&s, &proxy, work.path());
    let ckpt = work.path().join("ckpt");
    dcp(&ckpt, "step-5", 3, 300_000);
    let prefix = unique("drain-faults");
    // A flipped byte in a shard's upload, in the receipt's own upload, and 503s on another shard:
    // each is detected and retried, so the pass still ends durable — with a true receipt.
    proxy.add("PUT", "__0_0.distcp", "", PFault::FlipRequest, 1);
    proxy.add("PUT", "__2_0.distcp", "", PFault::SlowDown, 2);
    proxy.add("PUT", RECEIPT_AT_DESTINATION, "", PFault::FlipRequest, 1);
    let o = moverctl()
        .args(["--config", conf.to_str().unwrap(), "drain"])
        .arg(&ckpt)
        .arg(format!("viaproxy:{}/{prefix}", s.bucket_a))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let hits = proxy.hits();
    assert_eq!(hits.len(), 4, "every fault was injected: {hits:?}");
    assert!(
        ckpt.join("step-5.moverctl-receipt.json").exists(),
        "{}",
        text(&o)
    );
    let at = moverctl::store::Store::open(
        &format!("garage:{}/{prefix}/step-5", s.bucket_a),
        &super::remotes(&s),
    )
    .unwrap();
    check_receipts(&rt, &ckpt, "step-5", &at);
}

#[test]
fn a_receipt_upload_that_keeps_arriving_flipped_fails_the_pass_and_no_receipt_is_left_beside() {
    let Some(s) = servers() else { return };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let proxy = rt.block_on(Proxy::start(super::s3_upstream(&s)));
    let work = tempfile::tempdir().unwrap();
    let conf = setup(&s, &proxy, work.path());
    let ckpt = work.path().join("ckpt");
    dcp(&ckpt, "step-6", 2, 100_000);
    let prefix = unique("drain-faults");
    proxy.add("PUT", RECEIPT_AT_DESTINATION, "", PFault::FlipRequest, 1000);
    let o = moverctl()
        .args(["--config", conf.to_str().unwrap(), "drain"])
        .arg(&ckpt)
        .arg(format!("viaproxy:{}/{prefix}", s.bucket_a))
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("receipt"), "{}", text(&o));
    assert!(!ckpt.join("step-6.moverctl-receipt.json").exists());
    let at = moverctl::store::Store::open(
        &format!("garage:{}/{prefix}/step-6", s.bucket_a),
        &super::remotes(&s),
    )
    .unwrap();
    let keys = rt.block_on(super::keys_at(&at));
    assert!(
        !keys.iter().any(|k| k == RECEIPT_AT_DESTINATION),
        "a corrupt receipt was left: {keys:?}"
    );
    // The store behaves again: the next pass makes it durable.
    proxy.clear();
    let o = moverctl()
        .args(["--config", conf.to_str().unwrap(), "drain"])
        .arg(&ckpt)
        .arg(format!("viaproxy:{}/{prefix}", s.bucket_a))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    check_receipts(&rt, &ckpt, "step-6", &at);
}

#[test]
fn a_drain_killed_at_any_moment_never_leaves_a_receipt_that_lies() {
    let Some(s) = servers() else { return };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let proxy = rt.block_on(Proxy::start(super::s3_upstream(&s)));
    let work = tempfile::tempdir().unwrap();
    let conf = setup(&s, &proxy, work.path());
    let ckpt = work.path().join("ckpt");
    dcp(&ckpt, "step-7", 4, 6 << 20);
    let prefix = unique("drain-kill");
    let dst = format!("garage:{}/{prefix}", s.bucket_a);
    let at = moverctl::store::Store::open(&format!("{dst}/step-7"), &super::remotes(&s)).unwrap();
    // 24 MiB at 16 MiB/s is about 1.5 s of copying: kills land before, during and after it.
    let mut durable_seen = false;
    for delay_ms in [150u64, 500, 900, 1300, 1700, 2100, 2600] {
        let mut child = moverctl()
            .args(["--config", conf.to_str().unwrap(), "drain"])
            .arg(&ckpt)
            .arg(&dst)
            .args(["--bwlimit", "16MiB/s", "-q"])
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill(); // SIGKILL (a no-op when it already finished)
        child.wait().unwrap();
        check_receipts(&rt, &ckpt, "step-7", &at);
        durable_seen |= ckpt.join("step-7.moverctl-receipt.json").exists();
        if durable_seen {
            break;
        }
    }
    let o = moverctl()
        .args(["--config", conf.to_str().unwrap(), "drain"])
        .arg(&ckpt)
        .arg(&dst)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        ckpt.join("step-7.moverctl-receipt.json").exists(),
        "{}",
        text(&o)
    );
    check_receipts(&rt, &ckpt, "step-7", &at);
}
