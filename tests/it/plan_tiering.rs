//! `plan --tiering`: hand-computed months for two fleets whose cheapest boundary differs, a
//! catalog fast tier priced and sped by its capacity, the errors that name what to give, the
//! throughput of a saved probe, the JSON against docs/json.md and the HTML report.
//!
//! Prices from providers/aws.toml: S3 Standard in us-east-1 is $0.023 per GB-month for the first
//! 50 TB (AWS's GB is 2^30 bytes), a GET is $0.0004 per 1,000, no retrieval fee.

use super::json_schema::{schemas, validate};
use super::*;
use serde_json::Value;

const GIB: u64 = 1 << 30;

/// `plan --tiering --json` with `args`, checked against docs/json.md.
fn tiering_json(args: &[&str]) -> Value {
    let o = moverctl()
        .args(["plan", "--tiering", "--json", "--no-probe"])
        .args(args)
        .output()
        .unwrap();
    expect(&o, 0);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let id = validate(&v, &schemas()).unwrap_or_else(|e| panic!("{}\n{v:#}", e.join("\n")));
    assert_eq!(id, "moverctl.plan-tiering/1");
    v
}

fn option<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["option"] == id)
        .unwrap_or_else(|| panic!("no option {id}"))
}

fn usd(v: &Value) -> Decimal {
    v.to_string().parse().unwrap()
}

/// Totals of the four options, in order.
fn totals(v: &Value) -> Vec<Decimal> {
    [
        "object-only",
        "working-set-fast",
        "checkpoints-fast",
        "all-fast",
    ]
    .iter()
    .map(|o| usd(&option(v, o)["total"]))
    .collect()
}

const DATA: &str = "name=web,size=10TiB,objects=1M,reads=4";

// Cheap GPUs ($36 an hour) and a slow on-premises fast tier (1 GiB/s, $100 per TiB-month)
// against an object store that gives the nodes 4 GiB/s read and 2 GiB/s write.
// 720 training hours, a 100 GiB checkpoint every 2 h (360 a month), 3 kept.
//
// Object storage, every option: (10,240 + 300) GiB × $0.023 = $242.42.
// Reading 4 × 10 TiB = 40,960 GiB over 720 h needs 0.0158 GiB/s: neither tier stalls.
// a) object-only: checkpoint 100 GiB / 2 GiB/s = 50 s × 360 = 18,000 s = 5 h × $36 = $180;
//    4M GETs × $0.0004/1,000 = $1.60. Total 242.42 + 180 + 1.60 = $424.02.
// b) working-set-fast: 10 TiB × $100 = $1,000 fast; staging 10,240 GiB at min(4, 1) GiB/s =
//    10,240 s = 2.8444 h × $36 = $102.40, 1M GETs = $0.40; checkpoints as a) $180.
//    Total 242.42 + 1,000 + 102.40 + 0.40 + 180 = $1,525.22.
// c) checkpoints-fast: 300 GiB × $100/1,024 = $29.296875 fast; checkpoint 100 GiB / 1 GiB/s =
//    100 s × 360 = 10 h × $36 = $360; reads $1.60. Total 242.42 + 29.296875 + 360 + 1.60 =
//    $633.316875.
// d) all-fast: 10,540 GiB × $100/1,024 = $1,029.296875; checkpoints $360; staging $102.80.
//    Total 242.42 + 1,029.296875 + 360 + 102.80 = $1,734.516875.
// Cheapest: all on object storage.
#[test]
fn cheap_gpus_and_a_slow_fast_tier_keep_everything_on_object_storage() {
    let v = tiering_json(&[
        "--from",
        "aws:us-east-1",
        "--dataset",
        DATA,
        "--checkpoint",
        "size=100GiB,every=2h,keep=3",
        "--fast-tier",
        "onprem",
        "--fast-tier-price",
        "100/TiB-month",
        "--fast-tier-throughput",
        "1GiB/s",
        "--object-throughput",
        "4GiB/s,2GiB/s",
        "--train-hours",
        "720",
        "--gpu-hourly",
        "36",
    ]);
    assert_eq!(
        totals(&v),
        [d("424.02"), d("1525.22"), d("633.316875"), d("1734.516875")]
    );
    assert_eq!(v["cheapest"], "object-only");
    let a = option(&v, "object-only");
    assert_eq!(usd(&a["object_storage"]), d("242.42"));
    assert_eq!(usd(&a["checkpoint_idle"]["hours"]), d("5"));
    assert_eq!(usd(&a["object_reads"]), d("1.6"));
    let b = option(&v, "working-set-fast");
    assert_eq!(usd(&b["staging_idle"]["usd"]), d("102.4"));
    assert_eq!(b["fast_tier_bytes"], 10 * 1024 * GIB);
    assert_eq!(
        usd(&option(&v, "checkpoints-fast")["checkpoint_idle"]["usd"]),
        d("360")
    );
    assert_eq!(v["checkpoints"]["per_month"], 360);
}

