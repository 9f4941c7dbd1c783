//! Issue 29, what the price alone does not say: limits a destination cannot meet ("cannot take
//! this corpus", ranked last), objects a from-URL move streams (as `exec` decides), policy-risk
//! candidates, caveats of the source and the compute site, the costs beside the move (source
//! storage during the move, `--delete-source`, the restored copy, `--worker-hourly`, an archive
//! "stay"), and the small pricing fixes. Every expected amount is worked out by hand in the
//! comment above it from providers/*.toml.

use super::*;
use moverctl::catalog::Place;
use moverctl::job::Quiet;
use moverctl::job::plan::{PlanSpec, compute_at, plan};
use moverctl::money::Usd;
use moverctl::plan::horizon::{Reads, move_or_stay, stay};
use moverctl::plan::marks::Role;
use moverctl::plan::model::{Assumptions, Candidate, Kind, rank};

const TB66: u64 = 66_000_000_000_000;

fn one_object(size: u64) -> moverctl::plan::corpus::Corpus {
    corpus(size, 1)
}

// One object of 66 TB out of aws:us-east-1, the workers' NIC at 1 Gbit/s (125,000,000 B/s).
// - cloudflare-r2: its object limit is 5 TiB - 5 GiB = 5,492,189,429,760 B < 66e12: cannot take.
// - gcp: 5 TiB = 5,497,558,138,880 B < 66e12: cannot take.
// - azure: 190.7 TiB limit, so it can; the move is planned from the source's URL, but Put Block
//   From URL takes blocks of at most 100 MiB and 50,000 of them (5,242,880,000,000 B) < 66e12,
//   so exec streams the object (catalog::parts::from_url_block): parts of the streamed copy,
//   64 MiB doubled until 66e12 fits in 50,000: 2,048 MiB (66e12 / 2^31 = 30,733.6 -> 30,734
//   parts); Put Block x 30,734 + one Put Block List = 30,735 (no "create" at Azure), a HEAD
//   after; at the source one GET and one HEAD. Time: streamed through the 1 Gbit/s NIC,
//   66e12 / 125,000,000 = 528,000 s (from the URL it would have been 66e12 / 1.25e9 = 52,800 s).
// Ranked: azure first; r2 and gcp after it, though r2 is the cheapest by price (its storage
// 66,000 GB x 0.015 = $990 a month against azure's 0.018).
#[test]
fn a_66_tb_object_ranks_the_destinations_that_cannot_take_it_last() {
    let nic = |a: &mut Assumptions| a.worker_nic = d("125000000");
    let c = one_object(TB66);
    let r2 = eval_with("aws:us-east-1", "cloudflare-r2", &c, nic);
    let gcs = eval_with("aws:us-east-1", "gcp", &c, nic);
    let az = eval_with("aws:us-east-1", "azure", &c, nic);
    assert!(r2.cost.total() < az.cost.total(), "r2 is cheaper by price");
    let why = r2.marks.cannot_take.clone().expect("r2 cannot take it");
    assert!(
        why.starts_with("cannot take this corpus: 1 object (the largest "),
        "{why}"
    );
    assert!(why.contains("object limit"), "{why}");
    assert_eq!(r2.counts.largest_unplaceable, TB66);
    assert!(gcs.marks.cannot_take.is_some());
    assert!(az.marks.cannot_take.is_none());
    assert!(az.from_url);
    assert_eq!(az.counts.unplaceable_objects, 0);
    assert_eq!(az.counts.streamed_objects, 1);
    assert_eq!(az.counts.streamed_bytes, TB66);
    assert_eq!(az.counts.parts, 30_734);
    assert_eq!(az.counts.max_part_size, 2048 << 20);
    assert_eq!(az.counts.destination_put, 30_735);
    assert_eq!(az.counts.destination_head, 1);
    assert_eq!(az.counts.source_get, 1);
    assert_eq!(az.counts.source_head, 1);
    assert_eq!(az.time.seconds, d("528000"));
    // The cause named is the 100 MiB block of Put Block From URL, not an object limit.
    let w = az.warnings.join("\n");
    assert!(
        w.contains("Put Block From URL takes blocks of at most 100 MiB"),
        "{w}"
    );
    assert!(w.contains("exec streams it through the workers"), "{w}");
    assert!(!w.contains("cannot be copied") && !w.contains("210"), "{w}");
    let ranked = rank(vec![r2, gcs, az]);
    let names: Vec<_> = ranked.iter().map(|c| c.provider.as_str()).collect();
    assert_eq!(names[0], "azure");
    assert_eq!(ranked[1].marks.group(), 2);
    assert_eq!(ranked[2].marks.group(), 2);
}

