//! Credentials and remotes as a user meets them: `moverctl ls` against Garage through a remotes
//! file, an AWS shared profile, and the messages (and exit code 4) when something is missing.
//! No secret may appear in any output.

use super::{moverctl, remotes_toml, servers, unique};
use std::process::Output;

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn seeded(s: &super::Servers) -> (tempfile::TempDir, std::path::PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("remotes.toml");
    std::fs::write(&conf, remotes_toml(s)).unwrap();
    let prefix = unique("creds");
    // Seed two objects with moverctl's own store layer.
    let store = moverctl::store::Store::open(
        &format!("garage:{}/{prefix}", s.bucket_a),
        &super::remotes(s),
    )
    .unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        use object_store::ObjectStoreExt;
        for (k, v) in [("x/one", "1"), ("x/two", "22")] {
            store
                .inner
                .put(&store.path_of(k).unwrap(), v.as_bytes().to_vec().into())
                .await
                .unwrap();
        }
    });
    (dir, conf, prefix)
}

#[test]
fn ls_through_a_remote_lists_keys_sizes_and_totals() {
    let Some(s) = servers() else { return };
    let (_dir, conf, prefix) = seeded(&s);
    let o = moverctl()
        .args(["ls", "--config"])
        .arg(&conf)
        .arg(format!("garage:{}/{prefix}", s.bucket_a))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("x/one") && out.contains("x/two") && out.contains("2 objects, 3 B"),
        "{out}"
    );
    let o = moverctl()
        .args(["ls", "--json", "--config"])
        .arg(&conf)
        .arg(format!("garage:{}/{prefix}", s.bucket_a))
        .output()
        .unwrap();
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["key"], "x/one");
    assert_eq!(lines[2]["objects"], 2);
    assert_eq!(lines[2]["bytes"], 3);
}

#[test]
fn an_aws_profile_supplies_keys_and_region() {
    let Some(s) = servers() else { return };
    let (dir, _conf, prefix) = seeded(&s);
    let creds = dir.path().join("credentials");
    std::fs::write(
        &creds,
        format!(
            "[garage-test]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
            s.key_id, s.secret
        ),
    )
    .unwrap();
    let config = dir.path().join("config");
    std::fs::write(
        &config,
        format!("[profile garage-test]\nregion = {}\n", s.region),
    )
    .unwrap();
    let o = moverctl()
        .args(["ls", &format!("s3://{}/{prefix}", s.bucket_a)])
        .env("AWS_SHARED_CREDENTIALS_FILE", &creds)
        .env("AWS_CONFIG_FILE", &config)
        .env("AWS_PROFILE", "garage-test")
        .env("AWS_ENDPOINT_URL", &s.s3_endpoint)
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env_remove("AWS_REGION")
        .env_remove("AWS_DEFAULT_REGION")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("2 objects"));
    assert!(!text(&o).contains(&s.secret));
}

#[test]
fn a_wrong_secret_is_exit_4_and_never_printed() {
    let Some(s) = servers() else { return };
    let (_dir, conf, prefix) = seeded(&s);
    let wrong = "0000000000000000000000000000000000000000000000000000000000000000";
    let o = moverctl()
        .args(["ls", "--config"])
        .arg(&conf)
        .arg(format!("garage:{}/{prefix}", s.bucket_a))
        .env("MOVERCTL_TEST_S3_SECRET", wrong)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    assert!(text(&o).contains("MOVERCTL_TEST_S3_SECRET"), "{}", text(&o));
    assert!(!text(&o).contains(wrong), "{}", text(&o));
    assert!(!text(&o).contains(&s.secret));
}

#[test]
fn missing_credentials_name_what_would_satisfy_them() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("remotes.toml");
    std::fs::write(
        &conf,
        "[remotes.b2]\ntype = \"s3\"\nendpoint = \"http://127.0.0.1:9\"\naccess_key_id_env = \"B2_KEY_ID_UNSET\"\nsecret_access_key_env = \"B2_APP_KEY_UNSET\"\n",
    )
    .unwrap();
    let o = moverctl()
        .args(["ls", "--config"])
        .arg(&conf)
        .arg("b2:bucket/x")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(4));
    assert!(text(&o).contains("B2_KEY_ID_UNSET"), "{}", text(&o));

    let empty_home = tempfile::tempdir().unwrap();
    let o = moverctl()
        .args(["ls", "s3://bucket/x"])
        .env("HOME", empty_home.path())
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_SHARED_CREDENTIALS_FILE")
        .env_remove("AWS_WEB_IDENTITY_TOKEN_FILE")
        .env_remove("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(4));
    let t = text(&o);
    assert!(
        t.contains("AWS_ACCESS_KEY_ID") && t.contains("AWS_PROFILE"),
        "{t}"
    );

    let o = moverctl()
        .args(["ls", "s3://bucket/x"])
        .env("HOME", empty_home.path())
        .env("AWS_PROFILE", "nope")
        .env_remove("AWS_ACCESS_KEY_ID")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(4));
    assert!(text(&o).contains("\"nope\""), "{}", text(&o));
}

