//! The command-line side of a move split across machines: `plan --shards N` (the split, written
//! into the plan), `exec --shard K/N|auto` (one range, with its progress on a store) and
//! `status PLAN` of a sharded plan (every shard's record). The ranges and the split are in
//! [`crate::shard`]; progress records in [`crate::transfer::progress_store`].

use super::CliError;
use super::copy_cmd::usage;
use super::exit::Exit;
use crate::journal::Journal;
use crate::money::Usd;
use crate::plan::file::PlanFile;
use crate::shard::{KeyRange, ShardId};
use crate::store::Store;
use crate::store::config::Remotes;
use crate::transfer::progress_store::{self, ProgressStore, ShardStatus};
use crate::units::{fmt_bytes, fmt_duration};
use futures::StreamExt;
use rust_decimal::Decimal;
use std::path::Path;

/// Where shards keep their progress records: in the job layer, used by `exec` and `status` here.
pub(super) use crate::job::shard::split::progress_location;

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
    let store = Store::open_destination(&loc, remotes).map_err(|e| {
        let e = CliError::from(e);
        if e.exit() == Exit::Failure {
            // A folder that cannot be made: the location cannot be written (exit 7).
            CliError::ProgressUnwritable {
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
    pub(super) fn tag(&self) -> String {
        format!(
            "#shard-{}-of-{}-{}",
            self.id.index, self.id.count, self.plan_id
        )
    }

    /// Rebuilds the journal from the progress location, then writes and returns the starting
    /// status (the earlier attempt's first start, seconds and cost carried on). A progress
    /// location that cannot be written stops the shard here, before it copies anything.
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
    pub(super) fn unwritable(
        &self,
        cause: String,
        journaled: Option<(u64, u64, &Path)>,
    ) -> CliError {
        CliError::ProgressUnwritable {
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
            hint: match super::stores::credentials_hint(&[&self.progress.store]) {
                h if h.is_empty() => h,
                h => format!("; {h}"),
            },
        }
    }
}

/// The cause of a progress error, without the location (the message names it once).
pub(super) fn cause_of(e: progress_store::ProgressError) -> String {
    match e {
        progress_store::ProgressError::Store { message, .. } => message,
        other => other.to_string(),
    }
}

/// The cost lines a run is set against its plan on (the move's own: the plan's storage, retrieval
/// and idle-GPU lines are not a run's).
pub(super) const COST_ITEMS: [&str; 3] = ["egress", "source_requests", "destination_requests"];

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
            "seconds": super::json::number(self.seconds.round_dp(3).normalize()),
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
            .filter(|r| r.state == "done")
            .count(),
    }
}

impl MoveDone {
    pub fn json(&self, count: u32) -> serde_json::Value {
        let mut v = self.figures.json();
        v["machine_seconds"] = super::json::number(self.machine_seconds);
        v["shards"] =
            serde_json::json!({"count": count, "reported": self.reported, "done": self.done});
        v
    }
}

/// One row of a planned-against-done table: `label`, then pairs of (planned, done) cells.
fn rows(pairs: &[(&Figures, &Figures)]) -> Vec<Vec<String>> {
    let secs = |d: Decimal| fmt_duration(d);
    let mut out = vec![
        vec!["objects".to_string()],
        vec!["bytes".to_string()],
        vec!["time".to_string()],
    ];
    for k in COST_ITEMS {
        out.push(vec![k.replace('_', " ")]);
    }
    out.push(vec!["cost".to_string()]);
    for (p, d) in pairs {
        for f in [p, d] {
            out[0].push(f.objects.to_string());
            out[1].push(fmt_bytes(f.bytes));
            out[2].push(secs(f.seconds));
            for (i, c) in f.cost.iter().enumerate() {
                out[3 + i].push(c.human());
            }
            out[6].push(f.total_cost().human());
        }
    }
    out
}

impl ShardRun {
    /// This shard's run against the plan's figures for its range (every attempt so far, from
    /// `status`, the record just written), and the whole move against the plan as every
    /// shard's record tells it (`records`, None when they could not be read); as JSON and as
    /// text.
    pub(super) fn against_plan(
        &self,
        plan: &PlanFile,
        status: &ShardStatus,
        this_run: &Figures,
        records: Option<&[Option<ShardStatus>]>,
    ) -> (serde_json::Value, String) {
        let planned = planned_shard(plan, self.id.index);
        let done = Figures::of_record(status);
        let whole = planned_move(plan);
        let so_far = records.map(move_done);
        let mut done_json = done.json();
        done_json["attempts"] = status.attempts.into();
        let json = serde_json::json!({
            "index": self.id.index, "count": self.id.count, "plan_id": self.plan_id,
            "planned": planned.json(),
            "done": done_json,
            "this_run": this_run.json(),
            "move": {"planned": whole.json()},
        });
        let mut json = json;
        if let Some(m) = &so_far {
            json["move"]["done"] = m.json(self.id.count);
        }
        let mut t = comfy_table::Table::new();
        t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED)
            .set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
        let mut header = vec![
            String::new(),
            format!("plan: shard {}", self.id.index),
            format!(
                "shard {} ({} attempt{})",
                self.id.index,
                status.attempts,
                if status.attempts == 1 { "" } else { "s" }
            ),
        ];
        let mut pairs = vec![(&planned, &done)];
        if let Some(m) = &so_far {
            header.push("plan: whole move".into());
            header.push(format!(
                "whole move so far ({} of {} shards done)",
                m.done, self.id.count
            ));
            pairs.push((&whole, &m.figures));
        }
        t.set_header(header);
        for r in rows(&pairs) {
            t.add_row(r);
        }
        let mut text = format!(
            "\nShard {} against the plan (cost priced as the plan prices the move; the plan's cost for a shard is the move's in the shard's share of bytes and objects):\n{t}\n",
            self.id
        );
        match &so_far {
            Some(m) => text.push_str(&format!(
                "whole move: time is from the first shard's start to the last record ({} on all machines together); moverctl status PLAN shows every shard\n",
                fmt_duration(m.machine_seconds)
            )),
            None => text.push_str(
                "whole move: the other shards' records could not be read; moverctl status PLAN shows them\n",
            ),
        }
        (json, text)
    }

    /// Every shard's record (one GET each, a few at a time).
    pub(super) async fn records(&self, count: u32) -> Result<Vec<Option<ShardStatus>>, CliError> {
        read_records(&self.progress, count).await
    }
}

