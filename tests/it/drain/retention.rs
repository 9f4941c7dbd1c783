//! `drain --keep-remote M --keep-every K`: which checkpoints survive at the destination (a local
//! folder and the S3 server), never one without a newer durable one, never a folder without
//! moverctl's receipt or marker, minimum storage durations held and priced, a kill -9 mid-delete
//! finished by the next pass, and the delete guards of `sync` stopping a pass.

use super::super::faults::proxy::{PFault, Proxy};
use super::super::{moverctl, proxy_remote_toml, remotes_toml, servers, text, unique};
use super::{dcp, write};
use moverctl::store::Store;
use moverctl::store::config::Remotes;
use std::path::Path;

const RECEIPT: &str = ".moverctl-receipt.json";
const MARKER: &str = ".moverctl-deleting";

fn run(conf: Option<&Path>, ckpt: &Path, dst: &str, extra: &[&str]) -> std::process::Output {
    let mut c = moverctl();
    if let Some(conf) = conf {
        c.arg("--config").arg(conf);
    }
    c.arg("drain")
        .arg(ckpt)
        .arg(dst)
        .args(extra)
        .output()
        .unwrap()
}

/// Every key at `loc`, in order.
fn keys(loc: &str, remotes: &Remotes) -> Vec<String> {
    let store = Store::open(loc, remotes).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(super::super::keys_at(&store))
}

/// The checkpoint folders at `loc` and whether each holds a receipt.
fn folders(loc: &str, remotes: &Remotes) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    for k in keys(loc, remotes) {
        let Some((name, rest)) = k.split_once('/') else {
            continue;
        };
        if out.last().is_none_or(|l| l.0 != name) {
            out.push((name.to_string(), false));
        }
        if rest == RECEIPT {
            out.last_mut().unwrap().1 = true;
        }
    }
    out
}

fn put(loc: &str, remotes: &Remotes, key: &str, bytes: &[u8]) {
    use object_store::ObjectStoreExt;
    let store = Store::open_destination(loc, remotes).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let path = store.path_of(key).unwrap();
    rt.block_on(store.inner.put(&path, bytes.to_vec().into()))
        .unwrap();
}

fn del(loc: &str, remotes: &Remotes, key: &str) {
    use object_store::ObjectStoreExt;
    let store = Store::open(loc, remotes).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(store.inner.delete(&store.path_of(key).unwrap()))
        .unwrap();
}

