//! Move or stay: reads priced over the horizon (`--compute-at`), "stay" as a candidate, break-even.
//! Every expected number is worked out by hand in the comment above it from providers/*.toml.

use super::*;
use moverctl::catalog::Place;
use moverctl::money::Usd;
use moverctl::plan::horizon::{ComputeAt, Reads, Route, break_even, cumulative, stay};
use moverctl::plan::model::{Assumptions, Candidate, Kind};

fn compute(at: &str) -> ComputeAt {
    let (p, r) = match at.split_once(':') {
        Some((p, r)) => (p, Some(r)),
        None => (at, None),
    };
    let in_catalog = catalog().get(p).is_ok();
    let region = match (r, in_catalog) {
        (Some(r), _) => Some(r.to_string()),
        (None, true) => Some(catalog().get(p).unwrap().file.default_region.clone()),
        (None, false) => None,
    };
    ComputeAt {
        given: at.to_string(),
        provider: p.to_string(),
        region,
        in_catalog,
    }
}

fn with_reads(at: &str, per_month: &str, months: u32) -> impl Fn(&mut Assumptions) {
    let reads = Reads {
        compute: compute(at),
        per_month: d(per_month),
    };
    move |a: &mut Assumptions| {
        a.months = months;
        a.reads = Some(reads.clone());
    }
}

fn stay_at(
    from: &str,
    c: &moverctl::plan::corpus::Corpus,
    f: impl Fn(&mut Assumptions),
) -> Candidate {
    let src = Place::resolve(catalog(), from).unwrap();
    let mut a = Assumptions::default();
    f(&mut a);
    stay(&src, c, &a)
}

/// 10 TiB (10,240 GiB) in 163,840 objects of 64 MiB: single PUTs everywhere.
fn ten_tib() -> moverctl::plan::corpus::Corpus {
    corpus(10_240 * GIB, 163_840)
}

// AWS bills GiB: 100 GB a month free, then $0.09 to 10,240 GB, $0.085 to 51,200 GB. Standard
// storage $0.023 to 51,200 GB; GET $0.0004 per 1,000.
#[test]
fn aws_egress_to_coreweave_per_epoch() {
    // One epoch a month: 10,240 GB out: (10,240 - 100) x 0.09 = 912.60 a month.
    let s = stay_at("aws:us-east-1", &ten_tib(), with_reads("coreweave", "1", 1));
    let r = s.reads.as_ref().unwrap();
    assert_eq!(r.route, Route::Internet);
    assert_eq!(r.egress, Usd(d("912.60")));
    // GETs: 163,840 x 0.0004 / 1,000 = 0.065536
    assert_eq!(r.requests, Usd(d("0.065536")));
    // Storage 10,240 x 0.023 = 235.52; one month's total 235.52 + 912.60 + 0.065536
    assert_eq!(s.cost.total(), Usd(d("1148.185536")));
    // Two epochs a month: 20,480 GB: 912.60 + 10,240 x 0.085 (870.40) = 1,783.00 — the second
    // epoch is billed at the next tier, not at twice the first.
    let s = stay_at(
        "aws:us-east-1",
        &ten_tib(),
        with_reads("coreweave", "2", 12),
    );
    assert_eq!(s.reads.as_ref().unwrap().egress, Usd(d("1783.00")));
    // Over 12 months: 12 x 1,783.00 = 21,396
    assert_eq!(s.cost.read_egress, Usd(d("21396.00")));
    // 24 epochs over 12 months is the same rate.
    let e = stay_at(
        "aws:us-east-1",
        &ten_tib(),
        with_reads("coreweave", "2.0", 12),
    );
    assert_eq!(e.cost.total(), s.cost.total());
}

// R2: egress free; class B (GET) $0.36 per million after 10 M free a month.
#[test]
fn reading_from_r2_is_free_but_for_gets_past_the_free_ones() {
    let c = eval_with(
        "aws",
        "cloudflare-r2",
        &corpus(1_000_000_000_000, 1_000_000),
        with_reads("coreweave", "4", 12),
    );
    let r = c.reads.as_ref().unwrap();
    assert_eq!(r.route, Route::Internet);
    assert_eq!(r.egress, Usd::ZERO);
    // 4 x 1,000,000 GETs a month, within the 10 M free.
    assert_eq!(r.requests, Usd::ZERO);
    // 20 reads: 20 M - 10 M free = 10 M x 0.36 / M = 3.60 a month, 43.20 over 12 months.
    let c = eval_with(
        "aws",
        "cloudflare-r2",
        &corpus(1_000_000_000_000, 1_000_000),
        with_reads("coreweave", "20", 12),
    );
    assert_eq!(c.cost.read_requests, Usd(d("43.20")));
    assert_eq!(c.cost.read_egress, Usd::ZERO);
}

