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
        t.contains("PUT /") && t.contains("503 (the store asks to slow down); failed attempt 1"),
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
    assert!(!text(&o).contains("failed attempt"), "{}", text(&o));
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
