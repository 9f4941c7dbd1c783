//! Listing: a stream of entries in byte order of the key, in constant memory, on every store.
//!
//! A listing ends where the store's listing ends, or in an error: `sync --delete` deletes what a
//! listing leaves out, so a listing cut short must never look complete.
//!
//! - **S3**: moverctl requests and reads each ListObjectsV2 page itself ([`super::s3list`]), one
//!   page in memory at a time. A page that fails to arrive (a reset, a body that breaks off or
//!   does not parse, a 5xx / 429) is retried under the one policy of [`super::retry`]. A page
//!   that says more follows (`IsTruncated`) but has no continuation token, that hands back the
//!   token it was asked with, or that comes after [`MAX_EMPTY_PAGES`] empty pages in a row, ends
//!   the listing with [`ListError::Broken`], as does a key outside the requested prefix.
//! - **GCS, Azure**: object_store's `PaginatedListStore`, each page retried under the same
//!   policy when it fails in transit (object_store itself does not retry a body that breaks off).
//!   A key object_store refuses fails its whole page there; the lister then re-reads from the
//!   last good key with pages half as large, down to a page of one key that holds only the
//!   refused key (about ten extra requests per refused key), and goes on after it.
//!
//! Directory markers (zero-byte objects whose key ends in '/', as consoles create for
//! "folders") are not objects and are left out: object_store's `Path` would drop the '/' and name
//! another key. On S3 they are seen in the listing; on GCS and Azure object_store hands them out
//! without the '/', so an empty object is looked up (HEAD) by the name it was listed under, and
//! one that is not found there is taken for a marker. A key ending in '/' that holds bytes is
//! reported as [`Listed::Refused`], like every key object_store refuses or would name otherwise
//! (`a//b`, `.` or `..` segments, control characters, a leading '/').
//!
//! Every store's order is checked: a key that is not greater than the one before ends the
//! listing with [`ListError::Unsorted`], because everything downstream merge-joins sorted streams.
//!
//! What a listing yields ([`Entry`], [`Listed`], [`ListError`]) is declared in `super::entry`,
//! which the local folder walk shares, and re-exported here.

pub use super::entry::{Entry, ListError, Listed};
use super::s3list::{Page, PageError, RawEntry, S3Pages};
use super::{Kind, Store, retry};
use chrono::DateTime;
use futures::stream::{self, BoxStream, StreamExt};
use object_store::list::PaginatedListOptions;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Empty pages in a row that say more follows before the listing is taken to be going nowhere.
pub const MAX_EMPTY_PAGES: u32 = 1000;

/// The refused key named by an object_store path error, if that is what the error is.
fn refused_key(e: &object_store::Error) -> Option<(String, String)> {
    use object_store::path::Error as P;
    let object_store::Error::InvalidPath { source } = e else {
        return None;
    };
    match source {
        P::EmptySegment { path } | P::BadSegment { path, .. } | P::NonUnicode { path, .. } => {
            Some((path.clone(), path_reason(source)))
        }
        _ => None,
    }
}

/// Why object_store refuses a key.
fn path_reason(e: &object_store::path::Error) -> String {
    use object_store::path::Error as P;
    match e {
        P::EmptySegment { .. } => "empty path segment ('//')".into(),
        P::BadSegment { source, .. } => source.to_string(),
        P::NonUnicode { .. } => "not valid UTF-8".into(),
        other => other.to_string(),
    }
}

/// Sorted, streaming listing of everything under the store's location.
pub fn list(store: &Store) -> BoxStream<'static, Result<Listed, ListError>> {
    list_pages_of(store, None)
}

/// As [`list`], asking cloud stores for pages of at most `page_size` keys (tests use it to cross
/// many page boundaries with few objects).
pub fn list_pages_of(
    store: &Store,
    page_size: Option<usize>,
) -> BoxStream<'static, Result<Listed, ListError>> {
    list_counted(store, page_size, Arc::new(AtomicU64::new(0)))
}