// B2 (GB = 10^9): egress free up to 3x the stored data a month, then $0.01/GB.
#[test]
fn b2_reads_within_and_beyond_three_times() {
    let tb = corpus(1_000_000_000_000, 1_000); // 1,000 GB stored
    // 3 reads = 3,000 GB = 3x: free.
    let c = eval_with("aws", "backblaze-b2", &tb, with_reads("coreweave", "3", 12));
    assert_eq!(c.cost.read_egress, Usd::ZERO);
    assert!(!c.reads.as_ref().unwrap().over_free_multiple);
    // 4 reads = 4,000 GB: 1,000 GB over x 0.01 = $10 a month, $120 over 12 months.
    let c = eval_with("aws", "backblaze-b2", &tb, with_reads("coreweave", "4", 12));
    assert_eq!(c.reads.as_ref().unwrap().egress, Usd(d("10.00")));
    assert_eq!(c.cost.read_egress, Usd(d("120.00")));
    assert!(c.reads.as_ref().unwrap().over_free_multiple);
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("above its free 3x") && w.contains("billed")),
        "{:?}",
        c.warnings
    );
    // 3.5 reads: 500 GB over = $5 a month.
    let c = eval_with(
        "aws",
        "backblaze-b2",
        &tb,
        with_reads("coreweave", "3.5", 1),
    );
    assert_eq!(c.cost.read_egress, Usd(d("5.00")));
    // GETs: 4,000 a month, within B2's 75,000 free a month.
    assert_eq!(c.cost.read_requests, Usd::ZERO);
}

// Wasabi: egress free while a month's egress <= stored; above it, nothing billed but a policy risk.
#[test]
fn wasabi_reads_beyond_storage_are_flagged_not_priced() {
    let tb = corpus(10_000_000_000_000, 1_000);
    let one = eval_with("aws", "wasabi", &tb, with_reads("coreweave", "1", 12));
    assert!(!one.reads.as_ref().unwrap().over_free_multiple);
    assert!(
        !one.warnings
            .iter()
            .any(|w| w.contains("suspend the account (flagged"))
    );
    let two = eval_with("aws", "wasabi", &tb, with_reads("coreweave", "2", 12));
    let r = two.reads.as_ref().unwrap();
    assert_eq!(r.egress, Usd::ZERO);
    assert!(r.over_free_multiple);
    assert!(
        two.warnings
            .iter()
            .any(|w| w.starts_with("wasabi: reads of") && w.contains("limit or suspend")),
        "{:?}",
        two.warnings
    );
}

#[test]
fn same_region_reads_are_free_and_other_regions_pay_inter_region() {
    let c = ten_tib();
    // S3 to EC2 in the same region: $0/GB (and GETs 163,840 x 0.0004 / 1,000 = 0.065536).
    let s = stay_at("aws:us-east-1", &c, with_reads("aws:us-east-1", "1", 12));
    let r = s.reads.as_ref().unwrap();
    assert_eq!((r.route, r.egress), (Route::SameRegion, Usd::ZERO));
    assert_eq!(r.requests, Usd(d("0.065536")));
    // Compute in us-west-2: 10,240 GB x 0.02 = 204.80 a month.
    let s = stay_at("aws:us-east-1", &c, with_reads("aws:us-west-2", "1", 12));
    let r = s.reads.as_ref().unwrap();
    assert_eq!((r.route, r.egress), (Route::InterRegion, Usd(d("204.80"))));
    // CoreWeave storage read by CoreWeave GPUs: free, requests free.
    let m = eval_with("aws", "coreweave", &c, with_reads("coreweave", "10", 12));
    let r = m.reads.as_ref().unwrap();
    assert_eq!(r.route, Route::SameRegion);
    assert_eq!(m.cost.reads_per_month, Usd::ZERO);
    // A GPU cloud without a provider file is reached over the internet, and the plan says so.
    let l = stay_at("aws:us-east-1", &c, with_reads("lambda", "1", 1));
    assert_eq!(l.reads.as_ref().unwrap().egress, Usd(d("912.60")));
    assert!(l.warnings.iter().any(|w| w.contains("not in the catalog")));
}

