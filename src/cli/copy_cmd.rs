//! `moverctl copy SRC DST` and `moverctl exec PLAN`: the copy engine with flags resolved once.

use super::CliError;
use super::exit::Exit;
use super::progress::Progress;
use crate::catalog::parts::{DEFAULT_MULTIPART_THRESHOLD, DEFAULT_PART_SIZE, MIB, PartRule};
use crate::catalog::{Catalog, Limits as StoreLimits};
use crate::journal::{self, Journal};
use crate::limit::Limits;
use crate::plan::file::PlanFile;
use crate::store::Store;
use crate::store::config::Remotes;
use crate::transfer::{CopyOptions, Event, Report, Run, Verify};
use crate::units::{fmt_bytes, fmt_duration, parse_bytes};
use clap::Args;
use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use rust_decimal::Decimal;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(Debug, Args, Clone)]
pub struct EngineArgs {
    /// Objects copied at the same time.
    #[arg(long, default_value_t = 32)]
    pub transfers: usize,
    /// Parts of one large object in flight at the same time.
    #[arg(long, default_value_t = 4)]
    pub part_concurrency: usize,
    /// Read each part of a large object with its own ranged GET (parallel streams, which can
    /// help over long-distance links) instead of one GET per object split as it streams.
    #[arg(long)]
    pub ranged_reads: bool,
    /// Preferred multipart part size (raised to fit the destination's limits).
    #[arg(long)]
    pub part_size: Option<String>,
    /// Objects above this size are uploaded in parts.
    #[arg(long)]
    pub multipart_threshold: Option<String>,
    /// Upper bound for part buffers held in memory across the run.
    #[arg(long, default_value = "128MiB")]
    pub max_buffer: String,
    /// Bandwidth limit over the whole run: 200MiB/s, 1Gbps, or rclone's forms: 10M (MiB/s),
    /// 10M:off (upload:download), a timetable "08:00,10M 19:00,off" (local time), off.
    #[arg(long, value_name = "RATE")]
    pub bwlimit: Option<String>,
    /// Requests per second over the whole run.
    #[arg(long)]
    pub tpslimit: Option<u32>,
    /// Attempts after the first for an object that failed.
    #[arg(long, default_value_t = 3)]
    pub retries: u32,
    /// auto: ETags, stored digests and HEAD; readback: also read every object back and compare;
    /// strict: as auto, and fail objects whose cloud source states no digest at all.
    #[arg(long, default_value = "auto")]
    pub verify: String,
    /// Show what would be copied and skipped, and why; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Only keys matching this glob (repeatable; rclone's rules: '*.safetensors' at any depth,
    /// '/ckpt/**' from the root only, '**' crosses folders).
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Leave out keys matching this glob (repeatable; rules as --include).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Read --include patterns from a file, one a line ('#' and ';' start comments).
    #[arg(long, value_name = "FILE")]
    pub include_from: Vec<PathBuf>,
    /// Read --exclude patterns from a file, one a line.
    #[arg(long, value_name = "FILE")]
    pub exclude_from: Vec<PathBuf>,
    /// Only the keys listed in FILE (one a line, or `moverctl ls --json` output), sorted in byte
    /// order; read alongside the listing, so any length works.
    #[arg(long, value_name = "FILE")]
    pub files_from: Option<PathBuf>,
    /// Leave out objects smaller than SIZE (rclone units: 100K, 10M, 1G are binary; a bare
    /// number is KiB; 10MB is 10^7 bytes).
    #[arg(long, value_name = "SIZE")]
    pub min_size: Option<String>,
    /// Leave out objects larger than SIZE.
    #[arg(long, value_name = "SIZE")]
    pub max_size: Option<String>,
    /// Only objects modified within this long (36h, 7d, 2w; a bare number is seconds) or since a
    /// date (2026-11-01).
    #[arg(long, value_name = "AGE")]
    pub max_age: Option<String>,
    /// Only objects modified longer ago than this (or before a date).
    #[arg(long, value_name = "AGE")]
    pub min_age: Option<String>,
    /// Destination HEADs in flight at once, apart from --transfers (default: the checks share
    /// the transfer slots). Each side is listed as one sorted stream, so listing is not affected.
    #[arg(long, value_name = "N")]
    pub checkers: Option<usize>,
    /// Take a destination object of the source's size as the same: no MD5 comparison, no HEAD.
    #[arg(long, conflicts_with = "checksum")]
    pub size_only: bool,
    /// Decide by checksums, never by modification times: what moverctl always does (accepted for
    /// rclone's habit; see the decision table).
    #[arg(long)]
    pub checksum: bool,
    /// Show progress: the default when stderr is a terminal (accepted for rclone's habit).
    #[arg(long, short = 'P')]
    pub progress: bool,
    /// Journal file (default: in the state folder, named after source and destination).
    #[arg(long, value_name = "FILE")]
    pub journal: Option<PathBuf>,
    /// One JSON object per line for each object, then a summary.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CopyArgs {
    /// Where to read: s3://…, gs://…, az://…, a path, or REMOTE:bucket/prefix.
    pub src: String,
    /// Where to write.
    pub dst: String,
    /// Storage class written at the destination: a catalog class (`moverctl providers show
    /// PROVIDER`) or the store's own name (GLACIER_IR, Cool). Overrides the remote's.
    #[arg(long, value_name = "CLASS")]
    pub storage_class: Option<String>,
    /// Print nothing when all is well (no summary); problems and the summary of a run that did
    /// not succeed still go to stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// A plan file written by `moverctl plan --save`.
    pub plan: PathBuf,
    /// Storage class written at the destination: a catalog class (`moverctl providers show
    /// PROVIDER`) or the store's own name (GLACIER_IR, Cool). Overrides the remote's.
    #[arg(long, value_name = "CLASS")]
    pub storage_class: Option<String>,
    /// Print nothing when all is well (no summary); problems and the summary of a run that did
    /// not succeed still go to stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Source location, when the plan has none (or to override it).
    #[arg(long)]
    pub src: Option<String>,
    /// Destination location, when the plan has none (or to override it).
    #[arg(long)]
    pub dst: Option<String>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

pub(super) fn usage(m: impl Into<String>) -> CliError {
    CliError::Usage(m.into())
}

fn globs(flag: &str, pats: &[String]) -> Result<Option<globset::GlobSet>, CliError> {
    crate::transfer::filter::globs(flag, pats).map_err(usage)
}

/// --min-size, --max-size, --max-age, --min-age and --files-from.
fn selection(e: &EngineArgs) -> Result<crate::transfer::filter::Selection, CliError> {
    use crate::transfer::filter::{FilesFrom, Selection, parse_age};
    let size = |flag: &str, v: &Option<String>| {
        v.as_deref()
            .map(|v| crate::units::parse_rclone_size(v).map_err(|m| usage(format!("{flag}: {m}"))))
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
    super::stores::provider_of(catalog, dst)
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
}

pub(super) fn resolve(
    e: &EngineArgs,
    catalog: &Catalog,
    src: &Store,
    dst: &Store,
    plan: Option<&PlanFile>,
) -> Result<Resolved, CliError> {
    let size = |flag: &str, v: &str| parse_bytes(v).map_err(|m| usage(format!("{flag}: {m}")));
    if e.transfers == 0 || e.part_concurrency == 0 {
        return Err(usage(
            "--transfers and --part-concurrency must be at least 1",
        ));
    }
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
    let verify = match e.verify.as_str() {
        "auto" => Verify::Auto,
        "readback" => Verify::Readback,
        "strict" => Verify::Strict,
        o => {
            return Err(usage(format!(
                "--verify {o:?}: use auto, readback or strict"
            )));
        }
    };
    let bw = match &e.bwlimit {
        Some(v) => Some(crate::bwlimit::parse(v).map_err(|m| usage(format!("--bwlimit: {m}")))?),
        None => None,
    };
    if e.tpslimit == Some(0) {
        return Err(usage("--tpslimit must be at least 1"));
    }
    // A local side is neither a download nor an upload (see crate::bwlimit).
    let remote = |s: &Store| !matches!(s.kind, crate::store::Kind::Local);
    let (reads, writes) = (remote(src), remote(dst));
    let limits = match bw {
        Some(crate::bwlimit::BwLimit::Fixed(r)) => {
            Limits::new(r.effective(reads, writes), e.tpslimit)
        }
        Some(table) => Limits::new(None, e.tpslimit)
            .with_schedule(Arc::new(move || table.rate_now().effective(reads, writes))),
        None => Limits::new(None, e.tpslimit),
    }
    .with_concurrency(e.transfers);
    let (mut includes, mut excludes) = (e.include.clone(), e.exclude.clone());
    for f in &e.include_from {
        includes
            .extend(crate::transfer::filter::patterns_from("--include-from", f).map_err(usage)?);
    }
    for f in &e.exclude_from {
        excludes
            .extend(crate::transfer::filter::patterns_from("--exclude-from", f).map_err(usage)?);
    }
    if e.checkers == Some(0) {
        return Err(usage("--checkers must be at least 1"));
    }
    let select = selection(e)?;
    let journal_path = e.journal.clone().unwrap_or_else(|| {
        journal::default_path(&journal::state_dir(), &src.shown(), &dst.shown())
    });
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
            counters: Some(Arc::new(crate::transfer::Counters::default())),
        },
        limits,
        journal_path,
        json: e.json,
        quiet: false,
    })
}

