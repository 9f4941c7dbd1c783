//! The plan job: evaluate, rank, pick, build the plan file.
//!
//! [`plan`] takes an immutable [`PlanSpec`] (the corpus, the assumptions, where the data is and
//! where it could go) and returns a [`PlanOutcome`]: the candidates ranked, the probes that timed
//! them, the report and the plan file it wrote. It never prints; notes go to the observer.
//!
//! Measured, not assumed: with [`SavedProbes::apply`], when `moverctl probe` saved a result for a
//! destination's provider (the newest file in `<state>/probes/<provider>/`), that destination is
//! timed with the probe's latency and per-stream upload throughput instead of the defaults — only
//! for the values the caller did not fix. A probe also measured what bounds a run (request rate
//! under concurrency, aggregate throughput, the engine's CPU per GiB): the source's probe (of the
//! source location or a folder above it, else the newest of the source's provider) gives the GET
//! side, each destination's probe (of the destination location or a folder above it when there is
//! one destination, else the newest of its provider) the PUT side and the CPU.

pub mod hops;
mod probes;
mod save;

pub use probes::ProbeUse;
pub use save::Saved;

use crate::catalog::{Catalog, Place};
use crate::job::{JobError, Observer};
use crate::plan::corpus::{Corpus, InventoryFormat};
use crate::plan::horizon::{self, ComputeAt};
use crate::plan::model::{Assumptions, Candidate, Kind, bucket_classes, evaluate, rank};
use crate::plan::restore::{self, TierChoice};
use crate::shard::PlannedRange;
use rust_decimal::prelude::ToPrimitive;
use std::path::{Path, PathBuf};

/// Everything a plan needs, resolved and validated by the caller.
#[derive(Debug, Clone)]
pub struct PlanSpec {
    /// Where the data is now: `PROVIDER[:REGION][/CLASS]`.
    pub from: String,
    /// Candidate destinations, each `PROVIDER[:REGION][/CLASS]` (at least one).
    pub to: Vec<String>,
    pub corpus: Corpus,
    /// What the model assumes (see [`Assumptions`]); `restore` and `measured` are set by the job
    /// (from `restore_tier` and the saved probes), `same_service` from `src` and `dst` when
    /// `None`.
    pub assumptions: Assumptions,
    /// The restore tier for archive-class source objects as given: `bulk`, `standard`,
    /// `expedited` or `auto` (`None`: each class's standard restore).
    pub restore_tier: Option<String>,
    pub probes: SavedProbes,
    /// The source and destination locations recorded in the plan (`s3://bucket/prefix`, …).
    pub src: Option<String>,
    pub dst: Option<String>,
    /// The remotes file (`--config`), for the locations' credentials and endpoints.
    pub config: Option<PathBuf>,
    /// Write a self-contained HTML report here.
    pub report: Option<PathBuf>,
    /// Save a plan file.
    pub save: Option<Save>,
    /// Multi-hop: the places the data is copied on to after the first leg (`--then`), in order.
    pub then: Vec<hops::Hop>,
}

impl PlanSpec {
    /// A plan of `corpus` from `from` to each of `to`, with the default assumptions, no saved
    /// probe, no report and no plan file.
    pub fn new(from: &str, to: &[&str], corpus: Corpus) -> PlanSpec {
        PlanSpec {
            from: from.to_string(),
            to: to.iter().map(|s| s.to_string()).collect(),
            corpus,
            assumptions: Assumptions::default(),
            restore_tier: None,
            probes: SavedProbes::default(),
            src: None,
            dst: None,
            config: None,
            report: None,
            save: None,
            then: Vec::new(),
        }
    }
}

/// Whether saved probes time the candidates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SavedProbes {
    /// Use saved probes (`false`: the assumptions alone).
    pub apply: bool,
    /// The latency was given (`--latency-ms`): a probe's is not applied.
    pub latency_given: bool,
    /// The per-stream throughput was given (`--stream-throughput`): a probe's is not applied.
    pub stream_given: bool,
}

/// A plan file to save for `moverctl exec`.
#[derive(Debug, Clone)]
pub struct Save {
    /// The plan's name: the file is `plans_dir/NAME.toml`.
    pub name: String,
    /// Which destination the plan uses (its name as given, as resolved, or its provider);
    /// `None`: the cheapest.
    pub pick: Option<String>,
    pub plans_dir: PathBuf,
    /// The move split into key ranges (`plan --shards N`), written as the plan's `[shards]`.
    pub shards: Option<ShardSplit>,
}

