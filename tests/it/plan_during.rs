//! Issue 29: exit waivers checked against their conditions, what the GPUs do during the move (idle,
//! train from the source, lazy read-through), read bandwidth against the GPUs' need, and the
//! verdict line. Every expected number is worked out by hand in the comment above it from
//! providers/*.toml.
//!
//! Numbers used throughout:
//! - AWS internet egress per month (GB = 2^30): 100 GB free (taken from the first tier), $0.09 to
//!   10,240 GB, $0.085 to 51,200, $0.07 to 153,600, $0.05 above. S3 Standard GET $0.0004 / 1,000.
//! - GCS internet egress: 100 GB free, $0.12 / GB flat (GB = 2^30); GET $0.0004 / 1,000.
//! - A month is 30 days = 2,592,000 s = 720 h.

use super::*;
use moverctl::money::Usd;
use moverctl::plan::during::During;
use moverctl::plan::horizon::{ComputeAt, Reads};
use moverctl::plan::model::Assumptions;
use moverctl::plan::waiver::WaiverStatus;

fn at(provider: &str, region: &str) -> ComputeAt {
    ComputeAt {
        given: format!("{provider}:{region}"),
        provider: provider.to_string(),
        region: Some(region.to_string()),
        in_catalog: true,
    }
}

fn reads(a: &mut Assumptions, compute: ComputeAt, per_month: &str) {
    a.reads = Some(Reads {
        compute,
        per_month: d(per_month),
    });
}

/// 1,296,000 GiB in 1,296,000 objects of 1 GiB, copied at 2^27 B/s (128 MiB/s):
/// 1,296,000 x 2^30 / 2^27 = 1,296,000 x 8 = 10,368,000 s = 120 days.
fn big() -> moverctl::plan::corpus::Corpus {
    corpus(1_296_000 * GIB, 1_296_000)
}

// The whole move's egress: 120 days = 4 months of 324,000 GB. One month:
// 10,240 x 0.09 = 921.60; 40,960 x 0.085 = 3,481.60; 102,400 x 0.07 = 7,168.00;
// (324,000 - 153,600) x 0.05 = 8,520.00; less the 100 GB free at 0.09 = 9.00 -> 20,082.20;
// x 4 = 80,328.80.
// The waiver's window is 60 days: half the bytes, 648,000 GB, are copied within it and credited.
// The other 648,000 GB are charged on their own over months_of(120 - 60 days) = 2 months of
// 324,000 GB: 2 x 20,082.20 = 40,164.40. Credited: 80,328.80 - 40,164.40 = 40,164.40.
#[test]
fn waiver_credits_only_the_bytes_inside_its_window() {
    let c = eval_with("aws:us-east-1", "cloudflare-r2", &big(), |a| {
        a.bandwidth = d("134217728");
        a.exit_waiver = true;
    });
    assert_eq!(c.time.seconds, d("10368000"), "bound {:?}", c.time.bound);
    assert_eq!(c.cost.egress_before_waiver, Usd(d("80328.80")));
    let w = c.waiver.as_ref().expect("a waiver check");
    assert_eq!(w.status, WaiverStatus::Partial);
    assert_eq!(w.bytes_in_window, 648_000 * GIB);
    assert_eq!(w.charged, Usd(d("40164.40")));
    assert_eq!(w.credited, Usd(d("40164.40")));
    assert_eq!(c.cost.egress, Usd(d("40164.40")));
    assert_eq!(w.window_starts, "unstated");
    let reason = c
        .warnings
        .iter()
        .find(|x| x.starts_with("exit waiver only in part"))
        .expect("the reason is printed");
    assert!(
        reason.contains("window of 60 days") && reason.contains("$40,164"),
        "{reason}"
    );
    // The conditions, notice included, are printed beside it.
    assert!(
        c.warnings
            .iter()
            .any(|x| x.starts_with("exit waiver of aws:") && x.contains("notice: Request it")),
        "{:?}",
        c.warnings
    );

    // Twice the rate (2^28 B/s): 60 days, all inside the window, so all of it is credited. The
    // egress: 2 months of 648,000 GB: 921.60 + 3,481.60 + 7,168.00 + (648,000 - 153,600) x 0.05
    // = 24,720.00, less 9.00 free = 36,282.20 a month, x 2 = 72,564.40.
    let c = eval_with("aws:us-east-1", "cloudflare-r2", &big(), |a| {
        a.bandwidth = d("268435456");
        a.exit_waiver = true;
    });
    assert_eq!(c.time.seconds, d("5184000"));
    assert_eq!(c.cost.egress_before_waiver, Usd(d("72564.40")));
    let w = c.waiver.as_ref().unwrap();
    assert_eq!(w.status, WaiverStatus::Credited);
    assert_eq!((w.credited, c.cost.egress), (Usd(d("72564.40")), Usd::ZERO));
}

