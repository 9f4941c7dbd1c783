//! Habits of people who come from rclone and cp, and config mistakes, through the binary.

use super::{expect, moverctl, text};
use std::io::Read;
use std::process::Stdio;

fn config(dir: &std::path::Path, body: &str) -> std::path::PathBuf {
    let p = dir.join("remotes.toml");
    std::fs::write(&p, body).unwrap();
    p
}

/// Fails on the main of 2026-12-01: "wasbi" was accepted (priced at $0) and the pasted secret
/// came back in the error.
#[test]
fn config_mistakes_are_refused_before_any_work() {
    let t = tempfile::tempdir().unwrap();
    let cases = [
        (
            "[remotes.w]\ntype = \"s3\"\nprovider = \"wasbi\"\nendpoint = \"http://127.0.0.1:9\"\n",
            "known providers: ",
        ),
        (
            "[remotes.w]\ntype = \"s3\"\nprovider = \"wasabi\"\nstorage_class = \"GLACIER\"\nendpoint = \"http://127.0.0.1:9\"\n",
            "its classes: standard (STANDARD)",
        ),
        (
            "[remotes.w]\ntype = \"s3\"\nendpoint = \"http://127.0.0.1:9\"\naccess_key_id_env = \"K\"\nsecret_access_key_env = \"0011aa22bb33cc44dd55eeff\"\n",
            "not the name of an environment variable",
        ),
    ];
    for (body, needle) in cases {
        let c = config(t.path(), body);
        let o = moverctl()
            .args(["ls", "w:bucket/x", "--config"])
            .arg(&c)
            .output()
            .unwrap();
        expect(&o, 2);
        let all = text(&o);
        assert!(
            all.contains(needle) && all.contains("remotes.toml:"),
            "{all}"
        );
        assert!(!all.contains("0011aa22"), "{all}");
    }
}

