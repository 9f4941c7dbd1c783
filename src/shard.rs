//! One move split across machines: contiguous key ranges, the `K/N` a process runs, and the
//! one-pass, constant-memory split that `plan --shards N` computes.
//!
//! **Ranges.** Shard `k` of `N` holds the keys `start < key <= end` in byte order, where shard 0
//! starts at `""` (every key) and shard `N-1` has no end. Boundaries are keys: a key equal to a
//! boundary belongs to the shard that boundary ends, and to no other. The lower bound is exclusive
//! because that is what S3's `start-after` (and object_store's listing offset) mean, so a shard's
//! listing starts exactly at its range; it stops at its end key. Keys that appear after planning
//! fall into exactly one range, like every other key ([`shard_of`]).
//!
//! **Split.** [`Sketch`] reads keys with their sizes in any order and keeps at most a few thousand
//! points per shard (memory does not grow with the object count): each point is a key and the
//! objects and bytes at or below it since the previous point. When it holds too many points it
//! merges neighbours whose weight together stays under a share of the total. [`Sketch::split`]
//! cuts the points into N ranges of about equal weight, where an object's weight is its share of
//! the bytes plus its share of the object count (balanced by bytes and by objects).

use std::collections::BTreeMap;

/// Relative keys under this folder name hold moverctl's progress records: never data.
pub const PROGRESS_DIR: &str = ".moverctl-progress";

/// Whether a key (relative to any prefix) lies in a progress folder: such keys are never listed
/// as data, copied or deleted.
pub fn is_progress_key(key: &str) -> bool {
    key.starts_with(".moverctl-progress/") || key.contains("/.moverctl-progress/")
}

/// The keys `start < key <= end` (byte order); `start` None: from the very first key (the
/// empty key included), `end` None: no upper bound.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeyRange {
    pub start: Option<String>,
    pub end: Option<String>,
}

impl KeyRange {
    pub fn contains(&self, key: &str) -> bool {
        self.after_start(key) && !self.past_end(key)
    }

    /// Whether `key` comes after the exclusive start (always, for the first range).
    pub fn after_start(&self, key: &str) -> bool {
        self.start
            .as_ref()
            .is_none_or(|s| key.as_bytes() > s.as_bytes())
    }

    /// Whether `key` lies beyond the inclusive end (a sorted listing can stop there).
    pub fn past_end(&self, key: &str) -> bool {
        self.end
            .as_ref()
            .is_some_and(|e| key.as_bytes() > e.as_bytes())
    }
}

/// The range of shard `k` of `boundaries.len() + 1` (boundaries non-decreasing, byte order).
pub fn range_of(boundaries: &[String], k: usize) -> KeyRange {
    KeyRange {
        start: (k > 0).then(|| boundaries[k - 1].clone()),
        end: boundaries.get(k).cloned(),
    }
}

/// The one shard a key belongs to: how many boundaries lie strictly below it.
pub fn shard_of(boundaries: &[String], key: &str) -> usize {
    boundaries.partition_point(|b| b.as_bytes() < key.as_bytes())
}

/// Which shard a process runs: `K/N`, or `auto` from the engine's environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardId {
    pub index: u32,
    pub count: u32,
}

impl std::fmt::Display for ShardId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Where `--shard auto` looks, in order: a Kubernetes Indexed Job, then a Slurm job array.
pub const AUTO_VARIABLES: [&str; 2] = ["JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID"];

