//! Every command's JSON output against the schemas in `docs/json.md` (issue 17: one schema).
//! The schemas are read from the document itself, so a field added to the output without the
//! document (where `additionalProperties` is false), or documented but not printed, fails here.

use super::{expect, servers, text};
use serde_json::Value;
use std::collections::BTreeMap;

/// The JSON Schema blocks of docs/json.md, by `$id`.
pub(super) fn schemas() -> BTreeMap<String, Value> {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/json.md"),
    )
    .unwrap();
    let mut out = BTreeMap::new();
    let mut block: Option<String> = None;
    for line in doc.lines() {
        match (&mut block, line.trim_end()) {
            (None, "```json") => block = Some(String::new()),
            (Some(b), "```") => {
                let v: Value = serde_json::from_str(b).unwrap_or_else(|e| {
                    panic!("docs/json.md: a schema block does not parse: {e}\n{b}")
                });
                let id = v["$id"]
                    .as_str()
                    .expect("every block has an $id")
                    .to_string();
                out.insert(id, v);
                block = None;
            }
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            _ => {}
        }
    }
    out
}

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "integer" => v.is_u64() || v.is_i64(),
        "number" => v.is_number(),
        _ => panic!("unknown type {t}"),
    }
}

/// The subset of JSON Schema the document uses: type, required, properties,
/// additionalProperties (false), items, enum, and `$ref` to another block's `$id`.
fn check(
    schema: &Value,
    v: &Value,
    at: &str,
    all: &BTreeMap<String, Value>,
    errs: &mut Vec<String>,
) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let target = all.get(r).unwrap_or_else(|| panic!("no schema {r}"));
        return check(target, v, at, all, errs);
    }
    if let Some(t) = schema.get("type") {
        let ok = match t {
            Value::String(t) => type_ok(t, v),
            Value::Array(ts) => ts.iter().any(|t| type_ok(t.as_str().unwrap(), v)),
            _ => true,
        };
        if !ok {
            errs.push(format!("{at}: {v} is not of type {t}"));
            return;
        }
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array)
        && !e.contains(v)
    {
        errs.push(format!("{at}: {v} is not one of {e:?}"));
    }
    if let Some(obj) = v.as_object() {
        for r in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let r = r.as_str().unwrap();
            if !obj.contains_key(r) {
                errs.push(format!("{at}: missing {r}"));
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        for (k, val) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(s) => check(s, val, &format!("{at}.{k}"), all, errs),
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    errs.push(format!("{at}: {k} is not documented"))
                }
                None => {}
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), v.as_array()) {
        for (i, x) in arr.iter().enumerate() {
            check(items, x, &format!("{at}[{i}]"), all, errs);
        }
    }
}

/// Checks one document or line: it must carry `schema`, and match the block for
/// `schema#event` (or `schema`). Returns the `$id` it was checked against.
pub(super) fn validate(v: &Value, all: &BTreeMap<String, Value>) -> Result<String, Vec<String>> {
    let Some(schema) = v.get("schema").and_then(Value::as_str) else {
        return Err(vec![format!("no schema field: {v}")]);
    };
    let id = match v.get("event").and_then(Value::as_str) {
        Some(e) if all.contains_key(&format!("{schema}#{e}")) => format!("{schema}#{e}"),
        Some("not_deleted") => format!("{schema}#would_delete"),
        _ => schema.to_string(),
    };
    let Some(s) = all.get(&id) else {
        return Err(vec![format!("no schema {id} in docs/json.md for {v}")]);
    };
    let mut errs = Vec::new();
    check(s, v, &id, all, &mut errs);
    if errs.is_empty() { Ok(id) } else { Err(errs) }
}

/// Every line of stdout (a stream) or the whole of it (a pretty-printed document).
fn documents(o: &std::process::Output) -> Vec<Value> {
    let out = String::from_utf8_lossy(&o.stdout);
    if let Ok(v) = serde_json::from_str::<Value>(&out) {
        return vec![v];
    }
    out.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{}", text(o))))
        .collect()
}

#[test]
fn the_validator_rejects_what_the_document_does_not_allow() {
    let all = schemas();
    let good = serde_json::json!({"schema": "moverctl.ls/1", "event": "summary", "objects": 1,
                                  "bytes": 2, "refused": {"objects": 0}});
    assert_eq!(validate(&good, &all), Ok("moverctl.ls/1#summary".into()));
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("bytes");
    assert!(validate(&missing, &all).is_err());
    let mut extra = good.clone();
    extra["size"] = 2.into();
    assert!(validate(&extra, &all).is_err());
    let mut wrong = good.clone();
    wrong["bytes"] = "2".into();
    assert!(validate(&wrong, &all).is_err());
    assert!(validate(&serde_json::json!({"objects": 1}), &all).is_err());
}