/// Fails on the main of 2026-12-01, where `ls | head -1` ended with "Broken pipe" and exit 1.
#[test]
fn a_closed_pipe_ends_quietly_with_exit_0() {
    let t = tempfile::tempdir().unwrap();
    for i in 0..3000 {
        std::fs::write(t.path().join(format!("k{i:05}")), b"x").unwrap();
    }
    for args in [vec!["ls"], vec!["ls", "--json"]] {
        let mut child = moverctl()
            .args(&args)
            .arg(t.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read one line, then close the pipe as `head -1` does.
        let mut out = child.stdout.take().unwrap();
        let mut first = [0u8; 16];
        out.read_exact(&mut first).unwrap();
        drop(out);
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

/// Fails on the main of 2026-12-01 ("is a regular file, not a folder", exit 2): one file is
/// copied as `cp` copies it, into a folder (trailing `/`) or to a key, locally and to S3, and a
/// second run finds it there.
#[test]
fn a_single_file_is_copied_as_cp_would() {
    let Some(s) = super::servers() else { return };
    let t = tempfile::tempdir().unwrap();
    let cfg = config(t.path(), &super::remotes_toml(&s));
    let src = t.path().join("model.bin");
    std::fs::write(&src, b"weights").unwrap();
    std::fs::write(t.path().join("other.bin"), b"not me").unwrap();
    let p = super::unique("single");
    let local_dir = t.path().join("out");
    let cases = [
        (
            format!("garage:{}/{p}/", s.bucket_a),
            format!("garage:{}/{p}/", s.bucket_a),
            "model.bin",
        ),
        (
            format!("garage:{}/{p}/renamed.bin", s.bucket_a),
            format!("garage:{}/{p}/", s.bucket_a),
            "renamed.bin",
        ),
        (
            format!("{}/", local_dir.display()),
            local_dir.display().to_string(),
            "model.bin",
        ),
        (
            local_dir.join("g.bin").display().to_string(),
            local_dir.display().to_string(),
            "g.bin",
        ),
    ];
    for (dst, folder, key) in &cases {
        for run in 0..2 {
            let o = moverctl()
                .arg("--config")
                .arg(&cfg)
                .args(["copy", "--json"])
                .arg(&src)
                .arg(dst)
                .output()
                .unwrap();
            expect(&o, 0);
            let sum = super::summary(&o);
            let (copied, skipped) = if run == 0 { (1, 0) } else { (0, 1) };
            assert_eq!(
                sum["copied"]["objects"].as_u64(),
                Some(copied),
                "{dst}: {}",
                text(&o)
            );
            assert_eq!(
                sum["skipped"]["objects"].as_u64(),
                Some(skipped),
                "{dst}: {}",
                text(&o)
            );
        }
        let o = moverctl()
            .arg("--config")
            .arg(&cfg)
            .args(["ls", "--json"])
            .arg(folder)
            .output()
            .unwrap();
        expect(&o, 0);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains(&format!("\"key\":\"{key}\"")),
            "{folder}: {out}"
        );
        assert!(!out.contains("other.bin"), "{folder}: {out}");
    }
    assert_eq!(std::fs::read(local_dir.join("g.bin")).unwrap(), b"weights");
    // Onto itself: refused.
    let o = moverctl()
        .args(["copy"])
        .arg(&src)
        .arg(&src)
        .output()
        .unwrap();
    expect(&o, 2);
}

/// `--quiet` is silent when all is well: a cron mail only when something needs a person. The
/// nightly "kept N objects younger than the minimum storage duration" note is not a problem.
#[test]
fn quiet_is_silent_on_success() {
    let Some(s) = super::servers() else { return };
    let t = tempfile::tempdir().unwrap();
    let cfg = config(
        t.path(),
        &format!(
            "[remotes.wasabi_local]\ntype = \"s3\"\nprovider = \"wasabi\"\nendpoint = \"{}\"\nregion = \"{}\"\n\
             access_key_id_env = \"MOVERCTL_TEST_S3_KEY_ID\"\nsecret_access_key_env = \"MOVERCTL_TEST_S3_SECRET\"\n",
            s.s3_endpoint, s.region
        ),
    );
    let src = t.path().join("src");
    std::fs::create_dir(&src).unwrap();
    for k in ["a", "b", "c"] {
        std::fs::write(src.join(k), k).unwrap();
    }
    let dst = format!("wasabi_local:{}/{}", s.bucket_b, super::unique("quiet"));
    let sync = |extra: &[&str]| {
        moverctl()
            .arg("--config")
            .arg(&cfg)
            .arg("sync")
            .arg(&src)
            .arg(&dst)
            .args(extra)
            .output()
            .unwrap()
    };
    expect(&sync(&["--quiet"]), 0);
    std::fs::remove_file(src.join("c")).unwrap();
    // Not quiet: the kept object is reported.
    let o = sync(&["--delete", "--max-delete", "100%"]);
    expect(&o, 0);
    assert!(text(&o).contains("90-day minimum"), "{}", text(&o));
    for run in [
        sync(&["--delete", "--max-delete", "100%", "--quiet"]),
        sync(&["--delete", "--max-delete", "100%", "-q"]),
    ] {
        expect(&run, 0);
        assert!(
            run.stdout.is_empty() && run.stderr.is_empty(),
            "{}",
            text(&run)
        );
    }
    // copy has --quiet too.
    let o = moverctl()
        .arg("--config")
        .arg(&cfg)
        .args(["copy", "--quiet"])
        .arg(&src)
        .arg(&dst)
        .output()
        .unwrap();
    expect(&o, 0);
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{}", text(&o));
}

/// Fails on the main of 2026-12-01, which copied everything and only then failed to write the
/// metrics file.
#[test]
fn a_missing_metrics_folder_stops_the_sync_before_any_work() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("a"), b"a").unwrap();
    let dst = t.path().join("dst");
    let o = moverctl()
        .arg("sync")
        .arg(&src)
        .arg(&dst)
        .arg("--metrics-file")
        .arg(t.path().join("no-such-folder/moverctl.prom"))
        .output()
        .unwrap();
    expect(&o, 2);
    assert!(text(&o).contains("no-such-folder"), "{}", text(&o));
    assert!(!dst.join("a").exists(), "the sync ran: {}", text(&o));
}

