//! The probe on first use (issue 30): a copy, sync or exec into an S3 destination that nothing
//! settles first runs the short checksum probe (Garage checks and keeps x-amz-checksum-crc64nvme),
//! reports it in one line, removes its test objects, saves the result for the bucket, and the
//! same run is proven by CRC64 alone (`dest-checksum`). The next run into the bucket does not
//! probe again; `--no-probe` never probes and keeps the MD5 proof. Seen at a proxy in front of
//! the one Garage.

use super::faults::data;
use super::faults::proxy::Proxy;
use super::{expect, proxy_remote_toml, remotes, servers, summary, text, unique};
use futures::StreamExt;
use moverctl::store::Store;
use serde_json::Value;

const MIB: u64 = 1 << 20;
const FILES: [(&str, u64); 2] = [("f/small.bin", 300_000), ("f/large.bin", 11 * MIB + 5)];

struct Setup {
    dir: tempfile::TempDir,
    conf: std::path::PathBuf,
    proxy: Proxy,
    bucket: String,
    files: std::path::PathBuf,
}

async fn setup() -> Option<Setup> {
    let s = servers()?;
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::start(super::s3_upstream(&s)).await;
    let conf = dir.path().join("remotes.toml");
    std::fs::write(&conf, proxy_remote_toml(&s, &proxy.endpoint())).unwrap();
    let files = dir.path().join("files");
    for (k, size) in FILES {
        let p = files.join(k);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, data(k, size)).unwrap();
    }
    Some(Setup {
        dir,
        conf,
        proxy,
        bucket: s.bucket_b.clone(),
        files,
    })
}

impl Setup {
    /// `copy --json` of the local files into `viaproxy:BUCKET/prefix`, with the probe on first
    /// use allowed (the test harness turns it off for every other test).
    async fn copy(&self, prefix: &str, extra: &[&str]) -> (std::process::Output, Value) {
        let mut c = super::moverctl();
        c.env_remove("MOVERCTL_NO_PROBE")
            .args(["copy", "--json", "--config"])
            .arg(&self.conf)
            .args(["--part-size", "5MiB", "--multipart-threshold", "8MiB"])
            .args(extra)
            .arg(&self.files)
            .arg(format!("viaproxy:{}/{prefix}", self.bucket))
            .env("MOVERCTL_STATE_DIR", self.dir.path().join("state"));
        let o = tokio::task::spawn_blocking(move || c.output().unwrap())
            .await
            .unwrap();
        expect(&o, 0);
        let v = summary(&o);
        (o, v)
    }

    /// Requests the proxy saw under a `.moverctl-probe-` prefix.
    fn probe_requests(&self) -> usize {
        self.proxy
            .log()
            .iter()
            .filter(|(_, t, _)| t.contains(".moverctl-probe-"))
            .count()
    }

    fn saved_probes(&self) -> Vec<std::path::PathBuf> {
        let dir = self.dir.path().join("state/probes/onprem");
        std::fs::read_dir(dir)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    }
}

fn labels(v: &Value) -> Vec<String> {
    let mut l: Vec<String> = v["verified_by"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    l.sort();
    l
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Everything under a prefix of the bucket, straight at Garage.
async fn keys_under(bucket: &str, prefix: &str) -> Vec<String> {
    let s = servers().unwrap();
    let store = Store::open(&format!("garage:{bucket}/{prefix}"), &remotes(&s)).unwrap();
    let p = object_store::path::Path::parse(prefix).unwrap();
    store
        .inner
        .list(Some(&p))
        .map(|m| m.unwrap().location.to_string())
        .collect()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_copy_probes_once_and_is_proven_by_crc64() {
    let Some(t) = setup().await else {
        return;
    };
    let dst = unique("first-probe");
    let (o, v) = t.copy(&dst, &[]).await;
    let err = stderr(&o);
    let line: Vec<&str> = err.lines().filter(|l| l.contains("probed ")).collect();
    assert_eq!(line.len(), 1, "{}", text(&o));
    let want = format!("probed viaproxy:{}/ for the checksum path", t.bucket);
    assert!(line[0].contains(&want), "{}", line[0]);
    assert!(
        line[0].contains("checked and stored") && line[0].contains("removed"),
        "{}",
        line[0]
    );
    assert!(t.probe_requests() >= 3, "{:#?}", t.proxy.log());
    // The copy itself took the checksum path: every object proven by the CRC64 Garage keeps.
    assert_eq!(
        labels(&v),
        vec!["source-size+dest-checksum"],
        "{}",
        text(&o)
    );
    // The test objects are gone, and the result is saved for the bucket.
    let all = keys_under(&t.bucket, &dst).await;
    assert!(
        all.iter().all(|k| !k.contains(".moverctl-probe-")),
        "{all:?}"
    );
    assert_eq!(all.len(), FILES.len(), "{all:?}");
    let saved = t.saved_probes();
    assert_eq!(saved.len(), 1, "{saved:?}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&saved[0]).unwrap()).unwrap();
    assert_eq!(r["checksum_only"], true);
    assert_eq!(r["location"], format!("viaproxy:{}/", t.bucket));
    assert!(r["cleanup"]["left"].as_array().unwrap().is_empty());

    // A second copy into another prefix of the bucket: no probe, still the checksum path.
    let before = t.probe_requests();
    let (o, v) = t.copy(&unique("first-probe-again"), &[]).await;
    assert!(!stderr(&o).contains("probed "), "{}", text(&o));
    assert_eq!(t.probe_requests(), before);
    assert_eq!(
        labels(&v),
        vec!["source-size+dest-checksum"],
        "{}",
        text(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_probe_keeps_the_md5_proof_and_sends_no_probe() {
    let Some(t) = setup().await else {
        return;
    };
    for extra in [
        &["--no-probe"][..],
        &["--dry-run"][..],
        &["--verify", "md5"][..],
    ] {
        let (o, v) = t.copy(&unique("no-probe"), extra).await;
        assert!(!stderr(&o).contains("probed "), "{extra:?}: {}", text(&o));
        assert_eq!(t.probe_requests(), 0, "{extra:?}");
        assert!(t.saved_probes().is_empty(), "{extra:?}");
        if extra[0] != "--dry-run" {
            assert!(
                labels(&v).iter().all(|l| !l.contains("dest-checksum")),
                "{extra:?}: {:?}",
                labels(&v)
            );
        }
    }
}