// Break-even of moving 10 TiB from AWS to CoreWeave with the GPUs at CoreWeave, 1 epoch a month:
// move once: egress 912.60 + source requests (164 LIST pages x 0.005/1,000 = 0.00082, 163,840 GETs
// = 0.065536) + the source's storage while the copy runs (10,240 GB x 0.023 = 235.52 a month, for
// 10 x 2^40 / 1,250,000,000 = 8,796.093022208 s of a 2,592,000 s month: 0.799249934 -> 0.79925)
// = 913.465606; CoreWeave storage 10,995.11627776 GB x 0.06 = 659.7069766656 a month,
// reads free. Stay: 235.52 + 912.60 + 0.065536 = 1,148.185536 a month.
// Month 1: 1,573.17 vs 1,148.19 (stay cheaper); month 2: 2,232.88 vs 2,296.37 -> break-even month 2.
#[test]
fn break_even_month_against_staying() {
    let c = ten_tib();
    let f = with_reads("coreweave", "1", 12);
    let mv = eval_with("aws:us-east-1", "coreweave", &c, &f);
    let st = stay_at("aws:us-east-1", &c, &f);
    assert_eq!(mv.cost.one_time(), Usd(d("913.465606")));
    assert_eq!(mv.cost.extras.source_storage, Usd(d("0.79925")));
    assert_eq!(mv.cost.monthly(), Usd(d("659.7069766656")));
    assert_eq!(st.cost.monthly(), Usd(d("1148.185536")));
    assert_eq!(break_even(&mv, &st, 12), Some(2));
    // One month is too short to pay back the move.
    assert_eq!(break_even(&mv, &st, 1), None);
    let cum = cumulative(&mv, 12);
    assert_eq!(cum.len(), 13);
    assert_eq!(cum[0], mv.cost.one_time());
    assert_eq!(cum[12], mv.cost.total());
    assert_eq!(cumulative(&st, 12)[12], Usd(d("13778.226432")));
    assert_eq!(st.kind, Kind::Stay);
    assert_eq!(st.cost.gpu_idle, Usd::ZERO);
}

/// A small deterministic generator for the property tests (xorshift64*).
struct Gen(u64);
impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
}

const SOURCES: &[&str] = &[
    "aws:us-east-1",
    "aws:ap-northeast-1",
    "aws/glacier-ir",
    "gcp:us-central1",
    "azure",
    "backblaze-b2",
    "wasabi",
    "cloudflare-r2",
    "cloudflare-r2/infrequent-access",
    "nebius",
    "coreweave",
];
const COMPUTE: &[&str] = &[
    "coreweave",
    "aws:us-east-1",
    "aws:us-west-2",
    "gcp",
    "nebius",
    "lambda",
];

fn random_corpus(g: &mut Gen) -> moverctl::plan::corpus::Corpus {
    let bytes = 1 + g.below(1 << 20) * g.below(1 << 30);
    let objects = 1 + g.below(bytes.min(50_000_000));
    corpus(bytes, objects)
}

fn random_reads(g: &mut Gen) -> String {
    format!("{}.{}", g.below(30), g.below(100))
}

#[test]
fn property_more_reads_never_make_staying_cheaper() {
    let mut g = Gen(0x9E37_79B9_7F4A_7C15);
    for case in 0..400 {
        let from = g.pick(SOURCES);
        let at = g.pick(COMPUTE);
        let c = random_corpus(&mut g);
        let months = 1 + g.below(36) as u32;
        let (r1, r2) = (random_reads(&mut g), random_reads(&mut g));
        let (lo, hi) = if d(&r1) <= d(&r2) { (r1, r2) } else { (r2, r1) };
        let a = stay_at(from, &c, with_reads(at, &lo, months));
        let b = stay_at(from, &c, with_reads(at, &hi, months));
        assert!(
            b.cost.total() >= a.cost.total(),
            "case {case}: stay at {from} read from {at}: {hi} reads cost {} < {lo} reads {}",
            b.cost.total(),
            a.cost.total()
        );
    }
}

#[test]
fn property_a_longer_horizon_never_lowers_a_total() {
    let mut g = Gen(0xD1B5_4A32_D192_ED03);
    for case in 0..300 {
        let from = g.pick(SOURCES);
        let to = g.pick(SOURCES);
        let at = g.pick(COMPUTE);
        let c = random_corpus(&mut g);
        let reads = random_reads(&mut g);
        let m1 = g.below(36) as u32;
        let m2 = m1 + g.below(24) as u32;
        let mv1 = eval_with(from, to, &c, with_reads(at, &reads, m1));
        let mv2 = eval_with(from, to, &c, with_reads(at, &reads, m2));
        assert!(
            mv2.cost.total() >= mv1.cost.total(),
            "case {case}: {from} -> {to}, {m2} months {} < {m1} months {}",
            mv2.cost.total(),
            mv1.cost.total()
        );
        let s1 = stay_at(from, &c, with_reads(at, &reads, m1));
        let s2 = stay_at(from, &c, with_reads(at, &reads, m2));
        assert!(
            s2.cost.total() >= s1.cost.total(),
            "case {case}: stay at {from}"
        );
        // Cumulative costs never go down month by month either.
        let cum = cumulative(&mv2, m2);
        assert!(cum.windows(2).all(|w| w[1] >= w[0]), "case {case}");
    }
}

