//! `--help` that teaches (issue 31): every flag under a heading with a description, global
//! options in their own section at the end, worked examples per command; other tools' spellings
//! (`--endpoint`, `--dryrun`, `--region`) answered with ours; `-n` for `--dry-run`.

use super::moverctl;

const COMMANDS: &[&str] = &[
    "plan",
    "providers",
    "ls",
    "probe",
    "copy",
    "exec",
    "sync",
    "drain",
    "stage",
    "status",
];

fn help(args: &[&str]) -> String {
    let o = moverctl().args(args).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{args:?}: {o:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Headings (lines ending in ':' at the start of a line) in order.
fn headings(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':') && !l.contains("  "))
        .collect()
}

/// Fails on the main of 2026-12-06: one flat "Options:" list, global flags among the command's
/// own (--retry-timeout between --from and --to), `status --dst` and `--json` undescribed, no
/// examples.
#[test]
fn every_flag_is_grouped_described_and_the_globals_come_last() {
    for cmd in COMMANDS {
        let text = help(&[cmd, "--help"]);
        let hs = headings(&text);
        assert!(
            !hs.contains(&"Options:"),
            "{cmd}: an ungrouped flag\n{text}"
        );
        assert!(
            hs.len() >= 3 && hs[hs.len() - 2..] == ["Global options:", "Examples:"],
            "{cmd}: the global options come last, then the examples: {hs:?}"
        );
        // Global flags only under the global heading.
        let (own, globals) = text.split_once("Global options:").unwrap();
        for flag in [
            "--retry-timeout",
            "--log-file",
            "--profile ",
            "--endpoint-url",
        ] {
            assert!(
                !own.contains(&format!("      {flag}")),
                "{cmd}: {flag} among its own"
            );
            assert!(globals.contains(flag), "{cmd}: {flag}");
        }
        // Every flag line has a description beside it.
        let lines: Vec<&str> = own
            .lines()
            .chain(globals.split("Examples:").next().unwrap().lines())
            .collect();
        for (i, line) in lines.iter().enumerate() {
            let t = line.trim_start();
            if t.starts_with('-') && (2..=6).contains(&(line.len() - t.len())) {
                let beside = t
                    .split_once("  ")
                    .is_some_and(|(_, d)| !d.trim().is_empty());
                // Where a section's flags are wide, clap puts descriptions on the next line.
                let below = lines.get(i + 1).is_some_and(|n| {
                    n.starts_with("          ") && !n.trim_start().starts_with('-')
                });
                assert!(beside || below, "{cmd}: no description: {line:?}");
            }
        }
        let examples = text.split("Examples:").nth(1).unwrap();
        let n = examples
            .lines()
            .filter(|l| l.trim_start().starts_with("moverctl ") || l.contains("* moverctl "))
            .count();
        assert!((2..=4).contains(&n), "{cmd}: {n} examples\n{examples}");
    }
    let status = help(&["status", "--help"]);
    let line = |flag: &str| {
        status
            .lines()
            .find(|l| l.contains(flag))
            .unwrap_or("")
            .to_string()
    };
    assert!(
        line("--dst <DST>").contains("Destination of a `copy` run"),
        "{status}"
    );
    assert!(
        line("--json").contains("Print one JSON document"),
        "{status}"
    );
}

/// The short help fits a screen or two (copy's was 138 lines); the full text of every flag is
/// still `moverctl help copy`'s.
#[test]
fn help_is_short_and_help_command_is_complete() {
    let short = help(&["copy", "--help"]);
    assert!(
        short.lines().count() <= 90,
        "{} lines",
        short.lines().count()
    );
    assert_eq!(short, help(&["copy", "-h"]));
    assert!(!short.contains("'/ckpt/**' from the root only"));
    let full = help(&["help", "copy"]);
    assert!(full.contains("'/ckpt/**' from the root only"), "{full}");
    assert!(full.lines().count() > short.lines().count());
    for cmd in COMMANDS {
        let text = help(&[cmd, "--help"]);
        assert!(
            text.lines().count() <= 130,
            "{cmd}: {} lines",
            text.lines().count()
        );
    }
}

/// Fails on the main of 2026-12-06, where clap answered `--endpoint-url` with "use '--
/// --endpoint-url'" and `--dryrun` with nothing useful.
#[test]
fn other_tools_spellings_name_ours() {
    for (args, want) in [
        (
            vec!["ls", "--endpoint", "http://127.0.0.1:1", "s3://b/p"],
            "--endpoint-url URL",
        ),
        (
            vec!["ls", "--endpoint=http://127.0.0.1:1", "s3://b/p"],
            "--endpoint-url URL",
        ),
        (vec!["copy", "--dryrun", "a", "b"], "--dry-run (or -n)"),
        (
            vec!["copy", "--region", "eu-west-1", "a", "b"],
            "AWS_REGION",
        ),
        (
            vec!["copy", "--no-sign-request", "a", "b"],
            "anonymous = true",
        ),
        (
            vec!["sync", "--s3-chunk-size", "64M", "a", "b"],
            "--part-size",
        ),
        (
            vec!["copy", "--recursive", "a", "b"],
            "always take everything",
        ),
    ] {
        let o = moverctl().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(
            !err.contains("use '--"),
            "{args:?}: clap's guess remains: {err}"
        );
    }
    // Ours parse: no "unexpected argument".
    let o = moverctl()
        .args([
            "ls",
            "--endpoint-url",
            "http://127.0.0.1:1",
            "--profile",
            "nope",
            "s3://b/p",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("unexpected argument"), "{err}");
}

/// `-n` is `--dry-run` wherever `--dry-run` exists: nothing is written.
#[test]
fn n_is_dry_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/k"), b"0123456789").unwrap();
    for cmd in ["copy", "sync"] {
        let o = moverctl()
            .args([cmd, "-n"])
            .arg(dir.path().join("src"))
            .arg(dir.path().join(format!("dst-{cmd}")))
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{cmd}: {o:?}");
        assert!(
            out.contains("would copy") && out.contains("k"),
            "{cmd}: {out}"
        );
        assert!(!dir.path().join(format!("dst-{cmd}/k")).exists(), "{cmd}");
    }
    for cmd in ["copy", "exec", "sync", "drain", "stage"] {
        let text = help(&[cmd, "--help"]);
        assert!(text.contains("-n, --dry-run"), "{cmd}");
    }
}

/// `plan --size-profile` is the object-size mix; the older `plan --profile 70%:…` still is, and
/// any other `--profile` is the AWS profile, as in every command.
#[test]
fn plan_size_profile_and_the_older_spelling() {
    let plan = |flag: &str| {
        let o = moverctl()
            .args(["plan", "--from", "aws:us-east-1", "--to", "onprem"])
            .args([
                "--bytes",
                "1TB",
                "--objects",
                "1000",
                flag,
                "90%:1MB,10%:10MB",
            ])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{flag}: {o:?}");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert_eq!(plan("--size-profile"), plan("--profile"));
    let help = help(&["plan", "--help"]);
    assert!(help.contains("--size-profile <MIX>"), "{help}");
}
