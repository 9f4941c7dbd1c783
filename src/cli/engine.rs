//! The engine's flags resolved once: [`resolve`] turns [`EngineArgs`] (with the pair and the
//! plan) into the copy options, rate limits, journal path and display every run command uses, or
//! a usage error naming the flag.

use super::CliError;
use super::args::EngineArgs;
use super::progress::Display;
use moverctl::catalog::parts::{DEFAULT_MULTIPART_THRESHOLD, DEFAULT_PART_SIZE, MIB, PartRule};
use moverctl::catalog::{Catalog, Limits as StoreLimits};
use moverctl::journal;
use moverctl::limit::Limits;
use moverctl::plan::file::PlanFile;
use moverctl::store::Store;
use moverctl::transfer::{CopyOptions, Verify};
use moverctl::units::{fmt_bytes, parse_size};
use std::path::PathBuf;
use std::sync::Arc;

pub(super) fn usage(m: impl Into<String>) -> CliError {
    CliError::Usage(m.into())
}

fn globs(flag: &str, pats: &[String]) -> Result<Option<globset::GlobSet>, CliError> {
    moverctl::transfer::filter::globs(flag, pats).map_err(usage)
}

/// --min-size, --max-size, --max-age, --min-age and --files-from.
fn metadata_policy(
    e: &EngineArgs,
) -> Result<moverctl::transfer::fidelity::MetadataPolicy, CliError> {
    let mut set = Vec::new();
    for kv in &e.metadata_set {
        set.push(moverctl::transfer::fidelity::MetadataPolicy::parse_set(kv).map_err(usage)?);
    }
    Ok(moverctl::transfer::fidelity::MetadataPolicy {
        no_user: e.no_metadata,
        set,
    })
}

fn selection(e: &EngineArgs) -> Result<moverctl::transfer::filter::Selection, CliError> {
    use moverctl::transfer::filter::{FilesFrom, Selection, parse_age};
    let size = |flag: &str, v: &Option<String>| {
        v.as_deref()
            .map(|v| {
                moverctl::units::parse_rclone_size(v).map_err(|m| usage(format!("{flag}: {m}")))
            })
            .transpose()
    };
    let now = chrono::Utc::now();
    let age = |flag: &str, v: &Option<String>| {
        v.as_deref()
            .map(|v| parse_age(flag, v, now).map_err(usage))
            .transpose()
    };
    Ok(Selection {
        min_size: size("--min-size", &e.min_size)?,
        max_size: size("--max-size", &e.max_size)?,
        modified_after: age("--max-age", &e.max_age)?,
        modified_before: age("--min-age", &e.min_age)?,
        files_from: match &e.files_from {
            Some(p) => Some(Arc::new(FilesFrom::open(p).map_err(usage)?.0)),
            None => None,
        },
    })
}

/// The destination's part limits: its provider's (resolved as every command does), else
/// `onprem`'s.
fn default_limits(catalog: &Catalog, dst: &Store) -> StoreLimits {
    moverctl::job::trust::provider_of(catalog, dst)
        .or_else(|| catalog.get("onprem").ok())
        .map(|p| p.file.limits.clone())
        .expect("the catalog has onprem")
}

pub(super) struct Resolved {
    pub(super) opts: CopyOptions,
    pub(super) limits: Limits,
    pub(super) journal_path: PathBuf,
    pub(super) json: bool,
    /// `copy`/`exec --quiet`: no summary on success (sync has its own).
    pub(super) quiet: bool,
    /// The progress bar and stats line (see `progress.rs`).
    pub(super) display: Display,
    /// How a dry run's copy is priced (`copy`/`exec --dry-run`).
    pub(super) pricing: moverctl::job::pricing::Sides,
}

