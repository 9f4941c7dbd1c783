//! `moverctl sync SRC DST`: the copy engine run from a scheduler. One run at a time (a lock in
//! the state folder), a journal that persists across runs (so an unchanged run is decided from
//! the two listings and the journal alone), deletes only behind guards ([`crate::transfer::sync`]),
//! a one-line summary or `--json`, a Prometheus textfile (`--metrics-file`), and a price for
//! every run from the catalog.
//!
//! Costs are list prices *before* monthly free allowances: a cron job runs many times a month
//! and cannot know what earlier runs (or other tools) already used of an allowance, so pricing
//! each run as if it were the month's first would understate it. DELETE requests are free at
//! every provider in the catalog and are counted but not priced.

use super::CliError;
use super::copy_cmd::{EngineArgs, event_json, resolve, usage};
use super::exit::Exit;
use super::metrics::Metrics;
use crate::catalog::{Catalog, Place, Provider};
use crate::journal::Journal;
use crate::lock::RunLock;
use crate::money::Usd;
use crate::plan::model::{Ledger, price_ledger};
use crate::store::config::{Remote, Remotes};
use crate::store::location::Location;
use crate::store::{Kind, Store};
use crate::transfer::sync::{DeletePolicy, DeleteReport, Fate, MaxDelete, MinDuration, Verdict};
use crate::transfer::{Event, Report, Run};
use crate::units::{fmt_bytes, fmt_duration};
use clap::Args;
use rust_decimal::Decimal;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(Debug, Args)]
#[command(after_help = SYNC_HELP)]
pub struct SyncArgs {
    /// Where to read: s3://…, gs://…, az://…, a path, or REMOTE:bucket/prefix.
    pub src: String,
    /// The mirror to keep in step with SRC.
    pub dst: String,
    /// Delete destination objects that are no longer at the source (behind the guards below).
    #[arg(long)]
    pub delete: bool,
    /// Most objects one run may delete: a count (1000) or a percentage of the destination
    /// objects listed (5%). Above it nothing is deleted and the run exits 5.
    #[arg(long, value_name = "N|N%", default_value = "10%")]
    pub max_delete: String,
    /// Delete even when the source lists no object at all. Without it, an empty source (an
    /// unmounted volume, a wrong bucket) deletes nothing, whatever --max-delete says, and the run
    /// exits 5.
    #[arg(long)]
    pub allow_empty_source: bool,
    /// Also delete objects younger than the destination class's minimum storage duration
    /// (they are billed for the rest of it; the summary prices that).
    #[arg(long)]
    pub allow_early_delete: bool,
    /// Storage class written at the destination: a catalog class (`moverctl providers show
    /// PROVIDER`) or the store's own name (GLACIER_IR, Cool). Overrides the remote's.
    #[arg(long, value_name = "CLASS")]
    pub storage_class: Option<String>,
    /// Lock file that keeps runs apart (default: in the state folder, named after SRC and DST).
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// Print nothing when all is well; only problems otherwise.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Write run metrics here in Prometheus text format (node_exporter's textfile collector),
    /// atomically.
    #[arg(long, value_name = "PATH")]
    pub metrics_file: Option<PathBuf>,
    /// Also PUT the metrics to a Prometheus Pushgateway group URL after every run, e.g.
    /// http://pushgateway:9091/metrics/job/moverctl/mirror/corpus (needs --metrics-file, which
    /// keeps the last success time across runs).
    #[arg(long, value_name = "URL", requires = "metrics_file")]
    pub metrics_push: Option<String>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

const SYNC_HELP: &str = "\
sync copies new and changed objects (by size, the journal kept in the state folder, MD5 ETags
when both sides have them, and only then one HEAD), and with --delete removes what the source no
longer has: never after a run with a failed or refused object, never when the source listed
nothing (unless --allow-empty-source), never more than --max-delete, never an object younger
than the destination's minimum storage duration unless --allow-early-delete. --dry-run shows all
of it. With --json, sync prints one summary object (a dry run first prints one line per object it
would copy, delete or keep). Exit code 5 (delete guard) is sync's own; 6 means another run of the same pair (copy or sync) holds the lock.";

use super::stores::provider_of;

