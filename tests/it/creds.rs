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
        // No network here: AWS's endpoint does not resolve; the credentials are what is tested.
        .env("MOVERCTL_SKIP_REACH_CHECK", "1")
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
        text(&o).contains("dangling") && text(&o).contains("1 key refused"),
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

// ---- Issue 26: credentials as teams have them, renewed through a run -------------------------

/// A command that sees only the AWS configuration a test writes: a temporary HOME, shared files
/// in `dir`, no AWS_* keys, profile or endpoint from the environment, no instance metadata.
fn aws_isolated(dir: &std::path::Path) -> std::process::Command {
    let mut c = moverctl();
    for v in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3",
        "AWS_ENDPOINT_URL_STS",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CREDENTIAL_EXPIRATION",
    ] {
        c.env_remove(v);
    }
    c.env("HOME", dir)
        .env("AWS_CONFIG_FILE", dir.join("aws-config"))
        .env("AWS_SHARED_CREDENTIALS_FILE", dir.join("aws-credentials"))
        .env("AWS_EC2_METADATA_DISABLED", "true");
    c
}

/// `n` local files of `size` bytes under `dir/src`.
fn local_files(dir: &std::path::Path, n: usize, size: usize) -> std::path::PathBuf {
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    for i in 0..n {
        std::fs::write(
            src.join(format!("f{i:03}")),
            vec![b'a' + (i % 26) as u8; size],
        )
        .unwrap();
    }
    src
}

/// No key, secret or token of the test servers (or moto's) in what a command printed.
fn assert_no_secret(o: &Output, s: &super::Servers, more: &[&str]) {
    let t = text(o);
    for secret in [s.secret.as_str(), s.key_id.as_str()].iter().chain(more) {
        assert!(!t.contains(secret), "a secret was printed: {t}");
    }
    assert!(!t.contains("ASIA") && !t.contains("FQoGZXIvYXdzE"), "{t}");
}

/// A credential_process handing out the test server's keys valid for 12 s, through a run of
/// about 30 s: the cache renews them at half their life, so the process runs a handful of times
/// (not once per request, not once for the whole run), and no request fails. Fails with a
/// provider call per request (about 100 runs of the script) or without renewal (expired keys).
#[test]
fn a_credential_process_with_short_lived_keys_is_run_a_handful_of_times() {
    let Some(s) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    let script = dir.path().join("creds.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho x >> '{}'\nexp=$(date -u -d '+12 seconds' +%Y-%m-%dT%H:%M:%SZ)\n\
             printf '{{\"Version\": 1, \"AccessKeyId\": \"%s\", \"SecretAccessKey\": \"%s\", \"Expiration\": \"%s\"}}' \
             \"$MOVERCTL_TEST_S3_KEY_ID\" \"$MOVERCTL_TEST_S3_SECRET\" \"$exp\"\n",
            calls.display()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("aws-config"),
        format!(
            "[profile proc]\ncredential_process = sh {}\nregion = {}\n",
            script.display(),
            s.region
        ),
    )
    .unwrap();
    let src = local_files(dir.path(), 30, 32 << 10);
    let prefix = unique("creds-process");
    let started = std::time::Instant::now();
    let o = aws_isolated(dir.path())
        .args([
            "copy",
            "-vvv",
            "--profile",
            "proc",
            "--transfers",
            "4",
            "--bwlimit",
            "32KiB/s",
        ])
        .arg(&src)
        .arg(format!("s3://{}/{prefix}", s.bucket_b))
        .env("AWS_ENDPOINT_URL_S3", &s.s3_endpoint)
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(o.status.success(), "{}", text(&o));
    // 30 PUTs for 30 objects: no request was refused or tried again.
    assert!(text(&o).contains("PUT 30 ("), "{}", text(&o));
    assert!(
        took.as_secs() >= 20,
        "the run must outlive the keys: {took:?}"
    );
    let runs = std::fs::read_to_string(&calls).unwrap().lines().count();
    eprintln!("credential_process runs: {runs} in {took:?}");
    assert!(
        (3..=10).contains(&runs),
        "the credential_process ran {runs} times in {took:?} (keys live 12 s, renewed at 6 s)"
    );
    assert_no_secret(&o, &s, &[]);
}