#[test]
fn a_secret_in_the_remotes_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("remotes.toml");
    std::fs::write(
        &conf,
        "[remotes.x]\ntype = \"s3\"\nsecret_access_key = \"hunter2hunter2\"\n",
    )
    .unwrap();
    let o = moverctl()
        .args(["ls", "--config"])
        .arg(&conf)
        .arg("x:b/c")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("secret_access_key_env") && !text(&o).contains("hunter2"),
        "{}",
        text(&o)
    );
}

#[test]
fn ls_of_a_local_folder_reports_refused_names_with_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ok"), "x").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("/nonexistent-target", dir.path().join("dangling")).unwrap();
    let o = moverctl().arg("ls").arg(dir.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(
        text(&o).contains("dangling") && text(&o).contains("1 keys refused"),
        "{}",
        text(&o)
    );
}

const WRONG: &str = "1111111111111111111111111111111111111111111111111111111111111111";

/// A refused run says exit 4, names the remote (the locations) and the variables its
/// credentials came from, and prints no secret.
fn assert_refused(o: &Output, s: &super::Servers) {
    let t = text(o);
    assert_eq!(o.status.code(), Some(4), "{t}");
    assert!(t.contains("garage:") || t.contains("viaproxy:"), "{t}");
    assert!(
        t.contains("credentials in use:") && t.contains("MOVERCTL_TEST_S3_SECRET"),
        "the message names the variable that holds the refused secret: {t}"
    );
    assert!(!t.contains(WRONG) && !t.contains(&s.secret), "{t}");
}

/// Issue 12: a wrong secret during `copy` (Garage answers 403 to the source's LIST) was exit 1:
/// the run error reached the exit-code rules as text. Failed on the main of 2026-12-01.
#[test]
fn a_wrong_secret_during_copy_is_exit_4() {
    let Some(s) = servers() else { return };
    let (dir, conf, prefix) = seeded(&s);
    let o = moverctl()
        .args(["copy", "--config"])
        .arg(&conf)
        .arg(format!("garage:{}/{prefix}", s.bucket_a))
        .arg(dir.path().join("out"))
        .env("MOVERCTL_TEST_S3_SECRET", WRONG)
        .output()
        .unwrap();
    assert_refused(&o, &s);
}

/// Issue 12: a wrong secret for `sync`'s destination (Garage answers 403 to its LIST) was exit
/// 1. Failed on the main of 2026-12-01.
#[test]
fn a_wrong_secret_during_sync_is_exit_4() {
    let Some(s) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("remotes.toml");
    std::fs::write(&conf, remotes_toml(&s)).unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("a"), "aaa").unwrap();
    for json in [false, true] {
        let mut c = moverctl();
        c.args(["sync", "--config"])
            .arg(&conf)
            .arg(&src)
            .arg(format!("garage:{}/{}", s.bucket_b, unique("creds-sync")))
            .env("MOVERCTL_TEST_S3_SECRET", WRONG);
        if json {
            c.arg("--json");
        }
        let o = c.output().unwrap();
        assert_refused(&o, &s);
        if json {
            let last = String::from_utf8_lossy(&o.stdout)
                .lines()
                .last()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                .unwrap();
            assert_eq!(last["exit_code"], 4, "{last}");
        }
    }
}

/// Issue 12: a destination that starts answering 403 AccessDenied mid-run (a key revoked) made
/// `copy` and `sync` exit 3, like any partial run; the objects copied before are kept. Failed
/// on the main of 2026-12-01.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_refused_mid_run_are_exit_4() {
    use super::faults::proxy::{PFault, Proxy};
    let Some(s) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    for k in ["a", "b", "c", "d", "e", "f"] {
        std::fs::write(src.join(k), format!("{k}{k}{k}")).unwrap();
    }
    for cmd in ["copy", "sync"] {
        let proxy = Proxy::start(super::s3_upstream(&s)).await;
        let conf = dir.path().join(format!("{cmd}.toml"));
        std::fs::write(&conf, super::proxy_remote_toml(&s, &proxy.endpoint())).unwrap();
        let p = unique("creds-revoked");
        // Two PUTs succeed, then every PUT is refused.
        proxy.add_after("PUT", &p, "", PFault::AccessDenied, 2, 1_000);
        let mut c = moverctl();
        c.args([cmd, "--transfers", "1", "--config"])
            .arg(&conf)
            .arg(&src)
            .arg(format!("viaproxy:{}/{p}", s.bucket_b))
            .arg("--journal")
            .arg(dir.path().join(format!("{cmd}.sqlite")));
        if cmd == "sync" {
            c.args(["--delete", "--max-delete", "100%"]);
        }
        let o = tokio::task::spawn_blocking(move || c.output().unwrap())
            .await
            .unwrap();
        assert_refused(&o, &s);
        let t = text(&o);
        assert!(t.contains("refused the credentials"), "{t}");
        assert_eq!(
            proxy
                .hits()
                .iter()
                .filter(|h| h.2 == PFault::AccessDenied)
                .count(),
            4,
            "one refused PUT per object left (no retries of a refusal): {:?}",
            proxy.hits()
        );
    }
}