fn checkpoints(ckpt: &Path, names: &[&str]) {
    for name in names {
        dcp(ckpt, name, 2, true);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Six checkpoints, `--keep-remote 2 --keep-every 30`: step-60 and step-50 (the newest two) and
/// step-30 survive; a folder drained by hand and one whose receipt vanished are not touched.
#[test]
fn keep_remote_and_keep_every_leave_exactly_the_chosen_ones() {
    let work = tempfile::tempdir().unwrap();
    let mut places = vec![(None, work.path().join("durable").display().to_string())];
    let s = servers();
    let conf = work.path().join("remotes.toml");
    if let Some(s) = &s {
        std::fs::write(&conf, remotes_toml(s)).unwrap();
        places.push((
            Some(conf.as_path()),
            format!("garage:{}/{}", s.bucket_a, unique("retain")),
        ));
    }
    let remotes = s.as_ref().map(super::super::remotes).unwrap_or_default();
    for (i, (conf, dst)) in places.iter().enumerate() {
        let ckpt = work.path().join(format!("ckpt{i}"));
        put(dst, &remotes, "by-hand/weights.bin", b"not moverctl's");
        put(dst, &remotes, "step-5/__0_0.distcp", b"its receipt is gone");
        checkpoints(
            &ckpt,
            &[
                "step-10", "step-20", "step-30", "step-40", "step-50", "step-60",
            ],
        );
        let flags = [
            "--keep-remote",
            "2",
            "--keep-every",
            "30",
            "--max-delete",
            "100%",
        ];
        let o = run(*conf, &ckpt, dst, &[&flags[..], &["--json"]].concat());
        assert!(o.status.success(), "{dst}: {}", text(&o));
        let all = super::super::json_schema::schemas();
        let mut events = Vec::new();
        for l in String::from_utf8(o.stdout.clone()).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            super::super::json_schema::validate(&v, &all).unwrap_or_else(|e| panic!("{e:?}"));
            events.push((v["event"].as_str().unwrap().to_string(), v));
        }
        let retired: Vec<&str> = events
            .iter()
            .filter(|(e, _)| e == "retired")
            .map(|(_, v)| v["checkpoint"].as_str().unwrap())
            .collect();
        assert_eq!(
            retired,
            ["step-40", "step-20", "step-10"],
            "{dst}: {}",
            text(&o)
        );
        let summary = &events.last().unwrap().1["retention"];
        assert_eq!(summary["retired"], 3, "{summary}");
        assert_eq!(summary["verdict"], "deleted", "{summary}");
        let want: Vec<(String, bool)> = [
            ("by-hand", false),
            ("step-30", true),
            ("step-5", false),
            ("step-50", true),
            ("step-60", true),
        ]
        .iter()
        .map(|(n, r)| (n.to_string(), *r))
        .collect();
        assert_eq!(folders(dst, &remotes), want, "{dst}");
        // Nothing of a retired checkpoint is left, not even its marker.
        assert!(
            !keys(dst, &remotes)
                .iter()
                .any(|k| k.starts_with("step-40/"))
        );
        // The fast tier is untouched (no --keep-local), and the next pass changes nothing.
        assert!(ckpt.join("step-10").exists());
        let o = run(*conf, &ckpt, dst, &flags);
        assert!(o.status.success(), "{}", text(&o));
        assert!(!text(&o).contains("retired "), "{}", text(&o));
        assert!(
            text(&o).contains("kept remote step-30: step 30 is a multiple of --keep-every 30"),
            "{}",
            text(&o)
        );
        assert_eq!(folders(dst, &remotes), want, "{dst}");
    }
}

/// A checkpoint whose newer ones are not durable (their receipts no longer describe what the
/// destination holds) stays; a stale marker beside a receipt is decided again.
#[test]
fn a_checkpoint_without_a_newer_durable_one_is_never_deleted() {
    let work = tempfile::tempdir().unwrap();
    let (ckpt, dstp) = (work.path().join("ckpt"), work.path().join("durable"));
    let dst = dstp.to_str().unwrap();
    checkpoints(&ckpt, &["step-1", "step-2", "step-3"]);
    let o = run(None, &ckpt, dst, &[]);
    assert!(o.status.success(), "{}", text(&o));
    // The destination loses a file of step-2 and step-3: neither is durable now.
    let saved = std::fs::read(dstp.join("step-3/__1_0.distcp")).unwrap();
    std::fs::remove_file(dstp.join("step-3/__1_0.distcp")).unwrap();
    std::fs::remove_file(dstp.join("step-2/__1_0.distcp")).unwrap();
    let flags = ["--keep-remote", "1", "--max-delete", "100%"];
    let o = run(None, &ckpt, dst, &flags);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(!out.contains("retired "), "{out}");
    assert!(
        out.contains("kept remote step-1: no newer durable checkpoint at the destination"),
        "{out}"
    );
    assert!(dstp.join("step-1/.moverctl-receipt.json").exists());
    // step-3 is whole again, and a pass killed before it removed step-3's receipt left a marker.
    std::fs::write(dstp.join("step-3/__1_0.distcp"), &saved).unwrap();
    std::fs::write(dstp.join("step-3").join(MARKER), b"{}").unwrap();
    let o = run(None, &ckpt, dst, &flags);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("retired     step-2") && out.contains("retired     step-1"),
        "{out}"
    );
    assert!(!dstp.join("step-2").exists() && !dstp.join("step-1").exists());
    assert!(dstp.join("step-3").join(RECEIPT).exists());
    assert!(
        !dstp.join("step-3").join(MARKER).exists(),
        "the stale marker goes"
    );
}

/// With --keep-local, the fast tier never holds a checkpoint whose durable copy went: the
/// destination keeps what the fast tier still holds; pruning goes first, retention next pass.
#[test]
fn keep_local_never_prunes_what_retention_retired() {
    let work = tempfile::tempdir().unwrap();
    let (ckpt, dstp) = (work.path().join("ckpt"), work.path().join("durable"));
    let dst = dstp.to_str().unwrap();
    checkpoints(&ckpt, &["step-1", "step-2", "step-3"]);
    let flags = [
        "--keep-local",
        "1",
        "--keep-remote",
        "1",
        "--max-delete",
        "100%",
    ];
    let o = run(None, &ckpt, dst, &flags);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("kept remote step-2: still on the fast tier"),
        "{out}"
    );
    assert!(
        out.contains("pruned      step-2") && out.contains("pruned      step-1"),
        "{out}"
    );
    for n in ["step-1", "step-2", "step-3"] {
        assert!(dstp.join(n).join(RECEIPT).exists(), "{n}: {out}");
    }
    let o = run(None, &ckpt, dst, &flags);
    let out = text(&o);
    assert!(
        out.contains("retired     step-2") && out.contains("retired     step-1"),
        "{out}"
    );
    assert!(ckpt.join("step-3").exists() && dstp.join("step-3").join(RECEIPT).exists());
    assert!(!dstp.join("step-1").exists() && !dstp.join("step-2").exists());
}