/// A role profile (`role_arn` + `source_profile`, `duration_seconds = 10`) resolved through a
/// real STS (moto's AssumeRole behind a proxy that counts the calls) and used against moto's
/// S3: every S3 request is signed with an assumed-role key (moto hands out a new ASIA key per
/// AssumeRole) and, over a run of about 20 s, with more than one of them (renewed), with a
/// handful of STS calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_assumed_role_is_resolved_through_sts_used_and_renewed() {
    use super::faults::proxy::Proxy;
    let Some(s) = servers() else { return };
    let Some(mut moto) = super::probe::start_moto() else {
        return;
    };
    moto.create_bucket("rolebucket");
    let moto_addr: std::net::SocketAddr = format!("127.0.0.1:{}", moto.port).parse().unwrap();
    let sts = Proxy::start(moto_addr).await;
    let s3 = Proxy::start(moto_addr).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("aws-credentials"),
        "[base]\naws_access_key_id = AKIABASEPROFILE0001\naws_secret_access_key = base-secret-never-printed\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("aws-config"),
        "[profile mover]\nrole_arn = arn:aws:iam::123456789012:role/mover\nsource_profile = base\n\
         duration_seconds = 10\nregion = us-east-1\n",
    )
    .unwrap();
    let src = local_files(dir.path(), 20, 16 << 10);
    let (sts_url, s3_url) = (sts.endpoint(), s3.endpoint());
    let mut c = aws_isolated(dir.path());
    c.args(["copy", "--transfers", "2", "--bwlimit", "16KiB/s"])
        .arg(&src)
        .arg("s3://rolebucket/assumed")
        .env("AWS_PROFILE", "mover")
        .env("AWS_ENDPOINT_URL_STS", &sts_url)
        .env("AWS_ENDPOINT_URL_S3", &s3_url);
    let o = tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let assume_calls = sts.log().iter().filter(|r| r.0 == "POST").count();
    assert!(
        (2..=8).contains(&assume_calls),
        "{assume_calls} AssumeRole calls over a run of ~20 s with 10 s sessions"
    );
    let mut keys = std::collections::BTreeSet::new();
    for (_, target, headers) in s3.log() {
        let auth = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
            .map(|(_, v)| v.clone())
            .or_else(|| {
                // Presigned requests carry the key in the query.
                target
                    .split_once("X-Amz-Credential=")
                    .map(|(_, r)| format!("Credential={r}"))
            })
            .unwrap_or_else(|| panic!("an unsigned request: {target}"));
        let key = auth
            .split_once("Credential=")
            .map(|(_, r)| r.split(['/', '%']).next().unwrap_or_default().to_string())
            .unwrap();
        assert!(
            key.starts_with("ASIA"),
            "signed with {key}, not an assumed role"
        );
        keys.insert(key);
    }
    assert!(
        keys.len() >= 2,
        "one assumed-role key for the whole run: {keys:?}"
    );
    assert_no_secret(&o, &s, &["base-secret-never-printed"]);
}

/// A role whose source profile is not defined (or has no credentials) is exit 4, naming both
/// profiles; nothing is sent to STS.
#[test]
fn a_role_whose_source_profile_is_broken_is_exit_4_naming_the_profile() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("aws-config"),
        "[profile deploy]\nrole_arn = arn:aws:iam::123456789012:role/deploy\nsource_profile = ghost\n\
         [profile hollow]\nrole_arn = arn:aws:iam::123456789012:role/deploy\nsource_profile = empty\n\
         [profile empty]\nregion = us-east-1\n",
    )
    .unwrap();
    for (profile, source, says) in [
        ("deploy", "ghost", "is not defined"),
        ("hollow", "empty", "has no credentials"),
    ] {
        let o = aws_isolated(dir.path())
            .args(["ls", "--profile", profile, "s3://bucket/x"])
            .env("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:9")
            .env("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9")
            // A dead endpoint here tests what follows a failed request, not the reachability
            // check before the first one (tests/it/fast_fail.rs).
            .env("MOVERCTL_SKIP_REACH_CHECK", "1")
            .output()
            .unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(4), "{t}");
        assert!(
            t.contains(&format!("{profile:?}"))
                && t.contains(&format!("{source:?}"))
                && t.contains(says),
            "{t}"
        );
    }
}