/// The listing of a run's destination: as [`list_counted`], and a local folder's walk removes
/// temporary files left by a writer that is gone (see [`super::local`]).
pub fn list_destination(
    store: &Store,
    requests: Arc<AtomicU64>,
) -> BoxStream<'static, Result<Listed, ListError>> {
    match (store.kind, &store.local_root, &store.single) {
        // The same checks as every listing (key order, a shard's range, progress records).
        (Kind::Local, Some(root), None) => ranged(
            ordered(super::local::walk_destination(root.clone()), store.shown()),
            store.range.clone(),
        ),
        _ => list_counted(store, None, requests),
    }
}

/// As [`list_pages_of`], counting the LIST requests made in `requests` (for the run's report).
pub fn list_counted(
    store: &Store,
    page_size: Option<usize>,
    requests: Arc<AtomicU64>,
) -> BoxStream<'static, Result<Listed, ListError>> {
    if let Some(one) = store.single.clone() {
        return single(store, one, page_size, requests);
    }
    let inner = match store.kind {
        Kind::Local => {
            super::local::walk(store.local_root.clone().expect("local stores have a root"))
        }
        Kind::Memory => {
            let prefix = store.prefix.clone();
            let p = (!prefix.is_empty())
                .then(|| object_store::path::Path::from(prefix.trim_end_matches('/')));
            let location = store.shown();
            store
                .inner
                .list(p.as_ref())
                .map(move |r| match r {
                    Ok(m) => Ok(Listed::Object(entry(&prefix, m))),
                    Err(source) => Err(ListError::Store {
                        location: location.clone(),
                        source,
                    }),
                })
                .boxed()
        }
        Kind::S3 if store.s3.is_some() => s3_listing(store, page_size, requests),
        _ => paged(store, page_size, requests),
    };
    let loc = store.location.clone();
    ranged(ordered(inner, store.shown()), store.range.clone())
        .map(move |r| r.map_err(|e| e.naming_bucket(&loc)))
        .boxed()
}

/// Leaves out progress records ([`crate::shard::is_progress_key`]: never data) and, for a shard,
/// every key outside its range: keys up to its start (a store whose offset is inclusive, or a
/// local folder, which is walked from its beginning) and, as the listing is sorted, everything
/// from the first key past its end on, where the listing stops (no further page is asked for).
fn ranged(
    s: BoxStream<'static, Result<Listed, ListError>>,
    range: Option<crate::shard::KeyRange>,
) -> BoxStream<'static, Result<Listed, ListError>> {
    let s = s.filter(|item| {
        futures::future::ready(
            item.as_ref()
                .map_or(true, |l| !crate::shard::is_progress_key(l.key())),
        )
    });
    let Some(range) = range else {
        return s.boxed();
    };
    let end = range.clone();
    s.filter(move |item| {
        futures::future::ready(item.as_ref().map_or(true, |l| range.after_start(l.key())))
    })
    .take_while(move |item| {
        futures::future::ready(item.as_ref().map_or(true, |l| !end.past_end(l.key())))
    })
    .boxed()
}

/// The listing of a store used for one object: a local file is looked at directly (its folder is
/// not walked); a cloud location is listed and everything but the key is passed over.
fn single(
    store: &Store,
    one: super::SingleKey,
    page_size: Option<usize>,
    requests: Arc<AtomicU64>,
) -> BoxStream<'static, Result<Listed, ListError>> {
    if let Some(root) = &store.local_root {
        let path = root.join(&one.key);
        let found = match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => Some(Ok(Listed::Object(Entry {
                key: one.listed_as,
                size: m.len(),
                last_modified: m.modified().map(DateTime::from).unwrap_or_default(),
                e_tag: Some(super::local::local_etag(&m)),
            }))),
            Ok(m) => Some(Ok(Listed::Refused {
                key: one.listed_as,
                reason: format!(
                    "{} is {}",
                    path.display(),
                    super::local::file_kind(&m.file_type())
                ),
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => Some(Err(ListError::Local {
                location: store.shown(),
                message: format!("{}: {e}", path.display()),
            })),
        };
        return stream::iter(found).boxed();
    }
    let mut all = store.clone();
    all.single = None;
    list_counted(&all, page_size, requests)
        .filter_map(move |item| {
            let out = match item {
                Ok(Listed::Object(mut e)) if e.key == one.key => {
                    e.key = one.listed_as.clone();
                    Some(Ok(Listed::Object(e)))
                }
                Ok(Listed::Refused { key, reason }) if key == one.key => {
                    Some(Ok(Listed::Refused {
                        key: one.listed_as.clone(),
                        reason,
                    }))
                }
                Ok(_) => None,
                Err(e) => Some(Err(e)),
            };
            async move { out }
        })
        .boxed()
}

fn entry(prefix: &str, m: object_store::ObjectMeta) -> Entry {
    let full = m.location.as_ref();
    Entry {
        key: full.strip_prefix(prefix).unwrap_or(full).to_string(),
        size: m.size,
        last_modified: m.last_modified,
        e_tag: m.e_tag,
    }
}

fn ordered(
    s: BoxStream<'static, Result<Listed, ListError>>,
    location: String,
) -> BoxStream<'static, Result<Listed, ListError>> {
    let mut prev: Option<String> = None;
    let mut failed = false;
    s.map(move |item| {
        if failed {
            return None;
        }
        let item = match item {
            Ok(l) => l,
            Err(e) => {
                failed = true;
                return Some(Err(e));
            }
        };
        if let Some(p) = &prev
            && item.key().as_bytes() <= p.as_bytes()
        {
            failed = true;
            return Some(Err(ListError::Unsorted {
                location: location.clone(),
                prev: p.clone(),
                key: item.key().to_string(),
            }));
        }
        prev = Some(item.key().to_string());
        Some(Ok(item))
    })
    .take_while(|x| futures::future::ready(x.is_some()))
    .filter_map(futures::future::ready)
    .boxed()
}