/// The progress display the flags ask for: a bar on a terminal (not with --json), a stats line
/// every `--stats` (default: a minute, when stderr is not a terminal). Totals come from the plan
/// or, when a display is shown, from a sizing listing of the source (free for a local folder;
/// for a cloud source made only for a bar or an explicit --stats, its LIST requests counted).
fn display(
    e: &EngineArgs,
    src: &Store,
    plan: Option<&PlanFile>,
) -> Result<(Display, bool), CliError> {
    use std::io::IsTerminal;
    let terminal = std::io::stderr().is_terminal();
    let stats = match e.stats.as_deref() {
        Some("0") => None,
        Some(v) => Some(
            humantime::parse_duration(v).map_err(|err| usage(format!("--stats {v:?}: {err}")))?,
        )
        .filter(|d| !d.is_zero()),
        None if terminal => None,
        None => Some(std::time::Duration::from_secs(60)),
    };
    let bar = terminal && !e.json && !e.dry_run;
    let planned = plan.map(|p| (p.corpus.objects, p.corpus.bytes));
    let size_ahead = planned.is_none()
        && !e.dry_run
        && (bar
            || e.stats.is_some() && stats.is_some()
            || (stats.is_some() && src.caps.in_process));
    Ok((
        Display {
            bar,
            stats,
            planned,
        },
        size_ahead,
    ))
}

/// The part rule, the destination's part limits (a plan's override its provider's) and the
/// part buffers' bound.
fn parts(
    e: &EngineArgs,
    catalog: &Catalog,
    dst: &Store,
    plan: Option<&PlanFile>,
) -> Result<(PartRule, StoreLimits, u64), CliError> {
    let size = |flag: &str, v: &str| parse_size(v).map_err(|m| usage(format!("{flag}: {m}")));
    let mut dst_limits = default_limits(catalog, dst);
    let mut rule = PartRule {
        threshold: DEFAULT_MULTIPART_THRESHOLD,
        preferred_part: DEFAULT_PART_SIZE,
    };
    if let Some(p) = plan {
        rule = p.part_rule();
        let t = &p.transfer;
        dst_limits.max_parts = t.max_parts;
        dst_limits.min_part_bytes = t.min_part_bytes;
        dst_limits.max_part_bytes = t.max_part_bytes;
        dst_limits.max_object_bytes = t.max_object_bytes;
        dst_limits.max_single_put_bytes = t.max_single_put_bytes;
        dst_limits.equal_part_sizes = t.equal_part_sizes;
    }
    if let Some(v) = &e.part_size {
        rule.preferred_part = size("--part-size", v)?;
        if rule.preferred_part < MIB {
            return Err(usage("--part-size must be at least 1MiB"));
        }
    }
    if let Some(v) = &e.multipart_threshold {
        rule.threshold = size("--multipart-threshold", v)?;
    }
    let max_buffer = size("--max-buffer", &e.max_buffer)?;
    if max_buffer < rule.preferred_part.max(dst_limits.min_part_bytes) {
        return Err(usage(format!(
            "--max-buffer {} is smaller than one part ({}); raise it or lower --part-size",
            e.max_buffer,
            fmt_bytes(rule.preferred_part)
        )));
    }
    Ok((rule, dst_limits, max_buffer))
}

fn verify_of(e: &EngineArgs) -> Result<Verify, CliError> {
    Ok(match e.verify.as_str() {
        "auto" => Verify::Auto,
        "readback" => Verify::Readback,
        "strict" => Verify::Strict,
        "md5" => Verify::Md5,
        "size" => Verify::Size,
        o => {
            return Err(usage(format!(
                "--verify {o:?}: use auto, strict, size, md5 or readback"
            )));
        }
    })
}

/// --bwlimit (fixed or a timetable) and --tpslimit over the whole run.
fn rate_limits(e: &EngineArgs, src: &Store, dst: &Store) -> Result<Limits, CliError> {
    let bw = match &e.bwlimit {
        Some(v) => Some(moverctl::bwlimit::parse(v).map_err(|m| usage(format!("--bwlimit: {m}")))?),
        None => None,
    };
    if e.tpslimit == Some(0) {
        return Err(usage("--tpslimit must be at least 1"));
    }
    // A local side is neither a download nor an upload (see moverctl::bwlimit).
    let remote = |s: &Store| !matches!(s.kind, moverctl::store::Kind::Local);
    let (reads, writes) = (remote(src), remote(dst));
    Ok(match bw {
        Some(moverctl::bwlimit::BwLimit::Fixed(r)) => {
            Limits::new(r.effective(reads, writes), e.tpslimit)
        }
        Some(table) => Limits::new(None, e.tpslimit)
            .with_schedule(Arc::new(move || table.rate_now().effective(reads, writes))),
        None => Limits::new(None, e.tpslimit),
    }
    .with_concurrency(e.transfers))
}

