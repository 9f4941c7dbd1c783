//! The one table of exit codes. README.md and `moverctl --help` show the same table; a test keeps
//! them in step.

use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything asked for was done.
    Success = 0,
    /// A failure at run time that is not the input's fault (a file could not be written, …).
    Failure = 1,
    /// Bad input: a flag, a provider file, a plan file, an inventory or a location is wrong (a
    /// missing source folder, overlapping source and destination, a password in an endpoint);
    /// nothing was done.
    BadInput = 2,
    /// The command ran to the end, but some objects could not be handled; it says which.
    Partial = 3,
    /// Credentials are missing or refused; the message names the variable or profile needed.
    /// Also a run in which any object failed because a store refused the credentials (it wins
    /// over `Partial`: fixing the credentials is what the next run needs).
    Credentials = 4,
    /// `sync --delete`: more deletions than `--max-delete` allows, or the source listed no object
    /// and `--allow-empty-source` was not given; nothing was deleted.
    DeleteGuard = 5,
    /// `copy`, `exec`, `sync`: another run of the same pair holds the lock; nothing was done.
    Locked = 6,
    /// Stopped by Ctrl-C (or SIGINT) after the objects in flight finished; run again to resume.
    Interrupted = 130,
}

/// (code, meaning) rows, in the order the table shows them.
pub const TABLE: &[(u8, &str)] = &[
    (0, "success: everything asked for was done"),
    (
        1,
        "failure at run time (e.g. a file could not be written); see the message",
    ),
    (
        2,
        "bad input: a flag, provider file, plan file, inventory or location is wrong (the message names it), e.g. a missing local source, overlapping source and destination, a password in an endpoint URL; nothing was done",
    ),
    (
        3,
        "partial: the command finished but some objects could not be handled (listed, copied or verified); each is named",
    ),
    (
        4,
        "credentials missing or refused: the message names the variable, profile or file that would satisfy it; also when a copy, exec or sync run ends with any object failed because a store refused the credentials (wins over 3; the failures are named, the copies made are kept, sync deletes nothing)",
    ),
    (
        5,
        "sync: delete guard tripped (more deletions than --max-delete allows, or an empty source without --allow-empty-source); the copies were made, nothing was deleted",
    ),
    (
        6,
        "copy, exec, sync: another run of the same source and destination holds the lock (the message names its pid and start time); nothing was done",
    ),
    (
        130,
        "interrupted (Ctrl-C): objects in flight finished and were journaled; run the same command again to resume",
    ),
];

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e as u8)
    }
}

pub fn table_text() -> String {
    let mut s = String::from("Exit codes:\n");
    for (code, meaning) in TABLE {
        s.push_str(&format!("  {code}  {meaning}\n"));
    }
    s
}