pub fn run_copy(catalog: &Catalog, remotes: &Remotes, args: CopyArgs) -> Result<Exit, CliError> {
    let one = super::single::detect(&args.src, &args.dst, remotes);
    let (mut src, mut dst) = match &one {
        Some(o) => o.open(remotes)?,
        None => Store::open_pair(&args.src, &args.dst, remotes)?,
    };
    super::stores::refine_caps(catalog, &mut src);
    super::stores::refine_caps(catalog, &mut dst);
    super::storage_class::apply(catalog, &mut dst, args.storage_class.as_deref())?;
    let mut r = resolve(&args.engine, catalog, &src, &dst, None)?;
    r.quiet = args.quiet;
    drive(src, dst, r, None, catalog)
}

pub fn run_exec(catalog: &Catalog, remotes: &Remotes, args: ExecArgs) -> Result<Exit, CliError> {
    let plan = PlanFile::load(&args.plan)?;
    let src_loc = args
        .src
        .clone()
        .or_else(|| plan.source.location.clone())
        .ok_or_else(|| {
            usage(format!(
                "{} has no source location: pass --src LOCATION",
                args.plan.display()
            ))
        })?;
    let dst_loc = args
        .dst
        .clone()
        .or_else(|| plan.destination.location.clone())
        .ok_or_else(|| {
            usage(format!(
                "{} has no destination location: pass --dst LOCATION",
                args.plan.display()
            ))
        })?;
    let (mut src, mut dst) = Store::open_pair(&src_loc, &dst_loc, remotes)?;
    super::stores::refine_caps(catalog, &mut src);
    super::stores::refine_caps(catalog, &mut dst);
    super::storage_class::apply(catalog, &mut dst, args.storage_class.as_deref())?;
    let mut r = resolve(&args.engine, catalog, &src, &dst, Some(&plan))?;
    r.quiet = args.quiet;
    drive(src, dst, r, Some(&plan), catalog)
}

