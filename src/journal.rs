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
//! All SQL on these tables lives in this module.

use crate::money::Usd;
use crate::store::list::Entry;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use std::path::{Path, PathBuf};

pub const FORMAT: &str = "moverctl-journal";
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

pub struct Journal {
    conn: Connection,
    path: PathBuf,
    source: String,
    destination: String,
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

    fn open_as(
        path: &Path,
        source: &str,
        destination: &str,
        owner: Owner,
    ) -> Result<Journal, JournalError> {
        let shown = path.display().to_string();
        let db = |e: rusqlite::Error| JournalError::Db {
            path: shown.clone(),
            message: e.to_string(),
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| JournalError::Db {
                path: shown.clone(),
                message: format!("cannot create its folder: {e}"),
            })?;
        }
        let conn = Connection::open(path).map_err(db)?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             PRAGMA busy_timeout = 5000;
             CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS objects (
                 key TEXT PRIMARY KEY, size INTEGER NOT NULL, src_etag TEXT, src_mtime TEXT,
                 state TEXT NOT NULL, crc64 TEXT, md5 TEXT, dst_etag TEXT, verified_by TEXT,
                 attempts INTEGER NOT NULL DEFAULT 0, error TEXT, upload_id TEXT, part_size INTEGER,
                 updated TEXT NOT NULL) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS parts (
                 key TEXT NOT NULL, idx INTEGER NOT NULL, content_id TEXT NOT NULL, crc64 TEXT NOT NULL,
                 md5 TEXT, size INTEGER NOT NULL, PRIMARY KEY (key, idx)) WITHOUT ROWID;",
        )
        .map_err(db)?;
        let get = |k: &str| -> Result<Option<String>, JournalError> {
            conn.query_row("SELECT value FROM meta WHERE key = ?1", [k], |r| r.get(0))
                .optional()
                .map_err(db)
        };
        match get("format")? {
            None => {
                let now =
                    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
                let mut rows = vec![
                    ("format", FORMAT.to_string()),
                    ("version", VERSION.to_string()),
                    ("source", source.to_string()),
                    ("destination", destination.to_string()),
                    ("created", now),
                ];
                if let Owner::Identity {
                    source,
                    destination,
                } = owner
                {
                    rows.push(("source_identity", source.to_string()));
                    rows.push(("destination_identity", destination.to_string()));
                }
                for (k, v) in rows {
                    conn.execute(
                        "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
                        [k, &v],
                    )
                    .map_err(db)?;
                }
            }
            Some(f) if f != FORMAT => {
                return Err(JournalError::Db {
                    path: shown,
                    message: format!("not a moverctl journal (format {f:?})"),
                });
            }
            Some(_) => {
                let version = get("version")?.unwrap_or_default();
                if version != VERSION.to_string() {
                    return Err(JournalError::Db {
                        path: shown,
                        message: format!(
                            "journal version {version} is not supported (this moverctl reads {VERSION})"
                        ),
                    });
                }
                // A journal that records identities is checked by them; one written before
                // identities were kept (or by `open`) by the spelled locations, and then learns
                // the identities.
                let recorded = get("source_identity")?.zip(get("destination_identity")?);
                let checks = match (&owner, &recorded) {
                    (
                        Owner::Identity {
                            source,
                            destination,
                        },
                        Some(_),
                    ) => [
                        ("source_identity", "source", *source),
                        ("destination_identity", "destination", *destination),
                    ],
                    _ => [
                        ("source", "source", source),
                        ("destination", "destination", destination),
                    ],
                };
                for (key, field, want) in checks {
                    let found = get(key)?.unwrap_or_default();
                    if found != want {
                        let found = if key == field {
                            found
                        } else {
                            get(field)?.unwrap_or(found)
                        };
                        return Err(JournalError::Mismatch {
                            path: shown,
                            field,
                            found,
                            want: if key == field {
                                want.to_string()
                            } else {
                                format!("{want} (as resolved)")
                            },
                        });
                    }
                }
                if let (
                    Owner::Identity {
                        source: si,
                        destination: di,
                    },
                    None,
                ) = (&owner, &recorded)
                {
                    for (k, v) in [("source_identity", si), ("destination_identity", di)] {
                        conn.execute(
                            "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
                            [k, v],
                        )
                        .map_err(db)?;
                    }
                }
            }
        }
        Ok(Journal {
            conn,
            path: path.to_path_buf(),
            source: source.to_string(),
            destination: destination.to_string(),
        })
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

    pub fn get(&self, key: &str) -> Result<Option<ObjectRecord>, JournalError> {
        // Called once per listed key: the statement is prepared once per connection.
        self.conn
            .prepare_cached(
                "SELECT key, size, src_etag, src_mtime, state, crc64, md5, dst_etag, verified_by, attempts, error,
                        upload_id, part_size FROM objects WHERE key = ?1",
            )
            .map_err(|e| self.db(e))?
            .query_row([key], |r| {
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
            })
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
        tx.commit().map_err(|e| self.db(e))
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
        let mut st = self
            .conn
            .prepare("SELECT key, upload_id FROM objects WHERE state = 'copying' AND upload_id IS NOT NULL ORDER BY key")
            .map_err(|e| self.db(e))?;
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

const CANDIDATES_TABLE: &str = "CREATE TABLE IF NOT EXISTS sync_candidates (
    key TEXT PRIMARY KEY, size INTEGER NOT NULL, last_modified TEXT NOT NULL, e_tag TEXT,
    early_fee TEXT, status TEXT NOT NULL) WITHOUT ROWID;";