/// An SSO profile (sso_session, and the legacy form) with no cached sign-in is exit 4 saying
/// `aws sso login --profile NAME`; the SSO service is never reached.
#[test]
fn an_sso_profile_without_a_sign_in_is_exit_4_saying_aws_sso_login() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("aws-config"),
        "[profile corp]\nsso_session = corp\nsso_account_id = 123456789012\nsso_role_name = Mover\n\
         region = us-east-1\n\
         [sso-session corp]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = us-east-1\n\
         sso_registration_scopes = sso:account:access\n\
         [profile legacy]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = us-east-1\n\
         sso_account_id = 123456789012\nsso_role_name = Mover\n",
    )
    .unwrap();
    for profile in ["corp", "legacy"] {
        let o = aws_isolated(dir.path())
            .args(["ls", "s3://bucket/x"])
            .env("AWS_PROFILE", profile)
            .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
            // A dead endpoint here tests what follows a failed request, not the reachability
            // check before the first one (tests/it/fast_fail.rs).
            .env("MOVERCTL_SKIP_REACH_CHECK", "1")
            .output()
            .unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(4), "{t}");
        assert!(
            t.contains(&format!("aws sso login --profile {profile}")),
            "{t}"
        );
    }
}

/// Session credentials refused mid-run (403 ExpiredToken from request 11 on, through the fault
/// proxy): they cannot be renewed (keys from variables), so the run stops within a few requests
/// per worker, exits 4 saying what to do, prints no secret, and keeps its journal; the next run
/// (the store healthy again) copies only what is left. Before issue 26 every remaining object
/// was tried and refused one by one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_session_credentials_stop_the_run_and_a_later_run_resumes() {
    use super::faults::proxy::{PFault, Proxy};
    let Some(s) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let src = local_files(dir.path(), 120, 64);
    let proxy = Proxy::start(super::s3_upstream(&s)).await;
    let conf = dir.path().join("remotes.toml");
    std::fs::write(&conf, super::proxy_remote_toml(&s, &proxy.endpoint())).unwrap();
    let p = unique("creds-expired");
    proxy.add_after("PUT", &p, "", PFault::ExpiredToken, 10, 100_000);
    let journal = dir.path().join("j.sqlite");
    let run = |conf: std::path::PathBuf, src: std::path::PathBuf, journal: std::path::PathBuf| {
        let mut c = moverctl();
        c.args(["copy", "-vvv", "--transfers", "4", "--config"])
            .arg(&conf)
            .arg(&src)
            .arg(format!("viaproxy:{}/{p}", s.bucket_b))
            .arg("--journal")
            .arg(&journal);
        c
    };
    let mut c = run(conf.clone(), src.clone(), journal.clone());
    let o = tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(4), "{t}");
    let refused = proxy
        .hits()
        .iter()
        .filter(|h| h.2 == PFault::ExpiredToken)
        .count();
    assert!(
        (1..=12).contains(&refused),
        "{refused} refused PUTs: the run must stop within a few requests per worker"
    );
    assert!(
        t.contains("stopped early") && t.contains("MOVERCTL_TEST_S3_KEY_ID"),
        "{t}"
    );
    assert_no_secret(&o, &s, &[]);
    // The next run, the store healthy again, copies what is left (and nothing twice).
    proxy.clear();
    let before = proxy.log().iter().filter(|r| r.0 == "PUT").count();
    let mut c = run(conf, src, journal);
    let o = tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let puts = proxy.log().iter().filter(|r| r.0 == "PUT").count() - before;
    assert!(
        (100..=110).contains(&puts),
        "the second run wrote {puts} objects; 110 were left (10 were copied before the refusals)"
    );
}