/// `--max-delete` trips: nothing is deleted, no marker written, no receipt removed, exit 5.
#[test]
fn the_max_delete_guard_stops_every_delete_of_the_pass() {
    let work = tempfile::tempdir().unwrap();
    let (ckpt, dstp) = (work.path().join("ckpt"), work.path().join("durable"));
    let dst = dstp.to_str().unwrap();
    checkpoints(&ckpt, &["step-1", "step-2", "step-3", "step-4"]);
    let o = run(
        None,
        &ckpt,
        dst,
        &["--keep-remote", "1", "--max-delete", "5"],
    );
    let out = text(&o);
    assert_eq!(o.status.code(), Some(5), "{out}");
    assert!(
        out.contains("not retired step-1: --max-delete 5 allows 5 of the 16 objects at the destination; retiring would delete 9"),
        "{out}"
    );
    for n in ["step-1", "step-2", "step-3", "step-4"] {
        assert!(dstp.join(n).join(RECEIPT).exists(), "{n}");
        assert!(!dstp.join(n).join(MARKER).exists(), "{n}");
        assert!(dstp.join(n).join("__0_0.distcp").exists(), "{n}");
    }
    // Within the default (50%): deleted.
    let o = run(None, &ckpt, dst, &["--keep-remote", "3"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!dstp.join("step-1").exists(), "{}", text(&o));
}

/// A Wasabi-class destination (90-day minimum): young checkpoints are kept with the fee deleting
/// them would cost, then deleted with --allow-early-delete and the fee incurred reported.
#[test]
fn minimum_storage_duration_holds_young_checkpoints_and_prices_them() {
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
    let ckpt = work.path().join("ckpt");
    checkpoints(&ckpt, &["step-1", "step-2"]);
    // 24 MB more in step-1, so that its fee shows in micro-dollars (the JSON's precision).
    write(&ckpt.join("step-1/extra.bin"), &vec![7u8; 24_000_000]);
    write(&ckpt.join("step-1/.metadata"), b"dcp metadata");
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(&ckpt.join("step-2/.metadata"), b"dcp metadata");
    let dst = format!("wasabi:{}/{}", s.bucket_b, unique("retain-min"));
    let flags = ["--keep-remote", "1", "--max-delete", "100%", "--json"];
    let start = chrono::Utc::now();
    let o = run(Some(&conf), &ckpt, &dst, &flags);
    assert!(o.status.success(), "{}", text(&o));
    let lines: Vec<serde_json::Value> = String::from_utf8(o.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kept = lines
        .iter()
        .find(|v| v["event"] == "kept-remote" && v["checkpoint"] == "step-1")
        .unwrap_or_else(|| panic!("{}", text(&o)));
    assert!(
        kept["reason"]
            .as_str()
            .unwrap()
            .contains("90-day minimum storage duration")
    );
    let fee: rust_decimal::Decimal = kept["early_deletion_fee"].to_string().parse().unwrap();
    // The fee is the rest of 90 days on step-1's three objects, at Wasabi's price, exactly as
    // the catalog's class prices it: between what it costs at write time and a minute later.
    let catalog = moverctl::catalog::Catalog::load(None).unwrap();
    let p = catalog.get("wasabi").unwrap();
    let region = Some(s.region.as_str());
    let m = moverctl::job::pricing::SidePricing::new(p, region, None)
        .min_duration()
        .unwrap();
    let sizes: Vec<u64> = std::fs::read_dir(ckpt.join("step-1"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .collect();
    let bound = |age: i64| -> rust_decimal::Decimal {
        let now = start + chrono::Duration::seconds(age);
        let exact: rust_decimal::Decimal = sizes
            .iter()
            .map(|b| m.early_fee(*b, start, now).unwrap().0)
            .sum();
        moverctl::money::Usd(exact).micros()
    };
    let micro = rust_decimal::Decimal::new(1, 6);
    assert!(fee > rust_decimal::Decimal::ZERO, "{fee}");
    assert!(
        fee <= bound(-5) + micro && fee + micro >= bound(120),
        "{fee} not within [{}, {}]",
        bound(120),
        bound(-5)
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("until it has passed"),
        "{}",
        text(&o)
    );
    let remotes = Remotes::load(Some(&conf)).unwrap();
    assert_eq!(folders(&dst, &remotes).len(), 2);
    // With --allow-early-delete: deleted, and the fee incurred reported.
    let o = run(
        Some(&conf),
        &ckpt,
        &dst,
        &[&flags[..], &["--allow-early-delete"]].concat(),
    );
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8(o.stdout.clone()).unwrap();
    let retired: serde_json::Value = stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["event"] == "retired")
        .unwrap_or_else(|| panic!("{}", text(&o)));
    let paid: rust_decimal::Decimal = retired["early_deletion_fee"].to_string().parse().unwrap();
    assert!(
        paid > rust_decimal::Decimal::ZERO && paid <= fee,
        "{paid} vs {fee}"
    );
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(
        last["retention"]["early_deletion_fees"],
        retired["early_deletion_fee"]
    );
    assert_eq!(folders(&dst, &remotes), [("step-2".to_string(), true)]);
}

/// Through the fault proxy: a listing out of order deletes nothing; a pass killed (SIGKILL)
/// while a delete is being retried leaves no receipt for the half-deleted checkpoint, and the
/// next pass finishes it; nothing durable is lost.
#[test]
fn a_pass_killed_mid_delete_is_finished_by_the_next_and_odd_listings_delete_nothing() {
    let Some(s) = servers() else { return };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let proxy = rt.block_on(Proxy::start(super::super::s3_upstream(&s)));
    let work = tempfile::tempdir().unwrap();
    let conf = work.path().join("remotes.toml");
    let toml = format!(
        "{}\n{}",
        remotes_toml(&s),
        proxy_remote_toml(&s, &proxy.endpoint())
    );
    std::fs::write(&conf, toml).unwrap();
    let ckpt = work.path().join("ckpt");
    checkpoints(&ckpt, &["step-1", "step-2", "step-3"]);
    let prefix = unique("retain-kill");
    let dst = format!("viaproxy:{}/{prefix}", s.bucket_a);
    let direct = format!("garage:{}/{prefix}", s.bucket_a);
    let remotes = super::super::remotes(&s);
    let o = run(Some(&conf), &ckpt, &dst, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let flags = ["--keep-remote", "1", "--max-delete", "100%"];
    // A listing with two keys swapped: retention stops before deleting anything.
    proxy.add("GET", "", "list-type=2", PFault::ListUnsorted, 100);
    let o = run(Some(&conf), &ckpt, &dst, &flags);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("nothing was deleted"), "{}", text(&o));
    assert_eq!(folders(&direct, &remotes).iter().filter(|f| f.1).count(), 3);
    proxy.clear();
    // The S3 client deletes with DeleteObjects (POST ?delete): the two receipts' and one object's
    // go through, every later one fails (and is retried); the pass is killed then.
    proxy.add_after("POST", "", "delete", PFault::ServerError, 3, 10_000);
    let mut child = moverctl()
        .args(["--config", conf.to_str().unwrap(), "drain"])
        .arg(&ckpt)
        .arg(&dst)
        .args(flags)
        .env("MOVERCTL_RETRY_TIMEOUT", "120s")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !proxy.hits().iter().any(|h| h.0 == "POST") && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let left = keys(&direct, &remotes);
    for n in ["step-1", "step-2"] {
        assert!(left.contains(&format!("{n}/{MARKER}")), "{left:?}");
        assert!(
            !left.contains(&format!("{n}/{RECEIPT}")),
            "no receipt that lies: {left:?}"
        );
    }
    let data = |k: &&String| !k.starts_with("step-3/") && !k.ends_with(MARKER);
    assert_eq!(
        left.iter().filter(data).count(),
        5,
        "one of six deleted: {left:?}"
    );
    assert!(left.contains(&format!("step-3/{RECEIPT}")), "{left:?}");
    for n in ["step-1", "step-2", "step-3"] {
        assert!(
            ckpt.join(n).join(".metadata").exists(),
            "the fast tier keeps {n}"
        );
    }
    // The store answers again: the next pass finishes step-1 and nothing durable is lost.
    proxy.clear();
    let o = run(Some(&conf), &ckpt, &dst, &flags);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("retired     step-1") && out.contains("retired     step-2"),
        "{out}"
    );
    assert!(
        out.contains("finishing what an earlier pass started"),
        "{out}"
    );
    assert_eq!(
        folders(&direct, &remotes),
        [("step-3".to_string(), true)],
        "{out}"
    );
    let at3 = keys(&direct, &remotes);
    assert_eq!(at3.len(), 4, "step-3 whole: {at3:?}");
    // A folder whose receipt vanished without a marker is left alone.
    del(&direct, &remotes, &format!("step-3/{RECEIPT}"));
    let o = run(Some(&conf), &ckpt, &dst, &flags);
    assert!(o.status.success(), "{}", text(&o));
    assert!(keys(&direct, &remotes).contains(&"step-3/__0_0.distcp".to_string()));
}
