//! A sharded move through a real Slurm cluster (`scripts/slurm.sh start`): the example array
//! script `examples/scale-out/slurm-array.sh` runs `exec --shard auto` per array task against
//! Garage. Every object is copied exactly once (source GETs counted at a proxy), `status` says
//! done, and a task requeued mid-run (by `scontrol requeue`, or after `scancel` killed its
//! moverctl) with its local state gone finishes without copying again what it had verified. The Kubernetes manifest is parsed and checked here too.
//! The tiered pipeline (`examples/tiered/`): a batch script that stages, trains beside a drain and
//! evicts, run on the same cluster; its Kubernetes manifest checked the same way.

use super::faults::proxy::Proxy;
use super::{proxy_remote_toml, remotes, remotes_toml, servers, unique};
use moverctl::store::Store;
use object_store::{ObjectStoreExt, PutPayload};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Whether the Slurm test cluster runs (`source "$(scripts/slurm.sh env)"`); with
/// MOVERCTL_REQUIRE_SLURM=1 (scripts/test.sh) its absence fails the test.
fn slurm() -> bool {
    if std::env::var("MOVERCTL_TEST_SLURM").as_deref() == Ok("1") {
        return true;
    }
    if std::env::var("MOVERCTL_REQUIRE_SLURM").as_deref() == Ok("1") {
        panic!(
            "MOVERCTL_REQUIRE_SLURM=1 but the Slurm cluster is not running (scripts/slurm.sh start)"
        );
    }
    eprintln!(
        "skipped: no Slurm cluster (scripts/slurm.sh start; source \"$(scripts/slurm.sh env)\")"
    );
    false
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

struct Move {
    rt: tokio::runtime::Runtime,
    proxy: Proxy,
    work: tempfile::TempDir,
    conf: PathBuf,
    plan: PathBuf,
    objects: BTreeMap<String, Vec<u8>>,
    dst: String,
    /// Proxy log entries before the shards ran (the planning listing).
    before: usize,
}

fn prepare(name: &str, objects: BTreeMap<String, Vec<u8>>, shards: u32) -> Option<Move> {
    let s = servers()?;
    if !slurm() {
        return None;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let proxy = rt.block_on(Proxy::start(super::s3_upstream(&s)));
    let work = tempfile::tempdir().unwrap();
    let conf = work.path().join("remotes.toml");
    std::fs::write(
        &conf,
        format!(
            "{}\n{}",
            remotes_toml(&s),
            proxy_remote_toml(&s, &proxy.endpoint())
        ),
    )
    .unwrap();
    let prefix = unique(&format!("{name}-src"));
    let direct = Store::open(&format!("garage:{}/{prefix}", s.bucket_a), &remotes(&s)).unwrap();
    rt.block_on(async {
        use futures::StreamExt;
        futures::stream::iter(&objects)
            .map(|(k, d)| {
                let direct = &direct;
                async move {
                    direct
                        .inner
                        .put(&direct.path_of(k).unwrap(), PutPayload::from(d.clone()))
                        .await
                        .unwrap();
                }
            })
            .buffer_unordered(16)
            .collect::<Vec<()>>()
            .await;
    });
    let src = format!("viaproxy:{}/{prefix}", s.bucket_a);
    let dst = format!("garage:{}/{}", s.bucket_b, unique(&format!("{name}-dst")));
    let o = super::moverctl()
        .arg("--config")
        .arg(&conf)
        .args(["plan", "--from", "onprem", "--to", "onprem", "--shards"])
        .arg(shards.to_string())
        .args([
            "--src",
            &src,
            "--dst",
            &dst,
            "--save",
            "move",
            "--plans-dir",
        ])
        .arg(work.path())
        .output()
        .unwrap();
    super::expect(&o, 0);
    let before = proxy.log().len();
    Some(Move {
        plan: work.path().join("move.toml"),
        rt,
        proxy,
        work,
        conf,
        objects,
        dst,
        before,
    })
}

impl Move {
    /// `sbatch` of the example script with `array` and extra `exec` arguments; returns the
    /// running sbatch (`--wait`) and the job id.
    fn submit(&self, array: &str, exec_args: &str) -> (std::process::Child, Cancel) {
        use std::io::BufRead;
        let mut c = std::process::Command::new("sbatch");
        c.args(["--wait", "--array", array, "--requeue", "--output"])
            .arg(self.work.path().join("task-%a.out"))
            .arg("--export=ALL")
            .arg(repo().join("examples/scale-out/slurm-array.sh"))
            .env("PLAN", &self.plan)
            .env("MOVERCTL", env!("CARGO_BIN_EXE_moverctl"))
            .env("MOVERCTL_NO_PROBE", "1") // as every test but first_probe's
            .env("MOVERCTL_CONFIG", &self.conf)
            .env("MOVERCTL_SCRATCH", self.work.path())
            .env("MOVERCTL_EXEC_ARGS", exec_args)
            // A task whose test has gone (its proxy with it) gives up soon.
            .env("MOVERCTL_RETRY_TIMEOUT", "20s")
            .env_remove("JOB_COMPLETION_INDEX")
            .current_dir(self.work.path())
            .stdout(std::process::Stdio::piped());
        let mut child = c.spawn().expect("sbatch runs");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let id = line
            .trim()
            .rsplit(' ')
            .next()
            .unwrap_or_else(|| panic!("sbatch said {line:?}"))
            .to_string();
        (child, Cancel(id))
    }

    fn outputs(&self, shards: u32) -> Vec<String> {
        (0..shards)
            .map(|k| {
                std::fs::read_to_string(self.work.path().join(format!("task-{k}.out")))
                    .unwrap_or_default()
            })
            .collect()
    }

    fn status(&self) -> serde_json::Value {
        let o = super::moverctl()
            .arg("--config")
            .arg(&self.conf)
            .args(["status", "--json"])
            .arg(&self.plan)
            .output()
            .unwrap();
        super::expect(&o, 0);
        serde_json::from_slice(&o.stdout).unwrap()
    }

    /// Source GETs per object path at the proxy since the shards started.
    fn gets(&self) -> BTreeMap<String, u32> {
        let mut gets = BTreeMap::new();
        for (method, target, _) in &self.proxy.log()[self.before..] {
            if method == "GET" && !target.contains("list-type") {
                let path = target.split('?').next().unwrap_or(target).to_string();
                *gets.entry(path).or_default() += 1;
            }
        }
        gets
    }

    fn assert_exact(&self) {
        let s = servers().unwrap();
        let dst = Store::open(&self.dst, &remotes(&s)).unwrap();
        let got: BTreeMap<String, Vec<u8>> = self.rt.block_on(async {
            let mut out = BTreeMap::new();
            for k in super::keys_at(&dst).await {
                let b = dst
                    .inner
                    .get(&dst.path_of(&k).unwrap())
                    .await
                    .unwrap()
                    .bytes()
                    .await
                    .unwrap();
                out.insert(k, b.to_vec());
            }
            out
        });
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            self.objects.keys().collect::<Vec<_>>()
        );
        assert!(
            got == self.objects,
            "the destination differs from the source"
        );
    }
}

/// A submitted array, cancelled when the test ends early (a failed assertion).
struct Cancel(String);

impl Drop for Cancel {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = std::process::Command::new("scancel").arg(&self.0).status();
        }
    }
}