/// A store that refuses everything from its 41st write on (AccessDenied: a revoked key) during a
/// 300-object copy at --transfers 4: the run stops after a few refusals per worker instead of
/// trying every remaining object (304 requests before issue 26), and exits 4.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_refusing_everything_mid_run_is_not_ground_through() {
    use super::faults::proxy::{PFault, Proxy};
    let Some(s) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let src = local_files(dir.path(), 300, 16);
    let proxy = Proxy::start(super::s3_upstream(&s)).await;
    let conf = dir.path().join("remotes.toml");
    std::fs::write(&conf, super::proxy_remote_toml(&s, &proxy.endpoint())).unwrap();
    let p = unique("creds-revoked-all");
    proxy.add_after("PUT", &p, "", PFault::AccessDenied, 40, 100_000);
    let mut c = moverctl();
    c.args(["copy", "--transfers", "4", "--config"])
        .arg(&conf)
        .arg(&src)
        .arg(format!("viaproxy:{}/{p}", s.bucket_b));
    let o = tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(4), "{t}");
    let refused = proxy.hits().len();
    assert!(
        (4..=16).contains(&refused),
        "{refused} refused requests after the key was revoked (at most ~4 per worker)"
    );
    assert!(t.contains("in a row"), "{t}");
}

/// A token endpoint standing in for Microsoft Entra ID: every request is recorded (method, path,
/// body) and answered with a bearer token.
async fn token_endpoint() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut c, _)) = listener.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut tmp = [0u8; 4096];
                loop {
                    let n = c.read(&mut tmp).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&tmp[..n]);
                    let t = String::from_utf8_lossy(&buf).to_string();
                    if let Some((head, body)) = t.split_once("\r\n\r\n") {
                        let len = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if body.len() >= len {
                            break;
                        }
                    }
                }
                log.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&buf).to_string());
                let body = r#"{"access_token":"entra-access-token-never-printed","expires_in":3600,"token_type":"Bearer"}"#;
                let resp = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = c.write_all(resp.as_bytes()).await;
            });
        }
    });
    (url, seen)
}

