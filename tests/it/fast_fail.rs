//! Fast, honest failures for a newcomer (issue 31), through the binary: an endpoint nothing
//! listens on fails in seconds with its address (exit 2) instead of minutes of retries; a source
//! that lists no object is exit 11 with the nearest names, creating nothing (unless
//! `--allow-empty-source`); a `*` in a cloud location is refused with the `--include` to use.

use super::faults::seed;
use super::{expect, remotes_toml, servers, text, unique};
use moverctl::store::Store;
use std::process::Output;
use std::time::{Duration, Instant};

/// A remotes file (the test servers' remotes when running, plus `dead`: an S3 endpoint on a
/// port nothing listens on), a private state folder and a scratch folder.
struct Env {
    dir: tempfile::TempDir,
    port: u16,
}

impl Env {
    fn new(garage: Option<&super::Servers>) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dead = format!(
            "[remotes.dead]\ntype = \"s3\"\nendpoint = \"http://127.0.0.1:{port}\"\n\
             region = \"garage\"\naccess_key_id_env = \"FF_KEY\"\nsecret_access_key_env = \"FF_SECRET\"\n"
        );
        let base = garage.map(remotes_toml).unwrap_or_default();
        std::fs::write(dir.path().join("remotes.toml"), format!("{base}\n{dead}")).unwrap();
        std::fs::create_dir(dir.path().join("state")).unwrap();
        Env { dir, port }
    }

    fn out(&self, rel: &str) -> std::path::PathBuf {
        self.dir.path().join(rel)
    }

    /// Runs with a retry window of 30 s: without the check, a dead endpoint would take that long.
    fn run(&self, args: &[&str]) -> (Output, Duration) {
        let t = Instant::now();
        let o = super::moverctl()
            .arg("--config")
            .arg(self.dir.path().join("remotes.toml"))
            .args(["--retry-timeout", "30s"])
            .args(args)
            .env("MOVERCTL_STATE_DIR", self.dir.path().join("state"))
            .env("FF_KEY", "GKffffffffffffffffffffffff")
            .env("FF_SECRET", "not-a-secret")
            .env_remove("AWS_ENDPOINT_URL")
            .env_remove("MOVERCTL_SKIP_REACH_CHECK")
            .env_remove("AWS_ENDPOINT_URL_S3")
            .env_remove("HTTP_PROXY")
            .env_remove("http_proxy")
            .env_remove("ALL_PROXY")
            .env_remove("all_proxy")
            .output()
            .unwrap();
        (o, t.elapsed())
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

#[test]
fn a_refused_endpoint_fails_in_seconds_naming_the_address() {
    let env = Env::new(None);
    let addr = format!("connection refused at 127.0.0.1:{}", env.port);
    let local = env.out("src");
    std::fs::create_dir(&local).unwrap();
    std::fs::write(local.join("a"), b"a").unwrap();
    let dst = env.out("dst");
    for args in [
        vec!["ls".to_string(), "dead:bucket/p".into()],
        vec![
            "copy".into(),
            "dead:bucket/p".into(),
            dst.display().to_string(),
        ],
        vec![
            "copy".into(),
            local.display().to_string(),
            "dead:bucket/p".into(),
        ],
        vec![
            "sync".into(),
            "dead:bucket/p".into(),
            dst.display().to_string(),
        ],
        [
            "plan",
            "--from",
            "onprem",
            "--to",
            "aws",
            "--src",
            "dead:bucket/p",
        ]
        .map(String::from)
        .to_vec(),
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (o, took) = env.run(&args);
        expect(&o, 2);
        assert!(stderr(&o).contains(&addr), "{args:?}: {}", text(&o));
        assert!(
            stderr(&o).contains("is the endpoint right?"),
            "{}",
            text(&o)
        );
        assert!(took < Duration::from_secs(15), "{args:?} took {took:?}");
        assert!(
            !dst.exists(),
            "{args:?}: the destination folder was created"
        );
    }
}

#[tokio::test]
async fn an_empty_or_globbed_source_is_refused_and_creates_nothing() {
    let Some(s) = servers() else { return };
    let env = Env::new(Some(&s));
    let p = unique("fast-fail");
    let direct = Store::open(&format!("garage:{}/{p}", s.bucket_a), &super::remotes(&s)).unwrap();
    seed(
        &direct,
        &[
            ("v1/shards/part-00", 10),
            ("v1/shards/part-01", 20),
            ("v1/other", 5),
        ],
    )
    .await;
    let src = |rest: &str| format!("garage:{}/{p}/{rest}", s.bucket_a);
    let out = env.out("out");
    let out_s = out.display().to_string();

    // A typo'd prefix: exit 11, the neighbours named, nothing created.
    let (o, _) = env.run(&["copy", &src("v1/shard"), &out_s]);
    expect(&o, 11);
    let e = stderr(&o);
    assert!(e.contains("listed no objects"), "{}", text(&o));
    assert!(
        e.contains("shards/") && e.contains("--allow-empty-source"),
        "{e}"
    );
    assert!(!out.exists(), "the destination folder was created");
    // exec of a plan pointed at it: the same.
    let plan = plan(&env);
    let (o, _) = env.run(&["exec", &plan, "--src", &src("v1/shard"), "--dst", &out_s]);
    expect(&o, 11);
    assert!(!out.exists());
    // Meant: exit 0.
    let (o, _) = env.run(&["copy", &src("v1/shard"), &out_s, "--allow-empty-source"]);
    expect(&o, 0);
    let _ = std::fs::remove_dir_all(&out);

    // A glob: refused before listing, with the filter to use.
    for cmd in [vec!["copy", "SRC", out_s.as_str()], vec!["ls", "SRC"]] {
        let glob = src("v1/shards/part-0*");
        let args: Vec<&str> = cmd
            .iter()
            .map(|a| if *a == "SRC" { glob.as_str() } else { a })
            .collect();
        let (o, _) = env.run(&args);
        expect(&o, 2);
        assert!(
            stderr(&o).contains("--include 'part-0*'") && stderr(&o).contains(&src("v1/shards/")),
            "{}",
            text(&o)
        );
        assert!(!out.exists());
    }
    // What the glob meant, the way the message says; a normal run is unaffected by the checks.
    let (o, _) = env.run(&["copy", &src("v1/shards/"), &out_s, "--include", "part-0*"]);
    expect(&o, 0);
    assert!(
        out.join("part-00").exists() && out.join("part-01").exists(),
        "{}",
        text(&o)
    );
}

/// A plan file for `exec` (locations come from --src/--dst).
fn plan(env: &Env) -> String {
    let plans = env.out("plans");
    let o = super::moverctl()
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
