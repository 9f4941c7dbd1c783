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
    /// missing source folder, overlapping source and destination, a password in an endpoint, an
    /// endpoint that cannot be connected to, a glob in a cloud location); nothing was done.
    BadInput = 2,
    /// The command ran to the end, but some objects could not be handled; it says which. Also
    /// `stage --evict` keeping staged files whose original is missing or changed at the source.
    Partial = 3,
    /// Credentials are missing or refused; the message names the variable or profile needed.
    /// Also a run in which any object failed because a store refused the credentials (it wins
    /// over `Partial`: fixing the credentials is what the next run needs).
    Credentials = 4,
    /// `sync --delete`, `drain --keep-remote`: more deletions than `--max-delete` allows, or the
    /// source listed no object and `--allow-empty-source` was not given; nothing was deleted.
    DeleteGuard = 5,
    /// `copy`, `exec`, `sync`: another run of the same pair holds the lock; nothing was done.
    Locked = 6,
    /// `exec --shard`: the shard's progress location could not be written (after the retry
    /// policy) or refused the write; the shard stopped after the objects in flight finished and
    /// were journaled locally.
    ProgressUnwritable = 7,
    /// `exec --shard`: the shard's listing found fewer objects or bytes in its range than the
    /// plan put there, beyond `SHORTFALL_PERCENT` (the shard domain); its record says
    /// `incomplete`.
    Incomplete = 8,
    /// `copy`, `exec`, `sync`: some objects were written from a cloud source that states no
    /// digest for them, and no read of them could be checked (`unverified`): not journaled as
    /// done, never stamped with a CRC64; `--verify size` accepts them.
    Unverified = 9,
    /// `stage --wait-ready`: the ready marker(s) did not appear before `--timeout`.
    NotReady = 10,
    /// `copy`, `exec`: the source listed no object (a prefix that does not exist?) and
    /// `--allow-empty-source` was not given; nothing was done.
    EmptySource = 11,
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
        "bad input: a flag, provider file, plan file, inventory or location is wrong (the message names it), e.g. a missing local source, overlapping source and destination, a password in an endpoint URL, an endpoint that refuses or does not answer connections (checked in seconds before the first request), a `*` or `?` in a cloud location; nothing was done",
    ),
    (
        3,
        "partial: the command finished but some objects could not be handled (listed, copied or verified); each is named; also stage --evict keeping staged files whose original is missing, changed or unreadable at the source (the fast-tier copy may be the only one left)",
    ),
    (
        4,
        "credentials missing or refused: the message names the variable, profile or file that would satisfy it; also when a copy, exec or sync run ends with any object failed because a store refused the credentials (wins over 3; the failures are named, the copies made are kept, sync deletes nothing)",
    ),
    (
        5,
        "sync, drain --keep-remote: delete guard tripped (more deletions than --max-delete allows, or an empty source without --allow-empty-source); the copies were made, nothing was deleted",
    ),
    (
        6,
        "copy, exec, sync: another run of the same source and destination holds the lock (the message names its pid and start time); nothing was done",
    ),
    (
        7,
        "exec --shard: the shard's progress location could not be written (still failing after --retry-timeout, or refused); the shard stopped promptly, what it verified is in the local journal, and the message names the location and the cause; fix access to it and run the same command again",
    ),
    (
        8,
        "exec --shard: the shard's listing found more than 1% fewer objects or bytes in its range than the plan put there (a listing that ended short, --src pointed at another corpus, or many objects deleted since planning); what was found is copied and verified, the record says incomplete with the numbers; check the source, or plan again",
    ),
    (
        9,
        "copy, exec, sync: some objects were written, but their source states no digest for them and no read of them could be checked (labelled unverified, counted in the summary and JSON, each named); they are not journaled as done and carry no moverctl CRC64; --verify size accepts them as checked by size",
    ),
    (
        10,
        "stage --wait-ready: the ready marker(s) did not appear before --timeout (the stage has not finished, or failed); the message names the missing markers",
    ),
    (
        11,
        "copy, exec: the source listed no objects (a prefix that does not exist, a typo?); the message shows the nearest existing names when it can; nothing was copied or created; --allow-empty-source accepts an empty source (exit 0)",
    ),
    (
        130,
        "interrupted (Ctrl-C): objects in flight finished and were journaled; run the same command again to resume",
    ),
];

