//! The probe times the service's own copies (issue 29), and the plan times a move copied on the
//! server from them — only between two buckets of one service, never between two services.

use super::*;
use serde_json::Value;

fn remotes_file(s: &Servers, dir: &std::path::Path) -> std::path::PathBuf {
    let mut t = String::new();
    for (name, ep) in [("ga", &s.s3_endpoint), ("gb", &s.s3b_endpoint)] {
        t.push_str(&format!(
            "[remotes.{name}]\ntype = \"s3\"\nprovider = \"onprem\"\nendpoint = \"{ep}\"\nregion = \"{}\"\naccess_key_id_env = \"MOVERCTL_TEST_S3_KEY_ID\"\nsecret_access_key_env = \"MOVERCTL_TEST_S3_SECRET\"\n\n",
            s.region
        ));
    }
    let p = dir.join("remotes.toml");
    std::fs::write(&p, t).unwrap();
    p
}

#[test]
fn probe_times_server_side_copies_and_plan_uses_them_for_one_service_only() {
    let Some(s) = servers() else { return };
    let root = tempfile::tempdir().unwrap();
    let cfg = remotes_file(&s, root.path());
    let state = root.path().join("state");
    let run = |args: &[&str]| {
        let o = moverctl()
            .env("MOVERCTL_STATE_DIR", &state)
            .arg("--config")
            .arg(&cfg)
            .args(args)
            .output()
            .unwrap();
        expect(&o, 0);
        o
    };
    let u = unique("probe-copy");
    let dst = format!("ga:{}/{u}/", s.bucket_b);
    let o = run(&[
        "probe",
        &dst,
        "--size",
        "16MiB",
        "--streams",
        "2",
        "--requests",
        "3",
        "--json",
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let sc = &v["server_copy"];
    let positive = |k: &str| sc[k].as_f64().is_some_and(|x| x > 0.0);
    for k in [
        "small_copy_seconds",
        "copy_seconds",
        "small_copies_per_second",
        "small_head_copies_per_second",
        "parallel_bytes_per_second",
        "part_copy_bytes_per_second",
        "process_start_seconds",
    ] {
        assert!(positive(k), "{k} in {sc}");
    }
    assert_eq!(sc["object_bytes"], 16 << 20);
    // The copied object keeps a full-object CRC64, as exec's checksum path writes them (Garage
    // copies such an object by reading it through, not by reference).
    assert_eq!(sc["source_crc64"], true, "{sc}");
    assert_eq!(sc["parallel"], 2);
    assert_eq!(
        v["cleanup"]["left"],
        serde_json::json!([]),
        "every copy removed"
    );

    // 4 × 16 MiB between two buckets of Garage A: copied on the server, timed by the copy rates.
    let plan = |to: &str| {
        let o = run(&[
            "plan",
            "--from",
            "onprem",
            "--to",
            "onprem",
            "--bytes",
            "64MiB",
            "--objects",
            "4",
            "--src",
            &format!("ga:{}/{u}/src/", s.bucket_a),
            "--dst",
            to,
            "--json",
        ]);
        serde_json::from_slice::<Value>(&o.stdout).unwrap()
    };
    let same = plan(&format!("ga:{}/{u}/dst/", s.bucket_b));
    let c = &same["candidates"][0];
    assert_eq!(c["server_side"], true);
    let t = &c["time"];
    assert!(t["server_copy_seconds"].as_f64().unwrap() > 0.0, "{t}");
    let start = t["start_seconds"].as_f64().unwrap();
    assert!(start > 0.0, "exec's start from the probes: {t}");
    let bounds = [
        "request_seconds",
        "rate_limit_seconds",
        "listing_seconds",
        "server_copy_seconds",
    ]
    .map(|k| t[k].as_f64().unwrap());
    let top = bounds.iter().cloned().fold(0.0, f64::max);
    assert!(
        (t["seconds"].as_f64().unwrap() - (top + start)).abs() < 0.002,
        "{t}"
    );
    assert_eq!(
        t["shared_hashing_seconds"].as_f64(),
        Some(0.0),
        "no bytes hashed here"
    );
    assert!(!same["assumptions"]["measured"]["server_copy"].is_null());

    // Garage A to Garage B: two services, streamed; the copy rates do not apply.
    let apart = plan(&format!("gb:{}/{u}/dst/", s.bucket_c));
    let c = &apart["candidates"][0];
    assert_eq!(c["server_side"], false);
    assert_eq!(c["time"]["server_copy_seconds"].as_f64(), Some(0.0));
    assert_eq!(c["time"]["start_seconds"].as_f64(), Some(0.0));
}