// Where from-URL stops: 50,000 blocks of 100 MiB = 5,242,880,000,000 B. At exactly that size the
// streamed part (128 MiB: 64 MiB gives 78,125 parts) caps at a 100 MiB block, 50,000 blocks: from
// the URL. One byte more needs 50,001 blocks: streamed.
#[test]
fn from_url_takes_objects_up_to_fifty_thousand_blocks_of_100_mib() {
    let limit = 50_000 * (100 << 20);
    let at = eval("aws:us-east-1", "azure", limit, 1);
    assert_eq!(at.counts.streamed_objects, 0);
    assert_eq!(at.counts.parts, 50_000);
    assert_eq!(at.counts.max_part_size, 100 << 20);
    let over = eval("aws:us-east-1", "azure", limit + 1, 1);
    assert_eq!(over.counts.streamed_objects, 1);
    assert_eq!(over.counts.unplaceable_objects, 0);
}

fn with_reads(at: &str, per_month: &str) -> impl Fn(&mut Assumptions) {
    let compute = compute_at(catalog(), at).unwrap();
    let per_month = d(per_month);
    move |a: &mut Assumptions| {
        a.reads = Some(Reads {
            compute: compute.clone(),
            per_month,
        });
    }
}

fn stay_at(
    from: &str,
    c: &moverctl::plan::corpus::Corpus,
    f: impl Fn(&mut Assumptions),
) -> Candidate {
    let mut a = Assumptions::default();
    f(&mut a);
    stay(&Place::resolve(catalog(), from).unwrap(), c, &a)
}

// 10 TiB (10,995,116,277,760 B) in 10,240 objects out of aws:us-east-1, GPUs at CoreWeave
// reading it twice a month for 12 months.
// - wasabi (GB = 10^9): storage 10,995.11627776 GB x 0.007802734375 = $85.79 a month; its reads
//   are 2x the stored corpus, above its free 1x: nothing billed ($0 read egress), a policy risk.
// - cloudflare-r2: storage 10,995.11627776 x 0.015 = $164.93 a month, reads free (egress free,
//   20,480 class B GETs under the 10 M free).
// - stay: 2 x 10,240 GB a month out of AWS: (10,240 - 100) x 0.09 + 10,240 x 0.085 = $1,783 a
//   month.
// By price wasabi < r2 < stay; wasabi is ranked after both, unless --accept-policy-risk.
#[test]
fn a_policy_risk_is_ranked_after_every_priced_candidate_unless_accepted() {
    let c = corpus(10 << 40, 10_240);
    for accept in [false, true] {
        let f = |a: &mut Assumptions| {
            with_reads("coreweave", "2")(a);
            a.extras.accept_policy_risk = accept;
        };
        let w = eval_with("aws:us-east-1", "wasabi", &c, f);
        let r2 = eval_with("aws:us-east-1", "cloudflare-r2", &c, f);
        let st = stay_at("aws:us-east-1", &c, f);
        assert_eq!(w.cost.read_egress, Usd::ZERO);
        assert!(w.cost.total() < r2.cost.total() && r2.cost.total() < st.cost.total());
        let risk = w
            .marks
            .policy_risk
            .clone()
            .expect("wasabi is a policy risk");
        assert!(
            risk.contains(
                "reads of 2x the stored corpus a month from wasabi are above its free 1x"
            ),
            "{risk}"
        );
        assert_eq!(w.marks.marker(), " [risk]");
        assert!(r2.marks.policy_risk.is_none() && st.marks.policy_risk.is_none());
        let ranked = move_or_stay(vec![w, r2], st, 12);
        let order: Vec<_> = ranked.iter().map(|c| c.destination.as_str()).collect();
        if accept {
            assert_eq!(order, ["wasabi", "cloudflare-r2", "stay"]);
        } else {
            assert_eq!(order, ["cloudflare-r2", "stay", "wasabi"]);
        }
    }
    // At one read a month the reads are within its free 1x: no mark.
    let once = eval_with("aws:us-east-1", "wasabi", &c, with_reads("coreweave", "1"));
    assert!(once.marks.policy_risk.is_none());
}

