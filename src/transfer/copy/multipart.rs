//! An object copied in parts ([`copy_multipart`]): through the destination's multipart API
//! (parts read and uploaded concurrently, folded in order, the upload completed and proven), or,
//! for stores without one, in order through `put_multipart`; and when a source's own part size
//! is kept ([`keeps_source_layout`]).

use super::attributes::metadata;
use super::context::{CopyError, Ctx, InFlightGuard, Outcome, crc_writer, stamps_crc, store_err};
use super::head::dest_stored_crc64;
use super::parts::{Assembly, PartUpload, Splitter, upload_part};
use super::read::{Seen, fetch, read_range};
use super::resume::{abandon, resume_or_start};
use super::source::{check_source, discover_once};
use super::verify::{etag_can_be_md5, readback, verify_after_write};
use crate::checksum::{self, Digests};
use crate::journal::PartRecord;
use crate::store::http::Capture;
use crate::store::list::Entry;
use crate::transfer::Verify;
use crate::transfer::claims::{Claims, InOrder, Ordered};
use crate::transfer::fidelity::ObjectMeta;
use crate::transfer::verification::{Verification, WriteCheck};
use bytes::Bytes;
use futures::stream::{self, StreamExt};
use object_store::multipart::PartId;
use object_store::{ObjectStoreExt, PutMultipartOptions, PutPayload};
use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use tokio::sync::OwnedSemaphorePermit;

/// A part's read: its chunks and digests, or how the read failed (None: the part is read by its
/// own ranged GET when it is uploaded).
type Got = Option<Result<(Vec<Bytes>, Digests), CopyError>>;

/// The shared reader of a sequential read (one GET of the whole object, split into parts as it
/// streams); None inside: each part is read by its own ranged GET.
type Reader = Arc<tokio::sync::Mutex<Option<Splitter>>>;

/// The ranges of `parts` parts of `part_size` bytes covering `src`.
fn ranges_of(src: &Entry, part_size: u64, parts: u64) -> Vec<Range<u64>> {
    (0..parts)
        .map(|i| i * part_size..((i + 1) * part_size).min(src.size))
        .collect()
}

/// The buffer permits a part of `range` holds while its bytes are in memory.
fn permit_for(
    ctx: &Ctx,
    range: &Range<u64>,
) -> impl Future<Output = Result<OwnedSemaphorePermit, tokio::sync::AcquireError>> + use<> {
    let mib = range
        .end
        .saturating_sub(range.start)
        .div_ceil(1 << 20)
        .clamp(1, u64::from(ctx.buffer_mib)) as u32;
    ctx.buffers.clone().acquire_many_owned(mib)
}

