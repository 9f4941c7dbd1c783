//! A listing down to a depth (`ls --max-depth N`, rclone's `lsf --max-depth` / `lsd`): objects
//! at most N levels below the location, and the folders at the levels above that, each once, in
//! key order. Cloud stores are listed with the `/` delimiter, one folder at a time (a folder
//! below depth N is never listed), a page (1,000 entries) per level at most in memory. Local
//! folders and in-memory stores are walked by the sorted listing of [`super::list`], folded to
//! the depth as it streams: memory holds one folder name per level, whatever the object count.

use super::Store;
use super::list::{Entry, ListError, Listed, list};
use futures::StreamExt;
use object_store::list::PaginatedListOptions;
use std::collections::VecDeque;

/// One line of a shallow listing; keys are relative to the location, a folder's ends in `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shallow {
    Object(Entry),
    Folder(String),
    /// A key the store holds that moverctl cannot handle (see [`Listed::Refused`]).
    Refused {
        key: String,
        reason: String,
    },
}

/// Lists `store` down to `max_depth` levels (1: what is directly in the location), each entry
/// to `each` in key order.
pub async fn list_depth<E: From<ListError>>(
    store: &Store,
    max_depth: usize,
    mut each: impl FnMut(Shallow) -> Result<(), E>,
) -> Result<(), E> {
    let max_depth = max_depth.max(1);
    match &store.pages {
        Some(pages) if store.range.is_none() => {
            delimited(store, pages.as_ref(), max_depth, &mut each).await
        }
        _ => folded(store, max_depth, &mut each).await,
    }
}

/// One folder being listed: its full prefix, its depth (1: the location), what is left of its
/// current page, and the token of the next page.
struct Level {
    prefix: String,
    depth: usize,
    items: VecDeque<Shallow>,
    token: Option<String>,
    done: bool,
}

/// Depth first with the `/` delimiter: a folder is shown, then listed itself when above
/// `max_depth`.
async fn delimited<E: From<ListError>>(
    store: &Store,
    pages: &dyn object_store::list::PaginatedListStore,
    max_depth: usize,
    each: &mut impl FnMut(Shallow) -> Result<(), E>,
) -> Result<(), E> {
    let level = |prefix: String, depth: usize| Level {
        prefix,
        depth,
        items: VecDeque::new(),
        token: None,
        done: false,
    };
    let mut stack = vec![level(store.prefix.clone(), 1)];
    while let Some(top) = stack.last_mut() {
        let Some(item) = top.items.pop_front() else {
            if top.done {
                stack.pop();
                continue;
            }
            let (items, token) = page(store, pages, &top.prefix, top.token.take()).await?;
            top.items = items;
            top.done = token.is_none();
            top.token = token;
            continue;
        };
        let deeper = match &item {
            Shallow::Folder(f) if top.depth < max_depth => {
                Some(level(format!("{}{f}", store.prefix), top.depth + 1))
            }
            _ => None,
        };
        each(item)?;
        stack.extend(deeper);
    }
    Ok(())
}

/// One page of the folder `prefix` (a full key prefix, empty or ending in `/`), its objects and
/// sub-folders merged in key order, keys relative to the location.
async fn page(
    store: &Store,
    pages: &dyn object_store::list::PaginatedListStore,
    prefix: &str,
    token: Option<String>,
) -> Result<(VecDeque<Shallow>, Option<String>), ListError> {
    let opts = PaginatedListOptions {
        delimiter: Some("/".into()),
        max_keys: Some(1000),
        page_token: token,
        ..Default::default()
    };
    let r = pages
        .list_paginated((!prefix.is_empty()).then_some(prefix), opts)
        .await
        .map_err(|source| ListError::Store {
            location: store.shown(),
            source,
        })?;
    let relative = |full: &str| full.strip_prefix(&store.prefix).unwrap_or(full).to_string();
    let mut items: Vec<Shallow> = r
        .result
        .common_prefixes
        .iter()
        .map(|p| Shallow::Folder(format!("{}/", relative(p.as_ref()))))
        .chain(
            r.result
                .objects
                .into_iter()
                // A directory marker equal to the folder listed (GCS hands it out without its
                // '/') is the folder itself, not an object in it.
                .filter(|m| m.location.as_ref().len() > prefix.len())
                .map(|m| {
                    Shallow::Object(Entry {
                        key: relative(m.location.as_ref()),
                        size: m.size,
                        last_modified: m.last_modified,
                        e_tag: m.e_tag,
                    })
                }),
        )
        .filter(|s| !matches!(s, Shallow::Object(e) if e.key.is_empty()))
        .collect();
    items.sort_by(|a, b| key(a).cmp(key(b)));
    Ok((items.into(), r.page_token.filter(|t| !t.is_empty())))
}

fn key(s: &Shallow) -> &str {
    match s {
        Shallow::Object(e) => &e.key,
        Shallow::Folder(f) => f,
        Shallow::Refused { key, .. } => key,
    }
}

/// The sorted listing of every key, folded to `max_depth`: a key deeper than that shows as its
/// folders down to that depth, each once (the keys under a folder come together in key order).
async fn folded<E: From<ListError>>(
    store: &Store,
    max_depth: usize,
    each: &mut impl FnMut(Shallow) -> Result<(), E>,
) -> Result<(), E> {
    let mut shown: Vec<String> = Vec::new();
    let mut stream = list(store);
    while let Some(item) = stream.next().await {
        let (k, item) = match item? {
            Listed::Object(e) => (e.key.clone(), Shallow::Object(e)),
            Listed::Refused { key, reason } => (key.clone(), Shallow::Refused { key, reason }),
        };
        let cuts: Vec<usize> = k.match_indices('/').map(|(i, _)| i + 1).collect();
        for (level, cut) in cuts.iter().take(max_depth).enumerate() {
            let folder = &k[..*cut];
            if shown.get(level).map(String::as_str) != Some(folder) {
                shown.truncate(level);
                shown.push(folder.to_string());
                each(Shallow::Folder(folder.to_string()))?;
            }
        }
        if cuts.len() < max_depth {
            each(item)?;
        }
    }
    Ok(())
}
