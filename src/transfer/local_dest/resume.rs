//! Resuming a killed run's temporary file: the parts it journaled are read back and kept where
//! their bytes still have the journaled CRC64; a new, journaled file where there is none to
//! resume.

use super::carries_partial;
use super::file::{BLOCK, Partial, blocking, create_partial, read_err};
use super::read::{PieceMd5s, progress};
use crate::checksum::{self, Digests, Hasher};
use crate::journal::{ObjectRecord, PartRecord, State};
use crate::store::list::Entry;
use crate::transfer::claims::InOrder;
use crate::transfer::copy::context::{CopyError, Ctx};
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

/// The temporary file of a large object read by parts, and the parts a killed run journaled in
/// it (by index); a new, journaled one when there is none to resume (or it is of another
/// source version, size or part size).
pub(super) async fn resumable_partial(
    ctx: &Ctx,
    src: &Entry,
    dest: &Path,
    part: u64,
    n: usize,
) -> Result<(Partial, Vec<Option<PartRecord>>), CopyError> {
    let j = ctx
        .journal
        .as_ref()
        .expect("resumable copies are journaled");
    let dir = dest.parent().expect("a destination file has a folder");
    let (rec, journaled) = {
        let j = j.lock().expect("journal lock");
        (j.get(&src.key)?, j.parts(&src.key)?)
    };
    if let Some(r) = rec.filter(carries_partial) {
        let name = r.upload_id.clone().expect("checked by carries_partial");
        let tmp = dir.join(&name);
        // Only a file this process took over, or one whose writer is gone, is touched: another
        // host's (a shared file system) or a live process's file is left to its writer.
        let (pid, host) = crate::store::local::parse_partial(&name).expect("checked above");
        let ours = pid == std::process::id() && host == crate::store::local::host_name();
        if !ours && !crate::store::local::writer_gone(pid, host) {
            j.lock().expect("journal lock").forget(&src.key)?;
            return fresh_partial(ctx, src, dest, part, n).await;
        }
        if r.size == src.size
            && checksum::same_etag(r.src_etag.as_deref(), src.e_tag.as_deref())
            && r.part_size == Some(part)
        {
            let (t, size) = (tmp.clone(), src.size);
            let opened = blocking(move || {
                Ok(std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(&t)
                    .ok()
                    .filter(|f| f.metadata().is_ok_and(|m| m.is_file() && m.len() == size)))
            })
            .await?;
            if let Some(f) = opened {
                let mut done = vec![None; n];
                for p in journaled {
                    if let Some(slot) = done.get_mut(p.idx as usize) {
                        *slot = Some(p);
                    }
                }
                let p = Partial {
                    tmp,
                    file: Arc::new(f),
                    renamed: false,
                };
                return Ok((p, done));
            }
        }
        // Another version of the source or another part size: never stitched.
        let _ = std::fs::remove_file(&tmp);
        j.lock().expect("journal lock").forget(&src.key)?;
    }
    fresh_partial(ctx, src, dest, part, n).await
}

/// A new temporary file for a large object, journaled as its upload.
pub(super) async fn fresh_partial(
    ctx: &Ctx,
    src: &Entry,
    dest: &Path,
    part: u64,
    n: usize,
) -> Result<(Partial, Vec<Option<PartRecord>>), CopyError> {
    let j = ctx
        .journal
        .as_ref()
        .expect("resumable copies are journaled");
    let (d, size) = (dest.to_path_buf(), src.size);
    let partial = blocking(move || create_partial(&d, size)).await?;
    let name = partial
        .tmp
        .file_name()
        .and_then(|n| n.to_str())
        .expect("temporary names are UTF-8")
        .to_string();
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
        upload_id: Some(name),
        part_size: Some(part),
    }])?;
    Ok((partial, vec![None; n]))
}

/// A part a killed run wrote, read back from the temporary file: kept when its bytes still have
/// the CRC64 journaled for them (with `piece_md5`, the MD5s of the source's parts in it come from
/// the same read), else None and the part is fetched again.
pub(super) async fn reuse_part(
    ctx: &Ctx,
    src: &Entry,
    file: &Arc<File>,
    dest: &Path,
    range: Range<u64>,
    rec: Option<&PartRecord>,
    piece_md5: Option<u64>,
) -> Result<Option<(Digests, Vec<[u8; 16]>)>, CopyError> {
    let Some(rec) = rec.filter(|r| r.size == range.end - range.start) else {
        return Ok(None);
    };
    let (f, shown) = (file.clone(), dest.to_path_buf());
    let (d, md5s) = blocking(move || {
        let mut h = Hasher::new(false);
        let mut pieces = piece_md5.map(PieceMd5s::new);
        let mut buf = vec![0u8; BLOCK];
        let mut off = range.start;
        while off < range.end {
            let want = ((range.end - off) as usize).min(BLOCK);
            f.read_exact_at(&mut buf[..want], off)
                .map_err(read_err(&shown))?;
            h.update(&buf[..want]);
            if let Some(p) = &mut pieces {
                p.update(&buf[..want]);
            }
            off += want as u64;
        }
        Ok((
            h.finish(),
            pieces.map(PieceMd5s::finish).unwrap_or_default(),
        ))
    })
    .await?;
    if checksum::crc64_hex(d.crc64) != rec.crc64 {
        return Ok(None);
    }
    ctx.counters.resumed_parts.fetch_add(1, Relaxed);
    progress(ctx, src, d.bytes);
    Ok(Some((d, md5s)))
}

/// [`reuse_part`] for an object read as one stream: the part's bytes also go through the
/// in-order digests (a copy of `in_order`, returned with the part's digests when it is kept).
pub(super) async fn reuse_in_order(
    ctx: &Ctx,
    src: &Entry,
    file: &Arc<File>,
    dest: &Path,
    range: Range<u64>,
    rec: &PartRecord,
    in_order: &InOrder,
) -> Result<Option<(Digests, InOrder)>, CopyError> {
    if rec.size != range.end - range.start {
        return Ok(None);
    }
    let (f, shown, mut w) = (file.clone(), dest.to_path_buf(), in_order.clone());
    let (d, w) = blocking(move || {
        let mut h = Hasher::new(false);
        let mut buf = vec![0u8; BLOCK];
        let mut off = range.start;
        while off < range.end {
            let want = ((range.end - off) as usize).min(BLOCK);
            f.read_exact_at(&mut buf[..want], off)
                .map_err(read_err(&shown))?;
            h.update(&buf[..want]);
            w.update(&buf[..want]);
            off += want as u64;
        }
        Ok((h.finish(), w))
    })
    .await?;
    if checksum::crc64_hex(d.crc64) != rec.crc64 {
        return Ok(None);
    }
    ctx.counters.resumed_parts.fetch_add(1, Relaxed);
    progress(ctx, src, d.bytes);
    Ok(Some((d, w)))
}