/// Copies `src` in parts of `part_size` (see the module comment); `known`: claims an earlier way
/// of copying it already learned.
pub(super) async fn copy_multipart(
    ctx: &Ctx,
    src: &Entry,
    part_size: u64,
    parts: u64,
    known: Option<Claims>,
) -> Result<Outcome, CopyError> {
    let path = ctx.dst.path_of(&src.key).map_err(|e| CopyError::Store {
        what: "destination key",
        source: e.into(),
    })?;
    let Some(mp) = ctx.dst.multipart.clone() else {
        let ranges = ranges_of(src, part_size, parts);
        return copy_multipart_streaming(ctx, src, &path, ranges, known).await;
    };
    // The checksum-only path, unless a completed upload of this run showed no full-object CRC64.
    let crc_w = crc_writer(ctx).filter(|w| !w.multipart_unproven.load(Relaxed));
    let mp = crc_w.map_or(mp, |w| w.multipart.clone());
    let (claims, (part_size, parts), same_layout) =
        claims_and_layout(ctx, src, known, crc_w.is_some(), (part_size, parts)).await?;
    let ranges = ranges_of(src, part_size, parts);

    // Part MD5s are needed for Content-MD5 and the multipart ETag, and on the checksum-only
    // path only to recompute a same-layout source's multipart ETag (its only proof).
    let part_md5 = crc_w.is_none() || same_layout.is_some();
    let need_whole_md5 = claims.needs_in_order();
    // Parts come from one GET of the whole object, split as it streams (one request per object,
    // like a plain download), or, when reads would stall longer than a connection tolerates
    // (a --bwlimit far below the part size per 20 s), from one ranged GET each.
    // A local file is read part by part with positional reads (no request to pay for), each
    // part hashed on its read thread while the bytes are in that core's cache.
    let sequential = ctx.sequential_reads && !ctx.src.is_local();
    // Where no HEAD showed the source's content headers and metadata, the first part is read
    // before the upload is created (S3 and GCS take them when it starts): its GET shows them,
    // and no request is added.
    let learn = claims.meta.is_none() && !ctx.src.is_local() && ctx.dst.caps.keeps_metadata;
    // The reads record there what they learn (and Azure's range checks, see range_md5.rs).
    let seen: Seen = Arc::new(Mutex::new(claims.clone()));
    let in_order = (sequential && need_whole_md5).then(|| InOrder::new(&claims));
    let reader = sequential_reader(ctx, src, sequential, in_order, part_md5, &seen);
    let first = match ranges.first() {
        Some(range) if learn => Some(read_ahead(ctx, src, range, &reader, part_md5, &seen).await?),
        _ => None,
    };
    let meta = claims
        .meta
        .clone()
        .or_else(|| seen.lock().expect("claims lock").meta.clone());
    let (id, done) = resume_or_start(
        ctx,
        &mp,
        &path,
        src,
        (part_size, parts),
        (None, meta.as_ref()),
        crc_w.is_some(),
    )
    .await?;

    let _in_flight = in_flight(ctx, src);
    // Parts are fetched, hashed and uploaded concurrently, and consumed in order so that a
    // whole-object MD5 can be checked against the source when it offers one.
    // Parts journaled by an earlier attempt are read again and compared with what was journaled
    // before they are reused: a part that was read corrupt is uploaded again, never stitched in.
    // Azure answers each Put Block with the MD5 of the block it received.
    let block_md5 = ctx.dst.caps.answers_block_md5;
    let blocks_unchecked = &std::sync::atomic::AtomicBool::new(false);
    let blocks_by_crc = &std::sync::atomic::AtomicBool::new(false);
    let up = PartUpload {
        mp: &mp,
        path: &path,
        id: &id,
        src,
        keep_for_hash: need_whole_md5 && !sequential,
        block_md5,
        // GCS keeps only a CRC32C for an object assembled from parts: it is compared after.
        want_crc32c: ctx.dst.caps.keeps_crc32c,
        blocks_unchecked,
        blocks_by_crc,
        part_md5,
        crc_w,
        seen: seen.clone(),
    };
    let whole = (need_whole_md5 && !sequential).then(|| InOrder::new(&claims));
    let (acc, whole) = upload_all(ctx, &up, &reader, first, &ranges, &done, whole).await?;
    let ordered = in_order_result(whole, &reader).await;
    let (crc, res, verified_by) = check_and_complete(
        ctx,
        &up,
        claims,
        (ordered, same_layout),
        acc,
        part_size,
        meta.as_ref(),
    )
    .await?;
    Ok(Outcome {
        digests: Digests {
            crc64: crc,
            md5: None,
            bytes: src.size,
        },
        dst_etag: res.e_tag,
        verified_by,
        parts,
        upload_id: Some(id),
        part_size: Some(ranges[0].end - ranges[0].start),
        crc64_known: true,
        server_side: false,
    })
}

