//! The run's join over several key ranges at once: parallel listing, and work spread across
//! prefixes.
//!
//! A run starts with one range (the whole location, or a shard's range) listed and joined as
//! always: one sorted source stream, one sorted destination stream, one [`Differ`]. Once that
//! join has passed [`CopyOptions::list_split_after`] source keys (a listing of more than a few
//! pages; a small run never makes a request more), the rest of the range is sampled for split
//! points ([`crate::store::split`]) and cut into up to [`CopyOptions::list_streams`] sub-ranges:
//! the first join is cut at the first boundary above every key it has seen on either side (so
//! no key is joined twice or skipped), and each further sub-range gets its own source and
//! destination listing and its own join, every one a sorted listing with all of its checks
//! (order, a page that cannot be continued, keys outside the prefix).
//!
//! Each join runs on its own task, a bounded channel ahead of the run's loop, which takes the
//! joins' items in turn (round-robin, skipping one that has nothing ready). So the listings page
//! concurrently, and the objects in flight come from every sub-range at once: on a store whose
//! request rate is limited per key prefix (S3: 3,500 PUT and 5,500 GET per second per prefix),
//! a run is not held to one prefix's rate by copying in key order. Memory is bounded by the
//! number of ranges: each holds a listing page, [`LIST_AHEAD`] entries per side and its channel.

use super::diff::{DiffError, Differ, JoinPolicy, Joined};
use super::{CopyOptions, LIST_AHEAD};
use crate::journal::Journal;
use crate::shard::KeyRange;
use crate::store::Store;
use crate::store::list::{ListError, Listed, list_counted, list_destination, prefetch};
use crate::store::split;
use futures::stream::{BoxStream, StreamExt};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// Items of one join waiting for the run's loop (fewer when the run cuts after fewer keys, so
/// that the first join is not far ahead of the copies when it is cut).
const JOIN_AHEAD: usize = 256;

type Item = Result<Joined, DiffError>;
type Listing = BoxStream<'static, Result<Listed, ListError>>;

/// Where the first join may be cut: the greatest key it has seen on either side, whether its
/// source listing ended, and the cut once made.
#[derive(Default)]
struct Cut {
    seen: Option<String>,
    source_ended: bool,
    end: Option<String>,
    /// Source keys passed, and the signal to sample once there are enough.
    passed: usize,
    trigger: Option<oneshot::Sender<()>>,
}

/// The listings, the journal and the counters every join of a run shares.
#[derive(Clone)]
struct Shared {
    src: Store,
    dst: Store,
    policy: JoinPolicy,
    journal: Option<Arc<Mutex<Journal>>>,
    list_src: Arc<AtomicU64>,
    list_dst: Arc<AtomicU64>,
    dst_objects: Arc<AtomicU64>,
    /// Capacity of each join's channel.
    ahead: usize,
}

/// The joins of a run, taken in turn.
pub(super) struct Joins {
    ready: Vec<mpsc::Receiver<Item>>,
    /// Joins of further sub-ranges, as the sampler starts them.
    more: Option<mpsc::UnboundedReceiver<mpsc::Receiver<Item>>>,
    turn: usize,
    dst_objects: Arc<AtomicU64>,
}

