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
