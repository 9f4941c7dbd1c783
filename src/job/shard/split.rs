//! Splitting a corpus into key ranges for `plan --shards N`: one pass over the inventory (when
//! given) or one listing of the source, in constant memory, giving the corpus and the N ranges;
//! the `[shards]` table the plan file records; and where shards keep their progress records.

use crate::job::JobError;
use crate::plan::corpus::{Corpus, CorpusBuilder, InventoryFormat};
use crate::plan::file::{PlanFile, ShardRange, Shards};
use crate::shard::{PlannedRange, Sketch};
use crate::store::Store;
use crate::store::config::Remotes;
use crate::store::list::{Listed, list};
use futures::StreamExt;
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

fn usage(m: impl Into<String>) -> JobError {
    JobError::Usage(m.into())
}

/// The split `plan --shards N` computed, and the corpus it read on the way.
#[derive(Debug, Clone)]
pub struct Split {
    pub corpus: Corpus,
    pub ranges: Vec<PlannedRange>,
}

/// What `plan` was asked for that decides its split.
#[derive(Debug, Clone, Copy)]
pub struct SplitRequest<'a> {
    /// `--shards N` (no split without it).
    pub shards: Option<u32>,
    /// A plan file is saved (`--save NAME`): the ranges are written into it.
    pub save: bool,
    /// `--progress-location`.
    pub progress: Option<&'a str>,
    /// `--src`: where the shards read.
    pub src: Option<&'a str>,
    /// `--inventory FILE`.
    pub inventory: Option<&'a Path>,
    /// `--inventory-format` and `--s3-columns` as given (see [`inventory_format`]).
    pub inventory_format: &'a str,
    pub s3_columns: &'a str,
    /// The corpus was also described by `--bytes`, `--objects` or `--profile`.
    pub flags_given: bool,
}

/// `--inventory-format` resolved (with `--s3-columns`): the one rule `plan` and the shard split
/// both use.
pub fn inventory_format(format: &str, s3_columns: &str) -> Result<InventoryFormat, JobError> {
    Ok(match format {
        "auto" => InventoryFormat::Auto,
        "csv" => InventoryFormat::Csv,
        "jsonl" | "json" => InventoryFormat::JsonLines,
        "s3" => InventoryFormat::S3Inventory(
            s3_columns
                .split(',')
                .map(|s| s.trim().to_string())
                .collect(),
        ),
        other => {
            return Err(usage(format!(
                "--inventory-format {other:?}: use auto, csv, jsonl or s3"
            )));
        }
    })
}

/// `plan --shards N` (None without it).
pub fn split_for(req: &SplitRequest, config: Option<&Path>) -> Result<Option<Split>, JobError> {
    let Some(n) = req.shards else {
        return Ok(None);
    };
    if !req.save {
        return Err(usage(
            "--shards writes the ranges into a plan file: add --save NAME",
        ));
    }
    if let Some(p) = req.progress {
        crate::plan::file::check_location("--progress-location", p)?;
    }
    let inventory = match req.inventory {
        Some(p) => Some((p, inventory_format(req.inventory_format, req.s3_columns)?)),
        None => None,
    };
    split(n, req.src, inventory, req.flags_given, config).map(Some)
}

/// `plan --shards N`: one pass over the inventory (when given) or one listing of `--src`, in
/// constant memory, giving the corpus and the N ranges.
pub fn split(
    shards: u32,
    src: Option<&str>,
    inventory: Option<(&Path, InventoryFormat)>,
    flags_given: bool,
    config: Option<&Path>,
) -> Result<Split, JobError> {
    if shards == 0 {
        return Err(usage("--shards must be at least 1"));
    }
    let Some(src) = src else {
        return Err(usage(
            "--shards needs --src LOCATION: the plan records where each shard reads",
        ));
    };
    let sketch = Rc::new(RefCell::new(Sketch::new(shards)));
    if let Some((path, _)) = inventory
        && is_manifest(path)
    {
        let s = sketch.clone();
        let corpus = manifest_corpus(
            path,
            Some(src),
            config,
            Box::new(move |k: &str, size| s.borrow_mut().add(k, size)),
        )?;
        let ranges = sketch.borrow().split(shards);
        return Ok(Split { corpus, ranges });
    }
    if let Some((path, format)) = inventory {
        let s = sketch.clone();
        let corpus = Corpus::from_inventory_keys(
            path,
            format,
            Some(Box::new(move |k: &str, size| s.borrow_mut().add(k, size))),
        )?;
        let ranges = sketch.borrow().split(shards);
        return Ok(Split { corpus, ranges });
    }
    if flags_given {
        return Err(usage(
            "--shards without --inventory lists --src to split it and takes the corpus from that listing: leave out --bytes, --objects and --profile",
        ));
    }
    let remotes = Remotes::load(config)?;
    let store = Store::open(src, &remotes)?;
    crate::job::preflight::no_glob(&store)?;
    crate::job::preflight::reachable(&store)?;
    let hint = crate::job::trust::credentials_hint(&[&store]);
    let rt = super::super::runtime()?;
    let corpus = rt
        .block_on(async {
            let mut corpus = CorpusBuilder::default();
            let mut stream = list(&store);
            while let Some(item) = stream.next().await {
                if let Listed::Object(e) = item? {
                    sketch.borrow_mut().add(&e.key, e.size);
                    corpus.add(e.size, None);
                }
            }
            if corpus.objects() == 0 {
                return Err(usage(format!(
                    "--shards: {src} lists no objects; there is nothing to split"
                )));
            }
            Ok(corpus.finish(format!("listing {}", store.shown()))?)
        })
        .map_err(|e| e.naming_credentials(&hint))?;
    let ranges = sketch.borrow().split(shards);
    Ok(Split { corpus, ranges })
}

