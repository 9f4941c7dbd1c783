//! `moverctl copy SRC DST` and `moverctl exec PLAN`: the flags resolved once
//! ([`super::engine`]), the run by [`moverctl::job::copy`], and what it shows.

use super::CliError;
use super::args::{CopyArgs, ExecArgs};
use super::engine::{Resolved, first_use_probe, resolve, usage};
use super::exit::Exit;
use super::progress::{Display, Progress};
use moverctl::catalog::Catalog;
use moverctl::job::pricing;
use moverctl::journal;
use moverctl::json::copy::{RunIds, event_json, summary_json};
use moverctl::plan::file::PlanFile;
use moverctl::store::Store;
use moverctl::store::config::Remotes;
use moverctl::summary::copy::{credentials_refused, dry_run_cost_text, summary_text, vs_plan_text};
use moverctl::units::fmt_bytes;
use std::io::Write;

pub fn run_copy(catalog: &Catalog, remotes: &Remotes, args: CopyArgs) -> Result<Exit, CliError> {
    let (src, mut dst) = moverctl::job::copy::open_pair(
        catalog,
        &args.src,
        &args.dst,
        remotes,
        // An inventory-driven run lists nothing at the source, not even to see it is empty.
        args.allow_empty_source || args.inventory.is_some(),
    )?;
    moverctl::job::trust::resolve_storage_class(catalog, &mut dst, args.storage_class.as_deref())?;
    first_use_probe(catalog, remotes, &mut dst, &args.engine, args.quiet)?;
    let mut r = resolve(&args.engine, catalog, &src, &dst, None)?;
    (r.quiet, r.pricing) = (args.quiet, pricing::sides(catalog, remotes, &src, &dst));
    let inventory = args.inventory.map(|i| (i, remotes.clone()));
    drive(src, dst, r, (None, inventory), catalog, None)
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
    // A shard's range may rightly list empty (the shard domain checks its shortfall).
    let allow_empty = args.allow_empty_source || args.shard.is_some() || args.inventory.is_some();
    let (mut src, mut dst) =
        moverctl::job::trust::open_pair_guarded(catalog, &src_loc, &dst_loc, remotes, allow_empty)?;
    let shard = moverctl::job::shard::for_exec(
        &plan,
        args.shard.as_deref(),
        args.progress.as_deref(),
        &dst_loc,
        &mut src,
        &mut dst,
        remotes,
    )?;
    moverctl::job::trust::resolve_storage_class(catalog, &mut dst, args.storage_class.as_deref())?;
    first_use_probe(catalog, remotes, &mut dst, &args.engine, args.quiet)?;
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
    (r.quiet, r.pricing) = (args.quiet, pricing::sides(catalog, remotes, &src, &dst));
    let inventory = args.inventory.map(|i| (i, remotes.clone()));
    let exit = drive(src, dst, r, (Some(&plan), inventory), catalog, shard)?;
    let done = exit == Exit::Success && !args.engine.dry_run;
    if let Some(next) = moverctl::job::plan::hops::next_step(&args.plan, &plan, done) {
        eprintln!("moverctl: {next}");
    }
    Ok(exit)
}

/// What copy and exec show while they run: the progress display, each object's line with
/// --json, and what a dry run would copy.
struct Shown<'a> {
    progress: &'a Progress,
    json: bool,
    dry_run: bool,
}

impl moverctl::job::Observer for Shown<'_> {
    fn event(&self, ev: &moverctl::transfer::Event) {
        self.progress.event(ev);
        if self.json {
            let line = event_json(ev, super::json::COPY);
            let _ = writeln!(std::io::stdout().lock(), "{line}");
        } else if self.dry_run
            && let moverctl::transfer::Event::WouldCopy { key, bytes, reason } = ev
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

    fn last_words(&self, message: &str) {
        super::log::last_words(&format!("moverctl: {message}"));
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
    (plan, inventory): (Option<&PlanFile>, Option<(String, Remotes)>),
    catalog: &Catalog,
    shard: Option<moverctl::job::shard::ShardRun>,
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
        // --quiet: a dry run's summary line only.
        dry_run: r.opts.dry_run && !r.quiet,
    };
    let job = moverctl::job::copy::CopyJob {
        opts: r.opts.clone(),
        limits: r.limits.clone(),
        journal_path: r.journal_path.clone(),
        plan,
        shard,
        inventory,
    };
    let outcome = moverctl::job::copy::run(catalog, src, dst, job, &shown);
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
        && let Some(h) = moverctl::job::trust::crc_probe_hint(
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
    out: &moverctl::job::copy::CopyOutcome,
    r: &Resolved,
    plan: Option<&PlanFile>,
    sharded: bool,
    shown @ (src_shown, dst_shown): (&str, &str),
) {
    let cost = pricing::dry_run_cost(&r.pricing, &out.report);
    let cost_text = |one| {
        cost.as_ref()
            .map(|c| dry_run_cost_text(&out.report, c, shown, one))
    };
    if r.quiet && out.exit == Exit::Success && !r.json {
        // Silent on success; a dry run's summary in one line.
        eprint!("{}", cost_text(true).unwrap_or_default());
    } else if r.json {
        let ids = RunIds {
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
        if let Some(c) = &cost {
            v["cost"] = c.json();
        }
        println!("{v}");
    } else {
        eprint!(
            "{}{}",
            summary_text(&out.report, src_shown, dst_shown, &r.journal_path, plan),
            cost_text(false).unwrap_or_default()
        );
        match (&out.shard, &out.vs_plan) {
            (Some(view), _) => eprint!("{}", super::shard_cmd::shard_text(view)),
            // A shard's run is set against its own part of the plan, above; the whole plan
            // against one shard would mislead.
            (None, Some(_)) if sharded => {}
            (None, Some(vs)) => eprint!("{}", vs_plan_text(vs)),
            (None, None) => {}
        }
    }
}