/// Sync's deletion candidates (table `sync_candidates`), in the run's journal database or in a
/// private temporary one (dry runs). It has its own connection to the journal file.
pub struct CandidateSpill {
    conn: Connection,
    shown: String,
    in_journal: bool,
}

impl CandidateSpill {
    /// In the journal database at `journal`, replacing the previous run's candidates.
    pub fn in_journal(journal: &Path) -> Result<CandidateSpill, JournalError> {
        let shown = journal.display().to_string();
        let conn = Connection::open(journal).map_err(|e| db_at(&shown, e))?;
        conn.execute_batch(&format!(
            "PRAGMA busy_timeout = 5000; {CANDIDATES_TABLE} DELETE FROM sync_candidates;"
        ))
        .map_err(|e| db_at(&shown, e))?;
        Ok(CandidateSpill {
            conn,
            shown,
            in_journal: true,
        })
    }

    /// In a private temporary database (removed when closed).
    pub fn temporary() -> Result<CandidateSpill, JournalError> {
        let shown = "temporary candidate list".to_string();
        let conn = Connection::open("").map_err(|e| db_at(&shown, e))?;
        conn.execute_batch(CANDIDATES_TABLE)
            .map_err(|e| db_at(&shown, e))?;
        Ok(CandidateSpill {
            conn,
            shown,
            in_journal: false,
        })
    }

    fn db(&self, e: rusqlite::Error) -> JournalError {
        db_at(&self.shown, e)
    }

    /// Write candidates in one transaction: status `kept` with their early-deletion fee, else
    /// `candidate`.
    pub fn insert(&mut self, rows: &[(Entry, Option<Usd>)]) -> Result<(), JournalError> {
        let shown = self.shown.clone();
        let tx = self.conn.transaction().map_err(|e| db_at(&shown, e))?;
        {
            let mut st = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO sync_candidates (key, size, last_modified, e_tag, early_fee, status)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .map_err(|e| db_at(&shown, e))?;
            for (e, fee) in rows {
                st.execute(params![
                    e.key,
                    e.size as i64,
                    e.last_modified.to_rfc3339(),
                    e.e_tag,
                    fee.map(|f| f.0.to_string()),
                    if fee.is_some() { "kept" } else { "candidate" },
                ])
                .map_err(|e| db_at(&shown, e))?;
            }
        }
        tx.commit().map_err(|e| db_at(&shown, e))
    }