/// What the source claims (one HEAD per large object: parts are read by range, and a ranged
/// answer does not carry whole-object digests), the part size and count used (the source's own
/// where [`keeps_source_layout`]), and a same-layout source's multipart ETag, taken out of the
/// claims to be checked from the part MD5s. `crc`: the checksum-only path.
async fn claims_and_layout(
    ctx: &Ctx,
    src: &Entry,
    known: Option<Claims>,
    crc: bool,
    (part_size, parts): (u64, u64),
) -> Result<(Claims, (u64, u64), Option<String>), CopyError> {
    // One HEAD per large object says what the source claims (parts are read by range, and a
    // ranged answer does not carry whole-object digests).
    let mut claims = discover_once(ctx, src, true, known).await?;
    if crc {
        claims.prefer_crc();
    }
    let (part_size, parts) = match &claims.parts_etag {
        Some((p, _)) if keeps_source_layout(&ctx.opts.dst_limits, src.size, *p, part_size) => {
            (*p, src.size.div_ceil(*p))
        }
        _ => (part_size, parts),
    };
    // A source uploaded in parts of the size used here (a copy made by moverctl, or rclone with
    // the same chunk size): its multipart ETag is checked from the part MD5s computed anyway,
    // instead of hashing every byte a second time in order.
    let same_layout = claims
        .parts_etag
        .take_if(|(size, _)| *size == part_size)
        .map(|(_, etag)| etag);
    Ok((claims, (part_size, parts), same_layout))
}

/// Counts `src` as in flight in the progress until the guard is dropped.
fn in_flight(ctx: &Ctx, src: &Entry) -> InFlightGuard {
    ctx.counters
        .in_flight
        .lock()
        .expect("progress lock")
        .insert(src.key.clone(), (0, src.size));
    InFlightGuard(ctx.counters.clone(), src.key.clone())
}

/// Checks the source's claims over the parts uploaded (a same-layout multipart ETag put back,
/// see [`with_same_layout`]), abandoning the upload where they fail, then completes it and
/// proves it: the object's CRC64, the completion's answer, and how the copy was verified.
async fn check_and_complete(
    ctx: &Ctx,
    up: &PartUpload<'_>,
    claims: Claims,
    (ordered, same_layout): (Option<Ordered>, Option<String>),
    acc: Assembly,
    part_size: u64,
    meta: Option<&ObjectMeta>,
) -> Result<(u64, object_store::PutResult, Verification), CopyError> {
    let (src, mp, path, id) = (up.src, up.mp, up.path, up.id);
    let (mut claims, ordered) = with_same_layout(claims, ordered, same_layout, &acc, part_size);
    claims.add_ranges(&up.seen.lock().expect("claims lock"));
    let read_side = match check_source(ctx, src, &claims, acc.crc64, ordered.as_ref()).await {
        Ok(l) => l,
        Err(e) => {
            abandon(ctx, mp, path, id, &src.key, false).await;
            return Err(e);
        }
    };
    let crc = acc.crc64;
    let blocks_checked = (up.block_md5 && !up.blocks_unchecked.load(Relaxed)).then(|| {
        if up.blocks_by_crc.load(Relaxed) {
            WriteCheck::DestBlockCrc64
        } else {
            WriteCheck::DestBlockMd5
        }
    });
    let (res, write_side) = complete_and_verify(
        ctx,
        mp,
        path,
        id,
        src,
        acc.part_ids,
        &acc.md5s,
        (crc, acc.crc32c, stamps_crc(ctx, read_side)),
        blocks_checked,
        up.crc_w,
        meta,
    )
    .await?;
    Ok((crc, res, Verification::new(read_side, write_side)))
}

/// The shared reader of a `sequential` read of `src` (hashing in order with `in_order`, each
/// part's MD5 with `part_md5`), or None inside: each part is read by its own ranged GET.
fn sequential_reader(
    ctx: &Ctx,
    src: &Entry,
    sequential: bool,
    in_order: Option<InOrder>,
    part_md5: bool,
    seen: &Seen,
) -> Reader {
    Arc::new(tokio::sync::Mutex::new(sequential.then(|| {
        Splitter::new(
            read_range(ctx, src, 0..src.size, Some(seen.clone())),
            in_order,
            part_md5,
        )
    })))
}

/// The whole object's in-order digests: from the parts kept for them (`whole`), else from the
/// sequential reader that hashed them as they streamed.
async fn in_order_result(whole: Option<InOrder>, reader: &Reader) -> Option<Ordered> {
    match whole {
        Some(w) => Some(w.finish()),
        None => reader
            .lock()
            .await
            .take()
            .and_then(|sp| sp.in_order)
            .map(InOrder::finish),
    }
}

