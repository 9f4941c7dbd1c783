//! The resume journal: one SQLite database per run (source + destination), crash-safe (WAL, each
//! batch one transaction) and inspectable with any SQLite client:
//! `sqlite3 ~/.local/state/moverctl/journals/<id>.sqlite 'select key, state, verified_by from objects'`.
//!
//! An object row is written when an object starts (`copying`), and replaced when it is verified
//! (`verified`) or given up (`failed`). Only `verified` rows let a later run skip an object, and
//! only while the source still has the same size and ETag and the destination the same ETag.
//! Parts of multipart uploads are recorded as they complete, for part-level resume.
//!
//! Format (version 1):
//! - `meta(key, value)`: `format` = `moverctl-journal`, `version` = `1`, `source`, `destination`,
//!   `created`.
//! - `objects(key, size, src_etag, src_mtime, state, crc64, md5, dst_etag, verified_by,
//!   attempts, error, upload_id, part_size, updated)`.
//! - `parts(key, idx, content_id, crc64, md5, size)`.
//! - `sync_candidates(key, size, last_modified, e_tag, early_fee, status)`: written by `sync`
//!   only (see `transfer::sync`, through [`CandidateSpill`]), replaced by every run; `status` is
//!   `candidate`, `kept`, `held`, `deleted` or `delete-failed`.
//!
//! All SQL on these tables lives in this folder: opening a journal and checking its `meta` rows
//! in `open`, sync's candidates in `spill`, the object and part records here; where journals
//! are kept in `paths`.

mod open;
mod paths;
mod spill;

pub use paths::{default_path, path_for, state_dir, state_dir_if_known};
pub use spill::CandidateSpill;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use std::path::{Path, PathBuf};

pub const FORMAT: &str = "moverctl-journal";

/// The multipart uploads a crash left open (answered from the partial index
/// `objects_open_uploads`, never by reading every row).
const OPEN_UPLOADS: &str = "SELECT key, upload_id FROM objects WHERE state = 'copying' AND upload_id IS NOT NULL ORDER BY key";
pub const VERSION: i64 = 1;

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal {path}: {message}")]
    Db { path: String, message: String },
    #[error(
        "journal {path} belongs to another move ({field} is {found:?}, this run's is {want:?}); give this run its own --journal"
    )]
    Mismatch {
        path: String,
        field: &'static str,
        found: String,
        want: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Copying,
    Verified,
    Failed,
}

