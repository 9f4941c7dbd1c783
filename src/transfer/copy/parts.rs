//! One multipart object's parts: split from one streaming read ([`Splitter`]) or fetched by
//! range, reused where an earlier attempt journaled the same bytes, else uploaded and checked
//! against the block digests the store answers with ([`upload_part`]), journaled, and folded in
//! order ([`Assembly`]).

use super::context::{CopyError, Ctx, progress_in_flight, store_err};
use super::read::{Seen, fetch};
use crate::checksum::{self, Digests, Hasher};
use crate::journal::PartRecord;
use crate::store::http::{Capture, DigestHeaders};
use crate::store::list::Entry;
use crate::transfer::claims::InOrder;
use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use object_store::PutPayload;
use object_store::multipart::PartId;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

/// Splits one streaming read of a whole object into parts, hashing each.
pub(super) struct Splitter {
    stream: BoxStream<'static, Result<Bytes, CopyError>>,
    left: Option<Bytes>,
    /// The whole object's in-order digests, when the source's claims need them (the bytes pass
    /// here in order, so no part has to be kept for them).
    pub(super) in_order: Option<InOrder>,
    /// Each part's MD5 is computed (Content-MD5, the multipart ETag); not on the checksum-only
    /// path.
    part_md5: bool,
}

impl Splitter {
    pub(super) fn new(
        stream: BoxStream<'static, Result<Bytes, CopyError>>,
        in_order: Option<InOrder>,
        part_md5: bool,
    ) -> Splitter {
        Splitter {
            stream,
            left: None,
            in_order,
            part_md5,
        }
    }

    /// The next `len` bytes with their digests; with `last`, the stream must end there.
    pub(super) async fn next_part(
        &mut self,
        ctx: &Ctx,
        len: u64,
        last: bool,
    ) -> Option<Result<(Vec<Bytes>, Digests), CopyError>> {
        let mut h = Hasher::new(self.part_md5);
        let mut chunks = Vec::new();
        let mut got = 0u64;
        while got < len {
            let mut c = match self.left.take() {
                Some(c) => c,
                None => match self.stream.next().await {
                    Some(Ok(c)) => c,
                    Some(Err(e)) => return Some(Err(e)),
                    None => break,
                },
            };
            if got + c.len() as u64 > len {
                self.left = Some(c.split_off((len - got) as usize));
            }
            got += c.len() as u64;
            ctx.counters.read_bytes.fetch_add(c.len() as u64, Relaxed);
            h.update(&c);
            if let Some(w) = &mut self.in_order {
                w.update(&c);
            }
            chunks.push(c);
        }
        let extra = last
            && (self.left.is_some()
                || matches!(self.stream.next().await, Some(Ok(c)) if !c.is_empty()));
        if got != len || extra {
            return Some(Err(CopyError::Mismatch(format!(
                "the source returned {} bytes where the listing promised {}",
                if extra { "more" } else { "fewer" },
                "its size"
            ))));
        }
        Some(Ok((chunks, h.finish())))
    }
}

/// What every part upload of one object shares.
pub(super) struct PartUpload<'a> {
    pub(super) mp: &'a Arc<dyn object_store::multipart::MultipartStore>,
    pub(super) path: &'a object_store::path::Path,
    pub(super) id: &'a String,
    pub(super) src: &'a Entry,
    /// Parts are hashed in order after upload (whole-object MD5), so their bytes are kept.
    pub(super) keep_for_hash: bool,
    /// The destination answers each block with its MD5 (Azure): compared with what was sent.
    pub(super) block_md5: bool,
    /// The destination keeps a CRC32C of the whole object (GCS): one is computed per part.
    pub(super) want_crc32c: bool,
    /// Set when a block's answer carried no MD5 and no CRC64 (the object is then checked
    /// another way).
    pub(super) blocks_unchecked: &'a std::sync::atomic::AtomicBool,
    /// Set when a block's answer carried its CRC64 but no MD5 (Azure answers a Put Block sent
    /// without Content-MD5 with the CRC64/NVME of the bytes it received).
    pub(super) blocks_by_crc: &'a std::sync::atomic::AtomicBool,
    /// Each part's MD5 is computed and sent as Content-MD5 (not on the checksum-only path,
    /// where the parts carry their CRC64 instead).
    pub(super) part_md5: bool,
    /// Checksum-only path: the CRC64-sending writer; parts go out on presigned URLs bound to the
    /// CRC64 computed as they were read where [`crate::transfer::crc_url::applies`].
    pub(super) crc_w: Option<&'a crate::store::CrcWriter>,
    /// What the reads record (Azure range checks, see [`crate::transfer::range_md5`]).
    pub(super) seen: Seen,
}

