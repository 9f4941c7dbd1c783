//! Multi-hop plans (`plan --then`, issue 29): each leg priced from the previous leg's
//! destination, one table with a row per leg and the total, a plan file per leg that `exec` runs
//! leg by leg. Every expected amount is worked out by hand in the comment above it from
//! providers/*.toml.

use super::*;
use moverctl::job::plan::hops::Hop;
use moverctl::job::plan::{PlanSpec, plan};
use moverctl::money::Usd;
use serde_json::Value;
use std::path::Path;

/// 10,240 objects of 1 GiB (10 TiB = 10,995,116,277,760 bytes) from AWS us-east-1 to CoreWeave
/// (the primary the GPUs read), then from CoreWeave to B2 (the cold copy), over 12 months, the
/// GPUs at $3,600 an hour.
fn coreweave_then_b2() -> moverctl::job::plan::PlanOutcome<'static> {
    let mut spec = PlanSpec::new(
        "aws:us-east-1",
        &["coreweave"],
        corpus(10_240 * GIB, 10_240),
    );
    spec.assumptions.months = 12;
    spec.assumptions.gpu_hourly = Usd(d("3600"));
    spec.then = vec![Hop {
        to: "b2".into(),
        location: None,
    }];
    plan(catalog(), &spec, &moverctl::job::Quiet).unwrap()
}

#[test]
fn aws_to_coreweave_then_coreweave_to_b2_golden() {
    let out = coreweave_then_b2();
    let chain = out.chain.as_ref().expect("a chain with --then");
    assert_eq!(chain.legs.len(), 2);
    let (l1, l2) = (&chain.legs[0].candidate, &chain.legs[1].candidate);
    assert_eq!(chain.legs[0].from, "aws:us-east-1/standard");
    assert_eq!(l1.resolved, "coreweave:global/hot");
    assert_eq!(chain.legs[1].from, "coreweave:global/hot");
    assert_eq!(l2.resolved, "backblaze-b2:us-west/standard");

    // Time of each leg: 10,995,116,277,760 B at 10 Gbit/s = 1.25e9 B/s = 8,796.093022208 s
    // (bandwidth-bound: the requests take 10,240 × 5 × 30 ms / 64 slots = 24 s).
    let t = d("8796.093022208");
    assert_eq!(l1.time.seconds, t);
    assert_eq!(l2.time.seconds, t);

    // Leg 1, AWS → CoreWeave. Egress: AWS GB = 2^30 B, so 10,240 GB, under a month: (10,240 −
    // 100 free) × $0.09 = $912.60.
    assert_eq!(l1.cost.egress, Usd(d("912.60")));
    // AWS requests: LIST 11 pages × $0.005/1,000 = $0.000055; 10,240 GETs + 10,240 HEADs of part
    // 1 (objects above the 64 MiB threshold) = 20,480 × $0.0004/1,000 = $0.008192.
    assert_eq!(l1.cost.source_requests, Usd(d("0.008247")));
    // CoreWeave: requests free.
    assert_eq!(l1.cost.destination_requests, Usd::ZERO);
    // Storage at CoreWeave (GB = 10^9 B): 10,995.11627776 GB × $0.06 = $659.7069766656 a month,
    // × 12 = $7,916.4837199872.
    assert_eq!(l1.cost.storage_per_month, Usd(d("659.7069766656")));
    assert_eq!(l1.cost.storage_horizon, Usd(d("7916.4837199872")));
    // The GPUs wait for leg 1: 8,796.093022208 s × $3,600 / 3,600 s = $8,796.093022208.
    assert_eq!(l1.cost.gpu_idle, Usd(d("8796.093022208")));
    // AWS keeps billing the corpus until the copy is done: 10,240 GB × $0.023 = $235.52 a 30-day
    // month, × 8,796.093022208 s / 2,592,000 s = $0.79925 (to the micro-dollar).
    assert_eq!(l1.cost.extras.source_storage, Usd(d("0.79925")));
    // 912.60 + 0.008247 + 7,916.4837199872 + 8,796.093022208 + 0.79925 = 17,625.9842391952.
    assert_eq!(l1.cost.total(), Usd(d("17625.9842391952")));

    // Leg 2, CoreWeave → B2: CoreWeave's egress and requests are free — not AWS's $912.60 again.
    assert_eq!(l2.cost.egress, Usd::ZERO);
    assert_eq!(l2.cost.source_requests, Usd::ZERO);
    let direct = eval("aws:us-east-1", "backblaze-b2", 10_240 * GIB, 10_240);
    assert_eq!(
        direct.cost.egress,
        Usd(d("912.60")),
        "B2 fed from AWS pays again"
    );
    // B2: 11 LIST pages (75,000 free a month), 10,240 × (16 parts + 2) class A PUTs at $0.
    assert_eq!(l2.cost.destination_requests, Usd::ZERO);
    // Storage at B2: (10,995.11627776 − 10 free) GB × $0.00695 = $76.346558130432 a month,
    // × 12 = $916.158697565184.
    assert_eq!(l2.cost.storage_per_month, Usd(d("76.346558130432")));
    assert_eq!(l2.cost.storage_horizon, Usd(d("916.158697565184")));
    // No GPU waits for the cold copy, and CoreWeave's storage while it copies is leg 1's
    // horizon storage already (not priced twice).
    assert_eq!(l2.cost.gpu_idle, Usd::ZERO);
    assert_eq!(l2.cost.extras.source_storage, Usd::ZERO);
    assert_eq!(l2.cost.total(), Usd(d("916.158697565184")));

    // The chain: 17,625.9842391952 + 916.158697565184 = $18,542.142936760384; the legs one after
    // the other take 2 × 8,796.093022208 = 17,592.186044416 s; the GPUs start after leg 1.
    assert_eq!(chain.cost().total(), Usd(d("18542.142936760384")));
    assert_eq!(chain.cost().egress, Usd(d("912.60")));
    assert_eq!(chain.seconds(), d("17592.186044416"));
    assert_eq!(chain.ready_seconds(), t);
    // Storage every month where the data rests: 659.7069766656 + 76.346558130432.
    assert_eq!(chain.cost().storage_per_month, Usd(d("736.053534796032")));
}