/// rclone's `--bwlimit` forms through the binary: `1M` is 1 MiB/s, a timetable applies its
/// rate, `off` none. Fails on the main of 2026-12-01, which refused `1M` ("not a rate").
#[test]
fn bwlimit_takes_rclone_forms() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    std::fs::create_dir(&src).unwrap();
    for i in 0..3 {
        std::fs::write(src.join(format!("f{i}")), vec![7u8; 1 << 20]).unwrap();
    }
    let copy = |limit: &str, n: &str| {
        let start = std::time::Instant::now();
        let o = moverctl()
            .args(["copy", "--bwlimit", limit])
            .arg(&src)
            .arg(t.path().join(n))
            .output()
            .unwrap();
        (o, start.elapsed().as_secs_f64())
    };
    // 3 MiB: the first MiB is the bucket's burst, then 2 s at 1 MiB/s.
    for (limit, n) in [
        ("1M", "a"),
        ("1024K", "b"),
        ("00:00,1M", "c"),
        ("1M:off", "d"),
    ] {
        let (o, secs) = copy(limit, n);
        expect(&o, 0);
        assert!((1.8..6.0).contains(&secs), "{limit}: {secs:.2} s");
    }
    for (limit, n) in [("off", "e"), ("00:00,off", "f")] {
        let (o, secs) = copy(limit, n);
        expect(&o, 0);
        assert!(secs < 1.5, "{limit}: {secs:.2} s");
    }
    for bad in ["10X", "08:00", "25:00,1M"] {
        let (o, _) = copy(bad, "g");
        expect(&o, 2);
        assert!(text(&o).contains("--bwlimit"), "{}", text(&o));
    }
}

/// The keys a `copy --json` run copied (or, in a dry run, would copy), sorted.
fn copied(o: &std::process::Output) -> Vec<String> {
    let mut v: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "copied" || v["event"] == "would_copy")
        .map(|v| v["key"].as_str().unwrap().to_string())
        .collect();
    v.sort();
    v
}

