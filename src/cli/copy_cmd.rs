//! `moverctl copy SRC DST` and `moverctl exec PLAN`: the copy engine with flags resolved once.

use super::CliError;
use super::copy_summary::{credentials_refused, event_json, summary_json, summary_text};
use super::exit::Exit;
use super::progress::{Display, Progress};
use crate::catalog::parts::{DEFAULT_MULTIPART_THRESHOLD, DEFAULT_PART_SIZE, MIB, PartRule};
use crate::catalog::{Catalog, Limits as StoreLimits};
use crate::journal;
use crate::limit::Limits;
use crate::plan::file::PlanFile;
use crate::store::Store;
use crate::store::config::Remotes;
use crate::transfer::{CopyOptions, Verify};
use crate::units::{fmt_bytes, parse_bytes};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, Args, Clone)]
pub struct EngineArgs {
    /// Objects copied at the same time (the in-flight window's maximum; bytes in flight stay
    /// within --max-buffer whatever this is). `plan --concurrency` assumes the same 64.
    #[arg(long, default_value_t = 64)]
    pub transfers: usize,
    /// Parts of one large object in flight at the same time.
    #[arg(long, default_value_t = 4)]
    pub part_concurrency: usize,
    /// Read each part of a large object with its own ranged GET (parallel streams, which can
    /// help over long-distance links) instead of one GET per object split as it streams.
    #[arg(long)]
    pub ranged_reads: bool,
    /// Stream every object through this machine even where source and destination are one S3
    /// service with the same credentials (by default those are copied on the server with
    /// CopyObject / UploadPartCopy: no bytes through here, and --bwlimit does not apply to them).
    #[arg(long)]
    pub no_server_side: bool,
    /// Set a content header (content-type, content-encoding, content-language,
    /// content-disposition, cache-control) or a user metadata key on every object written,
    /// over the source's: KEY=VALUE, repeatable.
    #[arg(long = "metadata-set", value_name = "KEY=VALUE")]
    pub metadata_set: Vec<String>,
    /// Do not copy the source's user metadata (content headers and moverctl's own keys are
    /// still written).
    #[arg(long)]
    pub no_metadata: bool,
    /// Upload a large single-part source in parts even where one streamed PUT carrying its MD5
    /// would do (by default an object of up to 4 parts' size whose source states its MD5 goes in
    /// one PUT when the destination checks Content-MD5: one request, no MD5 computed here).
    #[arg(long)]
    pub no_streamed_put: bool,
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
    /// auto: ETags, stored digests and HEAD (CRC64 alone where both ends keep one); an object
    /// whose cloud source states no digest and whose reads nothing checked is written but
    /// `unverified` (exit 9); strict: fail such objects instead; size: accept them, checked by
    /// size; md5: as auto, but MD5 wherever a store offers one (no checksum-only path);
    /// readback: also read every object back and compare.
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
    /// Local destinations: object (default) syncs each file and its folder entry before the
    /// object is journaled as done; end syncs the file system once when the run ends; never
    /// leaves it to the operating system.
    #[arg(long, default_value = "object", value_name = "WHEN")]
    pub fsync: String,
    /// Local destinations: give each file the source's last-modified time (default true).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1,
          default_missing_value = "true", value_name = "BOOL")]
    pub preserve_mtime: bool,
    /// Print a stats line (done / total, objects, rate, ETA, failures) every DURATION, e.g.
    /// 30s or 5m, to stderr or --log-file. Default: every minute when stderr is not a terminal
    /// (on a terminal the progress bar shows the same); 0 turns it off.
    #[arg(long, value_name = "DURATION")]
    pub stats: Option<String>,
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
    /// Run one shard of a plan made with `plan --shards N`: K/N, or auto (JOB_COMPLETION_INDEX
    /// of a Kubernetes Indexed Job, else SLURM_ARRAY_TASK_ID of a Slurm array). --bwlimit and
    /// --tpslimit then apply to this shard's process.
    #[arg(long, value_name = "K/N|auto")]
    pub shard: Option<String>,
    /// Where shards keep their progress records (default: the plan's, else .moverctl-progress/
    /// beside the destination prefix).
    #[arg(
        long = "progress-location",
        id = "progress_location",
        value_name = "LOCATION"
    )]
    pub progress: Option<String>,
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
fn metadata_policy(e: &EngineArgs) -> Result<crate::transfer::fidelity::MetadataPolicy, CliError> {
    let mut set = Vec::new();
    for kv in &e.metadata_set {
        set.push(crate::transfer::fidelity::MetadataPolicy::parse_set(kv).map_err(usage)?);
    }
    Ok(crate::transfer::fidelity::MetadataPolicy {
        no_user: e.no_metadata,
        set,
    })
}

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
    /// The progress bar and stats line (see `progress.rs`).
    pub(super) display: Display,
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
        "md5" => Verify::Md5,
        "size" => Verify::Size,
        o => {
            return Err(usage(format!(
                "--verify {o:?}: use auto, strict, size, md5 or readback"
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
            counters: Some(Arc::new(crate::transfer::Counters::default())),
            fsync: e.fsync.parse().map_err(usage)?,
            preserve_mtime: e.preserve_mtime,
            size_ahead,
            server_side: !e.no_server_side,
            stream_single_put: !e.no_streamed_put,
            metadata: metadata_policy(e)?,
        },
        limits,
        journal_path,
        json: e.json,
        quiet: false,
        display,
    })
}

