//! `ls --json` (`moverctl.ls/1`): one line per object, folder, bucket or remote, refused keys,
//! and a summary.

use super::{LS, stamp};
use crate::job::ls::RemoteRow;
use crate::store::buckets::Bucket;
use crate::store::list::Entry;
use serde_json::{Value, json};

pub fn object(e: &Entry) -> Value {
    stamp(
        LS,
        json!({"event": "object", "key": e.key, "bytes": e.size,
               "last_modified": e.last_modified.to_rfc3339(), "etag": e.e_tag}),
    )
}

pub fn folder(key: &str) -> Value {
    stamp(LS, json!({"event": "folder", "key": key}))
}

pub fn refused(key: &str, reason: &str) -> Value {
    stamp(
        LS,
        json!({"event": "refused", "key": key, "reason": reason}),
    )
}

pub fn bucket(b: &Bucket) -> Value {
    stamp(
        LS,
        json!({"event": "bucket", "name": b.name, "created": b.created}),
    )
}

pub fn remote(r: &RemoteRow) -> Value {
    stamp(
        LS,
        json!({"event": "remote", "name": r.name, "type": r.kind, "provider": r.provider,
               "at": r.at}),
    )
}

/// The summary line; `folders` only for a listing down to a depth, `buckets` only for a
/// bucket listing.
pub fn summary(objects: u64, bytes: u64, refused: u64, folders: Option<u64>) -> Value {
    let mut v = json!({"event": "summary", "objects": objects, "bytes": bytes,
                       "refused": {"objects": refused}});
    if let Some(f) = folders {
        v["folders"] = json!(f);
    }
    stamp(LS, v)
}
