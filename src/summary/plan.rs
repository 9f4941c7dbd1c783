//! What `plan --save` says about the plan file it wrote: the `exec` command that runs it.

use crate::plan::file::PlanFile;
use std::path::Path;

/// The `moverctl exec PATH …` command that runs a saved plan, with `--src <SOURCE>` and
/// `--dst <DESTINATION>` for the locations the plan does not name (it was made from
/// `--from`/`--to` alone), and the sentence saying what to put in their place (empty when the
/// plan names both).
pub fn exec_command(path: &Path, plan: &PlanFile) -> (String, String) {
    let mut cmd = format!("moverctl exec {}", path.display());
    let mut missing = Vec::new();
    if plan.source.location.is_none() {
        cmd.push_str(" --src <SOURCE>");
        missing.push("<SOURCE>");
    }
    if plan.destination.location.is_none() {
        cmd.push_str(" --dst <DESTINATION>");
        missing.push("<DESTINATION>");
    }
    let fill = if missing.is_empty() {
        String::new()
    } else {
        format!(
            " (replace {} with the {} to move, e.g. s3://bucket/prefix, REMOTE:bucket/prefix or a \
             folder: the plan was made without --src/--dst, so it names no {})",
            missing.join(" and "),
            if missing.len() == 2 {
                "locations"
            } else {
                "location"
            },
            match (
                plan.source.location.is_none(),
                plan.destination.location.is_none()
            ) {
                (true, true) => "source or destination",
                (true, false) => "source",
                _ => "destination",
            }
        )
    };
    (cmd, fill)
}