fn wait(mut child: std::process::Child, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(150);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            assert!(st.success(), "{what}: sbatch --wait ended with {st}");
            return;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what}: the array did not finish in 150 s");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn corpus(n: usize, size: usize) -> BTreeMap<String, Vec<u8>> {
    (0..n)
        .map(|i| {
            let data = (0..size + i * 13)
                .map(|j| ((i * 31 + j) % 251) as u8)
                .collect();
            (format!("d{}/obj-{i:04}.bin", i % 3), data)
        })
        .collect()
}

#[test]
fn a_slurm_array_copies_every_object_exactly_once() {
    let Some(m) = prepare("slurm", corpus(120, 2000), 4) else {
        return;
    };
    let (child, _job) = m.submit("0-3%2", "--transfers 8");
    wait(child, "the array 0-3%2");
    let outs = m.outputs(4);
    let mut copied = 0;
    let mut list_src = 0;
    for (k, out) in outs.iter().enumerate() {
        assert!(
            out.contains(&format!("shard {k} exit 0")),
            "task {k}:\n{out}"
        );
        let summary: serde_json::Value = out
            .lines()
            .filter(|l| l.contains("\"event\":\"summary\""))
            .map(|l| serde_json::from_str(l).unwrap())
            .next_back()
            .unwrap_or_else(|| panic!("task {k} printed no summary:\n{out}"));
        copied += summary["copied"]["objects"].as_u64().unwrap();
        list_src += summary["requests"]["list_source"].as_u64().unwrap();
    }
    assert_eq!(copied, 120);
    // One page per shard here (one unsharded run makes one): within a small constant.
    assert!(
        list_src <= 4 + 1,
        "LIST of the source by all tasks: {list_src}"
    );
    let gets = m.gets();
    assert_eq!(gets.len(), 120, "every object read");
    assert!(
        gets.values().all(|n| *n == 1),
        "an object read twice: {gets:?}"
    );
    m.assert_exact();
    let v = m.status();
    assert_eq!(v["total"]["done"], true, "{v}");
    assert_eq!(v["total"]["objects_done"], 120, "{v}");
    assert_eq!(
        v["total"]["bytes_done"],
        m.objects.values().map(|d| d.len()).sum::<usize>(),
        "{v}"
    );
}