// Caveats of the source and the compute site, with their role, beside the destination's.
#[test]
fn source_and_compute_site_caveats_are_printed_like_the_destinations() {
    let c = corpus(20 << 40, 20_480);
    let m = eval("gcp:us-central1", "cloudflare-r2", 20 << 40, 20_480);
    let src: Vec<_> = (m.marks.caveats.iter())
        .filter(|c| c.role == Role::Source)
        .collect();
    assert!(
        src.iter()
            .any(|c| c.provider == "gcp" && c.text.contains("10 TiB")),
        "{src:?}"
    );
    assert!(
        m.warnings
            .iter()
            .any(|w| w.starts_with("gcp (source): Egress above 10 TiB/month")),
        "{:?}",
        m.warnings
    );
    let a = eval("aws:us-east-1", "backblaze-b2", 20 << 40, 20_480);
    assert!(a.warnings.iter().any(|w| w.starts_with(
        "aws (source): The 100 GB free allowance is shared by the whole AWS account"
    )));
    // No egress leaves the source (a copy inside one region): no source egress caveat.
    let inside = eval("aws:us-east-1", "aws:us-east-1/standard-ia", GIB, 1);
    assert!(inside.marks.caveats.iter().all(|c| c.role != Role::Source));
    // Stay: the source's egress caveats when it is read over the internet...
    let st = stay_at("gcp:us-central1", &c, with_reads("coreweave", "1"));
    assert!(
        st.warnings
            .iter()
            .any(|w| w.starts_with("gcp (source): Egress above 10 TiB"))
    );
    // ...and the compute site's when it reads in its own region.
    let near = stay_at("gcp:us-central1", &c, with_reads("gcp:us-central1", "1"));
    let cv = near
        .marks
        .caveats
        .iter()
        .find(|c| c.role == Role::Compute)
        .expect("compute caveat");
    assert_eq!(cv.provider, "gcp:us-central1");
    assert!(near.warnings.iter().any(|w| {
        w.starts_with("gcp:us-central1 (compute site): Reads by compute in the same region")
    }));
}

fn deep_archive_spec(to: &[&str]) -> PlanSpec {
    let mut spec = PlanSpec::new("aws:us-east-1/deep-archive", to, corpus(100 << 40, 102_400));
    spec.restore_tier = Some("bulk".into());
    spec
}