fn write(dir: &Path, name: &str, len: usize, seed: u8) {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    let body: Vec<u8> = (0..len)
        .map(|i| (i as u8).wrapping_mul(29).wrapping_add(seed))
        .collect();
    std::fs::write(p, body).unwrap();
}

#[test]
fn then_prints_one_table_with_a_row_per_leg_and_the_total() {
    let o = moverctl()
        .args([
            "plan",
            "--from",
            "aws:us-east-1",
            "--to",
            "coreweave",
            "--then",
            "b2",
            "--bytes",
            "10TiB",
            "--objects",
            "10240",
            "--gpu-hourly",
            "3600",
        ])
        .output()
        .unwrap();
    expect(&o, 0);
    let text = String::from_utf8_lossy(&o.stdout);
    let table = &text[text.find("Multi-hop").expect("the chain's table")..];
    assert!(
        table.starts_with("Multi-hop aws:us-east-1/standard → coreweave → b2"),
        "{table}"
    );
    // Leg rows with their totals (whole dollars above $1,000, as the plan's tables print them)
    // and the chain's total row.
    let row = |start: &str| {
        table
            .lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no row {start:?} in\n{table}"))
            .to_string()
    };
    assert!(
        row("1 ").contains("$912.60") && row("1 ").contains("$17,626 "),
        "{table}"
    );
    assert!(
        row("2 ").contains("$916.16") && row("2 ").contains("$0 "),
        "{table}"
    );
    assert!(
        row("all").contains("$18,542 ") && row("all").contains("4 h"),
        "{table}"
    );

    let o = moverctl()
        .args([
            "plan",
            "--from",
            "aws:us-east-1",
            "--to",
            "coreweave",
            "--then",
            "b2",
            "--bytes",
            "10TiB",
            "--objects",
            "10240",
            "--gpu-hourly",
            "3600",
            "--json",
        ])
        .output()
        .unwrap();
    expect(&o, 0);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    // As documented in docs/json.md.
    let id = super::json_schema::validate(&v, &super::json_schema::schemas());
    assert_eq!(id, Ok("moverctl.plan/1".to_string()));
    let h = &v["hops"];
    assert_eq!(h["timing"], "sequential");
    assert_eq!(h["legs"].as_array().unwrap().len(), 2);
    assert_eq!(h["legs"][1]["from"], "coreweave:global/hot");
    assert_eq!(h["legs"][1]["cost"]["egress"].as_f64(), Some(0.0));
    assert_eq!(h["legs"][0]["cost"]["egress"].as_f64(), Some(912.6));
    assert_eq!(h["total"]["seconds"].as_f64(), Some(17592.186));
    // Without --then there is no chain.
    let o = moverctl()
        .args([
            "plan",
            "--from",
            "aws",
            "--to",
            "coreweave",
            "--bytes",
            "1TiB",
            "--objects",
            "10",
            "--json",
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["hops"].is_null());
}

#[test]
fn then_to_where_the_data_already_is_is_refused() {
    let o = moverctl()
        .args([
            "plan",
            "--from",
            "aws",
            "--to",
            "coreweave",
            "--then",
            "coreweave",
            "--bytes",
            "1TiB",
            "--objects",
            "10",
        ])
        .output()
        .unwrap();
    expect(&o, 2);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--then \"coreweave\" is where the previous leg"),
        "{err}"
    );
    let o = moverctl()
        .args([
            "plan",
            "--from",
            "aws",
            "--to",
            "coreweave",
            "--then",
            "b2",
            "--then-dst",
            "/a",
            "--then-dst",
            "/b",
            "--bytes",
            "1TiB",
            "--objects",
            "10",
        ])
        .output()
        .unwrap();
    expect(&o, 2);
    assert!(String::from_utf8_lossy(&o.stderr).contains("--then-dst is given 2 times"));
}

