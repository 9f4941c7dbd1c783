//! What `--help` teaches beyond clap's defaults, kept out of the command-line layer: every flag
//! under a heading (what to copy, speed, verification, output, … and the global options last),
//! a one-line description on every flag (the doc comment in full stays for `moverctl help CMD`
//! and the man pages), worked examples per command, and hints for the flags of other tools
//! (aws-cli, rclone, s5cmd) that moverctl spells differently.
//!
//! [`decorate`] takes the command clap derives and returns it dressed; the CLI parses with it.

mod hints;
mod texts;

pub use hints::{foreign_hint, with_hint};
use texts::{COMMAND_HEADINGS, EXAMPLES, GLOBAL_IDS, HEADINGS, SHORT, VALUE_NAMES};

use clap::{ArgAction, Command};

/// The heading of the options every command takes.
pub const GLOBAL: &str = "Global options";

/// The heading of `id` in `command`: a command's own first, then the shared table.
fn heading_of(command: &str, id: &str) -> Option<&'static str> {
    COMMAND_HEADINGS
        .iter()
        .find(|(c, i, _)| *c == command && *i == id)
        .map(|(_, _, h)| *h)
        .or_else(|| {
            HEADINGS
                .iter()
                .find(|(_, ids)| ids.contains(&id))
                .map(|(h, _)| *h)
        })
}

/// A one-line description: the table's (`command.id`, else `id`), else the doc comment's first
/// clause when it runs long.
fn short_of(command: &str, id: &str, full: &str) -> String {
    let own = format!("{command}.{id}");
    if let Some((_, s)) = SHORT
        .iter()
        .find(|(i, _)| *i == own)
        .or_else(|| SHORT.iter().find(|(i, _)| *i == id))
    {
        return (*s).to_string();
    }
    if full.len() <= 100 && !full.contains('\n') {
        return full.to_string();
    }
    let cut = [". ", "; ", " (", " ["]
        .iter()
        .filter_map(|sep| full.find(sep))
        .filter(|&i| i >= 12)
        .min()
        .unwrap_or(full.len());
    full[..cut]
        .replace('\n', " ")
        .trim_end_matches('.')
        .to_string()
}

fn is_curated(command: &str, id: &str) -> bool {
    let own = format!("{command}.{id}");
    SHORT.iter().any(|(i, _)| *i == id || *i == own)
}

/// One subcommand: headings in the table's order (clap shows custom headings in the order of
/// their first argument), short descriptions, the long text kept for `help CMD`, examples.
fn dress(mut sc: Command) -> Command {
    let name = sc.get_name().to_string();
    let ids: Vec<String> = sc
        .get_arguments()
        .filter(|a| !a.is_positional() && !a.is_global_set())
        .map(|a| a.get_id().to_string())
        .collect();
    let order = COMMAND_HEADINGS
        .iter()
        .filter(|(c, _, _)| *c == name)
        .map(|(_, _, h)| *h)
        .chain(HEADINGS.iter().map(|(h, _)| *h));
    let mut placed = Vec::new();
    for heading in order {
        let here: Vec<&String> = ids
            .iter()
            .filter(|i| heading_of(&name, i) == Some(heading) && !placed.contains(*i))
            .collect();
        for id in here {
            placed.push(id.clone());
            sc = sc.mut_arg(id, |a| {
                let full = a.get_long_help().or(a.get_help()).map(|h| h.to_string());
                let short = short_of(&name, id, full.as_deref().unwrap_or(""));
                let mut a = a.help_heading(heading).help(short);
                if is_curated(&name, id) && a.get_action().takes_values() {
                    // The curated line names the values itself.
                    a = a.hide_possible_values(true);
                }
                if let Some((_, v)) = VALUE_NAMES.iter().find(|(i, _)| i == id) {
                    a = a.value_name(*v);
                }
                match full {
                    Some(f) => a.long_help(f),
                    None => a,
                }
            });
        }
    }
    sc = sc.mut_subcommands(dress);
    if let Some((_, text)) = EXAMPLES.iter().find(|(c, _)| *c == name) {
        let before = sc.get_after_help().map(|h| format!("{h}\n\n"));
        sc = sc.after_help(format!("{}{text}", before.unwrap_or_default()));
    }
    sc
}

/// The command clap derived, dressed for `--help`: see the module's documentation.
pub fn decorate(mut cmd: Command) -> Command {
    for id in GLOBAL_IDS {
        cmd = cmd.mut_arg(id, |a| {
            let mut full = a.get_help().map(|h| h.to_string()).unwrap_or_default();
            if let Some(var) = a.get_env() {
                full = format!("{full} (also {})", var.to_string_lossy());
            }
            let short = short_of("", id, &full);
            let values = a.get_action().takes_values();
            a.help_heading(GLOBAL)
                .help(short)
                .long_help(full)
                .hide_possible_values(values)
                .hide_env(true)
        });
    }
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for n in &names {
        cmd = cmd.mut_subcommand(n, dress);
    }
    // clap adds --help (and --version) when it builds the command: move them to the global
    // section, and make --help as short as -h (the full text is `moverctl help CMD`).
    cmd.build();
    fn help_last(sc: Command) -> Command {
        let sc = sc.mut_subcommands(help_last);
        if sc.get_arguments().any(|a| a.get_id() == "help") {
            sc.mut_arg("help", |a| {
                a.help_heading(GLOBAL)
                    .action(ArgAction::HelpShort)
                    .help("Print help (`moverctl help COMMAND`: every flag in full)")
            })
        } else {
            sc
        }
    }
    let exits = cmd
        .get_after_help()
        .map(|h| h.to_string())
        .unwrap_or_default();
    help_last(cmd)
        .mut_arg("version", |a| a.help_heading(GLOBAL))
        .after_help(format!("{}\n\n{exits}", crate::units::SIZE_UNITS))
}

/// Parse the process's arguments with the dressed command; a usage error is printed with a
/// hint for another tool's spelling (`--endpoint`, `--dryrun`, …) and exits 2, as clap does.
pub fn matches(cmd: Command) -> clap::ArgMatches {
    decorate(cmd)
        .try_get_matches()
        .unwrap_or_else(|e| with_hint(e).exit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_description_is_cut_at_its_first_clause() {
        assert_eq!(
            short_of(
                "copy",
                "nope",
                "Objects copied at the same time (the in-flight window's maximum; bytes in flight \
                 stay within --max-buffer whatever this is)."
            ),
            "Objects copied at the same time"
        );
        assert_eq!(short_of("copy", "nope", "Short."), "Short.");
        assert_eq!(
            short_of("status", "dst", ""),
            "Destination of a `copy` run (with --src)"
        );
    }

    #[test]
    fn every_heading_in_the_command_table_is_known() {
        for (_, _, h) in COMMAND_HEADINGS {
            assert!(!h.is_empty());
        }
        let mut ids: Vec<&str> = HEADINGS
            .iter()
            .flat_map(|(_, ids)| ids.iter().copied())
            .collect();
        let n = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n, "an id under two shared headings");
    }
}