fn drive(
    src: Store,
    dst: Store,
    r: Resolved,
    plan: Option<&PlanFile>,
    catalog: &Catalog,
) -> Result<Exit, CliError> {
    let rt = super::runtime()?;
    // One run of a pair at a time (copy, exec and sync share the lock; a dry run takes none).
    let _lock = if r.opts.dry_run {
        None
    } else {
        let path = crate::lock::default_path(&src.shown(), &dst.shown());
        let what = format!("copy {} {}", src.shown(), dst.shown());
        let (l, _stale) = crate::lock::RunLock::acquire(&path, &what).map_err(|e| match e {
            crate::lock::LockError::Held { .. } => CliError::Locked(e.to_string()),
            other => CliError::Failure(other.to_string()),
        })?;
        Some(l)
    };
    let journal = if r.opts.dry_run {
        None
    } else {
        Some(Journal::open(&r.journal_path, &src.shown(), &dst.shown())?)
    };
    let src_shown = src.shown();
    let dst_shown = dst.shown();
    let json = r.json;
    let stop = Arc::new(AtomicBool::new(false));
    let report = rt.block_on(async {
        super::stop_on_ctrl_c(stop.clone(), "stopping after the objects in flight");
        let progress = Progress::new(
            json || r.quiet,
            plan.map(|p| p.corpus.bytes),
            r.opts.counters.clone().unwrap_or_default(),
        );
        // Two listed MD5 ETags that differ prove a change, whatever moverctl metadata on the
        // destination says (and two equal ones prove equal content): copy decides as sync does.
        let policy = crate::transfer::diff::JoinPolicy {
            dest_only: false,
            compare_md5_etags: src.caps.put_etag_is_md5 && dst.caps.put_etag_is_md5,
        };
        let run = Run {
            src,
            dst,
            opts: r.opts.clone(),
            limits: r.limits.clone(),
            journal,
            stop,
        };
        let out = std::io::stdout();
        let res = run
            .run_with(
                policy,
                |ev| {
                    progress.event(ev);
                    if json {
                        let line = event_json(ev);
                        let mut o = out.lock();
                        let _ = writeln!(o, "{line}");
                    }
                },
                |_| Ok(()),
            )
            .await;
        progress.finish();
        res
    });
    let report = report?;
    let vs = plan.and_then(|p| against_plan(&report, p, catalog));
    let exit = if report.interrupted {
        Exit::Interrupted
    } else if report.auth_failures() > 0 {
        Exit::Credentials
    } else if !report.failed.is_empty() || !report.refused.is_empty() {
        Exit::Partial
    } else {
        Exit::Success
    };
    if r.quiet && exit == Exit::Success && !json {
        // Silent on success.
    } else if json {
        let mut v: serde_json::Value =
            serde_json::from_str(&summary_json(&report, plan)).expect("valid JSON");
        if let Some(vs) = &vs {
            v["plan"] = vs.json();
        }
        println!("{v}");
    } else {
        eprint!(
            "{}",
            summary_text(&report, &src_shown, &dst_shown, &r, plan)
        );
        if let Some(vs) = &vs {
            eprint!("{}", vs.text());
        }
    }
    if let Some(m) = credentials_refused(&report, &src_shown, &dst_shown) {
        eprintln!("moverctl: error: {m}");
    }
    Ok(exit)
}

