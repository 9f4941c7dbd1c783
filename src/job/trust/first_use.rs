//! The probe on first use: a copy, exec or sync into an S3-API store that neither its catalog
//! entry nor a saved probe says checks `x-amz-checksum-crc64nvme` first runs the short probe that
//! settles it ([`crate::probe::checksum_only`]: a right CRC64 stored and read back, a wrong one
//! refused; its test objects under `.moverctl-probe-<random>/`, removed). The result is saved for
//! the whole bucket like `moverctl probe`'s, so the next run into any prefix of it does not probe
//! again, and the destination's capabilities take it at once: a store that passes has every write
//! of this run proven by the CRC64 it keeps (about 0.6 s of CPU per GiB) instead of an MD5 of
//! every byte (about 2.3 s). `--no-probe` (or `MOVERCTL_NO_PROBE=1`) refuses it.

use super::super::JobError;
use crate::catalog::Catalog;
use crate::probe::{self, Status};
use crate::store::config::Remotes;
use crate::store::location::Location;
use crate::store::{Kind, Store};

/// Runs the short probe when `allowed` (not `--no-probe`, not a dry run) and `dst` is an S3
/// store nothing has settled ([`super::unprobed_s3`]); returns the one line that reports it, or
/// None when no probe ran. A probe that cannot tell (a request failed) is reported and not saved,
/// and the run keeps the MD5 path.
pub fn probe_if_unsettled(
    catalog: &Catalog,
    remotes: &Remotes,
    dst: &mut Store,
    allowed: bool,
) -> Result<Option<String>, JobError> {
    if !allowed || dst.kind != Kind::S3 || super::unprobed_s3(catalog, dst).is_none() {
        return Ok(None);
    }
    let Some(s3) = probe::s3raw::open_s3(&dst.location.shown(), remotes)? else {
        return Ok(None);
    };
    let mut report = super::super::runtime()?.block_on(probe::checksum_only(dst, &s3));
    // A server's integrity behaviour does not change from prefix to prefix: the result stands
    // for the bucket (a later full `moverctl probe` of the bucket, being newer, replaces it).
    if let Location::S3 { bucket, remote, .. } = &dst.location {
        report.location = Location::S3 {
            bucket: bucket.clone(),
            prefix: String::new(),
            remote: remote.clone(),
        }
        .shown();
    }
    let verdict = super::probe_crc64(&report);
    let saved = match verdict {
        Some(_) => match probe::saved::save(&report) {
            Ok(p) => format!("saved {}", p.display()),
            Err(e) => format!("not saved ({e})"),
        },
        None => "not saved".to_string(),
    };
    if verdict.is_some() {
        super::grant_crc64(catalog, dst, Some(&report));
    }
    Ok(Some(line(&report, verdict, &saved)))
}

/// `probed garage:b/ for the checksum path (first use; --no-probe skips it): …`.
fn line(report: &probe::ProbeReport, verdict: Option<bool>, saved: &str) -> String {
    let what = match verdict {
        Some(true) => {
            "x-amz-checksum-crc64nvme is checked and stored: writes are proven by CRC64".to_string()
        }
        Some(false) => {
            let why = ["checked", "stored"]
                .iter()
                .filter_map(|s| report.finding(&format!("checksum_crc64nvme_{s}")))
                .find(|f| f.status != Status::Yes)
                .map(|f| f.detail.clone())
                .unwrap_or_default();
            format!("x-amz-checksum-crc64nvme is not relied on ({why}): writes are proven by MD5")
        }
        None => {
            let why = report
                .findings
                .iter()
                .find(|f| f.status == Status::Unknown)
                .map(|f| f.detail.clone())
                .unwrap_or_default();
            format!("could not tell ({why}): writes are proven by MD5")
        }
    };
    let cleanup = match report.cleanup.left.as_slice() {
        [] => format!(
            "{} test objects under {} removed",
            report.cleanup.deleted, report.scratch_prefix
        ),
        left => format!("could not remove {}", left.join(", ")),
    };
    format!(
        "probed {} for the checksum path (first use; --no-probe skips it): {what}; {cleanup}; {saved}",
        report.location
    )
}
