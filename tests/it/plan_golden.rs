//! Hand-computed line items. Each expected number is worked out in the comment above it from the
//! published prices in providers/*.toml, never from the code under test.

use super::*;
use moverctl::catalog::Place;
use moverctl::money::Usd;
use moverctl::plan::model::{internet_egress, months_of};

// AWS bills GB = 2^30 bytes. 100 GB/month free, then $0.09 up to 10 TB (10,240 GB), $0.085 up to
// 50 TB (51,200 GB), $0.07 up to 150 TB (153,600 GB), $0.05 above.
#[test]
fn aws_egress_at_exactly_10_50_150_tb() {
    // 10 TB: (10,240 - 100) x 0.09 = 912.60
    assert_eq!(
        eval("aws", "cloudflare-r2", 10_240 * GIB, 1000).cost.egress,
        Usd(d("912.60"))
    );
    // 50 TB: 912.60 + 40,960 x 0.085 (3,481.60) = 4,394.20
    assert_eq!(
        eval("aws", "cloudflare-r2", 51_200 * GIB, 1000).cost.egress,
        Usd(d("4394.20"))
    );
    // 150 TB: 4,394.20 + 102,400 x 0.07 (7,168) = 11,562.20
    assert_eq!(
        eval("aws", "cloudflare-r2", 153_600 * GIB, 1000)
            .cost
            .egress,
        Usd(d("11562.20"))
    );
    // one GB more is billed at the top tier: + 0.05
    assert_eq!(
        eval("aws", "cloudflare-r2", 153_601 * GIB, 1000)
            .cost
            .egress,
        Usd(d("11562.25"))
    );
}

#[test]
fn aws_free_allowance() {
    assert_eq!(
        eval("aws", "backblaze-b2", 100 * GIB, 10).cost.egress,
        Usd::ZERO
    );
    // 101 GB: one billed GB at 0.09
    assert_eq!(
        eval("aws", "backblaze-b2", 101 * GIB, 10).cost.egress,
        Usd(d("0.09"))
    );
}

#[test]
fn exit_waiver_credits_egress_and_prints_conditions() {
    let c = eval_with("aws", "cloudflare-r2", &corpus(10_240 * GIB, 1000), |a| {
        a.exit_waiver = true
    });
    assert_eq!(c.cost.egress, Usd::ZERO);
    assert_eq!(c.cost.egress_before_waiver, Usd(d("912.60")));
    let w = c
        .warnings
        .iter()
        .find(|w| w.starts_with("exit waiver"))
        .expect("waiver warning");
    assert!(w.contains("60 days") && w.contains("credit"), "{w}");
}

#[test]
fn inside_one_provider_is_inter_region_or_free() {
    // us-east-1 -> us-west-2: $0.02/GB; 1,000 GB -> $20
    assert_eq!(
        eval("aws:us-east-1", "aws:us-west-2", 1000 * GIB, 10)
            .cost
            .egress,
        Usd(d("20"))
    );
    assert_eq!(
        eval("aws:us-east-1", "aws:us-east-1/glacier-ir", 1000 * GIB, 10)
            .cost
            .egress,
        Usd::ZERO
    );
}

// B2: egress is free up to 3x the average stored data per month, then $0.01/GB (GB = 10^9).
#[test]
fn b2_three_times_rule() {
    let b2 = catalog().get("backblaze-b2").unwrap();
    let e = &b2.file.egress;
    // 300 GB out with 100 GB stored: within 3x, free.
    assert_eq!(
        internet_egress(e, d("300"), d("100"), 1),
        (Usd::ZERO, false)
    );
    // 400 GB out with 100 GB stored: 100 GB over, x 0.01 = $1.00
    assert_eq!(
        internet_egress(e, d("400"), d("100"), 1),
        (Usd(d("1.00")), true)
    );
    // Spread over two months: 200 GB a month, within 3x each month.
    assert_eq!(
        internet_egress(e, d("400"), d("100"), 2),
        (Usd::ZERO, false)
    );
    // Leaving B2 with the whole corpus is within the rule: free.
    assert_eq!(
        eval("aws", "backblaze-b2", 1_000_000_000_000, 1000)
            .cost
            .exit_egress,
        Usd::ZERO
    );
}

