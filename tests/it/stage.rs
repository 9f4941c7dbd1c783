//! `moverctl stage SRC FAST_DIR`: a dataset from Garage onto a local folder through the verified
//! engine; node shares that are disjoint and cover the set; a ready marker only after every object
//! verified (a failing GET leaves none); a rerun copies nothing; `--evict` removes only unchanged
//! staged files whose original the source still holds; `--wait-ready` times out, then succeeds.

use super::faults::proxy::{PFault, Proxy};
use super::{expect, moverctl, proxy_remote_toml, remotes, remotes_toml, servers, text, unique};
use moverctl::job::stage::Marker;
use moverctl::store::Store;
use object_store::{ObjectStoreExt, PutPayload};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A test's world: a Garage prefix seeded with `objects`, a remotes file (also naming a fault
/// proxy in front of Garage as `viaproxy`), and a scratch folder.
struct World {
    rt: tokio::runtime::Runtime,
    proxy: Proxy,
    work: tempfile::TempDir,
    conf: PathBuf,
    direct: Store,
    objects: BTreeMap<String, Vec<u8>>,
    /// `garage:BUCKET/PREFIX` and the same through the proxy.
    src: String,
    via_proxy: String,
}

fn corpus(n: usize) -> BTreeMap<String, Vec<u8>> {
    (0..n)
        .map(|i| {
            let data = (0..3000 + i * 517)
                .map(|j| ((i * 7 + j) % 253) as u8)
                .collect();
            (format!("shard-{}/sample-{i:03}.bin", i % 4), data)
        })
        .collect()
}

fn world(name: &str, objects: BTreeMap<String, Vec<u8>>) -> Option<World> {
    let s = servers()?;
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
    let prefix = unique(name);
    let src = format!("garage:{}/{prefix}", s.bucket_a);
    let direct = Store::open(&src, &remotes(&s)).unwrap();
    let w = World {
        rt,
        proxy,
        conf,
        direct,
        objects,
        via_proxy: format!("viaproxy:{}/{prefix}", s.bucket_a),
        src,
        work,
    };
    for (k, d) in &w.objects {
        w.put(k, d.clone());
    }
    Some(w)
}

impl World {
    fn put(&self, key: &str, data: Vec<u8>) {
        let path = self.direct.path_of(key).unwrap();
        self.rt
            .block_on(self.direct.inner.put(&path, PutPayload::from(data)))
            .unwrap();
    }

    fn delete(&self, key: &str) {
        let path = self.direct.path_of(key).unwrap();
        self.rt.block_on(self.direct.inner.delete(&path)).unwrap();
    }

    fn stage(&self, args: &[&str]) -> std::process::Output {
        moverctl()
            .arg("--config")
            .arg(&self.conf)
            .arg("stage")
            .args(args)
            .env("MOVERCTL_RETRY_TIMEOUT", "1s")
            .output()
            .unwrap()
    }

    fn dir(&self, name: &str) -> PathBuf {
        self.work.path().join(name)
    }
}

/// The files under `dir` (keys, `/`-separated) with their bytes, moverctl's own files left out.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, d: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let key = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                if !key.starts_with(".moverctl-staged") {
                    out.insert(key, std::fs::read(&p).unwrap());
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    if dir.exists() {
        walk(dir, dir, &mut out);
    }
    out
}

/// The `--json` line of a stage, checked against docs/json.md.
fn json_line(o: &std::process::Output) -> Value {
    let out = String::from_utf8_lossy(&o.stdout);
    let last = out.lines().last().unwrap_or_else(|| panic!("{}", text(o)));
    let v: Value = serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {}", text(o)));
    let all = super::json_schema::schemas();
    super::json_schema::validate(&v, &all).unwrap_or_else(|e| panic!("{e:?}: {v}"));
    v
}

/// The marker at `path`, checked against its schema in docs/json.md.
fn marker(path: &Path) -> Marker {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let all = super::json_schema::schemas();
    assert_eq!(
        super::json_schema::validate(&v, &all).unwrap_or_else(|e| panic!("{e:?}")),
        "moverctl.staged/1"
    );
    serde_json::from_value(v).unwrap()
}