/// rclone's filters: globs by rclone's rules, patterns from files, sizes, ages and a key list.
/// Fails on the main of 2026-12-01: `*.safetensors` matched only at the top, and the other
/// flags did not exist.
#[test]
fn rclone_filters_select_what_rclone_would() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(10 * 86400);
    for (k, size, aged) in [
        ("a.safetensors", 10, false),
        ("ckpt/7/b.safetensors", 10, false),
        ("ckpt/x.bin", 3000, false),
        ("run1/ckpt/y.bin", 10, false),
        ("logs/old.log", 2000, true),
        ("notes.txt", 1, false),
    ] {
        let p = src.join(k);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, vec![b'x'; size]).unwrap();
        if aged {
            std::fs::File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
    }
    let lists = t.path().join("lists");
    std::fs::create_dir(&lists).unwrap();
    std::fs::write(
        lists.join("inc"),
        "# models\n*.safetensors\n\n; and logs\nlogs/\n",
    )
    .unwrap();
    std::fs::write(lists.join("exc"), "/ckpt/**\n").unwrap();
    std::fs::write(
        lists.join("files"),
        "a.safetensors\nckpt/x.bin\nmissing\nnotes.txt\n",
    )
    .unwrap();
    let l = |n: &str| lists.join(n).display().to_string();
    let run = |args: &[&str]| {
        let o = moverctl()
            .args(["copy", "--dry-run", "--json"])
            .args(args)
            .arg(&src)
            .arg(t.path().join("dst"))
            .output()
            .unwrap();
        expect(&o, 0);
        copied(&o)
    };
    assert_eq!(
        run(&["--include", "*.safetensors"]),
        ["a.safetensors", "ckpt/7/b.safetensors"]
    );
    assert_eq!(
        run(&["--include", "ckpt/*.bin"]),
        ["ckpt/x.bin", "run1/ckpt/y.bin"]
    );
    assert_eq!(run(&["--include", "/ckpt/*.bin"]), ["ckpt/x.bin"]);
    assert_eq!(
        run(&["--include", "/ckpt/**"]),
        ["ckpt/7/b.safetensors", "ckpt/x.bin"]
    );
    assert_eq!(
        run(&["--include-from", &l("inc"), "--exclude-from", &l("exc")]),
        ["a.safetensors", "logs/old.log"]
    );
    assert_eq!(run(&["--min-size", "1K"]), ["ckpt/x.bin", "logs/old.log"]);
    assert_eq!(run(&["--min-size", "2K"]), ["ckpt/x.bin"]);
    assert_eq!(run(&["--max-size", "9B"]), ["notes.txt"]);
    assert_eq!(run(&["--min-age", "1d"]), ["logs/old.log"]);
    assert_eq!(
        run(&["--max-age", "1d", "--min-size", "1K"]),
        ["ckpt/x.bin"]
    );
    assert_eq!(
        run(&["--files-from", &l("files")]),
        ["a.safetensors", "ckpt/x.bin", "notes.txt"]
    );
    // `moverctl ls --json` output is a list too: of a subfolder, its keys are relative to it.
    let o = moverctl()
        .args(["ls", "--json"])
        .arg(src.join("ckpt"))
        .output()
        .unwrap();
    expect(&o, 0);
    std::fs::write(lists.join("ls.json"), &o.stdout).unwrap();
    assert_eq!(run(&["--files-from", &l("ls.json")]), Vec::<String>::new());
    let o = moverctl()
        .args(["ls", "--json"])
        .arg(src.join("ckpt"))
        .output()
        .unwrap();
    std::fs::write(lists.join("ls.json"), &o.stdout).unwrap();
    let o = moverctl()
        .args(["copy", "--dry-run", "--json", "--files-from", &l("ls.json")])
        .arg(src.join("ckpt"))
        .arg(t.path().join("dst"))
        .output()
        .unwrap();
    assert_eq!(copied(&o), ["7/b.safetensors", "x.bin"]);
    // An unsorted list and bad values are refused before any work.
    std::fs::write(lists.join("unsorted"), "b\na\n").unwrap();
    for bad in [
        vec!["--files-from", &l("unsorted")],
        vec!["--min-size", "10X"],
        vec!["--max-age", "soon"],
        vec!["--include-from", "/no/such/file"],
    ] {
        let o = moverctl()
            .arg("copy")
            .args(&bad)
            .arg(&src)
            .arg(t.path().join("dst"))
            .output()
            .unwrap();
        expect(&o, 2);
        assert!(text(&o).contains(bad[0]), "{}", text(&o));
    }
    let dst = t.path().join("dst");
    assert!(!dst.exists() || std::fs::read_dir(&dst).unwrap().count() == 0);
}