// Wasabi: $7.99 per TB-month with TB = 1,024 GB -> 0.007802734375 per GB; 90-day minimum.
#[test]
fn wasabi_ninety_day_minimum() {
    // 10 TB = 10,000 GB of 10 MB objects: 78.02734375 per month.
    let c = eval_with(
        "aws",
        "wasabi",
        &corpus(10_000_000_000_000, 1_000_000),
        |a| a.months = 1,
    );
    assert_eq!(c.cost.storage_per_month, Usd(d("78.02734375")));
    // Kept one month (30 days) of 90: 60 more days billed = 2 x 78.02734375
    assert_eq!(c.cost.early_deletion, Usd(d("156.0546875")));
    let three = eval_with(
        "aws",
        "wasabi",
        &corpus(10_000_000_000_000, 1_000_000),
        |a| a.months = 3,
    );
    assert_eq!(three.cost.early_deletion, Usd::ZERO);
    assert!(c.warnings.iter().any(|w| w.contains("90-day minimum")));
}

#[test]
fn wasabi_minimum_object_size_and_monthly_minimum() {
    // 1,000,000 objects of 1,000 bytes are billed as 4,096 bytes each: 4.096 GB -> below the
    // 1 TB monthly minimum ($7.99), which applies.
    let c = eval("aws", "wasabi", 1_000_000_000, 1_000_000);
    assert_eq!(c.cost.storage_per_month, Usd(d("7.99")));
    assert!(
        c.warnings.iter().any(|w| w.contains("billed as")),
        "{:?}",
        c.warnings
    );
}

// R2 Standard: class A $4.50 per million (1 M free a month), class B $0.36 per million (10 M free),
// LIST is class A. R2 Infrequent Access: $9.00 / $0.90 per million, no free tier.
#[test]
fn r2_class_a_and_b() {
    // 2,000,000 objects of 1 MB: 2,000,000 PUTs - 1,000,000 free = 1,000,000 x 4.5/M = 4.50;
    // 2,000 LIST pages x 4.5/M = 0.009; no HEADs: R2 answers a PUT with the MD5 ETag (and checks
    // the Content-MD5 sent), which is exec's proof of the write.
    let c = eval("aws", "cloudflare-r2", 2_000_000_000_000, 2_000_000);
    assert_eq!(c.cost.destination_requests, Usd(d("4.509")));
    assert_eq!(c.counts.destination_head, 0);
    // IA: (2,000,000 PUTs + 2,000 LIST pages) x 9/M = 18.018
    let ia = eval(
        "aws",
        "cloudflare-r2/infrequent-access",
        2_000_000_000_000,
        2_000_000,
    );
    assert_eq!(ia.cost.destination_requests, Usd(d("18.018")));
}

// AWS source requests: LIST $0.005 per 1,000; GET $0.0004 per 1,000.
#[test]
fn aws_source_requests() {
    // 1,000,000 objects of 1 MB: 1,000 LIST pages = 0.005; 1,000,000 GETs = 0.40
    assert_eq!(
        eval("aws", "backblaze-b2", 1_000_000_000_000, 1_000_000)
            .cost
            .source_requests,
        Usd(d("0.405"))
    );
}

// AWS multipart: 10,000 parts at most; 64 MiB preferred parts.
#[test]
fn part_counts_at_the_ten_thousand_part_limit() {
    let size = 10_000 * 64 * (1u64 << 20);
    let c = eval("cloudflare-r2", "aws", size, 1);
    assert_eq!((c.counts.parts, c.counts.destination_put), (10_000, 10_002));
    // exec reads a large object with one GET (and a HEAD of part 1 at an S3 source, whose
    // multipart ETag it recomputes); with --ranged-reads, one ranged GET per part.
    assert_eq!((c.counts.source_get, c.counts.source_head), (1, 1));
    let r = eval_with("cloudflare-r2", "aws", &corpus(size, 1), |a| {
        a.ranged_reads = true
    });
    assert_eq!(r.counts.source_get, 10_000, "one ranged GET per part");
    // One byte more: parts double to 128 MiB, 5,001 of them.
    let c = eval("cloudflare-r2", "aws", size + 1, 1);
    assert_eq!((c.counts.parts, c.counts.max_part_size), (5_001, 128 << 20));
    // AWS PUT $0.005 per 1,000: 5,003 x 0.005 / 1,000 = 0.025015, + one LIST 0.000005; no HEAD
    // (the multipart ETag verifies the upload).
    assert_eq!(c.cost.destination_requests, Usd(d("0.02502")));
    // To GCS the upload's answer proves nothing: one HEAD (class B $0.0004 per 1,000) follows.
    let g = eval("cloudflare-r2", "gcp", size + 1, 1);
    assert_eq!(g.counts.destination_head, 1);
}