impl Exit {
    /// The exit code of a finished copy, exec or sync run (`deletes` for sync), by precedence:
    /// interrupted, then credentials refused, then any failed or refused object or delete, then
    /// a tripped delete guard, then unverified objects.
    pub fn of_run(
        r: &crate::transfer::Report,
        deletes: Option<&crate::transfer::sync::DeleteReport>,
    ) -> Exit {
        use crate::transfer::sync::Verdict;
        if r.interrupted {
            Exit::Interrupted
        } else if r.auth_failures() > 0 || r.stopped_for_credentials.is_some() {
            Exit::Credentials
        } else if !r.failed.is_empty()
            || !r.refused.is_empty()
            || !r.changed_since_inventory.is_empty()
            || deletes.is_some_and(|d| !d.failed.is_empty())
        {
            Exit::Partial
        } else if deletes.is_some_and(|d| {
            matches!(
                d.verdict,
                Some(Verdict::GuardTripped | Verdict::EmptySource)
            )
        }) {
            Exit::DeleteGuard
        } else if !r.unverified.is_empty() {
            Exit::Unverified
        } else {
            Exit::Success
        }
    }
}

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

#[cfg(test)]
mod run_exit_tests {
    use super::Exit;
    use crate::store::error::StoreErrorKind;
    use crate::transfer::Failure;
    use crate::transfer::Report;
    use crate::transfer::sync::{DeleteReport, Verdict};

    fn failure(kind: Option<StoreErrorKind>) -> Failure {
        Failure {
            key: "k".into(),
            error: "e".into(),
            kind,
        }
    }

    /// One case per precedence step of [`Exit::of_run`].
    #[test]
    fn a_runs_exit_code_follows_the_table_by_precedence() {
        let clean = Report::default();
        assert_eq!(Exit::of_run(&clean, None), Exit::Success);
        let mut partial = Report::default();
        partial.failed.push(failure(Some(StoreErrorKind::Other)));
        assert_eq!(Exit::of_run(&partial, None), Exit::Partial);
        let mut refused = Report::default();
        refused.refused.push(failure(None));
        assert_eq!(Exit::of_run(&refused, None), Exit::Partial);
        let mut auth = partial.clone();
        auth.failed.push(failure(Some(StoreErrorKind::Auth)));
        assert_eq!(Exit::of_run(&auth, None), Exit::Credentials);
        let mut stopped = auth.clone();
        stopped.interrupted = true;
        assert_eq!(Exit::of_run(&stopped, None), Exit::Interrupted);

        let guard = DeleteReport {
            verdict: Some(Verdict::GuardTripped),
            ..Default::default()
        };
        assert_eq!(Exit::of_run(&clean, Some(&guard)), Exit::DeleteGuard);
        let empty = DeleteReport {
            verdict: Some(Verdict::EmptySource),
            ..Default::default()
        };
        assert_eq!(Exit::of_run(&clean, Some(&empty)), Exit::DeleteGuard);
        // A failed copy wins over the guard (the guard is moot when deletes are suppressed).
        assert_eq!(Exit::of_run(&partial, Some(&guard)), Exit::Partial);
        let mut delete_failed = DeleteReport::default();
        delete_failed.failed.push(("k".into(), "e".into()));
        assert_eq!(Exit::of_run(&clean, Some(&delete_failed)), Exit::Partial);
        // Unverified objects: their own code, below every failure and the guard.
        let mut unverified = Report::default();
        unverified.unverified.push("k".into());
        assert_eq!(Exit::of_run(&unverified, None), Exit::Unverified);
        assert_eq!(Exit::of_run(&unverified, Some(&guard)), Exit::DeleteGuard);
        let mut both = partial.clone();
        both.unverified.push("k".into());
        assert_eq!(Exit::of_run(&both, None), Exit::Partial);
    }
}