impl State {
    fn as_str(&self) -> &'static str {
        match self {
            State::Copying => "copying",
            State::Verified => "verified",
            State::Failed => "failed",
        }
    }

    fn parse(s: &str) -> State {
        match s {
            "verified" => State::Verified,
            "failed" => State::Failed,
            _ => State::Copying,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRecord {
    pub key: String,
    pub size: u64,
    pub src_etag: Option<String>,
    pub src_mtime: Option<String>,
    pub state: State,
    pub crc64: Option<String>,
    pub md5: Option<String>,
    pub dst_etag: Option<String>,
    pub verified_by: Option<String>,
    pub attempts: u32,
    pub error: Option<String>,
    pub upload_id: Option<String>,
    pub part_size: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartRecord {
    pub idx: u32,
    pub content_id: String,
    pub crc64: String,
    pub md5: Option<String>,
    pub size: u64,
}

/// An `objects` row selected as `key, size, src_etag, src_mtime, state, crc64, md5, dst_etag,
/// verified_by, attempts, error, upload_id, part_size`.
fn record_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<ObjectRecord> {
    Ok(ObjectRecord {
        key: r.get(0)?,
        size: r.get::<_, i64>(1)? as u64,
        src_etag: r.get(2)?,
        src_mtime: r.get(3)?,
        state: State::parse(&r.get::<_, String>(4)?),
        crc64: r.get(5)?,
        md5: r.get(6)?,
        dst_etag: r.get(7)?,
        verified_by: r.get(8)?,
        attempts: r.get::<_, i64>(9)? as u32,
        error: r.get(10)?,
        upload_id: r.get(11)?,
        part_size: r.get::<_, Option<i64>>(12)?.map(|v| v as u64),
    })
}

pub struct Journal {
    conn: Connection,
    path: PathBuf,
    source: String,
    destination: String,
    /// Receives every finished record (verified or failed) once it is committed: a shard's
    /// progress writer ([`crate::transfer::progress_store`]).
    tap: Option<tokio::sync::mpsc::UnboundedSender<ObjectRecord>>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    pub verified: u64,
    pub verified_bytes: u64,
    pub failed: u64,
    pub copying: u64,
}

/// How a journal's move is checked when it is opened again.
enum Owner<'a> {
    /// By the locations as written (tests, `status`).
    Spelled,
    /// By what the locations resolve to (`Store::identity`): any spelling of the same pair.
    Identity {
        source: &'a str,
        destination: &'a str,
    },
}

impl Journal {
    /// The journal of `src` -> `dst` (created when missing), checked against the stores'
    /// identities so that any spelling of the same pair opens it; a journal of another move is
    /// refused.
    pub fn open_pair(
        path: &Path,
        src: &crate::store::Store,
        dst: &crate::store::Store,
    ) -> Result<Journal, JournalError> {
        Self::open_as(
            path,
            &src.shown(),
            &dst.shown(),
            Owner::Identity {
                source: &src.identity,
                destination: &dst.identity,
            },
        )
    }

    /// A journal checked against the locations as written (see [`Journal::open_pair`]).
    pub fn open(path: &Path, source: &str, destination: &str) -> Result<Journal, JournalError> {
        Self::open_as(path, source, destination, Owner::Spelled)
    }

    /// Hand every record that ends verified or failed to `tx` after it is committed.
    pub fn tap(&mut self, tx: tokio::sync::mpsc::UnboundedSender<ObjectRecord>) {
        self.tap = Some(tx);
    }

    /// An existing journal, for the move its `meta` table names (`status`): the source and
    /// destination are read first without writing (missing ones read as empty), then the journal
    /// is opened as [`Journal::open`] does.
    pub fn open_existing(path: &Path) -> Result<Journal, JournalError> {
        let (source, destination) = {
            let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
                .map_err(|e| JournalError::Db {
                    path: path.display().to_string(),
                    message: e.to_string(),
                })?;
            let meta = |k: &str| -> String {
                conn.query_row("SELECT value FROM meta WHERE key = ?1", [k], |r| r.get(0))
                    .unwrap_or_default()
            };
            (meta("source"), meta("destination"))
        };
        Journal::open(path, &source, &destination)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records what the source holds within the run's filters (objects, bytes), as counted by a
    /// complete listing: `status` shows progress against it.
    pub fn set_totals(&self, objects: u64, bytes: u64) -> Result<(), JournalError> {
        for (k, v) in [("total_objects", objects), ("total_bytes", bytes)] {
            self.conn
                .execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
                    params![k, v.to_string()],
                )
                .map_err(|e| self.db(e))?;
        }
        Ok(())
    }

    /// The identities of the move's source and destination, when the journal records them.
    pub fn identities(&self) -> Result<Option<(String, String)>, JournalError> {
        let get = |k: &str| -> Result<Option<String>, JournalError> {
            self.conn
                .query_row("SELECT value FROM meta WHERE key = ?1", [k], |r| r.get(0))
                .optional()
                .map_err(|e| self.db(e))
        };
        Ok(get("source_identity")?.zip(get("destination_identity")?))
    }

    /// The totals [`Journal::set_totals`] recorded, if any.
    pub fn totals(&self) -> Result<Option<(u64, u64)>, JournalError> {
        let get = |k: &str| -> Result<Option<u64>, JournalError> {
            let v: Option<String> = self
                .conn
                .query_row("SELECT value FROM meta WHERE key = ?1", [k], |r| r.get(0))
                .optional()
                .map_err(|e| self.db(e))?;
            Ok(v.and_then(|v| v.parse().ok()))
        };
        Ok(get("total_objects")?.zip(get("total_bytes")?))
    }

    /// Objects and bytes verified since `since` (RFC 3339, as `updated` is written): the
    /// recent rate `status` shows.
    pub fn verified_since(&self, since: &str) -> Result<(u64, u64), JournalError> {
        self.conn
            .query_row(
                "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM objects
                 WHERE state = 'verified' AND updated >= ?1",
                [since],
                |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
            )
            .map_err(|e| self.db(e))
    }

    /// Multipart uploads under way (objects still `copying`): how many objects have parts
    /// recorded, and the bytes of those parts (uploaded, not yet verified as whole objects).
    pub fn in_flight(&self) -> Result<(u64, u64), JournalError> {
        self.conn
            .query_row(
                "SELECT COUNT(DISTINCT p.key), COALESCE(SUM(p.size), 0) FROM parts p
                 JOIN objects o ON o.key = p.key WHERE o.state = 'copying'",
                [],
                |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
            )
            .map_err(|e| self.db(e))
    }

    /// The move's source, as the journal records it.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The move's destination, as the journal records it.
    pub fn destination(&self) -> &str {
        &self.destination
    }

    fn db(&self, e: rusqlite::Error) -> JournalError {
        JournalError::Db {
            path: self.path.display().to_string(),
            message: e.to_string(),
        }
    }

    /// Up to `limit` verified records with keys after `after` (all when None), in key order (byte
    /// order, as listings): a page of them, so a caller walks every verified object in bounded
    /// memory (`stage` writes its manifest this way).
    pub fn verified_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ObjectRecord>, JournalError> {
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT key, size, src_etag, src_mtime, state, crc64, md5, dst_etag, verified_by, attempts, error,
                        upload_id, part_size FROM objects
                 WHERE state = 'verified' AND (?1 IS NULL OR key > ?1) ORDER BY key LIMIT ?2",
            )
            .map_err(|e| self.db(e))?;
        let rows = st
            .query_map(params![after, limit as i64], record_of)
            .map_err(|e| self.db(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.db(e))
    }

    pub fn get(&self, key: &str) -> Result<Option<ObjectRecord>, JournalError> {
        // Called once per listed key: the statement is prepared once per connection.
        self.conn
            .prepare_cached(
                "SELECT key, size, src_etag, src_mtime, state, crc64, md5, dst_etag, verified_by, attempts, error,
                        upload_id, part_size FROM objects WHERE key = ?1",
            )
            .map_err(|e| self.db(e))?
            .query_row([key], record_of)
            .optional()
            .map_err(|e| self.db(e))
    }

    /// Write several records in one transaction (the copy engine batches them).
    pub fn put_all(&mut self, recs: &[ObjectRecord]) -> Result<(), JournalError> {
        let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        let tx = self.conn.transaction().map_err(|e| JournalError::Db {
            path: self.path.display().to_string(),
            message: e.to_string(),
        })?;
        {
            let mut st = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO objects (key, size, src_etag, src_mtime, state, crc64, md5, dst_etag,
                     verified_by, attempts, error, upload_id, part_size, updated)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                )
                .map_err(|e| JournalError::Db {
                    path: self.path.display().to_string(),
                    message: e.to_string(),
                })?;
            for r in recs {
                st.execute(params![
                    r.key,
                    r.size as i64,
                    r.src_etag,
                    r.src_mtime,
                    r.state.as_str(),
                    r.crc64,
                    r.md5,
                    r.dst_etag,
                    r.verified_by,
                    r.attempts as i64,
                    r.error,
                    r.upload_id,
                    r.part_size.map(|v| v as i64),
                    now,
                ])
                .map_err(|e| JournalError::Db {
                    path: self.path.display().to_string(),
                    message: e.to_string(),
                })?;
                if r.state == State::Verified {
                    tx.execute("DELETE FROM parts WHERE key = ?1", [&r.key])
                        .map_err(|e| JournalError::Db {
                            path: self.path.display().to_string(),
                            message: e.to_string(),
                        })?;
                }
            }
        }
        tx.commit().map_err(|e| self.db(e))?;
        if let Some(t) = &self.tap {
            for r in recs.iter().filter(|r| r.state != State::Copying) {
                let _ = t.send(r.clone());
            }
        }
        Ok(())
    }

    pub fn put_part(&self, key: &str, p: &PartRecord) -> Result<(), JournalError> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO parts (key, idx, content_id, crc64, md5, size) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![key, p.idx as i64, p.content_id, p.crc64, p.md5, p.size as i64],
            )
            .map(|_| ())
            .map_err(|e| self.db(e))
    }

    pub fn parts(&self, key: &str) -> Result<Vec<PartRecord>, JournalError> {
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT idx, content_id, crc64, md5, size FROM parts WHERE key = ?1 ORDER BY idx",
            )
            .map_err(|e| self.db(e))?;
        let rows = st
            .query_map([key], |r| {
                Ok(PartRecord {
                    idx: r.get::<_, i64>(0)? as u32,
                    content_id: r.get(1)?,
                    crc64: r.get(2)?,
                    md5: r.get(3)?,
                    size: r.get::<_, i64>(4)? as u64,
                })
            })
            .map_err(|e| self.db(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.db(e))
    }

    /// Drop what the journal knows of a key (its upload was abandoned).
    pub fn forget(&self, key: &str) -> Result<(), JournalError> {
        self.conn
            .execute("DELETE FROM parts WHERE key = ?1", [key])
            .and_then(|_| {
                self.conn
                    .execute("DELETE FROM objects WHERE key = ?1", [key])
            })
            .map(|_| ())
            .map_err(|e| self.db(e))
    }

    /// Objects left `copying` with an upload id: multipart uploads a crash left open.
    pub fn open_uploads(&self) -> Result<Vec<(String, String)>, JournalError> {
        let mut st = self.conn.prepare(OPEN_UPLOADS).map_err(|e| self.db(e))?;
        let rows = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| self.db(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.db(e))
    }

    pub fn summary(&self) -> Result<Summary, JournalError> {
        let mut s = Summary::default();
        let mut st = self
            .conn
            .prepare("SELECT state, count(*), coalesce(sum(size), 0) FROM objects GROUP BY state")
            .map_err(|e| self.db(e))?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })
            .map_err(|e| self.db(e))?;
        for row in rows {
            let (state, n, bytes) = row.map_err(|e| self.db(e))?;
            match State::parse(&state) {
                State::Verified => {
                    s.verified = n as u64;
                    s.verified_bytes = bytes as u64;
                }
                State::Failed => s.failed = n as u64,
                State::Copying => s.copying = n as u64,
            }
        }
        Ok(s)
    }
}