pub fn run_copy(catalog: &Catalog, remotes: &Remotes, args: CopyArgs) -> Result<Exit, CliError> {
    let (src, mut dst) = crate::job::copy::open_pair(catalog, &args.src, &args.dst, remotes)?;
    super::stores::resolve_storage_class(catalog, &mut dst, args.storage_class.as_deref())?;
    let mut r = resolve(&args.engine, catalog, &src, &dst, None)?;
    r.quiet = args.quiet;
    drive(src, dst, r, None, catalog, None)
}

pub fn run_exec(catalog: &Catalog, remotes: &Remotes, args: ExecArgs) -> Result<Exit, CliError> {
    let plan = PlanFile::load(&args.plan)?;
    let located = |given: &Option<String>, planned: &Option<String>, side: &str, flag: &str| {
        given.clone().or_else(|| planned.clone()).ok_or_else(|| {
            usage(format!(
                "{} has no {side} location: pass --{flag} LOCATION",
                args.plan.display()
            ))
        })
    };
    let src_loc = located(&args.src, &plan.source.location, "source", "src")?;
    let dst_loc = located(&args.dst, &plan.destination.location, "destination", "dst")?;
    let (mut src, mut dst) = crate::job::trust::open_pair(catalog, &src_loc, &dst_loc, remotes)?;
    let shard = crate::job::shard::for_exec(
        &plan,
        args.shard.as_deref(),
        args.progress.as_deref(),
        &dst_loc,
        &mut src,
        &mut dst,
        remotes,
    )?;
    super::stores::resolve_storage_class(catalog, &mut dst, args.storage_class.as_deref())?;
    let mut r = resolve(&args.engine, catalog, &src, &dst, Some(&plan))?;
    if let Some(s) = &shard
        && args.engine.journal.is_none()
    {
        r.journal_path = journal::default_path(
            &journal::state_dir(),
            &src.identity,
            &format!("{}{}", dst.identity, s.tag()),
        );
    }
    r.quiet = args.quiet;
    drive(src, dst, r, Some(&plan), catalog, shard)
}

/// What copy and exec show while they run: the progress display, each object's line with
/// --json, and what a dry run would copy.
struct Shown<'a> {
    progress: &'a Progress,
    json: bool,
    dry_run: bool,
}

