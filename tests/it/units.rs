//! One size convention for every flag (issue 31): K/M/G… are powers of 1024 as in rclone,
//! KB/MB/GB spelled out are powers of 1000, and what progress and summaries show reads the same.

use std::path::Path;

const MIB: u64 = 1 << 20;

fn file(path: &Path, size: usize) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, vec![7u8; size]).unwrap();
}

/// The saved plan's `part_size` (bytes) for `plan --part-size VALUE`.
fn planned_part_size(value: &str) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let o = super::moverctl()
        .current_dir(dir.path())
        .args(["plan", "--from", "aws:us-east-1", "--to", "onprem"])
        .args(["--bytes", "1TB", "--objects", "1000", "--save", "p"])
        .args(["--part-size", value])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let text = std::fs::read_to_string(dir.path().join("plans/p.toml")).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("part_size = "))
        .expect("part_size in the plan");
    line["part_size = ".len()..].parse().unwrap()
}

/// Fails on the main of 2026-12-06, where `plan --part-size 64M` was 64,000,000 bytes while
/// `--min-size 64M` and `--bwlimit 64M` were MiB.
#[test]
fn plan_part_size_64m_is_64_mib() {
    assert_eq!(planned_part_size("64M"), 64 * MIB);
    assert_eq!(planned_part_size("64MiB"), 64 * MIB);
    assert_eq!(
        planned_part_size("64MB"),
        64_000_000,
        "spelled out: as written"
    );
}

/// `plan --bytes 1T` is a TiB (it was 10^12); plan shows corpus sizes in powers of 1000.
#[test]
fn plan_bytes_follow_the_convention_and_show_decimal() {
    let plan = |bytes: &str| {
        let o = super::moverctl()
            .args(["plan", "--from", "aws:us-east-1", "--to", "onprem"])
            .args(["--bytes", bytes, "--objects", "1000"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{o:?}");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert!(plan("1T").contains("Corpus   1.10 TB in 1000 objects"));
    assert!(plan("1TB").contains("Corpus   1.00 TB in 1000 objects"));
}

/// `copy --part-size`, `--multipart-threshold` and `--max-buffer` read `64M` as 64 MiB: a
/// buffer of `64M` holds a part of `64MiB` (refused when `64M` was 64,000,000 bytes).
#[test]
fn copy_part_and_buffer_sizes_are_binary() {
    let dir = tempfile::tempdir().unwrap();
    file(&dir.path().join("src/a"), 1000);
    let copy = |part: &str, buffer: &str| {
        super::moverctl()
            .args(["copy", "-q", "--part-size", part, "--max-buffer", buffer])
            .args(["--multipart-threshold", "64M"])
            .arg(dir.path().join("src"))
            .arg(dir.path().join("dst"))
            .output()
            .unwrap()
    };
    let o = copy("64MiB", "64M");
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let o = copy("64M", "64MB");
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--max-buffer 64MB is smaller than one part (64.0 MiB)"),
        "{err}"
    );
}

/// A lowercase b after a letter is bits: refused with the spellings to use, in every size flag.
#[test]
fn bits_are_refused_in_every_size_flag() {
    let dir = tempfile::tempdir().unwrap();
    file(&dir.path().join("src/a"), 10);
    for (flag, value) in [
        ("--part-size", "64Mb"),
        ("--min-size", "1Kb"),
        ("--max-buffer", "2Gb"),
        ("--bwlimit", "10Mb"),
    ] {
        let o = super::moverctl()
            .args(["copy", flag, value])
            .arg(dir.path().join("src"))
            .arg(dir.path().join("dst"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(err.contains(flag) && err.contains("bits"), "{err}");
    }
    let o = super::moverctl()
        .args(["plan", "--from", "aws:us-east-1", "--to", "onprem"])
        .args(["--bytes", "2Pb", "--objects", "10"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("2P or 2PiB") && err.contains("2PB"), "{err}");
}

/// `--bwlimit 2MiB/s` shows about 2 MiB/s in the summary (binary units, as the flag), not
/// "2.10 MB/s".
#[test]
fn the_summary_rate_is_in_the_flags_units() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..3 {
        file(&dir.path().join(format!("src/f{i}")), 2 * MIB as usize);
    }
    let o = super::moverctl()
        .args(["copy", "--bwlimit", "2MiB/s", "--stats", "0"])
        .arg(dir.path().join("src"))
        .arg(dir.path().join("dst"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let time = out.lines().find(|l| l.starts_with("time: ")).expect(&out);
    let rate = time
        .split(" at ")
        .nth(1)
        .and_then(|r| {
            r.strip_suffix("MiB/s")
                .or_else(|| r.split_once(" MiB/s").map(|x| x.0))
        })
        .unwrap_or_else(|| panic!("{time}"));
    let mib: f64 = rate.trim().parse().unwrap_or_else(|_| panic!("{time}"));
    // 6 MiB at 2 MiB/s, less the limiter's first burst: about 2 s, 2 to 3 MiB/s.
    assert!((1.8..3.5).contains(&mib), "{time}");
    assert!(out.contains("6.00 MiB"), "{out}");
}

/// `probe --size 1M` streams 1 MiB (it was 1,000,000 bytes), shown as 1.00 MiB.
#[test]
fn probe_size_is_binary() {
    let dir = tempfile::tempdir().unwrap();
    let probe = |json: bool| {
        let mut c = super::moverctl();
        c.arg("probe").arg(dir.path()).args([
            "--size",
            "1M",
            "--streams",
            "1",
            "--requests",
            "1",
            "--no-save",
        ]);
        if json {
            c.arg("--json");
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{o:?}");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let doc: serde_json::Value = serde_json::from_str(&probe(true)).unwrap();
    assert_eq!(doc["stream_bytes"], MIB);
    assert!(probe(false).contains("PUT of 1.00 MiB"));
}