/// Local folders A → B → C: the saved leg files, the report's section, and exec leg by leg.
#[test]
fn each_leg_is_saved_and_exec_runs_them_in_order() {
    let root = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        root.path().join("a"),
        root.path().join("b"),
        root.path().join("c"),
    );
    write(&a, "x/1.bin", 10_000, 1);
    write(&a, "x/2.bin", 200_000, 2);
    write(&a, "3.bin", 3, 3);
    std::fs::create_dir_all(&b).unwrap();
    std::fs::create_dir_all(&c).unwrap();
    let plans = root.path().join("plans");
    let report = root.path().join("r.html");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let o = moverctl()
        .args([
            "plan", "--from", "onprem", "--to", "onprem", "--then", "onprem",
        ])
        .args(["--src", &s(&a), "--dst", &s(&b), "--then-dst", &s(&c)])
        .args([
            "--save",
            "hop",
            "--plans-dir",
            &s(&plans),
            "--report",
            &s(&report),
        ])
        .output()
        .unwrap();
    expect(&o, 0);
    let out = String::from_utf8_lossy(&o.stdout);
    let leg2 = plans.join("hop-leg2.toml");
    assert!(out.contains(&format!("Saved {}", leg2.display())), "{out}");
    let first = std::fs::read_to_string(plans.join("hop.toml")).unwrap();
    assert!(
        first.contains("[leg]") && first.contains("next = \"hop-leg2.toml\""),
        "{first}"
    );
    let second = std::fs::read_to_string(&leg2).unwrap();
    assert!(
        second.contains(&format!("location = \"{}\"", s(&b))),
        "{second}"
    );
    assert!(second.contains("index = 2"), "{second}");
    let page = std::fs::read_to_string(&report).unwrap();
    assert!(
        page.contains("<table id=\"hops\">"),
        "the report has the legs"
    );

    let exec = |plan: &Path| {
        moverctl()
            .args(["exec", plan.to_str().unwrap(), "--journal"])
            .arg(root.path().join(format!(
                "{}.journal",
                plan.file_stem().unwrap().to_string_lossy()
            )))
            .output()
            .unwrap()
    };
    let o = exec(&plans.join("hop.toml"));
    expect(&o, 0);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "leg 1 of 2 done; next leg: moverctl exec {}",
            leg2.display()
        )),
        "{err}"
    );
    assert!(!c.join("3.bin").exists(), "leg 2 has not run yet");
    let o = exec(&leg2);
    expect(&o, 0);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("next leg"));
    for f in ["x/1.bin", "x/2.bin", "3.bin"] {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(c.join(f)).unwrap(),
            "{f}"
        );
    }
}
