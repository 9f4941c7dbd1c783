//! A multipart upload's life in the journal: continued where the journal knows it for this exact
//! source version and part size, else started and journaled at once ([`resume_or_start`]);
//! abandoned so that nothing builds on it ([`abandon`]).

use super::attributes::metadata;
use super::context::{CopyError, Ctx, store_err};
use crate::checksum;
use crate::journal::{ObjectRecord, PartRecord, State};
use crate::store::list::Entry;
use crate::transfer::fidelity::ObjectMeta;
use object_store::{Attributes, ObjectStoreExt, PutMultipartOptions};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

/// The multipart upload to continue: the one the journal knows for this exact source version and
/// part size, with the parts it recorded (each is re-read and compared before reuse), or a new
/// one, journaled at once. An upload started for another version (or part size) is aborted,
/// never stitched.
pub(in crate::transfer) async fn resume_or_start(
    ctx: &Ctx,
    mp: &Arc<dyn object_store::multipart::MultipartStore>,
    path: &object_store::path::Path,
    src: &Entry,
    (part_size, parts): (u64, u64),
    (crc, meta): (Option<u64>, Option<&ObjectMeta>),
    checksum_parts: bool,
) -> Result<(String, Vec<Option<PartRecord>>), CopyError> {
    // Resume an upload the journal knows, if it is for this exact source version and part size.
    let mut done: Vec<Option<PartRecord>> = vec![None; parts as usize];
    let mut upload_id = None;
    let mut stale: Option<String> = None;
    if let Some(j) = &ctx.journal {
        let j = j.lock().expect("journal lock");
        if let Some(r) = j.get(&src.key)?
            && r.state == State::Copying
            && let Some(id) = r.upload_id
        {
            let journaled = j.parts(&src.key)?;
            // Parts sent with a CRC64 (the checksum-only path) are journaled with object_store's
            // part metadata (XML), plain ones with their ETag: an upload is continued only in
            // the way it was started (S3 refuses to mix them), and one with no part journaled
            // is started again (it costs one request).
            let same_way = !journaled.is_empty()
                && journaled
                    .iter()
                    .all(|p| p.content_id.starts_with('<') == checksum_parts);
            if r.size == src.size
                && checksum::same_etag(r.src_etag.as_deref(), src.e_tag.as_deref())
                && r.part_size == Some(part_size)
                && same_way
            {
                for p in journaled {
                    if let Some(slot) = done.get_mut(p.idx as usize) {
                        *slot = Some(p);
                    }
                }
                upload_id = Some(id);
            } else {
                // Started for another version of the source (or another part size): never stitch.
                stale = Some(id);
            }
        }
    }
    if let Some(old) = stale {
        let _ = mp.abort_multipart(path, &old).await;
        ctx.counters.aborted_uploads.fetch_add(1, Relaxed);
        if let Some(j) = &ctx.journal {
            j.lock().expect("journal lock").forget(&src.key)?;
        }
    }
    let id = match upload_id {
        Some(id) => id,
        None => {
            ctx.counters.put.fetch_add(1, Relaxed);
            let attrs = if ctx.dst.caps.metadata_on_multipart {
                metadata(ctx, src, crc, meta)
            } else {
                Attributes::new()
            };
            let tags = crate::transfer::fidelity::source_tags(ctx, src, meta).await?;
            let id = mp
                .create_multipart_opts(
                    path,
                    PutMultipartOptions {
                        attributes: attrs,
                        tags,
                        ..Default::default()
                    },
                )
                .await
                .map_err(store_err("starting the multipart upload"))?;
            if let Some(j) = &ctx.journal {
                j.lock().expect("journal lock").put_all(&[ObjectRecord {
                    key: src.key.clone(),
                    size: src.size,
                    src_etag: src.e_tag.clone(),
                    src_mtime: Some(src.last_modified.to_rfc3339()),
                    state: State::Copying,
                    crc64: None,
                    md5: None,
                    dst_etag: None,
                    verified_by: None,
                    attempts: 1,
                    error: None,
                    upload_id: Some(id.clone()),
                    part_size: Some(part_size),
                }])?;
            }
            id
        }
    };

    Ok((id, done))
}

/// Give up on a multipart upload: abort it, forget its journal row and parts, and (when it was
/// completed but failed verification) delete the object, so neither a retry nor a later run can
/// build on it or mistake it for a good copy.
pub(in crate::transfer) async fn abandon(
    ctx: &Ctx,
    mp: &Arc<dyn object_store::multipart::MultipartStore>,
    path: &object_store::path::Path,
    id: &str,
    key: &str,
    delete_object: bool,
) {
    let _ = mp.abort_multipart(path, &id.to_string()).await;
    ctx.counters.aborted_uploads.fetch_add(1, Relaxed);
    if delete_object {
        let _ = ctx.dst.inner.delete(path).await;
    }
    if let Some(j) = &ctx.journal {
        let _ = j.lock().expect("journal lock").forget(key);
    }
}