/// The first part, read before the upload is created (its GET shows the source's content
/// headers and metadata), with the buffer permit it holds.
async fn read_ahead(
    ctx: &Ctx,
    src: &Entry,
    range: &Range<u64>,
    reader: &Reader,
    part_md5: bool,
    seen: &Seen,
) -> Result<(OwnedSemaphorePermit, Got), CopyError> {
    let permit = permit_for(ctx, range).await.expect("buffer semaphore open");
    let got = match reader.lock().await.as_mut() {
        Some(sp) => {
            sp.next_part(ctx, range.end - range.start, range.end == src.size)
                .await
        }
        None => Some(fetch(ctx, src, range.clone(), part_md5, Some(seen.clone())).await),
    };
    if let Some(Err(e)) = got {
        return Err(e);
    }
    Ok((permit, got))
}

/// Reads and uploads every part (`first` read ahead already; `done`: the parts an earlier
/// attempt journaled), `part_concurrency` at a time, folded in order; with `whole`, the parts
/// kept for it are hashed in order. A source that changed abandons the upload.
async fn upload_all(
    ctx: &Ctx,
    up: &PartUpload<'_>,
    reader: &Reader,
    first: Option<(OwnedSemaphorePermit, Got)>,
    ranges: &[Range<u64>],
    done: &[Option<PartRecord>],
    mut whole: Option<InOrder>,
) -> Result<(Assembly, Option<InOrder>), CopyError> {
    let src = up.src;
    let first = Arc::new(Mutex::new(first));
    let reads = stream::iter(ranges.iter().cloned().enumerate())
        .then(|(idx, range)| {
            let reader = reader.clone();
            let pre = if idx == 0 {
                first.lock().expect("first part lock").take()
            } else {
                None
            };
            let permit = (pre.is_none()).then(|| permit_for(ctx, &range));
            async move {
                if let Some((permit, got)) = pre {
                    return (idx, range, permit, got);
                }
                let permit = permit
                    .expect("set when not read ahead")
                    .await
                    .expect("buffer semaphore open");
                let got = match reader.lock().await.as_mut() {
                    Some(sp) => {
                        sp.next_part(ctx, range.end - range.start, range.end == src.size)
                            .await
                    }
                    None => None,
                };
                (idx, range, permit, got)
            }
        })
        .boxed();
    let part_futs = reads.map(|(idx, range, permit, got)| {
        upload_part(ctx, up, idx, range, permit, got, done[idx].clone())
    });
    let mut stream = part_futs
        .boxed()
        .buffered(ctx.opts.part_concurrency.max(1))
        .boxed();
    let mut acc = Assembly::with_capacity(ranges.len());
    while let Some(r) = stream.next().await {
        let (rec, keep, c32) = match r {
            Ok(v) => v,
            Err(e) => {
                if matches!(e, CopyError::SourceChanged) {
                    // Parts of an old version are useless: start again. (A part that failed its
                    // own read was not uploaded; the parts that were stay for the retry, which
                    // re-reads and compares each before reusing it.)
                    drop(stream);
                    abandon(ctx, up.mp, up.path, up.id, &src.key, false).await;
                }
                return Err(e);
            }
        };
        if let (Some(w), Some((chunks, _permit))) = (whole.as_mut(), keep) {
            for c in &chunks {
                w.update(c);
            }
        }
        acc.add(rec, c32);
    }
    drop(stream);
    Ok((acc, whole))
}

/// A same-layout multipart ETag was taken out of the claims and is recomputed from the part
/// MD5s: put it back with that result, so that every claim is checked in one place.
fn with_same_layout(
    claims: Claims,
    ordered: Option<Ordered>,
    same_layout: Option<String>,
    acc: &Assembly,
    part_size: u64,
) -> (Claims, Option<Ordered>) {
    match same_layout {
        Some(etag) => {
            let mut o = ordered.unwrap_or_default();
            o.parts_etag = acc
                .md5s
                .iter()
                .cloned()
                .collect::<Option<Vec<_>>>()
                .map(|m| checksum::multipart_etag(&m));
            let c = Claims {
                parts_etag: Some((part_size, etag)),
                ..claims
            };
            (c, Some(o))
        }
        None => (claims, ordered),
    }
}