/// The S3 listing: pages from [`S3Pages`], checked and classified one page at a time.
struct S3State {
    pages: S3Pages,
    requests: Arc<AtomicU64>,
    location: String,
    prefix: String,
    /// The token the last page was asked with.
    token: Option<String>,
    /// The last full key listed, markers included.
    prev: Option<String>,
    /// Empty pages in a row.
    empty: u32,
    buffer: VecDeque<Result<Listed, ListError>>,
    done: bool,
}

fn s3_listing(
    store: &Store,
    page_size: Option<usize>,
    requests: Arc<AtomicU64>,
) -> BoxStream<'static, Result<Listed, ListError>> {
    let s3 = store.s3.clone().expect("an S3 store");
    let st = S3State {
        pages: S3Pages::new(
            s3,
            store.s3_anonymous,
            store.prefix.clone(),
            page_size,
            store.observer.clone(),
            store.retry_window,
        )
        .credentials(store.aws_credentials.clone())
        .start_after(
            store
                .range
                .as_ref()
                .and_then(|r| r.start.as_ref())
                .map(|s| format!("{}{s}", store.prefix)),
        ),
        requests,
        location: store.shown(),
        prefix: store.prefix.clone(),
        token: None,
        prev: None,
        empty: 0,
        buffer: VecDeque::new(),
        done: false,
    };
    stream::unfold(st, |mut st| async move {
        loop {
            if let Some(item) = st.buffer.pop_front() {
                return Some((item, st));
            }
            if st.done {
                return None;
            }
            match st.pages.page(st.token.as_deref(), &st.requests).await {
                Ok(page) => st.take(page),
                Err(e) => {
                    st.done = true;
                    let err = match e {
                        PageError::Sign(source) => ListError::Store {
                            location: st.location.clone(),
                            source,
                        },
                        PageError::Denied(answer) => ListError::Store {
                            location: st.location.clone(),
                            source: object_store::Error::PermissionDenied {
                                path: st.prefix.clone(),
                                source: Box::new(answer),
                            },
                        },
                        // The last status stays a value (see `ListError::kind`).
                        PageError::Failed { status, message } => ListError::Broken {
                            location: st.location.clone(),
                            status,
                            message,
                        },
                    };
                    return Some((Err(err), st));
                }
            }
        }
    })
    .boxed()
}

impl S3State {
    fn broken(&self, message: String) -> ListError {
        ListError::Broken {
            location: self.location.clone(),
            status: None,
            message,
        }
    }

    fn fail(&mut self, e: ListError) {
        self.buffer.push_back(Err(e));
        self.done = true;
    }

    fn after(&self) -> String {
        match &self.prev {
            Some(k) => format!("after {k:?}"),
            None => "before any key".into(),
        }
    }