fn plan(args: &[&str]) -> std::process::Output {
    moverctl().arg("plan").args(args).output().unwrap()
}

const MOVE_OR_STAY: &[&str] = &[
    "--from",
    "aws:us-east-1",
    "--to",
    "coreweave,cloudflare-r2,backblaze-b2",
    "--bytes",
    "10TiB",
    "--objects",
    "163840",
    "--compute-at",
    "coreweave",
    "--epochs",
    "12",
    "--over-months",
    "12",
];

#[test]
fn cli_ranks_stay_with_break_even_months_in_table_and_json() {
    let o = plan(MOVE_OR_STAY);
    expect(&o, 0);
    let out = text(&o);
    for needle in [
        // The stay row names the source on a second line (the table fits 100 columns).
        "4 stay ",
        "(aws:us-east-1/standard)",
        "break-even",
        "month 2",
        "reads/mo",
        "same-region",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in\n{out}");
    }
    let mut args = MOVE_OR_STAY.to_vec();
    args.push("--json");
    let o = plan(&args);
    expect(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["assumptions"]["compute_at"], "coreweave:global");
    assert_eq!(v["assumptions"]["months"], 12);
    let cands = v["candidates"].as_array().unwrap();
    assert_eq!(cands.len(), 4);
    let stay = cands
        .iter()
        .find(|c| c["kind"] == "stay")
        .expect("stay is ranked");
    assert!(stay["break_even_month"].is_null());
    // 12 x 1,148.185536 (worked out in break_even_month_against_staying)
    assert_eq!(stay["cost"]["total"].to_string(), "13778.226432");
    let cw = cands
        .iter()
        .find(|c| c["destination"] == "coreweave")
        .unwrap();
    assert_eq!(cw["break_even_month"], 2);
    assert_eq!(cw["reads"]["route"], "same-region");
    for c in cands {
        let cum = c["horizon"]["cumulative"].as_array().unwrap();
        assert_eq!(cum.len(), 13);
        assert_eq!(cum[12], c["cost"]["total"], "{}", c["destination"]);
    }
}

#[test]
fn cli_refuses_unclear_reads_and_never_saves_stay() {
    let base = [
        "--from",
        "aws",
        "--to",
        "coreweave",
        "--bytes",
        "1TB",
        "--objects",
        "10",
    ];
    let with = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        plan(&a)
    };
    let o = with(&["--compute-at", "coreweave"]);
    expect(&o, 2);
    assert!(text(&o).contains("--reads-per-month"), "{}", text(&o));
    let o = with(&["--compute-at", "coreweave", "--reads-per-month", "-1"]);
    expect(&o, 2);
    assert!(text(&o).contains("zero or more"), "{}", text(&o));
    let o = with(&["--compute-at", "aws:mars", "--reads-per-month", "1"]);
    expect(&o, 2);
    assert!(text(&o).contains("us-east-1"), "{}", text(&o));
    let o = with(&["--compute-at", "coreweave", "--reads-per-month", "lots"]);
    expect(&o, 2);
    // Out-of-range numbers are refused before any arithmetic could overflow.
    let o = with(&["--compute-at", "coreweave", "--reads-per-month", "100001"]);
    expect(&o, 2);
    assert!(text(&o).contains("at most 100000"), "{}", text(&o));
    let o = with(&[
        "--compute-at",
        "coreweave",
        "--epochs",
        "1000000",
        "--over-months",
        "2",
    ]);
    expect(&o, 2);
    let o = with(&["--months", "1201"]);
    expect(&o, 2);
    assert!(text(&o).contains("at most 1200"), "{}", text(&o));
    let dir = tempfile::tempdir().unwrap();
    let dirs = dir.path().to_str().unwrap();
    let o = with(&[
        "--compute-at",
        "coreweave",
        "--reads-per-month",
        "1",
        "--save",
        "x",
        "--pick",
        "stay",
        "--plans-dir",
        dirs,
    ]);
    expect(&o, 2);
    // With stay the cheapest (no reads), --save still saves the cheapest move.
    let o = with(&[
        "--compute-at",
        "coreweave",
        "--reads-per-month",
        "0",
        "--save",
        "x",
        "--plans-dir",
        dirs,
    ]);
    expect(&o, 0);
    let saved = std::fs::read_to_string(dir.path().join("x.toml")).unwrap();
    assert!(saved.contains("coreweave:global/hot"), "{saved}");
}