/// The ranges of a split and where the shards keep their progress records.
#[derive(Debug, Clone)]
pub struct ShardSplit {
    pub ranges: Vec<PlannedRange>,
    pub progress: Option<String>,
}

/// What a plan found and wrote.
#[derive(Debug)]
pub struct PlanOutcome<'c> {
    pub source: Place<'c>,
    pub destinations: Vec<Place<'c>>,
    /// The spec's assumptions with the restore tier chosen (before any probe).
    pub assumptions: Assumptions,
    /// Each destination's assumptions as it was timed (its probe applied).
    pub assumed: Vec<Assumptions>,
    /// The candidates, cheapest first ("stay" among them with a compute location).
    pub ranked: Vec<Candidate>,
    /// The probe of the source, and of each destination, that timed the candidates.
    pub source_probe: Option<ProbeUse>,
    pub probes: Vec<Option<ProbeUse>>,
    /// Credentials that would not last the move (each a sentence for the user).
    pub credential_notes: Vec<String>,
    /// The report written (its path), or why it could not be; `None` without one asked for.
    pub report: Option<Result<PathBuf, JobError>>,
    /// The plan file saved, or why it could not be; `None` without one asked for, or when the
    /// report could not be written.
    pub saved: Option<Result<Saved, JobError>>,
    /// Multi-hop (`--then`): every leg, the first being the move a saved plan takes.
    pub chain: Option<crate::plan::hops::Chain>,
    /// The plan files of the legs after the first, saved beside the first's.
    pub saved_legs: Option<Result<Vec<PathBuf>, JobError>>,
}

impl PlanOutcome<'_> {
    /// The destination (index into `destinations`) a candidate moves to; `None` for "stay".
    pub fn destination_of(&self, c: &Candidate) -> Option<usize> {
        (c.kind == Kind::Move).then(|| {
            self.destinations
                .iter()
                .position(|d| d.canonical() == c.resolved)
                .expect("every move comes from a destination")
        })
    }

    /// The best-ranked move's destination.
    pub fn best(&self) -> Option<usize> {
        self.ranked.iter().find_map(|c| self.destination_of(c))
    }

    /// The assumptions of the best-ranked move (the spec's when there is none).
    pub fn best_assumptions(&self) -> &Assumptions {
        self.best().map_or(&self.assumptions, |i| &self.assumed[i])
    }
}

