//! `moverctl sync` end to end, through the binary, against the real servers: requests of an
//! unchanged run counted on the wire, exact propagation of adds / changes / deletes, the delete
//! guards (copy errors, --max-delete, minimum storage duration), the run lock, the metrics file
//! and the storage class on write.

use super::faults::proxy::{PFault, Proxy};
use super::faults::{data, seed};
use super::{Servers, expect, remotes, remotes_toml, servers, summary, text, unique};
use moverctl::store::Store;
use object_store::{ObjectStoreExt, PutPayload};
use rust_decimal::Decimal;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A remotes file (the test servers' remotes plus `extra`) and a private state folder.
struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new(s: Option<&Servers>, extra: &str) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let base = s.map(remotes_toml).unwrap_or_default();
        std::fs::write(dir.path().join("remotes.toml"), format!("{base}\n{extra}")).unwrap();
        std::fs::create_dir(dir.path().join("state")).unwrap();
        Env { dir }
    }

    fn remotes(&self) -> moverctl::store::config::Remotes {
        let f = self.dir.path().join("remotes.toml");
        moverctl::store::config::Remotes::parse(
            "remotes.toml",
            &std::fs::read_to_string(f).unwrap(),
        )
        .unwrap()
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    fn cmd(&self, args: &[&str]) -> std::process::Command {
        let mut c = super::moverctl();
        c.arg("--config")
            .arg(self.dir.path().join("remotes.toml"))
            .arg("sync")
            .args(args)
            .env("MOVERCTL_STATE_DIR", self.state());
        c
    }

    fn sync(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    /// For tests whose proxy runs on this process's runtime: the child runs on a blocking thread.
    async fn sync_async(&self, args: &[&str]) -> Output {
        let mut c = self.cmd(args);
        tokio::task::spawn_blocking(move || c.output().unwrap())
            .await
            .unwrap()
    }
}

async fn keys(store: &Store) -> Vec<String> {
    super::keys_at(store).await
}

async fn put(store: &Store, key: &str, bytes: Vec<u8>) {
    store
        .inner
        .put(&store.path_of(key).unwrap(), PutPayload::from(bytes))
        .await
        .unwrap();
}

async fn remove(store: &Store, key: &str) {
    store
        .inner
        .delete(&store.path_of(key).unwrap())
        .await
        .unwrap();
}

fn upstream(s: &Servers) -> std::net::SocketAddr {
    s.s3_endpoint.trim_start_matches("http://").parse().unwrap()
}

/// A remote named `name` for the first Garage, through `endpoint`, priced as `provider`.
fn garage_remote(s: &Servers, name: &str, endpoint: &str, provider: &str) -> String {
    format!(
        r#"
[remotes.{name}]
type = "s3"
provider = "{provider}"
endpoint = "{endpoint}"
region = "{region}"
access_key_id_env = "MOVERCTL_TEST_S3_KEY_ID"
secret_access_key_env = "MOVERCTL_TEST_S3_SECRET"
"#,
        region = s.region
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unchanged_second_run_copies_nothing_and_only_lists() {
    let Some(s) = servers() else { return };
    let proxy = Proxy::start(upstream(&s)).await;
    let env = Env::new(
        Some(&s),
        &garage_remote(&s, "gp", &proxy.endpoint(), "onprem"),
    );
    let p = unique("sync-noop");
    let direct = Store::open(&format!("garage:{}/{p}", s.bucket_a), &remotes(&s)).unwrap();
    let objs = [
        ("a", 1000),
        ("b/c", 70_000),
        ("d", 0),
        ("e", 5 << 20),
        ("f", 12),
    ];
    seed(&direct, &objs).await;
    let (src, dst) = (
        format!("gp:{}/{p}", s.bucket_a),
        format!("gp:{}/{p}", s.bucket_b),
    );
    let first = env.sync_async(&[&src, &dst, "--json"]).await;
    expect(&first, 0);
    assert_eq!(summary(&first)["copied"]["objects"], 5);

    // Second run: the two listings (one page each) and nothing else, counted on the wire.
    let before = proxy.requests();
    let second = env.sync_async(&[&src, &dst, "--json"]).await;
    expect(&second, 0);
    assert_eq!(
        proxy.requests() - before,
        2,
        "{:?}",
        &proxy.log()[before as usize..]
    );
    let v = summary(&second);
    assert_eq!(v["copied"]["objects"], 0);
    assert_eq!(v["skipped"]["objects"], 5);
    assert_eq!(v["reasons"], serde_json::json!({"verified earlier": 5}));
    assert_eq!(
        v["requests"],
        serde_json::json!({"list_source": 1, "list_destination": 1, "get": 0, "put": 0, "head": 0, "delete": 0, "get_by_destination": 0})
    );

    // The default output says so in one line.
    let before = proxy.requests();
    let third = env.sync_async(&[&src, &dst]).await;
    expect(&third, 0);
    let out = String::from_utf8_lossy(&third.stdout);
    assert_eq!(out.lines().count(), 1, "{}", text(&third));
    assert!(
        out.contains("up to date") && out.contains("listing only"),
        "{out}"
    );
    assert_eq!(proxy.requests() - before, 2);

    // Without the journal, equal MD5 ETags in the listings still decide it: no HEAD per object.
    let fresh = env.dir.path().join("fresh-journal.sqlite");
    let before = proxy.requests();
    let fourth = env
        .sync_async(&[&src, &dst, "--json", "--journal", fresh.to_str().unwrap()])
        .await;
    expect(&fourth, 0);
    let v = summary(&fourth);
    assert_eq!(v["reasons"], serde_json::json!({"same md5": 5}), "{v}");
    assert_eq!(v["requests"]["head"], 0);
    assert_eq!(proxy.requests() - before, 2);
}

#[tokio::test]
async fn adds_changes_and_deletes_at_the_source_propagate_exactly() {
    let Some(s) = servers() else { return };
    let env = Env::new(Some(&s), "");
    let p = unique("sync-propagate");
    let r = remotes(&s);
    let (src_loc, dst_loc) = (
        format!("garage:{}/{p}", s.bucket_a),
        format!("garage:{}/{p}", s.bucket_b),
    );
    let src = Store::open(&src_loc, &r).unwrap();
    let dst = Store::open(&dst_loc, &r).unwrap();
    seed(
        &src,
        &[
            ("keep", 3000),
            ("same-size", 4000),
            ("grows", 100),
            ("gone", 50),
        ],
    )
    .await;
    expect(&env.sync(&[&src_loc, &dst_loc, "--delete"]), 0);
    super::copy::assert_same(&src, &dst).await;

    put(&src, "added", data("added", 777).to_vec()).await;
    let mut changed = data("same-size", 4000).to_vec();
    changed[17] ^= 0xff;
    put(&src, "same-size", changed).await;
    put(&src, "grows", data("grows", 200).to_vec()).await;
    remove(&src, "gone").await;

    let o = env.sync(&[
        &src_loc,
        &dst_loc,
        "--delete",
        "--max-delete",
        "100%",
        "--json",
    ]);
    expect(&o, 0);
    let v = summary(&o);
    assert_eq!(v["copied"]["objects"], 3, "{v}");
    assert_eq!(
        v["reasons"],
        serde_json::json!({"new": 1, "md5 differs": 1, "size differs": 1, "verified earlier": 1})
    );
    assert_eq!(v["delete"]["deleted"]["objects"], 1);
    assert_eq!(v["delete"]["deleted"]["bytes"], 50);
    assert_eq!(v["requests"]["delete"], 1);
    // Independently of moverctl: the same keys with the same bytes.
    super::copy::assert_same(&src, &dst).await;
    assert_eq!(keys(&dst).await, ["added", "grows", "keep", "same-size"]);
}

#[tokio::test]
async fn max_delete_trips_before_deleting_anything() {
    let Some(s) = servers() else { return };
    let env = Env::new(Some(&s), "");
    let p = unique("sync-maxdel");
    let r = remotes(&s);
    let (src_loc, dst_loc) = (
        format!("garage:{}/{p}", s.bucket_a),
        format!("garage:{}/{p}", s.bucket_b),
    );
    let src = Store::open(&src_loc, &r).unwrap();
    let dst = Store::open(&dst_loc, &r).unwrap();
    seed(&src, &[("a", 10), ("b", 20)]).await;
    seed(&dst, &[("x1", 1), ("x2", 2), ("x3", 3), ("x4", 4)]).await;

    // No --delete: copies, leaves the extras, says so.
    let o = env.sync(&[&src_loc, &dst_loc, "--json"]);
    expect(&o, 0);
    assert_eq!(summary(&o)["delete"]["verdict"], "not-asked");
    assert_eq!(keys(&dst).await.len(), 6);

    for limit in ["3", "50%"] {
        let o = env.sync(&[
            &src_loc,
            &dst_loc,
            "--delete",
            "--max-delete",
            limit,
            "--json",
        ]);
        expect(&o, 5);
        let v = summary(&o);
        assert_eq!(v["delete"]["verdict"], "guard-tripped", "{v}");
        assert_eq!(v["delete"]["candidates"]["objects"], 4);
        assert_eq!(v["delete"]["allowed"], 3);
        assert_eq!(v["delete"]["deleted"]["objects"], 0);
        assert_eq!(v["requests"]["delete"], 0);
        // The advice names overlap and wrong paths before a higher --max-delete (on the main
        // of 2026-12-02 it only advised raising it, which deleted the source of an overlap).
        let err = String::from_utf8_lossy(&o.stderr);
        let (overlap, wrong, raise) = (
            err.find("do not overlap"),
            err.find("the paths you meant"),
            err.find("a higher --max-delete"),
        );
        assert!(
            overlap.is_some()
                && wrong.is_some()
                && raise.is_some()
                && overlap < raise
                && wrong < raise,
            "{}",
            text(&o)
        );
        assert_eq!(keys(&dst).await.len(), 6, "nothing deleted");
    }
    // The default (10%) trips too, and the one-line summary says so (on the main of 2026-12-01
    // it said "up to date"), and a dry run shows what would go without deleting it.
    let o = env.sync(&[&src_loc, &dst_loc, "--delete"]);
    expect(&o, 5);
    let line = String::from_utf8_lossy(&o.stdout);
    assert!(
        line.contains("delete guard tripped: 4 to delete > 0 allowed")
            && !line.contains("up to date"),
        "{}",
        text(&o)
    );
    let o = env.sync(&[
        &src_loc,
        &dst_loc,
        "--delete",
        "--max-delete",
        "4",
        "--dry-run",
        "--json",
    ]);
    expect(&o, 0);
    let would: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "would_delete")
        .map(|v| v["key"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(would, ["x1", "x2", "x3", "x4"]);
    assert_eq!(keys(&dst).await.len(), 6);

    let o = env.sync(&[&src_loc, &dst_loc, "--delete", "--max-delete", "4"]);
    expect(&o, 0);
    assert_eq!(keys(&dst).await, ["a", "b"]);
}

#[tokio::test]
async fn young_objects_in_a_minimum_duration_class_are_kept_and_their_fee_reported() {
    let Some(s) = servers() else { return };
    // Wasabi's catalog entry (90-day minimum, 4 KB minimum object) on the local Garage.
    let env = Env::new(
        Some(&s),
        &garage_remote(&s, "wasabi_local", &s.s3_endpoint, "wasabi"),
    );
    let p = unique("sync-minage");
    let r = remotes(&s);
    let src_loc = format!("garage:{}/{p}", s.bucket_a);
    let dst_loc = format!("wasabi_local:{}/{p}", s.bucket_b);
    let src = Store::open(&src_loc, &r).unwrap();
    let (big, small) = (8u64 << 20, 1000u64);
    seed(&src, &[("big", big), ("small", small)]).await;
    expect(&env.sync(&[&src_loc, &dst_loc]), 0);
    remove(&src, "big").await;
    remove(&src, "small").await;

    let o = env.sync(&[
        &src_loc,
        &dst_loc,
        "--delete",
        "--max-delete",
        "100%",
        "--json",
    ]);
    expect(&o, 0);
    let v = summary(&o);
    let kept = &v["delete"]["kept_min_duration"];
    assert_eq!(kept["objects"], 2, "{v}");
    assert_eq!(kept["bytes"], big + small);
    assert_eq!(kept["class"], "wasabi/standard");
    assert_eq!(kept["days"], 90);
    assert_eq!(v["delete"]["deleted"]["objects"], 0);
    // 90 days (3 catalog months) at $7.99/TB-month on the billed size (the small one as 4 KB),
    // less the seconds since they were written: rounds to the same micro-dollars.
    let price: Decimal = "0.007802734375".parse().unwrap();
    let billed = Decimal::from(big + 4096) / Decimal::from(1_000_000_000u64);
    let want = (billed * price * Decimal::from(3)).round_dp(6);
    let got: Decimal = kept["early_deletion_fee"].to_string().parse().unwrap();
    assert!(
        (got - want).abs() <= Decimal::new(1, 6) && got > Decimal::ZERO,
        "fee {got}, expected about {want}"
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("90-day minimum"),
        "{}",
        text(&o)
    );
    let dst = Store::open(&dst_loc, &env.remotes()).unwrap();
    assert_eq!(keys(&dst).await, ["big", "small"]);

    // --allow-early-delete: deleted, and the fee is part of the run's cost (the source is empty
    // now, which the empty-source guard holds unless --allow-empty-source).
    let o = env.sync(&[
        &src_loc,
        &dst_loc,
        "--delete",
        "--max-delete",
        "100%",
        "--allow-early-delete",
        "--allow-empty-source",
        "--json",
    ]);
    expect(&o, 0);
    let v = summary(&o);
    assert_eq!(v["delete"]["deleted"]["objects"], 2);
    let early: Decimal = v["cost"]["early_deletion"].to_string().parse().unwrap();
    assert!((early - want).abs() <= Decimal::new(1, 6), "{v}");
    let total: Decimal = v["cost"]["total"].to_string().parse().unwrap();
    assert!(total >= early);
    assert!(keys(&dst).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_error_suppresses_every_delete() {
    let Some(s) = servers() else { return };
    let proxy = Proxy::start(upstream(&s)).await;
    let env = Env::new(
        Some(&s),
        &garage_remote(&s, "gp", &proxy.endpoint(), "onprem"),
    );
    let p = unique("sync-copyerr");
    let r = remotes(&s);
    let src = Store::open(&format!("garage:{}/{p}", s.bucket_a), &r).unwrap();
    let dst_loc = format!("garage:{}/{p}", s.bucket_b);
    let dst = Store::open(&dst_loc, &r).unwrap();
    let src_loc = format!("gp:{}/{p}", s.bucket_a);
    seed(&src, &[("one", 3000), ("two", 4000)]).await;
    expect(&env.sync_async(&[&src_loc, &dst_loc]).await, 0);
    put(&dst, "stale", vec![1, 2, 3]).await;
    put(&src, "two", data("two-v2", 4000).to_vec()).await;

    // The changed object's read comes back corrupt: caught by its MD5, and with no retries left
    // it fails; the stale key must survive.
    proxy.add("GET", &format!("{p}/two"), "", PFault::FlipResponse, 1);
    let args = [
        src_loc.as_str(),
        dst_loc.as_str(),
        "--delete",
        "--max-delete",
        "100%",
        "--retries",
        "0",
        "--json",
    ];
    let o = env.sync_async(&args).await;
    assert!(proxy.unspent().is_empty(), "{:?}", proxy.unspent());
    expect(&o, 3);
    let v = summary(&o);
    assert_eq!(v["failed"]["objects"], 1, "{v}");
    assert_eq!(v["delete"]["verdict"], "suppressed");
    assert_eq!(v["delete"]["candidates"]["objects"], 1);
    assert_eq!(v["requests"]["delete"], 0);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("never deletes"),
        "{}",
        text(&o)
    );
    assert_eq!(keys(&dst).await, ["one", "stale", "two"]);

    // The same run without the fault copies and deletes.
    let o = env.sync_async(&args).await;
    expect(&o, 0);
    assert_eq!(summary(&o)["delete"]["deleted"]["objects"], 1);
    assert_eq!(keys(&dst).await, ["one", "two"]);
    super::copy::assert_same(&src, &dst).await;
}

#[tokio::test]
async fn overlapping_runs_are_refused_and_a_killed_runs_lock_is_taken_over() {
    let Some(s) = servers() else { return };
    let env = Env::new(Some(&s), "");
    let src_dir = tempfile::tempdir().unwrap();
    // 4 MiB: the first run must still be running when it is killed, however loaded the
    // machine is (with 1 MiB it could finish first on a busy CI machine).
    std::fs::write(src_dir.path().join("slow.bin"), data("slow", 4 << 20)).unwrap();
    let src_loc = src_dir.path().to_str().unwrap().to_string();
    let p = unique("sync-lock");
    let dst_loc = format!("garage:{}/{p}", s.bucket_b);

    // A run held back to ~64 s by --bwlimit (it is killed long before).
    let mut first = env
        .cmd(&[&src_loc, &dst_loc, "--bwlimit", "64KiB/s"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lock = std::fs::read_dir(env.state())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "lock"));
    let lock = lock.unwrap_or_else(|| {
        // Not created yet: wait for it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            if let Some(p) = std::fs::read_dir(env.state())
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.extension().is_some_and(|e| e == "lock"))
            {
                break p;
            }
            assert!(std::time::Instant::now() < deadline, "no lock file");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    });
    wait_for(&lock, &format!("pid={}", first.id()));

    let second = env.sync(&[&src_loc, &dst_loc]);
    expect(&second, 6);
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(
        err.contains(&format!("pid {}", first.id()))
            && err.contains("started")
            && err.contains(&lock.display().to_string()),
        "{err}"
    );
    // An explicit --lock elsewhere is another lock.
    let other = env.dir.path().join("other.lock");
    let o = env.sync(&[
        &src_loc,
        &dst_loc,
        "--lock",
        other.to_str().unwrap(),
        "--dry-run",
    ]);
    expect(&o, 0);

    first.kill().unwrap(); // SIGKILL: no clean-up runs
    first.wait().unwrap();
    let third = env.sync(&[&src_loc, &dst_loc]);
    expect(&third, 0);
    let err = String::from_utf8_lossy(&third.stderr);
    assert!(
        err.contains("did not finish") && err.contains(&format!("pid {}", first.id())),
        "{}",
        text(&third)
    );
    let dst = Store::open(&dst_loc, &remotes(&s)).unwrap();
    let local = Store::open(&src_loc, &Default::default()).unwrap();
    super::copy::assert_same(&local, &dst).await;
    // A clean exit leaves an empty lock file: the next run has nothing to take over.
    assert_eq!(std::fs::read_to_string(&lock).unwrap(), "");
}

fn wait_for(path: &Path, needle: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !std::fs::read_to_string(path)
        .unwrap_or_default()
        .contains(needle)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "{} never held {needle}",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Samples of a Prometheus text file: name → (labels, value), checking HELP and TYPE lines.
fn parse_metrics(text: &str) -> Vec<(String, String, String)> {
    let mut typed = std::collections::BTreeSet::new();
    let mut helped = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            helped.insert(rest.split(' ').next().unwrap().to_string());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split(' ');
            let name = it.next().unwrap().to_string();
            assert_eq!(it.next(), Some("gauge"), "{line}");
            typed.insert(name);
        } else {
            let (series, value) = line.rsplit_once(' ').unwrap();
            let (name, labels) = series.split_once('{').unwrap();
            assert!(labels.ends_with('}'), "{line}");
            assert!(value.parse::<f64>().is_ok(), "{line}");
            assert!(
                typed.contains(name) && helped.contains(name),
                "{name} lacks HELP/TYPE"
            );
            out.push((name.to_string(), labels.to_string(), value.to_string()));
        }
    }
    out
}

fn metric<'a>(m: &'a [(String, String, String)], name: &str) -> &'a str {
    &m.iter()
        .find(|(n, _, _)| n == &format!("moverctl_sync_{name}"))
        .unwrap_or_else(|| panic!("no {name}"))
        .2
}

#[tokio::test]
async fn the_metrics_file_parses_and_matches_the_run() {
    let Some(s) = servers() else { return };
    // Priced as AWS S3, so the run has a cost to report.
    let env = Env::new(
        Some(&s),
        &garage_remote(&s, "garage_aws", &s.s3_endpoint, "aws"),
    );
    let src_dir = tempfile::tempdir().unwrap();
    for (k, size) in [("m1", 1000usize), ("m2", 2345)] {
        std::fs::write(src_dir.path().join(k), data(k, size as u64)).unwrap();
    }
    let src_loc = src_dir.path().to_str().unwrap().to_string();
    let p = unique("sync-metrics");
    let dst_loc = format!("garage_aws:{}/{p}", s.bucket_b);
    let mdir = env.dir.path().join("textfile");
    std::fs::create_dir(&mdir).unwrap();
    let mfile = mdir.join("moverctl.prom");
    let mf = mfile.to_str().unwrap();

    let o = env.sync(&[&src_loc, &dst_loc, "--json", "--metrics-file", mf]);
    expect(&o, 0);
    let v = summary(&o);
    let body = std::fs::read_to_string(&mfile).unwrap();
    let m = parse_metrics(&body);
    assert_eq!(
        metric(&m, "objects_copied"),
        v["copied"]["objects"].to_string()
    );
    assert_eq!(metric(&m, "objects_copied"), "2");
    assert_eq!(metric(&m, "bytes_copied"), "3345");
    assert_eq!(metric(&m, "bytes_copied"), v["copied"]["bytes"].to_string());
    assert_eq!(metric(&m, "objects_deleted"), "0");
    assert_eq!(metric(&m, "objects_failed"), "0");
    assert_eq!(metric(&m, "last_run_exit_code"), "0");
    assert_eq!(
        metric(&m, "estimated_cost_dollars")
            .parse::<Decimal>()
            .unwrap(),
        v["cost"]["total"].to_string().parse::<Decimal>().unwrap()
    );
    for (class, n) in m
        .iter()
        .filter(|(name, _, _)| name == "moverctl_sync_requests")
        .map(|(_, l, v)| {
            (
                l.split("class=\"").nth(1).unwrap().trim_end_matches("\"}"),
                v,
            )
        })
    {
        let key = match class {
            "list_source" | "list_destination" | "get" | "put" | "head" | "delete" => class,
            o => panic!("unexpected class {o}"),
        };
        assert_eq!(n, &v["requests"][key].to_string(), "{class}");
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let success: f64 = metric(&m, "last_success_timestamp_seconds")
        .parse()
        .unwrap();
    assert!((now - success).abs() < 120.0, "{success} vs {now}");
    let duration: f64 = metric(&m, "duration_seconds").parse().unwrap();
    assert!(duration > 0.0 && duration < 120.0);
    assert!(
        m.iter()
            .all(|(_, l, _)| l.contains(&format!("src=\"{src_loc}\""))
                && l.contains(&format!("dst=\"{dst_loc}/\""))),
        "{body}"
    );
    // No secret anywhere, and no temporary file left beside the metrics.
    for out in [&body, &String::from_utf8_lossy(&o.stdout).to_string()] {
        assert!(!out.contains(&s.secret) && !out.contains(&s.key_id));
    }
    assert_eq!(std::fs::read_dir(&mdir).unwrap().count(), 1);

    // A run that trips the guard: its own exit code, the last success's time kept.
    let dst = Store::open(&dst_loc, &env.remotes()).unwrap();
    put(&dst, "extra", vec![0; 10]).await;
    let o = env.sync(&[
        &src_loc,
        &dst_loc,
        "--delete",
        "--max-delete",
        "0",
        "--quiet",
        "--metrics-file",
        mf,
    ]);
    expect(&o, 5);
    assert!(o.stdout.is_empty(), "{}", text(&o));
    assert!(!o.stderr.is_empty(), "--quiet still reports a problem");
    let m2 = parse_metrics(&std::fs::read_to_string(&mfile).unwrap());
    assert_eq!(metric(&m2, "last_run_exit_code"), "5");
    assert_eq!(metric(&m2, "delete_guard_tripped"), "1");
    assert_eq!(metric(&m2, "delete_candidates"), "1");
    assert_eq!(
        metric(&m2, "last_success_timestamp_seconds"),
        metric(&m, "last_success_timestamp_seconds")
    );

    // --quiet on success prints nothing at all.
    let o = env.sync(&[&src_loc, &dst_loc, "--quiet", "--metrics-file", mf]);
    expect(&o, 0);
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{}", text(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_storage_class_is_checked_against_the_catalog_and_sent_on_write() {
    let Some(s) = servers() else { return };
    let proxy = Proxy::start(upstream(&s)).await;
    let env = Env::new(
        Some(&s),
        &garage_remote(&s, "gp_aws", &proxy.endpoint(), "aws"),
    );
    let src_dir = tempfile::tempdir().unwrap();
    std::fs::write(src_dir.path().join("cold.bin"), data("cold", 2000)).unwrap();
    let src_loc = src_dir.path().to_str().unwrap().to_string();
    let dst_loc = format!("gp_aws:{}/{}", s.bucket_b, unique("sync-class"));

    let o = env
        .sync_async(&[&src_loc, &dst_loc, "--storage-class", "nope"])
        .await;
    expect(&o, 2);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--storage-class nope") && err.contains("glacier-ir (GLACIER_IR)"),
        "{err}"
    );
    assert_eq!(proxy.requests(), 0, "nothing was done");

    let o = env
        .sync_async(&[
            &src_loc,
            &dst_loc,
            "--storage-class",
            "glacier-ir",
            "--json",
        ])
        .await;
    expect(&o, 0);
    assert_eq!(
        summary(&o)["cost"]["priced_as"]["destination"],
        "aws:us-east-1/glacier-ir"
    );
    let puts: Vec<String> = proxy
        .log()
        .into_iter()
        .filter(|(m, t, _)| m == "PUT" && t.contains("cold.bin"))
        .map(|(_, _, h)| {
            h.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("x-amz-storage-class"))
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(puts, ["GLACIER_IR"]);
}

#[tokio::test]
async fn an_azure_access_tier_is_stored_on_write() {
    let Some(s) = servers() else { return };
    let env = Env::new(
        Some(&s),
        &format!(
            r#"
[remotes.az_priced]
type = "azure"
provider = "azure"
endpoint = "{az}"
account = "{account}"
account_key_env = "MOVERCTL_TEST_AZURE_KEY"
"#,
            az = std::env::var("MOVERCTL_TEST_AZURE_ENDPOINT").unwrap(),
            account = std::env::var("MOVERCTL_TEST_AZURE_ACCOUNT").unwrap(),
        ),
    );
    let src_dir = tempfile::tempdir().unwrap();
    std::fs::write(src_dir.path().join("tiered.bin"), data("tiered", 3000)).unwrap();
    let src_loc = src_dir.path().to_str().unwrap().to_string();
    let p = unique("sync-tier");
    let dst_loc = format!("az_priced:{}/{p}", s.az_container);
    let o = env.sync(&[&src_loc, &dst_loc, "--storage-class", "cool"]);
    expect(&o, 0);

    // Read the tier back with a raw HEAD (object_store does not expose it).
    use object_store::signer::Signer;
    let az = object_store::azure::MicrosoftAzureBuilder::new()
        .with_account(std::env::var("MOVERCTL_TEST_AZURE_ACCOUNT").unwrap())
        .with_access_key(std::env::var("MOVERCTL_TEST_AZURE_KEY").unwrap())
        .with_container_name(&s.az_container)
        .with_endpoint(std::env::var("MOVERCTL_TEST_AZURE_ENDPOINT").unwrap())
        .with_allow_http(true)
        .build()
        .unwrap();
    let url = az
        .signed_url(
            reqwest::Method::GET,
            &object_store::path::Path::from(format!("{p}/tiered.bin")),
            std::time::Duration::from_secs(300),
        )
        .await
        .unwrap();
    let res = reqwest::Client::new().head(url).send().await.unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    assert_eq!(
        res.headers()
            .get("x-ms-access-tier")
            .map(|v| v.to_str().unwrap()),
        Some("Cool")
    );
}

#[test]
fn filters_keep_destination_keys_they_exclude_out_of_reach() {
    let env = Env::new(None, "");
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(a.path().join("data.bin"), b"x").unwrap();
    std::fs::create_dir_all(b.path().join("keep")).unwrap();
    std::fs::create_dir_all(b.path().join("logs")).unwrap();
    std::fs::write(b.path().join("keep/notes.txt"), b"mine").unwrap();
    std::fs::write(b.path().join("logs/old.log"), b"old").unwrap();
    let (sa, sb) = (a.path().to_str().unwrap(), b.path().to_str().unwrap());
    let o = env.sync(&[
        sa,
        sb,
        "--delete",
        "--max-delete",
        "100%",
        "--exclude",
        "keep/**",
        "--json",
    ]);
    expect(&o, 0);
    let v = summary(&o);
    assert_eq!(v["delete"]["deleted"]["objects"], 1, "{v}");
    assert_eq!(v["delete"]["protected_by_filters"], 1);
    assert!(b.path().join("keep/notes.txt").exists());
    assert!(!b.path().join("logs/old.log").exists());
    assert!(b.path().join("data.bin").exists());
}

/// A run that fails (exit 1: here the source bucket does not exist, so it cannot be listed)
/// still prints a `--json` summary with the error; on the main of 2026-12-01 it printed none.
#[tokio::test]
async fn a_failed_run_still_prints_a_json_summary() {
    let Some(s) = servers() else { return };
    let env = Env::new(Some(&s), "");
    let p = unique("sync-json-fail");
    let o = env.sync(&[
        &format!("garage:no-such-bucket-{p}/x"),
        &format!("garage:{}/{p}", s.bucket_b),
        "--delete",
        "--json",
    ]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    let v = summary(&o);
    assert_eq!(v["event"], "summary", "{v}");
    assert_eq!(
        v["exit_code"].as_u64(),
        o.status.code().map(|c| c as u64),
        "{v}"
    );
    assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{v}");
    assert_eq!(v["delete"]["deleted"]["objects"], 0);
}

/// The delete guard "nothing is deleted after a copy phase with a failed object" belongs to the
/// engine: a library caller of `transfer::sync::run` gets it with no flag handling of its own
/// (before, the value it depends on was computed in `cli/sync_cmd.rs`).
#[tokio::test]
async fn the_engine_itself_suppresses_deletes_after_a_failed_copy() {
    use super::faults::wrapper::{Fault, Op, Plan, faulty};
    use moverctl::limit::Limits;
    use moverctl::transfer::Run;
    use moverctl::transfer::sync::{DeletePolicy, MaxDelete, Verdict};
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    let none = moverctl::store::config::Remotes::default();
    let src = Store::open("memory://guard/", &none).unwrap();
    let dst = Store::open("memory://guard/", &none).unwrap();
    seed(&src, &[("a", 10), ("b", 20)]).await;
    seed(&dst, &[("stale", 5)]).await;
    let policy = || DeletePolicy {
        delete: true,
        max_delete: MaxDelete::Percent(Decimal::from(100)),
        allow_empty_source: false,
        allow_early_delete: false,
        min_duration: None,
        now: chrono::Utc::now(),
        dry_run: false,
        concurrency: 4,
    };
    let run = |src: Store| {
        let mut opts = super::copy::options();
        opts.retries = 0;
        Run {
            src,
            dst: dst.clone(),
            opts,
            limits: Limits::unlimited(),
            journal: None,
            stop: Arc::new(AtomicBool::new(false)),
        }
    };
    let plan = Plan::new();
    plan.add("b", Op::Get, Fault::Unavailable, 0, 100);
    let (report, deletes) = moverctl::transfer::sync::run(
        run(faulty(&src, &plan)),
        policy(),
        None,
        |_| {},
        |_, _, _| {},
    )
    .await
    .unwrap();
    assert_eq!(report.failed.len(), 1);
    assert_eq!(deletes.verdict, Some(Verdict::Suppressed));
    assert_eq!(super::keys_at(&dst).await, ["a", "stale"]);
    let (report, deletes) =
        moverctl::transfer::sync::run(run(src.clone()), policy(), None, |_| {}, |_, _, _| {})
            .await
            .unwrap();
    assert!(report.failed.is_empty());
    assert_eq!(deletes.verdict, Some(Verdict::Deleted));
    assert_eq!(super::keys_at(&dst).await, ["a", "b"]);
}

/// Rewrites `key` at `store` in place as another tool would: same size, one byte changed,
/// moverctl's metadata copied over.
async fn rewrite_in_place(store: &Store, key: &str) {
    let path = store.path_of(key).unwrap();
    let got = store.inner.get(&path).await.unwrap();
    let attrs = got.attributes.clone();
    assert!(
        attrs
            .get(&object_store::Attribute::Metadata(
                moverctl::checksum::META_SRC_ETAG.into()
            ))
            .is_some(),
        "moverctl's metadata is there to copy over"
    );
    let mut bytes = got.bytes().await.unwrap().to_vec();
    bytes[0] ^= 0xff;
    let opts = object_store::PutOptions {
        attributes: attrs,
        ..Default::default()
    };
    store
        .inner
        .put_opts(&path, PutPayload::from(bytes), opts)
        .await
        .unwrap();
}

/// On the main of 2026-12-02 a destination object another tool rewrote in place (same size, one
/// byte changed, moverctl's metadata copied over) stayed wrong: sync and copy skipped it as
/// `same source version` (exit 0), although the journal held the destination ETag of the
/// verified write and the listing showed another one.
#[tokio::test]
async fn a_destination_changed_behind_moverctls_back_is_copied_again() {
    let Some(s) = servers() else { return };
    let env = Env::new(Some(&s), "");
    let r = env.remotes();
    let p = unique("changed-at-dst");
    let src_loc = format!("garage:{}/{p}", s.bucket_a);
    let src = Store::open(&src_loc, &r).unwrap();
    seed(&src, &[("a", 3000), ("b", 40)]).await;
    // Azure's ETags are opaque (no MD5 row applies); Garage's are MD5s.
    for dst_loc in [
        format!("azurite:{}/{p}", s.az_container),
        format!("garage2:{}/{p}", s.bucket_c),
    ] {
        let dst = Store::open(&dst_loc, &r).unwrap();
        expect(&env.sync(&[&src_loc, &dst_loc, "--delete"]), 0);
        for cmd in ["sync", "copy"] {
            rewrite_in_place(&dst, "a").await;
            let mut c = super::moverctl();
            c.arg("--config")
                .arg(env.dir.path().join("remotes.toml"))
                .args([cmd, &src_loc, &dst_loc, "--json"])
                .env("MOVERCTL_STATE_DIR", env.state());
            let o = c.output().unwrap();
            expect(&o, 0);
            let v = summary(&o);
            assert_eq!(v["copied"]["objects"], 1, "{dst_loc} ({cmd}): {v}");
            assert_eq!(
                v["reasons"]["changed at destination"], 1,
                "{dst_loc} {cmd}: {v}"
            );
            let back = dst.inner.get(&dst.path_of("a").unwrap()).await.unwrap();
            assert_eq!(
                back.bytes().await.unwrap(),
                data("a", 3000),
                "{dst_loc} {cmd}: repaired"
            );
        }
        // And then it is verified earlier again: nothing copied.
        let o = env.sync(&[&src_loc, &dst_loc, "--json"]);
        expect(&o, 0);
        assert_eq!(summary(&o)["copied"]["objects"], 0, "{dst_loc}");
    }
}

/// On the main of 2026-12-02 `back\slash` synced into Azure (stored as `back/slash`) exited 0
/// every run; runs 2 and 4 copied it again and deleted the copy they had just written. Now a key
/// the destination would rewrite is refused by name before any write (exit 3, nothing deleted),
/// on every run; into S3, which keeps such keys, the same set is copied once and then unchanged.
#[tokio::test]
async fn keys_a_destination_would_rewrite_are_refused_and_repeated_syncs_are_idempotent() {
    let Some(s) = servers() else { return };
    let env = Env::new(Some(&s), "");
    let r = env.remotes();
    let src_dir = tempfile::tempdir().unwrap();
    for name in ["back\\slash", "plain", "dot."] {
        std::fs::write(src_dir.path().join(name), name).unwrap();
    }
    let src_loc = src_dir.path().display().to_string();
    let p = unique("odd-keys");
    let az = format!("azurite:{}/{p}", s.az_container);
    let az_store = Store::open(&az, &r).unwrap();
    for run in 1..=4 {
        let o = env.sync(&[&src_loc, &az, "--delete", "--max-delete", "100%", "--json"]);
        expect(&o, 3);
        let v = summary(&o);
        let refused: Vec<&str> = v["refused"]["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["key"].as_str().unwrap())
            .collect();
        assert_eq!(refused, ["back\\slash", "dot."], "run {run}: {v}");
        assert_eq!(v["delete"]["deleted"]["objects"], 0, "run {run}: {v}");
        assert_eq!(keys(&az_store).await, ["plain"], "run {run}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("turned into"), "{err}");
    }
    let s3 = format!("garage:{}/{p}", s.bucket_a);
    let s3_store = Store::open(&s3, &r).unwrap();
    for run in 1..=3 {
        let o = env.sync(&[&src_loc, &s3, "--delete", "--max-delete", "100%", "--json"]);
        expect(&o, 0);
        let v = summary(&o);
        assert_eq!(
            v["copied"]["objects"],
            if run == 1 { 3 } else { 0 },
            "run {run}: {v}"
        );
        assert_eq!(v["delete"]["deleted"]["objects"], 0, "run {run}: {v}");
        assert_eq!(
            keys(&s3_store).await,
            ["back\\slash", "dot.", "plain"],
            "run {run}"
        );
    }
    // S3 -> Azure: the same refusal from a cloud source.
    for _ in 1..=3 {
        let o = env.sync(&[&s3, &az, "--delete", "--max-delete", "100%", "--json"]);
        expect(&o, 3);
        assert_eq!(keys(&az_store).await, ["plain"]);
    }
}
