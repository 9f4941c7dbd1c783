//! One move split across machines: the split ([`split`]), `exec --shard K/N` running one range
//! with its progress records on a store ([`ShardRun`]), a shard's typed state, its share of the
//! plan's cost and the whole move as every shard's record tells it. The ranges themselves are in
//! [`crate::shard`]; the records' format in [`crate::transfer::progress_store`].

/// Splitting a corpus into key ranges for `plan --shards N` (the planning side of sharding).
pub mod split;

use super::{JobError, Observer};
use crate::exit::Exit;
use crate::journal::Journal;
use crate::money::Usd;
use crate::plan::file::PlanFile;
use crate::shard::{KeyRange, ShardId};
use crate::store::Store;
use crate::store::config::Remotes;
use crate::transfer::progress_store::{self, ProgressStore, RecordState, ShardStatus};
use crate::units::fmt_bytes;
use futures::StreamExt;
use rust_decimal::Decimal;
use std::path::Path;

pub use split::progress_location;

fn usage(m: impl Into<String>) -> JobError {
    JobError::Usage(m.into())
}

/// A shard being run by `exec`.
pub struct ShardRun {
    pub id: ShardId,
    pub range: KeyRange,
    pub plan_id: String,
    pub planned: (u64, u64),
    pub progress: ProgressStore,
}

/// `exec --shard SPEC`: checks the spec against the plan, narrows both stores to the range and
/// opens the progress location.
pub fn for_exec(
    plan: &PlanFile,
    spec: Option<&str>,
    progress: Option<&str>,
    dst_location: &str,
    src: &mut Store,
    dst: &mut Store,
    remotes: &Remotes,
) -> Result<Option<ShardRun>, JobError> {
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
        .map_err(JobError::Usage)?;
    let range = shards.range(id.index);
    src.range = Some(range.clone());
    dst.range = Some(range.clone());
    let loc = progress_location(shards, progress, dst_location, dst)?;
    let store = Store::open_destination(&loc, remotes).map_err(|e| {
        let e = JobError::from(e);
        if e.exit() == Exit::Failure {
            // A folder that cannot be made: the location cannot be written (exit 7).
            JobError::ProgressUnwritable {
                shard: id.to_string(),
                location: loc.clone(),
                cause: e.to_string(),
                journaled: " before copying anything".into(),
                hint: String::new(),
            }
        } else {
            e
        }
    })?;
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
    pub fn tag(&self) -> String {
        format!(
            "#shard-{}-of-{}-{}",
            self.id.index, self.id.count, self.plan_id
        )
    }

    /// Rebuilds the journal from the progress location, then writes and returns the starting
    /// status (the earlier attempt's first start, seconds and cost carried on). A progress
    /// location that cannot be written stops the shard here, before it copies anything.
    pub async fn start(
        &self,
        journal: &mut Journal,
        observer: &dyn Observer,
    ) -> Result<ShardStatus, JobError> {
        let taken = self
            .progress
            .restore(self.id.index, &self.range, journal)
            .await
            .map_err(progress_err)?;
        if taken > 0 {
            observer.note(&format!(
                "shard {}: {taken} verified objects taken from {}",
                self.id,
                self.progress.store.shown()
            ));
        }
        let earlier = self
            .progress
            .read_status(self.id.index)
            .await
            .map_err(progress_err)?;
        let s = journal.summary()?;
        let status = progress_store::starting_status(
            &self.plan_id,
            self.id,
            self.planned,
            (s.verified, s.verified_bytes),
            earlier.as_ref(),
        );
        if let Err(e) = self.progress.write_status(&status).await {
            return Err(self.unwritable(cause_of(e), None));
        }
        Ok(status)
    }

    /// Exit 7: the progress location could not be written. `journaled`: (verified objects in
    /// the local journal, how many of them are not on the progress location, its path).
    pub fn unwritable(&self, cause: String, journaled: Option<(u64, u64, &Path)>) -> JobError {
        JobError::ProgressUnwritable {
            shard: self.id.to_string(),
            location: self.progress.store.shown(),
            cause,
            journaled: match journaled {
                Some((n, missing, path)) => format!(
                    " after the objects in flight finished: {n} verified objects of this attempt are journaled locally in {} ({missing} of them not on the progress location; a restart on this machine skips them, one on a fresh machine checks them again at the destination)",
                    path.display()
                ),
                None => " before copying anything".into(),
            },
            hint: match super::trust::credentials_hint(&[&self.progress.store]) {
                h if h.is_empty() => h,
                h => format!("; {h}"),
            },
        }
    }
}

