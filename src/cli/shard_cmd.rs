//! The command-line side of a move split across machines: `plan --shards N` (the split, written
//! into the plan), `exec --shard K/N|auto` (one range, with its progress on a store) and
//! `status PLAN` of a sharded plan (every shard's record). The ranges and the split are in
//! [`crate::shard`]; progress records in [`crate::transfer::progress_store`].

use super::CliError;
use super::copy_cmd::usage;
use super::exit::Exit;
use super::plan_cmd::PlanArgs;
use crate::journal::Journal;
use crate::plan::corpus::{Corpus, CorpusBuilder, InventoryFormat};
use crate::plan::file::{PlanFile, ShardRange, Shards};
use crate::shard::{KeyRange, PlannedRange, ShardId, Sketch};
use crate::store::Store;
use crate::store::config::Remotes;
use crate::store::list::{Listed, list};
use crate::transfer::progress_store::{self, ProgressStore, ShardStatus};
use crate::units::fmt_bytes;
use futures::StreamExt;
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

/// The split `plan --shards N` computed, and the corpus it read on the way.
pub(super) struct Split {
    pub corpus: Corpus,
    pub ranges: Vec<PlannedRange>,
}

/// `--inventory-format` resolved: the one rule `plan` and the shard split both use.
pub(super) fn inventory_format(args: &PlanArgs) -> Result<InventoryFormat, CliError> {
    Ok(match args.inventory_format.as_str() {
        "auto" => InventoryFormat::Auto,
        "csv" => InventoryFormat::Csv,
        "jsonl" | "json" => InventoryFormat::JsonLines,
        "s3" => InventoryFormat::S3Inventory(
            args.s3_columns
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
pub(super) fn split_for(args: &PlanArgs, config: Option<&Path>) -> Result<Option<Split>, CliError> {
    let Some(n) = args.shards else {
        return Ok(None);
    };
    if args.save.is_none() {
        return Err(usage(
            "--shards writes the ranges into a plan file: add --save NAME",
        ));
    }
    if let Some(p) = &args.progress {
        crate::plan::file::check_location("--progress-location", p)?;
    }
    let inventory = match &args.inventory {
        Some(p) => Some((p.as_path(), inventory_format(args)?)),
        None => None,
    };
    split(
        n,
        args.src.as_deref(),
        inventory,
        args.bytes.is_some() || args.objects.is_some() || args.profile.is_some(),
        config,
    )
    .map(Some)
}

/// `plan --shards N`: one pass over the inventory (when given) or one listing of `--src`, in
/// constant memory, giving the corpus and the N ranges.
pub(super) fn split(
    shards: u32,
    src: Option<&str>,
    inventory: Option<(&Path, InventoryFormat)>,
    flags_given: bool,
    config: Option<&Path>,
) -> Result<Split, CliError> {
    if shards == 0 {
        return Err(usage("--shards must be at least 1"));
    }
    if src.is_none() {
        return Err(usage(
            "--shards needs --src LOCATION: the plan records where each shard reads",
        ));
    }
    let sketch = Rc::new(RefCell::new(Sketch::new(shards)));
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
    let src = src.expect("checked above");
    let remotes = Remotes::load(config)?;
    let store = Store::open(src, &remotes)?;
    let hint = super::stores::credentials_hint(&[&store]);
    let rt = super::runtime()?;
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

/// The `[shards]` table of a plan built with `split`.
pub(super) fn table(split: Split, plan: &PlanFile, progress: Option<String>) -> Shards {
    use sha2::{Digest, Sha256};
    let count = split.ranges.len() as u32;
    let mut h = Sha256::new();
    for part in [
        plan.moverctl_plan.created.as_str(),
        plan.source.location.as_deref().unwrap_or(""),
        plan.destination.location.as_deref().unwrap_or(""),
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    for r in &split.ranges {
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
        ranges: split
            .ranges
            .into_iter()
            .enumerate()
            .map(|(i, r)| ShardRange {
                index: i as u32,
                start: r.range.start.unwrap_or_default(),
                end: r.range.end,
                objects: r.objects,
                bytes: r.bytes,
            })
            .collect(),
    }
}

/// The progress location of a plan: its `[shards] progress`, `--progress-location`, or
/// `.moverctl-progress/` beside the destination prefix (in the bucket root when the destination
/// is a whole bucket or a local folder, where listings leave it out). Always ends in the plan id.
pub(super) fn progress_location(
    shards: &Shards,
    given: Option<&str>,
    dst_location: &str,
    dst: &Store,
) -> Result<String, CliError> {
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

/// A shard being run by `exec`.
pub(super) struct ShardRun {
    pub id: ShardId,
    pub range: KeyRange,
    pub plan_id: String,
    pub planned: (u64, u64),
    pub progress: ProgressStore,
}

/// `exec --shard SPEC`: checks the spec against the plan, narrows both stores to the range and
/// opens the progress location.
pub(super) fn for_exec(
    plan: &PlanFile,
    spec: Option<&str>,
    progress: Option<&str>,
    dst_location: &str,
    src: &mut Store,
    dst: &mut Store,
    remotes: &Remotes,
) -> Result<Option<ShardRun>, CliError> {
    let Some(spec) = spec else {
        if progress.is_some() {
            return Err(usage("--progress-location goes with --shard"));
        }
        return Ok(None);
    };
    let Some(shards) = &plan.shards else {
        return Err(usage(
            "--shard: this plan has no shards; make one with `moverctl plan … --src LOCATION --shards N --save NAME`",
        ));
    };
    let id = crate::shard::parse_shard(spec, shards.count, |v| std::env::var(v).ok())
        .map_err(CliError::Usage)?;
    let range = shards.range(id.index);
    src.range = Some(range.clone());
    dst.range = Some(range.clone());
    let loc = progress_location(shards, progress, dst_location, dst)?;
    let store = Store::open_destination(&loc, remotes)?;
    let r = &shards.ranges[id.index as usize];
    Ok(Some(ShardRun {
        id,
        range,
        plan_id: shards.id.clone(),
        planned: (r.objects, r.bytes),
        progress: ProgressStore::new(store),
    }))
}

impl ShardRun {
    /// Names this shard in lock and journal paths, so shards on one machine do not collide.
    pub(super) fn tag(&self) -> String {
        format!(
            "#shard-{}-of-{}-{}",
            self.id.index, self.id.count, self.plan_id
        )
    }

    /// Rebuilds the journal from the progress location, then returns the starting status.
    pub(super) async fn start(&self, journal: &mut Journal) -> Result<ShardStatus, CliError> {
        let taken = self
            .progress
            .restore(self.id.index, &self.range, journal)
            .await
            .map_err(progress_err)?;
        if taken > 0 {
            eprintln!(
                "moverctl: shard {}: {taken} verified objects taken from {}",
                self.id,
                self.progress.store.shown()
            );
        }
        let s = journal.summary()?;
        Ok(progress_store::starting_status(
            &self.plan_id,
            self.id,
            self.planned,
            (s.verified, s.verified_bytes),
        ))
    }
}

impl ShardRun {
    /// This shard's run against what the plan put in its range (objects, bytes) and the time the
    /// plan predicts per shard; as JSON and as a line of text.
    pub(super) fn against_plan(
        &self,
        r: &crate::transfer::Report,
        plan: &PlanFile,
    ) -> (serde_json::Value, String) {
        let predicted: f64 = plan
            .shards
            .as_ref()
            .and_then(|s| s.seconds_per_shard.parse().ok())
            .unwrap_or(0.0);
        let objects = r.copied + r.skipped;
        let bytes = r.copied_bytes + r.skipped_bytes;
        let secs = r.elapsed.as_secs_f64();
        let json = serde_json::json!({
            "index": self.id.index, "count": self.id.count, "plan_id": self.plan_id,
            "planned": {"objects": self.planned.0, "bytes": self.planned.1,
                        "seconds": predicted},
            "done": {"objects": objects, "bytes": bytes, "seconds": secs},
        });
        let text = format!(
            "shard {}: {objects} of {} planned objects, {} of {}, {secs:.1} s (the plan predicts {predicted:.1} s per shard); the whole move: moverctl status PLAN\n",
            self.id,
            self.planned.0,
            fmt_bytes(bytes),
            fmt_bytes(self.planned.1),
        );
        (json, text)
    }
}

pub(super) fn progress_err(e: progress_store::ProgressError) -> CliError {
    match e {
        progress_store::ProgressError::Journal(j) => CliError::Journal(j),
        other => CliError::Failure(other.to_string()),
    }
}

/// One shard's state as `status` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShardState {
    NotStarted,
    Running,
    Stale,
    Done,
    Failed,
}

impl ShardState {
    fn as_str(&self) -> &'static str {
        match self {
            ShardState::NotStarted => "not started",
            ShardState::Running => "running",
            ShardState::Stale => "stale",
            ShardState::Done => "done",
            ShardState::Failed => "failed",
        }
    }
}

/// A shard's state from its record: no record is not started; a running record with no update
/// for `stale_after` is stale.
pub fn state_of(
    s: Option<&ShardStatus>,
    now: chrono::DateTime<chrono::Utc>,
    stale_after: std::time::Duration,
) -> ShardState {
    let Some(s) = s else {
        return ShardState::NotStarted;
    };
    match s.state.as_str() {
        "done" => ShardState::Done,
        "failed" => ShardState::Failed,
        _ => {
            let updated = chrono::DateTime::parse_from_rfc3339(&s.updated)
                .map(|t| t.with_timezone(&chrono::Utc))
                .unwrap_or_default();
            let age = (now - updated).to_std().unwrap_or_default();
            if age > stale_after {
                ShardState::Stale
            } else {
                ShardState::Running
            }
        }
    }
}

/// `status PLAN` of a sharded plan: every shard's record from the progress location.
pub(super) fn status(
    remotes: &Remotes,
    plan: &PlanFile,
    dst_location: &str,
    progress: Option<&str>,
    stale_after: std::time::Duration,
    json: bool,
) -> Result<Exit, CliError> {
    let shards = plan.shards.as_ref().expect("called for sharded plans");
    let dst = Store::open(dst_location, remotes)?;
    let loc = progress_location(shards, progress, dst_location, &dst)?;
    let ps = ProgressStore::new(Store::open(&loc, remotes)?);
    let hint = super::stores::credentials_hint(&[&ps.store]);
    let rt = super::runtime()?;
    let records: Vec<Option<ShardStatus>> = rt
        .block_on(async {
            // A few at a time: one GET per shard.
            futures::stream::iter(0..shards.count)
                .map(|k| ps.read_status(k))
                .buffered(16)
                .collect::<Vec<_>>()
                .await
                .into_iter()
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(|e| progress_err(e).naming_credentials(&hint))?;
    let now = chrono::Utc::now();
    let states: Vec<ShardState> = records
        .iter()
        .map(|r| state_of(r.as_ref(), now, stale_after))
        .collect();
    let sum = |f: fn(&ShardStatus) -> u64| records.iter().flatten().map(f).sum::<u64>();
    let (objects, bytes, failed) = (
        sum(|s| s.objects_done),
        sum(|s| s.bytes_done),
        sum(|s| s.failed),
    );
    let rate = |s: &ShardStatus| {
        if s.attempt_seconds > 0.0 {
            s.attempt_bytes as f64 / s.attempt_seconds
        } else {
            0.0
        }
    };
    // The move's rate: what the shards running now achieve together.
    let aggregate: f64 = records
        .iter()
        .zip(&states)
        .filter(|(_, st)| **st == ShardState::Running)
        .filter_map(|(r, _)| r.as_ref().map(rate))
        .fold(0.0, |a, b| a + b);
    let left = plan.corpus.bytes.saturating_sub(bytes);
    let all_done = states.iter().all(|s| *s == ShardState::Done);
    let eta = if all_done {
        Some(0.0)
    } else if aggregate > 0.0 {
        Some(left as f64 / aggregate)
    } else {
        None
    };
    let count = |st: ShardState| states.iter().filter(|s| **s == st).count();
    if json {
        let per: Vec<serde_json::Value> = records
            .iter()
            .zip(&states)
            .enumerate()
            .map(|(k, (r, st))| {
                let planned = &shards.ranges[k];
                serde_json::json!({
                    "shard": k,
                    "state": st.as_str(),
                    "objects_done": r.as_ref().map_or(0, |s| s.objects_done),
                    "bytes_done": r.as_ref().map_or(0, |s| s.bytes_done),
                    "failed": r.as_ref().map_or(0, |s| s.failed),
                    "bytes_per_second": r.as_ref().map_or(0.0, rate),
                    "last_update": r.as_ref().map(|s| s.updated.clone()),
                    "host": r.as_ref().map(|s| s.host.clone()),
                    "planned": {"objects": planned.objects, "bytes": planned.bytes},
                })
            })
            .collect();
        println!(
            "{}",
            super::json::stamp(
                super::json::SHARDS_STATUS,
                serde_json::json!({
                    "plan_id": shards.id,
                    "progress": ps.store.shown(),
                    "shards": per,
                    "total": {
                        "objects_done": objects, "bytes_done": bytes, "failed": failed,
                        "planned": {"objects": plan.corpus.objects, "bytes": plan.corpus.bytes},
                        "bytes_per_second": aggregate,
                        "eta_seconds": eta,
                        "states": {
                            "not_started": count(ShardState::NotStarted),
                            "running": count(ShardState::Running),
                            "stale": count(ShardState::Stale),
                            "done": count(ShardState::Done),
                            "failed": count(ShardState::Failed),
                        },
                        "done": all_done,
                    },
                })
            )
        );
        return Ok(Exit::Success);
    }
    println!(
        "plan {} ({} shards), progress at {}",
        shards.id,
        shards.count,
        ps.store.shown()
    );
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::NOTHING);
    t.set_header([
        "shard",
        "state",
        "objects",
        "bytes",
        "failed",
        "rate",
        "last update",
        "host",
    ]);
    for (k, (r, st)) in records.iter().zip(&states).enumerate() {
        let planned = &shards.ranges[k];
        t.add_row([
            k.to_string(),
            st.as_str().to_string(),
            format!(
                "{}/{}",
                r.as_ref().map_or(0, |s| s.objects_done),
                planned.objects
            ),
            format!(
                "{}/{}",
                fmt_bytes(r.as_ref().map_or(0, |s| s.bytes_done)),
                fmt_bytes(planned.bytes)
            ),
            r.as_ref().map_or(0, |s| s.failed).to_string(),
            r.as_ref()
                .map(|s| format!("{}/s", fmt_bytes(rate(s) as u64)))
                .unwrap_or_default(),
            r.as_ref().map(|s| s.updated.clone()).unwrap_or_default(),
            r.as_ref().map(|s| s.host.clone()).unwrap_or_default(),
        ]);
    }
    println!("{t}");
    println!(
        "total: {objects}/{} objects, {}/{}, {failed} failed; {} done, {} running, {} stale, {} failed, {} not started; {}/s; ETA {}",
        plan.corpus.objects,
        fmt_bytes(bytes),
        fmt_bytes(plan.corpus.bytes),
        count(ShardState::Done),
        count(ShardState::Running),
        count(ShardState::Stale),
        count(ShardState::Failed),
        count(ShardState::NotStarted),
        fmt_bytes(aggregate as u64),
        match eta {
            Some(0.0) => "none (done)".to_string(),
            Some(s) => humantime::format_duration(std::time::Duration::from_secs(s.ceil() as u64))
                .to_string(),
            None => "unknown (no shard running)".into(),
        }
    );
    Ok(Exit::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(state: &str, updated: chrono::DateTime<chrono::Utc>) -> ShardStatus {
        let mut s =
            progress_store::starting_status("p", ShardId { index: 0, count: 1 }, (1, 1), (0, 0));
        s.state = state.into();
        s.updated = updated.to_rfc3339();
        s
    }

    #[test]
    fn states_from_records_and_their_age() {
        let now = chrono::Utc::now();
        let ten = std::time::Duration::from_secs(600);
        assert_eq!(state_of(None, now, ten), ShardState::NotStarted);
        assert_eq!(
            state_of(Some(&rec("done", now)), now, ten),
            ShardState::Done
        );
        assert_eq!(
            state_of(Some(&rec("failed", now)), now, ten),
            ShardState::Failed
        );
        assert_eq!(
            state_of(Some(&rec("running", now)), now, ten),
            ShardState::Running
        );
        let old = now - chrono::Duration::seconds(601);
        assert_eq!(
            state_of(Some(&rec("running", old)), now, ten),
            ShardState::Stale
        );
    }
}