// GPUs at the source's provider (--compute-at aws:…): the waiver requires leaving; nothing is
// credited and the reason says so.
#[test]
fn waiver_is_never_credited_when_the_gpus_stay_at_the_source() {
    let c = eval_with("aws:us-east-1", "cloudflare-r2", &big(), |a| {
        a.bandwidth = d("268435456");
        a.exit_waiver = true;
        reads(a, at("aws", "us-east-1"), "1");
    });
    let w = c.waiver.as_ref().unwrap();
    assert_eq!(w.status, WaiverStatus::Refused);
    assert_eq!(c.cost.egress, Usd(d("72564.40")));
    assert!(
        c.warnings
            .iter()
            .any(|x| x.starts_with("exit waiver refused: the GPUs stay at aws")),
        "{:?}",
        c.warnings
    );
    // Compute elsewhere: credited again.
    let c = eval_with("aws:us-east-1", "cloudflare-r2", &big(), |a| {
        a.bandwidth = d("268435456");
        a.exit_waiver = true;
        reads(a, at("coreweave", "global"), "1");
    });
    assert_eq!(c.cost.egress, Usd::ZERO);
}

#[test]
fn the_three_waivers_carry_the_same_conditions() {
    for id in ["aws", "gcp", "azure"] {
        let w = catalog().get(id).unwrap().file.exit_waiver.clone().unwrap();
        assert!(w.requires_full_exit, "{id} must-leave");
        assert_eq!(w.window_days, 60, "{id}");
        assert!(!w.notice.is_empty(), "{id} notice");
        assert!(!w.source.is_empty(), "{id} source");
    }
    let starts = |id: &str| {
        (catalog().get(id).unwrap().file.exit_waiver.clone())
            .unwrap()
            .window_starts
            .as_str()
    };
    assert_eq!(starts("gcp"), "approval");
    assert_eq!(starts("azure"), "start-date");
    assert_eq!(starts("aws"), "unstated");
    let gcp = catalog()
        .get("gcp")
        .unwrap()
        .file
        .exit_waiver
        .clone()
        .unwrap();
    assert!(gcp.credit_covers.unwrap().contains("form was submitted"));
}

/// 10,368 GiB in 10,368 objects of 1 GiB. The GPUs need (1 read a month over 720 h)
/// 10,368 x 2^30 / 2,592,000 = 0.004 x 2^30 = 4,294,967.296 B/s. At 0.008 x 2^30 =
/// 8,589,934.592 B/s the move takes 10,368 x 2^30 / that = 1,296,000 s = 15 days = 360 h.
fn mid() -> moverctl::plan::corpus::Corpus {
    corpus(10_368 * GIB, 10_368)
}

