//! Opening a journal: its folder and database, the schema, and the `meta` rows, written for a
//! new journal or checked against the move (its format, version and pair) for an existing one.

use super::{FORMAT, Journal, JournalError, Owner, VERSION, db_at};
use rusqlite::{Connection, OptionalExtension};
use std::path::Path;

/// The connection settings and the tables every journal has (`sync_candidates` is made by
/// [`super::CandidateSpill`]). `objects_open_uploads` holds only the rows of multipart uploads
/// still open, so that [`Journal::open_uploads`] (asked at the end of every run) reads those
/// instead of every row: at 10 M rows the scan took seconds (bench/results/2026-12-06-list.md).
const SCHEMA: &str = "PRAGMA journal_mode = WAL;
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
                 md5 TEXT, size INTEGER NOT NULL, PRIMARY KEY (key, idx)) WITHOUT ROWID;
             CREATE INDEX IF NOT EXISTS objects_open_uploads ON objects (key)
                 WHERE state = 'copying' AND upload_id IS NOT NULL;";

impl Journal {
    /// The journal at `path` for `source` -> `destination` (created when missing), its move
    /// checked as `owner` says.
    pub(super) fn open_as(
        path: &Path,
        source: &str,
        destination: &str,
        owner: Owner,
    ) -> Result<Journal, JournalError> {
        let shown = path.display().to_string();
        let conn = open_database(path, &shown)?;
        let meta = Meta {
            conn: &conn,
            shown: &shown,
        };
        match meta.get("format")? {
            None => meta.write_new(source, destination, &owner)?,
            Some(f) if f != FORMAT => {
                return Err(JournalError::Db {
                    path: shown,
                    message: format!("not a moverctl journal (format {f:?})"),
                });
            }
            Some(_) => meta.check_existing(source, destination, &owner)?,
        }
        Ok(Journal {
            conn,
            path: path.to_path_buf(),
            source: source.to_string(),
            destination: destination.to_string(),
            tap: None,
        })
    }
}

/// The database at `path` (its folder created when missing), with the schema in place.
fn open_database(path: &Path, shown: &str) -> Result<Connection, JournalError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| JournalError::Db {
            path: shown.to_string(),
            message: format!("cannot create its folder: {e}"),
        })?;
    }
    let conn = Connection::open(path).map_err(|e| db_at(shown, e))?;
    conn.execute_batch(SCHEMA).map_err(|e| db_at(shown, e))?;
    Ok(conn)
}

/// The `meta` table of a journal being opened, and the journal's name for errors.
struct Meta<'a> {
    conn: &'a Connection,
    shown: &'a str,
}

impl Meta<'_> {
    fn get(&self, k: &str) -> Result<Option<String>, JournalError> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [k], |r| r.get(0))
            .optional()
            .map_err(|e| db_at(self.shown, e))
    }

    fn set(&self, k: &str, v: &str) -> Result<(), JournalError> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
                [k, v],
            )
            .map_err(|e| db_at(self.shown, e))?;
        Ok(())
    }

    /// A new journal's rows: format, version, the move as written, when it was made, and the
    /// pair's identities when the move is checked by them.
    fn write_new(
        &self,
        source: &str,
        destination: &str,
        owner: &Owner,
    ) -> Result<(), JournalError> {
        let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
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
            self.set(k, &v)?;
        }
        Ok(())
    }

    /// An existing journal: a version this moverctl reads, and the move this run makes. A
    /// journal that records identities is checked by them; one written before identities were
    /// kept (or by `open`) by the spelled locations, and then learns the identities.
    fn check_existing(
        &self,
        source: &str,
        destination: &str,
        owner: &Owner,
    ) -> Result<(), JournalError> {
        let version = self.get("version")?.unwrap_or_default();
        if version != VERSION.to_string() {
            return Err(JournalError::Db {
                path: self.shown.to_string(),
                message: format!(
                    "journal version {version} is not supported (this moverctl reads {VERSION})"
                ),
            });
        }
        let recorded = self
            .get("source_identity")?
            .zip(self.get("destination_identity")?);
        let checks = match (owner, &recorded) {
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
            self.check_one(key, field, want)?;
        }
        if let (
            Owner::Identity {
                source: si,
                destination: di,
            },
            None,
        ) = (owner, &recorded)
        {
            for (k, v) in [("source_identity", si), ("destination_identity", di)] {
                self.set(k, v)?;
            }
        }
        Ok(())
    }

    /// The row `key` holds `want`, else the journal belongs to another move: the refusal names
    /// the location as written (`field`) when the row checked is an identity.
    fn check_one(&self, key: &str, field: &'static str, want: &str) -> Result<(), JournalError> {
        let found = self.get(key)?.unwrap_or_default();
        if found == want {
            return Ok(());
        }
        let found = if key == field {
            found
        } else {
            self.get(field)?.unwrap_or(found)
        };
        Err(JournalError::Mismatch {
            path: self.shown.to_string(),
            field,
            found,
            want: if key == field {
                want.to_string()
            } else {
                format!("{want} (as resolved)")
            },
        })
    }
}