/// `--size-only` takes an object of the same size as the same (no HEAD, no copy); `--checkers`
/// runs the HEADs of a re-run without a journal apart from the copies; `-P`, `--checksum` are
/// accepted. Fails on the main of 2026-12-01, which had none of these flags.
#[test]
fn size_only_checkers_and_the_accepted_aliases() {
    let t = tempfile::tempdir().unwrap();
    let (src, dst) = (t.path().join("src"), t.path().join("dst"));
    std::fs::create_dir_all(&src).unwrap();
    std::fs::create_dir_all(&dst).unwrap();
    for i in 0..6 {
        std::fs::write(src.join(format!("k{i}")), format!("source {i}")).unwrap();
        // Same size, other bytes, written by "another tool".
        std::fs::write(dst.join(format!("k{i}")), format!("other! {i}")).unwrap();
    }
    let run = |args: &[&str]| {
        let o = moverctl()
            .args(["copy", "--json"])
            .args(args)
            .arg(&src)
            .arg(&dst)
            .output()
            .unwrap();
        expect(&o, 0);
        super::summary(&o)
    };
    let v = run(&[
        "--size-only",
        "--journal",
        &t.path().join("j1").display().to_string(),
    ]);
    assert_eq!(v["skipped"]["objects"], 6, "{v}");
    assert_eq!(v["reasons"]["same size"], 6, "{v}");
    assert_eq!(v["requests"]["head"], 0, "{v}");
    assert_eq!(std::fs::read_to_string(dst.join("k0")).unwrap(), "other! 0");
    // Without it: each is checked (one HEAD) and copied as unproven, here with 2 checkers.
    let v = run(&[
        "--checkers",
        "2",
        "--transfers",
        "1",
        "-P",
        "--checksum",
        "--journal",
        &t.path().join("j2").display().to_string(),
    ]);
    assert_eq!(v["copied"]["objects"], 6, "{v}");
    assert_eq!(v["reasons"]["unproven"], 6, "{v}");
    assert_eq!(std::fs::read_to_string(dst.join("k0")).unwrap(), "source 0");
    for bad in [vec!["--checkers", "0"], vec!["--size-only", "--checksum"]] {
        let o = moverctl()
            .arg("copy")
            .args(&bad)
            .arg(&src)
            .arg(&dst)
            .output()
            .unwrap();
        expect(&o, 2);
    }
}

/// `copy --storage-class` (it was only on `sync`): checked against the catalog, and the tier is
/// stored (Azurite keeps it).
#[tokio::test]
async fn copy_takes_a_storage_class() {
    let Some(s) = super::servers() else { return };
    let t = tempfile::tempdir().unwrap();
    let cfg = config(
        t.path(),
        &format!(
            "[remotes.az_priced]\ntype = \"azure\"\nprovider = \"azure\"\nendpoint = \"{}\"\naccount = \"{}\"\naccount_key_env = \"MOVERCTL_TEST_AZURE_KEY\"\n",
            std::env::var("MOVERCTL_TEST_AZURE_ENDPOINT").unwrap(),
            std::env::var("MOVERCTL_TEST_AZURE_ACCOUNT").unwrap(),
        ),
    );
    let src = t.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("tiered.bin"), vec![1u8; 3000]).unwrap();
    let p = super::unique("copy-tier");
    let dst = format!("az_priced:{}/{p}", s.az_container);
    let copy = |class: &str| {
        moverctl()
            .arg("--config")
            .arg(&cfg)
            .args(["copy", "--storage-class", class])
            .arg(&src)
            .arg(&dst)
            .output()
            .unwrap()
    };
    let o = copy("lukewarm");
    expect(&o, 2);
    assert!(text(&o).contains("cool (Cool)"), "{}", text(&o));
    expect(&copy("cool"), 0);
    use object_store::signer::Signer;
    let az = object_store::azure::MicrosoftAzureBuilder::new()
        .with_account(std::env::var("MOVERCTL_TEST_AZURE_ACCOUNT").unwrap())
        .with_access_key(std::env::var("MOVERCTL_TEST_AZURE_KEY").unwrap())
        .with_container_name(&s.az_container)
        .with_endpoint(std::env::var("MOVERCTL_TEST_AZURE_ENDPOINT").unwrap())
        .with_allow_http(true)
        .build()
        .unwrap();
    let url = az
        .signed_url(
            reqwest::Method::GET,
            &object_store::path::Path::from(format!("{p}/tiered.bin")),
            std::time::Duration::from_secs(300),
        )
        .await
        .unwrap();
    let res = reqwest::Client::new().head(url).send().await.unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    assert_eq!(
        res.headers()
            .get("x-ms-access-tier")
            .map(|v| v.to_str().unwrap()),
        Some("Cool")
    );
}