/// Parse `--shard K/N` or `auto` against a plan of `planned` shards. `env` looks up a variable
/// (the process environment in use; a map in tests). The count must agree with the plan.
pub fn parse_shard(
    spec: &str,
    planned: u32,
    env: impl Fn(&str) -> Option<String>,
) -> Result<ShardId, String> {
    let spec = spec.trim();
    let (index, count) = if spec == "auto" {
        let found = AUTO_VARIABLES
            .iter()
            .find_map(|v| env(v).filter(|s| !s.trim().is_empty()).map(|s| (*v, s)));
        let Some((var, value)) = found else {
            return Err(format!(
                "--shard auto: neither {} is set (run it as a Kubernetes Indexed Job or a Slurm job array, or give --shard K/N)",
                AUTO_VARIABLES.join(" nor ")
            ));
        };
        let index: u32 = value
            .trim()
            .parse()
            .map_err(|_| format!("--shard auto: {var}={value:?} is not a shard number"))?;
        // A Slurm array's own count, when it says one, must agree with the plan too.
        if var == "SLURM_ARRAY_TASK_ID"
            && let Some(max) =
                env("SLURM_ARRAY_TASK_MAX").and_then(|m| m.trim().parse::<u32>().ok())
            && max >= planned
        {
            return Err(format!(
                "--shard auto: the Slurm array goes up to task {max}, but the plan has {planned} shards (0-{}): submit it with --array=0-{}",
                planned.saturating_sub(1),
                planned.saturating_sub(1)
            ));
        }
        if index >= planned {
            return Err(format!(
                "--shard auto: {var}={index}, but the plan has {planned} shards (0-{}): the job's count disagrees with the plan",
                planned.saturating_sub(1)
            ));
        }
        (index, planned)
    } else {
        let (k, n) = spec
            .split_once('/')
            .ok_or_else(|| format!("--shard {spec:?}: use K/N (e.g. 3/64) or auto"))?;
        let k: u32 = k
            .trim()
            .parse()
            .map_err(|_| format!("--shard {spec:?}: {k:?} is not a shard number"))?;
        let n: u32 = n
            .trim()
            .parse()
            .map_err(|_| format!("--shard {spec:?}: {n:?} is not a shard count"))?;
        if n != planned {
            return Err(format!(
                "--shard {spec}: the plan has {planned} shards, not {n}"
            ));
        }
        if k >= n {
            return Err(format!(
                "--shard {spec}: shards are numbered 0 to {}",
                n.saturating_sub(1)
            ));
        }
        (k, n)
    };
    Ok(ShardId { index, count })
}

/// One planned range with what the split saw in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedRange {
    pub range: KeyRange,
    pub objects: u64,
    pub bytes: u64,
}

/// A bounded summary of (key, size) pairs for the split (see the module notes).
#[derive(Debug)]
pub struct Sketch {
    points: BTreeMap<String, (u64, u64)>,
    /// Points kept after a merge (about); merging starts at twice as many.
    target: usize,
    objects: u64,
    bytes: u64,
}

impl Sketch {
    /// A sketch for `shards` ranges (at least 2048 points, 64 per shard).
    pub fn new(shards: u32) -> Sketch {
        Sketch::with_points((shards as usize * 64).max(2048))
    }

    pub fn with_points(target: usize) -> Sketch {
        Sketch {
            points: BTreeMap::new(),
            target: target.max(4),
            objects: 0,
            bytes: 0,
        }
    }