    /// Queues a page's entries and decides whether and how the listing goes on.
    fn take(&mut self, page: Page) {
        let listed = page.entries.len();
        for e in page.entries {
            match self.classify(e) {
                Ok(Some(l)) => self.buffer.push_back(Ok(l)),
                Ok(None) => {}
                Err(err) => return self.fail(err),
            }
        }
        if !page.truncated {
            self.done = true;
            return;
        }
        let Some(next) = page.next_token else {
            let m = format!(
                "the store says the listing goes on (IsTruncated) but gives no continuation token {}; a listing cut short here would look complete",
                self.after()
            );
            return self.fail(self.broken(m));
        };
        if self.token.as_deref() == Some(next.as_str()) {
            let m = format!(
                "the store answered a continuation token with the same token {}; the listing would go round in a circle",
                self.after()
            );
            return self.fail(self.broken(m));
        }
        if listed == 0 {
            self.empty += 1;
            if self.empty >= MAX_EMPTY_PAGES {
                let m = format!(
                    "{} empty pages in a row, each saying more follows {}; giving up",
                    self.empty,
                    self.after()
                );
                return self.fail(self.broken(m));
            }
        } else {
            self.empty = 0;
        }
        self.token = Some(next);
    }

    /// An entry, a refused key, nothing (a directory marker), or the listing's end (a key outside
    /// the prefix or out of order).
    fn classify(&mut self, e: RawEntry) -> Result<Option<Listed>, ListError> {
        let Some(rel) = e.key.strip_prefix(self.prefix.as_str()) else {
            return Err(self.broken(format!(
                "the store returned the key {:?}, which is outside the requested prefix {:?}",
                e.key, self.prefix
            )));
        };
        let rel = rel.to_string();
        if let Some(p) = &self.prev
            && e.key.as_bytes() <= p.as_bytes()
        {
            return Err(ListError::Unsorted {
                location: self.location.clone(),
                prev: p
                    .strip_prefix(self.prefix.as_str())
                    .unwrap_or(p)
                    .to_string(),
                key: rel,
            });
        }
        self.prev = Some(e.key.clone());
        if e.key.ends_with('/') {
            if e.size == 0 {
                // A directory marker.
                return Ok(None);
            }
            return Ok(Some(Listed::Refused {
                key: rel,
                reason: format!(
                    "the key ends in '/' but holds {} bytes, so it is not a directory marker; object_store drops the trailing '/' and would name another key",
                    e.size
                ),
            }));
        }
        Ok(Some(match object_store::path::Path::parse(&e.key) {
            Err(err) => Listed::Refused {
                key: rel,
                reason: path_reason(&err),
            },
            Ok(p) if p.as_ref() != e.key => Listed::Refused {
                reason: format!("object_store would name it {:?}", p.as_ref()),
                key: rel,
            },
            Ok(_) => Listed::Object(Entry {
                key: rel,
                size: e.size,
                last_modified: e.last_modified,
                e_tag: e.e_tag,
            }),
        }))
    }
}

/// Whether a failed page request is worth another attempt: the answer broke off or did not
/// parse (object_store does not retry those), the connection failed, or a retryable status
/// (object_store retried those already, within the same window).
fn transient(e: &object_store::Error) -> bool {
    if !matches!(e, object_store::Error::Generic { .. }) {
        return false;
    }
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(x) = cur {
        if let Some(h) = x.downcast_ref::<object_store::client::HttpError>() {
            use object_store::client::HttpErrorKind as K;
            if matches!(
                h.kind(),
                K::Connect | K::Request | K::Timeout | K::Interrupted | K::Decode
            ) {
                return true;
            }
        }
        cur = x.source();
    }
    let text = e.to_string().to_ascii_lowercase();
    if text.contains("list response body") || text.contains("invalid list response") {
        return true;
    }
    super::error::http_status(e).is_some_and(retry::retryable_status)
}

/// Whether an empty object listed by object_store (which drops a trailing '/') is really a
/// directory marker: nothing is found under the name it was listed as.
async fn is_marker(store: &Store, m: &object_store::ObjectMeta) -> bool {
    use object_store::ObjectStoreExt;
    m.size == 0
        && matches!(
            store.inner.head(&m.location).await,
            Err(object_store::Error::NotFound { .. })
        )
}