// 512 H100 at $8.7890625 an hour each = $4,500 an hour; a 400 GiB/s read, 200 GiB/s write
// on-premises fast tier at $100 per TiB-month; 1 TiB checkpoints every hour (720 a month), 4 kept.
//
// Object storage: (10,240 + 4,096) GiB × $0.023 = $329.728.
// a) object-only: 1,024 GiB / 2 GiB/s = 512 s × 720 = 368,640 s = 102.4 h × $4,500 = $460,800;
//    reads $1.60. Total $461,131.328.
// b) working-set-fast: $1,000 fast; staging 10,240 GiB / 4 GiB/s = 2,560 s = $3,200, $0.40 of
//    GETs; checkpoints $460,800. Total $465,330.128.
// c) checkpoints-fast: 4 TiB = $400 fast; 1,024 GiB / 200 GiB/s = 5.12 s × 720 = 3,686.4 s =
//    1.024 h × $4,500 = $4,608; reads $1.60. Total 329.728 + 400 + 4,608 + 1.60 = $5,339.328.
// d) all-fast: 14 TiB = $1,400; $4,608; staging $3,200.40. Total $9,538.128.
// Cheapest: checkpoints on the fast tier, drained.
#[test]
fn an_expensive_fleet_writes_checkpoints_to_the_fast_tier() {
    let v = tiering_json(&[
        "--from",
        "aws:us-east-1",
        "--dataset",
        DATA,
        "--checkpoint",
        "size=1TiB,every=1h,keep=4",
        "--fast-tier",
        "onprem",
        "--fast-tier-price",
        "100/TiB-month",
        "--fast-tier-throughput",
        "400GiB/s,200GiB/s",
        "--object-throughput",
        "4GiB/s,2GiB/s",
        "--train-hours",
        "720",
        "--gpus",
        "512",
        "--gpu-rate",
        "8.7890625",
    ]);
    assert_eq!(
        totals(&v),
        [
            d("461131.328"),
            d("465330.128"),
            d("5339.328"),
            d("9538.128")
        ]
    );
    assert_eq!(v["cheapest"], "checkpoints-fast");
    assert_eq!(usd(&v["assumptions"]["gpu_hourly"]), d("4500"));
    let c = option(&v, "checkpoints-fast");
    assert_eq!(usd(&c["checkpoint_idle"]["hours"]), d("1.024"));
    assert_eq!(c["fast_tier_bytes"], 4096 * GIB);
}

// A catalog tier: FSx for Lustre Persistent SSD 125 at $0.145 per GB-month (AWS GB = 2^30) and
// 125 MB/s per TiB. With the 10 TiB working set on it: 10,240 × $0.145 = $1,484.80 a month and
// 10 × 125 MB/s = 1.25 GB/s. Training that wants 20 GiB/s stalls on both tiers:
// 40,960 GiB at 20 GiB/s takes 2,048 s; from the store at 4 GiB/s 10,240 s (8,192 s of stall),
// from the fast tier 43,980,465,111,040 B / 1.25e9 B/s = 35,184.372… s (33,136.372… s of stall).
#[test]
fn a_catalog_tier_buys_throughput_with_capacity() {
    let v = tiering_json(&[
        "--from",
        "aws:us-east-1",
        "--dataset",
        DATA,
        "--fast-tier",
        "aws-fsx-lustre-persistent-ssd-125",
        "--object-throughput",
        "4GiB/s,2GiB/s",
        "--read-rate",
        "20GiB/s",
        "--gpu-hourly",
        "3600",
    ]);
    let b = option(&v, "working-set-fast");
    assert_eq!(usd(&b["fast_storage"]), d("1484.8"));
    assert_eq!(usd(&b["fast_read_bytes_per_second"]), d("1250000000"));
    let a = option(&v, "object-only");
    // $3,600 an hour is $1 a second.
    assert_eq!(usd(&a["loading_idle"]["usd"]), d("8192"));
    let stall = usd(&b["loading_idle"]["usd"]);
    assert!(stall > d("33136.37") && stall < d("33136.38"), "{stall}");
    assert_eq!(v["fast_tier"]["per_tib"], true);
    assert_eq!(v["fast_tier"]["confidence"], "third-party");
    assert!(
        v["fast_tier"]["source"]
            .as_str()
            .unwrap()
            .contains("aws.amazon.com/fsx/lustre/pricing")
    );
    assert!(v["checkpoints"].is_null());
    assert_eq!(v["cheapest"], "object-only");
}