#[test]
fn objects_over_the_destination_limit_are_flagged() {
    let r2 = &catalog().get("cloudflare-r2").unwrap().file.limits;
    let c = eval("aws", "cloudflare-r2", r2.max_object_bytes + 1, 1);
    assert_eq!(c.counts.unplaceable_objects, 1);
    assert!(c.warnings.iter().any(|w| w.contains("cannot be copied")));
}

// Retrieval: Glacier Flexible at the source needs a restore, priced per GB and per request.
#[test]
fn archive_source_pays_retrieval_and_waits() {
    let src = Place::resolve(catalog(), "aws/glacier-flexible").unwrap();
    let per_gb = src.class.retrieval_per_gb.0;
    let c = eval("aws/glacier-flexible", "backblaze-b2", 1000 * GIB, 1000);
    let per_req = src
        .class
        .retrieval_request
        .as_ref()
        .map(|r| d("1000") * r.price.0 / Decimal::from(r.per))
        .unwrap_or_default();
    assert_eq!(c.cost.retrieval, Usd(d("1000") * per_gb + per_req));
    assert!(c.time.restore_seconds > Decimal::ZERO);
    assert!(c.warnings.iter().any(|w| w.contains("restored")));
}

#[test]
fn gpu_idle_is_hours_times_rate() {
    // 10 Gbit/s = 1.25 GB/s; 4.5 TB takes 3,600 s; 8 GPUs at $4.50 = $36/hour -> $36.
    let c = eval_with("onprem", "onprem", &corpus(4_500_000_000_000, 1000), |a| {
        a.gpu_hourly = Usd(d("36"));
    });
    assert_eq!(c.time.seconds, d("3600"));
    assert_eq!(c.cost.gpu_idle, Usd(d("36")));
}

#[test]
fn time_reports_the_bound_that_dominates() {
    // 10 M objects of 100 bytes: each holds a slot for 3 x 30 ms; 64 slots -> 14,062.5 s.
    let c = eval("onprem", "onprem", 1_000_000_000, 10_000_000);
    assert_eq!(c.time.bound.as_str(), "requests");
    assert_eq!(c.time.seconds, d("14062.5"));
    // A big corpus in few objects is bandwidth-bound.
    assert_eq!(
        eval("onprem", "onprem", 1_000_000_000_000, 10)
            .time
            .bound
            .as_str(),
        "bandwidth"
    );
    // AWS allows 3,500 writes/s per prefix: 10 M single PUTs with one prefix take 2,857 s at least,
    // more latency slots make it request-bound unless concurrency is high.
    let c = eval_with("onprem", "aws", &corpus(1_000_000_000, 10_000_000), |a| {
        a.concurrency = 10_000
    });
    assert_eq!(c.time.bound.as_str(), "rate-limit");
}

#[test]
fn more_bytes_never_cost_less_and_total_is_the_sum() {
    let dests = [
        "backblaze-b2",
        "wasabi",
        "cloudflare-r2",
        "gcp",
        "azure",
        "aws:us-west-2",
        "aws/deep-archive",
    ];
    for to in dests {
        let mut prev = Usd::ZERO;
        for step in 0..40u64 {
            let bytes = step * step * 7_919 * GIB + step;
            let c = eval("aws", to, bytes, 1 + step * 1000);
            let k = &c.cost;
            let sum = k.egress
                + k.source_requests
                + k.destination_requests
                + k.retrieval
                + k.storage_horizon
                + k.early_deletion
                + k.gpu_idle
                + k.extras.source_storage
                + k.extras.source_early_deletion
                + k.extras.restored_copy
                + k.extras.worker_compute
                + k.extras.restore_idle;
            assert_eq!(k.total(), sum, "{to} at {bytes}");
            assert!(
                k.total() >= prev,
                "{to}: {bytes} bytes cost less than the step before"
            );
            prev = k.total();
        }
    }
}