/// Completes a multipart upload whose parts are all uploaded and whose source side checked out,
/// then proves the destination holds what was sent, with the strongest check its answer allows:
/// Azure's block MD5s, the S3 multipart ETag (`md5(part md5s)-N`), the Content-MD5 the store
/// checked on every part (SSE-KMS/SSE-C objects), else a HEAD or read-back. A completed object
/// that fails the check is deleted and the upload forgotten.
#[allow(clippy::too_many_arguments)]
async fn complete_and_verify(
    ctx: &Ctx,
    mp: &Arc<dyn object_store::multipart::MultipartStore>,
    path: &object_store::path::Path,
    id: &str,
    src: &Entry,
    part_ids: Vec<PartId>,
    md5s: &[Option<[u8; 16]>],
    (crc, crc32c, stamp): (u64, Option<u32>, bool),
    blocks_checked: Option<WriteCheck>,
    crc_w: Option<&crate::store::CrcWriter>,
    meta: Option<&ObjectMeta>,
) -> Result<(object_store::PutResult, WriteCheck), CopyError> {
    let cap = Capture::default();
    // Azure: object_store's block-list commit cannot carry metadata, so the blocks are committed
    // with a SAS and moverctl's metadata (the object's CRC64 for later runs to check it by);
    // where no SAS can be signed or it is refused, as object_store does it, without metadata.
    let with_metadata = match ctx.dst.as_azure() {
        Some(az) if !ctx.dst.caps.metadata_on_multipart => {
            let ids: Vec<&str> = part_ids.iter().map(|p| p.content_id.as_str()).collect();
            let attrs = metadata(ctx, src, stamp.then_some(crc), meta);
            match crate::transfer::from_url::commit(ctx, az, path, &ids, &attrs, None).await {
                Ok(r) => Some(Ok(r)),
                Err(crate::transfer::server_side::Refused::Copy(e)) => Some(Err(e)),
                Err(crate::transfer::server_side::Refused::Off(_)) => None,
            }
        }
        _ => None,
    };
    let res = match with_metadata {
        Some(r) => r,
        None => {
            ctx.counters.put.fetch_add(1, Relaxed);
            cap.scope(mp.complete_multipart(path, &id.to_string(), part_ids))
                .await
                .map_err(store_err("completing the multipart upload"))
        }
    };
    let res = match res {
        Ok(r) => r,
        Err(e) => {
            // The upload's state is unknown now; the next attempt starts a new one.
            abandon(ctx, mp, path, id, &src.key, false).await;
            return Err(e);
        }
    };
    if let Some(w) = crc_w {
        // Every part carried its CRC64, checked on arrival; the upload was created with the
        // CRC64NVME algorithm, so the store keeps a full-object CRC64 of what it assembled.
        let proof = stored_crc64_proof(ctx, w, src, path, crc).await;
        return match proof {
            Ok(w) => Ok((res, w)),
            Err(e) => {
                if matches!(e, CopyError::Mismatch(_)) {
                    abandon(ctx, mp, path, id, &src.key, true).await;
                }
                Err(e)
            }
        };
    }
    let mut write_side = None;
    if let Some(w) = blocks_checked
        && ctx.opts.verify != Verify::Readback
    {
        write_side = Some(w);
    }
    let answer = cap.take();
    let comparable = etag_can_be_md5(&ctx.dst.caps, answer.as_ref(), true);
    let all_md5s = md5s.iter().cloned().collect::<Option<Vec<_>>>();
    if !comparable
        && ctx.dst.caps.multipart_etag_is_md5_of_parts
        && ctx.dst.caps.checks_content_md5
        && all_md5s.is_some()
        && ctx.opts.verify != Verify::Readback
    {
        // Every part went with a Content-MD5 the store checked; the ETag of an SSE-KMS or SSE-C
        // object says nothing more.
        write_side = Some(WriteCheck::DestContentMd5);
    }
    if let (true, Some(etag), Some(all)) = (comparable, &res.e_tag, all_md5s) {
        let e = checksum::etag_norm(etag);
        if e.contains('-') && e.ends_with(&format!("-{}", md5s.len())) {
            if e != checksum::multipart_etag(&all) {
                abandon(ctx, mp, path, id, &src.key, true).await;
                return Err(CopyError::Mismatch(
                    "the destination's multipart ETag differs from the parts sent".into(),
                ));
            }
            if ctx.opts.verify != Verify::Readback {
                write_side = Some(WriteCheck::DestMultipartEtag);
            }
        }
    }
    let write_side = match write_side {
        Some(w) => w,
        None => match verify_after_write(ctx, src, path, crc, crc32c).await {
            Ok(w) => w,
            Err(e) => {
                if matches!(e, CopyError::Mismatch(_)) {
                    abandon(ctx, mp, path, id, &src.key, true).await;
                }
                return Err(e);
            }
        },
    };
    Ok((res, write_side))
}