fn remote_of<'r>(remotes: &'r Remotes, store: &Store) -> Option<&'r Remote> {
    match &store.location {
        Location::S3 { remote, .. }
        | Location::Gcs { remote, .. }
        | Location::Azure { remote, .. } => remote.as_deref().and_then(|r| remotes.get(r)),
        _ => None,
    }
}

/// The name a store's API expects for a catalog class: S3 `GLACIER_IR`, GCS `NEARLINE`, Azure
/// access tier `Cool`.
pub fn wire_class(kind: Kind, class: &crate::catalog::StorageClass) -> String {
    if let Some(w) = &class.wire_name {
        return w.clone();
    }
    let c = &class.id;
    match kind {
        Kind::Azure => {
            let mut ch = c.chars();
            ch.next()
                .map(|f| f.to_uppercase().chain(ch).collect())
                .unwrap_or_default()
        }
        _ => c.to_uppercase().replace('-', "_"),
    }
}

/// A class name as given (catalog id or API name) matched against a provider's classes.
fn find_class<'p>(
    p: &'p Provider,
    kind: Kind,
    given: &str,
) -> Option<&'p crate::catalog::StorageClass> {
    p.file.classes.iter().find(|c| {
        c.id.eq_ignore_ascii_case(given) || wire_class(kind, c).eq_ignore_ascii_case(given)
    })
}

/// A provider with every monthly free allowance removed (see the module docs).
fn at_list_price(p: &Provider) -> Provider {
    let mut p = p.clone();
    let f = &mut p.file;
    f.egress.free_gb_per_month = Default::default();
    for r in &mut f.regions {
        if let Some(e) = &mut r.egress {
            e.free_gb_per_month = Default::default();
        }
    }
    for c in &mut f.classes {
        c.free_gb_month = Default::default();
        for rp in [&mut c.put, &mut c.get, &mut c.list] {
            rp.free_per_month = 0;
        }
    }
    p
}

/// Provider, region and class a side of the run is priced as.
struct Pricing {
    provider: Provider,
    region: String,
    class: String,
}

impl Pricing {
    fn new(p: &Provider, remote: Option<&Remote>, class: Option<&str>) -> Pricing {
        let region = remote
            .and_then(|r| r.region.clone())
            .filter(|r| p.file.regions.iter().any(|x| &x.id == r))
            .unwrap_or_else(|| p.file.default_region.clone());
        Pricing {
            provider: at_list_price(p),
            region,
            class: class.unwrap_or(&p.file.default_class).to_string(),
        }
    }

    fn place(&self) -> Option<Place<'_>> {
        let f = &self.provider.file;
        Some(Place {
            given: format!("{}:{}/{}", f.id, self.region, self.class),
            provider: &self.provider,
            region: f.regions.iter().find(|r| r.id == self.region)?,
            class: f.classes.iter().find(|c| c.id == self.class)?,
        })
    }
}

/// What one run cost at list prices.
#[derive(Debug, Clone, Default)]
pub(super) struct Cost {
    egress: Usd,
    source_requests: Usd,
    destination_requests: Usd,
    early_deletion: Usd,
    source_priced_as: Option<String>,
    destination_priced_as: Option<String>,
}

impl Cost {
    pub(super) fn total(&self) -> Usd {
        self.egress + self.source_requests + self.destination_requests + self.early_deletion
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "total": self.total().to_json(),
            "egress": self.egress.to_json(),
            "source_requests": self.source_requests.to_json(),
            "destination_requests": self.destination_requests.to_json(),
            "early_deletion": self.early_deletion.to_json(),
            "priced_as": {"source": self.source_priced_as, "destination": self.destination_priced_as},
            "basis": "catalog list prices before monthly free allowances; DELETE requests free",
        })
    }
}