#[test]
fn from_garage_into_a_folder_with_a_marker_and_a_rerun_copies_nothing() {
    let Some(w) = world("stage", corpus(24)) else {
        return;
    };
    let fast = w.dir("fast");
    let o = w.stage(&[&w.src, fast.to_str().unwrap(), "--json"]);
    expect(&o, 0);
    let v = json_line(&o);
    assert_eq!(
        (v["event"].as_str(), v["copied"].as_u64()),
        (Some("staged"), Some(24))
    );
    assert_eq!(files(&fast), w.objects, "every object, byte for byte");
    let m = marker(&fast.join(".moverctl-staged.json"));
    let bytes: u64 = w.objects.values().map(|d| d.len() as u64).sum();
    assert_eq!((m.objects, m.bytes, m.copied), (24, bytes, 24));
    assert_eq!((m.manifest_files, m.created_fast_dir), (24, true));
    assert!(m.node.is_none());
    // The rerun copies nothing, through the journal, and refreshes the marker.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let o = w.stage(&[&w.src, fast.to_str().unwrap(), "--json"]);
    expect(&o, 0);
    let v = json_line(&o);
    assert_eq!(
        (v["copied"].as_u64(), v["skipped"].as_u64()),
        (Some(0), Some(24))
    );
    let again = marker(&fast.join(".moverctl-staged.json"));
    assert_eq!((again.objects, again.copied), (24, 0));
    assert!(again.staged_at > m.staged_at, "refreshed: {again:?}");
    // The words say the same.
    let o = w.stage(&[&w.src, fast.to_str().unwrap()]);
    let out = text(&o);
    assert!(out.contains("0 copied (0 B), 24 already staged"), "{out}");
    assert!(out.contains("ready: "), "{out}");
}

#[test]
fn two_node_shares_are_disjoint_and_cover_the_set() {
    let Some(w) = world("stage-nodes", corpus(40)) else {
        return;
    };
    let mut shares = Vec::new();
    for k in 0..2 {
        // Each node's own NVMe folder.
        let fast = w.dir(&format!("node{k}"));
        let o = w.stage(&[&w.src, fast.to_str().unwrap(), "--node", &format!("{k}/2")]);
        expect(&o, 0);
        let m = marker(&fast.join(format!(".moverctl-staged-{k}-of-2.json")));
        assert!(!fast.join(".moverctl-staged.json").exists());
        shares.push((files(&fast), m));
    }
    let (a, b) = (&shares[0].0, &shares[1].0);
    let ka: BTreeSet<_> = a.keys().collect();
    let kb: BTreeSet<_> = b.keys().collect();
    assert!(
        ka.is_disjoint(&kb),
        "shares overlap: {:?}",
        ka.intersection(&kb)
    );
    let mut union = a.clone();
    union.extend(b.clone());
    assert_eq!(union, w.objects, "together they are the whole set");
    assert!(!a.is_empty() && !b.is_empty(), "{ka:?} / {kb:?}");
    // Balanced by bytes: neither share holds more than two thirds.
    let total: usize = w.objects.values().map(Vec::len).sum();
    for (f, _) in &shares {
        assert!(f.values().map(Vec::len).sum::<usize>() * 3 < total * 2);
    }
    let (m0, m1) = (&shares[0].1, &shares[1].1);
    let (n0, n1) = (m0.node.as_ref().unwrap(), m1.node.as_ref().unwrap());
    assert_eq!(n0.split, n1.split, "one split");
    assert_eq!(n0.end, n1.start, "adjacent ranges");
    assert_eq!((m0.objects + m1.objects) as usize, w.objects.len());

    // Both shares into one shared folder (a PFS mount): every node's marker, then the whole set.
    let shared = w.dir("pfs");
    for k in 0..2 {
        let o = w.stage(&[
            &w.src,
            shared.to_str().unwrap(),
            "--node",
            &format!("{k}/2"),
        ]);
        expect(&o, 0);
    }
    assert_eq!(files(&shared), w.objects);
    let o = moverctl()
        .args(["stage", "--wait-ready"])
        .arg(&shared)
        .args(["--nodes", "2", "--timeout", "5s", "--json"])
        .output()
        .unwrap();
    expect(&o, 0);
    let v = json_line(&o);
    assert_eq!(v["objects"].as_u64(), Some(40));
}

