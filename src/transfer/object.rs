//! One object in the run's pool ([`handle_object`]): a check of the destination where the
//! decision asks for one, then the copy, retried under `--retries`, with renewed credentials
//! where a store refused expired ones; and when the run must stop for its credentials.

use super::Report;
use super::copy::{CopyError, Ctx, Outcome, copy_object};
use crate::store::StoreErrorKind;
use crate::store::list::Entry;
use object_store::{Attribute, GetOptions};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// How a task of the pool ended.
pub(super) enum Done {
    /// Copied and verified; the reason when the decision was made in the task (after a check).
    Copied(Outcome, Option<&'static str>),
    Skipped(&'static str),
    WouldCopy(&'static str),
}

/// What a task of the pool hands back: the object, how it ended, and the attempts it took.
pub(super) type Finished = (Entry, Result<Done, CopyError>, u32);

/// One object in the pool: with `check`, first one HEAD of the destination (skipped when its
/// metadata names this source version; a dry run stops there), then the copy with retries.
///
/// `permit` is held to the end, unless `copy_slots` is given (`--checkers`): then it is a
/// checker's, given back after the HEAD, and the copy waits for one of `copy_slots`.
pub(super) async fn handle_object(
    ctx: &Ctx,
    entry: Entry,
    check: bool,
    permit: tokio::sync::OwnedSemaphorePermit,
    copy_slots: Option<Arc<tokio::sync::Semaphore>>,
) -> Finished {
    let mut _permit = permit;
    let mut reason = None;
    if check {
        let _slot = ctx.limits.acquire_slot().await;
        if same_source_version(ctx, &entry).await {
            return (entry, Ok(Done::Skipped("same source version")), 1);
        }
        if ctx.opts.dry_run {
            return (entry, Ok(Done::WouldCopy("unproven")), 1);
        }
        reason = Some("unproven");
    }
    if let Some(slots) = copy_slots {
        drop(_permit);
        _permit = slots.acquire_owned().await.expect("slots open");
    }
    let mut entry = entry;
    if ctx.opts.inventory.is_some() {
        // An inventory without a comparable ETag: one HEAD pins the version to copy.
        if entry.e_tag.is_none()
            && let Err(e) = super::since::pin(ctx, &mut entry).await
        {
            return (entry, Err(e), 1);
        }
    }
    // (An inventory's object that changed or went since is found out in there.)
    let (res, attempts) = copy_with_retries(ctx, &entry).await;
    (entry, res.map(|o| Done::Copied(o, reason)), attempts)
}

/// Does the destination's moverctl metadata say it holds this source version?
pub(super) async fn same_source_version(ctx: &Ctx, src: &Entry) -> bool {
    let Ok(path) = ctx.dst.path_of(&src.key) else {
        return false;
    };
    ctx.counters.head.fetch_add(1, Relaxed);
    let Ok(head) = ctx
        .dst
        .inner
        .get_opts(
            &path,
            GetOptions {
                head: true,
                ..Default::default()
            },
        )
        .await
    else {
        return false;
    };
    let meta = |k: &str| {
        head.attributes
            .get(&Attribute::Metadata(k.to_string().into()))
            .map(|v| v.to_string())
    };
    let etag_ok = match (&src.e_tag, meta(crate::checksum::META_SRC_ETAG)) {
        (Some(e), Some(m)) => crate::checksum::etag_norm(e) == m,
        _ => false,
    };
    etag_ok
        && meta(crate::checksum::META_SIZE) == Some(src.size.to_string())
        && head.meta.size == src.size
}

/// Whether the run must stop for its credentials, and why: a store's credentials are spent (no
/// fresh ones can be had, see [`crate::store::awscreds`]), or so many objects in a row were
/// refused for their credentials that the rest would be too (a revoked key, a store that
/// refuses everything): at least 4, and at least one per copy slot.
pub(super) fn credentials_stop(ctx: &Ctx, report: &Report) -> Option<String> {
    for s in [&ctx.src, &ctx.dst] {
        if let Some(m) = s.credentials_spent() {
            return Some(format!(
                "{}: {m}; the objects not tried yet are left for the next run",
                s.shown()
            ));
        }
    }
    let limit = ctx.opts.transfers.max(4);
    (report.auth_streak >= limit).then(|| {
        format!(
            "{} objects in a row failed because a store refused the credentials; the rest would \
             be refused too, so they are left for the next run",
            report.auth_streak
        )
    })
}

/// After an attempt that started at `started` ended with a refusal of the credentials: the
/// stores whose requests were refused as expired or invalid (or without saying why while their
/// credentials are about to expire) drop their credentials. True when each of them can renew
/// (the object is worth one more attempt); false when none was refused that way or one is
/// spent.
pub(super) fn renew_after_refusal(ctx: &Ctx, e: &CopyError, started: Instant) -> bool {
    if e.kind() != Some(StoreErrorKind::Auth) {
        return false;
    }
    let mut renewing = false;
    for s in [&ctx.src, &ctx.dst] {
        let Some(c) = &s.aws_credentials else {
            continue;
        };
        let (expired, unexplained) = s.observer.refused_since(started);
        if !(expired || unexplained && c.expiring(Duration::from_secs(120))) {
            continue;
        }
        match c.refused(started) {
            crate::store::awscreds::Refusal::Retry => renewing = true,
            crate::store::awscreds::Refusal::Spent(_) => return false,
        }
    }
    renewing
}

/// Copy one object, retrying retryable errors up to `--retries` times (a growing pause between
/// attempts, the window slot held through it); returns how it ended and the attempts made. A
/// refusal of expired credentials is tried once more with renewed ones.
pub(super) async fn copy_with_retries(
    ctx: &Ctx,
    entry: &Entry,
) -> (Result<Outcome, CopyError>, u32) {
    let mut attempt = 0u32;
    let mut renewed = false;
    loop {
        attempt += 1;
        let _slot = ctx.limits.acquire_slot().await;
        let started = Instant::now();
        match copy_object(ctx, entry).await {
            Ok(o) => {
                ctx.limits.on_success();
                return (Ok(o), attempt);
            }
            Err(e) => {
                // In an inventory run, an error a newer or vanished object would give: one HEAD
                // says, and such an object is reported at once instead of read again and again.
                let e = if ctx.opts.inventory.is_some() && super::since::may_be_stale(&e) {
                    match super::since::explain(ctx, entry, e).await {
                        stale @ CopyError::SinceInventory { .. } => return (Err(stale), attempt),
                        e => e,
                    }
                } else {
                    e
                };
                // (Slow-downs object_store absorbed were already reported by the store's
                // observer; this one ended the attempt.)
                if is_throttle(&e) {
                    ctx.limits.on_throttled();
                }
                if !renewed && renew_after_refusal(ctx, &e, started) {
                    renewed = true;
                    tracing::info!(
                        target: "moverctl::copy",
                        key = %entry.key,
                        attempt,
                        "{}: the credentials were refused as expired; trying again with renewed ones",
                        entry.key
                    );
                    continue;
                }
                if !e.retryable() || attempt > ctx.opts.retries {
                    tracing::warn!(
                        target: "moverctl::copy",
                        key = %entry.key,
                        attempts = attempt,
                        "{}: failed after {attempt} attempts: {e}",
                        entry.key
                    );
                    return (Err(e), attempt);
                }
                let wait = Duration::from_millis(200 * u64::from(attempt));
                ctx.counters.retries.fetch_add(1, Relaxed);
                tracing::info!(
                    target: "moverctl::copy",
                    key = %entry.key,
                    attempt,
                    wait_ms = wait.as_millis() as u64,
                    "{}: attempt {attempt} of {} failed: {e}; copying it again in {:.1} s",
                    entry.key,
                    ctx.opts.retries + 1,
                    wait.as_secs_f64()
                );
                tokio::time::sleep(wait).await;
            }
        }
    }
}

pub(super) fn is_throttle(e: &CopyError) -> bool {
    e.kind() == Some(StoreErrorKind::Throttled)
}
