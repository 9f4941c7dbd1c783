//! `stage --wait-ready FAST_DIR`: a job step (or a Kubernetes container) waits until the data it
//! reads is staged whole: the whole set's marker, one node's (`--node K/N`), or all N nodes'
//! (`--nodes N`, for shares staged into one shared folder). All N markers must come from the
//! same split of the source: markers of different splits do not promise disjoint, covering
//! shares, and are refused.

use super::{Marker, marker_name, read_marker};
use crate::exit::Exit;
use crate::job::JobError;
use crate::shard::ShardId;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Which markers to wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// The whole set's (`.moverctl-staged.json`).
    Whole,
    /// One node's share.
    Node(ShardId),
    /// Every share of N nodes.
    All(u32),
}

impl Which {
    /// The marker files waited for.
    pub fn names(&self) -> Vec<String> {
        match *self {
            Which::Whole => vec![marker_name(None)],
            Which::Node(n) => vec![marker_name(Some(n))],
            Which::All(count) => (0..count)
                .map(|index| marker_name(Some(ShardId { index, count })))
                .collect(),
        }
    }
}

/// What the wait found.
#[derive(Debug)]
pub struct Ready {
    pub fast_dir: PathBuf,
    /// Each marker waited for, and what it says once it appeared.
    pub markers: Vec<(String, Option<Marker>)>,
    pub waited: Duration,
}

impl Ready {
    pub fn ready(&self) -> bool {
        self.markers.iter().all(|(_, m)| m.is_some())
    }

    /// 0 when every marker is there, else 10 (`NotReady`).
    pub fn exit(&self) -> Exit {
        match self.ready() {
            true => Exit::Success,
            false => Exit::NotReady,
        }
    }
}

/// Polls FAST_DIR every `poll` until every marker `which` names is there or `timeout` passes.
pub fn wait(
    fast_dir: &Path,
    which: Which,
    timeout: Duration,
    poll: Duration,
) -> Result<Ready, JobError> {
    let start = Instant::now();
    loop {
        let markers: Vec<(String, Option<Marker>)> = which
            .names()
            .into_iter()
            .map(|n| {
                let m = read_marker(&fast_dir.join(&n));
                (n, m)
            })
            .collect();
        let out = Ready {
            fast_dir: fast_dir.to_path_buf(),
            markers,
            waited: start.elapsed(),
        };
        if out.ready() {
            check_one_split(&out)?;
            return Ok(out);
        }
        if start.elapsed() >= timeout {
            return Ok(out);
        }
        std::thread::sleep(poll.min(timeout.saturating_sub(start.elapsed())));
    }
}

fn check_one_split(r: &Ready) -> Result<(), JobError> {
    let splits: std::collections::BTreeSet<(&str, &str)> = r
        .markers
        .iter()
        .filter_map(|(_, m)| m.as_ref())
        .filter_map(|m| {
            m.node
                .as_ref()
                .map(|n| (m.source.as_str(), n.split.as_str()))
        })
        .collect();
    if splits.len() > 1 {
        return Err(JobError::Failure(format!(
            "{}: the shares' markers come from different listings of the source ({}): they may overlap or leave keys out; stage every node again",
            r.fast_dir.display(),
            splits
                .iter()
                .map(|(s, x)| format!("{s} split {x}"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(())
}