/// `--inventory` names a service's inventory manifest (an S3 Inventory `manifest.json`, an
/// Azure `<rule>-manifest.json`, a GCS report manifest) rather than a CSV or JSON-lines listing:
/// a location on a store, or a local JSON file that parses as one.
pub fn is_manifest(path: &Path) -> bool {
    if !path.is_file() {
        return path.to_str().is_some_and(|p| p.contains(':'));
    }
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    crate::inventory::manifest::Manifest::parse(&text, "").is_ok()
}

/// The corpus of an inventory manifest (its data files read one at a time, row by row), each
/// object's key (relative to `src`'s prefix when given; others left out) and size handed to
/// `on_key`.
pub fn manifest_corpus(
    path: &Path,
    src: Option<&str>,
    config: Option<&Path>,
    mut on_key: crate::plan::corpus::KeySink,
) -> Result<Corpus, JobError> {
    let remotes = Remotes::load(config)?;
    let prefix = match src {
        Some(s) => Store::open(s, &remotes)?.prefix,
        None => String::new(),
    };
    let given = path.display().to_string();
    let rt = super::super::runtime()?;
    let mut corpus = CorpusBuilder::default();
    rt.block_on(async {
        let opened = crate::inventory::open(&given, &remotes).await?;
        opened
            .for_each_row(&mut |r| {
                if let Some(k) = r.key.strip_prefix(prefix.as_str()) {
                    on_key(k, r.size);
                    corpus.add(r.size, r.class.as_deref());
                }
                Ok(())
            })
            .await
    })?;
    Ok(corpus.finish(format!("inventory {given}"))?)
}

/// The `[shards]` table of a plan built with the split's `ranges`.
pub fn table(ranges: &[PlannedRange], plan: &PlanFile, progress: Option<String>) -> Shards {
    use sha2::{Digest, Sha256};
    let count = ranges.len() as u32;
    let mut h = Sha256::new();
    for part in [
        plan.moverctl_plan.created.as_str(),
        plan.source.location.as_deref().unwrap_or(""),
        plan.destination.location.as_deref().unwrap_or(""),
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    for r in ranges {
        h.update(r.range.start.as_deref().unwrap_or("").as_bytes());
        h.update([0]);
    }
    let id: String = h
        .finalize()
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect();
    // `workers` machines run the shards one after another: each shard gets workers/count of
    // the whole move's time.
    let seconds: rust_decimal::Decimal = plan.prediction.seconds.parse().unwrap_or_default();
    let per = seconds * rust_decimal::Decimal::from(plan.transfer.workers.max(1))
        / rust_decimal::Decimal::from(count.max(1));
    Shards {
        id,
        count,
        progress,
        limits_are_per_shard: true,
        seconds_per_shard: per.round_dp(3).normalize().to_string(),
        ranges: ranges
            .iter()
            .enumerate()
            .map(|(i, r)| ShardRange {
                index: i as u32,
                start: r.range.start.clone().unwrap_or_default(),
                end: r.range.end.clone(),
                objects: r.objects,
                bytes: r.bytes,
            })
            .collect(),
    }
}

/// The progress location of a plan: its `[shards] progress`, `--progress-location`, or
/// `.moverctl-progress/` beside the destination prefix (in the bucket root when the destination
/// is a whole bucket or a local folder, where listings leave it out). Always ends in the plan id.
pub fn progress_location(
    shards: &Shards,
    given: Option<&str>,
    dst_location: &str,
    dst: &Store,
) -> Result<String, JobError> {
    if let Some(g) = given.or(shards.progress.as_deref()) {
        crate::plan::file::check_location("--progress-location", g)?;
        return Ok(format!("{}/{}", g.trim_end_matches('/'), shards.id));
    }
    let base = dst_location.trim_end_matches('/');
    let parent = if dst.prefix.trim_end_matches('/').is_empty() || dst.local_root.is_some() {
        base.to_string()
    } else {
        let rel = dst.prefix.trim_end_matches('/');
        // The location ends with the prefix: cut its last segment.
        match rel.rsplit_once('/') {
            Some((_, last)) => base[..base.len() - last.len() - 1].to_string(),
            None => base[..base.len() - rel.len()]
                .trim_end_matches('/')
                .to_string(),
        }
    };
    Ok(format!(
        "{parent}/{}/{}",
        crate::shard::PROGRESS_DIR,
        shards.id
    ))
}