#[test]
fn a_requeued_task_with_its_state_gone_copies_nothing_it_had_verified() {
    // `scontrol requeue`: what Slurm does to a running task whose node fails or that is
    // preempted (killed, then queued again).
    requeued_mid_run("slurm-requeue", None, |job| {
        let o = std::process::Command::new("scontrol")
            .args(["requeue", &format!("{job}_0")])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    });
}

/// The case: one array task's moverctl killed mid-run with `scancel` (SIGKILL to its job
/// step, as the OOM killer would); the array script requeues the task (exit 137), which starts
/// again with its local state gone.
#[test]
fn a_task_killed_with_scancel_is_requeued_and_copies_nothing_it_had_verified() {
    requeued_mid_run("slurm-scancel", Some("shard 0 exit 137"), |job| {
        let raw = std::process::Command::new("squeue")
            .args(["-h", "-j", &format!("{job}_0"), "-o", "%A"])
            .output()
            .unwrap();
        let raw = String::from_utf8_lossy(&raw.stdout).trim().to_string();
        assert!(!raw.is_empty(), "task 0 of {job} is not running");
        let o = std::process::Command::new("scancel")
            .args(["--signal=KILL", &format!("{raw}.0")])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    });
}

/// Runs a 2-task array slowly, waits for shard 0's first batch of progress records, calls
/// `kill` with the job id, and proves the task ran again from a fresh state folder, finished,
/// and read none of the objects it had recorded as verified again.
fn requeued_mid_run(name: &str, said: Option<&str>, kill: impl FnOnce(&str)) {
    let Some(m) = prepare(name, corpus(24, 256 << 10), 2) else {
        return;
    };
    // Slow enough (256 KiB/s per shard, ~3 MiB each) to be caught mid-run, after its first
    // batch of progress records (written every 5 s).
    let (child, job) = m.submit("0-1", "--transfers 2 --bwlimit 256KiB/s");
    let s = servers().unwrap();
    let id = moverctl::plan::file::PlanFile::load(&m.plan)
        .unwrap()
        .shards
        .unwrap()
        .id;
    let progress = Store::open(
        &format!("garage:{}/.moverctl-progress/{id}/shard-0", s.bucket_b),
        &remotes(&s),
    )
    .unwrap();
    // Wait for shard 0's first batch of verified records, then requeue the running task.
    let deadline = Instant::now() + Duration::from_secs(60);
    let verified: BTreeSet<String> = loop {
        assert!(
            Instant::now() < deadline,
            "shard 0 wrote no progress records"
        );
        let keys = m.rt.block_on(super::keys_at(&progress));
        let segs: Vec<&String> = keys.iter().filter(|k| k.starts_with("seg-")).collect();
        if !segs.is_empty() {
            let mut v = BTreeSet::new();
            for k in segs {
                let body = m.rt.block_on(async {
                    progress
                        .inner
                        .get(&progress.path_of(k).unwrap())
                        .await
                        .unwrap()
                        .bytes()
                        .await
                        .unwrap()
                });
                for line in body.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                    let r: serde_json::Value = serde_json::from_slice(line).unwrap();
                    if r["state"] == "verified" {
                        v.insert(r["key"].as_str().unwrap().to_string());
                    }
                }
            }
            break v;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        verified.len() < 12,
        "the shard finished before it was requeued"
    );
    kill(&job.0);
    // scripts/slurm.sh sets cred_expire=10: the requeued task may start again after 10 s.
    wait(child, "the requeued array");
    let out = &m.outputs(2)[0];
    assert!(
        out.contains("shard 0 attempt 1"),
        "the task ran again:\n{out}"
    );
    assert!(out.contains("shard 0 exit 0"), "{out}");
    assert!(out.contains("verified objects taken from"), "{out}");
    if let Some(said) = said {
        assert!(out.contains(said), "{out}");
    }
    // Objects verified before the requeue were read once (never copied again); every other one
    // at least once (an object in flight at the kill may be read twice).
    let gets = m.gets();
    assert_eq!(gets.len(), 24, "every object read");
    for (path, n) in &gets {
        let key = m
            .objects
            .keys()
            .find(|k| path.ends_with(k.as_str()))
            .unwrap_or_else(|| panic!("{path} is not a source object"));
        if verified.contains(key) {
            assert_eq!(
                *n, 1,
                "{key} was verified before the requeue and read again"
            );
        }
    }
    m.assert_exact();
    let v = m.status();
    assert_eq!(v["total"]["done"], true, "{v}");
    assert_eq!(v["total"]["objects_done"], 24, "{v}");
}

