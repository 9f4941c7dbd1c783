//! Issue 31's everyday verbs and words: `ls` of buckets, containers and remotes, `--max-depth`,
//! `--summary`; `status` with no argument, no ETA when not running, multipart bytes in flight;
//! `plan --save`'s exec hint that runs; plurals and one money format in the plan and report.

use super::*;

/// The table, notes and HTML report of a plan with one object, one worker, one month, one read
/// a month and `--gpu-hourly 640.0`: every count agrees with its noun and every amount follows one
/// format. Fails on the main of 2026-12-08 ("1 objects", "1 worker(s)", "1 full reads a month",
/// "$640.0/hour", axis ticks at max × g / 4).
#[test]
fn plan_and_report_words_agree_with_their_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.html");
    let o = moverctl()
        .current_dir(dir.path())
        .args([
            "plan",
            "--from",
            "aws:us-east-1",
            "--to",
            "backblaze-b2,wasabi:us-east-1",
            "--bytes",
            "10TB",
            "--objects",
            "1",
            "--months",
            "1",
            "--workers",
            "1",
            "--compute-at",
            "aws:us-east-1",
            "--reads-per-month",
            "1",
            "--gpu-hourly",
            "640.0",
            "--no-probe",
            "--report",
        ])
        .arg(&report)
        .output()
        .unwrap();
    expect(&o, 0);
    let html = std::fs::read_to_string(&report).unwrap();
    let all = format!("{}\n{}\n{html}", text(&o), html);
    for wrong in [
        "1 objects",
        "1 reads",
        "1 full reads",
        "1 months",
        "worker(s)",
        "1 GETs",
        "$640.0",
        "prefix(es)",
    ] {
        assert!(!all.contains(wrong), "{wrong:?} in:\n{}", text(&o));
    }
    for right in [
        "in 1 object (",
        "1 worker x",
        "1 full read a month",
        "$640/hour",
        "horizon 1 month",
    ] {
        assert!(all.contains(right), "{right:?} missing in:\n{}", text(&o));
    }
    // The chart's amounts are round: each tick is a multiple of the first non-zero one, whose
    // leading digits are 1, 2, 25 or 5.
    let ticks: Vec<u64> = html
        .split("class=\"tick\">$")
        .skip(1)
        .map(|t| t.split('<').next().unwrap().replace(',', ""))
        .map(|t| t.parse::<u64>().unwrap_or_else(|_| panic!("tick {t:?}")))
        .collect();
    assert!(ticks.len() >= 3, "{ticks:?}");
    let step = ticks[1];
    let lead = step.to_string().trim_end_matches('0').to_string();
    assert!(["1", "2", "25", "5"].contains(&lead.as_str()), "{ticks:?}");
    for (i, t) in ticks.iter().enumerate() {
        assert_eq!(*t, step * i as u64, "{ticks:?}");
    }
}

/// `plan --save` without `--src/--dst` prints an `exec` command whose placeholders are marked;
/// filled in, the command as printed runs the move. Fails on the main of 2026-12-08, which
/// printed `moverctl exec plans/NAME.toml` (exit 2: the plan has no source location).
#[test]
fn plan_save_prints_an_exec_command_that_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("a/one.bin"), b"the bytes of one object").unwrap();
    let o = moverctl()
        .current_dir(dir.path())
        .args([
            "plan",
            "--from",
            "aws:us-east-1",
            "--to",
            "backblaze-b2",
            "--bytes",
            "1GB",
            "--objects",
            "10",
            "--no-probe",
            "--save",
            "hint",
        ])
        .output()
        .unwrap();
    expect(&o, 0);
    let out = text(&o);
    let line = out
        .lines()
        .find(|l| l.starts_with("Saved "))
        .unwrap_or_else(|| panic!("no Saved line:\n{out}"));
    let cmd = line
        .split("run it with: ")
        .nth(1)
        .and_then(|c| c.split(" (replace").next())
        .unwrap_or_else(|| panic!("no command in {line:?}"));
    assert!(
        cmd.contains("--src <SOURCE>") && cmd.contains("--dst <DESTINATION>"),
        "{line}"
    );
    assert!(
        line.contains("replace <SOURCE> and <DESTINATION>"),
        "{line}"
    );
    let filled = cmd
        .replace("<SOURCE>", src.to_str().unwrap())
        .replace("<DESTINATION>", dst.to_str().unwrap());
    let words: Vec<&str> = filled.split_whitespace().collect();
    assert_eq!(words[0], "moverctl", "{filled}");
    let run = moverctl()
        .current_dir(dir.path())
        .args(&words[1..])
        .output()
        .unwrap();
    expect(&run, 0);
    assert_eq!(
        std::fs::read(dst.join("a/one.bin")).unwrap(),
        b"the bytes of one object"
    );
}

