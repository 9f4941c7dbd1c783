//! The binary as a user runs it: output, JSON schema, errors and exit codes.

use super::moverctl;
use serde_json::Value;
use std::process::Output;

fn run(args: &[&str]) -> Output {
    moverctl().args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn the_example_prints_a_ranked_table() {
    let o = run(&["plan", "--example"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for needle in [
        "backblaze-b2",
        "wasabi:us-east-1",
        "cloudflare-r2",
        "gcp:us-central1",
        "2.00 PB",
        "40.0 M",
        "GPU idle",
        "90-day",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in\n{out}");
    }
}

#[test]
fn json_follows_the_documented_schema() {
    let o = run(&["plan", "--example", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let cands = v["candidates"].as_array().unwrap();
    assert_eq!(cands.len(), 4);
    let mut last_total = 0.0;
    for c in cands {
        assert!(c["destination"].is_string());
        let cost = &c["cost"];
        let f = |k: &str| {
            cost[k]
                .as_f64()
                .unwrap_or_else(|| panic!("cost.{k} is not a number"))
        };
        let sum = f("egress")
            + f("source_requests")
            + f("destination_requests")
            + f("retrieval")
            + f("storage_horizon")
            + f("early_deletion")
            + f("gpu_idle")
            + f("source_storage")
            + f("source_early_deletion")
            + f("restored_copy")
            + f("worker_compute")
            + f("restore_idle");
        assert!(
            (sum - f("total")).abs() < 0.01,
            "total is the sum of its items"
        );
        let _ = f("storage_per_month") + f("exit_egress");
        assert!(f("total") >= last_total, "ranked cheapest first");
        last_total = f("total");
        assert!(c["time"]["seconds"].as_f64().unwrap() > 0.0);
        assert!(
            ["bandwidth", "requests", "rate-limit", "listing"]
                .contains(&c["time"]["bound"].as_str().unwrap())
        );
        assert!(c["warnings"].is_array());
    }
    // Destinations keep the spelling the user gave.
    assert!(cands.iter().any(|c| c["destination"] == "wasabi:us-east-1"));
}

#[test]
fn unknown_provider_lists_known_ones_and_exits_2() {
    let o = run(&[
        "plan",
        "--from",
        "aws",
        "--to",
        "backblaze,wasabi",
        "--bytes",
        "1TB",
        "--objects",
        "1k",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("unknown provider \"backblaze\"") && e.contains("backblaze-b2"),
        "{e}"
    );
}

#[test]
fn bad_sizes_exit_2_with_a_reason() {
    for (args, needle) in [
        (vec!["--bytes", "-5TB", "--objects", "10"], "negative"),
        (vec!["--bytes", "lots", "--objects", "10"], "--bytes"),
        (vec!["--bytes", "5TB", "--objects", "ten"], "--objects"),
        (vec!["--bytes", "5TB"], "--objects"),
        (
            vec!["--bytes", "5TB", "--objects", "10", "--bandwidth", "fast"],
            "--bandwidth",
        ),
    ] {
        let o = moverctl()
            .args(["plan", "--from", "aws", "--to", "wasabi"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn inventory_is_read_and_bad_lines_are_located() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("inv.csv");
    std::fs::write(
        &good,
        "key,size,storage_class\nshard-0,1000000000,STANDARD\nshard-1,3000000000,GLACIER\n",
    )
    .unwrap();
    let o = moverctl()
        .args([
            "plan",
            "--from",
            "aws",
            "--to",
            "backblaze-b2",
            "--json",
            "--inventory",
        ])
        .arg(&good)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["corpus"]["objects"], 2);
    assert_eq!(v["corpus"]["bytes"], 4_000_000_000u64);
    assert!(
        v["candidates"][0]["cost"]["retrieval"].as_f64().unwrap() > 0.0,
        "GLACIER object priced for retrieval"
    );

    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"key\":\"a\",\"size\":5}\n{\"key\":\"b\",\"size\":\"-3\"}\n",
    )
    .unwrap();
    let o = moverctl()
        .args(["plan", "--from", "aws", "--to", "wasabi", "--inventory"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.jsonl:2:"), "{}", stderr(&o));
}

#[test]
fn a_broken_provider_file_is_named_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mine.toml"),
        "schema = 1\nid = \"mine\"\nname = 7\n",
    )
    .unwrap();
    let o = moverctl()
        .arg("providers")
        .env("MOVERCTL_PROVIDERS", dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("mine.toml:3:") && e.contains("`name`"), "{e}");
}

#[test]
fn providers_list_and_show() {
    let o = run(&["providers"]);
    assert!(o.status.success());
    for id in ["aws", "backblaze-b2", "onprem", "hetzner"] {
        assert!(stdout(&o).contains(id), "{id}");
    }
    let o = run(&["providers", "show", "wasabi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("90") && out.contains("as of") && out.contains("Internet egress"),
        "{out}"
    );
    let o = run(&["providers", "show", "wasaby"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("wasabi"));
}

#[test]
fn readme_opens_with_the_two_commands_and_shows_the_exit_table() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let head: String = readme.lines().take(12).collect::<Vec<_>>().join("\n");
    assert!(
        head.contains("plan --example"),
        "README must open with the example command"
    );
    assert!(
        head.contains(".ci/run") || head.contains("scripts/test"),
        "README must open with the test command"
    );
    for (code, meaning) in moverctl::exit::TABLE {
        let row = format!("| {code} | {meaning} |");
        assert!(readme.contains(&row), "README exit table lacks: {row}");
    }
    let help = stdout(&run(&["--help"]));
    assert!(help.contains("Exit codes"), "{help}");
}