fn price(src: Option<&Pricing>, dst: Option<&Pricing>, r: &Report, d: &DeleteReport) -> Cost {
    let mut c = Cost {
        early_deletion: d.early_fees,
        ..Default::default()
    };
    let (sp, dp) = (src.and_then(Pricing::place), dst.and_then(Pricing::place));
    c.source_priced_as = sp.as_ref().map(|p| p.canonical());
    c.destination_priced_as = dp.as_ref().map(|p| p.canonical());
    let ledger = Ledger {
        source_list: r.requests_list_src,
        source_get: r.requests_get,
        destination_list: r.requests_list_dst,
        destination_put: r.requests_put,
        destination_head: r.requests_head,
        bytes_moved: r.read_bytes,
    };
    let stored = r.copied_bytes + r.skipped_bytes + r.failed_bytes;
    match (&sp, &dp) {
        (Some(s), Some(d)) => {
            let (e, sr, dr) = price_ledger(s, d, &ledger, stored);
            c.egress = e;
            c.source_requests = sr;
            c.destination_requests = dr;
        }
        // One side unknown: price what can be priced, the unknown side's own requests at $0.
        (Some(s), None) => {
            let (_, sr, _) = price_ledger(s, s, &ledger, stored);
            c.source_requests = sr;
        }
        (None, Some(d)) => {
            let (_, _, dr) = price_ledger(d, d, &ledger, stored);
            c.destination_requests = dr;
        }
        (None, None) => {}
    }
    c
}

