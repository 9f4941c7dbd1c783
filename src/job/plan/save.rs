//! What a plan writes: the HTML report and the plan file for `moverctl exec`.

use super::{PlanOutcome, PlanSpec, Save};
use crate::catalog::{Catalog, Place};
use crate::job::JobError;
use crate::plan::file::{PlanFile, PlanInputs};
use crate::plan::model::{Candidate, Kind};
use std::path::{Path, PathBuf};

/// A plan file saved.
#[derive(Debug, Clone)]
pub struct Saved {
    pub path: PathBuf,
    /// The destination it moves to, resolved (`provider:region/class`).
    pub destination: String,
    pub plan: PlanFile,
}

fn usage(m: impl Into<String>) -> JobError {
    JobError::Usage(m.into())
}

fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// The self-contained HTML report: ranked table, charts, assumptions, price sources.
pub(super) fn write_report(
    catalog: &Catalog,
    spec: &PlanSpec,
    out: &PlanOutcome,
    path: &Path,
) -> Result<PathBuf, JobError> {
    let mut places: Vec<Place> = vec![out.source.clone()];
    places.extend(out.destinations.iter().cloned());
    if let Some(r) = &out.assumptions.reads
        && r.compute.in_catalog
    {
        places.push(Place::resolve(catalog, &r.compute.canonical())?);
    }
    let mut page = crate::plan::report::html(
        &out.source,
        &places,
        &spec.corpus,
        &out.assumptions,
        &out.ranked,
        &now(),
    );
    if let Some(chain) = &out.chain {
        page = crate::plan::hops::into_report(&page, chain);
    }
    std::fs::write(path, page).map_err(|e| {
        JobError::Failure(format!("--report {}: cannot write it: {e}", path.display()))
    })?;
    Ok(path.to_path_buf())
}

/// The ranked candidate a saved plan moves to: the cheapest move, or the one picked.
/// `--pick` may name a provider by an alias (`b2`).
pub(super) fn picked(
    catalog: &Catalog,
    ranked: &[Candidate],
    pick: Option<&str>,
) -> Result<usize, JobError> {
    match pick {
        None => ranked
            .iter()
            .position(|c| c.kind == Kind::Move)
            .ok_or_else(|| usage("--save: no destination to move to")),
        Some("stay") => Err(usage(
            "--pick stay: staying is not a move, so there is no plan to save; pick a destination",
        )),
        Some(p) => ranked
            .iter()
            .position(|c| {
                let id = catalog.get(p).map_or(p, |f| f.file.id.as_str());
                c.kind == Kind::Move && (c.destination == p || c.resolved == p || c.provider == id)
            })
            .ok_or_else(|| {
                usage(format!(
                    "--pick {p:?} is not one of the destinations: {}",
                    ranked
                        .iter()
                        .map(|c| c.destination.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }),
    }
}

/// Build the plan file of the picked destination and save it as `plans_dir/NAME.toml`.
pub(super) fn save(
    catalog: &Catalog,
    spec: &PlanSpec,
    out: &PlanOutcome,
    s: &Save,
) -> Result<Saved, JobError> {
    let idx = picked(catalog, &out.ranked, s.pick.as_deref())?;
    let chosen = &out.ranked[idx];
    let dst_index = out.destination_of(chosen).expect("a saved plan is a move");
    let others: Vec<Candidate> = out
        .ranked
        .iter()
        .enumerate()
        .filter(|(i, c)| *i != idx && c.kind == Kind::Move)
        .map(|(_, c)| c.clone())
        .collect();
    let mut plan = PlanFile::build(PlanInputs {
        catalog,
        source: &out.source,
        source_location: spec.src.clone(),
        destination: &out.destinations[dst_index],
        destination_location: spec.dst.clone(),
        corpus_bytes: spec.corpus.total_bytes(),
        corpus_objects: spec.corpus.total_objects(),
        corpus_origin: spec.corpus.origin.clone(),
        assumptions: &out.assumed[dst_index],
        chosen,
        others: &others,
        created: now(),
    })?;
    if let Some(split) = &s.shards {
        plan.shards = Some(crate::job::shard::split::table(
            &split.ranges,
            &plan,
            split.progress.clone(),
        ));
    }
    let name = s.name.trim_end_matches(".toml");
    if name.is_empty() || name.contains('/') || name.contains('\\') || name.starts_with('.') {
        return Err(usage(format!(
            "--save {name:?}: give a plain name (the file goes to {}/NAME.toml)",
            s.plans_dir.display()
        )));
    }
    let path = s.plans_dir.join(format!("{name}.toml"));
    plan.save(&path)?;
    Ok(Saved {
        path,
        destination: chosen.resolved.clone(),
        plan,
    })
}
