//! `moverctl ls [LOCATION]`: keys, sizes and totals streamed in key order; `--max-depth N` down
//! to a depth, `--summary` the totals only; the buckets of `s3://`, `gs://`, `az://`,
//! `REMOTE:`; with no location, the configured remotes.

use super::CliError;
use clap::Args;
use moverctl::json::ls as js;
use moverctl::store::config::Remotes;
use moverctl::store::depth::Shallow;
use moverctl::store::list::Listed;
use moverctl::summary::ls as words;
use std::io::Write;

#[derive(Debug, Args)]
pub struct LsArgs {
    /// s3://bucket/prefix, gs://…, az://…, a path, or REMOTE:bucket/prefix; s3://, gs://, az://
    /// or REMOTE: lists the buckets (containers); none lists the configured remotes.
    pub location: Option<String>,
    /// One JSON object per line (objects, refused keys, then a summary).
    #[arg(long)]
    pub json: bool,
    /// List N levels down only (1: what is directly in the location), folders shown as such.
    #[arg(long, value_name = "N", conflicts_with = "summary")]
    pub max_depth: Option<usize>,
    /// Print only the totals (objects and bytes of everything under the location).
    #[arg(long)]
    pub summary: bool,
}

pub fn run(remotes: &Remotes, args: LsArgs) -> Result<super::exit::Exit, CliError> {
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    let Some(location) = args.location.as_deref() else {
        let rows = moverctl::job::ls::remotes(remotes);
        if args.json {
            for r in &rows {
                writeln!(out, "{}", js::remote(r)).map_err(io_err)?;
            }
        } else {
            write!(out, "{}", words::remotes(&rows)).map_err(io_err)?;
        }
        return done(out, 0);
    };
    if let Some(root) = moverctl::job::ls::store_root(location, remotes) {
        let noun = moverctl::job::ls::bucket_noun(&root);
        let n = moverctl::job::ls::buckets(remotes, root, |b| {
            let line = match args.json {
                true => js::bucket(b).to_string(),
                false => words::bucket(b),
            };
            writeln!(out, "{line}").map_err(io_err)
        })?;
        if !args.json {
            let n = moverctl::words::count(n, noun);
            writeln!(out, "{n}").map_err(io_err)?;
        }
        return done(out, 0);
    }
    if let Some(depth) = args.max_depth {
        let n = moverctl::job::ls::shallow(remotes, location, depth, |item| {
            shallow_line(&mut out, item, args.json)
        })?;
        let last = match args.json {
            true => js::summary(n.objects, n.bytes, n.refused, Some(n.folders)).to_string(),
            false => words::shallow_totals(&n, depth),
        };
        writeln!(out, "{last}").map_err(io_err)?;
        return done(out, n.refused);
    }
    let n = moverctl::job::inspect::ls(remotes, location, |item| {
        line(&mut out, item, args.json, args.summary)
    })?;
    let last = match args.json {
        true => js::summary(n.objects, n.bytes, n.refused, None).to_string(),
        false => words::totals(n.objects, n.bytes, n.refused),
    };
    writeln!(out, "{last}").map_err(io_err)?;
    done(out, n.refused)
}

/// Flushes the listing; refused keys make it partial (exit 3).
fn done(mut out: impl Write, refused: u64) -> Result<super::exit::Exit, CliError> {
    out.flush().map_err(io_err)?;
    Ok(if refused > 0 {
        super::exit::Exit::Partial
    } else {
        super::exit::Exit::Success
    })
}

/// One entry of the listing: a line on stdout unless `quiet` (a refused key also on stderr).
fn line(out: &mut impl Write, item: &Listed, json: bool, quiet: bool) -> Result<(), CliError> {
    match item {
        Listed::Object(_) if quiet => Ok(()),
        Listed::Object(e) if json => writeln!(out, "{}", js::object(e)).map_err(io_err),
        Listed::Object(e) => writeln!(out, "{}", words::object(e)).map_err(io_err),
        Listed::Refused { key, reason } => refused(out, key, reason, json),
    }
}

fn shallow_line(out: &mut impl Write, item: &Shallow, json: bool) -> Result<(), CliError> {
    match item {
        Shallow::Object(e) => line(out, &Listed::Object(e.clone()), json, false),
        Shallow::Folder(k) if json => writeln!(out, "{}", js::folder(k)).map_err(io_err),
        Shallow::Folder(k) => writeln!(out, "{}", words::folder(k)).map_err(io_err),
        Shallow::Refused { key, reason } => refused(out, key, reason, json),
    }
}

fn refused(out: &mut impl Write, key: &str, reason: &str, json: bool) -> Result<(), CliError> {
    if json {
        writeln!(out, "{}", js::refused(key, reason)).map_err(io_err)?;
    }
    eprintln!("moverctl: cannot handle key {key:?}: {reason}");
    Ok(())
}

fn io_err(e: std::io::Error) -> CliError {
    super::pipe::note(&e);
    CliError::Failure(format!("writing the listing: {e}"))
}
