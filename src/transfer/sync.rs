//! A sync run ([`run`]): the copy phase, then the keys only at the destination (deletion
//! candidates), spilled to SQLite as the join passes them so memory does not grow with their
//! number, then deleted only behind guards, all decided here from the run's own outcome (callers
//! only present it). Nothing is deleted unless every one of these holds:
//!
//! 1. `--delete` was given;
//! 2. the copy phase ran to its end with no failed and no refused object (a source key that could
//!    not be listed or copied might be exactly what a candidate still holds);
//! 3. the source listed at least one object (within `--include`/`--exclude`), unless
//!    `--allow-empty-source`: an empty source while the destination holds objects is what an
//!    unmounted volume or a wrong bucket looks like, and mirroring it would delete everything,
//!    whatever `--max-delete` says (`100%` is a common setting); the verdict is its own;
//! 4. the number to delete is within `--max-delete` (a count, or a percentage of the destination
//!    objects listed); otherwise *nothing* is deleted and the run says so with its own exit code.
//!
//! Candidates younger than the destination class's minimum storage duration (Wasabi: 90 days)
//! are kept unless `--allow-early-delete`; each is reported with the fee deleting it now would
//! cost: the remaining days of the minimum, billed at the class's storage price on the object's
//! billed size (at least the class's minimum object size). Kept objects do not count against
//! `--max-delete`.
//!
//! The spill lives in the run's journal (table `sync_candidates`, replaced by every run; its SQL is
//! [`CandidateSpill`]'s, in `journal.rs`), so after
//! a tripped guard `sqlite3 JOURNAL 'select key, status from sync_candidates'` shows what would
//! have gone; dry runs use a private temporary database instead.

use crate::journal::{CandidateSpill, JournalError};
use crate::money::Usd;
use crate::store::Store;
use crate::store::list::Entry;
use chrono::{DateTime, Utc};
use futures::stream::{self, StreamExt};
use object_store::ObjectStoreExt;
use rust_decimal::Decimal;
use std::path::Path;

/// A whole sync run, both phases: the copy phase, joined so that the keys only at the
/// destination are spilled as deletion candidates (into the journal file `spill_in`, or a
/// private temporary database when None: dry runs), then the delete phase under `policy`. Guard 2
/// (nothing deleted after a copy phase that was interrupted or had a failed or refused object) is
/// decided here from the copy phase's report. `on_event` sees every object of the copy phase,
/// `on_fate` every candidate's fate.
pub async fn run(
    run: super::Run,
    policy: DeletePolicy,
    spill_in: Option<&Path>,
    on_event: impl FnMut(&super::Event),
    on_fate: impl FnMut(&str, u64, &Fate),
) -> Result<(super::Report, DeleteReport), super::RunError> {
    let mut candidates = match spill_in {
        Some(journal) => Candidates::in_journal(journal, policy)?,
        None => Candidates::temporary(policy)?,
    };
    let join = super::diff::JoinPolicy::for_pair(&run.src, &run.dst, true);
    let dst = run.dst.clone();
    let report = run.run_with(join, on_event, |e| candidates.push(e)).await?;
    let copy_ok = !report.interrupted
        && report.stopped_for_credentials.is_none()
        && report.failed.is_empty()
        && report.refused.is_empty();
    let deletes = candidates
        .finish(
            &dst,
            copy_ok,
            report.src_objects,
            report.dest_objects,
            on_fate,
        )
        .await?;
    Ok((report, deletes))
}

/// `--max-delete`: an absolute count or a percentage of the destination objects listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxDelete {
    Count(u64),
    Percent(Decimal),
}

impl MaxDelete {
    /// `100`, `5%`, `0.5%`.
    pub fn parse(s: &str) -> Result<MaxDelete, String> {
        let t = s.trim();
        if let Some(p) = t.strip_suffix('%') {
            let d: Decimal = p
                .trim()
                .parse()
                .map_err(|_| format!("{s:?} is not a percentage (e.g. 5%)"))?;
            if d.is_sign_negative() || d > Decimal::from(100) {
                return Err(format!("{s:?}: a percentage must be between 0% and 100%"));
            }
            return Ok(MaxDelete::Percent(d));
        }
        t.parse::<u64>()
            .map(MaxDelete::Count)
            .map_err(|_| format!("{s:?} is not a count or a percentage (e.g. 1000 or 5%)"))
    }