/// When objects failed because a store refused the credentials (the run exits 4, not 3): what
/// to say, naming the locations (never a value).
pub(super) fn credentials_refused(r: &Report, src: &str, dst: &str) -> Option<String> {
    let n = r.auth_failures();
    (n > 0).then(|| {
        format!(
            "{n} of {} failed objects failed because the store refused the credentials ({src} -> {dst}); \
             the failures name the request that was refused. Check the credentials of that location \
             (its remote's *_env variables or profile, or the AWS_*, GOOGLE_* or AZURE_* variables) \
             and run again to resume",
            r.failed.len()
        )
    })
}

pub(super) fn event_json(ev: &Event) -> String {
    let v = match ev {
        Event::Copied {
            key,
            bytes,
            verified_by,
        } => {
            serde_json::json!({"event": "copied", "key": key, "bytes": bytes, "verified_by": verified_by})
        }
        Event::Skipped { key, bytes, reason } => {
            serde_json::json!({"event": "skipped", "key": key, "bytes": bytes, "reason": reason})
        }
        Event::WouldCopy { key, bytes, reason } => {
            serde_json::json!({"event": "would_copy", "key": key, "bytes": bytes, "reason": reason})
        }
        Event::Failed { key, error } => {
            serde_json::json!({"event": "failed", "key": key, "error": error})
        }
        Event::Refused { key, reason } => {
            serde_json::json!({"event": "refused", "key": key, "reason": reason})
        }
    };
    v.to_string()
}