// 100 TiB in 102,400 objects of 1 GiB in S3 Glacier Deep Archive, to Backblaze B2, restored at
// the bulk tier (48 h), --delete-source, --worker-hourly 2.50, one worker at 10 Gbit/s.
// - Deep Archive a month: each object billed 1 GiB + 40 KiB: 102,400 x 40,960 B = 3.90625 GB
//   extra, 102,403.90625 GB x 0.00099 = $101.3798671875.
// - The move: 48 h restore (172,800 s) + 100 x 2^40 / 1,250,000,000 = 87,960.93022208 s of copy
//   = 260,760.93022208 s.
// - source_storage: 101.3798671875 x 260,760.93022208 / 2,592,000 = 10.19903876... -> $10.199039.
// - source_early_deletion: 180 days - 260,760.93022208 / 86,400 (3.018066322) = 176.981933678
//   days left: 101.3798671875 x 176.981933678 / 30 = 598.0801643... -> $598.080164.
// - restored_copy: the restored 102,400 GB at S3 Standard (51,200 x 0.023 + 51,200 x 0.022 =
//   $2,304 a month) for ceil(87,960.93 s / 86,400) = 2 days: 2,304 x 2 / 30 = $153.60.
// - worker_compute: 2.50 x 87,960.93022208 / 3,600 = 61.08397932... -> $61.083979 (the 48 h
//   restore wait is not a worker's time).
#[test]
fn a_deep_archive_move_prices_source_storage_deletion_restored_copy_and_workers() {
    let mut spec = deep_archive_spec(&["backblaze-b2"]);
    spec.assumptions.extras.delete_source = true;
    spec.assumptions.extras.worker_hourly = Usd(d("2.50"));
    let out = plan(catalog(), &spec, &Quiet).unwrap();
    let c = &out.ranked[0];
    assert_eq!(c.time.seconds, d("260760.93022208"));
    let e = &c.cost.extras;
    assert_eq!(e.source_storage, Usd(d("10.199039")));
    assert_eq!(e.source_early_deletion, Usd(d("598.080164")));
    assert_eq!(e.restored_copy, Usd(d("153.6")));
    assert_eq!(e.worker_compute, Usd(d("61.083979")));
    assert_eq!(
        c.cost.one_time(),
        c.cost.egress
            + c.cost.source_requests
            + c.cost.destination_requests
            + c.cost.retrieval
            + c.cost.gpu_idle
            + Usd(d("822.963182"))
    );
    let w = c.warnings.join("\n");
    assert!(w.contains("their age is not known"), "{w}");
    // Without --delete-source the fee is not priced, and the plan says it would be.
    let out = plan(catalog(), &deep_archive_spec(&["backblaze-b2"]), &Quiet).unwrap();
    let c = &out.ranked[0];
    assert_eq!(c.cost.extras.source_early_deletion, Usd::ZERO);
    assert_eq!(c.cost.extras.worker_compute, Usd::ZERO);
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("180-day minimum") && w.contains("--delete-source"))
    );
}

// "Stay" on Deep Archive, read once a month from CoreWeave, --restore-tier bulk, GPUs at $100 an
// hour. Each read needs a restore: at bulk, 102,400 GB x 0.0025 = $256 + 102,400 requests x
// $0.025 / 1,000 = $2.56, so $258.56 a month of retrieval (the class's default, standard, would
// be 102,400 x 0.02 + 102,400 x 0.10 / 1,000 = $2,058.24); the GPUs idle 48 h x $100 = $4,800 a
// month through it, $57,600 over 12 months — as the move's own 48 h restore is charged.
#[test]
fn staying_on_an_archive_uses_the_restore_tier_and_charges_its_restores_gpu_idle() {
    let mut spec = deep_archive_spec(&["backblaze-b2"]);
    spec.assumptions.gpu_hourly = Usd(d("100"));
    spec.assumptions.reads = Some(Reads {
        compute: compute_at(catalog(), "coreweave").unwrap(),
        per_month: d("1"),
    });
    let out = plan(catalog(), &spec, &Quiet).unwrap();
    let st = out.ranked.iter().find(|c| c.kind == Kind::Stay).unwrap();
    let r = st.reads.as_ref().unwrap();
    assert_eq!(r.retrieval, Usd(d("258.56")));
    assert_eq!(st.cost.read_retrieval, Usd(d("3102.72")));
    assert_eq!(st.cost.extras.restore_idle_per_month, Usd(d("4800")));
    assert_eq!(st.cost.extras.restore_idle, Usd(d("57600")));
    assert_eq!(
        st.cost.monthly(),
        st.cost.storage_per_month + r.egress + r.requests + Usd(d("258.56")) + Usd(d("4800"))
    );
    assert_eq!(
        moverctl::plan::horizon::cumulative(st, 12)[12],
        st.cost.total()
    );
    let mv = out.ranked.iter().find(|c| c.kind == Kind::Move).unwrap();
    // The move's own restore: 48 h of the same $100 an hour is in its GPU idle.
    assert!(mv.cost.gpu_idle >= Usd(d("4800")));
    // Without --restore-tier the class's default (standard, 12 h) prices the reads.
    let mut spec = deep_archive_spec(&["backblaze-b2"]);
    spec.restore_tier = None;
    spec.assumptions = out.assumptions.clone();
    spec.assumptions.restore = None;
    let out = plan(catalog(), &spec, &Quiet).unwrap();
    let st = out.ranked.iter().find(|c| c.kind == Kind::Stay).unwrap();
    assert_eq!(st.reads.as_ref().unwrap().retrieval, Usd(d("2058.24")));
    assert_eq!(st.cost.extras.restore_idle_per_month, Usd(d("1200")));
}

