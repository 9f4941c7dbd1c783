//! `drain --json`: one line per checkpoint of a pass (`moverctl.drain/1`, `event` its fate), per
//! checkpoint `--keep-remote` retired or kept at the destination and `--keep-local` pruned or
//! kept, then the pass's summary.

use crate::job::drain::prune::Pruned;
use crate::job::drain::retain::Remote;
use crate::job::drain::{DrainPass, Fate};
use crate::money::Usd;
use serde_json::{Value, json};

fn line(v: Value) -> String {
    super::stamp(super::DRAIN, v).to_string()
}

/// The pass's lines, in order, the summary last.
pub fn pass_lines(pass: &DrainPass) -> Vec<String> {
    let mut out = Vec::new();
    for (name, fate) in &pass.checkpoints {
        out.push(line(match fate {
            Fate::Durable(r) => json!({"event": "durable", "checkpoint": name,
                "objects": r.objects, "bytes": r.bytes,
                "seconds_to_durable": r.seconds_to_durable, "durable_at": r.durable_at}),
            Fate::Unchanged => json!({"event": "unchanged", "checkpoint": name}),
            Fate::Incomplete(why) => {
                json!({"event": "incomplete", "checkpoint": name, "reason": why})
            }
            Fate::Changed => json!({"event": "changed", "checkpoint": name}),
            Fate::Failed(exit, why) => json!({"event": "failed", "checkpoint": name,
                "exit_code": *exit as u8, "error": why}),
        }));
    }
    let fee = |f: &Option<Usd>| f.map(Usd::to_json);
    for (name, r) in pass.retention.iter().flat_map(|r| &r.checkpoints) {
        out.push(line(match r {
            Remote::Retired {
                objects,
                bytes,
                early_fee,
                resumed,
            } => json!({"event": "retired", "checkpoint": name, "objects": objects,
                "bytes": bytes, "early_deletion_fee": fee(early_fee), "resumed": resumed}),
            Remote::Kept { reason, early_fee } => json!({"event": "kept-remote",
                "checkpoint": name, "reason": reason, "early_deletion_fee": fee(early_fee)}),
            Remote::Held(why) => json!({"event": "held", "checkpoint": name, "reason": why}),
            Remote::Failed(e) => json!({"event": "retire-failed", "checkpoint": name, "error": e}),
        }));
    }
    for (name, p) in &pass.pruned {
        out.push(line(match p {
            Pruned::Removed(bytes) => {
                json!({"event": "pruned", "checkpoint": name, "bytes": bytes})
            }
            Pruned::Kept(why) => json!({"event": "kept", "checkpoint": name, "reason": why}),
        }));
    }
    let count = |f: fn(&Fate) -> bool| pass.checkpoints.iter().filter(|(_, x)| f(x)).count();
    out.push(line(json!({"event": "summary",
        "checkpoints": pass.checkpoints.len(),
        "durable": count(|f| matches!(f, Fate::Durable(_))),
        "unchanged": count(|f| matches!(f, Fate::Unchanged)),
        "incomplete": count(|f| matches!(f, Fate::Incomplete(_))),
        "failed": count(|f| matches!(f, Fate::Failed(..) | Fate::Changed)),
        "pruned": pass.pruned.iter().filter(|(_, p)| matches!(p, Pruned::Removed(_))).count(),
        "retention": pass.retention.as_ref().map(|r| json!({
            "retired": r.checkpoints.iter().filter(|(_, x)| matches!(x, Remote::Retired { .. })).count(),
            "verdict": r.verdict.map(|v| v.as_str()), "max_delete": r.max_delete, "allowed": r.allowed,
            "early_deletion_fees": r.early_fees.to_json(), "kept_early_deletion_fees": r.kept_fees.to_json(),
            "error": r.error})),
        "exit_code": pass.exit() as u8})));
    out
}