fn refused(args: &[&str]) -> String {
    let o = moverctl()
        .args([
            "plan",
            "--tiering",
            "--from",
            "aws:us-east-1",
            "--dataset",
            DATA,
        ])
        .args(args)
        .env("MOVERCTL_STATE_DIR", "/nonexistent-moverctl-state")
        .output()
        .unwrap();
    expect(&o, 2);
    text(&o)
}

#[test]
fn errors_name_the_fast_tiers_and_the_missing_flag() {
    let ot = ["--object-throughput", "4GiB/s"];
    let e = refused(&[&ot[..], &["--fast-tier", "fsx"]].concat());
    assert!(e.contains("unknown fast tier \"fsx\""), "{e}");
    for known in [
        "aws-fsx-lustre-persistent-ssd-125",
        "azure-managed-lustre-125",
        "gcp-parallelstore",
        "gcp-managed-lustre-1000",
    ] {
        assert!(e.contains(known), "{known} not listed: {e}");
    }
    let e = refused(
        &[
            &ot[..],
            &["--fast-tier", "onprem", "--fast-tier-throughput", "9GB/s"],
        ]
        .concat(),
    );
    assert!(
        e.contains("--fast-tier onprem needs --fast-tier-price"),
        "{e}"
    );
    let e = refused(
        &[
            &ot[..],
            &["--fast-tier", "onprem", "--fast-tier-price", "90"],
        ]
        .concat(),
    );
    assert!(e.contains("needs --fast-tier-throughput"), "{e}");
    let e = refused(&[&ot[..], &["--fast-tier", "gcp-managed-lustre-125"]].concat());
    assert!(
        e.contains("no sourced price") && e.contains("--fast-tier-price"),
        "{e}"
    );
    let e = refused(&["--fast-tier", "aws-fsx-lustre-scratch-2"]);
    assert!(
        e.contains("moverctl probe") && e.contains("--object-throughput"),
        "{e}"
    );
    let e = refused(
        &[
            &ot[..],
            &["--fast-tier", "onprem", "--fast-tier-price", "9/PB"],
        ]
        .concat(),
    );
    assert!(e.contains("unknown unit"), "{e}");
}

/// Without --object-throughput, the newest saved probe of the --from provider gives the object
/// store's read and write throughput, times --nodes.
#[test]
fn a_saved_probe_times_the_object_store() {
    let data = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let o = moverctl()
        .env("MOVERCTL_STATE_DIR", state.path())
        .args(["probe", data.path().to_str().unwrap(), "--size", "512KiB"])
        .args(["--streams", "2", "--requests", "3"])
        .output()
        .unwrap();
    expect(&o, 0);
    let file = std::fs::read_dir(state.path().join("probes/onprem"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let o = moverctl()
        .env("MOVERCTL_STATE_DIR", state.path())
        .args([
            "plan",
            "--tiering",
            "--json",
            "--from",
            "onprem",
            "--dataset",
            DATA,
        ])
        .args(["--fast-tier", "onprem", "--fast-tier-price", "100"])
        .args(["--fast-tier-throughput", "10GB/s", "--nodes", "3"])
        .output()
        .unwrap();
    expect(&o, 0);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let per_node = |k: &str| saved[k].as_f64().unwrap().round();
    let got = |k: &str| v["object_store"][k].as_f64().unwrap();
    assert_eq!(
        got("read_bytes_per_second"),
        3.0 * per_node("multi_stream_get_bytes_per_sec")
    );
    assert_eq!(
        got("write_bytes_per_second"),
        3.0 * per_node("multi_stream_bytes_per_sec")
    );
    let from = v["object_store"]["throughput_from"].as_str().unwrap();
    assert!(
        from.starts_with("probe of ") && from.contains("× 3 nodes"),
        "{from}"
    );
}

/// The table names the cheapest boundary; the report draws the JSON's amounts.
#[test]
fn the_table_and_the_report_agree_with_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("tiering.html");
    let args = [
        "plan",
        "--tiering",
        "--no-probe",
        "--from",
        "aws:us-east-1",
        "--dataset",
        DATA,
        "--checkpoint",
        "size=1TiB,every=1h,keep=4",
        "--fast-tier",
        "onprem",
        "--fast-tier-price",
        "100/TiB-month",
        "--fast-tier-throughput",
        "400GiB/s,200GiB/s",
        "--object-throughput",
        "4GiB/s,2GiB/s",
        "--gpu-hourly",
        "4500",
    ];
    let o = moverctl()
        .args(args)
        .arg("--report")
        .arg(&page)
        .output()
        .unwrap();
    expect(&o, 0);
    let out = text(&o);
    assert!(
        out.contains("Cheapest boundary: checkpoints on fast tier, drained (checkpoints-fast)"),
        "{out}"
    );
    assert!(out.contains("Report written to"), "{out}");
    let widest = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| l.chars().count())
        .max()
        .unwrap();
    assert!(widest <= 100, "the table is {widest} columns wide");
    let v = tiering_json(&args[3..]);
    let html = std::fs::read_to_string(&page).unwrap();
    for o in v["options"].as_array().unwrap() {
        let id = o["option"].as_str().unwrap();
        for item in [
            "object_storage",
            "fast_storage",
            "object_reads",
            "staging_fees",
        ] {
            let amount = usd(&o[item]);
            let seg = format!("data-option=\"{id}\" data-item=\"{item}\" data-value=\"{amount}\"");
            assert_eq!(html.contains(&seg), !amount.is_zero(), "{seg}");
        }
        let idle = usd(&o["checkpoint_idle"]["usd"]);
        let seg =
            format!("data-option=\"{id}\" data-item=\"checkpoint_idle\" data-value=\"{idle}\"");
        assert!(html.contains(&seg), "{seg}");
        let total = format!("data-option=\"{id}\" data-value=\"{}\"", usd(&o["total"]));
        assert!(html.contains(&total), "{total}");
    }
    let lower = html.to_ascii_lowercase();
    for bad in ["<script", "<link", "<img", " src=", "href=", "@import"] {
        assert!(!lower.contains(bad), "the report contains {bad:?}");
    }
    assert!(html.contains("Price sources and dates") && html.contains("Assumptions"));
}

