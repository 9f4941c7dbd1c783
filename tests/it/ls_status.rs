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
