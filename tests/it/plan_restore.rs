//! Restore tiers for archive sources (`--restore-tier`). Expected numbers worked out by hand from
//! providers/aws.toml (GB = 2^30 bytes).

use super::*;
use moverctl::catalog::Place;
use moverctl::money::Usd;
use moverctl::plan::model::{Candidate, bucket_classes};
use moverctl::plan::restore::{TierChoice, choose};

const TIB100: u64 = 102_400 * GIB;

fn restore_eval(from: &str, choice: &str, gpu: &str) -> Candidate {
    let c = corpus(TIB100, 1_000_000);
    let src = Place::resolve(catalog(), from).unwrap();
    let r = choose(
        &src,
        &c,
        &bucket_classes(&src, &c),
        TierChoice::parse(choice).unwrap(),
        Usd(d(gpu)),
    )
    .unwrap();
    eval_with(from, "backblaze-b2", &c, |a| {
        a.gpu_hourly = Usd(d(gpu));
        a.restore = r.clone();
    })
}

// Deep Archive, 100 TiB = 102,400 GB in 1,000,000 objects:
//   standard: 102,400 x 0.02 = 2,048 + 1,000,000 x 0.10 / 1,000 = 100 -> 2,148, 12 h
//   bulk:     102,400 x 0.0025 = 256 + 1,000,000 x 0.025 / 1,000 = 25 -> 281, 48 h
#[test]
fn deep_archive_named_tiers() {
    let s = restore_eval("aws/deep-archive", "standard", "0");
    assert_eq!(s.cost.retrieval, Usd(d("2148")));
    assert_eq!(s.time.restore_seconds, d("43200"));
    let b = restore_eval("aws/deep-archive", "bulk", "0");
    assert_eq!(b.cost.retrieval, Usd(d("281")));
    assert_eq!(b.time.restore_seconds, d("172800"));
    // 36 hours longer.
    assert_eq!(b.time.seconds - s.time.seconds, d("129600"));
    // Without the flag the class's own (standard) restore is priced, as before.
    let plain = eval("aws/deep-archive", "backblaze-b2", TIB100, 1_000_000);
    assert_eq!(plain.cost.retrieval, s.cost.retrieval);
}

// auto weighs fees + GPU idle for the restore: the tiers cost the same at 1,867 / 36 h = $51.86/h.
//   $50/h: standard 2,148 + 12 x 50 = 2,748; bulk 281 + 48 x 50 = 2,681 -> bulk
//   $60/h: standard 2,148 + 720 = 2,868; bulk 281 + 2,880 = 3,161 -> standard
#[test]
fn auto_picks_the_lowest_fees_plus_gpu_idle_and_says_why() {
    let c = restore_eval("aws/deep-archive", "auto", "50");
    let r = c.restore.as_ref().unwrap();
    assert_eq!(
        (r.chosen.tier.as_str(), r.chosen.total()),
        ("bulk", Usd(d("2681")))
    );
    assert!(r.why.contains("against standard $2,148"), "{}", r.why);
    assert!(c.warnings.contains(&r.why));
    // GPU idle covers the restore and the copy: 48 h x 50 = 2,400 and more.
    assert!(c.cost.gpu_idle > Usd(d("2400")));
    let c = restore_eval("aws/deep-archive", "auto", "60");
    let r = c.restore.as_ref().unwrap();
    assert_eq!(
        (r.chosen.tier.as_str(), r.chosen.total()),
        ("standard", Usd(d("2868")))
    );
    assert_eq!(c.cost.retrieval, Usd(d("2148")));
    // No GPUs waiting: the lowest fees win.
    let c = restore_eval("aws/deep-archive", "auto", "0");
    assert_eq!(c.restore.as_ref().unwrap().chosen.tier, "bulk");
}