/// The cause of a progress error, without the location (the message names it once).
pub fn cause_of(e: progress_store::ProgressError) -> String {
    match e {
        progress_store::ProgressError::Store { message, .. } => message,
        other => other.to_string(),
    }
}

/// The cost lines a run is set against its plan on (the move's own: the plan's storage, retrieval
/// and idle-GPU lines are not a run's).
pub const COST_ITEMS: [&str; 3] = ["egress", "source_requests", "destination_requests"];

/// Objects, bytes, seconds and cost lines of a part of the move: planned or done.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    pub objects: u64,
    pub bytes: u64,
    pub seconds: Decimal,
    /// In [`COST_ITEMS`] order.
    pub cost: [Usd; 3],
}

impl Figures {
    pub fn total_cost(&self) -> Usd {
        self.cost.iter().copied().sum()
    }

    pub fn json(&self) -> serde_json::Value {
        let mut cost = serde_json::Map::new();
        for (k, v) in COST_ITEMS.iter().zip(self.cost) {
            cost.insert((*k).to_string(), v.to_json());
        }
        cost.insert("total".into(), self.total_cost().to_json());
        serde_json::json!({
            "objects": self.objects,
            "bytes": self.bytes,
            "seconds": crate::json::number(self.seconds.round_dp(3).normalize()),
            "cost": cost,
        })
    }

    /// What a shard's record says it did (every attempt so far).
    pub fn of_record(s: &ShardStatus) -> Figures {
        Figures {
            objects: s.objects_done,
            bytes: s.bytes_done,
            seconds: Decimal::from_f64_retain(s.seconds.max(s.attempt_seconds)).unwrap_or_default(),
            cost: COST_ITEMS.map(|k| s.cost_of(k)),
        }
    }
}

fn plan_cost(plan: &PlanFile, item: &str) -> Usd {
    plan.prediction
        .cost
        .get(item)
        .and_then(|v| Usd::parse(v).ok())
        .unwrap_or_default()
}

/// `part` of `whole` as a share of `amount`, exact to the micro-dollar (zero of nothing).
fn share(amount: Usd, part: u64, whole: u64) -> Usd {
    if whole == 0 {
        return Usd::ZERO;
    }
    Usd((amount.0 * Decimal::from(part) / Decimal::from(whole)).round_dp(6))
}

/// What the plan predicts for the whole move: its corpus, time (on its `workers` machines) and
/// cost lines.
pub fn planned_move(plan: &PlanFile) -> Figures {
    Figures {
        objects: plan.corpus.objects,
        bytes: plan.corpus.bytes,
        seconds: plan.prediction.seconds.parse().unwrap_or_default(),
        cost: COST_ITEMS.map(|k| plan_cost(plan, k)),
    }
}

/// What the plan predicts for shard `k`: its range's objects and bytes, the plan's seconds per
/// shard, and the move's cost lines in the range's share (egress by bytes, requests by objects).
pub fn planned_shard(plan: &PlanFile, k: u32) -> Figures {
    let shards = plan.shards.as_ref().expect("a sharded plan");
    let r = &shards.ranges[k as usize];
    let whole = planned_move(plan);
    Figures {
        objects: r.objects,
        bytes: r.bytes,
        seconds: shards.seconds_per_shard.parse().unwrap_or_default(),
        cost: [
            share(whole.cost[0], r.bytes, whole.bytes),
            share(whole.cost[1], r.objects, whole.objects),
            share(whole.cost[2], r.objects, whole.objects),
        ],
    }
}

/// The whole move as the shards' records tell it: their objects, bytes and cost added; seconds
/// from the first shard's start to the last record (wall time), and the shards' seconds added
/// (machine time).
pub struct MoveDone {
    pub figures: Figures,
    pub machine_seconds: Decimal,
    pub reported: usize,
    pub done: usize,
}

pub fn move_done(records: &[Option<ShardStatus>]) -> MoveDone {
    let mut f = Figures::default();
    let mut machine = Decimal::ZERO;
    let parse = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
    let (mut first, mut last) = (None, None);
    for r in records.iter().flatten() {
        let g = Figures::of_record(r);
        f.objects += g.objects;
        f.bytes += g.bytes;
        for (a, b) in f.cost.iter_mut().zip(g.cost) {
            *a += b;
        }
        machine += g.seconds;
        if let Some(t) = parse(r.began()) {
            first = Some(first.map_or(t, |f: chrono::DateTime<_>| f.min(t)));
        }
        if let Some(t) = parse(&r.updated) {
            last = Some(last.map_or(t, |l: chrono::DateTime<_>| l.max(t)));
        }
    }
    if let (Some(a), Some(b)) = (first, last) {
        f.seconds = Decimal::from((b - a).num_milliseconds().max(0)) / Decimal::from(1000);
    }
    MoveDone {
        figures: f,
        machine_seconds: machine.round_dp(3).normalize(),
        reported: records.iter().flatten().count(),
        done: records
            .iter()
            .flatten()
            .filter(|r| r.state == RecordState::Done)
            .count(),
    }
}

