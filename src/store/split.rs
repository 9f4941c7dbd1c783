//! Split points for listing one key range as several streams at once.
//!
//! One ordered listing is one request after another: 1 M keys are 1,000 pages, each a round
//! trip. To list faster the range is cut into sub-ranges listed concurrently, each an ordinary
//! listing of [`super::list`] (its own `start-after` and end, every check of a listing kept).
//!
//! Where to cut is found by sampling the keys with `start-after` requests of one key each
//! ([`Prober::first_after`]): the characters that follow a prefix are walked one request per
//! character (after `p` + `c` comes the first key above `p` + the character after `c`), starting
//! from the empty prefix and descending into the cells found until there are enough of them
//! (`d0000/…` … `d0999/…` gives `d` → `d0` → ten cells `d00`…`d09`; hexadecimal names give 16 at
//! the first level). The cells are taken to be about equal, and every `n / streams`-th one
//! starts a new sub-range. A boundary is a key prefix `b`; the sub-ranges are `(b_i, b_i+1]`, so
//! they cover the range exactly whatever the sampling found: a poor sample only makes the
//! sub-ranges unequal, never loses or repeats a key.
//!
//! The sampling is bounded ([`MAX_PROBES`] requests), and a probe that fails only ends the
//! sampling early: the sub-ranges' own listings meet the error and report it.

use super::list::list_counted;
use super::{Kind, Store};
use crate::shard::KeyRange;
use futures::StreamExt;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

/// At most this many one-key LIST requests to find the split points.
pub const MAX_PROBES: u32 = 200;
/// At most this many characters are walked after one prefix.
const MAX_FANOUT: usize = 64;
/// Prefixes are descended at most this many characters deep.
const MAX_DEPTH: usize = 24;

/// Whether a store's listing can be split: cloud stores, whose listings start after a key on
/// the server. A local folder is walked from its beginning whatever the range, so it is not.
pub fn splittable(store: &Store) -> bool {
    store.kind != Kind::Local && store.single.is_none()
}

/// Samples keys with one-key listings inside `range` of `store`.
struct Prober {
    store: Store,
    end: Option<String>,
    requests: Arc<AtomicU64>,
    left: u32,
}

impl Prober {
    /// The first key after `after` (from the range's start when None) up to the range's end;
    /// None when there is none, the budget is spent, or the request failed.
    async fn first_after(&mut self, after: Option<&str>) -> Option<String> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let mut s = self.store.clone();
        s.range = Some(KeyRange {
            start: after.map(str::to_string),
            end: self.end.clone(),
        });
        let mut listing = list_counted(&s, Some(1), self.requests.clone());
        match listing.next().await {
            Some(Ok(l)) => Some(l.key().to_string()),
            _ => None,
        }
    }

    /// The cells one character below `p`: each `p` + `c` for the characters `c` that follow `p`
    /// in keys from `first` on (a key of the range that starts with `p`), with the first key
    /// found in it.
    async fn children(&mut self, p: &str, first: String) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut k = Some(first);
        while let Some(key) = k.take() {
            let Some(rest) = key.strip_prefix(p) else {
                break;
            };
            let Some(c) = rest.chars().next() else {
                // The key is `p` itself: it belongs to no cell below it.
                k = self.first_after(Some(p)).await;
                continue;
            };
            out.push((format!("{p}{c}"), key.clone()));
            if out.len() >= MAX_FANOUT {
                break;
            }
            // Every key that starts with `p` + `c` sorts below `p` + the next character.
            let Some(next) = successor(c) else { break };
            k = self.first_after(Some(&format!("{p}{next}"))).await;
        }
        out
    }
}

/// The character after `c` (surrogates skipped); None after the last one.
fn successor(c: char) -> Option<char> {
    (c as u32 + 1..=char::MAX as u32).find_map(char::from_u32)
}

/// Up to `streams - 1` boundaries inside `range` of `store` (increasing, each above the range's
/// start and below its end), where the listing can be cut into sub-ranges of about equal size.
/// Empty when the range holds too few distinct prefixes to cut, or `streams` is 1.
pub async fn split_points(
    store: &Store,
    range: &KeyRange,
    streams: usize,
    requests: Arc<AtomicU64>,
) -> Vec<String> {
    if streams < 2 || !splittable(store) {
        return Vec::new();
    }
    let mut p = Prober {
        store: store.clone(),
        end: range.end.clone(),
        requests,
        left: MAX_PROBES,
    };
    let Some(first) = p.first_after(range.start.as_deref()).await else {
        return Vec::new();
    };
    let mut cells = vec![(String::new(), first)];
    for _ in 0..MAX_DEPTH {
        if cells.len() >= streams || p.left == 0 {
            break;
        }
        let mut next = Vec::with_capacity(cells.len());
        let mut deeper = false;
        for (prefix, first) in cells {
            let below = p.children(&prefix, first.clone()).await;
            if below.is_empty() {
                next.push((prefix, first));
            } else {
                deeper = true;
                next.extend(below);
            }
        }
        cells = next;
        if !deeper {
            break;
        }
    }
    boundaries(&cells, streams, range)
}

/// Every `n / streams`-th cell's prefix, kept where it lies strictly inside `range` and above
/// the boundary before it.
fn boundaries(cells: &[(String, String)], streams: usize, range: &KeyRange) -> Vec<String> {
    let n = cells.len();
    let mut out: Vec<String> = Vec::new();
    for g in 1..streams.min(n) {
        let b = &cells[g * n / streams].0;
        let inside = range.after_start(b) && !range.past_end(b) && range.end.as_ref() != Some(b);
        if inside && out.last().is_none_or(|l| l.as_bytes() < b.as_bytes()) {
            out.push(b.clone());
        }
    }
    out
}