/// --include/--exclude with the patterns of --include-from/--exclude-from.
fn patterns(e: &EngineArgs) -> Result<(Vec<String>, Vec<String>), CliError> {
    let (mut includes, mut excludes) = (e.include.clone(), e.exclude.clone());
    for f in &e.include_from {
        includes
            .extend(moverctl::transfer::filter::patterns_from("--include-from", f).map_err(usage)?);
    }
    for f in &e.exclude_from {
        excludes
            .extend(moverctl::transfer::filter::patterns_from("--exclude-from", f).map_err(usage)?);
    }
    Ok((includes, excludes))
}

pub(super) fn resolve(
    e: &EngineArgs,
    catalog: &Catalog,
    src: &Store,
    dst: &Store,
    plan: Option<&PlanFile>,
) -> Result<Resolved, CliError> {
    if e.transfers == 0 || e.part_concurrency == 0 {
        return Err(usage(
            "--transfers and --part-concurrency must be at least 1",
        ));
    }
    let (rule, dst_limits, max_buffer) = parts(e, catalog, dst, plan)?;
    let verify = verify_of(e)?;
    let limits = rate_limits(e, src, dst)?;
    let (includes, excludes) = patterns(e)?;
    if e.checkers == Some(0) || e.list_streams == 0 {
        return Err(usage("--checkers and --list-streams must be at least 1"));
    }
    let select = selection(e)?;
    let journal_path = e
        .journal
        .clone()
        .unwrap_or_else(|| journal::path_for(&journal::state_dir(), src, dst));
    let (display, size_ahead) = display(e, src, plan)?;
    Ok(Resolved {
        opts: CopyOptions {
            transfers: e.transfers,
            part_concurrency: e.part_concurrency,
            ranged_reads: e.ranged_reads,
            part_rule: rule,
            dst_limits,
            max_buffer,
            retries: e.retries,
            verify,
            dry_run: e.dry_run,
            include: globs("--include", &includes)?,
            exclude: globs("--exclude", &excludes)?,
            select,
            size_only: e.size_only,
            checkers: e.checkers,
            counters: Some(Arc::new(moverctl::transfer::Counters::default())),
            fsync: e.fsync.parse().map_err(usage)?,
            preserve_mtime: e.preserve_mtime,
            size_ahead,
            server_side: !e.no_server_side,
            stream_single_put: !e.no_streamed_put,
            metadata: metadata_policy(e)?,
            journal_proof_only: false,
            inventory: None,
            list_streams: e.list_streams,
            list_split_after: moverctl::transfer::LIST_SPLIT_AFTER,
        },
        limits,
        journal_path,
        json: e.json,
        quiet: false,
        display,
        pricing: (None, None),
    })
}

/// The probe on first use of an S3 destination ([`moverctl::job::trust::first_use`]): not with
/// `--no-probe`, a dry run or `--verify md5` (which wants the MD5 whatever the store checks); its
/// one line on stderr unless `quiet`.
pub fn first_use_probe(
    catalog: &Catalog,
    remotes: &moverctl::store::config::Remotes,
    dst: &mut Store,
    e: &EngineArgs,
    quiet: bool,
) -> Result<(), CliError> {
    let allowed = !e.no_probe && !e.dry_run && e.verify != "md5";
    let ran = moverctl::job::trust::first_use::probe_if_unsettled(catalog, remotes, dst, allowed)?;
    if let Some(line) = ran.filter(|_| !quiet) {
        eprintln!("moverctl: {line}");
    }
    Ok(())
}
