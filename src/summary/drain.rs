//! A drain pass in words: one line per checkpoint (and per checkpoint `--keep-remote` retired or
//! kept at the destination, and `--keep-local` pruned or kept), each marked as information or as
//! a problem.

use crate::job::drain::prune::Pruned;
use crate::job::drain::retain::{Remote, Retention};
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
                "durable     {name}: {}, {}, {:.1} s from its last write to durable",
                crate::words::count(r.objects, "file"),
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
    if let Some(r) = &pass.retention {
        out.extend(retention_lines(r));
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

/// What `--keep-remote` did at the destination: a line per checkpoint, then the pass's verdict
/// when it stopped the deletes.
pub fn retention_lines(r: &Retention) -> Vec<Line> {
    let mut out = Vec::new();
    for (name, fate) in &r.checkpoints {
        out.push(match fate {
            Remote::Retired {
                objects,
                bytes,
                early_fee,
                resumed,
            } => info(format!(
                "retired     {name}: {}, {} deleted at the destination{}{}",
                crate::words::count(*objects, "object"),
                fmt_bytes(*bytes),
                match early_fee {
                    Some(f) => format!(", early-deletion fee {f}"),
                    None => String::new(),
                },
                if *resumed {
                    " (finishing what an earlier pass started)"
                } else {
                    ""
                }
            )),
            Remote::Kept { reason, .. } => info(format!("kept remote {name}: {reason}")),
            Remote::Held(why) => problem(format!("not retired {name}: {why}")),
            Remote::Failed(e) => problem(format!(
                "retiring {name} failed part way ({e}); its marker stays and the next pass finishes it"
            )),
        });
    }
    if let Some(e) = &r.error {
        out.push(problem(format!("--keep-remote: {e}")));
    }
    out
}

/// The pass as printed: the JSON lines (`json`) or these words, `quiet` leaving out all but
/// problems; each with whether it is a problem (for stderr).
pub fn output(pass: &DrainPass, quiet: bool, json: bool) -> Vec<(bool, String)> {
    if json {
        return crate::json::drain::pass_lines(pass)
            .into_iter()
            .map(|l| (false, l))
            .collect();
    }
    pass_lines(pass)
        .into_iter()
        .filter(|l| l.problem || !quiet)
        .map(|l| (l.problem, l.text))
        .collect()
}
