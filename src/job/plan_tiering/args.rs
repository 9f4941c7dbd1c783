//! The flags of `plan --tiering` and the small languages of `--dataset` and `--checkpoint`.
//!
//! The flag struct lives here, beside the job, rather than in `src/cli/` (which is at its line
//! budget); `cli::plan_cmd` flattens it into `plan`'s flags, so they read as `plan`'s own.

use crate::job::JobError;
use crate::plan::tiering::{Checkpoints, Dataset, Rates};
use crate::units::{parse_count, parse_rate, parse_size};
use rust_decimal::Decimal;

#[derive(Debug, Clone, Default, clap::Args)]
pub struct TieringArgs {
    /// Plan the tiering boundary instead of a move: which data belongs on the fast tier and which
    /// on object storage (`--from` is the object store), given what the GPUs cost while they
    /// wait. Needs --dataset, --fast-tier and a GPU price.
    #[arg(long, conflicts_with = "example", help_heading = "Tiering (--tiering)")]
    pub tiering: bool,
    /// A data set the training reads: name=NAME,size=SIZE,objects=N, and reads=R (full reads a
    /// month) or epochs=E/M (E epochs over M months). Repeat for several.
    #[arg(
        long,
        value_name = "SPEC",
        requires = "tiering",
        help_heading = "Tiering (--tiering)"
    )]
    pub dataset: Vec<String>,
    /// Checkpoints: size=SIZE,every=DURATION[,keep=N] (e.g. size=2TB,every=1h,keep=5; keep
    /// defaults to 1).
    #[arg(
        long,
        value_name = "SPEC",
        requires = "tiering",
        help_heading = "Tiering (--tiering)"
    )]
    pub checkpoint: Option<String>,
    /// The fast tier: a catalog id (`moverctl providers show aws`, `azure`, `gcp` list them) or
    /// `onprem`.
    #[arg(
        long,
        value_name = "ID",
        requires = "tiering",
        help_heading = "Tiering (--tiering)"
    )]
    pub fast_tier: Option<String>,
    /// Price of the fast tier's capacity: USD per TB-month (`120`), or with a unit
    /// (`0.145/GiB-month`, `90/TiB-month`). Required for `onprem` and for catalog tiers without a
    /// sourced price; replaces a catalog price.
    #[arg(
        long,
        value_name = "PRICE",
        requires = "tiering",
        help_heading = "Tiering (--tiering)"
    )]
    pub fast_tier_price: Option<String>,
    /// The fast tier's aggregate throughput: READ[,WRITE] (e.g. `200GB/s,100GB/s`). Required for
    /// `onprem`; replaces a catalog tier's throughput per TiB provisioned.
    #[arg(
        long,
        value_name = "READ[,WRITE]",
        requires = "tiering",
        help_heading = "Tiering (--tiering)"
    )]
    pub fast_tier_throughput: Option<String>,
    /// Object store throughput the GPU nodes get: READ[,WRITE] [default: a saved `moverctl probe`
    /// of the --from provider, its multi-stream rates × --nodes].
    #[arg(
        long,
        value_name = "READ[,WRITE]",
        requires = "tiering",
        help_heading = "Tiering (--tiering)"
    )]
    pub object_throughput: Option<String>,
    /// Machines reading and writing the object store in parallel (a probe measured one).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        help_heading = "Tiering (--tiering)"
    )]
    pub nodes: u32,
    /// Hours a month the GPUs train.
    #[arg(
        long,
        value_name = "H",
        default_value = "730",
        help_heading = "Tiering (--tiering)"
    )]
    pub train_hours: String,
    /// The rate training consumes data at while it runs [default: the month's reads spread over
    /// the training hours]. Reads from a slower tier (or, with --compute-at, a slower store)
    /// stall the GPUs.
    #[arg(long, value_name = "RATE", help_heading = "Tiering (--tiering)")]
    pub read_rate: Option<String>,
    /// Jobs a month; each stages the working set onto the fast tier once.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        help_heading = "Tiering (--tiering)"
    )]
    pub jobs_per_month: u32,
}

fn usage(m: String) -> JobError {
    JobError::Usage(m)
}

/// `k=v,k=v` into pairs; `flag` names the flag in errors.
fn pairs<'a>(flag: &str, spec: &'a str) -> Result<Vec<(&'a str, &'a str)>, JobError> {
    spec.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| usage(format!("{flag} {spec:?}: {p:?} is not KEY=VALUE")))
        })
        .collect()
}

pub fn number(flag: &str, what: &str, v: &str) -> Result<Decimal, JobError> {
    let d: Decimal = v.trim().parse().map_err(|_| {
        usage(format!(
            "{flag}: {what} {v:?} is not a number such as 4 or 0.5"
        ))
    })?;
    if d.is_sign_negative() && !d.is_zero() {
        return Err(usage(format!("{flag}: {what} {v:?} must be zero or more")));
    }
    Ok(d)
}