/// A part's bytes kept for the in-order hash, with the buffer permit they hold until hashed.
pub(super) type KeptPart = (Vec<Bytes>, tokio::sync::OwnedSemaphorePermit);

/// One part: read (from the shared splitter, `got`, or by its own ranged GET), reused when an
/// earlier attempt journaled the same bytes (`prior`), else uploaded (checked against the
/// block MD5 the store answers with, where it does) and journaled.
pub(super) async fn upload_part(
    ctx: &Ctx,
    up: &PartUpload<'_>,
    idx: usize,
    range: Range<u64>,
    permit: tokio::sync::OwnedSemaphorePermit,
    got: Option<Result<(Vec<Bytes>, Digests), CopyError>>,
    prior: Option<PartRecord>,
) -> Result<(PartRecord, Option<KeptPart>, Option<u32>), CopyError> {
    // (A part the store would not take streamed has had its bytes paced already.)
    let paced = match streamed(ctx, up, idx, &range, &got, &prior).await? {
        Streamed::Sent(done) => return Ok((record(ctx, up, idx, done)?, None, None)),
        Streamed::Refused => true,
        Streamed::NotHere => false,
    };
    let (chunks, d) = match got {
        Some(r) => r?,
        None => fetch(ctx, up.src, range, up.part_md5, Some(up.seen.clone())).await?,
    };
    let c32 = up
        .want_crc32c
        .then(|| checksum::crc32c_of(chunks.iter().map(|c| &c[..])));
    if let Some(p) = prior
        && p.size == d.bytes
        && p.crc64 == checksum::crc64_hex(d.crc64)
        && p.md5.as_deref().and_then(checksum::etag_md5) == d.md5
    {
        ctx.counters.resumed_parts.fetch_add(1, Relaxed);
        progress_in_flight(ctx, &up.src.key, d.bytes);
        let keep = up.keep_for_hash.then_some((chunks, permit));
        return Ok((p, keep, c32));
    }
    if !paced {
        ctx.limits.take_bytes(d.bytes).await;
    }
    let keep_chunks = up.keep_for_hash.then(|| chunks.clone());
    let by_url = match up
        .crc_w
        .filter(|w| crate::transfer::crc_url::applies(ctx, w))
    {
        Some(w) => {
            let chunks = chunks.clone();
            crate::transfer::crc_url::put_part(ctx, w, up.path, up.id, idx, chunks, d.crc64).await?
        }
        None => None,
    };
    let cap = Capture::sending_md5(d.md5);
    let part_id = match by_url {
        Some(id) => id,
        None => {
            ctx.limits.take_request().await;
            ctx.counters.put.fetch_add(1, Relaxed);
            cap.scope(
                up.mp
                    .put_part(up.path, up.id, idx, PutPayload::from_iter(chunks)),
            )
            .await
            .map_err(store_err("uploading a part"))?
        }
    };
    if up.block_md5 {
        let answer = cap.take();
        let md5 = answer.as_ref().and_then(|h| h.whole_md5(false));
        let crc = answer.as_ref().and_then(DigestHeaders::block_crc64);
        // The block is not committed on a mismatch; the retry uploads this object again.
        match (md5, crc) {
            (Some(m), _) if Some(m) != d.md5 => {
                return Err(CopyError::Mismatch(format!(
                    "part {} was received with a different MD5 than sent",
                    idx + 1
                )));
            }
            (Some(_), _) => {}
            (None, Some(c)) if c != d.crc64 => {
                return Err(CopyError::Mismatch(format!(
                    "part {} was received with a different CRC64 than sent",
                    idx + 1
                )));
            }
            (None, Some(_)) => up.blocks_by_crc.store(true, Relaxed),
            (None, None) => up.blocks_unchecked.store(true, Relaxed),
        }
    }
    let rec = record(ctx, up, idx, (part_id, d))?;
    Ok((rec, keep_chunks.map(|c| (c, permit)), c32))
}