/// Azure workload identity and a service principal's secret, chosen in a remote
/// (`credential = ...`), against a local token endpoint (AZURE_AUTHORITY_HOST): the federated
/// token file's content (or the secret) goes to the token endpoint, the bearer token it gives
/// goes to the storage endpoint (Azurite, through a proxy that records it), and neither the
/// secret, the federated token nor the access token is printed. Azurite takes no bearer token
/// over HTTP, so the listing itself is refused: exit 4.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_workload_identity_and_client_secret_get_a_token_and_use_it() {
    use super::faults::proxy::Proxy;
    let Some(s) = servers() else { return };
    let az: std::net::SocketAddr = std::env::var("MOVERCTL_TEST_AZURE_ENDPOINT")
        .unwrap()
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let federated = dir.path().join("federated-token");
    std::fs::write(&federated, "federated-jwt-never-printed").unwrap();
    for kind in ["workload_identity", "client_secret"] {
        let (authority, seen) = token_endpoint().await;
        let proxy = Proxy::start(az).await;
        let conf = dir.path().join(format!("{kind}.toml"));
        std::fs::write(
            &conf,
            format!(
                "[remotes.entra]\ntype = \"azure\"\nendpoint = \"{}/devstoreaccount1\"\naccount = \"devstoreaccount1\"\ncredential = \"{kind}\"\n",
                proxy.endpoint()
            ),
        )
        .unwrap();
        let mut c = moverctl();
        c.args(["ls", "--config"])
            .arg(&conf)
            .arg(format!("entra:{}/x", s.az_container))
            .env("AZURE_AUTHORITY_HOST", &authority)
            .env("AZURE_CLIENT_ID", "mover-client-id")
            .env("AZURE_TENANT_ID", "mover-tenant")
            .env_remove("AZURE_STORAGE_ACCOUNT_KEY")
            .env_remove("AZURE_STORAGE_SAS_TOKEN");
        if kind == "workload_identity" {
            c.env("AZURE_FEDERATED_TOKEN_FILE", &federated)
                .env_remove("AZURE_CLIENT_SECRET");
        } else {
            c.env("AZURE_CLIENT_SECRET", "client-secret-never-printed")
                .env_remove("AZURE_FEDERATED_TOKEN_FILE");
        }
        let o = tokio::task::spawn_blocking(move || c.output().unwrap())
            .await
            .unwrap();
        let t = text(&o);
        let requests = seen.lock().unwrap().clone();
        assert_eq!(requests.len(), 1, "one token request: {requests:?} {t}");
        let r = &requests[0];
        assert!(r.starts_with("POST /mover-tenant/oauth2/v2.0/token"), "{r}");
        assert!(r.contains("client_id=mover-client-id"), "{r}");
        if kind == "workload_identity" {
            assert!(
                r.contains("client_assertion=federated-jwt-never-printed"),
                "{r}"
            );
        } else {
            assert!(
                r.contains("client_secret=client-secret-never-printed"),
                "{r}"
            );
        }
        let bearer = proxy.log().iter().any(|(_, _, h)| {
            h.iter().any(|(k, v)| {
                k.eq_ignore_ascii_case("authorization")
                    && v == "Bearer entra-access-token-never-printed"
            })
        });
        assert!(
            bearer,
            "the storage request carried the token: {:?}",
            proxy.log()
        );
        assert_eq!(o.status.code(), Some(4), "{t}");
        for secret in [
            "never-printed",
            "entra-access-token",
            "federated-jwt",
            "client-secret",
        ] {
            assert!(!t.contains(secret), "{t}");
        }
    }
}

/// GCS application-default credentials: an `external_account` file (workload identity
/// federation), which object_store cannot use, is refused with exit 4 saying so and what to do;
/// nothing from the file is printed. (An `authorized_user` file is taken as application-default
/// credentials; its token exchange goes to Google's fixed OAuth endpoint, so it is tested only
/// by object_store's own tests.)
#[test]
fn a_gcs_external_account_file_is_refused_saying_what_to_do() {
    let home = tempfile::tempdir().unwrap();
    let gcloud = home.path().join(".config/gcloud");
    std::fs::create_dir_all(&gcloud).unwrap();
    std::fs::write(
        gcloud.join("application_default_credentials.json"),
        r#"{"type": "external_account", "audience": "aud-never-printed", "subject_token_type": "x", "credential_source": {"file": "/x"}}"#,
    )
    .unwrap();
    let o = moverctl()
        .args(["ls", "gs://bucket/x"])
        .env("HOME", home.path())
        .env_remove("GOOGLE_APPLICATION_CREDENTIALS")
        .env_remove("GOOGLE_SERVICE_ACCOUNT")
        .env_remove("GOOGLE_SERVICE_ACCOUNT_PATH")
        .env_remove("GCE_METADATA_HOST")
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(4), "{t}");
    assert!(
        t.contains("\"external_account\"")
            && t.contains("object_store")
            && t.contains("gcloud auth application-default login"),
        "{t}"
    );
    assert!(!t.contains("aud-never-printed"), "{t}");
}