// us-east-1 <-> us-east-2 is $0.01/GB (reference §1.3), either way; other US pairs $0.02.
// 1,000 GB: $10 and $20.
#[test]
fn us_east_1_and_us_east_2_are_a_cent_a_gb_apart() {
    assert_eq!(
        eval("aws:us-east-1", "aws:us-east-2", 1000 * GIB, 1000)
            .cost
            .egress,
        Usd(d("10"))
    );
    assert_eq!(
        eval("aws:us-east-2", "aws:us-east-1", 1000 * GIB, 1000)
            .cost
            .egress,
        Usd(d("10"))
    );
    assert_eq!(
        eval("aws:us-east-1", "aws:us-west-2", 1000 * GIB, 1000)
            .cost
            .egress,
        Usd(d("20"))
    );
}

// LIST is billed at S3 Standard's rate whatever the class: 2,000,000 objects of 1,000 B in Glacier
// IR, 2,000 LIST pages x $0.005 / 1,000 = $0.01 (not the class's PUT price, $0.04), and 2,000,000
// GETs x $0.01 / 1,000 = $20: $20.01.
#[test]
fn list_is_priced_at_standards_rate_for_every_aws_class() {
    let c = eval("aws/glacier-ir", "backblaze-b2", 2_000_000_000, 2_000_000);
    assert_eq!(c.counts.source_list, 2_000);
    assert_eq!(c.cost.source_requests, Usd(d("20.01")));
}

// Into Azure a 1 GiB object is 16 Put Block + 1 Put Block List = 17 requests: no "create".
#[test]
fn azure_uploads_count_no_create_request() {
    let c = eval_with("aws", "azure", &one_object(GIB), |a| a.server_side = false);
    assert_eq!(c.counts.destination_put, 17);
    let s3 = eval("azure", "backblaze-b2", GIB, 1);
    assert_eq!(
        s3.counts.destination_put, 18,
        "create + 16 parts + complete at an S3 store"
    );
}

// An archive restore says which tier and time it assumed.
#[test]
fn an_archive_restore_names_its_tier_and_time() {
    let f = eval("aws/glacier-flexible", "backblaze-b2", GIB, 1);
    assert!(
        f.warnings.iter().any(|w| w.contains(
            "at the standard tier (12 h, assumed: no source gives it; choose with --restore-tier"
        )),
        "{:?}",
        f.warnings
    );
    let a = eval("azure/archive", "backblaze-b2", GIB, 1);
    assert!(
        a.warnings
            .iter()
            .any(|w| w.contains("(12 h, assumed: no source gives it; choose with --restore-tier")),
        "{:?}",
        a.warnings
    );
    let da = eval("aws/deep-archive", "backblaze-b2", GIB, 1);
    assert!(
        da.warnings
            .iter()
            .any(|w| w.contains("at the standard tier (12 h; choose with --restore-tier")),
        "{:?}",
        da.warnings
    );
}