    /// How many deletions this allows with `dest_objects` listed at the destination (a percentage
    /// rounds down: 10% of 9 objects allows 0).
    pub fn allowed(self, dest_objects: u64) -> u64 {
        match self {
            MaxDelete::Count(n) => n,
            MaxDelete::Percent(p) => {
                let v = p * Decimal::from(dest_objects) / Decimal::from(100);
                use rust_decimal::prelude::ToPrimitive;
                v.floor().to_u64().unwrap_or(u64::MAX)
            }
        }
    }
}

impl std::fmt::Display for MaxDelete {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MaxDelete::Count(n) => write!(f, "{n}"),
            MaxDelete::Percent(p) => write!(f, "{}%", p.normalize()),
        }
    }
}

/// The destination class's minimum storage duration and what an early deletion costs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinDuration {
    /// `provider/class`, for messages.
    pub class: String,
    pub days: u32,
    /// Storage price per billed GB-month (the class's first tier: the marginal price).
    pub per_gb_month: Decimal,
    pub bytes_per_gb: u64,
    pub min_object_bytes: u64,
}

/// Seconds in the 30-day month the catalog's monthly prices are for.
const SECONDS_PER_MONTH: i64 = 30 * 86_400;

impl MinDuration {
    /// The fee for deleting an object of `size` bytes written at `written`, at `now`; None when it
    /// is old enough to go free.
    pub fn early_fee(&self, size: u64, written: DateTime<Utc>, now: DateTime<Utc>) -> Option<Usd> {
        let min_secs = i64::from(self.days) * 86_400;
        let age = (now - written).num_seconds().max(0);
        if self.days == 0 || age >= min_secs {
            return None;
        }
        let remaining = Decimal::from(min_secs - age);
        let billed =
            Decimal::from(size.max(self.min_object_bytes)) / Decimal::from(self.bytes_per_gb);
        Some(Usd(
            billed * self.per_gb_month * remaining / Decimal::from(SECONDS_PER_MONTH)
        ))
    }
}

#[derive(Debug, Clone)]
pub struct DeletePolicy {
    pub delete: bool,
    pub max_delete: MaxDelete,
    /// Delete even when the source listed no object at all.
    pub allow_empty_source: bool,
    pub allow_early_delete: bool,
    pub min_duration: Option<MinDuration>,
    pub now: DateTime<Utc>,
    pub dry_run: bool,
    pub concurrency: usize,
}

/// What happened to the candidates as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// No candidates (or only kept ones): nothing to do.
    Nothing,
    /// Candidates exist but `--delete` was not given.
    NotAsked,
    /// The copy phase had failures, refused keys, or was interrupted: nothing deleted.
    Suppressed,
    /// The source listed no object while the destination holds some, and
    /// `--allow-empty-source` was not given: nothing deleted.
    EmptySource,
    /// More deletions than `--max-delete` allows: nothing deleted.
    GuardTripped,
    /// Deleted (or, in a dry run, would be).
    Deleted,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Nothing => "nothing-to-delete",
            Verdict::NotAsked => "not-asked",
            Verdict::Suppressed => "suppressed",
            Verdict::EmptySource => "empty-source",
            Verdict::GuardTripped => "guard-tripped",
            Verdict::Deleted => "deleted",
        }
    }
}

/// One candidate's fate, as the caller reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    Deleted,
    WouldDelete,
    /// Younger than the minimum storage duration; deleting now would cost this.
    Kept(Usd),
    /// Not deleted because of the verdict (not asked, suppressed, guard).
    Held,
    DeleteFailed(String),
}

#[derive(Debug, Clone, Default)]
pub struct DeleteReport {
    pub verdict: Option<Verdict>,
    /// Candidates old enough to delete (or with `--allow-early-delete`).
    pub deletable: u64,
    pub deletable_bytes: u64,
    pub kept_young: u64,
    pub kept_young_bytes: u64,
    /// What deleting the kept objects now would cost.
    pub kept_fee: Usd,
    /// Early-deletion fees this run incurred (`--allow-early-delete`; a dry run: would incur).
    pub early_fees: Usd,
    pub allowed: u64,
    pub deleted: u64,
    pub deleted_bytes: u64,
    pub failed: Vec<(String, String)>,
    pub requests_delete: u64,
}

