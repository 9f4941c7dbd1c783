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