/// Plan a move: resolve the places, choose the restore tier, time each destination with its
/// probe, evaluate and rank the candidates, then write the report and the plan file when asked.
///
/// ```
/// use moverctl::catalog::Catalog;
/// use moverctl::job::{Quiet, plan::{PlanSpec, plan}};
/// use moverctl::plan::corpus::Corpus;
///
/// // 2 PB in 40 M objects out of AWS us-east-1, to Backblaze B2 or Cloudflare R2.
/// let catalog = Catalog::embedded()?;
/// let corpus = Corpus::from_flags(Some("2PB"), Some("40M"), None)?;
/// let mut spec = PlanSpec::new("aws:us-east-1", &["backblaze-b2", "cloudflare-r2"], corpus);
/// spec.assumptions.months = 12;
/// let out = plan(&catalog, &spec, &Quiet)?;
/// assert_eq!(out.ranked.len(), 2);
/// let best = &out.ranked[0];
/// assert!(best.cost.total() <= out.ranked[1].cost.total());
/// assert_eq!(best.kind, moverctl::plan::model::Kind::Move);
/// let summary = format!("{}: {} over 12 months", best.resolved, best.cost.total());
/// assert!(summary.starts_with(&best.resolved));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn plan<'c>(
    catalog: &'c Catalog,
    spec: &PlanSpec,
    observer: &dyn Observer,
) -> Result<PlanOutcome<'c>, JobError> {
    let flag = |f: &str, given: &str, e| JobError::Usage(format!("{f} {given:?}: {e}"));
    let source = Place::resolve(catalog, &spec.from).map_err(|e| flag("--from", &spec.from, e))?;
    let mut base = spec.assumptions.clone();
    if base.same_service.is_none() {
        base.same_service = same_service(
            spec.config.as_deref(),
            spec.src.as_deref(),
            spec.dst.as_deref(),
        );
    }
    if let Some(t) = &spec.restore_tier {
        base.restore = restore_of(&source, &spec.corpus, &base, t, observer)?;
    }
    let destinations: Vec<Place> = spec
        .to
        .iter()
        .map(|d| Place::resolve(catalog, d).map_err(|e| flag("--to", d, e)))
        .collect::<Result<_, _>>()?;
    distinct_places(spec, &source, &destinations, observer)?;
    let (source_probe, probes) = find_probes(spec, &source, &destinations);
    base.feed.probed = probes::read_rates(source_probe.as_ref(), &probes);
    let in_flight = (base.concurrency.max(1) as usize).saturating_mul(base.workers.max(1) as usize);
    let assumed: Vec<Assumptions> = probes
        .iter()
        .map(|p| {
            let mut a = p.as_ref().map_or(base.clone(), |p| p.apply(&base));
            a.measured = probes::measured_of(source_probe.as_ref(), p.as_ref(), in_flight);
            a
        })
        .collect();
    let cands: Vec<Candidate> = destinations
        .iter()
        .zip(&assumed)
        .map(|(d, a)| evaluate(&source, d, &spec.corpus, a))
        .collect();
    let ranked = match &base.reads {
        Some(_) => horizon::move_or_stay(
            cands,
            horizon::stay(&source, &spec.corpus, &base),
            base.months,
        ),
        None => rank(cands),
    };
    let mut out = PlanOutcome {
        credential_notes: credential_notes(spec, &ranked),
        source,
        destinations,
        assumptions: base,
        assumed,
        ranked,
        source_probe,
        probes,
        report: None,
        saved: None,
        chain: None,
        saved_legs: None,
    };
    let later = match hops::chain(catalog, spec, &out)? {
        Some((chain, later)) => {
            out.chain = Some(chain);
            later
        }
        None => Vec::new(),
    };
    if let Some(path) = &spec.report {
        out.report = Some(save::write_report(catalog, spec, &out, path));
    }
    if let Some(s) = &spec.save
        && !matches!(out.report, Some(Err(_)))
    {
        out.saved = Some(save::save(catalog, spec, &out, s));
        if let (Some(Ok(saved)), Some(chain)) = (&mut out.saved, &out.chain) {
            let legs = hops::save_legs(catalog, spec, chain, &later, &mut saved.plan, &saved.path);
            out.saved_legs = Some(legs);
        }
    }
    Ok(out)
}

/// `--restore-tier`: the tier for the corpus's archive objects (`None` and a note when none is in
/// an archive class).
fn restore_of(
    source: &Place,
    corpus: &Corpus,
    a: &Assumptions,
    tier: &str,
    observer: &dyn Observer,
) -> Result<Option<restore::Restore>, JobError> {
    let choice = TierChoice::parse(tier).map_err(JobError::Usage)?;
    let chosen = restore::choose(
        source,
        corpus,
        &bucket_classes(source, corpus),
        choice,
        a.gpu_hourly,
    )
    .map_err(JobError::Usage)?;
    if chosen.is_none() {
        observer.note(&format!(
            "note: --restore-tier {tier}: no object of the corpus is in an archive class at {}; nothing to restore",
            source.canonical()
        ));
    }
    Ok(chosen)
}

/// Each destination is timed with its own provider's probe (the probe of the destination
/// location when one was saved for it and it is the only destination), and with the source's
/// probe (of the source location, else the newest of its provider) for the source's request
/// rate and throughput.
fn find_probes(
    spec: &PlanSpec,
    source: &Place,
    destinations: &[Place],
) -> (Option<ProbeUse>, Vec<Option<ProbeUse>>) {
    let p = spec.probes;
    let find = |provider: &str, loc: Option<&str>| {
        p.apply
            .then(|| ProbeUse::find(provider, loc, p.latency_given, p.stream_given))
            .flatten()
    };
    let source_probe = find(&source.provider.file.id, spec.src.as_deref());
    let probes = destinations
        .iter()
        .map(|d| {
            let loc = (destinations.len() == 1)
                .then_some(spec.dst.as_deref())
                .flatten();
            find(&d.provider.file.id, loc)
        })
        .collect();
    (source_probe, probes)
}

/// Whether the source and destination locations are one S3 service (the same endpoint), when
/// both are given and resolve; `None` otherwise (the catalog places decide).
pub fn same_service(config: Option<&Path>, src: Option<&str>, dst: Option<&str>) -> Option<bool> {
    let (src, dst) = (src?, dst?);
    let remotes = crate::store::config::Remotes::load(config).ok()?;
    let a = crate::store::identity_of(src, &remotes).ok()?;
    let b = crate::store::identity_of(dst, &remotes).ok()?;
    Some(crate::transfer::server_side::one_service(&a, &b))
}

