//! Multi-hop plans (`plan --then PLACE`): the legs after the first, priced from the previous
//! leg's destination (see [`crate::plan::hops`]), and each leg's own plan file for `exec`.

use super::probes::{ProbeUse, measured_of};
use super::{PlanOutcome, PlanSpec};
use crate::catalog::{Catalog, Place};
use crate::job::JobError;
use crate::plan::file::{PlanFile, PlanInputs};
use crate::plan::hops::{Chain, Leg, later_corpus, later_leg};
use crate::plan::model::{Candidate, evaluate};
use std::path::PathBuf;

/// A place the data is copied on to after the first leg: `--then PLACE`, with its location
/// (`--then-dst`) when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    pub to: String,
    pub location: Option<String>,
}

/// The chain: the first leg is the move a saved plan would take (`--pick`, else the cheapest
/// move), every later leg from the one before. `None` without hops.
pub(super) fn chain(
    catalog: &Catalog,
    spec: &PlanSpec,
    out: &PlanOutcome,
) -> Result<Option<(Chain, Vec<LegInputs>)>, JobError> {
    if spec.then.is_empty() {
        return Ok(None);
    }
    let pick = spec.save.as_ref().and_then(|s| s.pick.as_deref());
    let first = super::save::picked(catalog, &out.ranked, pick)?;
    let first = out.ranked[first].clone();
    let dst_index = out.destination_of(&first).expect("a move");
    let mut prev: Place = out.destinations[dst_index].clone();
    let mut prev_loc = spec.dst.clone();
    let base = later_leg(&out.assumed[dst_index]);
    let corpus = later_corpus(&spec.corpus);
    let mut legs = vec![Leg {
        from: out.source.canonical(),
        candidate: first,
    }];
    let mut assumed = Vec::new();
    for hop in &spec.then {
        let place = Place::resolve(catalog, &hop.to)
            .map_err(|e| JobError::Usage(format!("--then {:?}: {e}", hop.to)))?;
        let same_place = place.canonical() == prev.canonical();
        if same_place && (prev_loc.is_none() || prev_loc == hop.location) {
            return Err(JobError::Usage(format!(
                "--then {:?} is where the previous leg already put the data ({}): give another place, or --then-dst with another location",
                hop.to,
                prev.canonical()
            )));
        }
        let mut a = base.clone();
        a.same_service = super::same_service(
            spec.config.as_deref(),
            prev_loc.as_deref(),
            hop.location.as_deref(),
        );
        if spec.probes.apply {
            let p = spec.probes;
            let find = |provider: &str, loc: Option<&str>| {
                ProbeUse::find(provider, loc, p.latency_given, p.stream_given)
            };
            let sp = find(&prev.provider.file.id, prev_loc.as_deref());
            let dp = find(&place.provider.file.id, hop.location.as_deref());
            if let Some(d) = &dp {
                a = d.apply(&a);
            }
            let in_flight =
                (a.concurrency.max(1) as usize).saturating_mul(a.workers.max(1) as usize);
            a.measured = measured_of(sp.as_ref(), dp.as_ref(), in_flight);
        }
        let c: Candidate = evaluate(&prev, &place, &corpus, &a);
        legs.push(Leg {
            from: prev.canonical(),
            candidate: c,
        });
        assumed.push(LegInputs {
            source: prev.canonical(),
            source_location: prev_loc.clone(),
            destination: place.canonical(),
            destination_location: hop.location.clone(),
            assumptions: a,
        });
        prev = place;
        prev_loc = hop.location.clone();
    }
    Ok(Some((
        Chain {
            legs,
            months: out.assumptions.months,
        },
        assumed,
    )))
}

/// What a later leg was planned with, for its plan file.
#[derive(Debug, Clone)]
pub struct LegInputs {
    pub source: String,
    pub source_location: Option<String>,
    pub destination: String,
    pub destination_location: Option<String>,
    pub assumptions: crate::plan::model::Assumptions,
}

/// The plan files of the legs after the first: `NAME-leg2.toml`, … beside `NAME.toml` (leg 1,
/// saved as a one-leg plan is); each names the leg it is and the next file.
pub(super) fn save_legs(
    catalog: &Catalog,
    spec: &PlanSpec,
    chain: &Chain,
    later: &[LegInputs],
    first: &mut PlanFile,
    first_path: &std::path::Path,
) -> Result<Vec<PathBuf>, JobError> {
    let dir = first_path.parent().unwrap_or(std::path::Path::new("."));
    let stem = (first_path.file_stem())
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let of = chain.legs.len() as u32;
    let name = |k: u32| format!("{stem}-leg{k}.toml");
    first.leg = Some(crate::plan::file::LegOf {
        index: 1,
        of,
        next: Some(name(2)),
    });
    first.save(first_path)?;
    let mut paths = Vec::new();
    for (i, (leg, l)) in chain.legs.iter().skip(1).zip(later).enumerate() {
        let k = i as u32 + 2;
        let src = Place::resolve(catalog, &l.source)?;
        let dst = Place::resolve(catalog, &l.destination)?;
        let mut plan = PlanFile::build(PlanInputs {
            catalog,
            source: &src,
            source_location: l.source_location.clone(),
            destination: &dst,
            destination_location: l.destination_location.clone(),
            corpus_bytes: spec.corpus.total_bytes(),
            corpus_objects: spec.corpus.total_objects(),
            corpus_origin: format!("{} (leg {k} of {of})", spec.corpus.origin),
            assumptions: &l.assumptions,
            chosen: &leg.candidate,
            others: &[],
            created: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        })?;
        plan.leg = Some(crate::plan::file::LegOf {
            index: k,
            of,
            next: (k < of).then(|| name(k + 1)),
        });
        let path = dir.join(name(k));
        plan.save(&path)?;
        paths.push(path);
    }
    Ok(paths)
}

/// What to run after this leg of a multi-hop plan: the next leg's `exec` when this one finished
/// (`done`), else that the next leg waits for this one. `None` for a one-leg plan or the last leg.
pub fn next_step(path: &std::path::Path, plan: &PlanFile, done: bool) -> Option<String> {
    let leg = plan.leg.as_ref()?;
    let next = leg.next.as_ref()?;
    let next = path.parent().unwrap_or(std::path::Path::new("")).join(next);
    Some(if done {
        format!(
            "leg {} of {} done; next leg: moverctl exec {}",
            leg.index,
            leg.of,
            next.display()
        )
    } else {
        format!(
            "leg {} of {} is not finished: run this plan again (it resumes) before the next leg ({})",
            leg.index,
            leg.of,
            next.display()
        )
    })
}