/// `status --json --src --dst` of a pair, from `state`.
fn status_json(
    state: &std::path::Path,
    conf: &std::path::Path,
    src: &str,
    dst: &str,
) -> serde_json::Value {
    let o = moverctl()
        .env("MOVERCTL_STATE_DIR", state)
        .arg("--config")
        .arg(conf)
        .args(["status", "--json", "--src", src, "--dst", dst])
        .output()
        .unwrap();
    expect(&o, 0);
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)))
}

/// A copy to Garage of a small object, then of a 48 MiB one in 8 MiB parts at 4 MiB/s: while it
/// runs, `status` counts the parts uploaded (`uploading`) and gives an ETA (the first run's rate);
/// once the run is killed, no ETA, the parts still counted, and `status` with no argument lists the run as stopped. Fails on
/// the main of 2026-12-08 (`0 B` while parts were in flight, an ETA for a dead run, and `status`
/// with no argument an error).
#[test]
fn status_counts_parts_in_flight_and_gives_no_eta_when_stopped() {
    let Some(sv) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let conf = dir.path().join("remotes.toml");
    std::fs::write(&conf, remotes_toml(&sv)).unwrap();
    // No journal yet: the recent runs are none, said so.
    let o = moverctl()
        .env("MOVERCTL_STATE_DIR", &state)
        .arg("status")
        .output()
        .unwrap();
    expect(&o, 0);
    assert!(text(&o).contains("no runs yet"), "{}", text(&o));
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("a-small"), b"small").unwrap();
    let (s, d) = (
        src.display().to_string(),
        format!("garage:{}/{}", sv.bucket_a, unique("status-parts")),
    );
    // A first run verifies the small object: the pair has a recent rate from now on.
    let o = moverctl()
        .env("MOVERCTL_STATE_DIR", &state)
        .arg("--config")
        .arg(&conf)
        .args(["copy", &s, &d])
        .output()
        .unwrap();
    expect(&o, 0);
    let big: Vec<u8> = (0..48u32 << 20).map(|i| (i % 251) as u8).collect();
    std::fs::write(src.join("b-big"), &big).unwrap();
    let mut child = moverctl()
        .env("MOVERCTL_STATE_DIR", &state)
        .arg("--config")
        .arg(&conf)
        .args([
            "copy",
            "--part-size",
            "8MiB",
            "--multipart-threshold",
            "8MiB",
            "--bwlimit",
            "4M",
            &s,
            &d,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let running = loop {
        std::thread::sleep(std::time::Duration::from_millis(300));
        if let Ok(v) = std::panic::catch_unwind(|| status_json(&state, &conf, &s, &d))
            && v["running"] == true
            && v["uploading"]["bytes"].as_u64().unwrap_or(0) > 0
        {
            break v;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "no parts in flight seen"
        );
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let up = running["uploading"]["bytes"].as_u64().unwrap();
    assert!((8 << 20..48 << 20).contains(&up), "{running}");
    assert_eq!(running["uploading"]["objects"], 1, "{running}");
    assert!(
        running["eta_seconds"].is_u64(),
        "a running run has an ETA: {running}"
    );

    let stopped = status_json(&state, &conf, &s, &d);
    assert_eq!(stopped["running"], false, "{stopped}");
    assert!(stopped["eta_seconds"].is_null(), "{stopped}");
    assert!(
        stopped["uploading"]["bytes"].as_u64().unwrap() >= up,
        "{stopped}"
    );
    let o = moverctl()
        .env("MOVERCTL_STATE_DIR", &state)
        .arg("--config")
        .arg(&conf)
        .args(["status", "--src", &s, "--dst", &d])
        .output()
        .unwrap();
    expect(&o, 0);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("not running (no ETA)") && !out.contains("ETA "),
        "{out}"
    );
    assert!(out.contains("in parts of 1 multipart upload"), "{out}");

    let o = moverctl()
        .env("MOVERCTL_STATE_DIR", &state)
        .args(["status"])
        .output()
        .unwrap();
    expect(&o, 0);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("stopped")
            && out.contains("1 object,")
            && out.contains(&d)
            && out.contains("uploading)"),
        "{out}"
    );
}