/// ls, copy, exec-less runs, sync (also a dry run with deletes, and a failed run), status, plan,
/// providers and probe: every line each prints matches docs/json.md.
#[test]
fn every_command_prints_json_as_documented() {
    let all = schemas();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let state = root.join("state");
    let src = root.join("src");
    std::fs::create_dir_all(src.join("d")).unwrap();
    std::fs::write(src.join("a"), "aaa").unwrap();
    std::fs::write(src.join("d/b"), "bbbb").unwrap();
    let fifo = std::ffi::CString::new(src.join("pipe").display().to_string()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let mirror = root.join("mirror");
    std::fs::create_dir_all(&mirror).unwrap();
    std::fs::write(mirror.join("only-here"), "x").unwrap();
    let (s, m, c) = (
        src.display().to_string(),
        mirror.display().to_string(),
        root.join("copy").display().to_string(),
    );
    let run = |args: &[&str]| {
        super::moverctl()
            .args(args)
            .env("MOVERCTL_STATE_DIR", &state)
            // A dead endpoint here tests what follows a failed request, not the reachability
            // check before the first one (tests/it/fast_fail.rs).
            .env("MOVERCTL_SKIP_REACH_CHECK", "1")
            .output()
            .unwrap()
    };
    let mut seen = std::collections::BTreeSet::new();
    let mut cases: Vec<(Vec<&str>, Option<i32>)> = vec![
        (vec!["ls", "--json", &s], Some(3)),
        (vec!["copy", "--json", "--dry-run", &s, &c], Some(3)),
        (vec!["copy", "--json", &s, &c], Some(3)),
        (vec!["copy", "--json", &s, &c], Some(3)),
        (vec!["status", "--json", "--src", &s, "--dst", &c], Some(0)),
        (vec!["status", "--json"], Some(0)),
        (
            vec![
                "sync",
                "--json",
                "--dry-run",
                "--delete",
                "--max-delete",
                "100%",
                &s,
                &m,
            ],
            Some(3),
        ),
        (vec!["sync", "--json", &s, &m], Some(3)),
        (vec!["plan", "--example", "--json"], Some(0)),
        // Every candidate with a waiver checked, its options during the move and its feed.
        (
            vec![
                "plan",
                "--from",
                "gcp",
                "--to",
                "cloudflare-r2,azure",
                "--bytes",
                "1PB",
                "--objects",
                "1M",
                "--compute-at",
                "coreweave",
                "--reads-per-month",
                "1",
                "--gpu-hourly",
                "100",
                "--exit-waiver",
                "--store-read-rate",
                "azure=1Gbps",
                "--no-probe",
                "--json",
            ],
            Some(0),
        ),
        (vec!["providers", "--json"], Some(0)),
        (vec!["providers", "show", "aws", "--json"], Some(0)),
        (vec!["providers", "show", "backblaze-b2", "--json"], Some(0)),
    ];
    // A sync that fails before it starts copying (its destination refuses the listing).
    let bad = root.join("bad.toml");
    std::fs::write(
        &bad,
        "[remotes.nowhere]\ntype = \"s3\"\nendpoint = \"http://127.0.0.1:9\"\nregion = \"x\"\nanonymous = true\n",
    )
    .unwrap();
    let bad_s = bad.display().to_string();
    cases.push((
        vec![
            "sync",
            "--json",
            "--retry-timeout",
            "1s",
            "--config",
            &bad_s,
            &s,
            "nowhere:b/p",
        ],
        None,
    ));
    let probe_target;
    if let Some(sv) = servers() {
        let conf = root.join("remotes.toml");
        std::fs::write(&conf, super::remotes_toml(&sv)).unwrap();
        probe_target = (
            conf.display().to_string(),
            format!("garage:{}/{}", sv.bucket_b, super::unique("json-probe")),
        );
        cases.push((
            vec![
                "probe",
                "--json",
                "--config",
                &probe_target.0,
                &probe_target.1,
            ],
            Some(0),
        ));
    }
    for (args, code) in &cases {
        let o = run(args);
        if let Some(c) = code {
            expect(&o, *c);
        }
        let docs = documents(&o);
        assert!(!docs.is_empty(), "{args:?} printed no JSON: {}", text(&o));
        for d in docs {
            match validate(&d, &all) {
                Ok(id) => {
                    seen.insert(id);
                }
                Err(e) => panic!("{args:?}: {}\n{d}", e.join("\n")),
            }
        }
    }
    for id in [
        "moverctl.ls/1#object",
        "moverctl.ls/1#summary",
        "moverctl.copy/1#would_copy",
        "moverctl.copy/1#copied",
        "moverctl.copy/1#skipped",
        "moverctl.copy/1#refused",
        "moverctl.copy/1#summary",
        "moverctl.sync/1#would_delete",
        "moverctl.sync/1#summary",
        "moverctl.status/1",
        "moverctl.status-runs/1",
        "moverctl.plan/1",
        "moverctl.providers/1",
    ] {
        assert!(
            seen.contains(id),
            "no output was checked against {id}: {seen:?}"
        );
    }
}