#[test]
fn egress_is_spread_over_the_months_a_move_takes() {
    assert_eq!(months_of(d("1")), 1);
    assert_eq!(months_of(d("2592000")), 1);
    assert_eq!(months_of(d("2592001")), 2);
    // 300 TB over a 1 Gbit/s link takes ~28 days (one month); over 100 Mbit/s, many months, each
    // with its own free 100 GB and its own tiers, so the bill is higher.
    let fast = eval_with("aws", "backblaze-b2", &corpus(300_000 * GIB, 1000), |a| {
        a.bandwidth = d("125000000") * d("2")
    });
    let slow = eval_with("aws", "backblaze-b2", &corpus(300_000 * GIB, 1000), |a| {
        a.bandwidth = d("12500000")
    });
    assert!(months_of(slow.time.seconds) > 1);
    assert!(slow.cost.egress > fast.cost.egress);
}

// A move within one region of one S3 service is copied on the server (issue 15): 1,000 objects
// of 1 GiB from aws:us-east-1/standard to aws:us-east-1/glacier-ir.
// Each object is above the 64 MiB threshold: 1 GiB / 64 MiB = 16 parts, so 16 + 2 = 18 PUT-class
// requests at the destination (create, 16 UploadPartCopy, complete) = 18,000; the source is
// listed (1 page) and HEADed once per object for its part size (1,000 at the GET rate) and not
// read: no GET.
// Source requests: LIST 1 x $0.005/1,000 = $0.000005; HEAD 1,000 x $0.0004/1,000 = $0.0004;
// total $0.000405 (streamed: + 1,000 GETs, $0.0004 more = $0.000805).
// Egress within us-east-1: same_region_per_gb = 0 -> $0.
// Time: no bandwidth bound; requests: 1,000 multipart objects x 5 latencies x 30 ms / 64 slots
// = 2.34375 s, but S3's published 3,500 PUTs/s per prefix binds: 18,000 / 3,500 = 5.142857 s
// (streamed, the 10 Gbit/s default bounds: 1,000 GiB / 1.25 GB/s = 859.0 s).
#[test]
fn a_same_region_move_is_planned_as_a_server_side_copy() {
    let c = eval_with(
        "aws:us-east-1",
        "aws:us-east-1/glacier-ir",
        &corpus(1000 * GIB, 1000),
        |_| {},
    );
    assert!(c.server_side);
    assert_eq!(c.counts.source_get, 0);
    assert_eq!(c.counts.source_head, 1000);
    assert_eq!(c.counts.destination_put, 18_000);
    assert_eq!(c.cost.source_requests, Usd(d("0.000405")));
    assert_eq!(c.cost.egress, Usd::ZERO);
    assert_eq!(c.time.request_seconds, d("2.34375"));
    assert_eq!(c.time.bound.as_str(), "rate-limit");
    assert_eq!(c.time.seconds, d("18000") / d("3500"));
    assert!(
        c.warnings.iter().any(|w| w.contains("copied server-side")),
        "{:?}",
        c.warnings
    );
    let streamed = eval_with(
        "aws:us-east-1",
        "aws:us-east-1/glacier-ir",
        &corpus(1000 * GIB, 1000),
        |a| a.server_side = false,
    );
    assert!(!streamed.server_side);
    assert_eq!(streamed.counts.source_get, 1000);
    assert_eq!(streamed.cost.source_requests, Usd(d("0.000805")));
    assert_eq!(streamed.time.bound.as_str(), "bandwidth");
    // Another region of the same provider streams (exec's server-side copy needs one endpoint),
    // and so do two providers.
    assert!(!eval("aws:us-east-1", "aws:us-west-2", 1000 * GIB, 10).server_side);
    assert!(!eval("aws:us-east-1", "cloudflare-r2", 1000 * GIB, 10).server_side);
    assert!(!eval("onprem", "onprem", 1000 * GIB, 10).server_side);
}