/// The sub-ranges of `range` cut at `bounds` (increasing, inside the range).
pub fn sub_ranges(range: &KeyRange, bounds: &[String]) -> Vec<KeyRange> {
    let mut out = Vec::with_capacity(bounds.len() + 1);
    let mut start = range.start.clone();
    for b in bounds {
        out.push(KeyRange {
            start,
            end: Some(b.clone()),
        });
        start = Some(b.clone());
    }
    out.push(KeyRange {
        start,
        end: range.end.clone(),
    });
    out
}

/// `a` within `b`: the later start and the earlier end.
pub fn intersect(a: &KeyRange, b: Option<&KeyRange>) -> KeyRange {
    let Some(b) = b else { return a.clone() };
    let later = |x: &Option<String>, y: &Option<String>| match (x, y) {
        (Some(x), Some(y)) => Some(if x.as_bytes() >= y.as_bytes() { x } else { y }.clone()),
        (x, y) => x.clone().or_else(|| y.clone()),
    };
    let earlier = |x: &Option<String>, y: &Option<String>| match (x, y) {
        (Some(x), Some(y)) => Some(if x.as_bytes() <= y.as_bytes() { x } else { y }.clone()),
        (x, y) => x.clone().or_else(|| y.clone()),
    };
    KeyRange {
        start: later(&a.start, &b.start),
        end: earlier(&a.end, &b.end),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start: Option<&str>, end: Option<&str>) -> KeyRange {
        KeyRange {
            start: start.map(str::to_string),
            end: end.map(str::to_string),
        }
    }

    #[test]
    fn sub_ranges_cover_the_range_exactly() {
        let whole = r(Some("a"), Some("z"));
        let subs = sub_ranges(&whole, &["d".into(), "m".into()]);
        assert_eq!(
            subs,
            vec![
                r(Some("a"), Some("d")),
                r(Some("d"), Some("m")),
                r(Some("m"), Some("z"))
            ]
        );
        // Every key lies in exactly one sub-range, and only keys of the range do.
        for k in [
            "a",
            "a0",
            "c~",
            "d",
            "d0",
            "m",
            "m\u{10FFFF}",
            "z",
            "z0",
            "é",
        ] {
            let n = subs.iter().filter(|s| s.contains(k)).count();
            assert_eq!(n, usize::from(whole.contains(k)), "{k}");
        }
    }

    #[test]
    fn boundaries_are_every_nth_cell_inside_the_range() {
        let cells: Vec<(String, String)> = (0..10)
            .map(|i| (format!("d0{i}"), format!("d0{i}00/f")))
            .collect();
        assert_eq!(boundaries(&cells, 4, &r(None, None)), ["d02", "d05", "d07"]);
        // Outside the range or not increasing: dropped.
        assert_eq!(boundaries(&cells, 4, &r(Some("d03"), Some("d07"))), ["d05"]);
        assert!(boundaries(&cells[..1], 8, &r(None, None)).is_empty());
    }

    #[test]
    fn successor_skips_surrogates_and_ends() {
        assert_eq!(successor('a'), Some('b'));
        assert_eq!(successor('\u{D7FF}'), Some('\u{E000}'));
        assert_eq!(successor(char::MAX), None);
    }

    #[test]
    fn intersect_takes_the_narrower_bounds() {
        let a = r(Some("b"), None);
        assert_eq!(
            intersect(&a, Some(&r(Some("a"), Some("m")))),
            r(Some("b"), Some("m"))
        );
        assert_eq!(intersect(&a, None), a);
    }

    async fn memory_with(keys: &[String]) -> Store {
        use object_store::{ObjectStoreExt, PutPayload};
        let s = Store::open("memory://split/", &Default::default()).unwrap();
        for k in keys {
            let path = object_store::path::Path::from(format!("split/{k}"));
            s.inner
                .put(&path, PutPayload::from_static(b"x"))
                .await
                .unwrap();
        }
        s
    }

    #[tokio::test]
    async fn folders_are_found_and_cut_evenly_with_few_requests() {
        // 40 folders of 5 keys: d00/ … d39/.
        let keys: Vec<String> = (0..200).map(|i| format!("d{:02}/f{i:04}", i / 5)).collect();
        let store = memory_with(&keys).await;
        let requests = Arc::new(AtomicU64::new(0));
        let whole = KeyRange::default();
        let b = split_points(&store, &whole, 4, requests.clone()).await;
        assert_eq!(b, ["d1", "d2", "d3"], "cells d0 … d3, one a stream");
        let used = requests.load(std::sync::atomic::Ordering::Relaxed);
        assert!(used <= 20, "{used} probes");
        let subs = sub_ranges(&whole, &b);
        for k in &keys {
            assert_eq!(subs.iter().filter(|s| s.contains(k)).count(), 1, "{k}");
        }
        // A later start: only what lies after it is cut.
        let rest = KeyRange {
            start: Some("d25/f0127".into()),
            end: None,
        };
        let b = split_points(&store, &rest, 2, requests.clone()).await;
        assert_eq!(b.len(), 1);
        assert!(b[0].as_str() > "d25/f0127", "{b:?}");
        // One key, or one stream: nothing to cut.
        let one = memory_with(&["only".to_string()]).await;
        assert!(
            split_points(&one, &whole, 8, requests.clone())
                .await
                .is_empty()
        );
        assert!(split_points(&store, &whole, 1, requests).await.is_empty());
    }
}
