//! An object copied with one request ([`copy_single`]): read whole (counted against the buffer
//! budget), checked against the source's claims, written with one PUT (on the checksum-only path
//! a presigned one carrying its CRC64, see crc_url) and proven on the write side.

use super::attributes::metadata;
use super::context::{CopyError, Ctx, Outcome, crc_writer, stamps_crc, store_err};
use super::read::{Seen, fetch};
use super::source::{check_source, discover_once};
use super::verify::{dest_checksum, etag_can_be_md5, verify_after_write};
use crate::checksum::{self, Digests};
use crate::store::http::{Capture, DigestHeaders};
use crate::store::list::Entry;
use crate::transfer::Verify;
use crate::transfer::claims::{self, Claims, InOrder};
use crate::transfer::verification::{Verification, WriteCheck};
use bytes::Bytes;
use object_store::{ObjectStoreExt, PutOptions, PutPayload};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

/// Copies `src` with one read and one write (see the module comment); `known`: claims an
/// earlier way of copying it already learned.
pub(super) async fn copy_single(
    ctx: &Ctx,
    src: &Entry,
    known: Option<Claims>,
) -> Result<Outcome, CopyError> {
    // Only an S3 multipart ETag needs a request before reading (the source's part size).
    let strict = ctx.opts.verify == Verify::Strict;
    let seen: Seen = Arc::new(Mutex::new(discover_once(ctx, src, strict, known).await?));
    // The object is held whole until it is written: it counts against the run's buffer budget.
    let mib = src
        .size
        .div_ceil(1 << 20)
        .clamp(1, u64::from(ctx.buffer_mib)) as u32;
    let _permit = ctx
        .buffers
        .acquire_many(mib)
        .await
        .expect("buffer semaphore open");
    // Where the source states its MD5 and the destination checks the Content-MD5 it is sent,
    // that MD5 is handed over as it is and none is computed here: the destination refuses any
    // byte that differs from the source's own digest (and its MD5 ETag is compared after).
    let handover = source_md5_handover(ctx, &seen.lock().expect("claims lock"));
    // The checksum-only path computes no MD5 for the write side; the read side's is computed
    // below only where an MD5 is the only proof the source offers.
    let crc_w = crc_writer(ctx);
    let (chunks, mut d) = fetch(
        ctx,
        src,
        0..src.size,
        handover.is_none() && crc_w.is_none(),
        Some(seen.clone()),
    )
    .await?;
    let mut claims = seen.lock().expect("claims lock").clone();
    // The GET's answer may have shown the ETag handed over to be no MD5 (an SSE-KMS or SSE-C
    // object): then the MD5 sent is computed from the bytes held.
    let handover = handover.filter(|m| claims.md5 == Some(*m));
    if handover.is_some() {
        d.md5 = handover;
    }
    let ordered = in_order_digests(&mut claims, &chunks, &mut d, crc_w.is_some());
    let read_side = check_source(ctx, src, &claims, d.crc64, Some(&ordered)).await?;
    let path = ctx.dst.path_of(&src.key).map_err(|e| CopyError::Store {
        what: "destination key",
        source: e.into(),
    })?;
    ctx.limits.take_bytes(d.bytes).await;
    let opts = PutOptions {
        attributes: metadata(
            ctx,
            src,
            stamps_crc(ctx, read_side).then_some(d.crc64),
            claims.meta.as_ref(),
        ),
        tags: crate::transfer::fidelity::source_tags(ctx, src, claims.meta.as_ref()).await?,
        ..Default::default()
    };
    let (e_tag, answer) = put(ctx, crc_w, &path, chunks, &d, opts).await?;
    ctx.counters.written_bytes.fetch_add(d.bytes, Relaxed);
    let write_side = prove_write(
        ctx,
        src,
        &path,
        &d,
        crc_w.is_some(),
        &e_tag,
        answer.as_ref(),
    )
    .await?;
    Ok(Outcome {
        digests: d,
        dst_etag: e_tag,
        verified_by: Verification::new(read_side, write_side),
        parts: 0,
        upload_id: None,
        part_size: None,
        crc64_known: true,
        server_side: false,
    })
}

/// The in-order digests of an object held whole (`chunks`): its MD5 where one is needed and
/// `fetch` did not hash it (on the checksum-only path, `crc`, only where the source's MD5 is
/// its only proof), and whatever else its claims are checked by.
fn in_order_digests(
    claims: &mut Claims,
    chunks: &[Bytes],
    d: &mut Digests,
    crc: bool,
) -> claims::Ordered {
    let need_md5 = !crc || (!claims.prefer_crc() && claims.md5.is_some());
    if need_md5 && d.md5.is_none() {
        let mut h = <md5::Md5 as md5::Digest>::new();
        for c in chunks {
            md5::Digest::update(&mut h, c);
        }
        d.md5 = Some(md5::Digest::finalize(h).into());
    }
    // fetch hashed the MD5 already; the rest of the in-order digests from the chunks.
    let rest = Claims {
        md5: None,
        ..claims.clone()
    };
    let mut o = if rest.needs_in_order() {
        let mut h = InOrder::new(&rest);
        for c in chunks {
            h.update(c);
        }
        h.finish()
    } else {
        claims::Ordered::default()
    };
    o.md5 = d.md5;
    o
}

