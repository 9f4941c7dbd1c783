//! `moverctl probe` against what each server really does. Garage checks Content-MD5 and stores
//! checksums; moto accepts wrong digests and keeps none: the probe must tell them apart. Memory
//! and local stores, the saved result, and the planner picking it up are tested too.

use super::{Servers, moverctl, remotes, remotes_toml, servers, unique};
use futures::StreamExt;
use moverctl::probe::{self, ProbeOpts, ProbeReport, Status};
use moverctl::store::caps::Capabilities;
use moverctl::store::config::Remotes;
use moverctl::store::{Kind, Store};
use serde_json::Value;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Small enough for CI: the measurements run, but on little data.
fn small() -> ProbeOpts {
    ProbeOpts {
        stream_bytes: 256 << 10,
        streams: 2,
        requests: 3,
        ..Default::default()
    }
}

fn assert_status(r: &ProbeReport, id: &str, want: Status) {
    let f = r
        .finding(id)
        .unwrap_or_else(|| panic!("no finding {id} in {:#?}", r.findings));
    assert_eq!(f.status, want, "{id}: {}", f.detail);
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Every object under a location (nothing should be left after a probe).
async fn everything_under(given: &str, remotes: &Remotes) -> Vec<String> {
    let store = Store::open(given, remotes).unwrap();
    let p = object_store::path::Path::parse(store.prefix.trim_end_matches('/')).unwrap();
    store
        .inner
        .list((!store.prefix.is_empty()).then_some(&p))
        .map(|m| m.unwrap().location.to_string())
        .collect()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_store_honours_create_and_keeps_metadata() {
    let store = Store::open("memory://probe/", &Remotes::default()).unwrap();
    let r = probe::probe(&store, small()).await.unwrap();
    assert_status(&r, "conditional_create", Status::Yes);
    assert_status(&r, "user_metadata", Status::Yes);
    assert_status(&r, "listing_sorted", Status::Yes);
    assert_status(&r, "part_size_1mib", Status::Yes);
    assert_status(&r, "content_md5_checked", Status::NotTested);
    assert_status(&r, "checksum_sha256_stored", Status::NotTested);
    assert!(
        r.finding("checksum_crc32c_accepted")
            .unwrap()
            .detail
            .contains("S3 only")
    );
    assert!(r.latency_ms.is_some() && r.multi_stream_bytes_per_sec.is_some());
    assert_eq!(r.kind, "memory");
    assert!(r.scratch_prefix.starts_with("probe/.moverctl-probe-"));
    assert!(r.cleanup.left.is_empty(), "{:?}", r.cleanup);
    let left: Vec<_> = store.inner.list(None).collect().await;
    assert!(left.is_empty(), "{} objects left behind", left.len());
}

fn garage_location(s: &Servers, test: &str) -> String {
    let bucket = std::env::var("MOVERCTL_TEST_S3_SCRATCH").unwrap_or_else(|_| s.bucket_a.clone());
    format!("garage:{bucket}/{}/", unique(test))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garage_checks_digests_stores_checksums_and_overwrites_on_create() {
    let Some(s) = servers() else { return };
    let remotes = remotes(&s);
    let given = garage_location(&s, "probe");
    let store = Store::open(&given, &remotes).unwrap();
    let opts = ProbeOpts {
        s3: probe::s3raw::open_s3(&given, &remotes).unwrap(),
        ..small()
    };
    assert!(opts.s3.is_some());
    let r = probe::probe(&store, opts).await.unwrap();
    assert_status(&r, "single_part_etag_md5", Status::Yes);
    assert_status(&r, "content_md5_accepted", Status::Yes);
    assert_status(&r, "content_md5_checked", Status::Yes);
    assert!(
        r.finding("content_md5_checked")
            .unwrap()
            .detail
            .contains("BadDigest"),
        "{:?}",
        r.finding("content_md5_checked")
    );
    assert_status(&r, "checksum_sha256_accepted", Status::Yes);
    assert_status(&r, "checksum_sha256_checked", Status::Yes);
    assert_status(&r, "checksum_sha256_stored", Status::Yes);
    assert_status(&r, "user_metadata", Status::Yes);
    // Garage 2.5 ignores If-None-Match: * on PUT and overwrites.
    assert_status(&r, "conditional_create", Status::No);
    assert!(
        r.finding("conditional_create")
            .unwrap()
            .detail
            .contains("overwrote")
    );
    assert_status(&r, "listing_sorted", Status::Yes);
    assert_status(&r, "multipart_etag_stable", Status::Yes);
    assert_status(&r, "multipart_etag_md5_of_md5s", Status::Yes);
    assert!(r.latency_ms.unwrap() > 0.0);
    assert!(r.single_stream_bytes_per_sec.unwrap() > 0.0);
    assert!(r.multi_stream_bytes_per_sec.unwrap() > 0.0);
    // What bounds a run: small-object rates at 1, 8, 32 and 64 in flight, and the engine's CPU.
    let levels: Vec<usize> = r.request_rate.iter().map(|p| p.in_flight).collect();
    assert_eq!(levels, [1, 8, 32, 64], "{:?}", r.request_rate);
    for p in &r.request_rate {
        assert!(
            p.put_per_sec.unwrap() > 0.0 && p.get_per_sec.unwrap() > 0.0,
            "{p:?}"
        );
    }
    let cpu = r.client_cpu.clone().expect("engine CPU measured");
    assert!(cpu.hash_copy_seconds_per_gib.unwrap() > 0.0, "{cpu:?}");
    assert!(cpu.copy_seconds_per_gib.unwrap() >= cpu.hash_copy_seconds_per_gib.unwrap());
    assert!(cpu.cores >= 1);
    assert_eq!(r.provider.as_deref(), Some("onprem"));
    assert!(r.cleanup.left.is_empty(), "{:?}", r.cleanup);
    let left = everything_under(&given, &remotes).await;
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azurite_reports_raw_s3_checks_as_not_tested() {
    let Some(s) = servers() else { return };
    let remotes = remotes(&s);
    let given = format!("azurite:{}/{}/", s.az_container, unique("probe"));
    let store = Store::open(&given, &remotes).unwrap();
    let r = probe::probe(&store, small()).await.unwrap();
    assert_status(&r, "user_metadata", Status::Yes);
    assert_status(&r, "listing_sorted", Status::Yes);
    assert_status(&r, "content_md5_checked", Status::NotTested);
    assert_status(&r, "checksum_crc64nvme_stored", Status::NotTested);
    assert!(r.cleanup.left.is_empty(), "{:?}", r.cleanup);
    let left = everything_under(&given, &remotes).await;
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_refused_key_exits_4_and_is_not_printed() {
    let Some(s) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("remotes.toml");
    std::fs::write(
        &cfg,
        remotes_toml(&s).replace("MOVERCTL_TEST_S3_SECRET", "PROBE_WRONG_SECRET"),
    )
    .unwrap();
    let wrong = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let o = moverctl()
        .env("PROBE_WRONG_SECRET", wrong)
        .env("MOVERCTL_STATE_DIR", dir.path())
        .arg("--config")
        .arg(&cfg)
        .args(["probe", &garage_location(&s, "probe-refused"), "--no-save"])
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(4), "{out}\n{err}");
    assert!(!out.contains(wrong) && !err.contains(wrong));
    assert!(!err.contains("X-Amz-Signature"), "{err}");
}

// ---- moto: a mock that checks nothing -------------------------------------------------------

/// A moto server on a free 127.0.0.1 port, killed (by its own PID) when dropped.
pub(crate) struct Moto {
    child: Child,
    pub(crate) port: u16,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `MOVERCTL_MOTO_SERVER`, else `<tools>/moto/bin/moto_server` (`pip install 'moto[server]'`
/// into that venv), else `moto_server` on PATH.
fn moto_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("MOVERCTL_MOTO_SERVER") {
        return Some(PathBuf::from(p));
    }
    let tools = std::env::var_os("MOVERCTL_TOOLS")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/moverctl/tools")));
    if let Some(t) = tools {
        let p = t.join("moto/bin/moto_server");
        if p.is_file() {
            return Some(p);
        }
    }
    let found = Command::new("moto_server")
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    found.then(|| PathBuf::from("moto_server"))
}

pub(crate) fn start_moto() -> Option<Moto> {
    let Some(bin) = moto_binary() else {
        if std::env::var("MOVERCTL_REQUIRE_SERVERS").as_deref() == Ok("1") {
            panic!(
                "MOVERCTL_REQUIRE_SERVERS=1 but moto is not installed: python3 -m venv ~/.cache/moverctl/tools/moto && ~/.cache/moverctl/tools/moto/bin/pip install 'moto[server]'"
            );
        }
        eprintln!("skipped: moto is not installed (pip install 'moto[server]')");
        return None;
    };
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(&bin)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
    let mut moto = Moto { child, port };
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(st)) = moto.child.try_wait() {
            panic!("moto_server exited before it was ready: {st}");
        }
        assert!(
            Instant::now() < deadline,
            "moto_server not ready after 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    moto.create_bucket("probe");
    Some(moto)
}

impl Moto {
    /// moto takes any (or no) credentials: a bare PUT creates the bucket.
    pub(crate) fn create_bucket(&mut self, name: &str) {
        use std::io::{Read, Write};
        let mut c = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(
            c,
            "PUT /{name} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.port
        )
        .unwrap();
        let mut resp = String::new();
        c.read_to_string(&mut resp).unwrap();
        assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    }

    fn remotes_toml(&self) -> String {
        format!(
            "[remotes.moto]\ntype = \"s3\"\nendpoint = \"http://127.0.0.1:{}\"\nregion = \"us-east-1\"\naccess_key_id_env = \"PROBE_MOTO_KEY\"\nsecret_access_key_env = \"PROBE_MOTO_SECRET\"\n",
            self.port
        )
    }
}

fn probe_json(cfg: &Path, state: &Path, location: &str) -> Value {
    let o = moverctl()
        .env("PROBE_MOTO_KEY", "testing")
        .env("PROBE_MOTO_SECRET", "testing")
        .env("MOVERCTL_STATE_DIR", state)
        .arg("--config")
        .arg(cfg)
        .args([
            "probe",
            location,
            "--json",
            "--size",
            "256KiB",
            "--streams",
            "2",
            "--requests",
            "3",
        ])
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn status_of(v: &Value, id: &str) -> (String, String) {
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no finding {id}"));
    (
        f["status"].as_str().unwrap().to_string(),
        f["detail"].as_str().unwrap().to_string(),
    )
}

#[test]
fn moto_accepts_wrong_digests_and_the_probe_says_so() {
    let Some(moto) = start_moto() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("remotes.toml");
    std::fs::write(&cfg, moto.remotes_toml()).unwrap();
    let v = probe_json(&cfg, dir.path(), "moto:probe/x/");
    assert_eq!(v["schema"], "moverctl.probe/1");
    assert_eq!(v["kind"], "s3");
    assert_eq!(status_of(&v, "content_md5_accepted").0, "yes");
    let (st, detail) = status_of(&v, "content_md5_checked");
    assert_eq!(st, "no", "{detail}");
    assert!(detail.contains("not checked"), "{detail}");
    assert_eq!(status_of(&v, "checksum_sha256_checked").0, "no");
    // moto drops x-amz-checksum-* unless x-amz-sdk-checksum-algorithm is sent too.
    assert_eq!(status_of(&v, "checksum_sha256_stored").0, "no");
    assert_eq!(status_of(&v, "single_part_etag_md5").0, "yes");
    assert!(v["cleanup"]["left"].as_array().unwrap().is_empty());
    // Saved under the store kind: a moto remote names no provider.
    let saved = dir.path().join("probes/s3/moto_probe_x_.json");
    assert!(saved.is_file(), "{} missing", saved.display());
    // What copy and sync then rely on: an S3 store whose probe shows that a wrong Content-MD5
    // is accepted is not trusted to refuse damaged bytes (`dest-content-md5` is never claimed).
    let report: ProbeReport =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let mut caps = Capabilities::for_kind(Kind::S3);
    moverctl::job::trust::apply_probe(&mut caps, &report);
    assert!(!caps.checks_content_md5, "{caps:?}");
    assert!(caps.put_etag_is_md5 && caps.keeps_metadata, "{caps:?}");
}

/// Each test server's documented capabilities (what the executor relies on, by kind) against
/// what the probe measures on it: every capability the probe can test must be there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capabilities_agree_with_what_the_probe_measures() {
    let Some(s) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let locations = [
        garage_location(&s, "caps"),
        format!("azurite:{}/{}/", s.az_container, unique("caps")),
        format!("gcsxml:{}/{}/", s.gcs_bucket, unique("caps")),
        dir.path().display().to_string(),
    ];
    for loc in locations {
        let store = Store::open(&loc, &remotes(&s)).unwrap();
        let opts = ProbeOpts {
            s3: probe::s3raw::open_s3(&loc, &remotes(&s)).unwrap(),
            ..small()
        };
        let r = probe::probe(&store, opts).await.unwrap();
        let caps = &store.caps;
        let measured = |id: &str| r.status(id);
        let check = |claimed: bool, id: &str| {
            let m = measured(id);
            if claimed {
                assert_eq!(
                    m,
                    Status::Yes,
                    "{loc}: {id} is relied on but measured {m:?}"
                );
            } else {
                assert_ne!(m, Status::Yes, "{loc}: {id} measured yes but not relied on");
            }
        };
        if store.kind == Kind::Gcs {
            // fake-gcs-server's ETags are base64 MD5s where GCS shows hex ones: the probe sees
            // the difference, and a saved probe of such a store turns the ETag comparison off.
            assert_eq!(measured("single_part_etag_md5"), Status::No, "{loc}");
            let mut refined = caps.clone();
            moverctl::job::trust::apply_probe(&mut refined, &r);
            assert!(!refined.put_etag_is_md5 && !refined.multipart_etag_is_md5_of_parts);
        } else if caps.pins_reads {
            check(caps.put_etag_is_md5, "single_part_etag_md5");
        }
        check(caps.keeps_metadata, "user_metadata");
        if caps.multipart_etag_is_md5_of_parts {
            assert_eq!(measured("multipart_etag_md5_of_md5s"), Status::Yes, "{loc}");
        }
        if store.kind == Kind::S3 {
            check(caps.checks_content_md5, "content_md5_checked");
        }
        // Refining with the measurement changes nothing else on these servers.
        if store.kind != Kind::Gcs {
            let mut refined = caps.clone();
            moverctl::job::trust::apply_probe(&mut refined, &r);
            assert_eq!(&refined, caps, "{loc}");
        }
    }
}

// ---- the CLI on a local folder, and the planner reading the result --------------------------

fn plan(state: &Path, extra: &[&str]) -> Output {
    moverctl()
        .env("MOVERCTL_STATE_DIR", state)
        .args([
            "plan",
            "--from",
            "aws:us-east-1",
            "--to",
            "onprem,backblaze-b2",
            "--bytes",
            "10TB",
            "--objects",
            "100k",
        ])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn probe_of_a_folder_is_saved_and_the_planner_uses_it() {
    let data = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let folder = data.path().to_str().unwrap();

    // Without a saved probe the planner says nothing about one.
    let o = plan(state.path(), &[]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(!out.contains("using probe"), "{out}");

    let o = moverctl()
        .env("MOVERCTL_STATE_DIR", state.path())
        .args([
            "probe",
            folder,
            "--size",
            "512KiB",
            "--streams",
            "2",
            "--requests",
            "3",
        ])
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    for needle in [
        "check",
        "conditional create",
        "yes",
        "not tested",
        "latency per request",
        "throughput, 2 streams",
        "Saved ",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in\n{out}");
    }
    // Nothing left in the folder.
    assert_eq!(std::fs::read_dir(data.path()).unwrap().count(), 0);

    let files: Vec<PathBuf> = std::fs::read_dir(state.path().join("probes/onprem"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(saved["schema"], "moverctl.probe/1");
    assert_eq!(saved["provider"], "onprem");
    assert_eq!(saved["kind"], "local");
    assert_eq!(saved["location"], folder);
    assert_eq!(saved["streams"], 2);
    for k in [
        "timestamp",
        "latency_ms",
        "single_stream_bytes_per_sec",
        "multi_stream_bytes_per_sec",
    ] {
        assert!(!saved[k].is_null(), "{k} is null in {saved}");
    }
    let latency = saved["latency_ms"].as_f64().unwrap().ceil().max(1.0) as u64;
    let per_stream = (saved["multi_stream_bytes_per_sec"].as_f64().unwrap() / 2.0).round() as u64;
    assert_eq!(
        saved["request_rate"].as_array().unwrap().len(),
        4,
        "{saved}"
    );
    assert!(
        saved["client_cpu"]["copy_seconds_per_gib"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    // The best PUT rate at or below the plan's 64 in flight.
    let put_rate = saved["request_rate"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["in_flight"].as_u64().unwrap() <= 64)
        .map(|p| p["put_per_sec"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let aggregate = saved["multi_stream_bytes_per_sec"].as_f64().unwrap();

    // The planner picks it up for the onprem destination only.
    let o = plan(state.path(), &[]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("using probe of "))
        .unwrap_or_else(|| panic!("no probe line in\n{out}"));
    assert!(
        line.contains(folder) && line.contains(&format!("latency {latency} ms")),
        "{line}"
    );
    assert!(line.contains("stream "), "{line}");

    let o = plan(state.path(), &["--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let cands = v["candidates"].as_array().unwrap();
    let onprem = cands.iter().find(|c| c["destination"] == "onprem").unwrap();
    assert_eq!(onprem["probe"]["location"], folder);
    assert_eq!(onprem["probe"]["latency_ms"], latency);
    assert_eq!(
        onprem["probe"]["stream_throughput_bytes_per_second"],
        per_stream
    );
    let b2 = cands
        .iter()
        .find(|c| c["destination"] == "backblaze-b2")
        .unwrap();
    assert!(b2["probe"].is_null());
    // The assumptions block is the best-ranked destination's; onprem has no fees, so it is first.
    assert_eq!(cands[0]["destination"], "onprem");
    assert_eq!(v["assumptions"]["latency_ms"], latency);
    assert_eq!(v["assumptions"]["probe"]["provider"], "onprem");
    // The measured bounds: the folder's PUT rate and aggregate throughput time onprem.
    let m = &v["assumptions"]["measured"];
    assert!(
        (m["destination_put_per_second"].as_f64().unwrap() - put_rate).abs() < 1e-3,
        "{m}"
    );
    assert!(m["source_get_per_second"].is_null(), "no probe of aws: {m}");
    let t = &onprem["time"];
    let want = 10e12 / aggregate;
    let got = t["server_throughput_seconds"].as_f64().unwrap();
    assert!((got - want).abs() / want < 1e-4, "{got} vs {want}");
    let seconds = t["seconds"].as_f64().unwrap();
    assert!(seconds >= got - 1e-6, "{t}");
    assert!(
        [
            "bandwidth",
            "requests",
            "server request rate",
            "server throughput",
            "client CPU"
        ]
        .contains(&t["bound"].as_str().unwrap()),
        "{t}"
    );
    assert!(b2["time"]["server_throughput_seconds"].as_f64().unwrap() == 0.0);

    // A flag given on the command line wins over the probe; the rest still comes from it.
    let o = plan(state.path(), &["--json", "--latency-ms", "45"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["assumptions"]["latency_ms"], 45);
    assert!(v["assumptions"]["probe"]["latency_ms"].is_null());
    assert_eq!(
        v["assumptions"]["probe"]["stream_throughput_bytes_per_second"],
        per_stream
    );

    // --no-probe ignores it.
    let o = plan(state.path(), &["--no-probe", "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["assumptions"]["probe"].is_null());
    assert!(v["assumptions"]["measured"].is_null());
    assert_eq!(v["assumptions"]["latency_ms"], 30);
    let o = plan(state.path(), &["--no-probe"]);
    assert!(!text(&o).0.contains("using probe"));
}

#[test]
fn probe_flags_are_checked() {
    let data = tempfile::tempdir().unwrap();
    let folder = data.path().to_str().unwrap();
    for bad in [
        &["--streams", "0"][..],
        &["--size", "12 apples"],
        &["--requests", "0"],
    ] {
        let o = moverctl()
            .env("MOVERCTL_STATE_DIR", data.path())
            .args(["probe", folder])
            .args(bad)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", text(&o).1);
    }
}

#[test]
fn ctrl_c_stops_the_probe_and_removes_its_objects() {
    let data = tempfile::tempdir().unwrap();
    let child = moverctl()
        .env("MOVERCTL_STATE_DIR", data.path().join("state"))
        .args(["probe", data.path().join("d").to_str().unwrap()])
        .args(["--requests", "10000", "--no-save"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the probe is writing, then interrupt it (the latency loop runs for seconds).
    let deadline = Instant::now() + Duration::from_secs(30);
    let started = || {
        std::fs::read_dir(data.path().join("d")).is_ok_and(|mut d| {
            d.any(|e| {
                e.unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".moverctl-probe-")
            })
        })
    };
    while !started() {
        assert!(Instant::now() < deadline, "the probe did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let o = child.wait_with_output().unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(130), "{out}\n{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(err.contains("were removed"), "{err}");
    assert_eq!(
        std::fs::read_dir(data.path().join("d")).unwrap().count(),
        0,
        "objects left behind"
    );
}
