//! Bad inputs to `plan` (issue 29): every catalog id is validated the same way with a "did you
//! mean", and each listed bad flag value gets a clear error naming the flag, with exit code 2.

use super::moverctl;
use moverctl::catalog::Catalog;
use moverctl::job::plan::compute_at;
use std::process::Output;

const CORPUS: &[&str] = &["--bytes", "10TiB", "--objects", "1M", "--no-probe"];

fn plan(args: &[&str]) -> Output {
    moverctl().arg("plan").args(args).output().unwrap()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `plan --from FROM --to TO` with a small corpus and `extra`: exit 2 and stderr holding every
/// needle.
fn refused(from: &str, to: &str, extra: &[&str], needles: &[&str]) {
    let mut a = vec!["--from", from, "--to", to];
    a.extend_from_slice(CORPUS);
    a.extend_from_slice(extra);
    let o = plan(&a);
    let e = err(&o);
    assert_eq!(o.status.code(), Some(2), "{a:?}: {e}");
    for n in needles {
        assert!(e.contains(n), "{a:?}: missing {n:?} in {e}");
    }
}

#[test]
fn a_compute_at_typo_is_an_error_with_did_you_mean() {
    fn with(at: &str) -> [&str; 4] {
        ["--compute-at", at, "--reads-per-month", "1"]
    }
    refused(
        "aws",
        "wasabi",
        &with("azur:eastus"),
        &[
            "--compute-at",
            "unknown provider \"azur\"",
            "did you mean azure?",
            "internet:NAME",
        ],
    );
    refused(
        "aws",
        "wasabi",
        &with("azure:eastu"),
        &["--compute-at", "did you mean eastus?"],
    );
    // A bare unknown name is refused too: the GPU cloud without a provider file is explicit.
    refused("aws", "wasabi", &with("lambda"), &["internet:lambda"]);
}

#[test]
fn a_gpu_cloud_without_a_provider_file_is_given_as_internet() {
    let c = Catalog::embedded().unwrap();
    let at = compute_at(&c, "internet:lambda").unwrap();
    assert!(!at.in_catalog);
    assert_eq!(at.canonical(), "internet:lambda");
    assert_eq!(compute_at(&c, "internet").unwrap().canonical(), "internet");
    // An alias resolves to the provider's id, so same-provider reads stay free.
    let b2 = compute_at(&c, "b2").unwrap();
    assert!(b2.in_catalog);
    assert_eq!(b2.canonical(), "backblaze-b2:us-west");
    // Priced over the internet and said so: 10 TiB read once from AWS us-east-1.
    let mut a = vec!["--from", "aws", "--to", "wasabi", "--json"];
    a.extend_from_slice(CORPUS);
    a.extend_from_slice(&["--compute-at", "internet:lambda", "--reads-per-month", "1"]);
    let o = plan(&a);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["assumptions"]["compute_at"], "internet:lambda");
    let text = o.stdout.iter().map(|&b| b as char).collect::<String>();
    assert!(text.contains("not in the catalog"), "{text}");
}

#[test]
fn every_catalog_id_gets_a_did_you_mean() {
    refused(
        "azur",
        "wasabi",
        &[],
        &["--from \"azur\"", "did you mean azure?"],
    );
    refused(
        "aws",
        "wasbi",
        &[],
        &["--to \"wasbi\"", "did you mean wasabi?"],
    );
    refused("aws", "backblaze", &[], &["did you mean backblaze-b2?"]);
    refused(
        "aws:us-est-1",
        "wasabi",
        &[],
        &["--from", "did you mean us-east-1?"],
    );
    refused(
        "aws",
        "gcp/nearlin",
        &[],
        &["--to", "did you mean nearline?"],
    );
    // Nothing near: no suggestion, the known ids still listed.
    let mut a = vec!["--from", "aws", "--to", "zzzzzz"];
    a.extend_from_slice(CORPUS);
    let e = err(&plan(&a));
    assert!(
        e.contains("known providers: aws") && !e.contains("did you mean"),
        "{e}"
    );
}