/// The checksum-only path's proof of a completed upload: every part carried its CRC64, checked
/// on arrival, and the upload was created with the CRC64NVME algorithm, so the store keeps a
/// full-object CRC64 of what it assembled; where it shows none, the object is read back (and
/// the rest of the run's multipart copies are proven by MD5).
async fn stored_crc64_proof(
    ctx: &Ctx,
    w: &crate::store::CrcWriter,
    src: &Entry,
    path: &object_store::path::Path,
    crc: u64,
) -> Result<WriteCheck, CopyError> {
    match dest_stored_crc64(ctx, path, &src.key).await {
        Ok(Some(c)) if c == crc => Ok(WriteCheck::DestChecksum),
        Ok(Some(c)) => Err(CopyError::Mismatch(format!(
            "the destination keeps the CRC64 {} for the parts sent, which hash to {}",
            checksum::crc64_hex(c),
            checksum::crc64_hex(crc)
        ))),
        Ok(None) => {
            if !w.multipart_unproven.swap(true, Relaxed) {
                tracing::warn!(
                    "{}: a completed multipart upload shows no full-object CRC64 on HEAD; \
                     this object is read back, and the rest of the run verifies multipart \
                     copies by MD5",
                    ctx.dst.shown()
                );
            }
            readback(ctx, src, path, crc).await
        }
        Err(e) => Err(e),
    }
}

/// Whether a multipart source's own part size `source_part` is used for the copy instead of
/// `planned`: its multipart ETag is then checked from the part MD5s the upload computes anyway
/// (one MD5 pass instead of two), and the copy's ETag is the source's. Only where the
/// destination's part rules allow that size, for parts smaller than planned (larger ones would
/// hold more of the buffer budget per part), and at most four times the part PUTs of the planned
/// size: a corpus uploaded in 5 MiB parts copied in 5 MiB parts would cost 13x the part PUTs of
/// 64 MiB parts, at $0.005 per 1,000 PUTs about $0.001 per GiB, more than the CPU of the second
/// MD5 pass it saves.
pub(super) fn keeps_source_layout(
    l: &crate::catalog::schema::Limits,
    size: u64,
    source_part: u64,
    planned: u64,
) -> bool {
    source_part < planned
        && source_part.saturating_mul(4) >= planned
        && source_part >= l.min_part_bytes
        && source_part <= l.max_part_bytes
        && size.div_ceil(source_part.max(1)) <= u64::from(l.max_parts)
}