/// The `failed` object of a JSON summary: counts and the first 100 keys with their errors.
pub(crate) fn failed_json(r: &Report) -> serde_json::Value {
    serde_json::json!({
        "objects": r.failed.len(),
        "bytes": r.failed_bytes,
        "keys": r.failed.iter().take(100).map(|f| serde_json::json!({"key": f.key, "error": f.error})).collect::<Vec<_>>(),
    })
}

/// The `refused` list of a JSON summary: the first 100 keys a store refused, with the reason.
pub(crate) fn refused_json(r: &Report) -> serde_json::Value {
    r.refused
        .iter()
        .take(100)
        .map(|f| serde_json::json!({"key": f.key, "reason": f.error}))
        .collect::<Vec<_>>()
        .into()
}

fn summary_json(r: &Report, plan: Option<&PlanFile>) -> String {
    serde_json::json!({
        "event": "summary",
        "dry_run": r.dry_run,
        "interrupted": r.interrupted,
        "copied": {"objects": r.copied, "bytes": r.copied_bytes},
        "skipped": {"objects": r.skipped, "bytes": r.skipped_bytes},
        "failed": failed_json(r),
        "refused": refused_json(r),
        "filtered": r.filtered,
        "verified_by": r.verified_by,
        "no_source_digest": r.no_source_digest,
        "reasons": r.reasons,
        "requests": {"list_source": r.requests_list_src, "list_destination": r.requests_list_dst,
                     "get": r.requests_get, "put": r.requests_put, "head": r.requests_head},
        "resumed_parts": r.resumed_parts,
        "aborted_uploads": r.aborted_uploads,
        "open_uploads": r.open_uploads,
        "retries": r.retries,
        "throttle_events": r.throttle_events,
        "seconds": r.elapsed.as_secs_f64(),
        "predicted_seconds": plan.map(|p| p.prediction.seconds.clone()),
    })
    .to_string()
}

/// `verified: source-md5+dest-md5: 3, …` (labels in order), or nothing when none was copied.
fn verified_line(r: &Report) -> String {
    if r.verified_by.is_empty() {
        return String::new();
    }
    let v: Vec<String> = r
        .verified_by
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    format!("verified: {}\n", v.join(", "))
}

/// Objects whose destination was checked by size only.
fn size_only(r: &Report) -> u64 {
    r.verified_by
        .iter()
        .filter(|(k, _)| k.write == crate::transfer::WriteCheck::DestSize)
        .map(|(_, v)| v)
        .sum()
}