    pub fn objects(&self) -> u64 {
        self.objects
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Points held now (bounded, whatever the number of keys added).
    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    pub fn add(&mut self, key: &str, size: u64) {
        self.objects += 1;
        self.bytes += size;
        match self.points.get_mut(key) {
            Some(p) => {
                p.0 += 1;
                p.1 += size;
            }
            None => {
                self.points.insert(key.to_string(), (1, size));
            }
        }
        if self.points.len() > 4 * self.target {
            self.merge();
        }
    }

    /// An object's weight: its share of the bytes plus its share of the objects, scaled to
    /// integers (objects * total_bytes + bytes * total_objects).
    fn weight(&self, objects: u64, bytes: u64) -> u128 {
        let tb = u128::from(self.bytes.max(1));
        let to = u128::from(self.objects.max(1));
        u128::from(objects) * tb + u128::from(bytes) * to
    }

    fn merge(&mut self) {
        let total = self.weight(self.objects, self.bytes);
        let cap = total / self.target as u128;
        let old = std::mem::take(&mut self.points);
        let mut acc: Option<(String, u64, u64)> = None;
        for (k, (o, b)) in old {
            acc = match acc {
                Some((_, ao, ab)) if self.weight(ao + o, ab + b) <= cap => {
                    Some((k, ao + o, ab + b))
                }
                Some((ak, ao, ab)) => {
                    self.points.insert(ak, (ao, ab));
                    Some((k, o, b))
                }
                None => Some((k, o, b)),
            };
        }
        if let Some((k, o, b)) = acc {
            self.points.insert(k, (o, b));
        }
    }

    /// N contiguous ranges covering every key, each of about 1/N of the weight.
    pub fn split(&self, n: u32) -> Vec<PlannedRange> {
        let n = n.max(1) as usize;
        let total = self.weight(self.objects, self.bytes);
        let mut boundaries: Vec<String> = Vec::with_capacity(n - 1);
        let mut sums = vec![(0u64, 0u64); n];
        let mut cum = (0u64, 0u64);
        let mut shard = 0usize;
        for (k, (o, b)) in &self.points {
            sums[shard].0 += o;
            sums[shard].1 += b;
            cum = (cum.0 + o, cum.1 + b);
            let w = self.weight(cum.0, cum.1);
            // Close ranges while this key reaches their share (several, for a heavy key: the
            // ranges after it stay empty rather than split a key).
            while shard + 1 < n && w * n as u128 >= total * (shard as u128 + 1) {
                boundaries.push(k.clone());
                shard += 1;
            }
        }
        // Ranges the keys did not reach end at the last key (empty), the last one is open.
        let last = boundaries.last().cloned().unwrap_or_default();
        while boundaries.len() < n - 1 {
            boundaries.push(
                self.points
                    .keys()
                    .next_back()
                    .cloned()
                    .unwrap_or_else(|| last.clone()),
            );
        }
        (0..n)
            .map(|k| PlannedRange {
                range: range_of(&boundaries, k),
                objects: sums[k].0,
                bytes: sums[k].1,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boundaries(rs: &[PlannedRange]) -> Vec<String> {
        rs.iter().filter_map(|r| r.range.end.clone()).collect()
    }

    /// Every key in exactly one range, checked against every range (not through shard_of).
    fn exactly_one(rs: &[PlannedRange], key: &str) {
        let holders: Vec<usize> = rs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.range.contains(key))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(holders.len(), 1, "{key:?} is in shards {holders:?}");
        assert_eq!(holders[0], shard_of(&boundaries(rs), key), "{key:?}");
    }

    /// A small deterministic generator (no test randomness crate in the project).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
        fn key(&mut self) -> String {
            const ALPHABET: &[&str] = &[
                "a",
                "b",
                "z",
                "/",
                "0",
                "9",
                "-",
                ".",
                "~",
                "é",
                "ß",
                "\u{7f}",
                "\u{80}",
                "日",
                "😀",
                "\u{10ffff}",
                " ",
                "A",
            ];
            let len = 1 + self.next() % 6;
            (0..len)
                .map(|_| ALPHABET[(self.next() % ALPHABET.len() as u64) as usize])
                .collect()
        }
    }

    #[test]
    fn ranges_cover_every_key_exactly_once_including_keys_added_after_planning() {
        for n in [1u32, 2, 3, 7, 16] {
            let mut g = Lcg(n as u64);
            let mut s = Sketch::with_points(8);
            let planned: Vec<String> = (0..500).map(|_| g.key()).collect();
            for k in &planned {
                s.add(k, g.next() % 5000);
            }
            assert!(s.len() <= 32, "the sketch stays bounded: {}", s.len());
            let rs = s.split(n);
            assert_eq!(rs.len(), n as usize);
            assert_eq!(rs[0].range.start, None);
            assert_eq!(rs[n as usize - 1].range.end, None);
            for w in rs.windows(2) {
                assert_eq!(w[0].range.end, w[1].range.start);
            }
            let later: Vec<String> = (0..500).map(|_| g.key()).collect();
            for k in planned.iter().chain(&later) {
                exactly_one(&rs, k);
            }
            // Edges: the boundaries themselves, the keys right around them, "" and extremes.
            for b in boundaries(&rs) {
                exactly_one(&rs, &b);
                exactly_one(&rs, &format!("{b}\0"));
                exactly_one(&rs, &format!("{b}\u{10ffff}"));
                if let Some(c) = b.chars().last() {
                    exactly_one(&rs, &b[..b.len() - c.len_utf8()]);
                }
            }
            for k in [
                "",
                "\0",
                "\u{10ffff}\u{10ffff}\u{10ffff}\u{10ffff}\u{10ffff}\u{10ffff}",
            ] {
                exactly_one(&rs, k);
            }
        }
    }

    #[test]
    fn a_boundary_key_belongs_to_the_range_it_ends() {
        let b = vec!["m".to_string()];
        assert!(range_of(&b, 0).contains("m"));
        assert!(!range_of(&b, 1).contains("m"));
        assert!(range_of(&b, 1).contains("m\0"));
        assert!(
            range_of(&b, 0).contains(""),
            "shard 0 starts at the beginning"
        );
        assert_eq!(shard_of(&b, "m"), 0);
        assert_eq!(shard_of(&b, "ma"), 1);
    }

    #[test]
    fn byte_order_not_char_order_or_locale() {
        // 'Z' (0x5a) < 'a' (0x61) < 'é' (0xc3 0xa9) < '日' (0xe6 ...) < '😀' (0xf0 ...).
        let b = vec!["a".to_string(), "é".to_string(), "日".to_string()];
        assert_eq!(shard_of(&b, "Z"), 0);
        assert_eq!(shard_of(&b, "b"), 1);
        assert_eq!(shard_of(&b, "éa"), 2);
        assert_eq!(shard_of(&b, "😀"), 3);
        // U+FFFF sorts below U+10000 in UTF-8 bytes as in code points; U+E000 > U+D7FF.
        let b = vec!["\u{ffff}".to_string()];
        assert_eq!(shard_of(&b, "\u{10000}"), 1);
        assert_eq!(shard_of(&b, "\u{e000}"), 0);
    }

    #[test]
    fn balanced_by_bytes_and_objects() {
        // 1000 small objects then 10 huge ones: by bytes alone the small ones would be one shard.
        let mut s = Sketch::new(4);
        for i in 0..1000 {
            s.add(&format!("a/{i:05}"), 1000);
        }
        for i in 0..10 {
            s.add(&format!("b/{i:05}"), 100_000_000);
        }
        let rs = s.split(4);
        assert_eq!(rs.iter().map(|r| r.objects).sum::<u64>(), 1010);
        assert_eq!(
            rs.iter().map(|r| r.bytes).sum::<u64>(),
            1000 * 1000 + 10 * 100_000_000
        );
        // Every range carries a share of the weight (none empty, none more than half).
        for r in &rs {
            let share = r.objects as f64 / 1010.0 + r.bytes as f64 / 1_001_000_000.0;
            assert!(share > 0.2 && share < 0.8, "{r:?}");
        }
        // Even split of equal objects: 1000 objects of one size into 4 ranges of 250.
        let mut s = Sketch::new(4);
        for i in 0..1000 {
            s.add(&format!("{i:05}"), 7);
        }
        let rs = s.split(4);
        assert_eq!(
            rs.iter().map(|r| r.objects).collect::<Vec<_>>(),
            [250, 250, 250, 250]
        );
    }

    #[test]
    fn the_sketch_stays_bounded_and_close_to_balanced_on_a_million_keys() {
        let mut s = Sketch::new(8);
        for i in 0..1_000_000u64 {
            s.add(&format!("k{i:08}"), i % 997);
        }
        assert!(s.len() <= 4 * 2048, "{}", s.len());
        let rs = s.split(8);
        let per = 1_000_000 / 8;
        for r in &rs {
            assert!(
                r.objects.abs_diff(per) < per / 50,
                "within 2% of an even split: {r:?}"
            );
        }
    }

    #[test]
    fn empty_ranges_when_there_are_fewer_keys_than_shards() {
        let mut s = Sketch::new(5);
        s.add("only", 10);
        let rs = s.split(5);
        assert_eq!(rs.len(), 5);
        assert_eq!(rs.iter().filter(|r| r.objects > 0).count(), 1);
        for k in ["", "a", "only", "onlz", "zzz"] {
            exactly_one(&rs, k);
        }
        let rs = Sketch::new(3).split(3);
        for k in ["", "a", "zzz"] {
            exactly_one(&rs, k);
        }
    }

    #[test]
    fn shard_specs_and_auto_from_the_engines() {
        let none = |_: &str| None;
        assert_eq!(
            parse_shard("3/8", 8, none),
            Ok(ShardId { index: 3, count: 8 })
        );
        assert!(
            parse_shard("3/4", 8, none)
                .unwrap_err()
                .contains("plan has 8")
        );
        assert!(parse_shard("8/8", 8, none).is_err());
        assert!(parse_shard("x/8", 8, none).is_err());
        assert!(parse_shard("3", 8, none).is_err());
        assert!(
            parse_shard("auto", 8, none)
                .unwrap_err()
                .contains("JOB_COMPLETION_INDEX")
        );
        let k8s = |v: &str| (v == "JOB_COMPLETION_INDEX").then(|| "5".to_string());
        assert_eq!(parse_shard("auto", 8, k8s).unwrap().index, 5);
        let slurm = |v: &str| match v {
            "SLURM_ARRAY_TASK_ID" => Some("2".to_string()),
            "SLURM_ARRAY_TASK_MAX" => Some("3".to_string()),
            _ => None,
        };
        assert_eq!(parse_shard("auto", 4, slurm).unwrap().index, 2);
        // The array is 0-3, the plan has 2 shards: refused.
        assert!(parse_shard("auto", 2, slurm).unwrap_err().contains("0-1"));
        let far = |v: &str| (v == "JOB_COMPLETION_INDEX").then(|| "9".to_string());
        assert!(
            parse_shard("auto", 8, far)
                .unwrap_err()
                .contains("disagrees")
        );
    }

    #[test]
    fn progress_keys_are_recognised_anywhere() {
        assert!(is_progress_key(".moverctl-progress/p/shard-0/x"));
        assert!(is_progress_key("data/.moverctl-progress/x"));
        assert!(!is_progress_key("data/moverctl-progress/x"));
        assert!(!is_progress_key("x.moverctl-progress/y"));
    }
}
