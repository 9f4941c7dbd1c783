//! Which keys a run looks at, as rclone's filters choose them: globs (`--include`,
//! `--exclude`, also read from files), sizes, ages, and a list of keys (`--files-from`).
//!
//! Globs follow rclone's rules:
//!
//! | pattern | matches |
//! |---|---|
//! | `*.safetensors` (no `/`) | the last segment, at any depth: `a.safetensors`, `ckpt/7/a.safetensors` |
//! | `ckpt/*.bin` (a `/` inside) | the end of the key, at any depth: `ckpt/a.bin`, `run1/ckpt/a.bin` |
//! | `/ckpt/*.bin` (leading `/`) | from the root only: `ckpt/a.bin` |
//! | `*`, `?` | anything but `/` |
//! | `**` | anything, `/` included |
//! | `logs/` (trailing `/`) | everything under such a folder (`logs/**`) |
//! | `{a,b}`, `[a-z]` | alternatives, classes |
//!
//! A key is taken when it matches some `--include` (if there are any) and no `--exclude`
//! (rclone's order of mixed rules is not kept: in moverctl an exclude always wins).
//!
//! The same filters apply to keys found only at the destination: outside them, a key is never a
//! deletion candidate.

use crate::store::list::Entry;
use chrono::{DateTime, Utc};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Turn an rclone-style pattern into a globset glob with `/` as a literal separator.
pub fn glob_of(pattern: &str) -> String {
    let p = pattern.trim();
    let p = if let Some(dir) = p.strip_suffix('/') {
        format!("{dir}/**")
    } else {
        p.to_string()
    };
    match p.strip_prefix('/') {
        Some(anchored) => anchored.to_string(),
        None if p.starts_with("**") => p,
        None => format!("**/{p}"),
    }
}

/// Builds a set from rclone-style patterns (empty: None). `flag` names them in errors.
pub fn globs(flag: &str, patterns: &[String]) -> Result<Option<globset::GlobSet>, String> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut b = globset::GlobSetBuilder::new();
    for p in patterns {
        let g = globset::GlobBuilder::new(&glob_of(p))
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| format!("{flag} {p:?}: {e}"))?;
        b.add(g);
    }
    b.build().map(Some).map_err(|e| format!("{flag}: {e}"))
}

/// Patterns from a file, one a line; blank lines and lines starting with `#` or `;` are
/// skipped (rclone's `--include-from` / `--exclude-from` format).
pub fn patterns_from(flag: &str, path: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{flag} {}: cannot read it: {e}", path.display()))?;
    Ok(text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#') && !l.starts_with(';'))
        .map(str::to_string)
        .collect())
}

/// Size, age and key-list filters (the globs stay in `CopyOptions::include`/`exclude`).
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Objects smaller than this are left out.
    pub min_size: Option<u64>,
    /// Objects larger than this are left out.
    pub max_size: Option<u64>,
    /// `--max-age`: objects modified before this are left out.
    pub modified_after: Option<DateTime<Utc>>,
    /// `--min-age`: objects modified after this are left out.
    pub modified_before: Option<DateTime<Utc>>,
    pub files_from: Option<Arc<FilesFrom>>,
}

impl Selection {
    /// The same selection with its own `--files-from` reader, for a second listing read at the
    /// same time (the reader follows one listing's key order).
    pub fn independent(&self) -> Selection {
        let mut s = self.clone();
        s.files_from = self
            .files_from
            .as_ref()
            .and_then(|f| f.reopen().ok())
            .map(Arc::new);
        s
    }

    /// Whether `e` is selected. Called in key order (the join's), which `--files-from` relies on.
    pub fn admits(&self, e: &Entry) -> bool {
        if self.min_size.is_some_and(|m| e.size < m) || self.max_size.is_some_and(|m| e.size > m) {
            return false;
        }
        if self.modified_after.is_some_and(|t| e.last_modified < t)
            || self.modified_before.is_some_and(|t| e.last_modified > t)
        {
            return false;
        }
        self.files_from.as_ref().is_none_or(|f| f.contains(&e.key))
    }
}

/// `--files-from FILE`: the keys to copy, one a line, sorted in byte order (as `moverctl ls`
/// prints them, or `LC_ALL=C sort`), read alongside the sorted listing so memory does not grow
/// with the file. Lines may be plain keys (a leading `/` or `./` is dropped; blank lines and
/// `#`/`;` comments skipped) or JSON objects with a `key` (`moverctl ls --json`; lines without
/// one, like its summary, are skipped).
pub struct FilesFrom {
    path: PathBuf,
    cursor: Mutex<Cursor>,
}