// Glacier Flexible: expedited 0.03/GB + $10 per 1,000; standard 0.01 + 0.05; bulk free. No source
// gives the hours, so 12 h is assumed for each and the plan says so.
#[test]
fn glacier_flexible_tiers_with_unknown_hours() {
    let e = restore_eval("aws/glacier-flexible", "expedited", "0");
    // 102,400 x 0.03 = 3,072 + 1,000,000 x 10 / 1,000 = 10,000
    assert_eq!(e.cost.retrieval, Usd(d("13072")));
    assert!(
        e.warnings.iter().any(|w| w.contains("12 h is assumed")),
        "{:?}",
        e.warnings
    );
    let b = restore_eval("aws/glacier-flexible", "auto", "100");
    assert_eq!(b.restore.as_ref().unwrap().chosen.tier, "bulk");
    assert_eq!(b.cost.retrieval, Usd::ZERO);
}

#[test]
fn a_tier_the_class_does_not_offer_is_an_error() {
    let c = corpus(TIB100, 1_000_000);
    let src = Place::resolve(catalog(), "aws/deep-archive").unwrap();
    let e = choose(
        &src,
        &c,
        &bucket_classes(&src, &c),
        TierChoice::Named("expedited"),
        Usd::ZERO,
    )
    .unwrap_err();
    assert!(e.contains("offered: bulk, standard"), "{e}");
    assert!(TierChoice::parse("fast").is_err());
    // A non-archive source has nothing to restore.
    let src = Place::resolve(catalog(), "aws").unwrap();
    assert_eq!(
        choose(
            &src,
            &c,
            &bucket_classes(&src, &c),
            TierChoice::Auto,
            Usd::ZERO
        )
        .unwrap(),
        None
    );
    let o = moverctl()
        .args([
            "plan",
            "--from",
            "aws/deep-archive",
            "--to",
            "wasabi",
            "--bytes",
            "1TB",
        ])
        .args(["--objects", "10", "--restore-tier", "expedited"])
        .output()
        .unwrap();
    expect(&o, 2);
    let o = moverctl()
        .args([
            "plan",
            "--from",
            "aws/deep-archive",
            "--to",
            "wasabi",
            "--bytes",
            "100TiB",
        ])
        .args([
            "--objects",
            "1M",
            "--restore-tier",
            "auto",
            "--gpu-hourly",
            "50",
            "--json",
        ])
        .output()
        .unwrap();
    expect(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &v["candidates"][0]["restore"];
    assert_eq!(r["tier"], "bulk");
    assert_eq!(r["auto"], true);
    assert_eq!(r["options"].as_array().unwrap().len(), 2);
}

#[test]
fn restore_tiers_in_provider_files_are_checked() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("providers/aws.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let parse = |t: &str| moverctl::catalog::parse_provider("x/aws.toml", "aws.toml", t, "test");
    assert!(parse(&text).is_ok());
    // An unknown tier name, a tier given twice, and tiers on a class that needs no restore.
    let bad = text.replacen(
        "{ id = \"bulk\", retrieval_per_gb = \"0\"",
        "{ id = \"slow\", retrieval_per_gb = \"0\"",
        1,
    );
    let e = parse(&bad).unwrap_err().to_string();
    assert!(
        e.contains("restore_tiers")
            && e.contains("\"slow\" is not one of bulk, standard, expedited"),
        "{e}"
    );
    let twice = text.replacen("{ id = \"expedited\"", "{ id = \"standard\"", 1);
    let e = parse(&twice).unwrap_err().to_string();
    assert!(e.contains("appears twice"), "{e}");
    let online = text.replacen(
        "min_object_bytes = 131072  # 128 KB; also in re:Post",
        "restore_tiers = [{ id = \"bulk\", retrieval_per_gb = \"0\", source = \"x\", as_of = 2026-01-01 }]\nmin_object_bytes = 131072  # 128 KB; also in re:Post",
        1,
    );
    assert_ne!(online, text);
    let e = parse(&online).unwrap_err().to_string();
    assert!(e.contains("need an archive class"), "{e}");
}