/// Credentials of the source and destination locations that would not last the best move
/// (issue 26).
fn credential_notes(spec: &PlanSpec, ranked: &[Candidate]) -> Vec<String> {
    use crate::store::location::Location;
    let mut notes = Vec::new();
    let Some(best) = ranked.iter().find(|c| c.kind == Kind::Move) else {
        return notes;
    };
    let seconds = best.time.seconds.to_u64().unwrap_or(u64::MAX);
    let Ok(remotes) = crate::store::config::Remotes::load(spec.config.as_deref()) else {
        return notes;
    };
    for loc in [spec.src.as_deref(), spec.dst.as_deref()]
        .into_iter()
        .flatten()
    {
        if let Ok(l @ Location::S3 { .. }) = Location::parse(loc, &remotes)
            && let Some(n) = crate::store::creds::lifetime_note(
                &l.shown(),
                crate::store::remote_of(&l, &remotes),
                seconds,
            )
        {
            notes.push(n);
        }
    }
    notes
}

/// Where a plan's corpus comes from when it is read rather than described.
#[derive(Debug, Clone)]
pub enum CorpusSource {
    /// A listing of the corpus: CSV, JSON lines or an S3 Inventory; streamed.
    Inventory(PathBuf, InventoryFormat),
    /// A location listed once (streamed, constant memory, a progress note every second).
    Listing(String),
}

/// Read the corpus from an inventory, or list a location once into a size histogram. A listing
/// carries no storage classes, so every object is priced as the source's class.
pub fn read_corpus(
    source: &CorpusSource,
    config: Option<&Path>,
    observer: &dyn Observer,
) -> Result<Corpus, JobError> {
    match source {
        CorpusSource::Inventory(path, _) if super::shard::split::is_manifest(path) => {
            super::shard::split::manifest_corpus(path, None, config, Box::new(|_: &str, _| {}))
        }
        CorpusSource::Inventory(path, format) => Ok(Corpus::from_inventory(path, format.clone())?),
        CorpusSource::Listing(loc) => list_corpus(config, loc, observer),
    }
}

fn list_corpus(
    config: Option<&Path>,
    loc: &str,
    observer: &dyn Observer,
) -> Result<Corpus, JobError> {
    use crate::store::list::{Listed, list};
    use futures::StreamExt;
    let remotes = crate::store::config::Remotes::load(config)?;
    let store = crate::store::Store::open(loc, &remotes)?;
    super::preflight::no_glob(&store)?;
    super::preflight::reachable(&store)?;
    let shown = store.shown();
    let rt = super::runtime()?;
    let started = std::time::Instant::now();
    let (corpus, refused) = rt.block_on(async {
        let mut b = crate::plan::corpus::CorpusBuilder::default();
        let mut refused = 0u64;
        let mut stream = list(&store);
        let mut last = std::time::Instant::now();
        while let Some(item) = stream.next().await {
            match item? {
                Listed::Object(e) => b.add(e.size, None),
                Listed::Refused { key, reason } => {
                    refused += 1;
                    observer.note(&format!(
                        "moverctl: cannot handle key {key:?}: {reason}; not counted"
                    ));
                }
            }
            if last.elapsed() >= std::time::Duration::from_secs(1) {
                last = std::time::Instant::now();
                observer.note(&format!(
                    "listing {shown}: {} {}, {} so far",
                    crate::units::fmt_count(b.objects()),
                    crate::words::noun(b.objects(), "object"),
                    crate::units::fmt_bytes_si(b.bytes())
                ));
            }
        }
        Ok::<_, JobError>((b, refused))
    })?;
    observer.note(&format!(
        "listed {shown}: {} {}, {} in {:.1} s{}",
        crate::units::fmt_count(corpus.objects()),
        crate::words::noun(corpus.objects(), "object"),
        crate::units::fmt_bytes_si(corpus.bytes()),
        started.elapsed().as_secs_f64(),
        if refused > 0 {
            format!(
                " ({} refused, not counted)",
                crate::words::count(refused, "key")
            )
        } else {
            String::new()
        }
    ));
    Ok(corpus.finish(format!("listing {shown}"))?)
}