impl crate::job::Observer for Shown<'_> {
    fn event(&self, ev: &crate::transfer::Event) {
        self.progress.event(ev);
        if self.json {
            let line = event_json(ev, super::json::COPY);
            let _ = writeln!(std::io::stdout().lock(), "{line}");
        } else if self.dry_run
            && let crate::transfer::Event::WouldCopy { key, bytes, reason } = ev
        {
            // A dry run lists what it would copy, and why, on stdout (the skipped ones are
            // counted by reason in the summary).
            let _ = writeln!(
                std::io::stdout().lock(),
                "would copy   {key}  ({}, {reason})",
                fmt_bytes(*bytes)
            );
        }
    }

    fn note(&self, message: &str) {
        super::log::above_bar(&format!("moverctl: {message}"));
    }

    fn stale_lock(&self, message: &str) {
        if !self.json {
            eprintln!("moverctl: {message}");
        }
    }
}

fn drive(
    src: Store,
    dst: Store,
    r: Resolved,
    plan: Option<&PlanFile>,
    catalog: &Catalog,
    shard: Option<crate::job::shard::ShardRun>,
) -> Result<Exit, CliError> {
    let (src_shown, dst_shown) = (src.shown(), dst.shown());
    let sharded = shard.is_some();
    // --quiet: no bar and no stats line either.
    let display = match r.quiet {
        true => Display {
            bar: false,
            stats: None,
            ..r.display.clone()
        },
        false => r.display.clone(),
    };
    let progress = Progress::new(display, r.opts.counters.clone().unwrap_or_default());
    let shown = Shown {
        progress: &progress,
        json: r.json,
        dry_run: r.opts.dry_run,
    };
    let job = crate::job::copy::CopyJob {
        opts: r.opts.clone(),
        limits: r.limits.clone(),
        journal_path: r.journal_path.clone(),
        plan,
        shard,
    };
    let outcome = crate::job::copy::run(catalog, src, dst, job, &shown);
    progress.finish();
    let mut out = outcome?;
    if let Some(e) = &out.stopped {
        out.exit = e.exit();
    }
    present(&out, &r, plan, sharded, (&src_shown, &dst_shown));
    if let Some(e) = out.stopped {
        return Err(e);
    }
    let report = &out.report;
    if !r.json
        && !r.quiet
        && let Some(h) = super::stores::crc_probe_hint(
            out.unprobed.as_deref(),
            &report.verified_by,
            report.written_bytes,
            r.opts.verify,
        )
    {
        eprintln!("{h}");
    }
    if let Some(m) = credentials_refused(report, &src_shown, &dst_shown, &out.credentials_hint) {
        eprintln!("moverctl: error: {m}");
    }
    Ok(out.exit)
}

/// The summary of a copy or exec run: one JSON object, or the text summary on stderr (nothing
/// with --quiet when all went well), with the run against its plan or its shard's part of it.
fn present(
    out: &crate::job::copy::CopyOutcome,
    r: &Resolved,
    plan: Option<&PlanFile>,
    sharded: bool,
    (src_shown, dst_shown): (&str, &str),
) {
    if r.quiet && out.exit == Exit::Success && !r.json {
        // Silent on success.
    } else if r.json {
        let ids = super::copy_summary::RunIds {
            command: if plan.is_some() { "exec" } else { "copy" },
            source: src_shown,
            destination: dst_shown,
            journal: &r.journal_path,
            exit: out.exit,
        };
        let mut v: serde_json::Value =
            serde_json::from_str(&summary_json(&out.report, plan, &ids)).expect("valid JSON");
        if let Some(vs) = &out.vs_plan {
            v["plan"] = vs.json();
        }
        if let Some(view) = &out.shard {
            v["shard"] = view.json();
        }
        println!("{v}");
    } else {
        eprint!(
            "{}",
            summary_text(&out.report, src_shown, dst_shown, r, plan)
        );
        match (&out.shard, &out.vs_plan) {
            (Some(view), _) => eprint!("{}", super::shard_cmd::shard_text(view)),
            // A shard's run is set against its own part of the plan, above; the whole plan
            // against one shard would mislead.
            (None, Some(_)) if sharded => {}
            (None, Some(vs)) => eprint!("{}", super::copy_summary::vs_plan_text(vs)),
            (None, None) => {}
        }
    }
}
