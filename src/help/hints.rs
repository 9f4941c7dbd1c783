//! Flags of other tools (aws-cli, rclone, s5cmd) that a newcomer types, and what moverctl calls
//! them: an unknown flag among these gets the hint instead of clap's guess ("use '--
//! --endpoint'", "a similar argument exists: '--log-file'").

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// (flag as the other tool spells it, the hint). Only flags moverctl does not take itself.
const FOREIGN: &[(&str, &str)] = &[
    (
        "--endpoint",
        "the S3 endpoint is --endpoint-url URL (as in aws-cli)",
    ),
    ("--endpoint_url", "the S3 endpoint is --endpoint-url URL"),
    (
        "--s3-endpoint",
        "the S3 endpoint is --endpoint-url URL (or a remote's endpoint)",
    ),
    ("--url", "the S3 endpoint is --endpoint-url URL"),
    (
        "--region",
        "moverctl has no --region: it comes from a remote's `region`, AWS_REGION, or the region \
         of the --profile",
    ),
    (
        "--s3-region",
        "moverctl has no --region: set AWS_REGION or a remote's `region`",
    ),
    ("--aws-profile", "the AWS profile is --profile NAME"),
    ("--s3-profile", "the AWS profile is --profile NAME"),
    ("--dryrun", "moverctl spells it --dry-run (or -n)"),
    ("--dry_run", "moverctl spells it --dry-run (or -n)"),
    (
        "--no-sign-request",
        "anonymous access is a remote with `anonymous = true` in the remotes file (--config)",
    ),
    (
        "--recursive",
        "copy, sync and ls always take everything under the location; give a key to copy one \
         object",
    ),
    (
        "-r",
        "copy, sync and ls always take everything under the location",
    ),
    ("--numworkers", "objects in flight are --transfers N"),
    (
        "--concurrency",
        "objects in flight are --transfers N (parts of one: --part-concurrency)",
    ),
    (
        "--multipart-chunksize",
        "the part size is --part-size SIZE (e.g. 64M = 64 MiB)",
    ),
    (
        "--s3-chunk-size",
        "the part size is --part-size SIZE (e.g. 64M = 64 MiB)",
    ),
    (
        "--chunk-size",
        "the part size is --part-size SIZE (e.g. 64M = 64 MiB)",
    ),
    (
        "--s3-upload-cutoff",
        "the multipart threshold is --multipart-threshold SIZE",
    ),
    (
        "--multipart-threshold-size",
        "the multipart threshold is --multipart-threshold SIZE",
    ),
    ("--only-show-errors", "moverctl spells it -q / --quiet"),
    (
        "--no-progress",
        "the bar shows only on a terminal; --stats 0 turns the stats line off",
    ),
    (
        "--stats-one-line",
        "the stats line is one line already: --stats DURATION",
    ),
    (
        "--exact-timestamps",
        "moverctl decides by size and checksums, never by times",
    ),
    (
        "--sse",
        "encryption at the destination is the bucket's default; no flag sets it",
    ),
    (
        "--ignore-existing",
        "an object already at the destination with the same size and checksum is skipped \
         always; --size-only skips by size alone",
    ),
];

/// The hint for another tool's spelling of a flag (`--endpoint=URL` as `--endpoint`).
pub fn foreign_hint(arg: &str) -> Option<&'static str> {
    let flag = arg.split('=').next().unwrap_or(arg);
    FOREIGN.iter().find(|(f, _)| *f == flag).map(|(_, h)| *h)
}

/// A clap error with moverctl's hint for another tool's flag in place of clap's guess.
pub fn with_hint(mut e: clap::Error) -> clap::Error {
    if e.kind() != ErrorKind::UnknownArgument {
        return e;
    }
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return e;
    };
    let Some(hint) = foreign_hint(arg) else {
        return e;
    };
    e.remove(ContextKind::SuggestedArg);
    e.remove(ContextKind::Suggested);
    e.insert(
        ContextKind::Suggested,
        ContextValue::StyledStrs(vec![hint.into()]),
    );
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_tools_flags_name_ours() {
        assert!(
            foreign_hint("--endpoint=http://x")
                .unwrap()
                .contains("--endpoint-url")
        );
        assert!(foreign_hint("--dryrun").unwrap().contains("-n"));
        assert!(foreign_hint("--transfers").is_none());
    }
}