/// Refuse a move from a store to itself (`--src` and `--dst` the same location) and a
/// destination listed twice under any spelling (`b2` and `backblaze-b2`). A destination that is
/// the source's place is a move between two buckets (or folders) of one store, priced as such;
/// without locations to tell them apart, a note says so.
fn distinct_places(
    spec: &PlanSpec,
    source: &Place,
    destinations: &[Place],
    observer: &dyn Observer,
) -> Result<(), JobError> {
    let usage = |m: String| Err(JobError::Usage(m));
    let trimmed = |l: &str| l.trim().trim_end_matches('/').to_string();
    if let (Some(s), Some(d)) = (&spec.src, &spec.dst)
        && trimmed(s) == trimmed(d)
    {
        return usage(format!(
            "--src and --dst are the same location ({s}): a move from a store to itself moves nothing; give the destination's location as --dst"
        ));
    }
    for (i, d) in destinations.iter().enumerate() {
        if let Some(e) = destinations[..i]
            .iter()
            .find(|e| e.canonical() == d.canonical())
        {
            return usage(format!(
                "--to lists {} twice ({:?} and {:?}): give each destination once",
                d.canonical(),
                e.given,
                d.given
            ));
        }
        if d.canonical() == source.canonical() && spec.src.is_none() && spec.dst.is_none() {
            observer.note(&format!(
                "note: --to {:?} is --from's own place ({}): priced as a copy between two buckets or folders of that store (give --src and --dst to name them; with --compute-at, staying is the \"stay\" candidate)",
                d.given,
                d.canonical()
            ));
        }
    }
    Ok(())
}

/// `--compute-at PROVIDER[:REGION]`: a catalog provider (or an alias) and one of its regions, or
/// `internet[:NAME]` for a GPU cloud without a provider file (`internet:lambda`), whose reads
/// from every store are priced as internet egress. Any other name is refused with the nearest
/// known id: a typo must not silently price every read as internet egress.
pub fn compute_at(catalog: &Catalog, given: &str) -> Result<ComputeAt, JobError> {
    use crate::catalog::suggest;
    let usage = |m: String| JobError::Usage(m);
    let given = given.trim();
    let (pid, region) = match given.split_once(':') {
        Some((p, r)) => (p.trim(), Some(r.trim())),
        None => (given, None),
    };
    let word = |w: &str| {
        !w.is_empty()
            && (w.chars()).all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    if !word(pid) || region.is_some_and(|r| !word(r)) || given.contains('/') {
        return Err(usage(format!(
            "--compute-at {given:?}: give PROVIDER[:REGION], e.g. coreweave or aws:us-east-1 (no storage class), or internet:NAME for a GPU cloud without a provider file"
        )));
    }
    let p = match catalog.get(pid) {
        Ok(p) => p,
        Err(_) if pid == INTERNET => {
            return Ok(ComputeAt {
                given: given.to_string(),
                provider: INTERNET.to_string(),
                region: region.map(str::to_string),
                in_catalog: false,
            });
        }
        Err(e) => {
            return Err(usage(format!(
                "--compute-at {given:?}: {e}; a GPU cloud without a provider file is given as internet:NAME (e.g. internet:lambda) and its reads are priced as internet egress"
            )));
        }
    };
    let f = &p.file;
    let region = region.unwrap_or(&f.default_region);
    if !f.regions.iter().any(|r| r.id == region) {
        let ids = || f.regions.iter().map(|r| r.id.as_str());
        return Err(usage(format!(
            "--compute-at {given:?}: {} has no region {region:?}{}; its regions: {}",
            f.id,
            suggest::hint(region, ids()),
            ids().collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(ComputeAt {
        given: given.to_string(),
        provider: f.id.clone(),
        region: Some(region.to_string()),
        in_catalog: true,
    })
}

/// A rate flag of `plan` (`--bandwidth 10Gbps`); zero is refused as zero, not as a missing unit.
pub fn rate_flag(flag: &str, v: &str) -> Result<rust_decimal::Decimal, JobError> {
    let zero = (v
        .trim()
        .trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == '/'))
    .parse::<rust_decimal::Decimal>()
    .is_ok_and(|n| n.is_zero());
    if zero {
        return Err(JobError::Usage(format!(
            "{flag} {v:?}: must be above 0, with a unit such as 10Gbps or 1.2GB/s"
        )));
    }
    crate::units::parse_rate(v).map_err(|e| JobError::Usage(format!("{flag}: {e}")))
}

/// `--compute-at internet[:NAME]`: GPUs outside the catalog, reached over the internet.
pub const INTERNET: &str = "internet";
