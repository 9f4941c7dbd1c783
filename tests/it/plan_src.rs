//! `plan --src LOCATION` without `--bytes`/`--inventory`: the location is listed once and the plan
//! uses its real size profile; and the planned request counts against what `exec` counts.

use super::*;
use object_store::ObjectStoreExt;
use serde_json::Value;
use std::path::Path;

/// Remove everything a test wrote under `loc` on the test servers (they keep every byte).
fn clean(s: &Servers, loc: &str) {
    let store = moverctl::store::Store::open(loc, &remotes(s)).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        for k in keys_at(&store).await {
            let _ = store.inner.delete(&store.path_of(&k).unwrap()).await;
        }
    });
}

fn write(dir: &Path, name: &str, len: usize, seed: u8) {
    let p = dir.join(name);
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    let body: Vec<u8> = (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect();
    std::fs::write(p, body).unwrap();
}

fn plan_json(args: &[&str], config: Option<&Path>) -> (std::process::Output, Value) {
    let mut c = moverctl();
    if let Some(cfg) = config {
        c.arg("--config").arg(cfg);
    }
    let o = c.arg("plan").args(args).arg("--json").output().unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (o, v)
}

#[test]
fn src_folder_is_listed_and_planned_from_its_real_sizes() {
    let dir = tempfile::tempdir().unwrap();
    // 3 small files and one of 70 MiB: 1,000 + 2,000 + 3,000 + 73,400,320 bytes.
    write(dir.path(), "a/1", 1_000, 1);
    write(dir.path(), "a/2", 2_000, 2);
    write(dir.path(), "b/3", 3_000, 3);
    write(dir.path(), "big", 70 << 20, 4);
    let loc = dir.path().to_str().unwrap();
    let (o, v) = plan_json(&["--from", "onprem", "--to", "aws", "--src", loc], None);
    expect(&o, 0);
    assert_eq!(v["corpus"]["objects"], 4);
    assert_eq!(v["corpus"]["bytes"], 6_000 + (70u64 << 20));
    assert!(
        v["corpus"]["origin"]
            .as_str()
            .unwrap()
            .starts_with("listing ")
    );
    // The real profile reaches the model: the 70 MiB file is the one multipart upload.
    assert_eq!(v["candidates"][0]["upload"]["multipart_objects"], 1);
    let err = text(&o);
    assert!(
        err.contains("listed ") && err.contains("4 objects"),
        "{err}"
    );
    // Flags still win over the listing, and an empty folder is an error that says so.
    let (o, v) = plan_json(
        &[
            "--from",
            "onprem",
            "--to",
            "aws",
            "--src",
            loc,
            "--bytes",
            "1TB",
            "--objects",
            "5",
        ],
        None,
    );
    expect(&o, 0);
    assert_eq!(v["corpus"]["objects"], 5);
    let empty = tempfile::tempdir().unwrap();
    let (o, _) = plan_json(
        &[
            "--from",
            "onprem",
            "--to",
            "aws",
            "--src",
            empty.path().to_str().unwrap(),
        ],
        None,
    );
    expect(&o, 2);
    assert!(text(&o).contains("found no objects"), "{}", text(&o));
}

#[test]
fn src_on_garage_is_listed_and_recorded_in_the_saved_plan() {
    let Some(s) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    for i in 0..12 {
        write(&files, &format!("k{i:02}"), 1_000 * (i + 1), i as u8);
    }
    let cfg = dir.path().join("remotes.toml");
    std::fs::write(&cfg, remotes_toml(&s)).unwrap();
    let prefix = unique("plan-src");
    let loc = format!("garage:{}/{prefix}", s.bucket_a);
    let state = tempfile::tempdir().unwrap();
    let o = moverctl()
        .arg("--config")
        .arg(&cfg)
        .arg("copy")
        .arg(&files)
        .arg(&loc)
        .env("MOVERCTL_STATE_DIR", state.path())
        .output()
        .unwrap();
    expect(&o, 0);
    let plans = tempfile::tempdir().unwrap();
    let (o, v) = plan_json(
        &[
            "--from",
            "onprem",
            "--to",
            "backblaze-b2",
            "--src",
            &loc,
            "--save",
            "g",
            "--plans-dir",
            plans.path().to_str().unwrap(),
        ],
        Some(&cfg),
    );
    expect(&o, 0);
    // 1,000 + 2,000 + ... + 12,000 = 78,000 bytes in 12 objects.
    assert_eq!(v["corpus"]["objects"], 12);
    assert_eq!(v["corpus"]["bytes"], 78_000);
    let saved = std::fs::read_to_string(plans.path().join("g.toml")).unwrap();
    assert!(saved.contains(&format!("location = \"{loc}\"")), "{saved}");
    assert!(saved.contains("origin = \"listing garage:"), "{saved}");
    assert!(!saved.contains(&s.secret), "no secret in the plan");
    clean(&s, &loc);
}

/// Plan a saved move of `src_loc` to `dst_loc` (listing the source) and run it with `exec`;
/// the plan's `requests` and exec's counted `requests`.
fn planned_and_counted(
    cfg: &Path,
    src_loc: &str,
    dst_loc: &str,
    ranged: bool,
    server_side: bool,
) -> (Value, Value) {
    let plans = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let mut args = vec![
        "--from",
        "onprem",
        "--to",
        "onprem",
        "--src",
        src_loc,
        "--dst",
        dst_loc,
        "--multipart-threshold",
        "8MiB",
        "--part-size",
        "5MiB",
        "--save",
        "m",
        "--plans-dir",
        plans.path().to_str().unwrap(),
    ];
    if ranged {
        args.push("--ranged-reads");
    }
    if !server_side {
        args.push("--no-server-side");
    }
    let (o, v) = plan_json(&args, Some(cfg));
    expect(&o, 0);
    assert_eq!(v["candidates"][0]["server_side"], server_side, "{v}");
    let mut exec = moverctl();
    exec.arg("--config").arg(cfg).args(["exec", "--json"]);
    if ranged {
        exec.arg("--ranged-reads");
    }
    if !server_side {
        exec.arg("--no-server-side");
    }
    let o = exec
        .arg(plans.path().join("m.toml"))
        .env("MOVERCTL_STATE_DIR", state.path())
        .output()
        .unwrap();
    expect(&o, 0);
    let summary: Value =
        serde_json::from_str(String::from_utf8_lossy(&o.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(summary["copied"]["objects"], 32);
    (
        v["candidates"][0]["requests"].clone(),
        summary["requests"].clone(),
    )
}

// 30 objects of 16 KiB and two of 20 MiB and 20 MiB + 1 byte, written to Garage in 5 MiB parts
// (so their ETags are multipart ones), moved Garage -> Garage with an 8 MiB threshold and 5 MiB
// parts. Planned by hand: 1 LIST page each side; one GET per object = 32 (ranged: 30 + 4 + 5 =
// 39); PUTs 30 + (4 + 2) + (5 + 2) = 43; one HEAD of part 1 per multipart source object = 2;
// no HEAD at the destination (the PUT's MD5 ETag and the multipart ETag verify the writes).
// exec counts source and destination HEADs in one `head` counter.
// Both ends are buckets of one Garage, so by default plan and exec copy on the server: no GET;
// 32 CopyObject (Garage keeps a copied object's parts, so each multipart object is one
// CopyObject too: the catalog's `copy_keeps_multipart_etag` for onprem) = 32 PUT-class requests;
// the same 2 HEADs of part 1 and one HEAD of each small object (30: a CopyObject that replaces
// the metadata must know the source's). `--no-server-side` plans and runs the streamed move above.
#[test]
fn planned_requests_equal_what_exec_counts_on_garage() {
    let Some(s) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    for i in 0..30 {
        write(&files, &format!("small/{i:02}"), 16 << 10, i as u8);
    }
    write(&files, "big/1", 20 << 20, 100);
    write(&files, "big/2", (20 << 20) + 1, 101);
    let cfg = dir.path().join("remotes.toml");
    std::fs::write(&cfg, remotes_toml(&s)).unwrap();
    let prefix = unique("plan-requests");
    let src = format!("garage:{}/{prefix}", s.bucket_a);
    let state = tempfile::tempdir().unwrap();
    let o = moverctl()
        .arg("--config")
        .arg(&cfg)
        .args([
            "copy",
            "--multipart-threshold",
            "8MiB",
            "--part-size",
            "5MiB",
        ])
        .arg(&files)
        .arg(&src)
        .env("MOVERCTL_STATE_DIR", state.path())
        .output()
        .unwrap();
    expect(&o, 0);
    for (ranged, server_side, gets, puts) in [
        (false, false, 32, 43),
        (true, false, 39, 43),
        (false, true, 0, 32),
    ] {
        let dst = format!("garage:{}/{prefix}-{ranged}-{server_side}", s.bucket_b);
        let (plan, run) = planned_and_counted(&cfg, &src, &dst, ranged, server_side);
        assert_eq!(plan["source_list"], 1);
        assert_eq!(plan["destination_list"], 1);
        assert_eq!(plan["source_get"], gets, "ranged {ranged}");
        assert_eq!(plan["destination_put"], puts, "server-side {server_side}");
        // One HEAD of part 1 per multipart source; copied on the server, one HEAD of each
        // small object too (its CopyObject replaces the metadata with the source's).
        assert_eq!(plan["source_head"], if server_side { 32 } else { 2 });
        assert_eq!(plan["destination_head"], 0);
        assert_eq!(run["list_source"], plan["source_list"], "ranged {ranged}");
        assert_eq!(run["list_destination"], plan["destination_list"]);
        assert_eq!(run["get"], plan["source_get"], "ranged {ranged}: {run}");
        assert_eq!(run["put"], plan["destination_put"], "{run}");
        assert_eq!(
            run["head"].as_u64().unwrap(),
            plan["source_head"].as_u64().unwrap() + plan["destination_head"].as_u64().unwrap(),
            "{run}"
        );
        clean(&s, &dst);
    }
    clean(&s, &src);
}
