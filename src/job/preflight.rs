//! What a command checks about its stores before its first real request, so that a wrong input
//! fails in seconds with a hint instead of retrying for minutes or "succeeding" with nothing:
//! a `*` or `?` in a cloud location (a glob, which moverctl does not expand: the `--include` to
//! use instead), an endpoint that cannot be connected to ([`crate::store::reach`]), and for
//! `copy`/`exec` a source that lists no object (a typo'd prefix; the nearest existing names).

use super::JobError;
use crate::store::list::list;
use crate::store::{Kind, Store};
use futures::StreamExt;

/// How many neighbouring names an empty source's message shows.
const NEARBY: usize = 5;

/// The checks of a source, in order: no glob, reachable, and unless `allow_empty`, not empty.
pub fn source(store: &Store, allow_empty: bool) -> Result<(), JobError> {
    no_glob(store)?;
    reachable(store)?;
    if !allow_empty {
        not_empty(store)?;
    }
    Ok(())
}

/// A store's endpoint can be connected to ([`crate::store::reach::check`]), and a GCS bucket
/// exists ([`crate::store::reach::gcs_bucket_missing`]; exit 2 naming it).
pub fn reachable(store: &Store) -> Result<(), JobError> {
    crate::store::reach::check(store)?;
    if let crate::store::location::Location::Gcs { bucket, .. } = &store.location
        && super::runtime()?.block_on(crate::store::reach::gcs_bucket_missing(store))
    {
        return Err(JobError::List(crate::store::list::ListError::NoBucket {
            location: store.shown(),
            what: "bucket",
            name: bucket.clone(),
            code: "404 on the bucket",
        }));
    }
    Ok(())
}

/// A `*` or `?` in a cloud location's prefix is refused: moverctl takes a location as a prefix,
/// so `s3://b/v1/part-0*` would list keys that begin with `part-0*` (none). The message gives the
/// parent prefix and the `--include` filter that selects what the glob meant.
pub fn no_glob(store: &Store) -> Result<(), JobError> {
    if matches!(store.kind, Kind::Local | Kind::Memory) || !store.prefix.contains(['*', '?']) {
        return Ok(());
    }
    let shown = store.shown();
    let at = shown.find(['*', '?']).unwrap_or(shown.len());
    let cut = shown[..at].rfind('/').map_or(0, |i| i + 1);
    let (parent, pattern) = shown.split_at(cut);
    let pattern = pattern.trim_end_matches('/');
    Err(JobError::Usage(format!(
        "{shown}: `*` and `?` are not expanded in a location (it is a prefix, and no key begins \
         with {pattern:?}). List the parent prefix and filter instead: {parent} --include \
         '{pattern}'"
    )))
}

/// Refuses a source that lists no object at all (see [`JobError::EmptySource`]). Lists until the
/// first entry (one page at most).
pub fn not_empty(store: &Store) -> Result<(), JobError> {
    if store.single.is_some() {
        return Ok(());
    }
    let rt = super::runtime()?;
    let first = rt.block_on(async { list(store).next().await });
    match first {
        Some(item) => item.map(|_| ()).map_err(JobError::from),
        None => Err(JobError::EmptySource {
            location: store.shown(),
            nearby: rt.block_on(nearby(store)),
        }),
    }
}

/// "; under PARENT there are: a/, b/, …" for a cloud prefix: one delimiter LIST of its parent,
/// the names sharing most of the prefix's last part first. Empty when there is nothing to show
/// or the listing fails (it is only a hint).
async fn nearby(store: &Store) -> String {
    if matches!(store.kind, Kind::Local | Kind::Memory) {
        return String::new();
    }
    let p = store.prefix.trim_end_matches('/');
    let parent = &p[..p.rfind('/').map_or(0, |i| i + 1)];
    let stem = &p[parent.len()..];
    let path = object_store::path::Path::from(parent.trim_end_matches('/'));
    let at = (!parent.is_empty()).then_some(&path);
    let Ok(found) = store.inner.list_with_delimiter(at).await else {
        return String::new();
    };
    let strip = |full: String| full.strip_prefix(parent).map(str::to_string);
    let mut names: Vec<String> = found
        .common_prefixes
        .into_iter()
        .filter_map(|c| strip(c.to_string()).map(|n| n + "/"))
        .chain(
            found
                .objects
                .into_iter()
                .filter_map(|o| strip(o.location.to_string())),
        )
        .collect();
    if names.is_empty() {
        return String::new();
    }
    let shared = |n: &str| {
        n.chars()
            .zip(stem.chars())
            .take_while(|(a, b)| a == b)
            .count()
    };
    names.sort_by(|a, b| shared(b).cmp(&shared(a)).then(a.cmp(b)));
    let more = names.len().saturating_sub(NEARBY);
    names.truncate(NEARBY);
    let shown = store.shown();
    let base = shown.trim_end_matches('/');
    let base = base.strip_suffix(stem).unwrap_or(base);
    let tail = if more > 0 {
        format!(", and {more} more")
    } else {
        String::new()
    };
    format!("; {base} holds {}{tail}", names.join(", "))
}