fn db_at(path: &str, e: rusqlite::Error) -> JournalError {
    JournalError::Db {
        path: path.to_string(),
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::money::Usd;
    use crate::store::list::Entry;

    fn by_identity<'a>(source: &'a str, destination: &'a str) -> Owner<'a> {
        Owner::Identity {
            source,
            destination,
        }
    }

    /// A journal is found and accepted by the pair's identities, whatever the spelling; another
    /// pair is refused; a journal from before identities were kept is checked by spelling once
    /// and learns them.
    #[test]
    fn a_journal_belongs_to_the_resolved_pair_not_its_spelling() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.sqlite");
        let (src, dst) = ("local /data", "s3 aws bucket b prefix x/");
        drop(Journal::open_as(&p, "data", "s3://b/x", by_identity(src, dst)).unwrap());
        let j = Journal::open_as(&p, "./data/", "s3://b/x/", by_identity(src, dst)).unwrap();
        assert_eq!(j.source(), "./data/");
        drop(j);
        let e = Journal::open_as(
            &p,
            "data",
            "s3://b/y",
            by_identity(src, "s3 aws bucket b prefix y/"),
        )
        .map(|_| ())
        .unwrap_err();
        assert!(
            matches!(
                e,
                JournalError::Mismatch {
                    field: "destination",
                    ..
                }
            ),
            "{e}"
        );

        let old = dir.path().join("old.sqlite");
        drop(Journal::open(&old, "data", "s3://b/x").unwrap());
        assert!(Journal::open_as(&old, "./data", "s3://b/x", by_identity(src, dst)).is_err());
        drop(Journal::open_as(&old, "data", "s3://b/x", by_identity(src, dst)).unwrap());
        drop(Journal::open_as(&old, "./data", "s3://b/x/", by_identity(src, dst)).unwrap());
    }

    fn rec(key: &str, state: State) -> ObjectRecord {
        ObjectRecord {
            key: key.into(),
            size: 10,
            src_etag: Some("\"e\"".into()),
            src_mtime: None,
            state,
            crc64: Some("00ff".into()),
            md5: None,
            dst_etag: Some("\"d\"".into()),
            verified_by: Some("test".into()),
            attempts: 1,
            error: None,
            upload_id: None,
            part_size: None,
        }
    }

    #[test]
    fn records_survive_reopen_and_belong_to_one_move() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.sqlite");
        {
            let mut j = Journal::open(&p, "s3://a/", "s3://b/").unwrap();
            j.put_all(&[rec("x", State::Verified), rec("y", State::Failed)])
                .unwrap();
            j.put_part(
                "z",
                &PartRecord {
                    idx: 0,
                    content_id: "c".into(),
                    crc64: "1".into(),
                    md5: None,
                    size: 5,
                },
            )
            .unwrap();
        }
        let j = Journal::open(&p, "s3://a/", "s3://b/").unwrap();
        assert_eq!(j.get("x").unwrap().unwrap().state, State::Verified);
        assert_eq!(j.parts("z").unwrap().len(), 1);
        let s = j.summary().unwrap();
        assert_eq!((s.verified, s.verified_bytes, s.failed), (1, 10, 1));
        let e = Journal::open(&p, "s3://a/", "s3://other/")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("another move"), "{e}");
    }

    fn entry(key: &str) -> Entry {
        Entry {
            key: key.into(),
            size: 3,
            last_modified: chrono::DateTime::parse_from_rfc3339("2026-01-02T03:04:05Z")
                .unwrap()
                .with_timezone(&chrono::Utc),
            e_tag: Some("\"t\"".into()),
        }
    }

    #[test]
    fn sync_candidates_live_in_the_journal_and_a_deleted_key_forgets_its_copy() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.sqlite");
        let mut j = Journal::open(&p, "s3://a/", "s3://b/").unwrap();
        j.put_all(&[rec("gone", State::Verified), rec("young", State::Verified)])
            .unwrap();
        {
            let mut old = CandidateSpill::in_journal(&p).unwrap();
            old.insert(&[(entry("stale"), None)]).unwrap();
        }
        // Every run replaces the previous run's candidates.
        let mut spill = CandidateSpill::in_journal(&p).unwrap();
        let fee = Usd("0.5".parse().unwrap());
        spill
            .insert(&[(entry("gone"), None), (entry("young"), Some(fee))])
            .unwrap();
        assert_eq!(
            spill.page("", 10).unwrap(),
            vec![("gone".into(), 3, None), ("young".into(), 3, Some(fee))]
        );
        assert_eq!(spill.page("gone", 1).unwrap().len(), 1);
        assert_eq!(
            spill.last_modified("gone").unwrap(),
            "2026-01-02T03:04:05+00:00"
        );
        spill
            .mark(&[("gone".into(), "deleted"), ("young".into(), "held")])
            .unwrap();
        // What the README tells users to run.
        let c = Connection::open(&p).unwrap();
        let rows: Vec<(String, String)> = c
            .prepare("select key, status from sync_candidates order by key")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            rows,
            vec![
                ("gone".into(), "deleted".into()),
                ("young".into(), "held".into())
            ]
        );
        assert_eq!(j.get("gone").unwrap(), None);
        assert!(j.get("young").unwrap().is_some());
        // A temporary spill never touches a journal.
        let mut t = CandidateSpill::temporary().unwrap();
        t.insert(&[(entry("x"), None)]).unwrap();
        t.mark(&[("x".into(), "deleted")]).unwrap();
        assert_eq!(t.page("", 10).unwrap().len(), 1);
    }

    #[test]
    fn an_existing_journal_opens_for_the_move_it_names() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.sqlite");
        Journal::open(&p, "s3://a/", "s3://b/")
            .unwrap()
            .put_all(&[rec("x", State::Verified)])
            .unwrap();
        let j = Journal::open_existing(&p).unwrap();
        assert_eq!((j.source(), j.destination()), ("s3://a/", "s3://b/"));
        assert_eq!(j.summary().unwrap().verified, 1);
        let e = Journal::open_existing(&dir.path().join("missing.sqlite"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.starts_with("journal "), "{e}");
    }

    #[test]
    fn open_uploads_are_read_from_their_index_not_every_row() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(&dir.path().join("j.sqlite"), "a", "b").unwrap();
        let plan: Vec<String> = j
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {OPEN_UPLOADS}"))
            .unwrap()
            .query_map([], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            plan.iter().any(|p| p.contains("objects_open_uploads")),
            "{plan:?}"
        );
    }
}
