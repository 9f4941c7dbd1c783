//! Run feedback (issue 31): what a run says while it goes. `-v` logs each file copied, skipped
//! or deleted (as rclone's `-v` does) and `-q` stays silent; a missing bucket or container is
//! exit 2 naming it; retries show in the progress line and at `-v`; `copy --dry-run -q` prints
//! only its summary with a cost; the first Ctrl-C stops promptly, the second exits 130 with a
//! message and no stale bar (in a real pty).

use super::{expect, moverctl, remotes_toml, servers, text, unique};
use std::path::{Path, PathBuf};
use std::process::Output;

/// A remotes file for the test servers (when running) and a private state folder.
struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new(s: Option<&super::Servers>) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let base = s.map(remotes_toml).unwrap_or_default();
        std::fs::write(dir.path().join("remotes.toml"), base).unwrap();
        Env { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn cmd(&self) -> std::process::Command {
        let mut c = moverctl();
        c.arg("--config")
            .arg(self.path("remotes.toml"))
            .env("MOVERCTL_STATE_DIR", self.path("state"));
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().unwrap()
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn files(root: &Path, names: &[&str]) {
    for n in names {
        let p = root.join(n);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("bytes of {n}")).unwrap();
    }
}

#[test]
fn verbose_logs_each_file_copied_skipped_and_deleted_and_quiet_stays_silent() {
    let env = Env::new(None);
    let (src, dst) = (env.path("src"), env.path("dst"));
    files(&src, &["a", "d/b", "d/c"]);
    let (s, d) = (src.to_str().unwrap(), dst.to_str().unwrap());
    let o = env.run(&["copy", "-v", s, d]);
    expect(&o, 0);
    for k in ["a", "d/b", "d/c"] {
        assert!(
            stderr(&o).contains(&format!("{k}: copied (")),
            "{}",
            text(&o)
        );
    }
    // Again: each file skipped, and why.
    let o = env.run(&["copy", "-v", s, d]);
    expect(&o, 0);
    assert!(
        stderr(&o).contains("d/b: skipped (verified earlier"),
        "{}",
        text(&o)
    );
    assert!(!stderr(&o).contains(": copied ("), "{}", text(&o));
    // sync --delete: the deleted file is logged.
    std::fs::remove_file(src.join("d/c")).unwrap();
    let o = env.run(&["sync", "-v", s, d, "--delete", "--max-delete", "100%"]);
    expect(&o, 0);
    assert!(stderr(&o).contains("d/c: deleted ("), "{}", text(&o));
    // Without -v: no per-file line; with -q: nothing at all.
    files(&src, &["e"]);
    let o = env.run(&["copy", s, d]);
    expect(&o, 0);
    assert!(!stderr(&o).contains("e: copied"), "{}", text(&o));
    files(&src, &["f"]);
    let o = env.run(&["copy", "-q", s, d]);
    expect(&o, 0);
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{}", text(&o));
    assert!(dst.join("f").exists());
}

#[test]
fn a_missing_bucket_or_container_is_exit_2_naming_it() {
    let Some(s) = servers() else { return };
    let env = Env::new(Some(&s));
    let src = env.path("src");
    files(&src, &["a"]);
    let local = src.to_str().unwrap();
    let out = env.path("out");
    let out_s = out.to_str().unwrap();
    let plan = plan(&env);
    let p = unique("nobucket");
    for (loc, name, code) in [
        (
            format!("garage:no-such-bucket-{p}/x"),
            "bucket",
            "NoSuchBucket",
        ),
        (
            format!("azurite:no-such-container-{p}/x"),
            "container",
            "ContainerNotFound",
        ),
        // fake-gcs-server answers a listing of a missing bucket with a 500 (real GCS: 404
        // NoSuchBucket), so the bucket check before the first request is what tells.
        (
            format!("fakegcs:no-such-gcs-{p}/x"),
            "bucket",
            "404 on the bucket",
        ),
    ] {
        let missing = loc.split(['/', ':']).nth(1).unwrap().to_string();
        let runs: Vec<Vec<&str>> = vec![
            vec!["ls", &loc],
            vec!["copy", &loc, out_s],
            vec!["copy", local, &loc],
            vec!["sync", local, &loc],
            vec!["sync", &loc, out_s, "--json"],
            vec!["exec", &plan, "--src", &loc, "--dst", out_s],
            vec!["exec", &plan, "--src", local, "--dst", &loc],
        ];
        for args in runs {
            let o = env.run(&args);
            expect(&o, 2);
            let e = stderr(&o);
            assert!(
                e.contains(&format!("the {name} \"{missing}\" does not exist ({code})")),
                "{args:?}: {}",
                text(&o)
            );
            // (sync makes its local destination folder before listing; nothing goes in it.)
            let made = std::fs::read_dir(&out).map(|d| d.count()).unwrap_or(0);
            assert_eq!(made, 0, "{args:?} wrote to the destination");
        }
    }
}

/// A plan file for `exec` (locations come from --src/--dst).
fn plan(env: &Env) -> String {
    let plans = env.path("plans");
    let o = moverctl()
        .args([
            "plan", "--from", "onprem", "--to", "onprem", "--bytes", "1000",
        ])
        .args(["--objects", "2", "--save", "p", "--plans-dir"])
        .arg(&plans)
        .output()
        .unwrap();
    expect(&o, 0);
    plans.join("p.toml").display().to_string()
}

/// A command run in a real pseudo-terminal (util-linux `script`), its terminal output collected
/// as it comes, and Ctrl-C typed into it (the terminal sends SIGINT, as a person's would).
struct Pty {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    out: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl Pty {
    /// None when `script` is not installed.
    fn spawn(shell: &str, env: &[(&str, &str)]) -> Option<Pty> {
        use std::io::Read;
        let mut c = std::process::Command::new("script");
        c.args(["-qfec", shell, "/dev/null"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        for (k, v) in env {
            c.env(k, v);
        }
        let mut child = c.spawn().ok()?;
        let stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let out = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = out.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Some(Pty { child, stdin, out })
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().unwrap()).into_owned()
    }

    /// Waits (up to `limit`) until the output holds `what`; false when it never did.
    fn wait_for(&self, what: &str, limit: std::time::Duration) -> bool {
        let t = std::time::Instant::now();
        while t.elapsed() < limit {
            if self.text().contains(what) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        false
    }

    fn ctrl_c(&mut self) {
        use std::io::Write;
        self.stdin.write_all(b"\x03").unwrap();
        self.stdin.flush().unwrap();
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The end of a terminal's output, for assertion messages (a bar redraws many times).
fn tail(out: &str) -> &str {
    let mut at = out.len().saturating_sub(3000);
    while !out.is_char_boundary(at) {
        at += 1;
    }
    &out[at..]
}

/// Four small files and two of 40 MiB (8 parts of 5 MiB each) in `src`; the copy's command line
/// into `dst` at 4 MiB/s, so that the large ones are in flight for about 20 s. The shell traps
/// SIGINT so that it outlives the Ctrl-C and prints the exit status (`script` runs `$SHELL -c`;
/// dash, unlike bash, dies of the terminal's SIGINT while waiting for its child).
fn large_copy(env: &Env, src: &Path, dst: &str, journal: &Path) -> String {
    for i in 0..4 {
        let k = format!("s{i}");
        std::fs::create_dir_all(src).unwrap();
        std::fs::write(src.join(&k), super::faults::data(&k, 10_000)).unwrap();
    }
    for k in ["b0", "b1"] {
        std::fs::write(src.join(k), super::faults::data(k, 40 << 20)).unwrap();
    }
    format!(
        "trap : INT; stty cols 160 rows 40; {} --config {} copy {} {dst} --journal {} --bwlimit 4MiB/s \
         --part-size 5MiB --multipart-threshold 5MiB --transfers 4; echo EXIT=$?",
        env!("CARGO_BIN_EXE_moverctl"),
        env.path("remotes.toml").display(),
        src.display(),
        journal.display()
    )
}

/// `shell` started in a pty with the run's state folder, a terminal type and `extra` variables;
/// None (the test is skipped, and says so) where `script` is not installed.
fn pty_running(env: &Env, shell: &str, extra: &[(&str, &str)]) -> Option<Pty> {
    let state = env.path("state").display().to_string();
    let mut vars = vec![("MOVERCTL_STATE_DIR", state.as_str()), ("TERM", "xterm")];
    vars.extend_from_slice(extra);
    let pty = Pty::spawn(shell, &vars);
    if pty.is_none() {
        eprintln!("skipped: no `script` (util-linux) to run a pty");
    }
    pty
}

#[test]
fn the_first_ctrl_c_stops_at_once_journals_what_is_done_and_the_rerun_resumes() {
    use std::time::{Duration, Instant};
    let Some(s) = servers() else { return };
    let env = Env::new(Some(&s));
    let src = env.path("src");
    let dst = format!("garage:{}/{}", s.bucket_b, unique("ctrl-c"));
    let journal = env.path("j.sqlite");
    let shell = large_copy(&env, &src, &dst, &journal);
    let Some(mut pty) = pty_running(&env, &shell, &[]) else {
        return;
    };
    // The large objects' bars are up; a part of each has been uploaded (2 MiB/s each).
    assert!(
        pty.wait_for(" b1 ", Duration::from_secs(60)),
        "{}",
        tail(&pty.text())
    );
    std::thread::sleep(Duration::from_millis(3500));
    pty.ctrl_c();
    let t = Instant::now();
    assert!(
        pty.wait_for("EXIT=", Duration::from_secs(60)),
        "{}",
        tail(&pty.text())
    );
    let took = t.elapsed();
    let out = pty.text();
    eprintln!("first Ctrl-C to exit: {took:?}");
    assert!(
        took < Duration::from_secs(5),
        "{took:?} to stop: {}",
        tail(&out)
    );
    assert!(out.contains("EXIT=130"), "{}", tail(&out));
    let stop_line = out
        .split("moverctl: stopping: ")
        .nth(1)
        .unwrap_or_else(|| panic!("no stopping line: {}", tail(&out)));
    assert!(
        stop_line.contains("transfers in flight abandoned")
            && stop_line.contains("completed objects are journaled")
            && stop_line.contains("run the same command again to resume; Ctrl-C again to quit now"),
        "{}",
        tail(&out)
    );
    assert!(
        out.contains("objects in flight abandoned"),
        "{}",
        tail(&out)
    );
    // Nothing of the large ones at the destination (only small ones finished).
    let rt = tokio::runtime::Runtime::new().unwrap();
    let d = moverctl::store::Store::open(&dst, &super::remotes(&s)).unwrap();
    let there = rt.block_on(super::keys_at(&d));
    assert!(
        !there.is_empty() && there.iter().all(|k| k.starts_with('s')),
        "{there:?}: {}",
        tail(&out)
    );
    // The rerun skips what the journal holds as verified (never an abandoned one) and continues
    // the abandoned uploads from their journaled parts.
    let o = env.run(&[
        "copy",
        src.to_str().unwrap(),
        &dst,
        "--journal",
        journal.to_str().unwrap(),
        "--part-size",
        "5MiB",
        "--multipart-threshold",
        "5MiB",
        "--json",
    ]);
    expect(&o, 0);
    let v = super::summary(&o);
    assert_eq!(v["skipped"]["objects"], there.len(), "{v}");
    assert_eq!(v["copied"]["objects"], 6 - there.len(), "{v}");
    assert!(v["resumed_parts"].as_u64().unwrap() >= 2, "{v}");
    let l = moverctl::store::Store::open(src.to_str().unwrap(), &super::remotes(&s)).unwrap();
    rt.block_on(super::copy::assert_same(&l, &d));
}

#[test]
fn a_second_ctrl_c_quits_with_130_a_message_and_no_bar_left() {
    use std::time::Duration;
    let Some(s) = servers() else { return };
    let env = Env::new(Some(&s));
    let src = env.path("src");
    let dst = format!("garage:{}/{}", s.bucket_b, unique("ctrl-c-twice"));
    let shell = large_copy(&env, &src, &dst, &env.path("j.sqlite"));
    // The first stop is held for a while (a test hook), as a slow stop would be.
    let Some(mut pty) = pty_running(&env, &shell, &[("MOVERCTL_TEST_STOP_DELAY_MS", "60000")])
    else {
        return;
    };
    assert!(
        pty.wait_for(" b1 ", Duration::from_secs(60)),
        "{}",
        tail(&pty.text())
    );
    pty.ctrl_c();
    assert!(
        pty.wait_for("moverctl: stopping:", Duration::from_secs(10)),
        "{}",
        tail(&pty.text())
    );
    // The bar is drawn again below the note.
    std::thread::sleep(Duration::from_millis(600));
    pty.ctrl_c();
    assert!(
        pty.wait_for("EXIT=", Duration::from_secs(5)),
        "{}",
        tail(&pty.text())
    );
    let out = pty.text();
    assert!(out.contains("EXIT=130"), "{}", tail(&out));
    let msg = "moverctl: interrupted again: quitting now (exit 130)";
    let at = out
        .rfind(msg)
        .unwrap_or_else(|| panic!("no message: {}", tail(&out)));
    // The bar was cleared right before the message (erase-line sequences) and never drawn
    // again: after it there is only the shell's EXIT line.
    let before = &out[at.saturating_sub(60)..at];
    assert!(before.contains("\x1b[2K"), "{before:?}");
    let after = &out[at + msg.len()..];
    let after_line = &after[after.find('\n').unwrap() + 1..];
    assert_eq!(after_line.trim(), "EXIT=130", "{after:?}");
}

#[test]
fn a_quiet_dry_run_prints_one_summary_line_with_the_cost() {
    let env = Env::new(None);
    let (src, dst) = (env.path("src"), env.path("dst"));
    files(&src, &["a", "d/b", "d/c"]);
    let (s, d) = (src.to_str().unwrap(), dst.to_str().unwrap());
    let o = env.run(&["copy", "--dry-run", "-q", s, d]);
    expect(&o, 0);
    // No line per object; one summary line with the estimate.
    assert!(o.stdout.is_empty(), "{}", text(&o));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.starts_with(&format!("copy {s} -> {d}")) && e.contains("(dry run): would copy 3 ("),
        "{e}"
    );
    assert!(e.contains("; est. cost $0 (egress $0"), "{e}");
    // Without -q: the lines per object and the summary, with the estimate.
    let o = env.run(&["copy", "--dry-run", s, d]);
    expect(&o, 0);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 3);
    assert!(stderr(&o).contains("est. cost $0 ("), "{}", text(&o));
    // sync --dry-run -q: the summary line only, on stderr.
    let o = env.run(&["sync", "--dry-run", "-q", s, d]);
    expect(&o, 0);
    assert!(o.stdout.is_empty(), "{}", text(&o));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("(dry run): would copy 3 ("), "{e}");
    // No dry run above left the destination folder it would have created (nor its parents), a
    // failed run neither; a real run makes it.
    assert!(!dst.exists(), "a dry run created {}", dst.display());
    let deep = env.path("new/a/b");
    let o = env.run(&["copy", "--dry-run", s, deep.to_str().unwrap()]);
    expect(&o, 0);
    assert!(!env.path("new").exists(), "a dry run created folders");
    let o = env.run(&["copy", env.path("nowhere").to_str().unwrap(), d]);
    expect(&o, 2);
    assert!(!dst.exists(), "a failed run created {}", dst.display());
    let o = env.run(&["copy", "-q", s, d]);
    expect(&o, 0);
    assert!(dst.join("d/b").is_file());
}

/// The estimate is what the run then costs: a dry run of a copy into an S3 priced as AWS says
/// what sync's real run of the same pair is priced at (a LIST and one PUT per object).
#[test]
fn a_dry_runs_estimate_is_what_the_run_costs() {
    let Some(s) = servers() else { return };
    let env = Env::new(Some(&s));
    let aws = format!(
        "{}\n[remotes.awsgarage]\ntype = \"s3\"\nprovider = \"aws\"\nendpoint = \"{}\"\n\
         region = \"{}\"\naccess_key_id_env = \"MOVERCTL_TEST_S3_KEY_ID\"\n\
         secret_access_key_env = \"MOVERCTL_TEST_S3_SECRET\"\n",
        remotes_toml(&s),
        s.s3_endpoint,
        s.region
    );
    std::fs::write(env.path("remotes.toml"), aws).unwrap();
    let src = env.path("src");
    files(&src, &["a", "d/b", "d/c"]);
    let dst = format!("awsgarage:{}/{}", s.bucket_b, unique("dry-cost"));
    let local = src.to_str().unwrap();
    let o = env.run(&["copy", "--dry-run", "--json", local, &dst]);
    expect(&o, 0);
    let dry = super::summary(&o)["cost"].clone();
    assert!(dry["destination_requests"].as_f64().unwrap() > 0.0, "{dry}");
    assert_eq!(dry["priced_as"]["destination"], "aws:us-east-1/standard");
    let o = env.run(&["sync", "--json", local, &dst]);
    expect(&o, 0);
    let real = super::summary(&o)["cost"].clone();
    assert_eq!(dry["total"], real["total"], "dry {dry} vs real {real}");
}

/// Faults injected between moverctl and Garage (the fault proxy): two throttled PUTs (retried
/// by the request policy) and a PUT whose body is flipped on the way (Garage refuses it; the
/// object is copied again). Each retry is logged at -v (what, why, which retry, the next wait)
/// and counted in the stats line, in its JSON form, and in the summary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_show_at_v_in_the_stats_line_and_in_json() {
    use super::faults::proxy::{PFault, Proxy};
    let Some(s) = servers() else { return };
    let env = Env::new(None);
    let proxy = Proxy::start(super::s3_upstream(&s)).await;
    std::fs::write(
        env.path("remotes.toml"),
        super::proxy_remote_toml(&s, &proxy.endpoint()),
    )
    .unwrap();
    let src = env.path("src");
    std::fs::create_dir_all(&src).unwrap();
    for k in ["f0", "f1", "f2"] {
        std::fs::write(src.join(k), super::faults::data(k, 600_000)).unwrap();
    }
    let p = unique("retries");
    let run = |fmt: &'static str| {
        proxy.clear();
        proxy
            .add("PUT", &format!("{p}-{fmt}/f0"), "", PFault::SlowDown, 2)
            .add("PUT", &format!("{p}-{fmt}/f1"), "", PFault::FlipRequest, 1);
        let mut c = env.cmd();
        c.args(["copy", "-v", "--stats", "200ms", "--bwlimit", "1MiB/s"])
            .args(["--log-format", fmt, "--json"])
            .arg(&src)
            .arg(format!("viaproxy:{}/{p}-{fmt}", s.bucket_b));
        c
    };
    let mut c = run("text");
    let o = tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap();
    expect(&o, 0);
    let e = stderr(&o);
    // The request retries: which request and store, why, which retry, the longest next wait.
    assert!(
        e.contains(&format!("/f0 (viaproxy:{}/{p}-text/): 503 (the store asks to slow down); retry 1 in at most 0.1 s (retrying for", s.bucket_b))
            && e.contains("503 (the store asks to slow down); retry 2 in at most 0.2 s"),
        "{}",
        text(&o)
    );
    // The object copied again: attempt n of m, why, and the wait.
    assert!(
        e.contains("f1: attempt 1 of 4 failed: ") && e.contains("; copying it again in 0.2 s"),
        "{}",
        text(&o)
    );
    // The stats line counts them.
    assert!(
        e.contains("stats: ") && e.contains(" failed, 3 retries"),
        "{}",
        text(&o)
    );
    let v = super::summary(&o);
    assert_eq!(v["retries"], 1, "{v}");
    assert_eq!(v["request_retries"], 2, "{v}");
    // The same in JSON log lines: the stats event carries the count as a field.
    let mut c = run("json");
    let o = tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap();
    expect(&o, 0);
    let last_stats = stderr(&o)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .rfind(|v| v["target"] == "moverctl::stats")
        .unwrap_or_else(|| panic!("no JSON stats line: {}", text(&o)));
    assert_eq!(last_stats["fields"]["retries"], 3, "{last_stats}");
}