/// `plan` on the command line: markers and footnotes in the table, the marks in JSON and in the
/// report.
#[test]
fn the_table_json_and_report_carry_the_marks() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.html");
    let args = [
        "plan",
        "--from",
        "aws:us-east-1",
        "--to",
        "cloudflare-r2,azure",
        "--bytes",
        "66TB",
        "--objects",
        "1",
        "--no-probe",
    ];
    let o = moverctl()
        .args(args)
        .arg("--report")
        .arg(&report)
        .output()
        .unwrap();
    expect(&o, 0);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("cloudflare-r2 [x]"), "{out}");
    assert!(
        out.contains("[x] cloudflare-r2: cannot take this corpus"),
        "{out}"
    );
    assert!(
        out.contains("aws (source): The 100 GB free allowance"),
        "{out}"
    );
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("Marks and caveats") && html.contains("cloudflare-r2 [x]"));
    assert!(html.contains("data-role=\"source\""));
    let o = moverctl()
        .args(args)
        .args(["--json", "--worker-hourly", "3", "--delete-source"])
        .output()
        .unwrap();
    expect(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = v["candidates"].as_array().unwrap();
    assert_eq!(c[0]["destination"], "azure");
    assert!(c[0]["cannot_take"].is_null());
    assert_eq!(c[0]["upload"]["streamed_objects"], 1);
    assert!(c[0]["cost"]["worker_compute"].as_f64().unwrap() > 0.0);
    assert!(c[0]["cost"]["source_storage"].as_f64().unwrap() > 0.0);
    assert_eq!(c[1]["destination"], "cloudflare-r2");
    assert!(
        c[1]["cannot_take"]
            .as_str()
            .unwrap()
            .starts_with("cannot take this corpus")
    );
    assert_eq!(c[1]["caveats"][0]["role"], "source");
    assert_eq!(v["assumptions"]["worker_hourly"], 3);
    assert_eq!(v["assumptions"]["delete_source"], true);
    let bad = moverctl()
        .args(args)
        .args(["--worker-hourly", "-1"])
        .output()
        .unwrap();
    expect(&bad, 2);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--worker-hourly"));
}

