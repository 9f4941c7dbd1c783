//! Sync's deletion candidates (table `sync_candidates`): written, paged and marked in the run's
//! journal database, or in a private temporary one for dry runs.

use super::{JournalError, db_at};
use crate::money::Usd;
use crate::store::list::Entry;
use rusqlite::{Connection, params};
use std::path::Path;

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
