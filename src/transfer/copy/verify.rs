//! The write side's proof once an object is written: whether an answer's ETag may be compared
//! with an MD5 ([`etag_can_be_md5`]), the checksum-only path's stored CRC64 ([`dest_checksum`]),
//! a HEAD (size, GCS's CRC32C) or a full read-back ([`verify_after_write`]).

use super::context::{CopyError, Ctx, store_err};
use super::head::dest_stored_crc64;
use crate::checksum::{self, Hasher};
use crate::store::http::{Capture, DigestHeaders};
use crate::store::list::Entry;
use crate::transfer::Verify;
use crate::transfer::verification::WriteCheck;
use futures::StreamExt;
use object_store::{GetOptions, ObjectStoreExt};
use std::sync::atomic::Ordering::Relaxed;

/// Whether a write answer's ETag may be compared with an MD5 of the bytes sent (single PUT) or
/// with `md5(part md5s)-N` (`multipart`): where the store's capabilities say its ETags are such
/// MD5s (not Azure's opaque ones, not an object GCS assembled from XML multipart parts, whose
/// ETag is "not based on an MD5"), unless the answer says the object is encrypted with SSE-KMS
/// or SSE-C (AWS documents those ETags as not MD5s).
pub(super) fn etag_can_be_md5(
    caps: &crate::store::caps::Capabilities,
    answer: Option<&DigestHeaders>,
    multipart: bool,
) -> bool {
    let documented = if multipart {
        caps.multipart_etag_is_md5_of_parts
    } else {
        caps.put_etag_is_md5
    };
    documented && answer.is_none_or(DigestHeaders::s3_etag_can_be_md5)
}

/// The checksum-only path's proof on the write side: the full-object CRC64 the destination
/// keeps (from the write's answer, else a HEAD with checksum mode) equals the CRC64 of the bytes
/// sent. Every write carried that CRC64 and the destination refuses a body that does not match
/// it, so this also proves the bytes it assembled. A destination that shows no stored CRC64 is
/// read back instead: the proof never falls to the size alone.
pub(super) async fn dest_checksum(
    ctx: &Ctx,
    src: &Entry,
    path: &object_store::path::Path,
    crc: u64,
    answered: Option<u64>,
) -> Result<WriteCheck, CopyError> {
    let stored = match answered {
        Some(c) => Some(c),
        None => dest_stored_crc64(ctx, path, &src.key).await?,
    };
    match stored {
        Some(c) if c == crc => Ok(WriteCheck::DestChecksum),
        Some(c) => Err(CopyError::Mismatch(format!(
            "the destination keeps the CRC64 {}, the bytes sent hash to {}",
            checksum::crc64_hex(c),
            checksum::crc64_hex(crc)
        ))),
        None => readback(ctx, src, path, crc).await,
    }
}

/// Reads the object just written back and compares its size and CRC64 with the bytes sent.
pub(super) async fn readback(
    ctx: &Ctx,
    src: &Entry,
    path: &object_store::path::Path,
    crc: u64,
) -> Result<WriteCheck, CopyError> {
    if !ctx.dst.caps.in_process {
        ctx.counters.get.fetch_add(1, Relaxed);
    }
    let r = ctx
        .dst
        .inner
        .get(path)
        .await
        .map_err(store_err("reading the destination back"))?;
    let mut s = r.into_stream();
    let mut h = Hasher::new(false);
    while let Some(c) = s.next().await {
        h.update(&c.map_err(store_err("reading the destination back"))?);
    }
    let d = h.finish();
    if d.bytes != src.size || d.crc64 != crc {
        return Err(CopyError::Mismatch(
            "the destination reads back different bytes".into(),
        ));
    }
    Ok(WriteCheck::ReadbackCrc64)
}

/// HEAD (size, and GCS's stored CRC32C when `crc32c` is given) or, for `--verify readback` and
/// local destinations, a full read-back compared by CRC.
pub(super) async fn verify_after_write(
    ctx: &Ctx,
    src: &Entry,
    path: &object_store::path::Path,
    crc: u64,
    crc32c: Option<u32>,
) -> Result<WriteCheck, CopyError> {
    // In-process destinations (folders, memory) are read back: it costs no requests.
    if ctx.opts.verify == Verify::Readback || ctx.dst.caps.in_process {
        return readback(ctx, src, path, crc).await;
    }
    ctx.counters.head.fetch_add(1, Relaxed);
    let cap = Capture::default();
    let head = cap
        .scope(ctx.dst.inner.get_opts(
            path,
            GetOptions {
                head: true,
                ..Default::default()
            },
        ))
        .await
        .map_err(store_err("checking the destination"))?;
    if head.meta.size != src.size {
        return Err(CopyError::Mismatch(format!(
            "the destination holds {} bytes, expected {}",
            head.meta.size, src.size
        )));
    }
    // GCS keeps a CRC32C of every object it stores (the only digest of one assembled from
    // multipart parts) and shows it on HEAD.
    if let Some(want) = crc32c
        && let Some(got) = cap.take().and_then(|h| h.whole_crc32c())
    {
        if got != want {
            return Err(CopyError::Mismatch(format!(
                "the destination's CRC32C is {got:08x}, the bytes sent hash to {want:08x}"
            )));
        }
        return Ok(WriteCheck::DestCrc32c);
    }
    // The CRC in metadata is the one moverctl wrote, so it says nothing about the stored bytes:
    // without a content ETag or a read-back, only the size is verified on this side.
    Ok(WriteCheck::DestSize)
}