// AWS -> CoreWeave, GPUs at CoreWeave reading the corpus once a month, $100 an hour:
// - idle: 360 h x 100 = 36,000.
// - train from the source: half a month of reads from S3 over the internet: 5,184 GB:
//   (5,184 - 100) x 0.09 = 457.56; GETs 5,184 x 0.0004 / 1,000 = 0.0020736 -> 457.5620736,
//   457.562074 to the micro-dollar. Cheapest: chosen, no idle.
// - lazy: CoreWeave offers none.
#[test]
fn training_from_the_source_replaces_idle_when_cheaper() {
    let c = eval_with("aws:us-east-1", "coreweave", &mid(), |a| {
        a.bandwidth = d("8589934.592");
        a.gpu_hourly = Usd(d("100"));
        reads(a, at("coreweave", "global"), "1");
    });
    assert_eq!(c.time.seconds, d("1296000"), "bound {:?}", c.time.bound);
    let m = c.during.as_ref().unwrap();
    let cost = |o: During| m.options.iter().find(|x| x.option == o).unwrap();
    assert_eq!(cost(During::Idle).cost, Usd(d("36000")));
    assert_eq!(cost(During::FromSource).cost, Usd(d("457.562074")));
    assert!(!cost(During::Lazy).available);
    assert_eq!(m.chosen, During::FromSource);
    assert_eq!(c.cost.gpu_idle, Usd::ZERO);
    assert_eq!(c.cost.during_move, Usd(d("457.562074")));
    assert!(c.cost.one_time() >= Usd(d("457.562074")));
    // Without a GPU cost, idling costs nothing and is kept.
    let c = eval_with("aws:us-east-1", "coreweave", &mid(), |a| {
        a.bandwidth = d("8589934.592");
        reads(a, at("coreweave", "global"), "1");
    });
    assert_eq!(c.during.as_ref().unwrap().chosen, During::Idle);
    assert_eq!(c.cost.during_move, Usd::ZERO);
}

// The same move with S3 giving the GPUs a quarter of their need (1,073,741.824 B/s): training
// from the source stalls 360 h x (1 - 1/4) = 270 h = 27,000 -> 27,457.562074, still below idle.
// CoreWeave giving half the need (2,147,483.648 B/s): every month the reads take twice the 720
// training hours: 720 stall hours x 100 = 72,000 a month, 864,000 over 12 months, in the total.
#[test]
fn slow_stores_stall_the_gpus_and_the_stall_is_priced() {
    let c = eval_with("aws:us-east-1", "coreweave", &mid(), |a| {
        a.bandwidth = d("8589934.592");
        a.gpu_hourly = Usd(d("100"));
        reads(a, at("coreweave", "global"), "1");
        a.feed.given = vec![
            (Some("aws".into()), d("1073741.824")),
            (Some("coreweave".into()), d("2147483.648")),
        ];
    });
    let m = c.during.as_ref().unwrap();
    assert_eq!(m.chosen, During::FromSource);
    assert_eq!(c.cost.during_move, Usd(d("27457.562074")));
    let f = c.feed.as_ref().unwrap();
    assert_eq!(f.need, d("4294967.296"));
    assert_eq!(f.can_feed(), Some(false));
    assert_eq!(f.stall_hours_per_month, d("720"));
    assert_eq!(c.cost.read_stall_per_month, Usd(d("72000")));
    assert_eq!(c.cost.read_stall, Usd(d("864000")));
    assert!(
        c.warnings
            .iter()
            .any(|w| w.starts_with("coreweave: gives the GPUs") && w.contains("720 GPU hours")),
        "{:?}",
        c.warnings
    );
    // A store with no published rate, no probe and no flag is not modelled (and says so).
    let c = eval_with("aws:us-east-1", "coreweave", &mid(), |a| {
        reads(a, at("coreweave", "global"), "1");
    });
    let f = c.feed.as_ref().unwrap();
    assert_eq!((f.supply, f.can_feed()), (None, None));
    assert!(f.supply_from.starts_with("not modelled"));
    // Azure publishes an account egress limit: 50 Gbit/s = 6,250,000,000 B/s.
    let c = eval_with("aws:us-east-1", "azure:eastus", &mid(), |a| {
        reads(a, at("azure", "eastus"), "1");
    });
    let f = c.feed.as_ref().unwrap();
    assert_eq!(f.supply, Some(d("6250000000")));
    assert!(
        f.supply_from.starts_with("catalog: azure"),
        "{}",
        f.supply_from
    );
}

