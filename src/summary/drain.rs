//! A drain pass in words: one line per checkpoint (and per checkpoint `--keep-local` pruned or
//! kept), each marked as information or as a problem.

use crate::job::drain::prune::Pruned;
use crate::job::drain::{DrainPass, Fate};
use crate::units::fmt_bytes;

/// A line of a pass: `problem` lines are shown even with `--quiet` (on stderr).
pub struct Line {
    pub problem: bool,
    pub text: String,
}

fn info(text: String) -> Line {
    Line {
        problem: false,
        text,
    }
}

fn problem(text: String) -> Line {
    Line {
        problem: true,
        text,
    }
}

pub fn pass_lines(pass: &DrainPass) -> Vec<Line> {
    let mut out = Vec::new();
    for (name, fate) in &pass.checkpoints {
        out.push(match fate {
            Fate::Durable(r) => info(format!(
                "durable     {name}: {} files, {}, {:.1} s from its last write to durable",
                r.objects,
                fmt_bytes(r.bytes),
                r.seconds_to_durable
            )),
            Fate::Unchanged => info(format!("unchanged   {name} (its receipt describes it)")),
            Fate::Incomplete(why) => info(format!("incomplete  {name}: {why}")),
            Fate::Changed => problem(format!(
                "checkpoint {name} changed while it was copied: no receipt yet; the next pass drains it again"
            )),
            Fate::Failed(exit, what) => problem(format!(
                "checkpoint {name} is not durable (exit {}): {what}",
                *exit as u8
            )),
        });
    }
    for (name, p) in &pass.pruned {
        out.push(info(match p {
            Pruned::Removed(bytes) => format!(
                "pruned      {name}: {} freed (durable at the destination)",
                fmt_bytes(*bytes)
            ),
            Pruned::Kept(why) => format!("kept        {name}: {why}"),
        }));
    }
    out
}
