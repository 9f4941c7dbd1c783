//! Logging for long runs: `-v` (retries, throttling, connection errors, object retries and the
//! periodic stats line), `-vv` (one line per HTTP request: method, store, path, status, retry
//! number, duration), `-vvv`; or `--log-level`. Lines go to stderr (above the progress bar, which
//! is redrawn below them) or to `--log-file` (appended), as text or `--log-format json`.
//!
//! Only moverctl's own events are logged. Request lines carry the URL's path, never its query
//! (a presigned URL's signature or an Azure SAS token live there) and never a header; object
//! store crates' own log events are not enabled, because their messages are not checked for
//! what they contain.

use super::CliError;
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl LogLevel {
    fn as_str(self) -> &'static str {
        match self {
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }
}

/// The logging flags every command takes.
#[derive(Debug, Args, Clone)]
pub struct LogArgs {
    /// More detail on stderr (or --log-file): -v retries, throttling, connection errors and a
    /// stats line; -vv every HTTP request (method, store, path, status, duration); -vvv all.
    #[arg(short = 'v', long = "verbose", global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Log level instead of -v: error, warn (the default), info, debug, trace.
    #[arg(long, global = true, value_enum, value_name = "LEVEL")]
    pub log_level: Option<LogLevel>,
    /// Append log lines to this file instead of stderr (created if missing; its folder must
    /// exist).
    #[arg(long, global = true, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// Log line format: text, or json (one object per line: timestamp, level, target, fields).
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "text",
        value_name = "FORMAT"
    )]
    pub log_format: LogFormat,
}

impl LogArgs {
    /// The level in force: `--log-level`, else warn raised by each -v.
    pub fn level(&self) -> LogLevel {
        self.log_level.unwrap_or(match self.verbose {
            0 => LogLevel::Warn,
            1 => LogLevel::Info,
            2 => LogLevel::Debug,
            _ => LogLevel::Trace,
        })
    }
}

/// The progress display currently drawn on stderr, if any: log lines are printed above it.
static BAR: Mutex<Option<indicatif::MultiProgress>> = Mutex::new(None);

/// Registers (or, with None, removes) the progress display log lines must not overwrite.
pub fn set_progress(multi: Option<indicatif::MultiProgress>) {
    *BAR.lock().unwrap_or_else(|e| e.into_inner()) = multi;
}

/// Writes one log line to stderr, with the progress display suspended while it does.
pub struct StderrLine(Vec<u8>);

impl Write for StderrLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for StderrLine {
    fn drop(&mut self) {
        if self.0.is_empty() {
            return;
        }
        let line = std::mem::take(&mut self.0);
        let write = || {
            let mut e = std::io::stderr().lock();
            let _ = e.write_all(&line);
            let _ = e.flush();
        };
        match BAR.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            Some(m) => m.suspend(write),
            None => write(),
        }
    }
}

/// Prints `line` on stderr above the progress display (which is redrawn below it), so that no
/// frame of the bar overwrites it.
pub fn above_bar(line: &str) {
    let mut w = StderrLine(Vec::new());
    let _ = writeln!(w, "{line}");
}

/// Prints `line` on stderr with the progress display cleared, and ends the process with exit
/// 130 before the display can be drawn again (a second Ctrl-C: no stale bar is left behind).
pub fn last_words(line: &str) {
    let quit = || {
        let mut e = std::io::stderr().lock();
        let _ = writeln!(e, "{line}");
        let _ = e.flush();
        std::process::exit(super::exit::Exit::Interrupted as i32)
    };
    match BAR.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        Some(m) => m.suspend(quit),
        None => quit(),
    }
}

struct Stderr;

impl<'a> MakeWriter<'a> for Stderr {
    type Writer = StderrLine;
    fn make_writer(&'a self) -> Self::Writer {
        StderrLine(Vec::new())
    }
}

/// Installs the subscriber for this process. A `--log-file` that cannot be opened is a usage
/// error before any work starts.
pub fn init(args: &LogArgs) -> Result<(), CliError> {
    let level = args.level();
    // moverctl's events only (see the module notes); the stats line is info.
    // The stats line (`--stats`) is printed whatever the level: it is only made when asked for.
    let filter = EnvFilter::new(format!(
        "off,moverctl={},moverctl::stats=info",
        level.as_str()
    ));
    let json = args.log_format == LogFormat::Json;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(json || level >= LogLevel::Debug);
    let result = match &args.log_file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| CliError::Usage(format!("--log-file {}: {e}", path.display())))?;
            let file = Mutex::new(file);
            if json {
                builder.json().with_writer(file).try_init()
            } else {
                builder.with_ansi(false).with_writer(file).try_init()
            }
        }
        None => {
            let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
            if json {
                builder.json().with_writer(Stderr).try_init()
            } else {
                builder.with_ansi(ansi).with_writer(Stderr).try_init()
            }
        }
    };
    // A second init in one process (tests calling `run` twice) keeps the first subscriber.
    let _ = result;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbosity_raises_the_level_and_the_flag_overrides_it() {
        let a = |verbose, log_level| LogArgs {
            verbose,
            log_level,
            log_file: None,
            log_format: LogFormat::Text,
        };
        assert_eq!(a(0, None).level(), LogLevel::Warn);
        assert_eq!(a(1, None).level(), LogLevel::Info);
        assert_eq!(a(2, None).level(), LogLevel::Debug);
        assert_eq!(a(5, None).level(), LogLevel::Trace);
        assert_eq!(a(2, Some(LogLevel::Error)).level(), LogLevel::Error);
    }
}