// GCS -> Cloudflare R2 (Sippy reads from GCS), GPUs at CoreWeave, one read a month, $100 an hour:
// - idle 36,000;
// - train from the source: 5,184 GB over half a month: (5,184 - 100) x 0.12 = 610.08, GETs
//   0.0020736 -> 610.082074;
// - lazy: the path (8,589,934.592 B/s) is faster than the need (4,294,967.296 B/s): no stall, 0.
#[test]
fn lazy_migration_where_the_destination_offers_it() {
    let c = eval_with("gcp:us-central1", "cloudflare-r2", &mid(), |a| {
        a.bandwidth = d("8589934.592");
        a.gpu_hourly = Usd(d("100"));
        reads(a, at("coreweave", "global"), "1");
    });
    let m = c.during.as_ref().unwrap();
    let cost = |o: During| m.options.iter().find(|x| x.option == o).unwrap().cost;
    assert_eq!(cost(During::Idle), Usd(d("36000")));
    assert_eq!(cost(During::FromSource), Usd(d("610.082074")));
    assert_eq!(cost(During::Lazy), Usd::ZERO);
    assert_eq!(m.chosen, During::Lazy);
    assert_eq!(m.lazy_name.as_deref(), Some("Sippy"));
    assert_eq!(
        (c.cost.gpu_idle, c.cost.during_move),
        (Usd::ZERO, Usd::ZERO)
    );
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("Sippy") && w.contains("not verified until the tail is forced")),
        "{:?}",
        c.warnings
    );
    // A path at half the need holds the first pass back: 10,368 GiB / 2,147,483.648 B/s =
    // 5,184,000 s against 2,592,000 s at the need: 2,592,000 s = 720 h x 100 = 72,000. The move
    // itself takes 5,184,000 s = 2 months: training from the source is 2 x ((10,368 - 100) x
    // 0.12 = 1,232.16 + 0.0041472) = 2,464.3282944 -> 2,464.328294: chosen.
    let c = eval_with("gcp:us-central1", "cloudflare-r2", &mid(), |a| {
        a.bandwidth = d("2147483.648");
        a.gpu_hourly = Usd(d("100"));
        reads(a, at("coreweave", "global"), "1");
    });
    let m = c.during.as_ref().unwrap();
    let cost = |o: During| m.options.iter().find(|x| x.option == o).unwrap().cost;
    assert_eq!(cost(During::Lazy), Usd(d("72000")));
    assert_eq!(cost(During::FromSource), Usd(d("2464.328294")));
    assert_eq!(m.chosen, During::FromSource);
    // Tigris shadows any S3-API source (B2 here) but not Azure Blob; R2's Sippy not B2.
    let lazy = |from: &str, to: &str| {
        let c = eval_with(from, to, &mid(), |a| {
            reads(a, at("coreweave", "global"), "1")
        });
        let m = c.during.unwrap();
        m.options
            .iter()
            .find(|o| o.option == During::Lazy)
            .unwrap()
            .available
    };
    assert!(lazy("backblaze-b2", "tigris"));
    assert!(!lazy("azure", "tigris"));
    assert!(!lazy("backblaze-b2", "cloudflare-r2"));
    // An archive source cannot be read through.
    assert!(!lazy("aws/deep-archive", "cloudflare-r2"));
}

fn plan(args: &[&str]) -> std::process::Output {
    moverctl().arg("plan").args(args).output().unwrap()
}

const TEN_TIB: &[&str] = &[
    "--from",
    "aws:us-east-1",
    "--to",
    "coreweave",
    "--bytes",
    "10TiB",
    "--objects",
    "163840",
    "--compute-at",
    "coreweave",
    "--no-probe",
];