    /// Candidates in key order after `after`, at most `n`: (key, size, early fee if kept).
    pub fn page(
        &self,
        after: &str,
        n: usize,
    ) -> Result<Vec<(String, u64, Option<Usd>)>, JournalError> {
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT key, size, early_fee FROM sync_candidates WHERE key > ?1 ORDER BY key LIMIT ?2",
            )
            .map_err(|e| self.db(e))?;
        let rows = st
            .query_map(params![after, n as i64], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)? as u64,
                    r.get::<_, Option<String>>(2)?,
                ))
            })
            .map_err(|e| self.db(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (k, size, fee) = row.map_err(|e| self.db(e))?;
            out.push((k, size, fee.and_then(|f| f.parse().ok()).map(Usd)));
        }
        Ok(out)
    }

    /// Set candidates' status in one transaction. In the journal, a `deleted` key's object and
    /// part rows go too: the record of a copy to a key that is gone now means nothing.
    pub fn mark(&mut self, marks: &[(String, &'static str)]) -> Result<(), JournalError> {
        let shown = self.shown.clone();
        let forget = self.in_journal;
        let tx = self.conn.transaction().map_err(|e| db_at(&shown, e))?;
        for (k, status) in marks {
            tx.execute(
                "UPDATE sync_candidates SET status = ?2 WHERE key = ?1",
                params![k, status],
            )
            .map_err(|e| db_at(&shown, e))?;
            if forget && *status == "deleted" {
                tx.execute("DELETE FROM objects WHERE key = ?1", [k])
                    .and_then(|_| tx.execute("DELETE FROM parts WHERE key = ?1", [k]))
                    .map_err(|e| db_at(&shown, e))?;
            }
        }
        tx.commit().map_err(|e| db_at(&shown, e))
    }

    /// A candidate's last-modified time as listed (RFC 3339).
    pub fn last_modified(&self, key: &str) -> Result<String, JournalError> {
        self.conn
            .query_row(
                "SELECT last_modified FROM sync_candidates WHERE key = ?1",
                [key],
                |r| r.get(0),
            )
            .map_err(|e| self.db(e))
    }
}

fn db_at(path: &str, e: rusqlite::Error) -> JournalError {
    JournalError::Db {
        path: path.to_string(),
        message: e.to_string(),
    }
}

/// Where a run's journal lives by default: the state folder, named after source and destination.
pub fn default_path(state_dir: &Path, source: &str, destination: &str) -> PathBuf {
    use sha2::{Digest, Sha256};
    let h = Sha256::digest(format!("{source}\n{destination}").as_bytes());
    let id: String = h.iter().take(8).map(|b| format!("{b:02x}")).collect();
    state_dir.join("journals").join(format!("{id}.sqlite"))
}

/// The journal of a pair in the state folder, keyed by the stores' identities (so any spelling
/// of the same source and destination finds the same journal). A journal an earlier version
/// kept under the spelled locations is moved to the new name, so a move started before the
/// change resumes.
pub fn path_for(state_dir: &Path, src: &crate::store::Store, dst: &crate::store::Store) -> PathBuf {
    let path = default_path(state_dir, &src.identity, &dst.identity);
    let old = default_path(state_dir, &src.shown(), &dst.shown());
    if !path.exists() && old != path && old.exists() {
        for suffix in ["", "-wal", "-shm"] {
            let from = PathBuf::from(format!("{}{suffix}", old.display()));
            if from.exists() {
                let _ = std::fs::rename(&from, format!("{}{suffix}", path.display()));
            }
        }
    }
    path
}

/// The state folder (journals, probe results): `$MOVERCTL_STATE_DIR`, else
/// `$XDG_STATE_HOME/moverctl`, else `~/.local/state/moverctl`; None when none of them is set.
pub fn state_dir_if_known() -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    env("MOVERCTL_STATE_DIR")
        .map(PathBuf::from)
        .or_else(|| env("XDG_STATE_HOME").map(|d| PathBuf::from(d).join("moverctl")))
        .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".local/state/moverctl")))
}

/// As [`state_dir_if_known`], falling back to `.moverctl-state` in the current folder.
pub fn state_dir() -> PathBuf {
    state_dir_if_known().unwrap_or_else(|| PathBuf::from(".moverctl-state"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
