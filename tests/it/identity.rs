//! Never pay twice (issue 17): the journal and the lock of a pair are keyed by what the locations
//! resolve to, not by how they are spelled, and `copy` skips objects another tool already copied
//! identically. Each test fails when the journal or the lock is keyed by the spelling again, or
//! when `copy` stops comparing MD5 ETags.

use super::stores::raw_s3_put;
use super::{expect, remotes_toml, servers, summary, text, unique};
use moverctl::store::Store;
use moverctl::store::config::Remotes;
use std::path::Path;

fn tree(root: &Path) {
    std::fs::create_dir_all(root.join("d")).unwrap();
    for (k, n) in [("a", 3), ("b", 700), ("d/c", 70_000)] {
        std::fs::write(root.join(k), vec![b'x'; n]).unwrap();
    }
}

fn run(cwd: &Path, state: &Path, args: &[&str]) -> std::process::Output {
    super::moverctl()
        .current_dir(cwd)
        .args(args)
        .env("MOVERCTL_STATE_DIR", state)
        .output()
        .unwrap()
}

/// `copy data out`, then `status` and a second `copy` spelled `./data/` and `/abs/out/`: one
/// journal, found by every spelling, and the second copy copies nothing.
#[test]
fn any_spelling_of_a_pair_finds_the_same_journal() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let state = cwd.join("state");
    tree(&cwd.join("data"));
    expect(&run(&cwd, &state, &["copy", "data", "out"]), 0);

    let abs_out = format!("{}/", cwd.join("out").display());
    let o = run(
        &cwd,
        &state,
        &["status", "--src", "./data/", "--dst", &abs_out, "--json"],
    );
    expect(&o, 0);
    let v: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&o.stdout).trim()).unwrap();
    assert_eq!(v["verified"]["objects"], 3, "{v}");

    let o = run(&cwd, &state, &["copy", "./data/", &abs_out, "--json"]);
    expect(&o, 0);
    let s = summary(&o);
    assert_eq!(s["copied"]["objects"], 0, "{s}");
    assert_eq!(s["skipped"]["objects"], 3, "{s}");
    let journals: Vec<_> = std::fs::read_dir(state.join("journals"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "sqlite"))
        .collect();
    assert_eq!(journals.len(), 1, "one journal for every spelling");
}

/// A run holding the lock of `data -> out` keeps out a `copy` and a `sync` of
/// `/abs/data/ -> ./out/` (exit 6, nothing copied).
#[test]
fn any_spelling_of_a_pair_takes_the_same_lock() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let state = cwd.join("state");
    tree(&cwd.join("data"));
    std::fs::create_dir(cwd.join("out")).unwrap();
    let none = Remotes::parse("none.toml", "").unwrap();
    let id = |p: &Path| {
        Store::open(&p.display().to_string(), &none)
            .unwrap()
            .identity
    };
    // The lock as a run spelled `data out` from `cwd` takes it.
    let lock = {
        let _g = std::env::var("MOVERCTL_STATE_DIR");
        let j =
            moverctl::journal::default_path(&state, &id(&cwd.join("data")), &id(&cwd.join("out")));
        state.join(format!(
            "sync-{}.lock",
            j.file_stem().unwrap().to_string_lossy()
        ))
    };
    std::fs::create_dir_all(&state).unwrap();
    let (_held, _) = moverctl::lock::RunLock::acquire(&lock, "copy data out (test)").unwrap();
    let abs_data = format!("{}/", cwd.join("data").display());
    for cmd in ["copy", "sync"] {
        let o = run(&cwd, &state, &[cmd, &abs_data, "./out/"]);
        assert_eq!(o.status.code(), Some(6), "{cmd}: {}", text(&o));
        assert!(text(&o).contains("another moverctl run"), "{}", text(&o));
    }
    assert!(!cwd.join("out/a").exists(), "nothing was copied");
}

/// A destination seeded by another tool (plain single PUTs, as rclone or `aws s3 cp` make, with
/// MD5 ETags and no moverctl metadata) from a source also written by another tool: the next
/// `copy` proves every object equal by the two MD5 ETags and makes zero PUTs and zero GETs.
#[test]
fn copy_skips_what_another_tool_already_copied() {
    let Some(s) = servers() else { return };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let p = unique("other-tool");
    let objects: Vec<(String, Vec<u8>)> = (0..5)
        .map(|i| {
            (
                format!("{p}/k{i}"),
                format!("body {i} ").repeat(100 + i).into_bytes(),
            )
        })
        .collect();
    rt.block_on(async {
        for (k, b) in &objects {
            raw_s3_put(&s, &s.bucket_a, k, b).await;
            raw_s3_put(&s, &s.bucket_b, k, b).await;
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("remotes.toml");
    std::fs::write(&conf, remotes_toml(&s)).unwrap();
    let o = super::moverctl()
        .args(["copy", "--json", "--config"])
        .arg(&conf)
        .arg(format!("garage:{}/{p}", s.bucket_a))
        .arg(format!("garage:{}/{p}", s.bucket_b))
        .env("MOVERCTL_STATE_DIR", dir.path().join("state"))
        .output()
        .unwrap();
    expect(&o, 0);
    let v = summary(&o);
    assert_eq!(v["copied"]["objects"], 0, "{v}");
    assert_eq!(v["skipped"]["objects"], 5, "{v}");
    assert_eq!(v["requests"]["put"], 0, "{v}");
    assert_eq!(v["requests"]["get"], 0, "{v}");
    assert_eq!(v["reasons"]["same md5"], 5, "{v}");
}
