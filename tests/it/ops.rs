//! Operating a long run (issue 17): logs that say what is happening (retries, throttling,
//! connection errors, every request at -vv) and never what must stay secret.

use super::faults::proxy::{PFault, Proxy};
use super::{expect, proxy_remote_toml, servers, text, unique};

/// A copy through a proxy that answers some PUTs and a LIST with 503 SlowDown, logged at -vv to
/// a file: the log has the request lines, the throttled answers with their retry number, and no
/// secret, no signature and no query string.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verbose_log_tells_retries_and_requests_and_never_a_secret() {
    let Some(s) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    for i in 0..6 {
        std::fs::write(src.join(format!("f{i}")), vec![b'a' + i as u8; 5_000 + i]).unwrap();
    }
    let proxy = Proxy::start(super::s3_upstream(&s)).await;
    let conf = dir.path().join("remotes.toml");
    std::fs::write(&conf, proxy_remote_toml(&s, &proxy.endpoint())).unwrap();
    let p = unique("ops-log");
    proxy.add("PUT", &p, "", PFault::SlowDown, 3);
    proxy.add("GET", "", "list-type=2", PFault::SlowDown, 1);
    let log = dir.path().join("run.log");
    let mut c = super::moverctl();
    c.args(["copy", "-vv", "--config"])
        .arg(&conf)
        .arg("--log-file")
        .arg(&log)
        .arg(&src)
        .arg(format!("viaproxy:{}/{p}", s.bucket_b))
        .env("MOVERCTL_STATE_DIR", dir.path().join("state"));
    let o = tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap();
    expect(&o, 0);
    let t = std::fs::read_to_string(&log).unwrap();
    assert!(
        t.contains("PUT /") && t.contains("503 (the store asks to slow down); retry 1 in at most"),
        "throttled PUTs are logged with their retry number:\n{t}"
    );
    assert!(
        t.contains("request") && t.contains("status=200"),
        "-vv logs every request:\n{t}"
    );
    assert!(
        t.contains(&format!("viaproxy:{}/{p}", s.bucket_b)),
        "lines name the store:\n{t}"
    );
    for secret in [
        s.secret.as_str(),
        "Signature",
        "X-Amz-",
        "x-amz-signature",
        "?",
    ] {
        assert!(!t.contains(secret), "the log holds {secret:?}:\n{t}");
    }
    // Nothing went to stderr but the summary (the log has its own file).
    assert!(!text(&o).contains("in at most"), "{}", text(&o));
}

/// `-v` on stderr: a connection that cannot be made is said in plain words (what, where,
/// which retry), not as a library error with a URL.
#[test]
fn a_refused_connection_is_logged_in_plain_words() {
    let Some(s) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("remotes.toml");
    // Nothing listens on port 9 of 127.0.0.1.
    std::fs::write(&conf, proxy_remote_toml(&s, "http://127.0.0.1:9")).unwrap();
    let o = super::moverctl()
        .args(["ls", "-v", "--retry-timeout", "1s", "--config"])
        .arg(&conf)
        .arg(format!("viaproxy:{}/x", s.bucket_b))
        // A connection refused after the check (mid-run); the check itself: fast_fail.rs.
        .env("MOVERCTL_SKIP_REACH_CHECK", "1")
        .output()
        .unwrap();
    let t = text(&o);
    assert_ne!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains("cannot connect") && t.contains("127.0.0.1:9") && t.contains("retry 1"),
        "{t}"
    );
    assert!(!t.contains(&s.secret) && !t.contains("X-Amz-"), "{t}");
}

/// A local tree of `n` files of `size` bytes.
fn tree(root: &std::path::Path, n: usize, size: usize) {
    std::fs::create_dir_all(root).unwrap();
    for i in 0..n {
        std::fs::write(
            root.join(format!("f{i:03}")),
            vec![b'a' + (i % 26) as u8; size],
        )
        .unwrap();
    }
}