/// `plan` warns when the move would outlast credentials that cannot be renewed (a session
/// token expiring in 30 minutes, a 12 h move), says nothing when they last, and notes a role's
/// short sessions (renewed as the run goes on).
#[test]
fn plan_warns_when_the_move_outlasts_the_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let plan = |bytes: &str, env: &[(&str, String)], profile: Option<&str>| {
        let mut c = aws_isolated(dir.path());
        c.args(["plan", "--src", "s3://bucket/p", "--from", "aws:us-east-1"])
            .args([
                "--bytes",
                bytes,
                "--objects",
                "1000",
                "--to",
                "backblaze-b2:us-west",
            ]);
        for (k, v) in env {
            c.env(k, v);
        }
        if let Some(p) = profile {
            c.env("AWS_PROFILE", p);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8_lossy(&o.stderr).to_string()
    };
    let soon = chrono::Utc::now() + chrono::Duration::minutes(30);
    let keys = vec![
        ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEKEY".to_string()),
        ("AWS_SECRET_ACCESS_KEY", "secret-never-printed".to_string()),
        ("AWS_SESSION_TOKEN", "token-never-printed".to_string()),
        ("AWS_CREDENTIAL_EXPIRATION", soon.to_rfc3339()),
    ];
    let e = plan("50TiB", &keys, None);
    assert!(
        e.contains("warning:") && e.contains("cannot be renewed") && e.contains("--profile"),
        "{e}"
    );
    assert!(
        !e.contains("never-printed") && !e.contains("AKIAEXAMPLEKEY"),
        "{e}"
    );
    // A move that ends before they expire: nothing to say.
    let e = plan("1GiB", &keys, None);
    assert!(!e.contains("warning:"), "{e}");
    std::fs::write(
        dir.path().join("aws-config"),
        "[profile mover]\nrole_arn = arn:aws:iam::123456789012:role/mover\nsource_profile = base\n\
         [profile base]\naws_access_key_id = AKIAEXAMPLEKEY\naws_secret_access_key = x\n",
    )
    .unwrap();
    let e = plan("50TiB", &[], Some("mover"));
    assert!(
        e.contains("note:") && e.contains("\"mover\"") && e.contains("renews"),
        "{e}"
    );
}

/// `--endpoint-url` and `--profile` as the AWS CLI's (issue 31): the flag's endpoint wins over
/// AWS_ENDPOINT_URL (here a dead port), and the profile named signs the requests (a profile with
/// a wrong secret is refused by Garage: exit 4). Fails on the main of 2026-12-06, which had no
/// --endpoint-url ("unexpected argument").
#[test]
fn endpoint_url_and_profile_flags_route_and_sign() {
    let Some(s) = servers() else { return };
    let (dir, _conf, prefix) = seeded(&s);
    std::fs::write(
        dir.path().join("aws-credentials"),
        format!(
            "[lab]\naws_access_key_id = {k}\naws_secret_access_key = {}\n\
             [wrong]\naws_access_key_id = {k}\naws_secret_access_key = not-the-secret\n",
            s.secret,
            k = s.key_id
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("aws-config"),
        format!(
            "[profile lab]\nregion = {r}\n[profile wrong]\nregion = {r}\n",
            r = s.region
        ),
    )
    .unwrap();
    let loc = format!("s3://{}/{prefix}", s.bucket_a);
    let run = |args: &[&str]| {
        aws_isolated(dir.path())
            .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
            .args(args)
            .output()
            .unwrap()
    };
    let o = run(&[
        "--endpoint-url",
        &s.s3_endpoint,
        "--profile",
        "lab",
        "ls",
        &loc,
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("2 objects"),
        "{}",
        text(&o)
    );
    // Global flags go after the command too; copy routes the same way.
    let out = dir.path().join("out");
    let o = run(&[
        "copy",
        "-q",
        &loc,
        out.to_str().unwrap(),
        "--endpoint-url",
        &s.s3_endpoint,
        "--profile",
        "lab",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read(out.join("x/two")).unwrap(), b"22");
    // Without the flag the environment's endpoint is used: the dead port, named.
    let o = run(&["--profile", "lab", "ls", &loc]);
    assert!(!o.status.success());
    assert!(text(&o).contains("127.0.0.1:9"), "{}", text(&o));
    // The profile signs: its wrong secret is the server's refusal, exit 4.
    let o = run(&[
        "ls",
        &loc,
        "--endpoint-url",
        &s.s3_endpoint,
        "--profile",
        "wrong",
    ]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    assert_no_secret(&o, &s, &["not-the-secret"]);
}