/// Stores without a low-level multipart API (local folders): parts in order through
/// `put_multipart`, which only makes the object visible when it completes. The source's claims
/// (its MD5 or multipart ETag, stored CRCs, moverctl's CRC64) are learned with one HEAD and
/// checked over the bytes in order before the upload completes: a read that went wrong never
/// becomes visible under the final name.
async fn copy_multipart_streaming(
    ctx: &Ctx,
    src: &Entry,
    path: &object_store::path::Path,
    ranges: Vec<Range<u64>>,
    known: Option<Claims>,
) -> Result<Outcome, CopyError> {
    let mut claims = discover_once(ctx, src, true, known).await?;
    let mut in_order = claims.needs_in_order().then(|| InOrder::new(&claims));
    let seen: Seen = Arc::new(Mutex::new(claims.clone()));
    let mut up = ctx
        .dst
        .inner
        .put_multipart_opts(
            path,
            PutMultipartOptions {
                attributes: metadata(ctx, src, None, claims.meta.as_ref()),
                ..Default::default()
            },
        )
        .await
        .map_err(store_err("starting the upload"))?;
    let mut crc: Option<u64> = None;
    for range in &ranges {
        let res = fetch(ctx, src, range.clone(), false, Some(seen.clone())).await;
        let (chunks, d) = match res {
            Ok(v) => v,
            Err(e) => {
                let _ = up.abort().await;
                return Err(e);
            }
        };
        if let Some(h) = &mut in_order {
            for c in &chunks {
                h.update(c);
            }
        }
        crc = Some(match crc {
            None => d.crc64,
            Some(c) => checksum::crc64_combine(c, d.crc64, d.bytes),
        });
        ctx.limits.take_bytes(d.bytes).await;
        ctx.counters.put.fetch_add(1, Relaxed);
        if let Err(e) = up.put_part(PutPayload::from_iter(chunks)).await {
            let _ = up.abort().await;
            return Err(store_err("writing a part")(e));
        }
        ctx.counters.written_bytes.fetch_add(d.bytes, Relaxed);
    }
    let crc = crc.unwrap_or(0);
    let ordered = in_order.map(InOrder::finish);
    claims.add_ranges(&seen.lock().expect("claims lock"));
    let read_side = match check_source(ctx, src, &claims, crc, ordered.as_ref()).await {
        Ok(l) => l,
        Err(e) => {
            let _ = up.abort().await;
            return Err(e);
        }
    };
    let res = up
        .complete()
        .await
        .map_err(store_err("completing the upload"))?;
    let write_side = match verify_after_write(ctx, src, path, crc, None).await {
        Ok(w) => w,
        Err(e) => {
            if matches!(e, CopyError::Mismatch(_)) {
                let _ = ctx.dst.inner.delete(path).await;
            }
            return Err(e);
        }
    };
    Ok(Outcome {
        digests: Digests {
            crc64: crc,
            md5: None,
            bytes: src.size,
        },
        dst_etag: res.e_tag,
        verified_by: Verification::new(read_side, write_side),
        parts: ranges.len() as u64,
        upload_id: None,
        part_size: Some(ranges[0].end - ranges[0].start),
        crc64_known: true,
        server_side: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_layout_is_kept_only_where_it_is_cheap_and_allowed() {
        let l = crate::catalog::Catalog::embedded()
            .unwrap()
            .get("aws")
            .unwrap()
            .file
            .limits
            .clone();
        const M: u64 = 1 << 20;
        // 16 and 32 MiB parts under a 64 MiB plan: kept (at most 4x the part PUTs).
        assert!(keeps_source_layout(&l, 10 << 30, 16 * M, 64 * M));
        assert!(keeps_source_layout(&l, 10 << 30, 32 * M, 64 * M));
        // 8 MiB (8x the PUTs), 5 MiB (rclone's default chunk): not kept.
        assert!(!keeps_source_layout(&l, 10 << 30, 8 * M, 64 * M));
        assert!(!keeps_source_layout(&l, 10 << 30, 5 * M, 64 * M));
        // Larger than planned, or the same: nothing to gain.
        assert!(!keeps_source_layout(&l, 10 << 30, 128 * M, 64 * M));
        assert!(!keeps_source_layout(&l, 10 << 30, 64 * M, 64 * M));
        // Below the destination's minimum part size, or more parts than it allows.
        assert!(!keeps_source_layout(&l, 10 << 30, 4 * M, 16 * M));
        assert!(!keeps_source_layout(&l, 400 << 30, 32 * M, 64 * M));
    }
}