#[test]
fn a_failing_get_leaves_no_marker_and_the_next_stage_finishes() {
    let Some(w) = world("stage-fault", corpus(12)) else {
        return;
    };
    let fast = w.dir("fast");
    // Every GET of one object fails: the share is not whole, so no marker.
    w.proxy
        .add("GET", "sample-005.bin", "", PFault::ServerError, 1000);
    let o = w.stage(&[
        &w.via_proxy,
        fast.to_str().unwrap(),
        "--retries",
        "0",
        "--json",
    ]);
    assert!(!o.status.success(), "{}", text(&o));
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let v = json_line(&o);
    assert_eq!(v["event"], "not_ready");
    assert!(
        v["failed"]["keys"].to_string().contains("sample-005.bin"),
        "{v}"
    );
    assert!(!fast.join(".moverctl-staged.json").exists());
    assert!(!fast.join("shard-1/sample-005.bin").exists());
    // What was verified is in the manifest (evict may take it back), but nothing says ready.
    let o = moverctl()
        .args(["stage", "--wait-ready"])
        .arg(&fast)
        .args(["--timeout", "1s"])
        .output()
        .unwrap();
    expect(&o, 10);
    // The store answers again: only the missing object is copied, then the marker.
    w.proxy.clear();
    let o = w.stage(&[&w.via_proxy, fast.to_str().unwrap(), "--json"]);
    expect(&o, 0);
    assert_eq!(json_line(&o)["copied"].as_u64(), Some(1));
    assert_eq!(files(&fast), w.objects);
    assert_eq!(marker(&fast.join(".moverctl-staged.json")).objects, 12);
}

#[test]
fn evict_removes_only_unchanged_staged_files_whose_original_is_still_there() {
    let Some(w) = world("stage-evict", corpus(10)) else {
        return;
    };
    let fast = w.dir("fast");
    expect(&w.stage(&[&w.src, fast.to_str().unwrap()]), 0);
    let keys: Vec<String> = w.objects.keys().cloned().collect();
    // A file the user added, a staged file changed here, an original deleted and one rewritten.
    std::fs::write(fast.join("shard-0/notes.txt"), b"mine").unwrap();
    std::fs::write(fast.join(&keys[1]), b"edited on the fast tier").unwrap();
    w.delete(&keys[2]);
    w.put(&keys[3], b"a new version at the source".to_vec());
    let o = w.stage(&[&w.src, fast.to_str().unwrap(), "--evict", "--json"]);
    expect(&o, 3);
    let out = String::from_utf8_lossy(&o.stdout);
    let all = super::json_schema::schemas();
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for l in &lines {
        super::json_schema::validate(l, &all).unwrap_or_else(|e| panic!("{e:?}: {l}"));
    }
    let kept: BTreeMap<String, bool> = lines
        .iter()
        .filter(|l| l["event"] == "kept")
        .map(|l| {
            (
                l["key"].as_str().unwrap().to_string(),
                l["only_copy"].as_bool().unwrap(),
            )
        })
        .collect();
    let want: BTreeMap<String, bool> = [
        (keys[1].clone(), false),
        (keys[2].clone(), true),
        (keys[3].clone(), true),
    ]
    .into();
    assert_eq!(kept, want, "{out}");
    let summary = lines.last().unwrap();
    assert_eq!(summary["removed"].as_u64(), Some(7), "{summary}");
    assert_eq!(summary["others"].as_u64(), Some(1), "{summary}");
    // What is left: exactly the kept ones and the user's file; the marker is gone.
    let left: BTreeSet<String> = files(&fast).into_keys().collect();
    let mut expected: BTreeSet<String> = want.into_keys().collect();
    expected.insert("shard-0/notes.txt".into());
    assert_eq!(left, expected);
    assert_eq!(
        std::fs::read(fast.join(&keys[2])).unwrap(),
        w.objects[&keys[2]],
        "the only copy left is whole"
    );
    assert!(!fast.join(".moverctl-staged.json").exists());
    assert!(!fast.join(".moverctl-staged.files.jsonl").exists());
    // Folders emptied by the eviction are gone; those with a kept file stay.
    let with_kept: BTreeSet<&str> = left.iter().filter_map(|k| k.split('/').next()).collect();
    for d in ["shard-0", "shard-1", "shard-2", "shard-3"] {
        assert_eq!(fast.join(d).exists(), with_kept.contains(d), "{d}");
    }
    // Nothing staged any more: a second evict says so and removes nothing.
    let o = w.stage(&[&w.src, fast.to_str().unwrap(), "--evict"]);
    expect(&o, 2);
    assert!(text(&o).contains("nothing was removed"), "{}", text(&o));
    assert_eq!(files(&fast).len(), 4);
}

/// An evict that keeps nothing removes the folder a stage made, and exits 0.
#[test]
fn a_clean_evict_gives_the_whole_folder_back() {
    let work = tempfile::tempdir().unwrap();
    let (src, fast) = (work.path().join("src"), work.path().join("nvme/data"));
    for i in 0..5 {
        std::fs::create_dir_all(src.join(format!("d{i}"))).unwrap();
        std::fs::write(src.join(format!("d{i}/x.bin")), vec![i as u8; 1000 * i]).unwrap();
    }
    let run = |args: &[&str]| moverctl().arg("stage").args(args).output().unwrap();
    let (s, f) = (src.to_str().unwrap(), fast.to_str().unwrap());
    expect(&run(&[s, f]), 0);
    assert_eq!(files(&fast).len(), 5);
    let o = run(&[s, f, "--evict"]);
    expect(&o, 0);
    assert!(text(&o).contains("evicted 5 files"), "{}", text(&o));
    assert!(!fast.exists(), "the folder the stage made is gone");
    assert!(src.join("d4/x.bin").exists(), "the source is untouched");
}

