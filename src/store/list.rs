//! Listing: a stream of entries in byte order of the key, in constant memory, on every store.
//!
//! Cloud stores are read page by page through `PaginatedListStore`. object_store refuses some
//! keys (`a//b`, `.` or `..` segments, control characters) and a refused key fails its whole page;
//! when that happens the lister re-reads from the last good key with pages half as large, down to
//! a page of one key that holds only the refused key (about ten extra requests per refused key).
//! It reports that key as [`Listed::Refused`] and goes on after it with full pages.
//! Every store's order is checked: a key that is not greater than the one before ends the
//! listing with [`ListError::Unsorted`], because everything downstream merge-joins sorted streams.

use super::{Kind, Store};
use chrono::{DateTime, Utc};
use futures::stream::{self, BoxStream, StreamExt};
use object_store::list::PaginatedListOptions;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Relative to the location's prefix.
    pub key: String,
    pub size: u64,
    pub last_modified: DateTime<Utc>,
    pub e_tag: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listed {
    Object(Entry),
    /// A key that exists but cannot be handled; listing goes on.
    Refused {
        key: String,
        reason: String,
    },
}

impl Listed {
    pub fn key(&self) -> &str {
        match self {
            Listed::Object(e) => &e.key,
            Listed::Refused { key, .. } => key,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ListError {
    #[error("listing {location}: {source}")]
    Store {
        location: String,
        #[source]
        source: object_store::Error,
    },
    #[error("listing {location}: {message}")]
    Local { location: String, message: String },
    #[error(
        "listing {location} is not in key order ({prev:?} came before {key:?}); moverctl needs sorted listings (S3 Express directory buckets and some S3-compatible stores do not sort)"
    )]
    Unsorted {
        location: String,
        prev: String,
        key: String,
    },
}

/// The refused key named by an object_store path error, if that is what the error is.
fn refused_key(e: &object_store::Error) -> Option<(String, String)> {
    use object_store::path::Error as P;
    let object_store::Error::InvalidPath { source } = e else {
        return None;
    };
    match source {
        P::EmptySegment { path } => Some((path.clone(), "empty path segment ('//')".into())),
        P::BadSegment { path, source } => Some((path.clone(), source.to_string())),
        P::NonUnicode { path, .. } => Some((path.clone(), "not valid UTF-8".into())),
        _ => None,
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

/// As [`list_pages_of`], counting the LIST requests made in `requests` (for the run's report).
pub fn list_counted(
    store: &Store,
    page_size: Option<usize>,
    requests: Arc<AtomicU64>,
) -> BoxStream<'static, Result<Listed, ListError>> {
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
        _ => paged(store, page_size, requests),
    };
    ordered(inner, store.shown())
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

struct PageState {
    store: Store,
    buffer: VecDeque<Listed>,
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
    /// Last full key handed out (objects or refused). Servers whose offset is inclusive
    /// (fake-gcs-server) repeat it; repeats are dropped.
    last: Option<String>,
    done: bool,
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
        offset: None,
        page_size: None,
        full_page,
        repeats: 0,
        last: None,
        done: false,
    };
    stream::unfold(st, move |mut st| {
        let requests = requests.clone();
        async move {
        loop {
            if let Some(item) = st.buffer.pop_front() {
                return Some((Ok(item), st));
            }
            if st.done {
                return None;
            }
            let pages = st.store.pages.clone().expect("cloud stores list by pages");
            let prefix = st.store.prefix.clone();
            let opts = PaginatedListOptions {
                offset: if st.token.is_none() { st.offset.clone() } else { None },
                page_token: st.token.clone(),
                max_keys: st.page_size.or(st.full_page),
                ..Default::default()
            };
            requests.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let res = pages
                .list_paginated((!prefix.is_empty()).then_some(prefix.as_str()), opts)
                .await;
            match res {
                Ok(page) => {
                    for m in page.result.objects {
                        let full = m.location.as_ref().to_string();
                        if st.last.as_ref().is_some_and(|l| full.as_bytes() <= l.as_bytes()) {
                            continue;
                        }
                        st.offset = Some(full.clone());
                        st.last = Some(full);
                        st.buffer.push_back(Listed::Object(entry(&prefix, m)));
                    }
                    if st.page_size.is_some() {
                        // Reduced pages go on by offset until the refused key is reached.
                        st.token = None;
                        st.done = page.page_token.is_none();
                    } else {
                        st.token = page.page_token;
                        st.done = st.token.is_none();
                    }
                }
                Err(e) => match refused_key(&e) {
                    Some((key, reason)) if st.page_size == Some(1) || st.last.as_deref() == Some(key.as_str()) => {
                        if st.last.as_deref() == Some(key.as_str()) {
                            // Reported already, yet the server returned it again.
                            st.repeats += 1;
                            if st.repeats > 1 {
                                st.done = true;
                                let location = st.store.shown();
                                return Some((
                                    Err(ListError::Local {
                                        location,
                                        message: format!(
                                            "the store ignores the listing offset, so the refused key {key:?} cannot be stepped over"
                                        ),
                                    }),
                                    st,
                                ));
                            }
                            st.offset = Some(format!("{key}\0"));
                        } else {
                            let rel = key.strip_prefix(prefix.as_str()).unwrap_or(&key).to_string();
                            st.buffer.push_back(Listed::Refused { key: rel, reason });
                            st.offset = Some(key.clone());
                            st.last = Some(key);
                            st.repeats = 0;
                        }
                        st.token = None;
                        st.page_size = None;
                    }
                    Some(_) => {
                        let current = st.page_size.or(st.full_page).unwrap_or(1000);
                        st.page_size = Some((current / 2).max(1));
                        st.token = None;
                    }
                    None => {
                        st.done = true;
                        let location = st.store.shown();
                        return Some((Err(ListError::Store { location, source: e }), st));
                    }
                },
            }
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
