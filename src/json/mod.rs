//! The one JSON vocabulary of every command's output, documented in `docs/json.md` (a test runs
//! every command and checks its output against the schemas there). Every document and every
//! event line carries `schema` (`moverctl.<command>/<version>`); the same thing has the same name
//! everywhere (`bytes` for sizes in bytes, `objects` for counts, `{objects, bytes, keys}` for
//! failed and refused objects, `open_multipart_uploads`); money is a JSON number of US dollars,
//! exact to the micro-dollar.

pub mod copy;
pub mod drain;
pub mod ls;
pub mod providers;
pub mod stage;
pub mod status;
pub mod sync;

use serde_json::Value;

pub const LS: &str = "moverctl.ls/1";
pub const COPY: &str = "moverctl.copy/1";
pub const SYNC: &str = "moverctl.sync/1";
pub const STATUS: &str = "moverctl.status/1";
pub const STATUS_RUNS: &str = "moverctl.status-runs/1";
pub const SHARDS_STATUS: &str = "moverctl.shards-status/1";
pub const PROVIDERS: &str = "moverctl.providers/1";
pub const DRAIN: &str = "moverctl.drain/1";
pub const STAGE: &str = "moverctl.stage/1";

/// `v` (an object) with `schema` set.
pub fn stamp(schema: &str, mut v: Value) -> Value {
    if let Value::Object(m) = &mut v {
        m.insert("schema".into(), Value::String(schema.into()));
    }
    v
}

/// A decimal as a JSON number (exact; no float in between).
pub fn number(d: impl std::fmt::Display) -> Value {
    let s = d.to_string();
    s.parse::<serde_json::Number>()
        .map(Value::Number)
        .unwrap_or(Value::String(s))
}