struct PageState {
    store: Store,
    buffer: VecDeque<Result<Listed, ListError>>,
    token: Option<String>,
    /// Full key to continue after when there is no page token.
    offset: Option<String>,
    /// While closing in on a refused key: the reduced page size.
    page_size: Option<usize>,
    /// The page size asked for normally (None: the store's default).
    full_page: Option<usize>,
    /// How often the last refused key came back after it was reported (an inclusive or ignored
    /// offset); bounded so a store that ignores offsets cannot loop forever.
    repeats: u32,
    /// Reduced pages in a row that handed out nothing new; bounded likewise.
    stalls: u32,
    /// Empty pages in a row that said more follows.
    empty: u32,
    /// Last full key handed out (objects or refused). Servers whose offset is inclusive
    /// (fake-gcs-server) repeat it; repeats are dropped.
    last: Option<String>,
    done: bool,
}

impl PageState {
    fn fail(&mut self, message: String) {
        self.buffer.push_back(Err(ListError::Broken {
            location: self.store.shown(),
            status: None,
            message,
        }));
        self.done = true;
    }

    /// Requests the next page (retrying failures in transit) and queues what it holds.
    async fn step(&mut self, requests: &AtomicU64) {
        let pages = self
            .store
            .pages
            .clone()
            .expect("cloud stores list by pages");
        let prefix = self.store.prefix.clone();
        let opts = PaginatedListOptions {
            offset: if self.token.is_none() {
                self.offset.clone()
            } else {
                None
            },
            page_token: self.token.clone(),
            max_keys: self.page_size.or(self.full_page),
            ..Default::default()
        };
        let mut backoff = retry::Backoff::with_window(self.store.retry_window);
        let res = loop {
            requests.fetch_add(1, Relaxed);
            let prefix = (!prefix.is_empty()).then_some(prefix.as_str());
            match pages.list_paginated(prefix, opts.clone()).await {
                Err(e)
                    if transient(&e)
                        && backoff
                            .wait_logged(
                                &format!("listing {}", self.store.shown()),
                                &crate::store::error::StoreErrorKind::of(&e).to_string(),
                            )
                            .await =>
                {
                    continue;
                }
                r => break r,
            }
        };
        match res {
            Ok(page) => self.take(page, opts).await,
            Err(e) => self.refused(e, &backoff),
        }
    }

    /// Queues a page's entries and decides how the listing goes on.
    async fn take(
        &mut self,
        page: object_store::list::PaginatedListResult,
        asked: PaginatedListOptions,
    ) {
        let prefix = self.store.prefix.clone();
        let mut fresh = false;
        for m in page.result.objects {
            let full = m.location.as_ref().to_string();
            let rel = match full.strip_prefix(prefix.as_str()) {
                Some(rel) => rel.to_string(),
                // object_store lists the marker `prefix/` as `prefix`.
                None if format!("{full}/") == prefix => {
                    if m.size > 0 {
                        self.buffer.push_back(Ok(Listed::Refused {
                            key: String::new(),
                            reason: format!(
                                "the prefix itself is an object of {} bytes whose key ends in '/'",
                                m.size
                            ),
                        }));
                    }
                    continue;
                }
                None => {
                    return self.fail(format!(
                        "the store returned the key {full:?}, which is outside the requested prefix {prefix:?}"
                    ));
                }
            };
            if self.last.as_deref() == Some(full.as_str()) {
                continue;
            }
            fresh = true;
            if is_marker(&self.store, &m).await {
                // Its key is `full/`: continue after that.
                self.offset = Some(format!("{full}/"));
                continue;
            }
            self.offset = Some(full.clone());
            self.last = Some(full);
            self.buffer.push_back(Ok(Listed::Object(Entry {
                key: rel,
                size: m.size,
                last_modified: m.last_modified,
                e_tag: m.e_tag,
            })));
        }
        if self.page_size.is_some() {
            // Reduced pages go on by offset until the refused key is reached.
            self.token = None;
            self.done = page.page_token.is_none();
            if self.done || fresh || self.offset != asked.offset {
                self.stalls = 0;
                return;
            }
            self.stalls += 1;
            let at = self.offset.clone().unwrap_or_default();
            if self.stalls > 1 {
                return self.fail(format!(
                    "the store keeps answering from {at:?} with keys already listed; the listing cannot go on"
                ));
            }
            // A server whose offset is inclusive: step just past it.
            self.offset = Some(format!("{at}\0"));
            return;
        }
        if page.page_token.is_some() && page.page_token == asked.page_token {
            return self.fail(
                "the store answered a page token with the same token; the listing would go round in a circle".into(),
            );
        }
        if page.page_token.is_some() && !fresh {
            self.empty += 1;
            if self.empty >= MAX_EMPTY_PAGES {
                let m = format!(
                    "{} empty pages in a row, each saying more follows; giving up",
                    self.empty
                );
                return self.fail(m);
            }
        } else {
            self.empty = 0;
        }
        self.token = page.page_token;
        self.done = self.token.is_none();
    }