pub fn run_sync(catalog: &Catalog, remotes: &Remotes, args: SyncArgs) -> Result<Exit, CliError> {
    let started_at = std::time::SystemTime::now();
    if let Some(m) = &args.metrics_file {
        super::outputs::check_file("--metrics-file", m)?;
    }
    if let Some(u) = &args.metrics_push {
        super::metrics::check_push_url(u)?;
    }
    let (mut src, mut dst) = Store::open_pair(&args.src, &args.dst, remotes)?;
    super::stores::refine_caps(catalog, &mut src);
    super::stores::refine_caps(catalog, &mut dst);
    let max_delete =
        MaxDelete::parse(&args.max_delete).map_err(|m| usage(format!("--max-delete: {m}")))?;

    // The destination's class: the flag (validated), else the remote's (if the catalog knows it).
    let dst_provider = provider_of(catalog, &dst);
    let mut dst_class: Option<String> = None;
    if let Some(given) = &args.storage_class {
        if matches!(dst.kind, Kind::Local | Kind::Memory) {
            return Err(usage(format!(
                "--storage-class {given}: {} is a {} store, which has no storage classes",
                dst.shown(),
                dst.kind.as_str()
            )));
        }
        match dst_provider {
            Some(p) => {
                let c = find_class(p, dst.kind, given).ok_or_else(|| {
                    usage(format!(
                        "--storage-class {given}: {} has no such class; known: {}",
                        p.file.id,
                        p.file
                            .classes
                            .iter()
                            .map(|c| format!("{} ({})", c.id, wire_class(dst.kind, c)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?;
                dst.storage_class = Some(wire_class(dst.kind, c));
                dst_class = Some(c.id.clone());
            }
            // No catalog entry to check against: sent as given.
            None => dst.storage_class = Some(given.clone()),
        }
    } else if let (Some(p), Some(sc)) = (dst_provider, &dst.storage_class) {
        dst_class = find_class(p, dst.kind, sc).map(|c| c.id.clone());
    }
    let src_pricing =
        provider_of(catalog, &src).map(|p| Pricing::new(p, remote_of(remotes, &src), None));
    let dst_pricing =
        dst_provider.map(|p| Pricing::new(p, remote_of(remotes, &dst), dst_class.as_deref()));
    let min_duration = dst_pricing.as_ref().and_then(|pr| {
        let place = pr.place()?;
        (place.class.min_duration_days > 0).then(|| MinDuration {
            class: format!("{}/{}", place.provider_id(), place.class.id),
            days: place.class.min_duration_days,
            per_gb_month: place
                .storage_tiers()
                .first()
                .map(|t| t.1)
                .unwrap_or_default(),
            bytes_per_gb: place.bytes_per_gb(),
            min_object_bytes: place.class.min_object_bytes,
        })
    });

    let res = resolve(&args.engine, catalog, &src, &dst, None)?;
    let (src_shown, dst_shown) = (src.shown(), dst.shown());
    let dry_run = res.opts.dry_run;

    // One run at a time (a dry run changes nothing and takes no lock).
    let lock_path = args
        .lock
        .clone()
        .unwrap_or_else(|| crate::lock::default_path(&src_shown, &dst_shown));
    let mut notes: Vec<String> = Vec::new();
    let _lock = if dry_run {
        None
    } else {
        let (l, stale) = RunLock::acquire(&lock_path, &format!("sync {src_shown} {dst_shown}"))
            .map_err(|e| match e {
                crate::lock::LockError::Held { .. } => CliError::Locked(e.to_string()),
                other => CliError::Failure(other.to_string()),
            })?;
        if let Some(s) = stale {
            notes.push(s);
        }
        Some(l)
    };
    let metrics = args.metrics_file.clone().map(|path| Metrics {
        path,
        push: args.metrics_push.clone(),
        src: src_shown.clone(),
        dst: dst_shown.clone(),
    });
    let outcome = sync_locked(SyncRun {
        src,
        dst,
        res: &res,
        args: &args,
        max_delete,
        min_duration,
        src_pricing: src_pricing.as_ref(),
        dst_pricing: dst_pricing.as_ref(),
        notes,
    });
    let finished = std::time::SystemTime::now();
    match outcome {
        Ok(o) => {
            if let Some(m) = &metrics
                && !dry_run
            {
                m.write(Some(&o), o.exit, started_at, finished)?;
            }
            Ok(o.exit)
        }
        Err(e) => {
            if let Some(m) = &metrics
                && !dry_run
            {
                // A failed run still says so (and keeps the last success's time).
                m.write(None, e.exit(), started_at, finished)?;
            }
            if res.json {
                // A scheduler reading --json gets a summary object however the run ended.
                println!(
                    "{}",
                    serde_json::json!({
                        "event": "summary",
                        "source": src_shown,
                        "destination": dst_shown,
                        "dry_run": dry_run,
                        "error": e.to_string(),
                        "exit_code": e.exit() as u8,
                        "deletes": {"verdict": "suppressed", "deleted": 0},
                    })
                );
            }
            Err(e)
        }
    }
}

struct SyncRun<'a> {
    src: Store,
    dst: Store,
    res: &'a super::copy_cmd::Resolved,
    args: &'a SyncArgs,
    max_delete: MaxDelete,
    min_duration: Option<MinDuration>,
    src_pricing: Option<&'a Pricing>,
    dst_pricing: Option<&'a Pricing>,
    notes: Vec<String>,
}

/// A finished run, for the summary and the metrics.
pub(super) struct Outcome {
    pub(super) report: Report,
    pub(super) deletes: DeleteReport,
    pub(super) cost: Cost,
    pub(super) exit: Exit,
}

fn sync_locked(s: SyncRun) -> Result<Outcome, CliError> {
    let SyncRun {
        src,
        dst,
        res,
        args,
        max_delete,
        min_duration,
        src_pricing,
        dst_pricing,
        notes,
    } = s;
    let dry_run = res.opts.dry_run;
    let json = res.json;
    let quiet = args.quiet;
    let (src_shown, dst_shown) = (src.shown(), dst.shown());
    // A dry run reads the journal when there is one (so it decides as the real run would) but
    // never creates one.
    let journal = if dry_run && !res.journal_path.exists() {
        None
    } else {
        Some(Journal::open(&res.journal_path, &src_shown, &dst_shown).map_err(CliError::Journal)?)
    };
    let policy = DeletePolicy {
        delete: args.delete,
        max_delete,
        allow_empty_source: args.allow_empty_source,
        allow_early_delete: args.allow_early_delete,
        min_duration: min_duration.clone(),
        now: chrono::Utc::now(),
        dry_run,
        concurrency: res.opts.transfers.max(1),
    };
    let rt = super::runtime()?;
    let stop = Arc::new(AtomicBool::new(false));
    let out = std::io::stdout();
    let print_line = |line: String| {
        let mut o = out.lock();
        let _ = writeln!(o, "{line}");
    };
    let (report, deletes) = rt.block_on(async {
        super::stop_on_ctrl_c(
            stop.clone(),
            "stopping after the objects in flight; nothing will be deleted",
        );
        let run = Run {
            src,
            dst,
            opts: res.opts.clone(),
            limits: res.limits.clone(),
            journal,
            stop,
        };
        let spill_in = (!dry_run).then_some(res.journal_path.as_path());
        let (report, deletes) = crate::transfer::sync::run(
            run,
            policy,
            spill_in,
            |ev| match ev {
                Event::WouldCopy { key, bytes, reason } if dry_run => {
                    if json {
                        print_line(event_json(ev));
                    } else {
                        print_line(format!("would copy   {key}  ({}, {reason})", fmt_bytes(*bytes)));
                    }
                }
                Event::Failed { .. } | Event::Refused { .. } if json && dry_run => {
                    print_line(event_json(ev))
                }
                _ => {}
            },
            |key, bytes, fate| {
                if !dry_run {
                    return;
                }
                let (event, extra) = match fate {
                    Fate::WouldDelete => ("would_delete", String::new()),
                    Fate::Kept(fee) => (
                        "kept_min_duration",
                        format!("younger than the minimum storage duration; deleting it now would cost {fee}"),
                    ),
                    Fate::Held => ("not_deleted", String::new()),
                    Fate::Deleted | Fate::DeleteFailed(_) => return,
                };
                if json {
                    let mut v = serde_json::json!({"event": event, "key": key, "bytes": bytes});
                    if let Fate::Kept(fee) = fate {
                        v["early_deletion_fee"] = fee.to_json();
                    }
                    print_line(v.to_string());
                } else {
                    let verb = match fate {
                        Fate::WouldDelete => "would delete",
                        Fate::Kept(_) => "would keep  ",
                        _ => "not deleted ",
                    };
                    let extra = if extra.is_empty() { extra } else { format!(", {extra}") };
                    print_line(format!("{verb} {key}  ({}{extra})", fmt_bytes(bytes)));
                }
            },
        )
        .await?;
        Ok::<_, CliError>((report, deletes))
    })?;
    let cost = price(src_pricing, dst_pricing, &report, &deletes);
    let exit = if report.interrupted {
        Exit::Interrupted
    } else if report.auth_failures() > 0 {
        Exit::Credentials
    } else if !report.failed.is_empty() || !report.refused.is_empty() || !deletes.failed.is_empty()
    {
        Exit::Partial
    } else if matches!(
        deletes.verdict,
        Some(Verdict::GuardTripped | Verdict::EmptySource)
    ) {
        Exit::DeleteGuard
    } else {
        Exit::Success
    };
    let o = Outcome {
        report,
        deletes,
        cost,
        exit,
    };
    let (problems, info) = messages(&o, args, res, &min_duration, &src_shown, &dst_shown, notes);
    let line = one_line(&o, &src_shown, &dst_shown);
    if json {
        println!(
            "{}",
            summary_json(&o, &src_shown, &dst_shown, args, res, &min_duration)
        );
    } else if !quiet {
        println!("{line}");
    } else if exit != Exit::Success {
        eprintln!("{line}");
    }
    for p in &problems {
        eprintln!("moverctl: {p}");
    }
    if !quiet {
        for i in &info {
            eprintln!("moverctl: {i}");
        }
    }
    Ok(o)
}

fn secs(r: &Report) -> Decimal {
    Decimal::from(r.elapsed.as_millis() as u64) / Decimal::from(1000)
}

/// Run times as a cron line wants them: `0.3 s`, `42.0 s`, then `fmt_duration`'s `1 min 5 s`.
fn took(secs: Decimal) -> String {
    if secs < Decimal::from(60) {
        format!("{} s", secs.round_dp(1))
    } else {
        fmt_duration(secs)
    }
}

fn one_line(o: &Outcome, src: &str, dst: &str) -> String {
    let r = &o.report;
    let d = &o.deletes;
    let dry = if r.dry_run { " (dry run)" } else { "" };
    let requests = format!(
        "LIST {}+{}, GET {}, PUT {}, HEAD {}, DELETE {}",
        r.requests_list_src,
        r.requests_list_dst,
        r.requests_get,
        r.requests_put,
        r.requests_head,
        d.requests_delete
    );
    let listing_only = r.requests_get + r.requests_put + r.requests_head + d.requests_delete == 0;
    let took = took(secs(r));
    let guard = matches!(
        d.verdict,
        Some(Verdict::GuardTripped | Verdict::EmptySource)
    );
    if r.copied == 0
        && d.deleted == 0
        && r.failed.is_empty()
        && r.refused.is_empty()
        && !r.dry_run
        && !guard
    {
        return format!(
            "sync {src} -> {dst}: up to date, {} objects unchanged; requests {}{}; est. cost {} in {took}",
            r.skipped,
            requests,
            if listing_only { " (listing only)" } else { "" },
            o.cost.total()
        );
    }
    let (copied, deleted) = if r.dry_run {
        ("would copy", "would delete")
    } else {
        ("copied", "deleted")
    };
    let would_delete = if r.dry_run && d.verdict == Some(Verdict::Deleted) {
        (d.deletable, d.deletable_bytes)
    } else {
        (d.deleted, d.deleted_bytes)
    };
    let held = match d.verdict {
        Some(Verdict::GuardTripped) => format!(
            ", delete guard tripped: {} to delete > {} allowed, nothing deleted",
            d.deletable, d.allowed
        ),
        Some(Verdict::EmptySource) => format!(
            ", delete guard tripped: the source listed no objects, {} kept, nothing deleted (--allow-empty-source)",
            d.deletable
        ),
        _ => String::new(),
    };
    format!(
        "sync {src} -> {dst}{dry}: {copied} {} ({}), {deleted} {} ({}){held}, unchanged {}, failed {}; requests {requests}; est. cost {} in {took}",
        r.copied,
        fmt_bytes(r.copied_bytes),
        would_delete.0,
        fmt_bytes(would_delete.1),
        r.skipped,
        r.failed.len() + r.refused.len() + d.failed.len(),
        o.cost.total()
    )
}

/// (problems, information): problems are printed even with --quiet.
fn messages(
    o: &Outcome,
    args: &SyncArgs,
    res: &super::copy_cmd::Resolved,
    min: &Option<MinDuration>,
    src: &str,
    dst: &str,
    notes: Vec<String>,
) -> (Vec<String>, Vec<String>) {
    let r = &o.report;
    let d = &o.deletes;
    let mut problems = notes;
    let mut info = Vec::new();
    for f in r.failed.iter().take(20) {
        problems.push(format!("failed: {}: {}", f.key, f.error));
    }
    if r.failed.len() > 20 {
        problems.push(format!(
            "… and {} more failures (see --json)",
            r.failed.len() - 20
        ));
    }
    for f in r.refused.iter().take(20) {
        problems.push(format!("refused: {:?}: {}", f.key, f.error));
    }
    for (_, e) in d.failed.iter().take(20) {
        problems.push(format!("delete failed: {e}"));
    }
    if let Some(m) = super::copy_cmd::credentials_refused(r, src, dst) {
        problems.push(format!("error: {m}"));
    }
    if r.no_source_digest > 0 {
        info.push(format!(
            "{} objects came from a source that states no digest for them: checked against the source by size only (--verify strict refuses them)",
            r.no_source_digest
        ));
    }
    if r.interrupted {
        problems.push("interrupted: nothing was deleted; run again to resume".into());
    }
    let candidates = format!(
        "{} objects ({}) only at the destination",
        d.deletable,
        fmt_bytes(d.deletable_bytes)
    );
    match d.verdict {
        Some(Verdict::Suppressed) if !r.interrupted => problems.push(format!(
            "{candidates} were not deleted: this run had {} failed and {} refused objects, and a run with any copy error never deletes",
            r.failed.len(),
            r.refused.len()
        )),
        Some(Verdict::EmptySource) => problems.push(format!(
            "delete guard: the source {src} listed no objects{}, so mirroring it would delete all {} objects ({}) at {dst}; nothing was deleted. \
             An unmounted volume, a wrong path or bucket, or missing permissions look like this. \
             If the source really is empty now, run once with --allow-empty-source",
            if r.filtered > 0 { " within --include/--exclude" } else { "" },
            d.deletable,
            fmt_bytes(d.deletable_bytes)
        )),
        Some(Verdict::GuardTripped) => problems.push(format!(
            "delete guard: this run would delete {candidates}, more than --max-delete {} allows ({} of the {} objects listed at {dst}); nothing was deleted. \
             If the source really lost them, run once with a higher --max-delete{}",
            args.max_delete,
            d.allowed,
            r.dest_objects,
            if res.opts.dry_run {
                String::new()
            } else {
                format!(
                    " (they are listed in {}: select key from sync_candidates where status = 'held')",
                    res.journal_path.display()
                )
            }
        )),
        Some(Verdict::NotAsked) => info.push(format!(
            "{candidates} were left alone (no --delete)"
        )),
        _ => {}
    }
    if d.kept_young > 0
        && let Some(m) = min
    {
        info.push(format!(
            "kept {} objects ({}) younger than {}'s {}-day minimum storage duration; deleting them now would cost {} (--allow-early-delete)",
            d.kept_young,
            fmt_bytes(d.kept_young_bytes),
            m.class,
            m.days,
            d.kept_fee
        ));
    }
    if !d.early_fees.is_zero() {
        info.push(format!(
            "deleting objects before their minimum storage duration {} {} in early-deletion fees",
            if r.dry_run { "would cost" } else { "cost" },
            d.early_fees
        ));
    }
    if r.dest_filtered > 0 && args.delete {
        info.push(format!(
            "{} objects only at the destination are outside --include/--exclude and were left alone",
            r.dest_filtered
        ));
    }
    if o.cost.source_priced_as.is_none() || o.cost.destination_priced_as.is_none() {
        info.push(
            "a side without a catalog provider is priced at $0 (set `provider` in its remote)"
                .into(),
        );
    }
    (problems, info)
}

fn summary_json(
    o: &Outcome,
    src: &str,
    dst: &str,
    args: &SyncArgs,
    res: &super::copy_cmd::Resolved,
    min: &Option<MinDuration>,
) -> serde_json::Value {
    let r = &o.report;
    let d = &o.deletes;
    serde_json::json!({
        "event": "summary",
        "command": "sync",
        "source": src,
        "destination": dst,
        "dry_run": r.dry_run,
        "interrupted": r.interrupted,
        "exit_code": o.exit as u8,
        "copied": {"objects": r.copied, "bytes": r.copied_bytes},
        "skipped": {"objects": r.skipped, "bytes": r.skipped_bytes},
        "failed": super::copy_cmd::failed_json(r),
        "refused": super::copy_cmd::refused_json(r),
        "filtered": r.filtered,
        "reasons": r.reasons,
        "verified_by": r.verified_by,
        "no_source_digest": r.no_source_digest,
        "source_objects": r.src_objects,
        "destination_objects": r.dest_objects,
        "delete": {
            "asked": args.delete,
            "verdict": d.verdict.map(|v| v.as_str()),
            "max_delete": args.max_delete,
            "allow_empty_source": args.allow_empty_source,
            "allowed": d.allowed,
            "candidates": {"objects": d.deletable, "bytes": d.deletable_bytes},
            "deleted": {"objects": d.deleted, "bytes": d.deleted_bytes},
            "failed": d.failed.iter().take(100).map(|(k, e)| serde_json::json!({"key": k, "error": e})).collect::<Vec<_>>(),
            "kept_min_duration": {"objects": d.kept_young, "bytes": d.kept_young_bytes,
                                  "early_deletion_fee": d.kept_fee.to_json(),
                                  "class": min.as_ref().map(|m| m.class.clone()),
                                  "days": min.as_ref().map(|m| m.days)},
            "protected_by_filters": r.dest_filtered,
        },
        "requests": {"list_source": r.requests_list_src, "list_destination": r.requests_list_dst,
                     "get": r.requests_get, "put": r.requests_put, "head": r.requests_head,
                     "delete": d.requests_delete},
        "bytes_read": r.read_bytes,
        "bytes_written": r.written_bytes,
        "retries": r.retries,
        "cost": o.cost.json(),
        "seconds": secs(r).to_string().parse::<serde_json::Number>().ok(),
        "journal": (!r.dry_run).then(|| res.journal_path.display().to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_classes_map_to_the_names_each_api_expects() {
        let catalog = Catalog::embedded().unwrap();
        let wire = |kind, provider: &str, class: &str| {
            let p = catalog.get(provider).unwrap();
            let c = p.file.classes.iter().find(|c| c.id == class).unwrap();
            wire_class(kind, c)
        };
        assert_eq!(wire(Kind::S3, "aws", "glacier-ir"), "GLACIER_IR");
        // These two come from the provider files' wire_name.
        assert_eq!(wire(Kind::S3, "aws", "glacier-flexible"), "GLACIER");
        assert_eq!(
            wire(Kind::S3, "cloudflare-r2", "infrequent-access"),
            "STANDARD_IA"
        );
        assert_eq!(wire(Kind::Azure, "azure", "cool"), "Cool");
        assert_eq!(wire(Kind::Gcs, "gcp", "nearline"), "NEARLINE");
    }
}
