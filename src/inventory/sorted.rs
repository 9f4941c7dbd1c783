//! An inventory's objects under one source location, in key order, with bounded memory: every
//! row is written to a private temporary SQLite database (on disk past a 16 MiB page cache; a
//! key stored twice, as Azure's reports may repeat one, keeps its last row), then read back a
//! page at a time in byte order of the key ([`Sorted::listing`]), the order every listing and
//! the merge-join use. SQLite's B-tree is the external sort, as `journal::spill` keeps sync's
//! candidates; rows that arrive sorted (as S3 and GCS files mostly are) append at its end.

use super::{InventoryError, Opened, bucket_of};
use crate::store::Store;
use crate::store::list::{Entry, ListError, Listed};
use futures::stream::{self, BoxStream, StreamExt};
use rusqlite::{Connection, params};
use std::sync::{Arc, Mutex};

/// Rows read back per page.
const PAGE: usize = 2000;
/// Rows written per transaction.
const BATCH: usize = 50_000;

/// The sorted objects of an inventory (see the module's comment).
pub struct Sorted {
    conn: Mutex<Connection>,
    /// Where it came from, for messages: the manifest as given.
    pub origin: String,
    /// Objects (distinct keys) under the source location, and their bytes.
    pub objects: u64,
    pub bytes: u64,
    /// Rows that are no current object (delete markers, older versions, snapshots, folders).
    pub skipped: u64,
    /// Rows outside the source location (another container or prefix).
    pub outside: u64,
}

impl std::fmt::Debug for Sorted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sorted")
            .field("origin", &self.origin)
            .field("objects", &self.objects)
            .finish()
    }
}

fn spill(e: rusqlite::Error) -> InventoryError {
    InventoryError::Spill(format!("the temporary sort database: {e}"))
}

impl Sorted {
    /// Reads every row of `inv` whose key is under `src`'s location into key order. An S3
    /// inventory of another bucket is refused.
    pub async fn build(inv: &Opened, src: &Store) -> Result<Sorted, InventoryError> {
        let bucket = bucket_of(src).map(str::to_string);
        if let (Some(listed), Some(b)) = (&inv.manifest.source_bucket, &bucket)
            && listed != b
        {
            return Err(InventoryError::Manifest {
                file: inv.shown.clone(),
                message: format!(
                    "it is an inventory of bucket {listed:?}, and the source {} is in {b:?}",
                    src.shown()
                ),
            });
        }
        let conn = Connection::open("").map_err(spill)?;
        conn.execute_batch(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -16384;
             PRAGMA temp_store = FILE;
             CREATE TABLE inv (key TEXT PRIMARY KEY, size INTEGER NOT NULL, e_tag TEXT,
                               modified INTEGER) WITHOUT ROWID;",
        )
        .map_err(spill)?;
        let prefix = src.prefix.clone();
        let mut outside = 0u64;
        let mut batch: Vec<Spilled> = Vec::with_capacity(BATCH);
        let write = |batch: &mut Vec<Spilled>| -> Result<(), InventoryError> {
            let tx = conn.unchecked_transaction().map_err(spill)?;
            {
                let mut st = tx
                    .prepare_cached(
                        "INSERT INTO inv VALUES (?1, ?2, ?3, ?4) ON CONFLICT(key) DO UPDATE SET
                         size = excluded.size, e_tag = excluded.e_tag, modified = excluded.modified",
                    )
                    .map_err(spill)?;
                for r in batch.drain(..) {
                    st.execute(params![r.0, r.1 as i64, r.2, r.3])
                        .map_err(spill)?;
                }
            }
            tx.commit().map_err(spill)
        };
        let skipped = {
            let mut each = |row: super::Row| {
                if row
                    .bucket
                    .as_ref()
                    .is_some_and(|b| Some(b) != bucket.as_ref())
                    || !row.key.starts_with(&prefix)
                {
                    outside += 1;
                    return Ok(());
                }
                let key = row.key[prefix.len()..].to_string();
                if key.is_empty() || crate::shard::is_progress_key(&key) {
                    outside += 1;
                    return Ok(());
                }
                let modified = row.modified.map(|d| d.timestamp_millis());
                batch.push((key, row.size, row.e_tag, modified));
                if batch.len() >= BATCH {
                    write(&mut batch)?;
                }
                Ok(())
            };
            inv.for_each_row(&mut each).await?
        };
        write(&mut batch)?;
        let (objects, bytes): (i64, i64) = conn
            .query_row(
                "SELECT count(*), coalesce(sum(size), 0) FROM inv",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(spill)?;
        Ok(Sorted {
            conn: Mutex::new(conn),
            origin: inv.shown.clone(),
            objects: objects as u64,
            bytes: bytes as u64,
            skipped,
            outside,
        })
    }

    /// Up to [`PAGE`] objects after `after`, in key order.
    fn page(&self, after: Option<&str>) -> Result<Vec<Entry>, rusqlite::Error> {
        let conn = self.conn.lock().expect("inventory lock");
        let mut st = conn.prepare_cached(
            "SELECT key, size, e_tag, modified FROM inv WHERE key > ?1 ORDER BY key LIMIT ?2",
        )?;
        let rows = st.query_map(params![after.unwrap_or(""), PAGE as i64], |r| {
            let modified: Option<i64> = r.get(3)?;
            Ok(Entry {
                key: r.get(0)?,
                size: r.get::<_, i64>(1)? as u64,
                e_tag: r.get(2)?,
                last_modified: modified
                    .and_then(chrono::DateTime::from_timestamp_millis)
                    .unwrap_or_default(),
            })
        })?;
        rows.collect()
    }

    /// The objects as a source listing: key order, a shard's range of `src` applied, no
    /// request to the store.
    pub fn listing(self: &Arc<Self>, src: &Store) -> BoxStream<'static, Result<Listed, ListError>> {
        let range = src.range.clone();
        let location = format!("inventory {}", self.origin);
        let start = range.as_ref().and_then(|r| r.start.clone());
        let me = self.clone();
        stream::unfold((me, start, false), move |(me, after, done)| {
            let location = location.clone();
            async move {
                if done {
                    return None;
                }
                match me.page(after.as_deref()) {
                    Ok(p) => {
                        let last = p.last().map(|e| e.key.clone());
                        let end = p.len() < PAGE;
                        Some((Ok(p), (me, last.or(after), end)))
                    }
                    Err(e) => Some((
                        Err(ListError::Local {
                            location,
                            message: e.to_string(),
                        }),
                        (me, None, true),
                    )),
                }
            }
        })
        .flat_map(|page| match page {
            Ok(p) => stream::iter(p.into_iter().map(|e| Ok(Listed::Object(e)))).boxed(),
            Err(e) => stream::iter([Err(e)]).boxed(),
        })
        .take_while(move |item| {
            let past = match (item, &range) {
                (Ok(l), Some(r)) => r.past_end(l.key()),
                _ => false,
            };
            futures::future::ready(!past)
        })
        .boxed()
    }
}

/// A row as it is written: relative key, size, ETag, last-modified (ms).
type Spilled = (String, u64, Option<String>, Option<i64>);
