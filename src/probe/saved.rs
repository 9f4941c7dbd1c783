//! Probe results kept for later runs: `<state>/probes/<provider or kind>/<location>.json`, where
//! `<state>` is `$MOVERCTL_STATE_DIR`, else `$XDG_STATE_HOME/moverctl`, else
//! `~/.local/state/moverctl`. One file per location (a new probe replaces the old one); the
//! planner and executor take the newest file of a provider.

use super::{ProbeError, ProbeReport, SCHEMA};
use std::path::{Path, PathBuf};

pub fn state_dir() -> Option<PathBuf> {
    crate::journal::state_dir_if_known()
}

/// A file-name-safe form: ASCII letters, digits, '.', '-' and '_' kept, anything else '_'.
pub fn sanitize(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let out = out.trim_matches('.').to_string();
    if out.is_empty() { "_".into() } else { out }
}

/// The folder holding a provider's probes (provider id, or the store kind when there is none).
pub fn provider_dir(state: &Path, provider_or_kind: &str) -> PathBuf {
    state.join("probes").join(sanitize(provider_or_kind))
}

/// Where a report is saved.
pub fn path_for(state: &Path, report: &ProbeReport) -> PathBuf {
    let group = report.provider.as_deref().unwrap_or(&report.kind);
    provider_dir(state, group).join(format!("{}.json", sanitize(&report.location)))
}

/// Save into the state folder; returns the file written. Written to a temporary name first and
/// renamed, so a reader never sees half a file.
pub fn save(report: &ProbeReport) -> Result<PathBuf, ProbeError> {
    let state = state_dir().ok_or_else(|| ProbeError::Save {
        path: "(no state folder)".into(),
        message: "set MOVERCTL_STATE_DIR, XDG_STATE_HOME or HOME".into(),
    })?;
    let path = path_for(&state, report);
    let err = |m: String| ProbeError::Save {
        path: path.display().to_string(),
        message: m,
    };
    let dir = path.parent().expect("a file in a folder");
    std::fs::create_dir_all(dir).map_err(|e| err(e.to_string()))?;
    let text = serde_json::to_string_pretty(report).expect("reports serialize");
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    std::fs::write(&tmp, text + "\n").map_err(|e| err(e.to_string()))?;
    std::fs::rename(&tmp, &path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        err(e.to_string())
    })?;
    Ok(path)
}

/// The saved probe of one location (`moverctl probe LOCATION` writes it), if there is one that
/// parses and carries this schema. `group` is the provider id, or the store kind without one.
pub fn for_location(group: &str, location: &str) -> Option<ProbeReport> {
    let path = provider_dir(&state_dir()?, group).join(format!("{}.json", sanitize(location)));
    let report: ProbeReport = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    (report.schema == SCHEMA).then_some(report)
}

/// The saved probe of `location` or of the nearest folder above it (the longest probed location
/// that `location` starts with; the newest of equals), with its file. `group` as in
/// [`for_location`].
pub fn covering(group: &str, location: &str) -> Option<(PathBuf, ProbeReport)> {
    covering_where(group, location, |_| true)
}

/// [`covering`] among full probes only: the planner's figures (latency, throughput, request
/// rates) are not in the short probe a first copy runs ([`ProbeReport::checksum_only`]).
pub fn covering_measured(group: &str, location: &str) -> Option<(PathBuf, ProbeReport)> {
    covering_where(group, location, |r| !r.checksum_only)
}

fn covering_where(
    group: &str,
    location: &str,
    keep: impl Fn(&ProbeReport) -> bool,
) -> Option<(PathBuf, ProbeReport)> {
    let dir = provider_dir(&state_dir()?, group);
    let want = location.trim_end_matches('/');
    let mut best: Option<(PathBuf, ProbeReport)> = None;
    for ent in std::fs::read_dir(dir).ok()?.flatten() {
        let path = ent.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Some(report) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str::<ProbeReport>(&t).ok())
            .filter(|r| r.schema == SCHEMA && keep(r))
        else {
            continue;
        };
        let have = report.location.trim_end_matches('/');
        let covers = want == have
            || (want.starts_with(have)
                && matches!(want.as_bytes().get(have.len()), Some(b'/' | b':')));
        if !covers {
            continue;
        }
        let better = best.as_ref().is_none_or(|(_, b)| {
            let blen = b.location.trim_end_matches('/').len();
            have.len() > blen || (have.len() == blen && report.timestamp > b.timestamp)
        });
        if better {
            best = Some((path, report));
        }
    }
    best
}

/// The newest saved full probe of a provider (by the report's timestamp), with its file. Files
/// that do not parse or carry another schema, and short first-use probes, are skipped.
pub fn newest(provider: &str) -> Option<(PathBuf, ProbeReport)> {
    newest_in(&provider_dir(&state_dir()?, provider))
}

pub fn newest_in(dir: &Path) -> Option<(PathBuf, ProbeReport)> {
    let mut best: Option<(PathBuf, ProbeReport, chrono::DateTime<chrono::FixedOffset>)> = None;
    for ent in std::fs::read_dir(dir).ok()?.flatten() {
        let path = ent.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(report) = serde_json::from_str::<ProbeReport>(&text) else {
            continue;
        };
        if report.schema != SCHEMA || report.checksum_only {
            continue;
        }
        let Ok(ts) = chrono::DateTime::parse_from_rfc3339(&report.timestamp) else {
            continue;
        };
        if best.as_ref().is_none_or(|(_, _, t)| ts > *t) {
            best = Some((path, report, ts));
        }
    }
    best.map(|(p, r, _)| (p, r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_file_safe() {
        assert_eq!(
            sanitize("garage:moverctl-scratch/x/"),
            "garage_moverctl-scratch_x_"
        );
        assert_eq!(sanitize("/tmp/a b"), "_tmp_a_b");
        assert_eq!(sanitize(".."), "_");
    }
}