impl Joins {
    /// The first join over the whole range, and (when the source can be split and the run asks
    /// for more than one stream) the sampler that cuts it later.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start(
        src: Store,
        dst: Store,
        opts: &CopyOptions,
        policy: JoinPolicy,
        journal: Option<Arc<Mutex<Journal>>>,
        list_src: Arc<AtomicU64>,
        list_dst: Arc<AtomicU64>,
    ) -> Joins {
        // --files-from is read alongside one listing, in its key order; an inventory is the
        // source side already (no listing to split).
        let split = opts.list_streams > 1
            && split::splittable(&src)
            && opts.select.files_from.is_none()
            && opts.inventory.is_none();
        let shared = Shared {
            src,
            dst,
            policy,
            journal,
            list_src,
            list_dst,
            dst_objects: Arc::new(AtomicU64::new(0)),
            ahead: opts.list_split_after.clamp(1, JOIN_AHEAD),
        };
        let (trigger, sample) = oneshot::channel();
        let cut = Arc::new(Mutex::new(Cut {
            trigger: split.then_some(trigger),
            ..Default::default()
        }));
        let src_list = prefetch(
            source_listing(&shared.src, opts, shared.list_src.clone()),
            LIST_AHEAD,
        );
        let dst_list = prefetch(
            list_destination(&shared.dst, shared.list_dst.clone()),
            LIST_AHEAD,
        );
        let after = opts.list_split_after.max(1);
        let first = spawn_join(
            &shared,
            guarded(src_list, cut.clone(), Some(after)),
            guarded(dst_list, cut.clone(), None),
        );
        let more = split.then(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(sampler(shared.clone(), cut, opts.list_streams, sample, tx));
            rx
        });
        Joins {
            ready: vec![first],
            more,
            turn: 0,
            dst_objects: shared.dst_objects,
        }
    }

    /// Destination objects the joins have passed (all of them once every join has ended).
    pub(super) fn dst_objects(&self) -> u64 {
        self.dst_objects.load(Relaxed)
    }

    /// The next item of any join, taking the joins in turn; None once every join has ended.
    pub(super) async fn next(&mut self) -> Option<Item> {
        loop {
            while let Some(rx) = self.more.as_mut().and_then(|m| m.try_recv().ok()) {
                self.ready.push(rx);
            }
            let n = self.ready.len();
            let mut closed = false;
            for i in 0..n {
                let k = (self.turn + i) % n;
                match self.ready[k].try_recv() {
                    Ok(item) => {
                        self.turn = k + 1;
                        return Some(item);
                    }
                    Err(mpsc::error::TryRecvError::Empty) => {}
                    Err(mpsc::error::TryRecvError::Disconnected) => closed = true,
                }
            }
            if closed {
                // An ended join's channel: drop it (its items were all taken above).
                self.ready.retain(|rx| !(rx.is_closed() && rx.is_empty()));
                continue;
            }
            if self.ready.is_empty() && self.more.is_none() {
                return None;
            }
            match self.wait().await {
                Woke::Item(k, Some(item)) => {
                    self.turn = k + 1;
                    return Some(item);
                }
                Woke::Item(k, None) => {
                    self.ready.remove(k);
                }
                Woke::Started(Some(rx)) => self.ready.push(rx),
                Woke::Started(None) => self.more = None,
            }
        }
    }

    /// Waits until a join has an item (or ends), or the sampler starts a join (or ends).
    async fn wait(&mut self) -> Woke {
        let ready = &mut self.ready;
        let more = &mut self.more;
        tokio::select! {
            started = async { more.as_mut().expect("checked").recv().await }, if more.is_some() => {
                Woke::Started(started)
            }
            // Built only when polled: `select_all` of no future panics.
            (item, k, _) = async {
                futures::future::select_all(ready.iter_mut().map(|r| Box::pin(r.recv()))).await
            }, if !ready.is_empty() => Woke::Item(k, item),
        }
    }
}

/// What [`Joins::wait`] woke for.
enum Woke {
    /// Join `k`'s next item, or None: it ended.
    Item(usize, Option<Item>),
    /// A join the sampler started, or None: the sampler is done.
    Started(Option<mpsc::Receiver<Item>>),
}

/// One join on its own task, its items into a channel; the receiver is the run's.
fn spawn_join(shared: &Shared, src: Listing, dst: Listing) -> mpsc::Receiver<Item> {
    let (tx, rx) = mpsc::channel(shared.ahead);
    let mut differ = Differ::with_policy(src, dst, shared.policy);
    let journal = shared.journal.clone();
    let count = shared.dst_objects.clone();
    tokio::spawn(async move {
        while let Some(item) = differ.next(journal.as_deref()).await {
            let failed = item.is_err();
            if tx.send(item).await.is_err() || failed {
                break;
            }
        }
        count.fetch_add(differ.dst_objects(), Relaxed);
        drop(tx);
    });
    rx
}