    /// A failed page: a refused key (close in on it with smaller pages, report it, go on after
    /// it) or the listing's end.
    fn refused(&mut self, e: object_store::Error, backoff: &retry::Backoff) {
        let prefix = self.store.prefix.clone();
        match refused_key(&e) {
            Some((key, reason))
                if self.page_size == Some(1) || self.last.as_deref() == Some(key.as_str()) =>
            {
                if self.last.as_deref() == Some(key.as_str()) {
                    // Reported already, yet the server returned it again.
                    self.repeats += 1;
                    if self.repeats > 1 {
                        return self.fail(format!(
                            "the store ignores the listing offset, so the refused key {key:?} cannot be stepped over"
                        ));
                    }
                    self.offset = Some(format!("{key}\0"));
                } else {
                    let rel = key
                        .strip_prefix(prefix.as_str())
                        .unwrap_or(&key)
                        .to_string();
                    self.buffer
                        .push_back(Ok(Listed::Refused { key: rel, reason }));
                    self.offset = Some(key.clone());
                    self.last = Some(key);
                    self.repeats = 0;
                }
                self.token = None;
                self.page_size = None;
            }
            Some(_) => {
                let current = self.page_size.or(self.full_page).unwrap_or(1000);
                self.page_size = Some((current / 2).max(1));
                self.token = None;
            }
            None => {
                let source = if backoff.retries() > 0 {
                    object_store::Error::Generic {
                        store: "list",
                        source: format!(
                            "{e} (still failing after {} retries over {:.1?}; the window is --retry-timeout)",
                            backoff.retries(),
                            backoff.elapsed()
                        )
                        .into(),
                    }
                } else {
                    e
                };
                self.buffer.push_back(Err(ListError::Store {
                    location: self.store.shown(),
                    source,
                }));
                self.done = true;
            }
        }
    }
}

fn paged(
    store: &Store,
    full_page: Option<usize>,
    requests: Arc<AtomicU64>,
) -> BoxStream<'static, Result<Listed, ListError>> {
    let st = PageState {
        store: store.clone(),
        buffer: VecDeque::new(),
        token: None,
        // A shard's listing starts after its range's start (the offset is exclusive).
        offset: store
            .range
            .as_ref()
            .and_then(|r| r.start.as_ref())
            .filter(|s| !s.is_empty())
            .map(|s| format!("{}{s}", store.prefix)),
        page_size: None,
        full_page,
        repeats: 0,
        stalls: 0,
        empty: 0,
        last: None,
        done: false,
    };
    stream::unfold(st, move |mut st| {
        let requests = requests.clone();
        async move {
            loop {
                if let Some(item) = st.buffer.pop_front() {
                    return Some((item, st));
                }
                if st.done {
                    return None;
                }
                st.step(&requests).await;
            }
        }
    })
    .boxed()
}

/// Drives `stream` on its own task, up to `ahead` entries in front of the consumer, so that two
/// listings (source and destination) page concurrently instead of one after the other. Memory is
/// bounded by `ahead`; the task ends when the consumer drops the stream.
pub fn prefetch<T: Send + 'static>(
    mut stream: BoxStream<'static, T>,
    ahead: usize,
) -> BoxStream<'static, T> {
    let (tx, rx) = tokio::sync::mpsc::channel(ahead.max(1));
    tokio::spawn(async move {
        while let Some(item) = stream.next().await {
            if tx.send(item).await.is_err() {
                break;
            }
        }
    });
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|v| (v, rx)) }).boxed()
}
