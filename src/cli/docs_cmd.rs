//! `moverctl completions SHELL`, `moverctl man DIR` and the `--version` line: what packagers and
//! shells need, generated from the same clap definitions as the parser.

use super::{Cli, CliError};
use clap::CommandFactory;
use std::path::Path;

/// `moverctl 0.1.0 (commit 1a2b3c4d5e6f, stores: s3 gcs azure local, tls: rustls)`. The commit
/// comes from build.rs (`git rev-parse`, or `MOVERCTL_GIT_COMMIT` where there is no .git, as in a
/// container build), else "unknown".
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("MOVERCTL_GIT_COMMIT"),
    ", ",
    env!("MOVERCTL_FEATURES"),
    ")"
);

/// Completion script for `shell` on stdout.
pub fn completions(shell: clap_complete::Shell) -> Result<(), CliError> {
    use std::io::Write;
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "moverctl", &mut buf);
    std::io::stdout().write_all(&buf).map_err(|e| {
        super::pipe::note(&e);
        CliError::Failure(format!("writing the completion script: {e}"))
    })
}

/// One man page per command (`moverctl.1`, `moverctl-copy.1`, ...) into `dir` (created).
pub fn man(dir: &Path) -> Result<(), CliError> {
    let fail = |e: std::io::Error| CliError::Failure(format!("{}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(fail)?;
    clap_mangen::generate_to(moverctl::help::decorate(Cli::command()), dir).map_err(fail)?;
    let n = std::fs::read_dir(dir)
        .map_err(fail)?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".1"))
        .count();
    eprintln!(
        "moverctl: wrote {n} man pages to {} (man -M {} moverctl)",
        dir.display(),
        dir.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .display()
    );
    Ok(())
}