// Into Azure from an S3 source the blob service fetches each block from a signed source URL
// (Put Block From URL), as `exec` does: 1,000 objects of 1 GiB from aws:us-east-1 to azure
// (eastus, hot), the workers' NIC set to 1 Gbit/s.
// Blocks: 1 GiB / 64 MiB (the part rule, under the call's 100 MiB) = 16 per object.
// Source: LIST 1 x $0.005/1,000 = $0.000005; GET 16 per object (each block's range, read by
// the service) = 16,000 x $0.0004/1,000 = $0.0064; HEAD 1,000 x $0.0004/1,000 = $0.0004;
// total $0.006805 (streamed: one GET per object, $0.0004 + $0.0004 + $0.000005 = $0.000805).
// Destination PUT-class: 16 blocks + 1 block list = 17 per object = 17,000 (streamed the same:
// 16 Put Block + 1 Put Block List = 17,000 — Azure has no "create" request — and a HEAD after
// each).
// Egress is the same either way (the bytes leave AWS for the internet): (1,000 - 100) x $0.09
// = $81.
// Time: the bytes skip the workers, so the path's 10 Gbit/s default binds, not the 1 Gbit/s
// NIC: 1,000 x 2^30 / 1,250,000,000 = 858.9934592 s (streamed: / 125,000,000 = 8,589.934592 s).
#[test]
fn an_azure_destination_of_an_s3_source_is_planned_as_a_copy_from_the_sources_url() {
    let nic = |a: &mut moverctl::plan::model::Assumptions| a.worker_nic = d("125000000");
    let c = eval_with("aws:us-east-1", "azure", &corpus(1000 * GIB, 1000), nic);
    assert!(c.from_url && !c.server_side);
    assert_eq!(c.counts.source_get, 16_000);
    assert_eq!(c.counts.source_head, 1_000);
    assert_eq!(c.counts.destination_put, 17_000);
    assert_eq!(c.counts.destination_head, 0);
    assert_eq!(c.cost.source_requests, Usd(d("0.006805")));
    assert_eq!(c.cost.egress, Usd(d("81")));
    assert_eq!(c.time.bound.as_str(), "bandwidth");
    assert_eq!(c.time.seconds, d("858.9934592"));
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("copied by azure from the source's URL")),
        "{:?}",
        c.warnings
    );
    let streamed = eval_with("aws:us-east-1", "azure", &corpus(1000 * GIB, 1000), |a| {
        nic(a);
        a.server_side = false;
    });
    assert!(!streamed.from_url);
    assert_eq!(streamed.counts.source_get, 1_000);
    assert_eq!(streamed.counts.destination_put, 17_000);
    assert_eq!(streamed.counts.destination_head, 1_000);
    assert_eq!(streamed.cost.source_requests, Usd(d("0.000805")));
    assert_eq!(streamed.cost.egress, Usd(d("81")));
    assert_eq!(streamed.time.seconds, d("8589.934592"));
    // A source the blob service cannot fetch from streams: an on-prem cluster, a GCS bucket
    // (its signed URLs need a key moverctl does not hold), an archive class; and Azure is the
    // only destination that fetches.
    assert!(!eval("onprem", "azure", GIB, 1).from_url);
    assert!(!eval("gcp", "azure", GIB, 1).from_url);
    assert!(!eval("aws:us-east-1/deep-archive", "azure", GIB, 1).from_url);
    assert!(!eval("aws:us-east-1", "cloudflare-r2", GIB, 1).from_url);
    assert!(eval("azure:eastus", "azure:westus2", GIB, 1).from_url);
}

// A probe's rates with one in flight give each object's own GET and PUT time (issue 16): a
// server that answers a small GET in 40 ms (25/s with one in flight) and takes a PUT in 1 ms
// (1,000/s). 2,000 objects of 16 KiB (single PUTs), 32 slots, 1 ms latency assumed for the HEAD:
// each object holds its slot 40 + 1 + 1 = 42 ms; 2,000 x 0.042 s / 32 = 2.625 s. Without the
// probe's rates all three take the 1 ms assumption: 2,000 x 3 x 0.001 / 32 = 0.1875 s.
#[test]
fn a_probed_get_and_put_time_holds_each_objects_slot() {
    use moverctl::plan::model::Measured;
    let small = corpus(2_000 * 16_384, 2_000);
    let set = |a: &mut moverctl::plan::model::Assumptions| {
        a.concurrency = 32;
        a.latency_ms = 1;
    };
    let assumed = eval_with("onprem", "onprem", &small, set);
    assert_eq!(assumed.time.request_seconds, d("0.1875"));
    let probed = eval_with("onprem", "onprem", &small, |a| {
        set(a);
        a.measured = Some(Measured {
            source_get_one_seconds: Some(d("0.04")),
            destination_put_one_seconds: Some(d("0.001")),
            cores: 2,
            ..Measured::default()
        });
    });
    assert_eq!(probed.time.request_seconds, d("2.625"));
    assert_eq!(probed.time.bound.as_str(), "requests");
}