/// `name=web,size=200TB,objects=40M,reads=4` or `…,epochs=24/12`.
pub fn dataset(spec: &str, index: usize) -> Result<Dataset, JobError> {
    const F: &str = "--dataset";
    let (mut name, mut bytes, mut objects, mut reads) = (None, None, None, None);
    for (k, v) in pairs(F, spec)? {
        match k {
            "name" => name = Some(v.to_string()),
            "size" => bytes = Some(parse_size(v).map_err(|e| usage(format!("{F}: {e}")))?),
            "objects" => objects = Some(parse_count(v).map_err(|e| usage(format!("{F}: {e}")))?),
            "reads" => reads = Some(number(F, "reads", v)?),
            "epochs" => {
                let (e, m) = v.split_once('/').ok_or_else(|| {
                    usage(format!(
                        "{F}: epochs={v}: give E/M, epochs over months (24/12)"
                    ))
                })?;
                let m = number(F, "months", m)?;
                if m.is_zero() {
                    return Err(usage(format!("{F}: epochs={v}: months must be above zero")));
                }
                reads = Some(number(F, "epochs", e)? / m);
            }
            other => {
                return Err(usage(format!(
                    "{F} {spec:?}: unknown key {other:?} (name, size, objects, reads, epochs)"
                )));
            }
        }
    }
    let need = |what: &str| usage(format!("{F} {spec:?} needs {what}"));
    if reads.is_some_and(|r| r > Decimal::from(100_000)) {
        return Err(usage(format!("{F} {spec:?}: at most 100000 reads a month")));
    }
    Ok(Dataset {
        name: name.unwrap_or_else(|| format!("dataset-{}", index + 1)),
        bytes: bytes.ok_or_else(|| need("size=SIZE"))?,
        objects: objects.ok_or_else(|| need("objects=N (its object count)"))?,
        reads_per_month: reads.ok_or_else(|| need("reads=R (a month) or epochs=E/M"))?,
    })
}

/// `30s`, `15m`, `1h`, `1.5h`, `1d`, in seconds.
pub fn duration(flag: &str, v: &str) -> Result<Decimal, JobError> {
    let t = v.trim();
    let at = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let n = number(flag, "duration", &t[..at])?;
    let unit = match t[at..].trim() {
        "s" | "sec" => 1,
        "m" | "min" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => {
            return Err(usage(format!(
                "{flag}: {v:?} is not a duration such as 30m, 1h or 1d"
            )));
        }
    };
    let s = n * Decimal::from(unit);
    if s.is_zero() {
        return Err(usage(format!("{flag}: {v:?} must be above zero")));
    }
    Ok(s)
}

/// `size=2TB,every=1h,keep=5`.
pub fn checkpoints(spec: &str) -> Result<Checkpoints, JobError> {
    const F: &str = "--checkpoint";
    let (mut bytes, mut every, mut keep) = (None, None, None);
    for (k, v) in pairs(F, spec)? {
        match k {
            "size" => bytes = Some(parse_size(v).map_err(|e| usage(format!("{F}: {e}")))?),
            "every" => every = Some(duration(F, v)?),
            "keep" => {
                keep = Some(
                    v.parse::<u32>()
                        .ok()
                        .filter(|k| *k >= 1)
                        .ok_or_else(|| usage(format!("{F}: keep={v}: give a count, 1 or more")))?,
                )
            }
            other => {
                return Err(usage(format!(
                    "{F} {spec:?}: unknown key {other:?} (size, every, keep)"
                )));
            }
        }
    }
    let need = |what: &str| usage(format!("{F} {spec:?} needs {what}"));
    Ok(Checkpoints {
        bytes: bytes.ok_or_else(|| need("size=SIZE"))?,
        every_seconds: every.ok_or_else(|| need("every=DURATION (1h)"))?,
        keep: keep.unwrap_or(1),
    })
}

/// `READ[,WRITE]`: WRITE defaults to READ.
pub fn rates(flag: &str, v: &str) -> Result<Rates, JobError> {
    let r = |s: &str| parse_rate(s).map_err(|e| usage(format!("{flag}: {e}")));
    Ok(match v.split_once(',') {
        Some((read, write)) => Rates {
            read: r(read)?,
            write: r(write)?,
        },
        None => {
            let x = r(v)?;
            Rates { read: x, write: x }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dataset_reads_epochs_over_months() {
        let d = dataset("name=web,size=2TB,objects=1k,epochs=24/12", 0).unwrap();
        assert_eq!(
            (d.name.as_str(), d.bytes, d.objects),
            ("web", 2_000_000_000_000, 1000)
        );
        assert_eq!(d.reads_per_month, Decimal::from(2));
        let e = dataset("size=2TB,reads=1", 0).unwrap_err().to_string();
        assert!(e.contains("objects=N"), "{e}");
    }

    #[test]
    fn checkpoints_and_durations() {
        let c = checkpoints("size=100GB,every=30m,keep=3").unwrap();
        assert_eq!(
            (c.bytes, c.every_seconds, c.keep),
            (100_000_000_000, Decimal::from(1800), 3)
        );
        assert!(duration("--x", "5 parsecs").is_err());
    }
}
