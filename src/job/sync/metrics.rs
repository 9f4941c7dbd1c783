//! A sync run's metrics (`sync --metrics-file`): the Prometheus textfile a node_exporter collects, replaced whole
//! (written to a temporary name, then renamed) after every run, failed ones included; with
//! `--metrics-push URL`, the same text is also PUT to a Pushgateway group (Kubernetes CronJobs:
//! the pod's node changes from run to run, so no node's textfile collector would see it).

use super::SyncOutcome as Outcome;
use crate::exit::Exit;
use crate::job::JobError;
use crate::money::Usd;
use crate::transfer::Report;
use crate::transfer::sync::{DeleteReport, Verdict};
use rust_decimal::Decimal;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The Prometheus textfile.
pub struct Metrics {
    pub path: PathBuf,
    /// A Pushgateway group URL to PUT the same text to.
    pub push: Option<String>,
    pub src: String,
    pub dst: String,
}

/// A label value escaped for the text format.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The value of `name` (any labels) in a metrics file written earlier, as its exact text.
fn previous_value(path: &Path, name: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .and_then(|l| l.rsplit(' ').next())
        .map(str::to_string)
}

fn unix_secs(t: std::time::SystemTime) -> Decimal {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    Decimal::from(d.as_millis() as u64) / Decimal::from(1000)
}

impl Metrics {
    /// Writes the run's metrics (`o`: None for a run that ended in an error) and pushes them when
    /// asked; returns why the push failed, if it did (the file is written either way).
    pub fn write(
        &self,
        o: Option<&Outcome>,
        exit: Exit,
        started: std::time::SystemTime,
        finished: std::time::SystemTime,
    ) -> Result<Option<String>, JobError> {
        const P: &str = "moverctl_sync_";
        let labels = format!(
            "{{src=\"{}\",dst=\"{}\"}}",
            label(&self.src),
            label(&self.dst)
        );
        let last_success = if exit == Exit::Success {
            Some(unix_secs(finished).to_string())
        } else {
            previous_value(&self.path, &format!("{P}last_success_timestamp_seconds"))
        };
        let duration = finished
            .duration_since(started)
            .unwrap_or_default()
            .as_millis() as u64;
        let zero = Report::default();
        let zd = DeleteReport::default();
        let (r, d) = match o {
            Some(o) => (&o.report, &o.deletes),
            None => (&zero, &zd),
        };
        let rows = rows(o, exit, duration, finished, last_success);
        let mut text = String::new();
        for (name, help, value) in rows {
            text.push_str(&format!(
                "# HELP {P}{name} {help}\n# TYPE {P}{name} gauge\n"
            ));
            if name == "requests" {
                let base = labels.trim_end_matches('}');
                for (class, n) in [
                    ("list_source", r.requests_list_src),
                    ("list_destination", r.requests_list_dst),
                    ("get", r.requests_get),
                    ("put", r.requests_put),
                    ("head", r.requests_head),
                    ("delete", d.requests_delete),
                ] {
                    text.push_str(&format!("{P}{name}{base},class=\"{class}\"}} {n}\n"));
                }
            } else {
                text.push_str(&format!("{P}{name}{labels} {value}\n"));
            }
        }
        write_atomically(&self.path, &text).map_err(|e| {
            JobError::Failure(format!("--metrics-file {}: {e}", self.path.display()))
        })?;
        // The run's own outcome stands; a stale push is what the staleness alert catches.
        Ok(match &self.push {
            Some(url) => push(url, text).err(),
            None => None,
        })
    }
}