async fn read_records(
    ps: &ProgressStore,
    count: u32,
) -> Result<Vec<Option<ShardStatus>>, CliError> {
    futures::stream::iter(0..count)
        .map(|k| ps.read_status(k))
        .buffered(16)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(progress_err)
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
    fn as_str(&self) -> &'static str {
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
    match s.state.as_str() {
        "done" => ShardState::Done,
        "failed" => ShardState::Failed,
        "incomplete" => ShardState::Incomplete,
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
        .block_on(read_records(&ps, shards.count))
        .map_err(|e| e.naming_credentials(&hint))?;
    let planned_total = planned_move(plan);
    let so_far = move_done(&records);
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
                let planned = planned_shard(plan, k as u32);
                serde_json::json!({
                    "shard": k,
                    "state": st.as_str(),
                    "objects_done": r.as_ref().map_or(0, |s| s.objects_done),
                    "bytes_done": r.as_ref().map_or(0, |s| s.bytes_done),
                    "failed": r.as_ref().map_or(0, |s| s.failed),
                    "bytes_per_second": r.as_ref().map_or(0.0, rate),
                    "last_update": r.as_ref().map(|s| s.updated.clone()),
                    "host": r.as_ref().map(|s| s.host.clone()),
                    "attempts": r.as_ref().map_or(0, |s| s.attempts),
                    "planned": planned.json(),
                    "done": r.as_ref().map(Figures::of_record).unwrap_or_default().json(),
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
                        "planned": planned_total.json(),
                        "so_far": so_far.json(shards.count),
                        "bytes_per_second": aggregate,
                        "eta_seconds": eta,
                        "states": {
                            "not_started": count(ShardState::NotStarted),
                            "running": count(ShardState::Running),
                            "stale": count(ShardState::Stale),
                            "done": count(ShardState::Done),
                            "failed": count(ShardState::Failed),
                            "incomplete": count(ShardState::Incomplete),
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
        "time/plan",
        "cost/plan",
        "last update",
        "host",
    ]);
    for (k, (r, st)) in records.iter().zip(&states).enumerate() {
        let planned = planned_shard(plan, k as u32);
        let done = r.as_ref().map(Figures::of_record).unwrap_or_default();
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
            format!(
                "{}/{}",
                fmt_duration(done.seconds),
                fmt_duration(planned.seconds)
            ),
            format!(
                "{}/{}",
                done.total_cost().human(),
                planned.total_cost().human()
            ),
            r.as_ref().map(|s| s.updated.clone()).unwrap_or_default(),
            r.as_ref().map(|s| s.host.clone()).unwrap_or_default(),
        ]);
    }
    println!("{t}");
    println!(
        "total: {objects}/{} objects, {}/{}, {failed} failed; {} done, {} running, {} stale, {} failed, {} incomplete, {} not started; {}/s; ETA {}",
        plan.corpus.objects,
        fmt_bytes(bytes),
        fmt_bytes(plan.corpus.bytes),
        count(ShardState::Done),
        count(ShardState::Running),
        count(ShardState::Stale),
        count(ShardState::Failed),
        count(ShardState::Incomplete),
        count(ShardState::NotStarted),
        fmt_bytes(aggregate as u64),
        match eta {
            Some(0.0) => "none (done)".to_string(),
            Some(s) => humantime::format_duration(std::time::Duration::from_secs(s.ceil() as u64))
                .to_string(),
            None => "unknown (no shard running)".into(),
        }
    );
    let d = &so_far.figures;
    println!(
        "against the plan: time {} so far (first start to last record; {} on all machines) of {} planned; cost {} so far of {} planned (egress {} of {}, source requests {} of {}, destination requests {} of {}; finished attempts, priced as the plan prices the move)",
        fmt_duration(d.seconds),
        fmt_duration(so_far.machine_seconds),
        fmt_duration(planned_total.seconds),
        d.total_cost().human(),
        planned_total.total_cost().human(),
        d.cost[0].human(),
        planned_total.cost[0].human(),
        d.cost[1].human(),
        planned_total.cost[1].human(),
        d.cost[2].human(),
        planned_total.cost[2].human(),
    );
    Ok(Exit::Success)
}

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

    fn rec(state: &str, updated: chrono::DateTime<chrono::Utc>) -> ShardStatus {
        let mut s = progress_store::starting_status(
            "p",
            ShardId { index: 0, count: 1 },
            (1, 1),
            (0, 0),
            None,
        );
        s.state = state.into();
        s.updated = updated.to_rfc3339();
        s
    }

    #[test]
    fn a_shards_share_of_a_cost_is_exact_and_the_move_adds_up_its_records() {
        let usd = |v: &str| Usd::parse(v).unwrap();
        // A third of $1 to the micro-dollar; nothing of an empty corpus.
        assert_eq!(share(usd("1"), 1, 3), usd("0.333333"));
        assert_eq!(share(usd("1"), 0, 0), Usd::ZERO);
        let mut a = rec("done", chrono::Utc::now());
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
        let mut b = rec("running", chrono::Utc::now());
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
        let mut first = rec("failed", chrono::Utc::now());
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
        assert_eq!(next.state, "running");
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