fn summary_text(
    r: &Report,
    src: &str,
    dst: &str,
    res: &Resolved,
    plan: Option<&PlanFile>,
) -> String {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    t.set_header(vec!["", "objects", "bytes"]);
    let verb = if r.dry_run { "would copy" } else { "copied" };
    t.add_row(vec![
        verb.to_string(),
        r.copied.to_string(),
        fmt_bytes(r.copied_bytes),
    ]);
    t.add_row(vec![
        "skipped".to_string(),
        r.skipped.to_string(),
        fmt_bytes(r.skipped_bytes),
    ]);
    t.add_row(vec![
        "failed".to_string(),
        r.failed.len().to_string(),
        fmt_bytes(r.failed_bytes),
    ]);
    if !r.refused.is_empty() {
        t.add_row(vec![
            "refused keys".to_string(),
            r.refused.len().to_string(),
            "-".into(),
        ]);
    }
    if r.filtered > 0 {
        t.add_row(vec![
            "filtered out".to_string(),
            r.filtered.to_string(),
            "-".into(),
        ]);
    }
    let secs = r.elapsed.as_secs_f64().max(0.001);
    let mut out = format!(
        "\n{src} -> {dst}{}\n{t}\n",
        if r.dry_run {
            " (dry run: nothing changed)"
        } else {
            ""
        }
    );
    if !r.reasons.is_empty() {
        let reasons: Vec<String> = r.reasons.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        out.push_str(&format!("why: {}\n", reasons.join(", ")));
    }
    out.push_str(&verified_line(r));
    out.push_str(&format!(
        "requests: LIST {} + {}, GET {}, PUT {} (parts and multipart calls included), HEAD {}{}\n",
        r.requests_list_src,
        r.requests_list_dst,
        r.requests_get,
        r.requests_put,
        r.requests_head,
        if r.resumed_parts > 0 {
            format!("; {} parts reused from an earlier run", r.resumed_parts)
        } else {
            String::new()
        }
    ));
    out.push_str(&format!(
        "time: {} at {}/s{}{}\n",
        fmt_duration(Decimal::from_f64_retain(secs).unwrap_or_default()),
        fmt_bytes((r.written_bytes as f64 / secs) as u64),
        if r.retries > 0 {
            format!("; {} retries", r.retries)
        } else {
            String::new()
        },
        if r.throttle_events > 0 {
            format!("; throttled {} times", r.throttle_events)
        } else {
            String::new()
        },
    ));
    if let Some(p) = plan
        && let Ok(pred) = p.prediction.seconds.parse::<Decimal>()
    {
        out.push_str(&format!(
            "plan: predicted {} for {}; this run took {} for {}\n",
            fmt_duration(pred),
            fmt_bytes(p.corpus.bytes),
            fmt_duration(Decimal::from_f64_retain(secs).unwrap_or_default()),
            fmt_bytes(r.copied_bytes + r.skipped_bytes)
        ));
    }
    for f in r.failed.iter().take(20) {
        out.push_str(&format!("failed: {}: {}\n", f.key, f.error));
    }
    if r.failed.len() > 20 {
        out.push_str(&format!(
            "… and {} more failures (see --json)\n",
            r.failed.len() - 20
        ));
    }
    for f in r.refused.iter().take(20) {
        out.push_str(&format!("refused: {:?}: {}\n", f.key, f.error));
    }
    let size_only = size_only(r);
    if size_only > 0 {
        out.push_str(&format!(
            "! {size_only} objects were checked at the destination by size only (its ETags are not content hashes); \
             --verify readback reads them back\n"
        ));
    }
    if r.no_source_digest > 0 {
        out.push_str(&format!(
            "! {} objects came from a source that states no digest for them (no MD5 ETag, multipart ETag, stored checksum or moverctl metadata): \
             their bytes were checked against the source by size only; --verify strict refuses such objects\n",
            r.no_source_digest
        ));
    }
    if r.open_uploads > 0 {
        out.push_str(&format!(
            "{} multipart uploads are left open for the next run to resume (they expire by the store's lifecycle rules if abandoned)\n",
            r.open_uploads
        ));
    }
    if r.aborted_uploads > 0 {
        out.push_str(&format!(
            "{} multipart uploads were abandoned and aborted (a changed source, or a part or completion that failed its check)\n",
            r.aborted_uploads
        ));
    }
    if r.interrupted {
        out.push_str("interrupted: run the same command again to resume\n");
    }
    if !r.dry_run {
        out.push_str(&format!("journal: {}\n", res.journal_path.display()));
    }
    out
}

/// This run's requests and bytes priced with the catalog, beside what the plan predicted.
struct VsPlan {
    predicted_seconds: Decimal,
    seconds: Decimal,
    predicted: [(String, Decimal); 3],
    actual: [(String, crate::money::Usd); 3],
    corpus_bytes: u64,
    run_bytes: u64,
    catalog_changed: bool,
}