/// `--version` names the commit and what the build can do; completions and man pages come from
/// the same definitions. Fails on the main of 2026-12-01 (a bare "moverctl 0.1.0", no
/// `completions`, no `man`).
#[test]
fn version_completions_and_man_pages() {
    let o = moverctl().arg("--version").output().unwrap();
    expect(&o, 0);
    let v = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let want_commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    assert_eq!(
        v,
        format!(
            "moverctl {} (commit {want_commit}, stores: s3 gcs azure local, tls: rustls)",
            env!("CARGO_PKG_VERSION")
        )
    );
    for (shell, needle) in [
        ("bash", "_moverctl()"),
        ("zsh", "#compdef moverctl"),
        ("fish", "complete -c moverctl"),
    ] {
        let o = moverctl().args(["completions", shell]).output().unwrap();
        expect(&o, 0);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains(needle) && out.contains("bwlimit"), "{shell}");
    }
    expect(
        &moverctl().args(["completions", "tcsh"]).output().unwrap(),
        2,
    );
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("man/man1");
    let o = moverctl().arg("man").arg(&dir).output().unwrap();
    expect(&o, 0);
    let top = std::fs::read_to_string(dir.join("moverctl.1")).unwrap();
    assert!(
        top.starts_with(".ie") || top.contains(".TH moverctl 1"),
        "{top}"
    );
    let copy = std::fs::read_to_string(dir.join("moverctl-copy.1")).unwrap();
    assert!(
        copy.contains("bwlimit") && copy.contains("files\\-from"),
        "{copy}"
    );
    assert!(dir.join("moverctl-sync.1").exists());
}

/// The crontab line, run as cron runs it (`/bin/sh -c`, `\%` unescaped, a bare environment),
/// with env.example as the environment file: every variable reaches the program it starts.
/// Fails with the line of the main of 2026-12-01 (`. $HOME/.config/moverctl/env && …`), which
/// set them for the shell only.
#[test]
fn the_crontab_exports_the_env_file_to_moverctl() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cold-mirror");
    let crontab = std::fs::read_to_string(dir.join("crontab")).unwrap();
    let line = crontab
        .lines()
        .find(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .expect("a schedule line");
    let command = line
        .split_whitespace()
        .skip(5)
        .collect::<Vec<_>>()
        .join(" ");
    let (prefix, _) = command
        .split_once("/usr/local/bin/moverctl")
        .expect("the line runs /usr/local/bin/moverctl");
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".config/moverctl")).unwrap();
    std::fs::copy(
        dir.join("env.example"),
        home.path().join(".config/moverctl/env"),
    )
    .unwrap();
    // The program the line starts, replaced by `env`, prints what it was given.
    let o = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("{}env", prefix.replace("\\%", "%")))
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    expect(&o, 0);
    let env = String::from_utf8_lossy(&o.stdout);
    for var in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "B2_KEY_ID",
        "B2_APP_KEY",
    ] {
        assert!(
            env.lines().any(|l| l.starts_with(&format!("{var}="))),
            "{var} not exported: {env}"
        );
    }
}