/// Each gauge of a run: its name (after `moverctl_sync_`), help text and value (`requests` is
/// written one line per request class).
fn rows(
    o: Option<&Outcome>,
    exit: Exit,
    duration: u64,
    finished: std::time::SystemTime,
    last_success: Option<String>,
) -> Vec<(&'static str, &'static str, String)> {
    let zero = Report::default();
    let zd = DeleteReport::default();
    let (r, d, cost) = match o {
        Some(o) => (&o.report, &o.deletes, o.cost.total()),
        None => (&zero, &zd, Usd::ZERO),
    };
    vec![
        (
            "objects_copied",
            "Objects copied (and verified) by the last run.",
            r.copied.to_string(),
        ),
        (
            "bytes_copied",
            "Bytes copied by the last run.",
            r.copied_bytes.to_string(),
        ),
        (
            "objects_skipped",
            "Objects unchanged at the last run.",
            r.skipped.to_string(),
        ),
        (
            "objects_failed",
            "Objects that failed or were refused in the last run.",
            (r.failed.len() + r.refused.len()).to_string(),
        ),
        (
            "objects_deleted",
            "Destination objects deleted by the last run.",
            d.deleted.to_string(),
        ),
        (
            "bytes_deleted",
            "Bytes deleted by the last run.",
            d.deleted_bytes.to_string(),
        ),
        (
            "objects_delete_failed",
            "Deletions that failed in the last run.",
            d.failed.len().to_string(),
        ),
        (
            "delete_candidates",
            "Objects only at the destination, old enough to delete, at the last run.",
            d.deletable.to_string(),
        ),
        (
            "objects_kept_min_duration",
            "Objects only at the destination kept because they are younger than the minimum storage duration.",
            d.kept_young.to_string(),
        ),
    ]
    .into_iter()
    .chain(run_rows(d, exit, duration, finished, last_success, cost))
    .collect()
}

/// The gauges about the run as a whole: the delete guard, requests, time, cost, exit code.
fn run_rows(
    d: &DeleteReport,
    exit: Exit,
    duration: u64,
    finished: std::time::SystemTime,
    last_success: Option<String>,
    cost: Usd,
) -> Vec<(&'static str, &'static str, String)> {
    vec![
        (
            "delete_guard_tripped",
            "1 when the last run stopped before deleting (--max-delete, or an empty source without --allow-empty-source).",
            u8::from(matches!(
                d.verdict,
                Some(Verdict::GuardTripped | Verdict::EmptySource)
            ))
            .to_string(),
        ),
        (
            "requests",
            "Requests made by the last run (LIST at each end, GET, PUT, HEAD, DELETE).",
            String::new(),
        ),
        (
            "duration_seconds",
            "Wall time of the last run.",
            (Decimal::from(duration) / Decimal::from(1000)).to_string(),
        ),
        (
            "estimated_cost_dollars",
            "The last run's requests, egress and early-deletion fees at catalog list prices, in USD.",
            cost.micros().to_string(),
        ),
        (
            "last_run_timestamp_seconds",
            "When the last run finished (Unix time).",
            unix_secs(finished).to_string(),
        ),
        (
            "last_success_timestamp_seconds",
            "When the last successful run finished (Unix time).",
            last_success.unwrap_or_else(|| "0".into()),
        ),
        (
            "last_run_exit_code",
            "Exit code of the last run (see moverctl --help).",
            (exit as u8).to_string(),
        ),
    ]
}

/// A Pushgateway URL: http(s), no user info or query (credentials never go in a URL here).
pub fn check_push_url(u: &str) -> Result<(), JobError> {
    let bad = |why: &str| JobError::Usage(format!("--metrics-push: {why}"));
    let url = url::Url::parse(u).map_err(|e| bad(&format!("{u:?} is not a URL: {e}")))?;
    if !url.username().is_empty() || url.password().is_some() || url.query().is_some() {
        return Err(bad(
            "the URL carries a user name, password or query (withheld); credentials do not go in URLs",
        ));
    }
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(bad(&format!("{u:?} is not an http(s) URL")));
    }
    if !url.path().contains("/metrics/job/") {
        return Err(bad(&format!(
            "{u:?} is not a Pushgateway group URL (…/metrics/job/NAME[/LABEL/VALUE…])"
        )));
    }
    Ok(())
}

/// A sync run's metrics to a Prometheus Pushgateway: PUT replaces the whole group at the Pushgateway with this run's metrics.
fn push(url: &str, text: String) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        let res = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|e| e.to_string())?
            .put(url)
            .header("Content-Type", "text/plain; version=0.0.4")
            .body(text)
            .send()
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        if res.status().is_success() {
            Ok(())
        } else {
            Err(format!("the Pushgateway answered {}", res.status()))
        }
    })
}

/// Write to a temporary file in the same folder, then rename over the target: a reader (the
/// textfile collector) sees the old file or the new one, never half of one.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "metrics".into());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let res = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_files_are_replaced_whole_and_old_values_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.prom");
        write_atomically(
            &p,
            "# HELP x y\nmoverctl_sync_last_success_timestamp_seconds{src=\"a\"} 12.5\n",
        )
        .unwrap();
        assert_eq!(
            previous_value(&p, "moverctl_sync_last_success_timestamp_seconds").as_deref(),
            Some("12.5")
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