fn against_plan(r: &Report, p: &PlanFile, catalog: &Catalog) -> Option<VsPlan> {
    use crate::catalog::Place;
    use crate::plan::model::{Ledger, price_ledger};
    let src = Place::resolve(catalog, &p.source.place).ok()?;
    let dst = Place::resolve(catalog, &p.destination.place).ok()?;
    let ledger = Ledger {
        source_list: r.requests_list_src,
        source_get: r.requests_get,
        destination_list: r.requests_list_dst,
        destination_put: r.requests_put,
        destination_head: r.requests_head,
        bytes_moved: r.read_bytes,
    };
    let (egress, sreq, dreq) = price_ledger(&src, &dst, &ledger, p.corpus.bytes);
    let pick = |k: &str| {
        p.prediction
            .cost
            .get(k)
            .and_then(|v| v.parse().ok())
            .unwrap_or_default()
    };
    let ids = [src.provider_id(), dst.provider_id()];
    Some(VsPlan {
        predicted_seconds: p.prediction.seconds.parse().unwrap_or_default(),
        seconds: Decimal::from_f64_retain(r.elapsed.as_secs_f64())
            .unwrap_or_default()
            .round_dp(3),
        predicted: [
            ("egress".into(), pick("egress")),
            ("source_requests".into(), pick("source_requests")),
            ("destination_requests".into(), pick("destination_requests")),
        ],
        actual: [
            ("egress".into(), egress),
            ("source_requests".into(), sreq),
            ("destination_requests".into(), dreq),
        ],
        corpus_bytes: p.corpus.bytes,
        run_bytes: r.read_bytes,
        catalog_changed: catalog.digest_of(ids) != p.catalog.digest,
    })
}

impl VsPlan {
    fn json(&self) -> serde_json::Value {
        let mut predicted = serde_json::Map::new();
        let mut actual = serde_json::Map::new();
        for ((k, v), (_, a)) in self.predicted.iter().zip(&self.actual) {
            predicted.insert(k.clone(), crate::money::Usd(*v).to_json());
            actual.insert(k.clone(), a.to_json());
        }
        serde_json::json!({
            "predicted_seconds": self.predicted_seconds.to_string().parse::<f64>().unwrap_or(0.0),
            "seconds": self.seconds.to_string().parse::<f64>().unwrap_or(0.0),
            "predicted_cost": predicted,
            "actual_cost": actual,
            "corpus_bytes": self.corpus_bytes,
            "bytes_read": self.run_bytes,
            "catalog_changed": self.catalog_changed,
        })
    }

    fn text(&self) -> String {
        let mut t = Table::new();
        t.load_preset(UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Dynamic);
        t.set_header(vec!["", "plan (whole corpus)", "this run"]);
        t.add_row(vec![
            "time".to_string(),
            fmt_duration(self.predicted_seconds),
            fmt_duration(self.seconds),
        ]);
        t.add_row(vec![
            "bytes".to_string(),
            fmt_bytes(self.corpus_bytes),
            fmt_bytes(self.run_bytes),
        ]);
        for ((k, v), (_, a)) in self.predicted.iter().zip(&self.actual) {
            t.add_row(vec![
                k.replace('_', " "),
                crate::money::Usd(*v).to_string(),
                a.to_string(),
            ]);
        }
        let mut out = format!("\nAgainst the plan (this run priced with the same catalog):\n{t}\n");
        if self.catalog_changed {
            out.push_str("! the price catalog changed since the plan was made; this run is priced with today's catalog\n");
        }
        out
    }
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// A plan file, or a journal file (`.sqlite`).
    pub target: Option<PathBuf>,
    /// Source and destination of a `copy` run (instead of a plan).
    #[arg(long, requires = "dst")]
    pub src: Option<String>,
    #[arg(long, requires = "src")]
    pub dst: Option<String>,
    #[arg(long)]
    pub json: bool,
}