/// What the container image packages, checked where no container builder runs: the Dockerfile's
/// own build step (`RUN cargo build …`, with the commit passed as the build argument), its
/// `COPY --from=build` into the image path, its `ENV` and `USER`, and its `ENTRYPOINT` run with
/// `--version` in an otherwise empty environment. Builds the release binary (minutes, once).
#[test]
fn the_image_entrypoint_runs_the_release_binary() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dockerfile = std::fs::read_to_string(root.join("Dockerfile")).unwrap();
    let lines: Vec<&str> = dockerfile
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    let after = |instr: &str| -> Vec<String> {
        lines
            .iter()
            .filter_map(|l| l.strip_prefix(instr))
            .map(|r| r.trim().to_string())
            .collect()
    };
    assert_eq!(
        after("FROM ").len(),
        2,
        "multi-stage: a builder and a runtime"
    );
    assert!(
        after("FROM ")[1].contains("distroless"),
        "small runtime image"
    );
    let build = after("RUN ");
    let build: Vec<&str> = build[0].split_whitespace().collect();
    assert_eq!(&build[..3], ["cargo", "build", "--release"], "{build:?}");
    let copy = after("COPY --from=build ");
    let (from, to) = copy[0].split_once(' ').unwrap();
    let user = &after("USER ")[0];
    let uid: u32 = user.split(':').next().unwrap().parse().unwrap();
    assert_ne!(uid, 0, "non-root");
    let entry: Vec<String> = serde_json::from_str(&after("ENTRYPOINT ")[0]).unwrap();
    assert_eq!(entry[0], to, "the entrypoint is the packaged binary");

    // Its own target folder: the `cargo test` that runs this holds the usual one.
    let target = root.join("target/image");
    let o = std::process::Command::new(build[0])
        .args(&build[1..])
        .current_dir(root)
        .env("CARGO_TARGET_DIR", &target)
        .env("MOVERCTL_GIT_COMMIT", "0123456789ab")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Lay the binary out as the image does, readable by the image's user.
    let image = tempfile::tempdir().unwrap();
    let dest = image.path().join(to.trim_start_matches('/'));
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    let built = from
        .strip_prefix("/src/target/")
        .expect("the image copies from /src/target");
    std::fs::copy(target.join(built), &dest).unwrap();
    use std::os::unix::fs::PermissionsExt;
    for d in dest
        .ancestors()
        .skip(1)
        .take_while(|d| d.starts_with(image.path()))
    {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let is_root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    let mut cmd = if is_root {
        let mut c = std::process::Command::new("setpriv");
        c.args([
            &format!("--reuid={uid}"),
            &format!("--regid={uid}"),
            "--clear-groups",
        ])
        .arg(&dest);
        c
    } else {
        std::process::Command::new(&dest)
    };
    cmd.env_clear().arg("--version");
    for env in after("ENV ") {
        let (k, v) = env.split_once('=').unwrap();
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    expect(&o, 0);
    let v = String::from_utf8_lossy(&o.stdout);
    assert!(
        v.starts_with("moverctl ") && v.contains("commit 0123456789ab"),
        "{v}"
    );
}

/// A Prometheus Pushgateway this test starts on a free port (Debian's prometheus-pushgateway),
/// stopped when dropped.
struct Pushgateway {
    child: std::process::Child,
    addr: String,
}

impl Drop for Pushgateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn pushgateway() -> Option<Pushgateway> {
    let bin = [
        "/usr/bin/prometheus-pushgateway",
        "/usr/local/bin/pushgateway",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists());
    let Some(bin) = bin else {
        if std::env::var("MOVERCTL_REQUIRE_SERVERS").as_deref() == Ok("1") {
            panic!(
                "no prometheus-pushgateway (apt-get install prometheus-pushgateway; scripts/test.sh does)"
            );
        }
        eprintln!("skipped: no prometheus-pushgateway");
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let child = std::process::Command::new(bin)
        .arg(format!("--web.listen-address={addr}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let gw = Pushgateway { child, addr };
    for _ in 0..100 {
        if std::net::TcpStream::connect(&gw.addr).is_ok() {
            return Some(gw);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("the pushgateway did not start on {}", gw.addr);
}

/// `sync --metrics-push`: the run's metrics reach a real Pushgateway (what the Kubernetes CronJob
/// uses, since its pod's node changes from run to run); a URL with credentials is refused
/// without being echoed, before any work.
#[tokio::test]
async fn sync_pushes_its_metrics_to_a_pushgateway() {
    let Some(gw) = pushgateway() else { return };
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("a"), b"a").unwrap();
    std::fs::write(src.join("b"), b"b").unwrap();
    let url = format!("http://{}/metrics/job/moverctl/mirror/habits", gw.addr);
    let sync = |push: &str| {
        moverctl()
            .arg("sync")
            .arg(&src)
            .arg(t.path().join("dst"))
            .arg("--metrics-file")
            .arg(t.path().join("m.prom"))
            .args(["--metrics-push", push, "--quiet"])
            .output()
            .unwrap()
    };
    for bad in [
        "http://user:s3cr3t@127.0.0.1:9/metrics/job/x",
        "http://127.0.0.1:9/metrics/job/x?token=s3cr3t",
        "http://127.0.0.1:9/",
    ] {
        let o = sync(bad);
        expect(&o, 2);
        assert!(!text(&o).contains("s3cr3t"), "{}", text(&o));
        assert!(!t.path().join("dst").exists());
    }
    let o = sync(&url);
    expect(&o, 0);
    assert!(o.stderr.is_empty(), "{}", text(&o));
    let got = reqwest::get(format!("http://{}/metrics", gw.addr))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let line = got
        .lines()
        .find(|l| l.starts_with("moverctl_sync_objects_copied{"))
        .unwrap_or_else(|| panic!("not pushed: {got}"));
    assert!(
        line.contains("job=\"moverctl\"")
            && line.contains("mirror=\"habits\"")
            && line.ends_with(" 2"),
        "{line}"
    );
}

/// The plan table fits 100 columns, with no number broken across lines, for the README's
/// example and for a wide one (very large amounts, long destination names). Fails on the main
/// of 2026-12-01, whose table was 144 columns wide (and wrapped numbers on a 100-column terminal).
#[test]
fn the_plan_table_fits_100_columns() {
    let wide = [
        "--from",
        "aws:us-east-1",
        "--to",
        "backblaze-b2,cloudflare-r2,wasabi:us-east-1,gcp:us-central1,aws:us-west-2/glacier-ir,azure:eastus/cool",
        "--bytes",
        "20PB",
        "--objects",
        "4B",
        "--bandwidth",
        "1Gbps",
        "--months",
        "36",
        "--gpu-hourly",
        "45000",
    ];
    let stay = [
        "--from",
        "aws:us-east-1",
        "--to",
        "backblaze-b2,cloudflare-r2,wasabi:us-east-1,gcp:us-central1",
        "--bytes",
        "2PB",
        "--objects",
        "40M",
        "--compute-at",
        "coreweave",
        "--reads-per-month",
        "2",
    ];
    for (args, n) in [
        (vec!["--example"], 4),
        (wide.to_vec(), 6),
        (stay.to_vec(), 5),
    ] {
        let o = moverctl().arg("plan").args(&args).output().unwrap();
        expect(&o, 0);
        let out = String::from_utf8_lossy(&o.stdout);
        // The tables: from the first header line to the warnings.
        let table: Vec<&str> = out
            .lines()
            .skip_while(|l| !l.starts_with("# "))
            .take_while(|l| !l.starts_with('!') && !l.starts_with("break-even"))
            .collect();
        assert!(!table.is_empty(), "{out}");
        for l in &table {
            assert!(
                l.chars().count() <= 100,
                "{} columns: {l:?}",
                l.chars().count()
            );
        }
        // Each destination is one line in each table, its amounts whole on it.
        let tables = table.iter().filter(|l| l.starts_with("# ")).count();
        for rank in 1..=n {
            let rows = table
                .iter()
                .filter(|l| l.starts_with(&format!("{rank} ")))
                .count();
            assert_eq!(rows, tables, "rank {rank}:\n{}", table.join("\n"));
        }
        let money_lines = table.iter().filter(|l| l.contains('$')).count();
        assert_eq!(
            money_lines,
            n * tables,
            "no wrapped amounts:\n{}",
            table.join("\n")
        );
    }
}
