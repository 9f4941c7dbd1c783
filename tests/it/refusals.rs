//! Refusing before damage (issue 11), through the binary, against Garage and local folders:
//! overlapping source and destination (`copy`, `exec`, `sync`), a local source that is missing or
//! is a file, a `sync --delete` whose source lists nothing, special files in a local source, and
//! endpoint URLs carrying a password. Every test here fails on the main of 2026-12-01, which
//! deleted, nested, created or printed what these tests show untouched; each says how.

use super::faults::seed;
use super::{Servers, expect, remotes_toml, servers, summary, text, unique};
use moverctl::store::Store;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A remotes file (the test servers' remotes, plus `galias`: the first Garage written another
/// way, with a trailing '/'), a private state folder, and a scratch folder for local trees.
struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new(s: Option<&Servers>, extra: &str) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let base = match s {
            Some(s) => format!(
                "{}\n[remotes.galias]\ntype = \"s3\"\nendpoint = \"{}/\"\nregion = \"{}\"\n\
                 access_key_id_env = \"MOVERCTL_TEST_S3_KEY_ID\"\n\
                 secret_access_key_env = \"MOVERCTL_TEST_S3_SECRET\"\n",
                remotes_toml(s),
                s.s3_endpoint,
                s.region
            ),
            None => String::new(),
        };
        std::fs::write(dir.path().join("remotes.toml"), format!("{base}\n{extra}")).unwrap();
        std::fs::create_dir(dir.path().join("state")).unwrap();
        std::fs::create_dir(dir.path().join("t")).unwrap();
        Env { dir }
    }

    /// A path under the scratch folder (canonical, so messages can be matched).
    fn at(&self, rel: &str) -> PathBuf {
        self.dir.path().canonicalize().unwrap().join("t").join(rel)
    }

    fn s(&self, rel: &str) -> String {
        self.at(rel).display().to_string()
    }

    fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = super::moverctl();
        c.arg("--config")
            .arg(self.dir.path().join("remotes.toml"))
            .args(["--retry-timeout", "5s"])
            .args(args)
            .env("MOVERCTL_STATE_DIR", self.dir.path().join("state"))
            .env_remove("AWS_ENDPOINT_URL")
            .env_remove("AWS_ENDPOINT_URL_S3");
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, &[])
    }

    /// A plan file for `exec` (locations come from --src/--dst).
    fn plan(&self) -> String {
        let plans = self.dir.path().join("plans");
        let o = super::moverctl()
            .args(["plan", "--from", "onprem", "--to", "onprem"])
            .args([
                "--bytes",
                "1000",
                "--objects",
                "2",
                "--save",
                "p",
                "--plans-dir",
            ])
            .arg(&plans)
            .output()
            .unwrap();
        expect(&o, 0);
        plans.join("p.toml").display().to_string()
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// Every file under `root`, relative, sorted (folders not listed).
fn tree(root: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(base, &p, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

fn write(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
}

async fn keys(store: &Store) -> Vec<String> {
    super::keys_at(store).await
}

/// A local tree `a/` with two files and a sub-folder, and `a-link` pointing at it.
fn local_tree(env: &Env) {
    write(&env.at("a/one"), "1");
    write(&env.at("a/sub/two"), "22");
    #[cfg(unix)]
    std::os::unix::fs::symlink(env.at("a"), env.at("a-link")).unwrap();
}

/// On the main of 2026-12-01 `sync s3://b/par/child s3://b/par --delete --max-delete 100%`
/// deleted the source's objects (exit 0), and `sync a a/mirror` nested a copy inside the source.
#[tokio::test]
async fn sync_refuses_overlapping_locations() {
    let env = Env::new(servers().as_ref(), "");
    local_tree(&env);
    let before = tree(&env.at("a"));
    for (src, dst) in [
        (env.s("a"), env.s("a/mirror")),
        (env.s("a/sub"), env.s("a")),
        (env.s("a"), env.s("a/sub/..")),
        (env.s("a-link"), env.s("a/mirror")),
        (format!("file://{}", env.s("a")), env.s("a-link/sub")),
    ] {
        let o = env.run(&["sync", &src, &dst, "--delete", "--max-delete", "100%"]);
        expect(&o, 2);
        let shown = src.trim_start_matches("file://");
        assert!(
            stderr(&o).contains(shown) && stderr(&o).contains(&dst),
            "{}",
            text(&o)
        );
        assert_eq!(
            tree(&env.at("a")),
            before,
            "nothing changed, nothing created"
        );
    }
    // A sibling that shares a string prefix is no overlap.
    expect(
        &env.run(&["sync", &env.s("a"), &env.s("ab"), "--dry-run"]),
        0,
    );

    let Some(s) = servers() else { return };
    let p = unique("refuse-sync");
    let r = super::remotes(&s);
    let direct = Store::open(&format!("garage:{}/{p}", s.bucket_a), &r).unwrap();
    seed(
        &direct,
        &[("par/child/a", 10), ("par/child/b", 20), ("par/keep", 30)],
    )
    .await;
    let all = keys(&direct).await;
    let (par, child) = (
        format!("garage:{}/{p}/par", s.bucket_a),
        format!("galias:{}/{p}/par/child", s.bucket_a),
    );
    for (src, dst) in [(&child, &par), (&par, &child), (&par, &par)] {
        let o = env.run(&["sync", src, dst, "--delete", "--max-delete", "100%"]);
        expect(&o, 2);
        assert!(
            stderr(&o).contains(&format!("{src}/")) && stderr(&o).contains(&format!("{dst}/")),
            "{}",
            text(&o)
        );
        assert_eq!(keys(&direct).await, all, "nothing deleted or copied");
    }
    // s3:// through AWS_ENDPOINT_URL is the same store as the remote naming that endpoint.
    let o = env.run_with(
        &[
            "sync",
            &format!("s3://{}/{p}/par/child", s.bucket_a),
            &par,
            "--delete",
        ],
        &[("AWS_ENDPOINT_URL", &s.s3_endpoint)],
    );
    expect(&o, 2);
    // Other bucket, other endpoint, sibling prefix: not refused.
    let parent = format!("galias:{}/{p}/parent", s.bucket_a);
    expect(&env.run(&["sync", &par, &parent, "--dry-run"]), 0);
    let other = format!("garage2:{}/{p}/par", s.bucket_c);
    expect(&env.run(&["sync", &par, &other, "--dry-run"]), 0);
    assert_eq!(keys(&direct).await, all);
}

/// On the main of 2026-12-02 a remote for the same Garage spelled `http://[::ffff:127.0.0.1]:PORT`
/// or `http://localhost:PORT` was another service: `sync SRC=par/child DST=par --delete
/// --max-delete 100%` deleted the source's objects (exit 0).
#[tokio::test]
async fn overlap_spelled_differently_is_refused() {
    let Some(s) = servers() else { return };
    let port = url::Url::parse(&s.s3_endpoint).unwrap().port().unwrap();
    let remote = |name: &str, endpoint: String| {
        format!(
            "[remotes.{name}]\ntype = \"s3\"\nendpoint = \"{endpoint}\"\nregion = \"{}\"\n\
             access_key_id_env = \"MOVERCTL_TEST_S3_KEY_ID\"\n\
             secret_access_key_env = \"MOVERCTL_TEST_S3_SECRET\"\n",
            s.region
        )
    };
    let extra = format!(
        "{}{}",
        remote("gmapped", format!("http://[::ffff:127.0.0.1]:{port}")),
        remote("glocal", format!("http://LOCALHOST.:{port}/"))
    );
    let env = Env::new(Some(&s), &extra);
    let p = unique("refuse-spelled");
    let direct = Store::open(&format!("garage:{}/{p}", s.bucket_a), &super::remotes(&s)).unwrap();
    seed(
        &direct,
        &[("par/child/a", 10), ("par/child/b", 20), ("par/keep", 30)],
    )
    .await;
    let all = keys(&direct).await;
    for (src, dst) in [
        ("gmapped", "garage"),
        ("glocal", "garage"),
        ("garage", "gmapped"),
        ("gmapped", "glocal"),
    ] {
        let (src, dst) = (
            format!("{src}:{}/{p}/par/child", s.bucket_a),
            format!("{dst}:{}/{p}/par", s.bucket_a),
        );
        let o = env.run(&["sync", &src, &dst, "--delete", "--max-delete", "100%"]);
        expect(&o, 2);
        assert!(stderr(&o).contains("is inside destination"), "{}", text(&o));
        assert_eq!(keys(&direct).await, all, "nothing deleted or copied");
    }
    // The spelling reaches the server: a sibling prefix through it is no overlap.
    let o = env.run(&[
        "sync",
        &format!("gmapped:{}/{p}/par/child", s.bucket_a),
        &format!("garage:{}/{p}/other", s.bucket_a),
        "--dry-run",
    ]);
    expect(&o, 0);
}

/// On the main of 2026-12-01 `copy a a/mirror` copied the source into itself (exit 0), one level
/// deeper on every run.
#[tokio::test]
async fn copy_refuses_overlapping_locations() {
    let env = Env::new(servers().as_ref(), "");
    local_tree(&env);
    let before = tree(&env.at("a"));
    for (src, dst) in [
        (env.s("a"), env.s("a/mirror")),
        (env.s("a/sub"), env.s("a-link")),
        (env.s("a"), env.s("a")),
    ] {
        let o = env.run(&["copy", &src, &dst]);
        expect(&o, 2);
        assert!(stderr(&o).contains(&dst), "{}", text(&o));
        assert_eq!(tree(&env.at("a")), before);
    }

    let Some(s) = servers() else { return };
    let p = unique("refuse-copy");
    let direct = Store::open(&format!("garage:{}/{p}", s.bucket_a), &super::remotes(&s)).unwrap();
    seed(&direct, &[("x", 10), ("y/z", 20)]).await;
    let all = keys(&direct).await;
    let o = env.run(&[
        "copy",
        &format!("garage:{}/{p}", s.bucket_a),
        &format!("galias:{}/{p}/mirror", s.bucket_a),
    ]);
    expect(&o, 2);
    assert_eq!(keys(&direct).await, all, "no copy nested in the source");
}

/// On the main of 2026-12-01 `exec PLAN --src a --dst a/mirror` copied the source into itself.
#[tokio::test]
async fn exec_refuses_overlapping_locations() {
    let env = Env::new(servers().as_ref(), "");
    local_tree(&env);
    let before = tree(&env.at("a"));
    let plan = env.plan();
    let o = env.run(&[
        "exec",
        &plan,
        "--src",
        &env.s("a"),
        "--dst",
        &env.s("a/mirror"),
    ]);
    expect(&o, 2);
    assert!(
        stderr(&o).contains(&env.s("a/mirror")) && stderr(&o).contains("inside"),
        "{}",
        text(&o)
    );
    assert_eq!(tree(&env.at("a")), before);

    let Some(s) = servers() else { return };
    let p = unique("refuse-exec");
    let direct = Store::open(&format!("garage:{}/{p}", s.bucket_a), &super::remotes(&s)).unwrap();
    seed(&direct, &[("x", 10)]).await;
    let o = env.run(&[
        "exec",
        &plan,
        "--src",
        &format!("galias:{}/{p}/sub", s.bucket_a),
        "--dst",
        &format!("garage:{}/{p}", s.bucket_a),
    ]);
    expect(&o, 2);
    assert_eq!(keys(&direct).await, ["x"]);
}

/// On the main of 2026-12-01 a missing local source was created and read as empty: `sync
/// missing mirror --delete --max-delete 100%` deleted the whole mirror (exit 0), and `ls`
/// created the folder. A file given as the source failed with exit 1 ("cannot create the
/// folder").
#[tokio::test]
async fn a_missing_local_source_is_refused_and_never_created() {
    let env = Env::new(servers().as_ref(), "");
    write(&env.at("mirror/one"), "1");
    write(&env.at("mirror/sub/two"), "22");
    write(&env.at("file"), "just a file");
    let missing = env.s("missing");
    let plan = env.plan();
    for args in [
        vec!["ls", &missing],
        vec!["copy", &missing, &env.s("out")],
        vec!["exec", &plan, "--src", &missing, "--dst", &env.s("out")],
        vec![
            "sync",
            &missing,
            &env.s("mirror"),
            "--delete",
            "--max-delete",
            "100%",
        ],
    ] {
        let o = env.run(&args);
        expect(&o, 2);
        assert!(
            stderr(&o).contains(&missing) && stderr(&o).contains("no such folder"),
            "{}",
            text(&o)
        );
        assert!(!env.at("missing").exists(), "{args:?} created the source");
        assert!(!env.at("out").exists(), "{args:?} created the destination");
    }
    assert_eq!(tree(&env.at("mirror")), ["one", "sub/two"]);
    // A regular file is not an empty folder.
    for args in [
        vec!["ls".to_string(), env.s("file")],
        vec![
            "sync".into(),
            env.s("file"),
            env.s("mirror"),
            "--delete".into(),
        ],
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = env.run(&args);
        expect(&o, 2);
        assert!(stderr(&o).contains("not a folder"), "{}", text(&o));
    }
    assert_eq!(tree(&env.at("mirror")), ["one", "sub/two"]);
    // A local destination is still created.
    expect(&env.run(&["copy", &env.s("mirror"), &env.s("new/copy")]), 0);
    assert_eq!(tree(&env.at("new/copy")), ["one", "sub/two"]);

    let Some(s) = servers() else { return };
    let p = unique("refuse-missing");
    let dst = Store::open(&format!("garage:{}/{p}", s.bucket_b), &super::remotes(&s)).unwrap();
    seed(&dst, &[("a", 1), ("b", 2)]).await;
    let o = env.run(&[
        "sync",
        &missing,
        &format!("garage:{}/{p}", s.bucket_b),
        "--delete",
        "--max-delete",
        "100%",
    ]);
    expect(&o, 2);
    assert_eq!(keys(&dst).await, ["a", "b"]);
}

/// An unmounted mount point is an existing empty folder. On the main of 2026-12-01 `sync vol
/// mirror --delete --max-delete 100%` then deleted the whole mirror, exit 0.
#[tokio::test]
async fn an_empty_source_deletes_nothing_without_allow_empty_source() {
    let env = Env::new(servers().as_ref(), "");
    std::fs::create_dir_all(env.at("vol")).unwrap();
    write(&env.at("mirror/one"), "1");
    write(&env.at("mirror/two"), "22");
    let (vol, mirror) = (env.s("vol"), env.s("mirror"));
    let o = env.run(&["sync", &vol, &mirror, "--delete", "--max-delete", "100%"]);
    expect(&o, 5);
    let line = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(line.lines().count(), 1, "{}", text(&o));
    assert!(
        line.contains("source listed no objects") && line.contains("--allow-empty-source"),
        "{}",
        text(&o)
    );
    assert!(!line.contains("up to date"), "{}", text(&o));
    assert!(stderr(&o).contains("nothing was deleted"), "{}", text(&o));
    assert_eq!(tree(&env.at("mirror")), ["one", "two"]);

    let o = env.run(&[
        "sync",
        &vol,
        &mirror,
        "--delete",
        "--max-delete",
        "100%",
        "--json",
    ]);
    expect(&o, 5);
    let v = summary(&o);
    assert_eq!(v["delete"]["verdict"], "empty-source", "{v}");
    assert_eq!(v["delete"]["deleted"]["objects"], 0);
    assert_eq!(v["source_objects"], 0);
    assert_eq!(tree(&env.at("mirror")), ["one", "two"]);

    // Without --delete nothing changes either way; with the flag the mirror follows the source.
    expect(&env.run(&["sync", &vol, &mirror]), 0);
    let o = env.run(&[
        "sync",
        &vol,
        &mirror,
        "--delete",
        "--max-delete",
        "100%",
        "--allow-empty-source",
        "--json",
    ]);
    expect(&o, 0);
    assert_eq!(summary(&o)["delete"]["deleted"]["objects"], 2);
    assert!(tree(&env.at("mirror")).is_empty());

    let Some(s) = servers() else { return };
    let p = unique("refuse-empty");
    let loc = format!("garage:{}/{p}", s.bucket_b);
    let dst = Store::open(&loc, &super::remotes(&s)).unwrap();
    seed(&dst, &[("a", 1), ("b/c", 2), ("d", 3)]).await;
    let o = env.run(&[
        "sync",
        &vol,
        &loc,
        "--delete",
        "--max-delete",
        "100%",
        "--json",
    ]);
    expect(&o, 5);
    assert_eq!(summary(&o)["delete"]["verdict"], "empty-source");
    assert_eq!(keys(&dst).await, ["a", "b/c", "d"]);
}

/// On the main of 2026-12-01 a FIFO in a local source was skipped silently: when it replaced a
/// file already mirrored, `sync --delete` deleted that file's copy, exit 0.
#[cfg(unix)]
#[tokio::test]
async fn a_fifo_that_replaced_a_mirrored_file_keeps_its_copy() {
    let env = Env::new(servers().as_ref(), "");
    write(&env.at("src/data/a"), "aaaa");
    write(&env.at("src/data/b"), "bb");
    let mut mirrors = vec![env.s("mirror")];
    let s = servers();
    let mut garage = None;
    if let Some(s) = &s {
        let loc = format!("garage:{}/{}", s.bucket_b, unique("refuse-fifo"));
        garage = Some(Store::open(&loc, &super::remotes(s)).unwrap());
        mirrors.push(loc);
    }
    let src = env.s("src");
    for m in &mirrors {
        expect(&env.run(&["sync", &src, m]), 0);
    }
    std::fs::remove_file(env.at("src/data/a")).unwrap();
    let path = std::ffi::CString::new(env.s("src/data/a")).unwrap();
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0);

    for m in &mirrors {
        let o = env.run(&[
            "sync",
            &src,
            m,
            "--delete",
            "--max-delete",
            "100%",
            "--json",
        ]);
        expect(&o, 3);
        let v = summary(&o);
        assert_eq!(
            v["refused"],
            serde_json::json!({"objects": 1, "keys": [{"key": "data/a", "reason": "not a regular file (FIFO)"}]}),
            "{v}"
        );
        assert_eq!(v["delete"]["verdict"], "suppressed", "{v}");
        assert_eq!(v["delete"]["deleted"]["objects"], 0);
    }
    assert_eq!(tree(&env.at("mirror")), ["data/a", "data/b"]);
    assert_eq!(
        std::fs::read_to_string(env.at("mirror/data/a")).unwrap(),
        "aaaa"
    );
    if let Some(g) = &garage {
        assert_eq!(keys(g).await, ["data/a", "data/b"]);
    }
    // ls names it too, with exit 3.
    let o = env.run(&["ls", &src]);
    expect(&o, 3);
    assert!(
        stderr(&o).contains("not a regular file (FIFO)"),
        "{}",
        text(&o)
    );
}

/// On the main of 2026-12-01 an endpoint `http://user:password@host` was accepted from the
/// remotes file and from AWS_ENDPOINT_URL(_S3), and could be printed in errors.
#[test]
fn endpoints_with_a_password_are_refused_and_never_printed() {
    const PASSWORD: &str = "Pa55w0rdXYZ";
    let leaky = format!(
        "[remotes.leaky]\ntype = \"s3\"\nendpoint = \"http://moverctl:{PASSWORD}@127.0.0.1:3900\"\n\
         access_key_id_env = \"K\"\nsecret_access_key_env = \"S\"\n"
    );
    let env = Env::new(None, &leaky);
    std::fs::create_dir_all(env.at("dir")).unwrap();
    let dir = env.s("dir");
    let quiet = |o: &Output| {
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!all.contains(PASSWORD), "{}", text(o));
    };
    for args in [
        vec!["ls", "leaky:bucket/x"],
        vec!["sync", dir.as_str(), "leaky:bucket/x"],
        vec!["copy", "leaky:bucket/x", dir.as_str()],
    ] {
        let o = env.run(&args);
        expect(&o, 2);
        quiet(&o);
        let e = stderr(&o);
        assert!(
            e.contains("remotes.leaky.endpoint") && e.contains("_env"),
            "{}",
            text(&o)
        );
    }

    let env = Env::new(None, "");
    std::fs::create_dir_all(env.at("dir")).unwrap();
    let dir = env.s("dir");
    let url = format!("http://moverctl:{PASSWORD}@127.0.0.1:3900");
    for var in ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"] {
        for args in [
            vec!["ls", "s3://bucket/x"],
            vec!["sync", dir.as_str(), "s3://bucket/x"],
            vec!["copy", "s3://bucket/x", dir.as_str()],
        ] {
            let o = env.run_with(
                &args,
                &[
                    (var, url.as_str()),
                    ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
                    ("AWS_SECRET_ACCESS_KEY", "secret"),
                ],
            );
            expect(&o, 2);
            quiet(&o);
            assert!(
                stderr(&o).contains(var) && stderr(&o).contains("_env"),
                "{}",
                text(&o)
            );
        }
    }
}
