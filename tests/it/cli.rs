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

/// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` dropped,
/// spaces as `-`.
fn anchor_of(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Headings and links of a markdown file, outside fenced code blocks.
fn headings_and_links(text: &str) -> (Vec<String>, Vec<(usize, String)>) {
    let (mut heads, mut links, mut fence) = (Vec::new(), Vec::new(), false);
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            fence = !fence;
        }
        if fence {
            continue;
        }
        if let Some(h) = line.strip_prefix('#') {
            heads.push(anchor_of(h.trim_start_matches('#')));
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let tail = &rest[i + 2..];
            let end = tail.find(')').unwrap_or(tail.len());
            links.push((n + 1, tail[..end].to_string()));
            rest = &tail[end..];
        }
    }
    (heads, links)
}

/// The README is short and points into docs/: every relative link of the README and the docs
/// pages names a file that exists, and every `#anchor` a heading of that file.
#[test]
fn readme_and_docs_links_resolve() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            files.push(p);
        }
    }
    let mut bad = Vec::new();
    for f in &files {
        let (_, links) = headings_and_links(&std::fs::read_to_string(f).unwrap());
        for (line, link) in links {
            if link.starts_with("http") || link.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if path.is_empty() {
                f.clone()
            } else {
                f.parent().unwrap().join(path)
            };
            if !target.exists() {
                bad.push(format!("{}:{line}: {link}: no such file", f.display()));
            } else if !anchor.is_empty() && target.extension().is_some_and(|x| x == "md") {
                let (heads, _) = headings_and_links(&std::fs::read_to_string(&target).unwrap());
                if !heads.iter().any(|h| h == anchor) {
                    bad.push(format!("{}:{line}: {link}: no such heading", f.display()));
                }
            }
        }
    }
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.lines().count() < 600,
        "the README is the newcomer's page; reference material goes to docs/"
    );
    let first_copy = readme.lines().position(|l| l.contains("$ moverctl copy"));
    assert!(
        first_copy.is_some_and(|n| n < 120),
        "a copy example early in the README"
    );
}