/// The Kubernetes manifest: an Indexed Job with completions = shards, parallelism = machines,
/// backoffLimitPerIndex, credentials from a Secret and a service account, and no literal
/// secret anywhere in it.
#[test]
fn the_kubernetes_manifest_is_an_indexed_job_without_secrets() {
    let text = std::fs::read_to_string(repo().join("examples/scale-out/indexed-job.yaml")).unwrap();
    let doc = yaml(&text);
    assert_eq!(doc.get("kind").map(String::as_str), Some("Job"));
    assert_eq!(
        doc.get("spec.completionMode").map(String::as_str),
        Some("Indexed")
    );
    let completions: u32 = doc["spec.completions"].parse().unwrap();
    let parallelism: u32 = doc["spec.parallelism"].parse().unwrap();
    assert!(completions > parallelism, "more shards than machines");
    assert!(doc["spec.backoffLimitPerIndex"].parse::<u32>().unwrap() >= 1);
    assert_eq!(doc["spec.template.spec.restartPolicy"], "Never");
    assert!(doc.contains_key("spec.template.spec.serviceAccountName"));
    assert!(
        text.contains("secretRef:"),
        "credentials come from a Secret"
    );
    // exec --shard auto over the plan's shard count (the comment's plan command says 256).
    assert!(text.contains("- exec") && text.contains("- --shard") && text.contains("- auto"));
    assert!(text.contains(&format!("--shards {completions}")));
    for bad in [
        "AKIA",
        "aws_secret_access_key",
        "secret_access_key:",
        "password:",
        "token:",
        "value: \"",
    ] {
        assert!(
            !text.contains(bad),
            "a literal secret ({bad:?}) in the manifest"
        );
    }
    for (k, v) in &doc {
        let lk = k.to_ascii_lowercase();
        if lk.ends_with(".value") {
            assert!(
                !(v.len() >= 20
                    && v.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "+/=".contains(c))),
                "{k} looks like a key: {v}"
            );
        }
    }
}