struct Cursor {
    lines: std::io::Lines<std::io::BufReader<std::fs::File>>,
    /// The smallest listed key not yet passed by the join.
    head: Option<String>,
}

impl std::fmt::Debug for FilesFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FilesFrom({})", self.path.display())
    }
}

/// The key a line names, if any.
fn key_of(line: &str) -> Option<String> {
    let t = line.trim_end_matches(['\r', '\n']);
    if t.trim().is_empty() || t.starts_with('#') || t.starts_with(';') {
        return None;
    }
    if t.trim_start().starts_with('{') {
        let v: serde_json::Value = serde_json::from_str(t).ok()?;
        return v.get("key")?.as_str().map(str::to_string);
    }
    let k = t.strip_prefix("./").unwrap_or(t);
    Some(k.trim_start_matches('/').to_string())
}

impl FilesFrom {
    /// Opens the file and checks, in one streaming pass, that its keys are in byte order.
    /// Returns the list and how many keys it names.
    pub fn open(path: &Path) -> Result<(FilesFrom, u64), String> {
        let shown = path.display();
        let open = || {
            std::fs::File::open(path)
                .map(std::io::BufReader::new)
                .map_err(|e| format!("--files-from {shown}: cannot read it: {e}"))
        };
        let mut prev: Option<String> = None;
        let mut n = 0u64;
        for (i, line) in open()?.lines().enumerate() {
            let line = line.map_err(|e| format!("--files-from {shown}: line {}: {e}", i + 1))?;
            let Some(k) = key_of(&line) else { continue };
            if let Some(p) = &prev
                && p.as_bytes() > k.as_bytes()
            {
                return Err(format!(
                    "--files-from {shown}: line {}: {k:?} comes after {p:?}; the list must be in \
                     byte order (sort it with `LC_ALL=C sort -u`, or write it with `moverctl ls`)",
                    i + 1
                ));
            }
            n += 1;
            prev = Some(k);
        }
        let mut c = Cursor {
            lines: open()?.lines(),
            head: None,
        };
        c.advance();
        Ok((
            FilesFrom {
                path: path.to_path_buf(),
                cursor: Mutex::new(c),
            },
            n,
        ))
    }

    /// A new reader of the same (already checked) file, from its start.
    fn reopen(&self) -> Result<FilesFrom, String> {
        let file = std::fs::File::open(&self.path)
            .map_err(|e| format!("--files-from {}: {e}", self.path.display()))?;
        let mut c = Cursor {
            lines: std::io::BufReader::new(file).lines(),
            head: None,
        };
        c.advance();
        Ok(FilesFrom {
            path: self.path.clone(),
            cursor: Mutex::new(c),
        })
    }

    /// Whether the list names `key`; keys must be asked in non-decreasing order.
    pub fn contains(&self, key: &str) -> bool {
        let mut c = self.cursor.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(h) = &c.head {
            match h.as_bytes().cmp(key.as_bytes()) {
                std::cmp::Ordering::Less => c.advance(),
                std::cmp::Ordering::Equal => return true,
                std::cmp::Ordering::Greater => return false,
            }
        }
        false
    }
}

impl Cursor {
    fn advance(&mut self) {
        self.head = None;
        for line in self.lines.by_ref() {
            let Ok(line) = line else { return };
            if let Some(k) = key_of(&line) {
                self.head = Some(k);
                return;
            }
        }
    }
}