/// `moverctl status PLAN|JOURNAL` (or `--src/--dst`): progress from the journal, no store access.
pub fn run_status(remotes: &Remotes, args: StatusArgs) -> Result<Exit, CliError> {
    use crate::store::location::Location;
    let shown = |l: &str| Location::parse(l, remotes).map(|l| l.shown());
    let (path, corpus) = match (&args.target, &args.src, &args.dst) {
        (Some(t), _, _) if t.extension().is_some_and(|e| e == "sqlite") => (t.clone(), None),
        (Some(t), _, _) => {
            let p = PlanFile::load(t)?;
            let (Some(s), Some(d)) = (
                args.src.clone().or(p.source.location.clone()),
                args.dst.clone().or(p.destination.location.clone()),
            ) else {
                return Err(usage(format!(
                    "{} has no locations: pass --src and --dst",
                    t.display()
                )));
            };
            let path = journal::default_path(&journal::state_dir(), &shown(&s)?, &shown(&d)?);
            (path, Some((p.corpus.bytes, p.corpus.objects)))
        }
        (None, Some(s), Some(d)) => (
            journal::default_path(&journal::state_dir(), &shown(s)?, &shown(d)?),
            None,
        ),
        _ => {
            return Err(usage(
                "give a plan file, a journal file, or --src and --dst",
            ));
        }
    };
    if !path.exists() {
        return Err(CliError::Failure(format!(
            "no journal at {}: this move has not started (or ran with another --journal)",
            path.display()
        )));
    }
    let j = Journal::open_existing(&path)?;
    let (src, dst) = (j.source().to_string(), j.destination().to_string());
    let s = j.summary()?;
    let open = j.open_uploads()?;
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "journal": path.display().to_string(), "source": src, "destination": dst,
                "verified": {"objects": s.verified, "bytes": s.verified_bytes},
                "failed": s.failed, "in_progress": s.copying, "open_multipart_uploads": open.len(),
                "corpus": corpus.map(|(b, o)| serde_json::json!({"bytes": b, "objects": o})),
            })
        );
        return Ok(Exit::Success);
    }
    println!("{src} -> {dst}");
    let pct = corpus
        .filter(|(b, _)| *b > 0)
        .map(|(b, _)| {
            format!(
                " ({:.1} % of the planned {})",
                s.verified_bytes as f64 * 100.0 / b as f64,
                fmt_bytes(b)
            )
        })
        .unwrap_or_default();
    println!(
        "verified     {} objects, {}{pct}",
        s.verified,
        fmt_bytes(s.verified_bytes)
    );
    println!(
        "failed       {} objects (copied again on the next run)",
        s.failed
    );
    println!(
        "in progress  {} objects, {} multipart uploads open for resume",
        s.copying,
        open.len()
    );
    println!("journal      {}", path.display());
    Ok(Exit::Success)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::{ReadCheck as R, Verification, WriteCheck as W};

    fn report() -> Report {
        let mut r = Report::default();
        for (read, write, n) in [
            (R::SourceSize, W::DestSize, 2),
            (R::SourceMd5, W::DestMultipartEtag, 3),
            (R::SourceCrc64, W::DestSize, 1),
            (R::SourceMd5, W::DestMd5, 4),
            (R::SourcePartsEtag, W::ReadbackCrc64, 5),
        ] {
            r.verified_by.insert(Verification::new(read, write), n);
        }
        r
    }

    /// The typed labels print exactly as the strings did (text summary, JSON summary, events).
    #[test]
    fn verification_labels_print_as_before() {
        let r = report();
        assert_eq!(
            verified_line(&r),
            "verified: source-crc64+dest-size: 1, source-md5+dest-md5: 4, \
             source-md5+dest-multipart-etag: 3, source-parts-etag+readback-crc64: 5, \
             source-size+dest-size: 2\n"
        );
        assert_eq!(size_only(&r), 3);
        let v: serde_json::Value = serde_json::from_str(&summary_json(&r, None)).unwrap();
        assert_eq!(
            v["verified_by"].to_string(),
            r#"{"source-crc64+dest-size":1,"source-md5+dest-md5":4,"source-md5+dest-multipart-etag":3,"source-parts-etag+readback-crc64":5,"source-size+dest-size":2}"#
        );
        let ev = Event::Copied {
            key: "k".into(),
            bytes: 3,
            verified_by: Verification::new(R::SourceSize, W::DestContentMd5),
        };
        assert_eq!(
            event_json(&ev),
            r#"{"bytes":3,"event":"copied","key":"k","verified_by":"source-size+dest-content-md5"}"#
        );
        assert_eq!(verified_line(&Report::default()), "");
    }
}
