//! A store's own inventory reports as the source side of a run (`copy`/`exec --inventory`) or of
//! `plan --shards`: the manifest of an S3 Inventory, an Azure Blob Inventory or a GCS inventory
//! report ([`manifest`]), read from a local file or a store location; its data files, CSV or
//! Parquet, read one at a time, row by row ([`rows`]); and for a run, their objects under the
//! source location put in key order with bounded memory ([`sorted`]: the services promise no
//! order across files, and Azure's rows may repeat).

pub mod manifest;
pub mod rows;
pub mod sorted;

use crate::store::Store;
use crate::store::config::Remotes;
use futures::StreamExt;
use manifest::{FileRef, Manifest};
use object_store::ObjectStoreExt;
use rows::Row;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    #[error("inventory manifest {file}: {message}")]
    Manifest { file: String, message: String },
    #[error("inventory file {file}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Data {
        file: String,
        line: Option<u64>,
        message: String,
    },
    #[error("inventory {file}: {message}")]
    Fetch { file: String, message: String },
    #[error(transparent)]
    Open(#[from] crate::store::OpenError),
    #[error("inventory: {0}")]
    Spill(String),
}

/// A manifest found and read, and where its data files are.
pub struct Opened {
    pub manifest: Manifest,
    /// The manifest as given.
    pub shown: String,
    at: At,
}

enum At {
    Local(PathBuf),
    /// The bucket (prefix cut) the manifest is in, and the manifest's key.
    Store(Box<Store>, String),
}

/// Reads the manifest at `given` (a local file, or a location such as
/// `s3://inv-bucket/path/manifest.json` or `remote:container/…/rule-manifest.json`).
pub async fn open(given: &str, remotes: &Remotes) -> Result<Opened, InventoryError> {
    let fetch = |m: String| InventoryError::Fetch {
        file: given.to_string(),
        message: m,
    };
    let local = Path::new(given);
    let (text, at) = if local.is_file() {
        let t = std::fs::read_to_string(local).map_err(|e| fetch(format!("cannot read: {e}")))?;
        (t, At::Local(local.to_path_buf()))
    } else {
        let store = Store::open(given.trim_end_matches('/'), remotes)?;
        if store.local_root.is_some() {
            return Err(fetch(
                "no such file (give the manifest.json itself, or a store location of it)".into(),
            ));
        }
        let key = store.prefix.trim_end_matches('/').to_string();
        let mut root = store;
        root.prefix = String::new();
        let bytes = get(&root, &key, given).await?;
        let t = String::from_utf8(bytes.to_vec()).map_err(|_| fetch("not UTF-8 text".into()))?;
        (t, At::Store(Box::new(root), key))
    };
    let manifest = Manifest::parse(&text, given)?;
    Ok(Opened {
        manifest,
        shown: given.to_string(),
        at,
    })
}

async fn get(root: &Store, key: &str, shown: &str) -> Result<bytes::Bytes, InventoryError> {
    let fetch = |m: String| InventoryError::Fetch {
        file: shown.to_string(),
        message: m,
    };
    let path = root
        .path_of(key)
        .map_err(|e| fetch(format!("not a key: {e}")))?;
    let r = root
        .inner
        .get(&path)
        .await
        .map_err(|e| fetch(format!("cannot read it: {e}")))?;
    r.bytes()
        .await
        .map_err(|e| fetch(format!("cannot read it: {e}")))
}

impl Opened {
    /// Every object row of every data file, in the files' order, handed to `each`; returns the
    /// rows that are no current object (delete markers, older versions, snapshots, folders).
    /// Files on a store are downloaded one at a time into a temporary file (Parquet is read
    /// from its footer), read, and removed: memory holds one row group at most.
    pub async fn for_each_row(
        &self,
        each: &mut dyn FnMut(Row) -> Result<(), InventoryError>,
    ) -> Result<u64, InventoryError> {
        let mut skipped = 0;
        for f in &self.manifest.files {
            match &self.at {
                At::Local(manifest) => {
                    let path = local_file(manifest, f).ok_or_else(|| InventoryError::Fetch {
                        file: self.shown.clone(),
                        message: format!(
                            "its data file {:?} is not beside it (looked in its folder, its data/ folder and data/ one level up)",
                            f.name()
                        ),
                    })?;
                    let shown = path.display().to_string();
                    skipped += rows::read_file(&path, &shown, &self.manifest, each)?;
                }
                At::Store(root, manifest_key) => {
                    let key = match f {
                        FileRef::FromRoot(k) => k.clone(),
                        FileRef::Beside(n) => match manifest_key.rsplit_once('/') {
                            Some((dir, _)) => format!("{dir}/{n}"),
                            None => n.clone(),
                        },
                    };
                    let shown = format!("{}{key}", root.shown());
                    let tmp = download(root, &key, &shown).await?;
                    let read = rows::read_file(&tmp.0, &shown, &self.manifest, each);
                    skipped += read?;
                }
            }
        }
        Ok(skipped)
    }
}

/// A data file named by a local manifest: beside it, in its `data/` folder, or in `data/` one
/// level up (S3 writes `…/config-ID/data/*.csv.gz` beside `…/config-ID/<time>/manifest.json`),
/// or the manifest's key path below any folder above it.
fn local_file(manifest: &Path, f: &FileRef) -> Option<PathBuf> {
    let dir = manifest.parent().unwrap_or(Path::new("."));
    let base = Path::new(f.name()).file_name()?;
    let mut tries = vec![
        dir.join(base),
        dir.join("data").join(base),
        dir.join("..").join("data").join(base),
    ];
    tries.extend(dir.ancestors().map(|a| a.join(f.name())));
    tries.into_iter().find(|p| p.is_file())
}

/// A temporary file, removed when dropped.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

async fn download(root: &Store, key: &str, shown: &str) -> Result<TempFile, InventoryError> {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    static N: AtomicU64 = AtomicU64::new(0);
    let fetch = |m: String| InventoryError::Fetch {
        file: shown.to_string(),
        message: m,
    };
    let path = root
        .path_of(key)
        .map_err(|e| fetch(format!("not a key: {e}")))?;
    let tmp = TempFile(std::env::temp_dir().join(format!(
        "moverctl-inventory-{}-{}",
        std::process::id(),
        N.fetch_add(1, Relaxed)
    )));
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(&tmp.0).map_err(|e| fetch(format!("temporary file: {e}")))?,
    );
    let mut body = root
        .inner
        .get(&path)
        .await
        .map_err(|e| fetch(format!("cannot read it: {e}")))?
        .into_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| fetch(format!("reading it broke off: {e}")))?;
        out.write_all(&chunk)
            .map_err(|e| fetch(format!("temporary file: {e}")))?;
    }
    out.flush()
        .map_err(|e| fetch(format!("temporary file: {e}")))?;
    Ok(tmp)
}

/// The bucket or container a store location is in (None for local folders).
pub fn bucket_of(store: &Store) -> Option<&str> {
    use crate::store::location::Location;
    match &store.location {
        Location::S3 { bucket, .. } | Location::Gcs { bucket, .. } => Some(bucket),
        Location::Azure { container, .. } => Some(container),
        _ => None,
    }
}
