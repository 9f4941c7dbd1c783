//! `--inventory` runs: whether a source object is still the one the inventory lists. The copy
//! pins the inventory's ETag (If-Match on every read, `x-amz-copy-source-if-match` on the
//! server), so a changed object fails its condition and a vanished one answers 404 (and on a
//! store that ignores the pin, a read brings another number of bytes than the row lists); one
//! HEAD of the source then says which ([`explain`]), at the first failed attempt. An inventory without a comparable ETag gets that
//! HEAD before the copy instead ([`pin`]), and the copy pins the ETag it shows.

use super::copy::{CopyError, Ctx};
use crate::store::StoreErrorKind;
use crate::store::list::Entry;

/// An error that a changed or vanished source would give: a failed pin, a 404, or bytes other
/// than the row promised (a store that ignores If-Match reads the newer object).
pub(super) fn may_be_stale(e: &CopyError) -> bool {
    matches!(e, CopyError::Mismatch(_))
        || matches!(
            e.kind(),
            Some(StoreErrorKind::NotFound | StoreErrorKind::PreconditionFailed)
        )
}

/// What one HEAD of the source shows against the inventory's row: Ok(None) when it is the
/// inventory's object (its ETag filled in when the inventory had none).
async fn compare(ctx: &Ctx, entry: &mut Entry) -> Result<Option<CopyError>, CopyError> {
    let meta = match super::copy::source::head_source(ctx, &entry.key, None).await? {
        Ok(r) => r.meta,
        Err(e) if StoreErrorKind::of(&e) == StoreErrorKind::NotFound => {
            return Ok(Some(CopyError::SinceInventory {
                gone: true,
                what: "gone since the inventory: the source answers 404 (not found)".into(),
            }));
        }
        Err(source) => {
            return Err(CopyError::Store {
                what: "checking the source against the inventory (HEAD)",
                source,
            });
        }
    };
    let norm = |e: &Option<String>| e.as_deref().map(crate::checksum::etag_norm);
    if meta.size != entry.size {
        return Ok(Some(CopyError::SinceInventory {
            gone: false,
            what: format!(
                "changed since the inventory: the source holds {} bytes, the inventory lists {}",
                meta.size, entry.size
            ),
        }));
    }
    match (&entry.e_tag, &meta.e_tag) {
        (Some(_), Some(_)) if norm(&entry.e_tag) != norm(&meta.e_tag) => {
            Ok(Some(CopyError::SinceInventory {
                gone: false,
                what: format!(
                    "changed since the inventory: the source's ETag is {}, the inventory lists {}",
                    meta.e_tag.as_deref().unwrap_or(""),
                    entry.e_tag.as_deref().unwrap_or("")
                ),
            }))
        }
        (None, Some(e)) => {
            entry.e_tag = Some(e.clone());
            Ok(None)
        }
        _ => Ok(None),
    }
}

/// Before the copy of an inventory row without an ETag: the source's current ETag, or why it
/// is not the inventory's object.
pub(super) async fn pin(ctx: &Ctx, entry: &mut Entry) -> Result<(), CopyError> {
    match compare(ctx, entry).await? {
        Some(stale) => Err(stale),
        None => Ok(()),
    }
}

/// After a copy that failed with `e` (a condition or a 404): the object changed or is gone
/// since the inventory, or `e` itself when the source still holds the inventory's object.
pub(super) async fn explain(ctx: &Ctx, entry: &Entry, e: CopyError) -> CopyError {
    let mut probe = entry.clone();
    match compare(ctx, &mut probe).await {
        Ok(Some(stale)) => stale,
        _ => e,
    }
}