/// examples/tiered/slurm-tiered.sh on the real Slurm: its first step stages a dataset from Garage
/// onto the fast tier (a ready marker), the training stand-in reads it and writes DCP checkpoints
/// beside `drain --watch` (to Garage through a proxy that logs every request), the last step
/// stops the drain after a final pass and evicts. Afterwards: the data was read whole and is gone
/// from the fast tier, every complete checkpoint is at the destination byte for byte with its
/// receipt at both ends, and the checkpoint left without `.metadata` never left the fast tier;
/// every checkpoint file was uploaded whole (each PUT carried the file's final size).
#[test]
fn a_tiered_job_stages_trains_beside_a_drain_and_evicts() {
    let Some(s) = servers() else { return };
    if !slurm() {
        return;
    }
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
    let data = corpus(30, 4000);
    let prefix = unique("tiered-data");
    let dataset = format!("garage:{}/{prefix}", s.bucket_a);
    let direct = Store::open(&dataset, &remotes(&s)).unwrap();
    rt.block_on(async {
        for (k, d) in &data {
            let p = direct.path_of(k).unwrap();
            direct
                .inner
                .put(&p, PutPayload::from(d.clone()))
                .await
                .unwrap();
        }
    });
    let ckpt_prefix = unique("tiered-ckpt");
    let fast = work.path().join("fast");
    let out_file = work.path().join("tiered.out");
    let mut c = std::process::Command::new("sbatch");
    c.args(["--wait", "--output"])
        .arg(&out_file)
        .arg("--export=ALL")
        .arg(repo().join("examples/tiered/slurm-tiered.sh"))
        .env("DATASET", &dataset)
        .env("CKPT_DST", format!("viaproxy:{}/{ckpt_prefix}", s.bucket_b))
        .env("FAST_DIR", &fast)
        .env("MOVERCTL", env!("CARGO_BIN_EXE_moverctl"))
        .env("MOVERCTL_NO_PROBE", "1") // as every test but first_probe's
        .env("MOVERCTL_CONFIG", &conf)
        .env("TIERED_DIR", repo().join("examples/tiered"))
        .env(
            "TRAIN_ARGS",
            "--steps 4 --every 1.5 --leave-last-incomplete",
        )
        .env("DRAIN_EVERY", "2s")
        .env("MOVERCTL_RETRY_TIMEOUT", "20s")
        .current_dir(work.path())
        .stdout(std::process::Stdio::piped());
    let mut child = c.spawn().expect("sbatch runs");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    let _job = Cancel(
        line.trim()
            .rsplit(' ')
            .next()
            .unwrap_or_default()
            .to_string(),
    );
    let finished = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait(child, "the tiered job")
    }));
    let out = std::fs::read_to_string(&out_file).unwrap_or_default();
    assert!(finished.is_ok(), "the job failed:\n{out}");
    // Staged whole (the only node's share), read whole by the trainer, then evicted.
    let bytes: usize = data.values().map(Vec::len).sum();
    assert!(out.contains("staged node 0/1"), "{out}");
    assert!(
        out.contains(&format!(
            "data: read 30 files, {bytes} bytes (markers say 30 objects, {bytes} bytes)"
        )),
        "{out}"
    );
    for step in ["training exit 0", "final drain exit 0", "evict exit 0"] {
        assert!(out.contains(step), "{step}:\n{out}");
    }
    assert!(out.contains("evicted 30 files"), "{out}");
    assert!(
        !fast.join("data").exists(),
        "the staged data is gone: {out}"
    );
    // Every complete checkpoint is durable at the destination with its receipt, byte for byte.
    let dst = |step: &str| {
        Store::open(
            &format!("garage:{}/{ckpt_prefix}/{step}", s.bucket_b),
            &remotes(&s),
        )
        .unwrap()
    };
    let ckpt = fast.join("ckpt");
    for step in ["step-000100", "step-000200", "step-000300"] {
        assert!(
            out.contains(&format!("checkpoint {step} complete")),
            "{out}"
        );
        let at = dst(step);
        let keys = rt.block_on(super::keys_at(&at));
        let mut want = vec![
            ".metadata".to_string(),
            ".moverctl-receipt.json".to_string(),
        ];
        want.extend((0..4).map(|r| format!("__{r}_0.distcp")));
        assert_eq!(keys, want, "{step}");
        for k in &keys[2..] {
            let got = rt.block_on(async {
                at.inner
                    .get(&at.path_of(k).unwrap())
                    .await
                    .unwrap()
                    .bytes()
                    .await
                    .unwrap()
            });
            assert_eq!(
                got.to_vec(),
                std::fs::read(ckpt.join(step).join(k)).unwrap(),
                "{step}/{k}"
            );
        }
        let beside: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(ckpt.join(format!("{step}.moverctl-receipt.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(beside["objects"], 5, "{beside}");
    }
    // The save cut short (no .metadata) never reached the destination.
    assert!(
        out.contains("checkpoint step-000400 left incomplete"),
        "{out}"
    );
    assert!(rt.block_on(super::keys_at(&dst("step-000400"))).is_empty());
    assert!(!ckpt.join("step-000400.moverctl-receipt.json").exists());
    // No half-written file was ever uploaded: every PUT of a checkpoint file carried its final size.
    let mut puts = 0;
    for (method, target, headers) in proxy.log() {
        if method != "PUT" || !target.contains(".distcp") {
            continue;
        }
        assert!(!target.contains("step-000400"), "{target}");
        let path = target.split('?').next().unwrap();
        let (step, file) = path.rsplit_once('/').unwrap();
        let step = step.rsplit('/').next().unwrap();
        let size = std::fs::metadata(ckpt.join(step).join(file)).unwrap().len();
        let sent = headers
            .iter()
            .find(|(h, _)| h.eq_ignore_ascii_case("x-amz-decoded-content-length"))
            .or_else(|| {
                headers
                    .iter()
                    .find(|(h, _)| h.eq_ignore_ascii_case("content-length"))
            })
            .map(|(_, v)| v.parse::<u64>().unwrap());
        assert_eq!(sent, Some(size), "{target}");
        puts += 1;
    }
    assert!(puts >= 12, "{puts} checkpoint PUTs seen");
}

/// The tiered Kubernetes manifest: an Indexed Job whose init container stages pod K's share
/// (`--node $(JOB_COMPLETION_INDEX)/N` with N = completions = parallelism), whose native sidecar
/// drains the checkpoint folder and, in its preStop hook, makes a last pass and evicts, and whose
/// main container trains; all three share the fast volume; no secret in it.
#[test]
fn the_tiered_kubernetes_manifest_stages_drains_and_evicts() {
    let text = std::fs::read_to_string(repo().join("examples/tiered/tiered-job.yaml")).unwrap();
    let doc = yaml(&text);
    assert_eq!(doc.get("kind").map(String::as_str), Some("Job"));
    assert_eq!(doc["spec.completionMode"], "Indexed");
    let n: u32 = doc["spec.completions"].parse().unwrap();
    assert_eq!(
        doc["spec.parallelism"].parse::<u32>().unwrap(),
        n,
        "one pod per share"
    );
    assert_eq!(doc["spec.template.spec.restartPolicy"], "Never");
    // The init containers: stage first, then the drain as a native sidecar.
    let init = text.split("initContainers:").nth(1).unwrap();
    let init = init.split("\n      containers:").next().unwrap();
    let stage_at = init
        .find("- name: stage")
        .expect("an init container named stage");
    let drain_at = init.find("- name: drain").expect("a sidecar named drain");
    assert!(stage_at < drain_at, "stage runs before the sidecar starts");
    let (stage, drain) = (&init[stage_at..drain_at], &init[drain_at..]);
    assert!(
        stage.contains("- stage") && stage.contains("- /fast/data"),
        "{stage}"
    );
    assert!(
        stage.contains(&format!("- $(JOB_COMPLETION_INDEX)/{n}")),
        "{stage}"
    );
    assert!(
        drain.contains("restartPolicy: Always"),
        "a native sidecar: {drain}"
    );
    assert!(
        drain.contains("moverctl drain /fast/ckpt") && drain.contains("--watch"),
        "{drain}"
    );
    let pre_stop = drain.split("preStop:").nth(1).expect("a preStop hook");
    assert!(
        pre_stop.contains("moverctl drain /fast/ckpt"),
        "a last pass: {pre_stop}"
    );
    assert!(
        pre_stop.contains(&format!("--node \"$JOB_COMPLETION_INDEX/{n}\" --evict")),
        "{pre_stop}"
    );
    // The trainer is the main container and writes where the drain reads.
    let main = text.split("\n      containers:").nth(1).unwrap();
    assert!(
        main.contains("- name: train") && main.contains("--ckpt /fast/ckpt"),
        "{main}"
    );
    assert!(main.contains("--data /fast/data"), "{main}");
    assert_eq!(
        text.matches("mountPath: /fast }").count(),
        3,
        "one fast volume in all three"
    );
    assert!(
        text.contains("secretRef:") && doc.contains_key("spec.template.spec.serviceAccountName")
    );
    for bad in ["AKIA", "secret_access_key:", "password:", "token:"] {
        assert!(
            !text.contains(bad),
            "a literal secret ({bad:?}) in the manifest"
        );
    }
    // The stand-in the manifest runs is the one in the folder.
    assert!(repo().join("examples/tiered/train_standin.py").exists());
}

/// A small reader for the block-style YAML of the manifest: `path.to.key -> scalar` (list items
/// add nothing to the path). Enough to check fields; not a YAML parser.
fn yaml(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack: Vec<(usize, String)> = Vec::new();
    for line in text.lines() {
        let body = line.split(" #").next().unwrap_or(line);
        if body.trim().is_empty() || body.trim_start().starts_with('#') {
            continue;
        }
        let indent = body.len() - body.trim_start().len();
        let mut t = body.trim_start();
        let mut indent = indent;
        if let Some(rest) = t.strip_prefix("- ") {
            t = rest;
            indent += 2;
        }
        while stack.last().is_some_and(|(i, _)| *i >= indent) {
            stack.pop();
        }
        let Some((k, v)) = t.split_once(':') else {
            continue;
        };
        let path = stack
            .iter()
            .map(|(_, k)| k.as_str())
            .chain([k.trim()])
            .collect::<Vec<_>>()
            .join(".");
        let v = v.trim();
        if v.is_empty() {
            stack.push((indent, k.trim().to_string()));
        } else {
            out.insert(path, v.trim_matches('"').to_string());
        }
    }
    out
}