// 10 TiB from AWS to CoreWeave, GPUs at CoreWeave (see plan_horizon's break-even test): the move
// once 912.666356, then 659.7069766656 a month; staying 1,148.185536 a month.
// One epoch a month over 12 months: move 912.666356 + 12 x 659.7069766656 = 8,829.150076, plus the
// source's storage while the copy runs (8,796.093 s of 10,240 GB at $0.023 a 30-day month:
// 235.52 x 8,796.093 / 2,592,000 = 0.79925) = 8,829.949326 (the GPUs cost nothing an hour, so
// idling is kept); stay 13,778.226432; saves 4,948.277106 -> $4,948.
// No reads: stay 12 x 235.52 = 2,826.24 against the move's 8,829.949326: staying is 6,003.709326
// cheaper -> $6,004.
#[test]
fn the_verdict_ends_the_output_and_is_the_json_field_and_the_report_headline() {
    let mut args = TEN_TIB.to_vec();
    args.extend(["--epochs", "12", "--over-months", "12"]);
    let o = plan(&args);
    expect(&o, 0);
    let out = String::from_utf8_lossy(&o.stdout);
    let last = out.trim_end().lines().last().unwrap();
    assert_eq!(
        last,
        "Verdict: move to coreweave (GPUs idle during the move): saves $4,948 over 12 months against staying; break-even month 2 (read rate not modelled: give --store-read-rate)"
    );
    let mut j = args.clone();
    j.push("--json");
    let o = plan(&j);
    expect(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["verdict"], last.trim_start_matches("Verdict: "));
    assert_eq!(v["candidates"][0]["during_move"]["chosen"], "idle");
    assert_eq!(v["assumptions"]["train_hours_per_month"], 720);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.html");
    let mut r = args.clone();
    r.extend(["--report", file.to_str().unwrap()]);
    expect(&plan(&r), 0);
    let html = std::fs::read_to_string(&file).unwrap();
    assert!(
        html.contains(&format!(
            "<p id=\"verdict\"><b>Verdict: {}</b></p>",
            moverctl::plan::report::esc(v["verdict"].as_str().unwrap())
        )),
        "the report's headline"
    );

    let mut args = TEN_TIB.to_vec();
    args.extend(["--reads-per-month", "0"]);
    let o = plan(&args);
    expect(&o, 0);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout)
            .trim_end()
            .lines()
            .last()
            .unwrap(),
        "Verdict: stay at aws:us-east-1/standard: the cheapest move, to coreweave (GPUs idle during the move), costs $6,004 more over 12 months"
    );
}

// The CLI: --store-read-rate per provider, --read-rate for the need; the table and JSON say
// which option each candidate takes and whether its store feeds the GPUs.
#[test]
fn cli_prints_options_feed_and_refuses_bad_rates() {
    let mut args = TEN_TIB.to_vec();
    args.extend([
        "--reads-per-month",
        "1",
        "--gpu-hourly",
        "100",
        "--bandwidth",
        "1Gbps",
        "--read-rate",
        "10Gbps",
        "--store-read-rate",
        "coreweave=5Gbps,aws=20Gbps",
        "--json",
    ]);
    let o = plan(&args);
    expect(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let cw = v["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["destination"] == "coreweave")
        .unwrap();
    // Need 10 Gbit/s = 1,250,000,000 B/s; CoreWeave 5 Gbit/s: 720 x (2 - 1) = 720 stall hours a
    // month, x 100 = 72,000 a month.
    assert_eq!(cw["read_feed"]["need_bytes_per_second"], 1250000000);
    assert_eq!(cw["read_feed"]["supply_bytes_per_second"], 625000000);
    assert_eq!(cw["read_feed"]["can_feed"], false);
    assert_eq!(cw["cost"]["read_stall_per_month"], 72000);
    assert_eq!(cw["during_move"]["chosen"], "train-from-source");
    let stay = v["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "stay")
        .unwrap();
    assert_eq!(stay["read_feed"]["can_feed"], true);
    assert!(stay["during_move"].is_null());
    args.pop();
    let o = plan(&args);
    expect(&o, 0);
    let out = text(&o);
    for needle in [
        "Feed     the GPUs need 10.0 Gbit/s (--read-rate",
        "during: from source",
        "stalls 720h/mo",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in\n{out}");
    }
    let bad = |extra: &[&str], needle: &str| {
        let mut a = TEN_TIB.to_vec();
        a.extend(["--reads-per-month", "1"]);
        a.extend_from_slice(extra);
        let o = plan(&a);
        expect(&o, 2);
        assert!(text(&o).contains(needle), "{needle:?} in {}", text(&o));
    };
    bad(&["--store-read-rate", "corewave=5Gbps"], "coreweave");
    bad(&["--store-read-rate", "0Gbps"], "--store-read-rate");
    bad(&["--read-rate", "fast"], "--read-rate");
    let o = plan(&[
        "--from",
        "aws",
        "--to",
        "coreweave",
        "--bytes",
        "1TB",
        "--objects",
        "1",
        "--read-rate",
        "1Gbps",
    ]);
    expect(&o, 2);
    assert!(text(&o).contains("--compute-at"), "{}", text(&o));
}