/// The spill: candidates in a SQLite table ([`CandidateSpill`]), classified as they arrive.
pub struct Candidates {
    spill: CandidateSpill,
    buf: Vec<(Entry, Option<Usd>)>,
    policy: DeletePolicy,
    pub report: DeleteReport,
}

impl Candidates {
    /// In the journal database at `journal` (replacing the previous run's candidates).
    pub fn in_journal(journal: &Path, policy: DeletePolicy) -> Result<Candidates, JournalError> {
        Ok(Self::with(CandidateSpill::in_journal(journal)?, policy))
    }

    /// In a private temporary database (dry runs; removed when closed).
    pub fn temporary(policy: DeletePolicy) -> Result<Candidates, JournalError> {
        Ok(Self::with(CandidateSpill::temporary()?, policy))
    }

    fn with(spill: CandidateSpill, policy: DeletePolicy) -> Candidates {
        Candidates {
            spill,
            buf: Vec::new(),
            policy,
            report: DeleteReport::default(),
        }
    }

    /// Take one candidate (the join hands them over in key order).
    pub fn push(&mut self, e: Entry) -> Result<(), JournalError> {
        let fee = if self.policy.allow_early_delete {
            None
        } else {
            self.policy
                .min_duration
                .as_ref()
                .and_then(|m| m.early_fee(e.size, e.last_modified, self.policy.now))
        };
        let r = &mut self.report;
        match fee {
            Some(f) => {
                r.kept_young += 1;
                r.kept_young_bytes += e.size;
                r.kept_fee += f;
            }
            None => {
                r.deletable += 1;
                r.deletable_bytes += e.size;
            }
        }
        self.buf.push((e, fee));
        if self.buf.len() >= 1000 {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), JournalError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.spill.insert(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    /// What [`Candidates::finish`] will decide for the candidates taken so far, by the guards in
    /// the module's order; a caller that must prepare before deleting (`drain`'s retention marks
    /// each checkpoint and removes its receipt first) asks this, and calls `finish` only when the
    /// answer is [`Verdict::Deleted`] (or [`Verdict::Nothing`]).
    pub fn verdict(&self, copy_ok: bool, src_objects: u64, dest_objects: u64) -> Verdict {
        let p = &self.policy;
        if self.report.deletable == 0 {
            Verdict::Nothing
        } else if !p.delete {
            Verdict::NotAsked
        } else if !copy_ok {
            Verdict::Suppressed
        } else if src_objects == 0 && !p.allow_empty_source {
            Verdict::EmptySource
        } else if self.report.deletable > p.max_delete.allowed(dest_objects) {
            Verdict::GuardTripped
        } else {
            Verdict::Deleted
        }
    }

    /// Decide and (unless a dry run) delete. `copy_ok` is false when the copy phase had failed or
    /// refused objects or was interrupted; `src_objects` and `dest_objects` are what the two
    /// listings held.
    /// `on_fate` sees every candidate with what happened to it, in key order.
    pub async fn finish(
        mut self,
        dst: &Store,
        copy_ok: bool,
        src_objects: u64,
        dest_objects: u64,
        mut on_fate: impl FnMut(&str, u64, &Fate),
    ) -> Result<DeleteReport, JournalError> {
        self.flush()?;
        let p = self.policy.clone();
        let verdict = self.verdict(copy_ok, src_objects, dest_objects);
        self.report.allowed = p.max_delete.allowed(dest_objects);
        self.report.verdict = Some(verdict);
        let mut after = String::new();
        loop {
            let page = self.spill.page(&after, 1000)?;
            let Some(last) = page.last() else { break };
            after = last.0.clone();
            let mut todo = Vec::new();
            let mut marks: Vec<(String, &'static str)> = Vec::new();
            for (k, size, fee) in page {
                match fee {
                    Some(f) => on_fate(&k, size, &Fate::Kept(f)),
                    None if verdict == Verdict::Deleted && p.dry_run => {
                        if let Some(m) = &p.min_duration
                            && p.allow_early_delete
                            && let Some(fee) = self.early_fee_of(&k, size, m)?
                        {
                            self.report.early_fees += fee;
                        }
                        on_fate(&k, size, &Fate::WouldDelete)
                    }
                    None if verdict == Verdict::Deleted => todo.push((k, size)),
                    None => {
                        marks.push((k.clone(), "held"));
                        on_fate(&k, size, &Fate::Held)
                    }
                }
            }
            let dst2 = dst.clone();
            let results: Vec<(String, u64, Result<(), String>)> = stream::iter(todo)
                .map(|(k, size)| {
                    let dst = dst2.clone();
                    async move {
                        let res = match dst.path_of(&k) {
                            Ok(path) => dst.inner.delete(&path).await.map_err(|e| e.to_string()),
                            Err(e) => Err(e.to_string()),
                        };
                        (k, size, res)
                    }
                })
                .buffer_unordered(p.concurrency.max(1))
                .collect()
                .await;
            let mut results = results;
            results.sort_by(|a, b| a.0.cmp(&b.0));
            for (k, size, res) in results {
                self.report.requests_delete += 1;
                match res {
                    Ok(()) => {
                        self.report.deleted += 1;
                        self.report.deleted_bytes += size;
                        if let Some(m) = &p.min_duration
                            && p.allow_early_delete
                            && let Some(fee) = self.early_fee_of(&k, size, m)?
                        {
                            self.report.early_fees += fee;
                        }
                        marks.push((k.clone(), "deleted"));
                        tracing::info!(target: "moverctl::file", key = %k, bytes = size,
                            "{k}: deleted ({})", crate::units::fmt_bytes(size));
                        on_fate(&k, size, &Fate::Deleted);
                    }
                    Err(e) => {
                        let e = format!("deleting {k:?} at {}: {e}", dst.shown());
                        marks.push((k.clone(), "delete-failed"));
                        on_fate(&k, size, &Fate::DeleteFailed(e.clone()));
                        self.report.failed.push((k, e));
                    }
                }
            }
            if !p.dry_run {
                self.spill.mark(&marks)?;
            }
        }
        Ok(self.report)
    }

    /// The early-deletion fee of a candidate deleted with `--allow-early-delete`.
    fn early_fee_of(
        &self,
        key: &str,
        size: u64,
        m: &MinDuration,
    ) -> Result<Option<Usd>, JournalError> {
        let lm = self.spill.last_modified(key)?;
        Ok(DateTime::parse_from_rfc3339(&lm)
            .ok()
            .and_then(|t| m.early_fee(size, t.with_timezone(&Utc), self.policy.now)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_delete_parses_counts_and_percentages_and_rounds_down() {
        assert_eq!(MaxDelete::parse("7").unwrap().allowed(1000), 7);
        assert_eq!(MaxDelete::parse("10%").unwrap().allowed(9), 0);
        assert_eq!(MaxDelete::parse("10%").unwrap().allowed(10), 1);
        assert_eq!(MaxDelete::parse("0.5%").unwrap().allowed(1000), 5);
        assert!(MaxDelete::parse("101%").is_err());
        assert!(MaxDelete::parse("-1").is_err());
        assert!(MaxDelete::parse("lots").is_err());
        assert_eq!(MaxDelete::parse("2.50%").unwrap().to_string(), "2.5%");
    }

    #[test]
    fn early_fee_is_the_rest_of_the_minimum_at_the_class_price_exactly() {
        let m = MinDuration {
            class: "wasabi/standard".into(),
            days: 90,
            per_gb_month: "0.007802734375".parse().unwrap(),
            bytes_per_gb: 1_000_000_000,
            min_object_bytes: 4096,
        };
        let now = DateTime::parse_from_rfc3339("2026-04-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        // Written 30 days ago: 60 days (2 months) left on 1 GB.
        let written = now - chrono::Duration::days(30);
        assert_eq!(
            m.early_fee(1_000_000_000, written, now).unwrap().0,
            "0.01560546875".parse::<Decimal>().unwrap()
        );
        // Small objects are billed as the minimum object size.
        assert_eq!(
            m.early_fee(10, written, now),
            m.early_fee(4096, written, now)
        );
        // Old enough: free.
        assert_eq!(m.early_fee(1, now - chrono::Duration::days(90), now), None);
    }
}