/// `--max-age`/`--min-age`: a duration back from `now` (`90m`, `36h`, `7d`, `2w`; a bare number
/// is seconds, as in rclone) or a date (`2026-11-01`, `2026-11-01T08:00:00Z`).
pub fn parse_age(flag: &str, s: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let t = s.trim();
    if let Ok(d) = chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).expect("midnight").and_utc());
    }
    if let Ok(d) = DateTime::parse_from_rfc3339(t) {
        return Ok(d.with_timezone(&Utc));
    }
    let dur = if t.chars().all(|c| c.is_ascii_digit()) && !t.is_empty() {
        std::time::Duration::from_secs(t.parse().map_err(|e| format!("{flag} {t:?}: {e}"))?)
    } else {
        humantime::parse_duration(t).map_err(|e| {
            format!("{flag} {t:?}: {e} (give a duration such as 36h, 7d, 2w, or a date 2026-11-01)")
        })?
    };
    let dur = chrono::Duration::from_std(dur).map_err(|e| format!("{flag} {t:?}: {e}"))?;
    now.checked_sub_signed(dur)
        .ok_or_else(|| format!("{flag} {t:?} is too long ago"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(p: &[&str]) -> globset::GlobSet {
        let v: Vec<String> = p.iter().map(|s| s.to_string()).collect();
        globs("--include", &v).unwrap().unwrap()
    }

    /// rclone's glob rules (the table in the module docs), one row each.
    #[test]
    fn globs_match_as_rclone_filters_do() {
        let any = set(&["*.safetensors"]);
        for k in ["a.safetensors", "ckpt/7/a.safetensors"] {
            assert!(any.is_match(k), "{k}");
        }
        assert!(!any.is_match("a.safetensors/x"));
        let end = set(&["ckpt/*.bin"]);
        assert!(end.is_match("ckpt/a.bin") && end.is_match("run1/ckpt/a.bin"));
        assert!(!end.is_match("ckpt/x/a.bin"));
        let root = set(&["/ckpt/*.bin"]);
        assert!(root.is_match("ckpt/a.bin") && !root.is_match("run1/ckpt/a.bin"));
        let deep = set(&["/ckpt/**"]);
        assert!(deep.is_match("ckpt/a/b/c") && !deep.is_match("x/ckpt/a"));
        let dir = set(&["logs/"]);
        assert!(dir.is_match("logs/a") && dir.is_match("x/logs/a/b") && !dir.is_match("logs"));
        let alt = set(&["*.{bin,pt}"]);
        assert!(alt.is_match("a/b.pt") && !alt.is_match("a/b.txt"));
        assert!(set(&["file?.txt"]).is_match("d/file1.txt"));
        assert!(!set(&["a*c"]).is_match("a/c"), "* does not cross /");
    }

    fn entry(key: &str, size: u64, modified: &str) -> Entry {
        Entry {
            key: key.into(),
            size,
            last_modified: DateTime::parse_from_rfc3339(modified).unwrap().into(),
            e_tag: None,
        }
    }

    #[test]
    fn sizes_and_ages_select() {
        let now: DateTime<Utc> = DateTime::parse_from_rfc3339("2026-12-01T12:00:00Z")
            .unwrap()
            .into();
        let s = Selection {
            min_size: Some(10),
            max_size: Some(100),
            modified_after: Some(parse_age("--max-age", "2d", now).unwrap()),
            modified_before: Some(parse_age("--min-age", "3600", now).unwrap()),
            files_from: None,
        };
        assert!(s.admits(&entry("a", 10, "2026-12-01T10:00:00Z")));
        assert!(s.admits(&entry("a", 100, "2026-11-29T12:00:00Z")));
        assert!(
            !s.admits(&entry("a", 9, "2026-12-01T10:00:00Z")),
            "too small"
        );
        assert!(
            !s.admits(&entry("a", 101, "2026-12-01T10:00:00Z")),
            "too large"
        );
        assert!(
            !s.admits(&entry("a", 50, "2026-11-29T11:59:59Z")),
            "too old"
        );
        assert!(
            !s.admits(&entry("a", 50, "2026-12-01T11:30:00Z")),
            "too young"
        );
        assert_eq!(
            parse_age("--max-age", "2026-11-01", now)
                .unwrap()
                .to_rfc3339(),
            "2026-11-01T00:00:00+00:00"
        );
        assert!(parse_age("--max-age", "soon", now).is_err());
    }

    #[test]
    fn files_from_is_read_alongside_the_listing() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("list");
        std::fs::write(
            &p,
            "# wanted\n/a\n./b/c\n\n{\"key\":\"b/d\",\"size\":1}\n{\"objects\":3}\nz\n",
        )
        .unwrap();
        let (f, n) = FilesFrom::open(&p).unwrap();
        assert_eq!(n, 4);
        let got: Vec<&str> = ["a", "aa", "b/c", "b/d", "c", "z", "zz"]
            .into_iter()
            .filter(|k| f.contains(k))
            .collect();
        assert_eq!(got, ["a", "b/c", "b/d", "z"]);
        std::fs::write(&p, "b\na\n").unwrap();
        let e = FilesFrom::open(&p).unwrap_err();
        assert!(e.contains("line 2") && e.contains("LC_ALL=C sort"), "{e}");
    }
}