/// Writes the object with one request: on the checksum-only path a presigned PUT carrying its
/// CRC64 where [`crate::transfer::crc_url::applies`], else object_store's PUT (with the MD5 sent
/// as Content-MD5). The destination's ETag and what its answer showed.
async fn put(
    ctx: &Ctx,
    crc_w: Option<&crate::store::CrcWriter>,
    path: &object_store::path::Path,
    chunks: Vec<Bytes>,
    d: &Digests,
    opts: PutOptions,
) -> Result<(Option<String>, Option<DigestHeaders>), CopyError> {
    // The checksum-only path sends the CRC64 computed as the bytes were read (see crc_url).
    let by_url = match crc_w.filter(|w| crate::transfer::crc_url::applies(ctx, w)) {
        Some(w) => {
            let chunks = chunks.clone();
            crate::transfer::crc_url::put_single(
                ctx,
                w,
                path,
                chunks,
                (d.crc64, d.md5),
                &opts.attributes,
                &opts.tags,
            )
            .await?
        }
        None => None,
    };
    Ok(match by_url {
        Some((e_tag, answer)) => (e_tag, Some(answer)),
        None => {
            ctx.limits.take_request().await;
            ctx.counters.put.fetch_add(1, Relaxed);
            let cap = Capture::sending_md5(d.md5);
            let writer = crc_w.map_or(&ctx.dst.inner, |w| &w.inner);
            let res = cap
                .scope(writer.put_opts(path, PutPayload::from_iter(chunks), opts))
                .await
                .map_err(store_err("writing the destination"))?;
            (res.e_tag, cap.take())
        }
    })
}

/// The write side's proof of a single PUT: the destination's MD5 (ETag or the one it answered
/// with) against the bytes sent, the stored CRC64 on the checksum-only path (`crc`), the
/// Content-MD5 the store checked, else a HEAD or read-back. A wrong object is deleted.
async fn prove_write(
    ctx: &Ctx,
    src: &Entry,
    path: &object_store::path::Path,
    d: &Digests,
    crc: bool,
    e_tag: &Option<String>,
    answer: Option<&DigestHeaders>,
) -> Result<WriteCheck, CopyError> {
    // Azure answers a Put Blob with the MD5 of the bytes it received (its ETag is opaque), GCS
    // with x-goog-hash.
    let received_md5 = if ctx.dst.caps.answers_received_md5 {
        answer.and_then(|h| h.whole_md5(false))
    } else {
        None
    };
    let etag_md5 = if etag_can_be_md5(&ctx.dst.caps, answer, false) {
        e_tag.as_deref().and_then(checksum::etag_md5)
    } else {
        None
    };
    // Compared only with an MD5 of what was sent (the checksum-only path may have none).
    let dest_md5 = d.md5.and(etag_md5.or(received_md5));
    Ok(match dest_md5 {
        Some(m) if Some(m) != d.md5 => {
            // A wrong object must not stay where a later run could take it for a copy.
            let _ = ctx.dst.inner.delete(path).await;
            return Err(CopyError::Mismatch(
                "the destination's MD5 (ETag or Content-MD5) differs from the bytes sent".into(),
            ));
        }
        _ if crc => {
            let answered = answer.and_then(DigestHeaders::full_object_crc64);
            match dest_checksum(ctx, src, path, d.crc64, answered).await {
                Ok(w) => w,
                Err(e) => {
                    if matches!(e, CopyError::Mismatch(_)) {
                        let _ = ctx.dst.inner.delete(path).await;
                    }
                    return Err(e);
                }
            }
        }
        Some(_) if ctx.opts.verify != Verify::Readback && !ctx.dst.caps.in_process => {
            WriteCheck::DestMd5
        }
        // The store checked the Content-MD5 sent with the body and accepted it, but its answer
        // holds no MD5 to compare (an SSE-KMS or SSE-C object on S3).
        None if ctx.opts.verify != Verify::Readback
            && ctx.dst.caps.checks_content_md5
            && d.md5.is_some() =>
        {
            WriteCheck::DestContentMd5
        }
        _ => match verify_after_write(ctx, src, path, d.crc64, None).await {
            Ok(w) => w,
            Err(e) => {
                if matches!(e, CopyError::Mismatch(_)) {
                    let _ = ctx.dst.inner.delete(path).await;
                }
                return Err(e);
            }
        },
    })
}

/// The source's own MD5 to send as `Content-MD5` in place of one computed here: when the source
/// states a plain MD5 and the destination checks `Content-MD5` on arrival (not under `--verify
/// readback`, which compares what was read).
fn source_md5_handover(ctx: &Ctx, claims: &Claims) -> Option<[u8; 16]> {
    if ctx.opts.verify == Verify::Readback || !ctx.dst.caps.checks_content_md5 {
        return None;
    }
    claims.md5
}
