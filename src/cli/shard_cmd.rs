//! The command-line side of a move split across machines: a shard's run set against the plan as
//! text (`exec --shard K/N`) and `status PLAN` of a sharded plan (every shard's record) as a
//! table or JSON. The shard domain (the split, ids, progress records, state, cost shares) is in
//! [`moverctl::job::shard`].

use super::CliError;
use super::exit::Exit;
use moverctl::job::shard::{
    COST_ITEMS, Figures, ShardState, ShardView, ShardsStatus, planned_shard, rate,
};
use moverctl::plan::file::PlanFile;
use moverctl::store::config::Remotes;
use moverctl::units::{fmt_bytes, fmt_duration};
use rust_decimal::Decimal;

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

/// A shard's run against the plan, as the text after its summary.
pub(super) fn shard_text(v: &ShardView) -> String {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
    let mut header = vec![
        String::new(),
        format!("plan: shard {}", v.id.index),
        format!(
            "shard {} ({} attempt{})",
            v.id.index,
            v.attempts,
            if v.attempts == 1 { "" } else { "s" }
        ),
    ];
    let mut pairs = vec![(&v.planned, &v.done)];
    if let Some(m) = &v.so_far {
        header.push("plan: whole move".into());
        header.push(format!(
            "whole move so far ({} of {} shards done)",
            m.done, v.id.count
        ));
        pairs.push((&v.whole, &m.figures));
    }
    t.set_header(header);
    for r in rows(&pairs) {
        t.add_row(r);
    }
    let mut text = format!(
        "\nShard {} against the plan (cost priced as the plan prices the move; the plan's cost for a shard is the move's in the shard's share of bytes and objects):\n{t}\n",
        v.id
    );
    match &v.so_far {
        Some(m) => text.push_str(&format!(
            "whole move: time is from the first shard's start to the last record ({} on all machines together); moverctl status PLAN shows every shard\n",
            fmt_duration(m.machine_seconds)
        )),
        None => text.push_str(
            "whole move: the other shards' records could not be read; moverctl status PLAN shows them\n",
        ),
    }
    text
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
    let st = moverctl::job::shard::status(remotes, plan, dst_location, progress, stale_after)?;
    if json {
        println!("{}", status_json(plan, &st));
    } else {
        status_text(plan, &st);
    }
    Ok(Exit::Success)
}

fn status_json(plan: &PlanFile, st: &ShardsStatus) -> serde_json::Value {
    let shards = plan.shards.as_ref().expect("a sharded plan");
    let per: Vec<serde_json::Value> = st
        .records
        .iter()
        .zip(&st.states)
        .enumerate()
        .map(|(k, (r, state))| {
            let planned = planned_shard(plan, k as u32);
            serde_json::json!({
                "shard": k,
                "state": state.as_str(),
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
    super::json::stamp(
        super::json::SHARDS_STATUS,
        serde_json::json!({
            "plan_id": shards.id,
            "progress": st.progress,
            "shards": per,
            "total": {
                "objects_done": st.objects, "bytes_done": st.bytes, "failed": st.failed,
                "planned": st.planned.json(),
                "so_far": st.so_far.json(shards.count),
                "bytes_per_second": st.aggregate,
                "eta_seconds": st.eta,
                "states": {
                    "not_started": st.count(ShardState::NotStarted),
                    "running": st.count(ShardState::Running),
                    "stale": st.count(ShardState::Stale),
                    "done": st.count(ShardState::Done),
                    "failed": st.count(ShardState::Failed),
                    "incomplete": st.count(ShardState::Incomplete),
                },
                "done": st.all_done(),
            },
        }),
    )
}

fn status_text(plan: &PlanFile, st: &ShardsStatus) {
    let shards = plan.shards.as_ref().expect("a sharded plan");
    println!(
        "plan {} ({}), progress at {}",
        shards.id,
        moverctl::words::count(shards.count.into(), "shard"),
        st.progress
    );
    println!("{}", status_table(plan, st));
    let count = |s: ShardState| st.count(s);
    println!(
        "total: {}/{} objects, {}/{}, {} failed; {} done, {} running, {} stale, {} failed, {} incomplete, {} not started; {}/s; ETA {}",
        st.objects,
        plan.corpus.objects,
        fmt_bytes(st.bytes),
        fmt_bytes(plan.corpus.bytes),
        st.failed,
        count(ShardState::Done),
        count(ShardState::Running),
        count(ShardState::Stale),
        count(ShardState::Failed),
        count(ShardState::Incomplete),
        count(ShardState::NotStarted),
        fmt_bytes(st.aggregate as u64),
        match st.eta {
            Some(0.0) => "none (done)".to_string(),
            Some(s) => humantime::format_duration(std::time::Duration::from_secs(s.ceil() as u64))
                .to_string(),
            None => "unknown (no shard running)".into(),
        }
    );
    let (d, p) = (&st.so_far.figures, &st.planned);
    println!(
        "against the plan: time {} so far (first start to last record; {} on all machines) of {} planned; cost {} so far of {} planned (egress {} of {}, source requests {} of {}, destination requests {} of {}; finished attempts, priced as the plan prices the move)",
        fmt_duration(d.seconds),
        fmt_duration(st.so_far.machine_seconds),
        fmt_duration(p.seconds),
        d.total_cost().human(),
        p.total_cost().human(),
        d.cost[0].human(),
        p.cost[0].human(),
        d.cost[1].human(),
        p.cost[1].human(),
        d.cost[2].human(),
        p.cost[2].human(),
    );
}

fn status_table(plan: &PlanFile, st: &ShardsStatus) -> comfy_table::Table {
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
    for (k, (r, state)) in st.records.iter().zip(&st.states).enumerate() {
        let planned = planned_shard(plan, k as u32);
        let done = r.as_ref().map(Figures::of_record).unwrap_or_default();
        t.add_row([
            k.to_string(),
            state.as_str().to_string(),
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
    t
}