/// A listing of the first join, watched for the cut: each key it hands out is recorded as seen,
/// and once the cut is made it ends after the cut's key. The source side (`after`: how many keys
/// before sampling) also starts the sampler and records where it ended.
fn guarded(listing: Listing, cut: Arc<Mutex<Cut>>, after: Option<usize>) -> Listing {
    let ended = cut.clone();
    listing
        .take_while(move |item| {
            let mut c = cut.lock().expect("cut lock");
            let Ok(l) = item else {
                return futures::future::ready(true);
            };
            let key = l.key();
            if c.end
                .as_deref()
                .is_some_and(|e| key.as_bytes() > e.as_bytes())
            {
                return futures::future::ready(false);
            }
            if c.seen
                .as_deref()
                .is_none_or(|s| key.as_bytes() > s.as_bytes())
            {
                c.seen = Some(key.to_string());
            }
            if let Some(after) = after {
                c.passed += 1;
                if c.passed >= after
                    && let Some(t) = c.trigger.take()
                {
                    let _ = t.send(());
                }
            }
            futures::future::ready(true)
        })
        .chain(futures::stream::poll_fn(move |_| {
            if after.is_some() {
                let mut c = ended.lock().expect("cut lock");
                c.source_ended = true;
                // Never sampled: the sampler stops.
                c.trigger = None;
            }
            std::task::Poll::Ready(None)
        }))
        .boxed()
}

/// Waits for the first join to pass enough keys, samples what lies beyond the last key it has
/// seen, cuts it there and starts a join for each further sub-range.
async fn sampler(
    shared: Shared,
    cut: Arc<Mutex<Cut>>,
    streams: usize,
    sample: oneshot::Receiver<()>,
    started: mpsc::UnboundedSender<mpsc::Receiver<Item>>,
) {
    // Not yet sampled when the run stops taking items: nothing to start.
    let go = tokio::select! {
        r = sample => r.is_ok(),
        _ = started.closed() => false,
    };
    if !go {
        return;
    }
    let whole = shared.src.range.clone().unwrap_or_default();
    let from = KeyRange {
        start: cut.lock().expect("cut lock").seen.clone(),
        end: whole.end.clone(),
    };
    let rest = split::intersect(&from, Some(&whole));
    let bounds = split::split_points(&shared.src, &rest, streams, shared.list_src.clone()).await;
    let bounds = {
        let mut c = cut.lock().expect("cut lock");
        if c.source_ended {
            return;
        }
        let seen = c.seen.clone();
        let bounds: Vec<String> = bounds
            .into_iter()
            .filter(|b| seen.as_deref().is_none_or(|s| b.as_bytes() > s.as_bytes()))
            .collect();
        if bounds.is_empty() {
            return;
        }
        c.end = Some(bounds[0].clone());
        bounds
    };
    tracing::debug!(target: "moverctl::list", "listing {} as {} ranges from {:?}", shared.src.shown(), bounds.len() + 1, bounds[0]);
    // The first sub-range is the first join's; every other one gets its own.
    for range in split::sub_ranges(&whole, &bounds).into_iter().skip(1) {
        let mut src = shared.src.clone();
        src.range = Some(range.clone());
        let mut dst = shared.dst.clone();
        dst.range = Some(split::intersect(&range, shared.dst.range.as_ref()));
        let rx = spawn_join(
            &shared,
            prefetch(
                list_counted(&src, None, shared.list_src.clone()),
                LIST_AHEAD,
            ),
            prefetch(list_destination(&dst, shared.list_dst.clone()), LIST_AHEAD),
        );
        if started.send(rx).is_err() {
            return;
        }
    }
}

/// The source side of the run: its listing, or `--inventory`'s objects (no request).
pub(super) fn source_listing(
    src: &Store,
    opts: &CopyOptions,
    requests: Arc<AtomicU64>,
) -> futures::stream::BoxStream<
    'static,
    Result<crate::store::list::Listed, crate::store::list::ListError>,
> {
    match &opts.inventory {
        Some(inv) => inv.listing(src),
        None => list_counted(src, None, requests),
    }
}