impl MoveDone {
    pub fn json(&self, count: u32) -> serde_json::Value {
        let mut v = self.figures.json();
        v["machine_seconds"] = crate::json::number(self.machine_seconds);
        v["shards"] =
            serde_json::json!({"count": count, "reported": self.reported, "done": self.done});
        v
    }
}

/// A shard's run set against the plan: the plan's figures for its range, what its record says
/// it did (every attempt so far), this run alone, and the whole move planned and (when every
/// shard's record could be read) done so far.
pub struct ShardView {
    pub id: ShardId,
    pub plan_id: String,
    pub attempts: u32,
    pub planned: Figures,
    pub done: Figures,
    pub this_run: Figures,
    pub whole: Figures,
    pub so_far: Option<MoveDone>,
}

impl ShardView {
    pub fn json(&self) -> serde_json::Value {
        let mut done_json = self.done.json();
        done_json["attempts"] = self.attempts.into();
        let mut json = serde_json::json!({
            "index": self.id.index, "count": self.id.count, "plan_id": self.plan_id,
            "planned": self.planned.json(),
            "done": done_json,
            "this_run": self.this_run.json(),
            "move": {"planned": self.whole.json()},
        });
        if let Some(m) = &self.so_far {
            json["move"]["done"] = m.json(self.id.count);
        }
        json
    }
}

impl ShardRun {
    /// This shard's run against the plan's figures for its range (every attempt so far, from
    /// `status`, the record just written), and the whole move against the plan as every
    /// shard's record tells it (`records`, None when they could not be read).
    pub fn against_plan(
        &self,
        plan: &PlanFile,
        status: &ShardStatus,
        this_run: &Figures,
        records: Option<&[Option<ShardStatus>]>,
    ) -> ShardView {
        ShardView {
            id: self.id,
            plan_id: self.plan_id.clone(),
            attempts: status.attempts,
            planned: planned_shard(plan, self.id.index),
            done: Figures::of_record(status),
            this_run: this_run.clone(),
            whole: planned_move(plan),
            so_far: records.map(move_done),
        }
    }

    /// Every shard's record (one GET each, a few at a time).
    pub async fn records(&self, count: u32) -> Result<Vec<Option<ShardStatus>>, JobError> {
        read_records(&self.progress, count).await
    }
}

async fn read_records(
    ps: &ProgressStore,
    count: u32,
) -> Result<Vec<Option<ShardStatus>>, JobError> {
    futures::stream::iter(0..count)
        .map(|k| ps.read_status(k))
        .buffered(16)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(progress_err)
}

pub fn progress_err(e: progress_store::ProgressError) -> JobError {
    match e {
        progress_store::ProgressError::Journal(j) => JobError::Journal(j),
        other => JobError::Failure(other.to_string()),
    }
}

/// One shard's state as `status` shows it: its record's state, or not started (no record) or
/// stale (a running record no longer updated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardState {
    NotStarted,
    Running,
    Stale,
    Done,
    Failed,
    Incomplete,
}

/// How far below the plan a shard's listing may fall (objects or bytes, in percent) and still be
/// done: objects deleted at the source since planning are normal, and a few are this little. A
/// listing that ends short, or a source that is another corpus, is far more.
pub const SHORTFALL_PERCENT: u64 = 1;

/// The shortfall message when `found` (objects, bytes) is below `planned` by more than
/// [`SHORTFALL_PERCENT`] of either, else None.
pub fn shortfall(found: (u64, u64), planned: (u64, u64)) -> Option<String> {
    let short =
        |f: u64, p: u64| u128::from(f) * 100 < u128::from(p) * u128::from(100 - SHORTFALL_PERCENT);
    (short(found.0, planned.0) || short(found.1, planned.1)).then(|| {
        format!(
            "incomplete: the listing found {}/{} objects and {}/{} of this shard's range in the plan, more than {SHORTFALL_PERCENT}% short; \
             objects deleted since planning account for a few, not this many: check that --src is the planned corpus and that its listing is whole, or plan again",
            found.0,
            planned.0,
            fmt_bytes(found.1),
            fmt_bytes(planned.1)
        )
    })
}