/// A part of a local file streamed with its CRC64 in a trailer ([`super::trailer`]), where
/// that applies: not read already (`got`), not to be compared with an earlier attempt's record
/// (`prior`), its bytes not needed again (in-order MD5, CRC32C, block MD5, part MD5).
async fn streamed(
    ctx: &Ctx,
    up: &PartUpload<'_>,
    idx: usize,
    range: &Range<u64>,
    got: &Option<Result<(Vec<Bytes>, Digests), CopyError>>,
    prior: &Option<PartRecord>,
) -> Result<Streamed, CopyError> {
    let plain = got.is_none()
        && prior.is_none()
        && !(up.keep_for_hash || up.want_crc32c || up.block_md5 || up.part_md5);
    let (Some(w), Some(root)) = (
        up.crc_w
            .filter(|w| plain && super::trailer::applies(ctx, w)),
        ctx.src.local_root(),
    ) else {
        return Ok(Streamed::NotHere);
    };
    ctx.limits.take_bytes(range.end - range.start).await;
    let at = (up.path, up.id.as_str(), idx);
    let file = root.join(&up.src.key);
    Ok(
        match super::trailer::put_part(ctx, w, at, file, range.clone()).await? {
            Some(done) => Streamed::Sent(done),
            None => Streamed::Refused,
        },
    )
}

/// What became of a part offered to [`streamed`].
enum Streamed {
    /// Sent, with its id and the digests of its bytes.
    Sent((PartId, Digests)),
    /// The store does not take the form: the part goes the other way (its bytes paced).
    Refused,
    /// The form does not apply to it.
    NotHere,
}

/// Counts a part sent and journals it.
fn record(
    ctx: &Ctx,
    up: &PartUpload<'_>,
    idx: usize,
    (part_id, d): (PartId, Digests),
) -> Result<PartRecord, CopyError> {
    ctx.counters.written_bytes.fetch_add(d.bytes, Relaxed);
    progress_in_flight(ctx, &up.src.key, d.bytes);
    let rec = PartRecord {
        idx: idx as u32,
        content_id: part_id.content_id,
        crc64: checksum::crc64_hex(d.crc64),
        md5: d.md5.map(|m| checksum::hex(&m)),
        size: d.bytes,
    };
    if let Some(j) = &ctx.journal {
        j.lock()
            .expect("journal lock")
            .put_part(&up.src.key, &rec)?;
    }
    Ok(rec)
}

/// The parts of one object in order, folded into what completion and verification need.
pub(super) struct Assembly {
    pub(super) part_ids: Vec<PartId>,
    pub(super) md5s: Vec<Option<[u8; 16]>>,
    pub(super) crc64: u64,
    pub(super) crc32c: Option<u32>,
    started: bool,
}

impl Assembly {
    pub(super) fn with_capacity(parts: usize) -> Assembly {
        Assembly {
            part_ids: Vec::with_capacity(parts),
            md5s: Vec::with_capacity(parts),
            crc64: 0,
            crc32c: None,
            started: false,
        }
    }

    pub(super) fn add(&mut self, rec: PartRecord, c32: Option<u32>) {
        let part_crc = u64::from_str_radix(&rec.crc64, 16).unwrap_or(0);
        self.crc64 = if self.started {
            checksum::crc64_combine(self.crc64, part_crc, rec.size)
        } else {
            part_crc
        };
        self.started = true;
        if let Some(p) = c32 {
            self.crc32c = Some(match self.crc32c {
                None => p,
                Some(c) => checksum::crc32c_combine(c, p, rec.size),
            });
        }
        self.md5s
            .push(rec.md5.as_deref().and_then(checksum::etag_md5));
        self.part_ids.push(PartId {
            content_id: rec.content_id,
        });
    }
}
