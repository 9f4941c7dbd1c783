//! `ls` in words: an object's line, a folder's, a bucket's, a remote's, and the totals.

use crate::job::ls::{RemoteRow, ShallowCount};
use crate::store::buckets::Bucket;
use crate::store::list::Entry;
use crate::units::fmt_bytes;
use crate::words::count;

/// `      1234  2026-12-06 05:48:46  key`.
pub fn object(e: &Entry) -> String {
    format!(
        "{:>14}  {}  {}",
        e.size,
        e.last_modified.format("%Y-%m-%d %H:%M:%S"),
        e.key
    )
}

/// A folder in the columns of [`object`]: `        folder                       a/`.
pub fn folder(key: &str) -> String {
    format!("{:>14}  {:19}  {key}", "folder", "")
}

/// `2026-12-06 05:48:46  NAME` (when the store says it was made: S3's and GCS's RFC 3339,
/// Azure's RFC 1123 `Last-Modified`, in one form).
pub fn bucket(b: &Bucket) -> String {
    let when = b
        .created
        .as_deref()
        .map(|c| {
            chrono::DateTime::parse_from_rfc3339(c)
                .or_else(|_| chrono::DateTime::parse_from_rfc2822(c))
                .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
                .unwrap_or_else(|_| c.to_string())
        })
        .unwrap_or_default();
    format!("{when:<19}  {}", b.name)
}

/// `NAME:  TYPE  PROVIDER  WHERE`, aligned (names first, so a line's start is a location).
pub fn remotes(rows: &[RemoteRow]) -> String {
    if rows.is_empty() {
        return format!(
            "no remotes configured (a remotes file: --config FILE, MOVERCTL_CONFIG or {}); \
             s3://, gs://, az:// and local paths work without one\n",
            crate::store::config::default_path()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "~/.config/moverctl/remotes.toml".into())
        );
    }
    let w = rows.iter().map(|r| r.name.len()).max().unwrap_or(0) + 1;
    let mut out = String::new();
    for r in rows {
        out.push_str(&format!(
            "{:<w$}  {:<6} {:<14} {}\n",
            format!("{}:", r.name),
            r.kind,
            r.provider.as_deref().unwrap_or("-"),
            r.at.as_deref()
                .unwrap_or("(the provider's default endpoint)")
        ));
    }
    out
}

/// The last line of a full listing (and all of `--summary`): objects and bytes.
pub fn totals(objects: u64, bytes: u64, refused: u64) -> String {
    format!(
        "{}, {} ({bytes} bytes){}",
        count(objects, "object"),
        fmt_bytes(bytes),
        if refused > 0 {
            format!(", {} refused", count(refused, "key"))
        } else {
            String::new()
        }
    )
}

/// The last line of a listing down to a depth.
pub fn shallow_totals(n: &ShallowCount, depth: usize) -> String {
    format!(
        "{} and {} down to depth {depth}; {} in the objects shown (ls --summary counts \
         everything under the location){}",
        count(n.objects, "object"),
        count(n.folders, "folder"),
        fmt_bytes(n.bytes),
        if n.refused > 0 {
            format!(", {} refused", count(n.refused, "key"))
        } else {
            String::new()
        }
    )
}