/// `moverctl --config CONF ARGS…` with the test servers' variables, and GOOGLE_CLOUD_PROJECT
/// for GCS bucket listings.
fn ls_run(conf: &std::path::Path, args: &[&str]) -> std::process::Output {
    moverctl()
        .arg("--config")
        .arg(conf)
        .env("GOOGLE_CLOUD_PROJECT", "moverctl-test")
        .args(args)
        .output()
        .unwrap()
}

/// The key column of a text listing (objects and folders), its last line (the totals) left out.
fn keys_listed(o: &std::process::Output) -> Vec<String> {
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    lines[..lines.len().saturating_sub(1)]
        .iter()
        .map(|l| l.rsplit("  ").next().unwrap().to_string())
        .collect()
}

/// `ls` with no location lists the remotes; `ls REMOTE:` of an S3, Azure and GCS remote, and
/// `ls s3://` with the AWS variables, list the buckets (containers) the servers hold. Fails on
/// the main of 2026-12-08 (`ls s3://`: "no bucket name"; `ls` with no location: a usage error).
#[test]
fn ls_lists_remotes_buckets_and_containers() {
    let Some(sv) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("remotes.toml");
    std::fs::write(&conf, remotes_toml(&sv)).unwrap();
    let o = ls_run(&conf, &["ls"]);
    expect(&o, 0);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    for (name, kind) in [
        ("garage:", "s3"),
        ("azurite:", "azure"),
        ("fakegcs:", "gcs"),
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(name) && l.contains(kind)),
            "{name}: {out}"
        );
    }
    assert!(out.contains(&sv.s3_endpoint), "{out}");
    assert!(
        !out.contains("MOVERCTL_TEST_S3_SECRET") && !out.contains(&sv.secret),
        "{out}"
    );

    let o = ls_run(&conf, &["ls", "garage:"]);
    expect(&o, 0);
    let names = keys_listed(&o);
    for b in [&sv.bucket_a, &sv.bucket_b] {
        assert!(names.contains(b), "{b}: {}", text(&o));
    }
    assert!(
        text(&o).contains(&format!("{} buckets", names.len())),
        "{}",
        text(&o)
    );
    let o = ls_run(&conf, &["ls", "--json", "garage:"]);
    expect(&o, 0);
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        lines
            .iter()
            .any(|v| v["event"] == "bucket" && v["name"] == sv.bucket_a.as_str()),
        "{}",
        text(&o)
    );
    for v in &lines {
        super::json_schema::validate(v, &super::json_schema::schemas()).unwrap();
    }

    let o = ls_run(&conf, &["ls", "azurite:"]);
    expect(&o, 0);
    let names = keys_listed(&o);
    assert!(names.contains(&sv.az_container), "{}", text(&o));
    assert!(names.contains(&sv.az_container2), "{}", text(&o));
    assert!(text(&o).contains(" containers"), "{}", text(&o));

    let o = ls_run(&conf, &["ls", "fakegcs:"]);
    expect(&o, 0);
    assert!(keys_listed(&o).contains(&sv.gcs_bucket), "{}", text(&o));

    // s3:// is the store the AWS variables name.
    let o = moverctl()
        .env("AWS_ENDPOINT_URL", &sv.s3_endpoint)
        .env("AWS_ACCESS_KEY_ID", &sv.key_id)
        .env("AWS_SECRET_ACCESS_KEY", &sv.secret)
        .env("AWS_REGION", &sv.region)
        .args(["ls", "s3://"])
        .output()
        .unwrap();
    expect(&o, 0);
    assert!(keys_listed(&o).contains(&sv.bucket_a), "{}", text(&o));

    // Wrong credentials: exit 4, naming where they came from, never the secret.
    let o = moverctl()
        .env("AWS_ENDPOINT_URL", &sv.s3_endpoint)
        .env("AWS_ACCESS_KEY_ID", &sv.key_id)
        .env("AWS_SECRET_ACCESS_KEY", "0000wrongsecret0000")
        .env("AWS_REGION", &sv.region)
        .args(["ls", "s3://"])
        .output()
        .unwrap();
    expect(&o, 4);
    assert!(!text(&o).contains("0000wrongsecret0000"), "{}", text(&o));
}