/// Plan and exec agree on which objects a from-URL move fetches and which it streams, on a real
/// server (Azurite, which copies from URLs of its own blobs): a 1 MiB blob (its MD5 kept by Put
/// Blob) and a 101 MiB blob carrying moverctl's CRC64. With Azure's limits (50,000 blocks) both
/// are fetched from the URL (the large one in 100 MiB-capped blocks of the 64 MiB part: 2). With a
/// provider file that allows one block per blob (`max_parts = 1`), the 101 MiB blob needs two
/// blocks of at most 100 MiB: `plan` says it streams, and `exec` streams it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_and_exec_agree_on_which_objects_are_fetched_from_the_url() {
    use moverctl::checksum::{crc64_hex, crc64_of};
    use object_store::{Attribute, Attributes, ObjectStoreExt, PutOptions, PutPayload};
    let Some(s) = servers() else { return };
    let prefix = unique("planlim");
    let src = moverctl::store::Store::open(
        &format!("azurite:{}/{prefix}", s.az_container),
        &remotes(&s),
    )
    .unwrap();
    let small = super::faults::data("small.bin", 1 << 20);
    src.inner
        .put(&src.path_of("small.bin").unwrap(), PutPayload::from(small))
        .await
        .unwrap();
    let big = super::faults::data("big.bin", 101 << 20);
    let mut attrs = Attributes::new();
    attrs.insert(
        Attribute::Metadata("moverctl_crc64nvme".into()),
        crc64_hex(crc64_of(&big)).into(),
    );
    src.inner
        .put_opts(
            &src.path_of("big.bin").unwrap(),
            PutPayload::from(big),
            PutOptions {
                attributes: attrs,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("remotes.toml");
    std::fs::write(&conf, remotes_toml(&s)).unwrap();
    let one_block = dir.path().join("providers");
    std::fs::create_dir(&one_block).unwrap();
    let azure = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("providers/azure.toml"),
    )
    .unwrap();
    let line = azure
        .lines()
        .find(|l| l.starts_with("max_parts = "))
        .unwrap();
    std::fs::write(
        one_block.join("azure.toml"),
        azure.replace(line, "max_parts = 1"),
    )
    .unwrap();
    for (providers, streamed) in [(None, 0u64), (Some(&one_block), 1)] {
        let dst = format!("azurite:{}/{}", s.az_container2, unique("planlim-dst"));
        let plans = dir.path().join(format!("plans-{streamed}"));
        let mut c = moverctl();
        if let Some(p) = providers {
            c.arg("--providers").arg(p);
        }
        let o = c
            .arg("--config")
            .arg(&conf)
            .args([
                "plan",
                "--from",
                "azure",
                "--to",
                "azure",
                "--json",
                "--no-probe",
            ])
            .args(["--src", &format!("azurite:{}/{prefix}", s.az_container)])
            .args(["--dst", &dst, "--save", "p", "--plans-dir"])
            .arg(&plans)
            .output()
            .unwrap();
        expect(&o, 0);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let cand = &v["candidates"][0];
        assert_eq!(cand["from_url"], true, "{}", text(&o));
        assert_eq!(v["corpus"]["objects"], 2);
        assert_eq!(cand["upload"]["streamed_objects"], streamed, "{}", text(&o));
        let mut c = moverctl();
        if let Some(p) = providers {
            c.arg("--providers").arg(p);
        }
        let state = tempfile::tempdir().unwrap();
        let o = c
            .arg("--config")
            .arg(&conf)
            .args(["exec", "--json"])
            .arg(plans.join("p.toml"))
            .env("MOVERCTL_STATE_DIR", state.path())
            .output()
            .unwrap();
        expect(&o, 0);
        let v: serde_json::Value = String::from_utf8_lossy(&o.stdout)
            .lines()
            .rfind(|l| l.contains("\"summary\""))
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or_default();
        assert_eq!(v["copied"]["objects"], 2, "{}", text(&o));
        // exec fetched from the URL what plan said it would, and streamed the rest.
        assert_eq!(v["server_side"]["objects"], 2 - streamed, "{}", text(&o));
    }
}

/// Every row of the move table adds up: whatever the total holds besides the named columns (here
/// the source billed for the move's 1 d 20 h: 2 PB at AWS, $2,449) is the `other` column, so a
/// reader can check egress + requests + retrieval + storage + early delete + other + GPU idle =
/// total (each printed amount is rounded to the dollar above $1,000: a few dollars of slack).
#[test]
fn every_row_of_the_move_table_adds_up() {
    let o = super::moverctl()
        .args(["plan", "--example", "--no-probe"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(" other "), "{out}");
    use rust_decimal::Decimal;
    let money = |w: &str| -> Option<Decimal> { w.strip_prefix('$')?.replace(',', "").parse().ok() };
    let mut rows = 0;
    for line in out.lines().filter(|l| l.starts_with(char::is_numeric)) {
        let amounts: Vec<Decimal> = line.split_whitespace().filter_map(money).collect();
        if amounts.len() < 8 {
            continue; // the second table (storage/mo, leave later)
        }
        let (parts, total) = (&amounts[..7], amounts[7]);
        let sum: Decimal = parts.iter().sum();
        assert!(
            (sum - total).abs() <= Decimal::from(4),
            "{line}: {sum} against {total}"
        );
        rows += 1;
    }
    assert_eq!(rows, 4, "{out}");
}