/// Without a terminal, `--stats 1s` prints a stats line with the totals (from the sizing
/// listing of the local source), the percentage, the objects and an ETA while the run lasts.
#[test]
fn the_stats_line_shows_totals_and_eta_without_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    tree(&dir.path().join("src"), 8, 512 * 1024);
    let o = super::moverctl()
        .args([
            "copy",
            "--stats",
            "1s",
            "--bwlimit",
            "1MiB/s",
            "--transfers",
            "2",
        ])
        .arg(dir.path().join("src"))
        .arg(dir.path().join("dst"))
        .env("MOVERCTL_STATE_DIR", dir.path().join("state"))
        .output()
        .unwrap();
    expect(&o, 0);
    let err = String::from_utf8_lossy(&o.stderr);
    let stats: Vec<&str> = err.lines().filter(|l| l.contains("stats: ")).collect();
    assert!(stats.len() >= 2, "a line a second for ~4 s:\n{err}");
    let last = stats.last().unwrap();
    assert!(
        last.contains("/ 4.00 MiB (")
            && last.contains(" MiB/s, ")
            && last.contains("/ 8 objects")
            && last.contains("ETA "),
        "{last}"
    );
}

/// Under a pseudo-terminal the bar shows done / total bytes, the percentage and done / total
/// objects (bytes count when written, not when read), and Ctrl-C's message is not overdrawn.
#[test]
fn the_bar_shows_totals_under_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    tree(&dir.path().join("src"), 6, 512 * 1024);
    let bin = env!("CARGO_BIN_EXE_moverctl");
    let cmd = format!(
        "{bin} copy --bwlimit 1MiB/s --transfers 2 {} {}",
        dir.path().join("src").display(),
        dir.path().join("dst").display()
    );
    let o = std::process::Command::new("script")
        .args(["-q", "-e", "-c", &cmd, "/dev/null"])
        .env("MOVERCTL_STATE_DIR", dir.path().join("state"))
        .env("TERM", "xterm")
        .env("COLUMNS", "160")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("/ 3.00 MiB") && out.contains("/ 6 objects"),
        "the bar's frames show the totals:\n{out}"
    );
    assert!(
        !out.contains("stats: "),
        "no stats line on a terminal:\n{out}"
    );
}

/// `status` of a copy: the total the run's sizing listing recorded, the percentage, and whether
/// a run holds the pair's lock right now.
#[test]
fn status_shows_totals_percent_and_whether_a_run_is_active() {
    use moverctl::store::Store;
    use moverctl::store::config::Remotes;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let state = root.join("state");
    tree(&root.join("src"), 4, 1000);
    let run = |args: &[&str]| {
        super::moverctl()
            .args(args)
            .env("MOVERCTL_STATE_DIR", &state)
            .output()
            .unwrap()
    };
    let (src, dst) = (root.join("src"), root.join("dst"));
    let (s, d) = (src.display().to_string(), dst.display().to_string());
    expect(&run(&["copy", &s, &d]), 0);
    let status = || {
        let o = run(&["status", "--src", &s, "--dst", &d, "--json"]);
        expect(&o, 0);
        serde_json::from_str::<serde_json::Value>(String::from_utf8_lossy(&o.stdout).trim())
            .unwrap()
    };
    let v = status();
    assert_eq!(v["total"]["objects"], 4, "{v}");
    assert_eq!(v["total"]["bytes"], 4000, "{v}");
    assert_eq!(v["percent"].as_f64(), Some(100.0), "{v}");
    assert_eq!(v["running"], false, "{v}");
    // A run holding the lock of the pair.
    let none = Remotes::parse("none.toml", "").unwrap();
    let id = |p: &str| Store::open(p, &none).unwrap().identity;
    let lock = moverctl::lock::default_path(&id(&s), &id(&d));
    let lock = state.join(lock.file_name().unwrap());
    let (_held, _) = moverctl::lock::RunLock::acquire(&lock, "copy (test)").unwrap();
    let v = status();
    assert_eq!(v["running"], true, "{v}");
    assert!(
        v["run"]
            .as_str()
            .unwrap()
            .contains(&format!("pid {}", std::process::id())),
        "{v}"
    );
}

/// `copy --dry-run` lists each object it would copy with its reason on stdout, changes nothing.
#[test]
fn copy_dry_run_lists_what_it_would_copy() {
    let dir = tempfile::tempdir().unwrap();
    tree(&dir.path().join("src"), 3, 10);
    let o = super::moverctl()
        .args(["copy", "--dry-run"])
        .arg(dir.path().join("src"))
        .arg(dir.path().join("dst"))
        .env("MOVERCTL_STATE_DIR", dir.path().join("state"))
        .output()
        .unwrap();
    expect(&o, 0);
    let out = String::from_utf8_lossy(&o.stdout);
    for k in ["f000", "f001", "f002"] {
        assert!(
            out.contains(&format!("would copy   {k}  (10 B, new)")),
            "{out}"
        );
    }
    assert!(!dir.path().join("dst/f000").exists());
}