/// The same tree on Garage, Azurite, fake-gcs (written through the XML shim, listed from the
/// server) and a local folder: `--max-depth 1` and `2` show the same objects and folders in key
/// order on all four, and `--summary` only the totals of everything. Fails on the main of
/// 2026-12-08 (no --max-depth, no --summary: every listing was recursive, a line per object).
#[test]
fn ls_max_depth_and_summary_agree_on_every_store() {
    let Some(sv) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("remotes.toml");
    std::fs::write(&conf, remotes_toml(&sv)).unwrap();
    let tree = dir.path().join("tree");
    for (k, body) in [
        ("top.txt", "1"),
        ("a.txt", "22"),
        ("a/one", "333"),
        ("a/b/two", "4444"),
        ("a/b/c/three", "55555"),
        ("x/five", "666666"),
    ] {
        let p = tree.join(k);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }
    let p = unique("ls-depth");
    let t = tree.display().to_string();
    let stores = [
        (
            format!("garage:{}/{p}", sv.bucket_a),
            format!("garage:{}/{p}", sv.bucket_a),
        ),
        (
            format!("azurite:{}/{p}", sv.az_container),
            format!("azurite:{}/{p}", sv.az_container),
        ),
        (
            format!("gcsxml:{}/{p}", sv.gcs_bucket),
            format!("fakegcs:{}/{p}", sv.gcs_bucket),
        ),
    ];
    for (to, _) in &stores {
        let o = ls_run(&conf, &["copy", &t, to]);
        expect(&o, 0);
    }
    let depth1 = ["a.txt", "a/", "top.txt", "x/"];
    let depth2 = ["a.txt", "a/", "a/b/", "a/one", "top.txt", "x/", "x/five"];
    for at in std::iter::once(t.clone()).chain(stores.iter().map(|(_, l)| l.clone())) {
        let o = ls_run(&conf, &["ls", "--max-depth", "1", &at]);
        expect(&o, 0);
        assert_eq!(keys_listed(&o), depth1, "{at}: {}", text(&o));
        assert!(
            text(&o).contains("2 objects and 2 folders down to depth 1"),
            "{at}: {}",
            text(&o)
        );
        let o = ls_run(&conf, &["ls", "--max-depth", "2", &at]);
        expect(&o, 0);
        assert_eq!(keys_listed(&o), depth2, "{at}: {}", text(&o));
        let o = ls_run(&conf, &["ls", "--max-depth", "2", "--json", &at]);
        expect(&o, 0);
        let folders: Vec<String> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .inspect(|v| {
                super::json_schema::validate(v, &super::json_schema::schemas()).unwrap();
            })
            .filter(|v| v["event"] == "folder")
            .map(|v| v["key"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(folders, ["a/", "a/b/", "x/"], "{at}");
        let o = ls_run(&conf, &["ls", "--summary", &at]);
        expect(&o, 0);
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            "6 objects, 21 B (21 bytes)",
            "{at}"
        );
    }
}