#[test]
fn wait_ready_times_out_then_succeeds_once_the_stage_finishes() {
    let work = tempfile::tempdir().unwrap();
    let (src, fast) = (work.path().join("src"), work.path().join("fast"));
    std::fs::create_dir_all(&src).unwrap();
    for i in 0..8 {
        std::fs::write(src.join(format!("f{i}")), vec![7u8; 5000]).unwrap();
    }
    let wait = |timeout: &str, extra: &[&str]| {
        moverctl()
            .args(["stage", "--wait-ready"])
            .arg(&fast)
            .args(["--timeout", timeout])
            .args(extra)
            .spawn()
            .unwrap()
    };
    let t = std::time::Instant::now();
    let st = wait("1s", &[]).wait().unwrap();
    assert_eq!(st.code(), Some(10));
    assert!(t.elapsed() >= std::time::Duration::from_secs(1));
    // A job waits; the stage finishes meanwhile; the wait ends with 0.
    let waiting = wait("60s", &[]);
    let one_node = wait("60s", &["--node", "1/2"]);
    std::thread::sleep(std::time::Duration::from_millis(700));
    let (s, f) = (src.to_str().unwrap(), fast.to_str().unwrap());
    expect(&moverctl().args(["stage", s, f]).output().unwrap(), 0);
    let out = waiting.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    expect(
        &moverctl()
            .args(["stage", s, f, "--node", "1/2"])
            .output()
            .unwrap(),
        0,
    );
    assert_eq!(one_node.wait_with_output().unwrap().status.code(), Some(0));
    // The other node never staged: waiting for both times out, naming its marker.
    let o = moverctl()
        .args([
            "stage",
            "--wait-ready",
            f,
            "--nodes",
            "2",
            "--timeout",
            "1s",
        ])
        .output()
        .unwrap();
    expect(&o, 10);
    assert!(
        text(&o).contains(".moverctl-staged-0-of-2.json"),
        "{}",
        text(&o)
    );
}

/// `--plan`: the shares are the ranges `plan --shards N` fixed, the same ones `exec --shard`
/// runs; a node count the plan does not have is refused.
#[test]
fn node_shares_can_come_from_a_plans_split() {
    let Some(w) = world("stage-plan", corpus(30)) else {
        return;
    };
    let o = moverctl()
        .arg("--config")
        .arg(&w.conf)
        .args([
            "plan", "--from", "onprem", "--to", "onprem", "--shards", "3",
        ])
        .args([
            "--src",
            &w.src,
            "--dst",
            "/unused",
            "--save",
            "p",
            "--plans-dir",
        ])
        .arg(w.work.path())
        .output()
        .unwrap();
    expect(&o, 0);
    let plan = w.work.path().join("p.toml");
    let planned = moverctl::plan::file::PlanFile::load(&plan)
        .unwrap()
        .shards
        .unwrap();
    let mut union = BTreeMap::new();
    for k in 0..3u32 {
        let fast = w.dir(&format!("plan-node{k}"));
        let node = format!("{k}/3");
        let p = plan.to_str().unwrap();
        let o = w.stage(&[&w.src, fast.to_str().unwrap(), "--node", &node, "--plan", p]);
        expect(&o, 0);
        let m = marker(&fast.join(format!(".moverctl-staged-{k}-of-3.json")));
        let n = m.node.unwrap();
        let r = planned.range(k);
        assert_eq!(
            (n.start, n.end, n.split),
            (r.start, r.end, planned.id.clone())
        );
        let got = files(&fast);
        assert_eq!(m.objects as usize, got.len());
        for key in got.keys() {
            assert!(!union.contains_key(key), "{key} in two shares");
        }
        union.extend(got);
    }
    assert_eq!(union, w.objects);
    let fast = w.dir("plan-wrong");
    let p = plan.to_str().unwrap();
    let o = w.stage(&[&w.src, fast.to_str().unwrap(), "--node", "0/2", "--plan", p]);
    expect(&o, 2);
    assert!(text(&o).contains("3 shares, not 2"), "{}", text(&o));
}
