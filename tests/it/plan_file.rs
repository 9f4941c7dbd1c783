//! Plan files: saved by `plan --save`, read back exactly, with no secrets, and bad ones located.

use moverctl::plan::file::{PlanError, PlanFile};

fn saved_plan(dir: &std::path::Path, extra: &[&str]) -> std::path::PathBuf {
    let out = super::moverctl()
        .args([
            "plan",
            "--from",
            "aws:us-east-1",
            "--to",
            "backblaze-b2,cloudflare-r2",
            "--bytes",
            "10TB",
            "--objects",
            "100k",
        ])
        .args(["--save", "move", "--plans-dir"])
        .arg(dir)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("move.toml")
}

#[test]
fn save_then_load_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let path = saved_plan(
        dir.path(),
        &["--src", "s3://corpus/train", "--dst", "b2:cold/train"],
    );
    let plan = PlanFile::load(&path).unwrap();
    assert_eq!(plan.moverctl_plan.version, 1);
    assert_eq!(plan.source.place, "aws:us-east-1/standard");
    assert_eq!(plan.destination.location.as_deref(), Some("b2:cold/train"));
    assert_eq!(plan.corpus.bytes, 10_000_000_000_000);
    assert!(plan.catalog.digest.starts_with("sha256:"));
    assert!(plan.prediction.cost.contains_key("total"));
    assert_eq!(PlanFile::parse("again", &plan.to_toml()).unwrap(), plan);
    assert_eq!(plan.alternatives.len(), 1);
}

#[test]
fn pick_chooses_another_destination() {
    let dir = tempfile::tempdir().unwrap();
    let path = saved_plan(dir.path(), &["--pick", "cloudflare-r2"]);
    let plan = PlanFile::load(&path).unwrap();
    assert_eq!(plan.destination.place, "cloudflare-r2:auto/standard");
    assert!(
        plan.transfer.equal_part_sizes,
        "R2 needs equal parts; the executor must know"
    );
}

#[test]
fn credentials_in_locations_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for loc in [
        "https://acct.blob.core.windows.net/c?sv=2024&sig=SECRETSIG",
        "s3://AKIAEXAMPLE:topsecret@bucket/prefix",
    ] {
        let out = super::moverctl()
            .args([
                "plan",
                "--from",
                "aws",
                "--to",
                "azure",
                "--bytes",
                "1TB",
                "--objects",
                "10",
                "--save",
                "x",
                "--plans-dir",
            ])
            .arg(dir.path())
            .args(["--dst", loc])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("SECRETSIG") && !err.contains("topsecret"),
            "secret leaked: {err}"
        );
        assert!(err.contains("credentials"), "{err}");
        assert!(!dir.path().join("x.toml").exists());
    }
}

#[test]
fn a_broken_plan_names_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = saved_plan(dir.path(), &[]);
    let text = std::fs::read_to_string(&path).unwrap();
    let broken = text.replace("part_size = ", "part_size = \"big\" #");
    let e = PlanFile::parse("plans/move.toml", &broken).unwrap_err();
    let PlanError::Invalid(f) = e else {
        panic!("located error expected")
    };
    assert_eq!(f.field, "transfer.part_size");
    assert_eq!(
        f.line,
        text.lines()
            .position(|l| l.starts_with("part_size"))
            .unwrap()
            + 1
    );
    let newer = text.replace("version = 1", "version = 9");
    let e = PlanFile::parse("p", &newer).unwrap_err().to_string();
    assert!(
        e.contains("version 9") && e.contains("moverctl_plan.version"),
        "{e}"
    );
}

/// On the main of 2026-12-02 a plan file of random bytes was a failure to read it (exit 1), not
/// a bad plan file located like every other (exit 2).
#[test]
fn a_plan_file_of_random_bytes_exits_2_located() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("random.toml");
    // Deterministic "random" bytes: a valid first line, then bytes that are not UTF-8.
    let mut bytes = b"# moverctl plan\n".to_vec();
    let mut x: u32 = 0x9e37_79b9;
    bytes.extend((0..4096).map(|_| {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        (x >> 24) as u8 | 0x80
    }));
    std::fs::write(&path, &bytes).unwrap();
    let o = super::moverctl()
        .arg("exec")
        .arg(&path)
        .args(["--src", "/nonexistent-src", "--dst"])
        .arg(dir.path().join("dst"))
        .output()
        .unwrap();
    super::expect(&o, 2);
    let err = String::from_utf8_lossy(&o.stderr);
    let shown = format!(
        "{}:2:1: field `(document)`: not a TOML text file",
        path.display()
    );
    assert!(err.contains(&shown), "{err}");
    assert!(!dir.path().join("dst").exists(), "nothing was done");
}

/// On the main of 2026-12-02 `--bwlimit 0.0001` (rclone's unit is KiB/s: 0.1 B/s) rounded to
/// 0, which is no limit, and the run went at full speed.
#[test]
fn a_bwlimit_that_rounds_to_zero_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/a"), b"x").unwrap();
    for bad in ["0.0001", "100B"] {
        let o = super::moverctl()
            .arg("copy")
            .arg(dir.path().join("src"))
            .arg(dir.path().join("dst"))
            .args(["--bwlimit", bad])
            .env("MOVERCTL_STATE_DIR", dir.path().join("state"))
            .output()
            .unwrap();
        super::expect(&o, 2);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("--bwlimit") && err.contains("below the minimum of 1 KiB/s"),
            "{err}"
        );
        assert!(!dir.path().join("dst/a").exists(), "nothing was copied");
    }
}