/// onprem.toml with one fast tier appended (`extra` replaces nothing; `edit` breaks it).
fn with_fast_tier(edit: impl FnOnce(String) -> String) -> (String, Result<(), String>) {
    let base = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/providers/onprem.toml"
    ))
    .unwrap();
    let tier = "\n[[fast_tiers]]\nid = \"onprem-weka\"\nname = \"WEKA\"\nregion = \"local\"\nprice = \"0.1\"\nunit = \"gb-month\"\nread_mb_per_s_per_tib = \"1000\"\nwrite_mb_per_s_per_tib = \"500\"\nconfidence = \"unverified\"\nsource = \"a quote\"\nas_of = 2026-12-06\n";
    let text = edit(base + tier);
    let r = moverctl::catalog::parse_provider("x/onprem.toml", "onprem.toml", &text, "test")
        .map(|_| ())
        .map_err(|e| e.to_string());
    (text, r)
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn fast_tier_errors_name_file_line_and_field() {
    let (_, ok) = with_fast_tier(|t| t);
    assert_eq!(ok, Ok(()));
    let (text, e) = with_fast_tier(|t| t.replace("unit = \"gb-month\"\n", ""));
    let e = e.unwrap_err();
    let at = format!("x/onprem.toml:{}:", line_of(&text, "[[fast_tiers]]"));
    assert!(
        e.starts_with(&at) && e.contains("field `fast_tiers[0].unit`"),
        "{e}"
    );
    assert!(e.contains("a price needs its unit"), "{e}");
    let (text, e) = with_fast_tier(|t| t.replace("id = \"onprem-weka\"", "id = \"weka\""));
    let e = e.unwrap_err();
    let at = format!("x/onprem.toml:{}:", line_of(&text, "id = \"weka\""));
    assert!(e.starts_with(&at) && e.contains("fast_tiers[0].id"), "{e}");
    let (_, e) = with_fast_tier(|t| t.replace("price = \"0.1\"", "price = 0.1"));
    assert!(e.unwrap_err().contains("fast_tiers[0].price"));
    let (_, e) = with_fast_tier(|t| {
        t.replace(
            "read_mb_per_s_per_tib = \"1000\"",
            "read_mb_per_s_per_tib = \"0\"",
        )
    });
    assert!(
        e.unwrap_err()
            .contains("fast_tiers[0].read_mb_per_s_per_tib")
    );
    let (_, e) = with_fast_tier(|t| t.replace("source = \"a quote\"\n", ""));
    assert!(e.unwrap_err().contains("missing field `source`"));
}

/// Every shipped fast tier carries a source and a date; a price only with its unit.
#[test]
fn shipped_fast_tiers_are_sourced() {
    let c = moverctl::catalog::Catalog::embedded().unwrap();
    let tiers = c.fast_tiers();
    for id in [
        "aws-fsx-lustre-persistent-ssd-125",
        "azure-managed-lustre-125",
        "gcp-parallelstore",
        "gcp-managed-lustre-125",
    ] {
        assert!(tiers.iter().any(|t| t.id == id), "{id} missing");
    }
    for t in tiers {
        assert!(t.source.contains("https://"), "{}: {}", t.id, t.source);
        assert_eq!(t.price.is_some(), t.unit.is_some(), "{}", t.id);
    }
}