impl ShardState {
    pub fn as_str(&self) -> &'static str {
        match self {
            ShardState::NotStarted => "not started",
            ShardState::Running => "running",
            ShardState::Stale => "stale",
            ShardState::Done => "done",
            ShardState::Failed => "failed",
            ShardState::Incomplete => "incomplete",
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
    match s.state {
        RecordState::Done => ShardState::Done,
        RecordState::Failed => ShardState::Failed,
        RecordState::Incomplete => ShardState::Incomplete,
        RecordState::Running => {
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

/// Every shard of a sharded plan as its record on the progress location tells it, for
/// `status PLAN`.
pub struct ShardsStatus {
    /// Where the records were read.
    pub progress: String,
    pub records: Vec<Option<ShardStatus>>,
    pub states: Vec<ShardState>,
    /// The plan's figures for the whole move, and the move so far as the records tell it.
    pub planned: Figures,
    pub so_far: MoveDone,
    /// Verified objects and bytes, and failed objects, over every record.
    pub objects: u64,
    pub bytes: u64,
    pub failed: u64,
    /// What the shards running now achieve together, in bytes a second.
    pub aggregate: f64,
    /// Seconds left at that rate: `Some(0.0)` when every shard is done, None when none runs.
    pub eta: Option<f64>,
}

/// A shard's throughput in its current attempt, in bytes a second.
pub fn rate(s: &ShardStatus) -> f64 {
    if s.attempt_seconds > 0.0 {
        s.attempt_bytes as f64 / s.attempt_seconds
    } else {
        0.0
    }
}

impl ShardsStatus {
    /// How many shards are in `state`.
    pub fn count(&self, state: ShardState) -> usize {
        self.states.iter().filter(|s| **s == state).count()
    }

    pub fn all_done(&self) -> bool {
        self.states.iter().all(|s| *s == ShardState::Done)
    }
}

/// Reads every shard's record of `plan` (which has shards) from its progress location (the
/// plan's, `progress`, else beside `dst_location`); a running record not updated for
/// `stale_after` is stale.
pub fn status(
    remotes: &Remotes,
    plan: &PlanFile,
    dst_location: &str,
    progress: Option<&str>,
    stale_after: std::time::Duration,
) -> Result<ShardsStatus, JobError> {
    let shards = plan.shards.as_ref().expect("called for sharded plans");
    let dst = Store::open(dst_location, remotes)?;
    let loc = progress_location(shards, progress, dst_location, &dst)?;
    let ps = ProgressStore::new(Store::open(&loc, remotes)?);
    let hint = super::trust::credentials_hint(&[&ps.store]);
    let records: Vec<Option<ShardStatus>> = super::runtime()?
        .block_on(read_records(&ps, shards.count))
        .map_err(|e| e.naming_credentials(&hint))?;
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
    let aggregate: f64 = records
        .iter()
        .zip(&states)
        .filter(|(_, st)| **st == ShardState::Running)
        .filter_map(|(r, _)| r.as_ref().map(rate))
        .fold(0.0, |a, b| a + b);
    let left = plan.corpus.bytes.saturating_sub(bytes);
    let eta = if states.iter().all(|s| *s == ShardState::Done) {
        Some(0.0)
    } else if aggregate > 0.0 {
        Some(left as f64 / aggregate)
    } else {
        None
    };
    Ok(ShardsStatus {
        progress: ps.store.shown(),
        planned: planned_move(plan),
        so_far: move_done(&records),
        records,
        states,
        objects,
        bytes,
        failed,
        aggregate,
        eta,
    })
}

#[cfg(test)]
#[cfg(test)]
mod tests {
    #[test]
    fn a_shortfall_within_the_tolerance_is_done_and_beyond_it_incomplete() {
        use super::shortfall;
        // A few objects deleted since planning: done.
        assert_eq!(shortfall((990, 99_000), (1000, 100_000)), None);
        assert_eq!(shortfall((1000, 100_000), (1000, 100_000)), None);
        assert_eq!(
            shortfall((1200, 120_000), (1000, 100_000)),
            None,
            "more is not short"
        );
        // A listing that stopped after its first page, or another corpus: incomplete.
        let m = shortfall((1000, 50_000), (2063, 103_150)).unwrap();
        assert!(
            m.contains("1000/2063 objects") && m.contains("more than 1% short"),
            "{m}"
        );
        assert!(shortfall((0, 0), (10, 1000)).is_some());
        // The same objects, far fewer bytes (objects rewritten smaller?): still short.
        assert!(shortfall((1000, 10), (1000, 100_000)).is_some());
    }

    use super::*;

    fn rec(state: RecordState, updated: chrono::DateTime<chrono::Utc>) -> ShardStatus {
        let mut s = progress_store::starting_status(
            "p",
            ShardId { index: 0, count: 1 },
            (1, 1),
            (0, 0),
            None,
        );
        s.state = state;
        s.updated = updated.to_rfc3339();
        s
    }

    #[test]
    fn a_shards_share_of_a_cost_is_exact_and_the_move_adds_up_its_records() {
        let usd = |v: &str| Usd::parse(v).unwrap();
        // A third of $1 to the micro-dollar; nothing of an empty corpus.
        assert_eq!(share(usd("1"), 1, 3), usd("0.333333"));
        assert_eq!(share(usd("1"), 0, 0), Usd::ZERO);
        let mut a = rec(RecordState::Done, chrono::Utc::now());
        a.started = "2026-12-01T10:00:00Z".into();
        a.first_started = "2026-12-01T09:00:00Z".into();
        a.updated = "2026-12-01T10:30:00Z".into();
        a.objects_done = 10;
        a.bytes_done = 100;
        a.seconds = 120.5;
        a.add_cost(&[
            ("egress", usd("0.10")),
            ("source_requests", usd("0.000004")),
        ]);
        // A second attempt adds to the first.
        a.add_cost(&[
            ("egress", usd("0.05")),
            ("destination_requests", usd("0.01")),
        ]);
        assert_eq!(a.cost_of("egress"), usd("0.15"));
        assert_eq!(a.cost_of("total"), usd("0.160004"));
        let mut b = rec(RecordState::Running, chrono::Utc::now());
        b.started = "2026-12-01T09:30:00Z".into();
        b.first_started.clear();
        b.updated = "2026-12-01T11:00:00Z".into();
        b.objects_done = 5;
        b.bytes_done = 50;
        b.attempt_seconds = 30.0;
        let m = move_done(&[Some(a), None, Some(b)]);
        assert_eq!((m.figures.objects, m.figures.bytes), (15, 150));
        // Wall time from the first attempt's start (09:00) to the last record (11:00).
        assert_eq!(m.figures.seconds, Decimal::from(7200));
        assert_eq!(m.machine_seconds, Decimal::new(1505, 1));
        assert_eq!(m.figures.total_cost(), usd("0.160004"));
        assert_eq!((m.reported, m.done), (2, 1));
        let j = m.json(3);
        assert_eq!(j["cost"]["total"].to_string(), "0.160004");
        assert_eq!(j["shards"]["count"], 3);
    }

    #[test]
    fn a_restarted_shard_carries_its_first_start_seconds_and_cost() {
        let mut first = rec(RecordState::Failed, chrono::Utc::now());
        first.first_started = "2026-12-01T09:00:00Z".into();
        first.attempts = 1;
        first.seconds = 40.0;
        first.add_cost(&[("egress", Usd::parse("0.2").unwrap())]);
        let next = progress_store::starting_status(
            "p",
            ShardId { index: 0, count: 1 },
            (1, 1),
            (0, 0),
            Some(&first),
        );
        assert_eq!(next.first_started, "2026-12-01T09:00:00Z");
        assert_eq!(next.attempts, 2);
        assert_eq!(next.seconds, 40.0);
        assert_eq!(next.cost_of("total"), Usd::parse("0.2").unwrap());
        assert_eq!(next.state, RecordState::Running);
    }

    #[test]
    fn states_from_records_and_their_age() {
        let now = chrono::Utc::now();
        let ten = std::time::Duration::from_secs(600);
        assert_eq!(state_of(None, now, ten), ShardState::NotStarted);
        assert_eq!(
            state_of(Some(&rec(RecordState::Done, now)), now, ten),
            ShardState::Done
        );
        assert_eq!(
            state_of(Some(&rec(RecordState::Failed, now)), now, ten),
            ShardState::Failed
        );
        assert_eq!(
            state_of(Some(&rec(RecordState::Running, now)), now, ten),
            ShardState::Running
        );
        let old = now - chrono::Duration::seconds(601);
        assert_eq!(
            state_of(Some(&rec(RecordState::Running, old)), now, ten),
            ShardState::Stale
        );
    }
}