#[test]
fn b2_and_r2_are_aliases_shown_by_providers() {
    let mut a = vec!["--from", "aws", "--to", "b2,r2", "--json"];
    a.extend_from_slice(CORPUS);
    let o = plan(&a);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut resolved: Vec<String> = (v["candidates"].as_array().unwrap().iter())
        .map(|c| c["resolved"].as_str().unwrap().to_string())
        .collect();
    resolved.sort();
    assert_eq!(
        resolved,
        [
            "backblaze-b2:us-west/standard",
            "cloudflare-r2:auto/standard"
        ]
    );
    // --pick takes the alias too.
    let dir = tempfile::tempdir().unwrap();
    let mut a = vec![
        "--from",
        "aws",
        "--to",
        "backblaze-b2,cloudflare-r2",
        "--pick",
        "r2",
        "--save",
        "p",
    ];
    a.extend_from_slice(CORPUS);
    let o = moverctl()
        .arg("plan")
        .args(&a)
        .arg("--plans-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let saved = std::fs::read_to_string(dir.path().join("p.toml")).unwrap();
    // R2 costs more than B2 here: only the alias can have picked it.
    assert!(
        saved.contains("[destination]\nplace = \"cloudflare-r2:auto/standard\""),
        "{saved}"
    );
    let o = moverctl().arg("providers").output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("backblaze-b2 (also b2)"), "{out}");
    assert!(out.contains("cloudflare-r2 (also r2)"), "{out}");
    let o = moverctl()
        .args(["providers", "show", "r2"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
}

#[test]
fn an_alias_that_is_another_providers_id_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = include_str!("../../providers/wasabi.toml").replacen(
        "id = \"wasabi\"\n",
        "id = \"wasabi\"\naliases = [\"aws\"]\n",
        1,
    );
    std::fs::write(dir.path().join("wasabi.toml"), text).unwrap();
    let e = Catalog::load(Some(dir.path())).unwrap_err().to_string();
    assert!(
        e.contains("alias \"aws\"") && e.contains("wasabi.toml"),
        "{e}"
    );
}

#[test]
fn small_bad_inputs_name_the_flag_and_what_to_do() {
    refused(
        "aws",
        "wasabi",
        &["--gpus", "8", "--gpu-rate", "-1"],
        &["--gpu-rate", "negative"],
    );
    refused(
        "aws",
        "wasabi",
        &["--gpu-hourly", "-5"],
        &["--gpu-hourly", "negative"],
    );
    refused(
        "aws",
        "wasabi",
        &["--bandwidth", "0"],
        &["--bandwidth", "above 0"],
    );
    refused(
        "aws",
        "wasabi",
        &["--bandwidth", "0Gbps"],
        &["--bandwidth", "above"],
    );
    refused(
        "aws",
        "wasabi",
        &["--months", "0"],
        &["--months 0", "at least 1 month"],
    );
    refused(
        "aws",
        "wasabi",
        &["--part-size", "64Mib"],
        &["--part-size", "64MiB"],
    );
    refused(
        "aws",
        "wasabi,wasabi:us-east-1",
        &[],
        &[
            "--to lists wasabi:us-east-1/standard twice",
            "give each destination once",
        ],
    );
    refused("aws", "b2,backblaze-b2", &[], &["twice"]);
    // A move from a store to itself: the same location on both sides.
    refused(
        "onprem",
        "onprem",
        &["--src", "/data/corpus", "--dst", "/data/corpus/"],
        &["--src and --dst are the same location", "--dst"],
    );
    // The source's own place without locations: two buckets of one store, priced, with a note.
    let mut a = vec![
        "--from",
        "aws:us-east-1",
        "--to",
        "wasabi,aws:us-east-1/standard",
    ];
    a.extend_from_slice(CORPUS);
    let o = plan(&a);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(err(&o).contains("is --from's own place"), "{}", err(&o));
    // Another class in the same region is a real move (a class change), and is priced.
    let mut a = vec!["--from", "aws", "--to", "aws/glacier-ir"];
    a.extend_from_slice(CORPUS);
    assert_eq!(plan(&a).status.code(), Some(0));
}

#[test]
fn a_lowercase_b_in_bytes_is_refused_as_ambiguous() {
    for (bytes, want) in [("2Pb", "2PB"), ("2Pib", "2PiB"), ("500gb", "500GB")] {
        let o = plan(&[
            "--from",
            "aws",
            "--to",
            "wasabi",
            "--bytes",
            bytes,
            "--objects",
            "1M",
        ]);
        assert_eq!(o.status.code(), Some(2), "{bytes}");
        let e = err(&o);
        assert!(
            e.contains("--bytes") && e.contains("bits") && e.contains(want),
            "{e}"
        );
    }
    let o = plan(&[
        "--from",
        "aws",
        "--to",
        "wasabi",
        "--bytes",
        "2PB",
        "--objects",
        "1M",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
}

#[test]
fn a_bare_plan_points_at_the_example() {
    let o = plan(&[]);
    assert_eq!(o.status.code(), Some(2));
    let e = err(&o);
    assert!(
        e.contains("--from") && e.contains("moverctl plan --example"),
        "{e}"
    );
    let o = plan(&["--from", "aws", "--bytes", "1TB", "--objects", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("--to") && err(&o).contains("--example"),
        "{}",
        err(&o)
    );
}
