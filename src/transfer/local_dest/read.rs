//! How a source's bytes reach the file: one GET streamed into it (Azure blobs without a digest
//! through range-checked reads), ranged GETs that are whole multiples of the source's part
//! layout (each source part's MD5 computed as it streams), or positional reads of a local
//! source; journaled as they are written so that a killed run resumes.

use super::file::{BATCH, BLOCK, blocking, pwrite_all, read_err, write_err};
use crate::checksum::{self, Digests, Hasher, META_CRC64, META_MODE, META_MTIME};
use crate::journal::PartRecord;
use crate::store::http::DigestHeaders;
use crate::store::list::Entry;
use crate::transfer::claims::{Claims, InOrder};
use crate::transfer::copy::context::{CopyError, Ctx, store_err};
use crate::transfer::copy::read::exact_length;
use crate::transfer::range_md5::Seen;
use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt, TryStreamExt};
use md5::Digest as _;
use object_store::{Attribute, Attributes, GetOptions, GetRange};
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

/// What a GET answered besides the bytes: moverctl's metadata and the digest headers.
#[derive(Debug, Default, Clone)]
pub(super) struct Answer {
    pub(super) crc64_meta: Option<String>,
    pub(super) mode: Option<u32>,
    pub(super) mtime: Option<chrono::DateTime<chrono::Utc>>,
    pub(super) headers: Option<DigestHeaders>,
}

impl Answer {
    pub(super) fn of(attrs: &Attributes, headers: Option<&DigestHeaders>) -> Answer {
        let meta = |k: &str| {
            attrs
                .get(&Attribute::Metadata(k.to_string().into()))
                .map(|v| v.to_string())
        };
        Answer {
            crc64_meta: meta(META_CRC64),
            mode: meta(META_MODE).and_then(|m| u32::from_str_radix(m.trim(), 8).ok()),
            mtime: meta(META_MTIME).and_then(|t| {
                chrono::DateTime::parse_from_rfc3339(t.trim())
                    .ok()
                    .map(|d| d.to_utc())
            }),
            headers: headers.cloned(),
        }
    }
}

/// One GET of a cloud source (the whole object, or a range), pinned to the listed ETag.
pub(super) async fn get(
    ctx: &Ctx,
    src: &Entry,
    range: Option<Range<u64>>,
) -> Result<(Answer, BoxStream<'static, Result<Bytes, CopyError>>), CopyError> {
    let path = ctx.src.path_of(&src.key).map_err(|e| CopyError::Store {
        what: "source key",
        source: e.into(),
    })?;
    ctx.counters.get.fetch_add(1, Relaxed);
    ctx.limits.take_request().await;
    let mut o = GetOptions::default();
    if let Some(r) = range {
        o.range = Some(GetRange::Bounded(r));
    }
    if ctx.src.caps.pins_reads {
        o.if_match = src.e_tag.clone();
    }
    let r = ctx
        .src
        .inner
        .get_opts(&path, o)
        .await
        .map_err(store_err("reading the source"))?;
    let answer = Answer::of(&r.attributes, r.extensions.get::<DigestHeaders>());
    let s = r
        .into_stream()
        .map_err(store_err("reading the source"))
        .boxed();
    Ok((answer, s))
}

/// [`get`]'s stream, unless the object is an Azure blob whose answer states no digest
/// (`claims`, with that answer's): then its `range` is read again in ranges the service checks
/// ([`crate::transfer::range_md5`], the counts going to `seen`) and the GET's body is dropped unread, as
/// on every other destination's path ([`crate::transfer::copy::read::read_range`]).
pub(super) async fn by_range(
    ctx: &Ctx,
    src: &Entry,
    claims: &Claims,
    range: Range<u64>,
    s: BoxStream<'static, Result<Bytes, CopyError>>,
    seen: &Seen,
) -> BoxStream<'static, Result<Bytes, CopyError>> {
    if range.is_empty() || !crate::transfer::range_md5::wanted(claims) {
        return s;
    }
    let Some(rd) = crate::transfer::range_md5::Reader::of(ctx, src) else {
        return s;
    };
    let url = match ctx.src.path_of(&src.key) {
        Ok(path) => rd.signed(&path).await,
        Err(_) => None,
    };
    match url {
        Some(url) => {
            drop(s);
            crate::transfer::range_md5::stream(rd, range, url, seen.clone())
        }
        None => {
            // Read unchecked: the object cannot be labelled `source-range-md5` by its other
            // ranges (a SAS that failed to sign for one part only).
            seen.lock().expect("claims lock").ranges_unchecked += 1;
            s
        }
    }
}

/// MD5s of consecutive pieces of `size` bytes (a source's multipart layout) of a stream.
pub(super) struct PieceMd5s {
    size: u64,
    filled: u64,
    cur: md5::Md5,
    done: Vec<[u8; 16]>,
}

impl PieceMd5s {
    pub(super) fn new(size: u64) -> PieceMd5s {
        PieceMd5s {
            size,
            filled: 0,
            cur: md5::Md5::new(),
            done: Vec::new(),
        }
    }

    pub(super) fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let take = ((self.size - self.filled) as usize).min(data.len());
            self.cur.update(&data[..take]);
            self.filled += take as u64;
            data = &data[take..];
            if self.filled == self.size {
                let m = std::mem::replace(&mut self.cur, md5::Md5::new());
                self.done.push(m.finalize().into());
                self.filled = 0;
            }
        }
    }

    pub(super) fn finish(mut self) -> Vec<[u8; 16]> {
        if self.filled > 0 {
            self.done.push(self.cur.finalize().into());
        }
        self.done
    }
}

/// The parts of an object written as one stream, journaled as the writes behind them complete
/// (so that a killed run resumes from the last of them).
pub(super) struct Checkpoints<'a> {
    /// The temporary file's name, as journaled.
    name: &'a str,
    part: u64,
    /// Absolute offset of the next byte hashed, and the CRC64 of its part so far.
    at: u64,
    cur: Hasher,
    /// Finished parts whose writes may still be in flight: (index, digests, end offset).
    waiting: Vec<(usize, Digests, u64)>,
}

impl<'a> Checkpoints<'a> {
    pub(super) fn new(name: &'a str, part: u64, from: u64) -> Self {
        Checkpoints {
            name,
            part,
            at: from,
            cur: Hasher::new(false),
            waiting: Vec::new(),
        }
    }

    pub(super) fn update(&mut self, mut c: &[u8]) {
        while !c.is_empty() {
            let room = (self.part - self.at % self.part) as usize;
            let take = room.min(c.len());
            self.cur.update(&c[..take]);
            self.at += take as u64;
            c = &c[take..];
            if self.at.is_multiple_of(self.part) {
                let h = std::mem::replace(&mut self.cur, Hasher::new(false));
                let idx = (self.at / self.part - 1) as usize;
                self.waiting.push((idx, h.finish(), self.at));
            }
        }
    }

    /// Every byte before `off` is written: the parts that end there are journaled.
    pub(super) fn written_to(&mut self, ctx: &Ctx, src: &Entry, off: u64) -> Result<(), CopyError> {
        while let Some((idx, d, end)) = self.waiting.first().cloned() {
            if end > off {
                break;
            }
            journal_part(ctx, src, Some(self.name), idx, &d)?;
            self.waiting.remove(0);
        }
        Ok(())
    }
}

/// Writes a stream of bytes at `range` of the file, hashing each chunk (CRC64, the MD5 of each
/// `piece_md5`-sized piece when given, and the object's in-order digests when given) before it
/// is written; one write runs while the next batch is gathered. The stream must hold exactly the
/// range's length.
#[allow(clippy::too_many_arguments)]
pub(super) async fn write_stream(
    ctx: &Ctx,
    src: &Entry,
    file: &Arc<File>,
    dest: &Path,
    range: Range<u64>,
    mut s: BoxStream<'static, Result<Bytes, CopyError>>,
    piece_md5: Option<u64>,
    mut in_order: Option<&mut InOrder>,
    mut checkpoints: Option<&mut Checkpoints<'_>>,
) -> Result<(Digests, Vec<[u8; 16]>), CopyError> {
    let mut h = Hasher::new(false);
    let mut pieces = piece_md5.map(PieceMd5s::new);
    let mut off = range.start;
    let mut batch: Vec<Bytes> = Vec::new();
    let mut batched = 0usize;
    let mut pending: Option<tokio::task::JoinHandle<Result<(), CopyError>>> = None;
    let dest_shown = dest.to_path_buf();
    let mut done = false;
    while !done {
        match s.next().await {
            Some(c) => {
                let c = c?;
                if c.is_empty() {
                    continue;
                }
                if h.bytes_so_far() + c.len() as u64 > range.end - range.start {
                    return Err(CopyError::Mismatch(format!(
                        "the source returned more than the {} bytes asked for",
                        range.end - range.start
                    )));
                }
                h.update(&c);
                if let Some(p) = &mut pieces {
                    p.update(&c);
                }
                if let Some(w) = in_order.as_deref_mut() {
                    w.update(&c);
                }
                if let Some(k) = checkpoints.as_deref_mut() {
                    k.update(&c);
                }
                ctx.counters.read_bytes.fetch_add(c.len() as u64, Relaxed);
                batched += c.len();
                batch.push(c);
            }
            None => done = true,
        }
        if batched >= BATCH || (done && batched > 0) {
            if let Some(p) = pending.take() {
                p.await.expect("write task does not panic")?;
                if let Some(k) = checkpoints.as_deref_mut() {
                    k.written_to(ctx, src, off)?;
                }
            }
            let bufs = std::mem::take(&mut batch);
            let n = batched as u64;
            ctx.limits.take_bytes(n).await;
            let f = file.clone();
            let at = off;
            let shown = dest_shown.clone();
            pending = Some(tokio::task::spawn_blocking(move || {
                pwrite_all(&f, at, &bufs).map_err(write_err(&shown))
            }));
            off += n;
            batched = 0;
            ctx.counters.written_bytes.fetch_add(n, Relaxed);
            progress(ctx, src, n);
        }
    }
    if let Some(p) = pending.take() {
        p.await.expect("write task does not panic")?;
        if let Some(k) = checkpoints {
            k.written_to(ctx, src, off)?;
        }
    }
    let d = h.finish();
    exact_length(&d, &range)?;
    Ok((d, pieces.map(PieceMd5s::finish).unwrap_or_default()))
}

pub(super) fn progress(ctx: &Ctx, src: &Entry, n: u64) {
    if let Some(e) = ctx
        .counters
        .in_flight
        .lock()
        .expect("progress lock")
        .get_mut(&src.key)
    {
        e.0 += n;
    }
}

/// Copies `range` of a local source file into the temporary file with positional reads and
/// writes through one buffer, hashing each block once between the two.
pub(super) async fn copy_local_range(
    ctx: &Ctx,
    src: &Entry,
    from: &Arc<File>,
    src_path: &Path,
    to: &Arc<File>,
    dest: &Path,
    range: Range<u64>,
) -> Result<Digests, CopyError> {
    let mut h = Hasher::new(false);
    let mut buf = vec![0u8; BLOCK.min((range.end - range.start) as usize).max(1)];
    let mut off = range.start;
    while off < range.end {
        let want = ((range.end - off) as usize).min(buf.len());
        ctx.limits.take_bytes(want as u64).await;
        let (from, to) = (from.clone(), to.clone());
        let (sp, dp) = (src_path.to_path_buf(), dest.to_path_buf());
        let (b, hh, n) = blocking(move || {
            let mut buf = buf;
            let mut h = h;
            let mut got = 0;
            while got < want {
                let k = from
                    .read_at(&mut buf[got..want], off + got as u64)
                    .map_err(read_err(&sp))?;
                if k == 0 {
                    break;
                }
                got += k;
            }
            h.update(&buf[..got]);
            to.write_all_at(&buf[..got], off).map_err(write_err(&dp))?;
            Ok((buf, h, got))
        })
        .await?;
        buf = b;
        h = hh;
        if n < want {
            return Err(CopyError::Mismatch(format!(
                "{} holds fewer bytes than listed ({}); it changed while it was copied",
                src_path.display(),
                src.size
            )));
        }
        off += n as u64;
        ctx.counters.read_bytes.fetch_add(n as u64, Relaxed);
        ctx.counters.written_bytes.fetch_add(n as u64, Relaxed);
        progress(ctx, src, n as u64);
    }
    Ok(h.finish())
}

/// The parts of an object of `size` bytes in parts of `part` bytes (one part when `part` is 0
/// or the object fits).
/// The size of each ranged GET of a cloud object whose source parts are `layout` bytes: whole
/// multiples of the layout (so each range's source parts can be hashed), about the preferred part
/// size but no more than the object over the parts in flight, and as even as the layout allows:
/// 256 MiB in 5 MiB parts is read as 4 ranges of 65 MiB, not 4 of 60 MiB and a 16 MiB tail
/// that would run alone after them.
pub(super) fn range_size(size: u64, layout: u64, preferred: u64, in_flight: usize) -> u64 {
    let layout = layout.max(1);
    let target = preferred
        .min(size.div_ceil(in_flight.max(1) as u64))
        .max(layout);
    let count = size.div_ceil(target).max(1);
    size.div_ceil(count).div_ceil(layout) * layout
}

pub(super) fn ranges(size: u64, part: u64) -> Vec<Range<u64>> {
    if part == 0 || size <= part {
        return std::iter::once(0..size).collect();
    }
    (0..size.div_ceil(part))
        .map(|i| i * part..((i + 1) * part).min(size))
        .collect()
}

/// How the parts of this copy are read.
pub(super) enum Reads {
    /// A local file, by positional reads.
    Local(Arc<File>, PathBuf),
    /// A cloud object by ranged GETs; with the source's part size, the MD5 of each of its parts
    /// (ranges are whole multiples of it) so its multipart ETag can be recomputed.
    Ranged { src_part: Option<u64> },
    /// A cloud object by one GET, hashed in order.
    Stream,
}

/// The whole CRC64 of parts (combined in order) and the MD5s of the source's parts in order.
pub(super) fn combine(mut results: Vec<(usize, Digests, Vec<[u8; 16]>)>) -> (u64, Vec<[u8; 16]>) {
    results.sort_by_key(|(i, _, _)| *i);
    let mut crc: Option<u64> = None;
    for (_, d, _) in &results {
        crc = Some(match crc {
            None => d.crc64,
            Some(c) => checksum::crc64_combine(c, d.crc64, d.bytes),
        });
    }
    let md5s = results.into_iter().flat_map(|(_, _, m)| m).collect();
    (crc.unwrap_or_else(|| checksum::crc64_of(&[])), md5s)
}

/// Journals a part written into a resumable temporary file (`name`).
pub(super) fn journal_part(
    ctx: &Ctx,
    src: &Entry,
    name: Option<&str>,
    idx: usize,
    d: &Digests,
) -> Result<(), CopyError> {
    if let (Some(j), Some(name)) = (&ctx.journal, name) {
        j.lock().expect("journal lock").put_part(
            &src.key,
            &PartRecord {
                idx: idx as u32,
                content_id: name.to_string(),
                crc64: checksum::crc64_hex(d.crc64),
                md5: None,
                size: d.bytes,
            },
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn piece_md5s_do_not_depend_on_chunking() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let want: Vec<[u8; 16]> = data
            .chunks(4096)
            .map(|c| md5::Md5::digest(c).into())
            .collect();
        for chunk in [1, 333, 4096, 5000, 10_000] {
            let mut p = PieceMd5s::new(4096);
            for c in data.chunks(chunk) {
                p.update(c);
            }
            assert_eq!(p.finish(), want, "chunks of {chunk}");
        }
    }

    #[test]
    fn ranged_reads_are_even_whole_multiples_of_the_source_layout() {
        const MIB: u64 = 1 << 20;
        // 256 MiB in 5 MiB parts (rclone's layout), 64 MiB preferred, 4 in flight: 4 ranges of
        // 13 parts (65 MiB; the last 61 MiB), not 4 x 60 MiB and a 16 MiB tail.
        let p = range_size(256 * MIB, 5 * MIB, 64 * MIB, 4);
        assert_eq!(p, 65 * MIB);
        assert_eq!(ranges(256 * MIB, p).len(), 4);
        // A layout larger than the target: one source part per range.
        assert_eq!(range_size(1024 * MIB, 100 * MIB, 64 * MIB, 4), 100 * MIB);
        // A small object: one range.
        assert_eq!(range_size(12 * MIB, 5 * MIB, 64 * MIB, 4), 5 * MIB);
        assert_eq!(ranges(12 * MIB, 5 * MIB).len(), 3);
        // 1 GiB in 8 MiB parts: 16 ranges of 64 MiB.
        assert_eq!(range_size(1024 * MIB, 8 * MIB, 64 * MIB, 4), 64 * MIB);
        for (size, layout) in [
            (256 * MIB + 7, 5 * MIB),
            (3 * MIB, 5 * MIB),
            (999 * MIB, 7 * MIB),
        ] {
            let p = range_size(size, layout, 64 * MIB, 4);
            assert_eq!(p % layout, 0);
            assert!(p <= (64 * MIB).max(layout) + layout, "{p}");
        }
    }

    #[test]
    fn ranges_cover_the_object() {
        assert_eq!(ranges(0, 5), vec![0..0]);
        assert_eq!(ranges(5, 5), vec![0..5]);
        assert_eq!(ranges(11, 5), vec![0..5, 5..10, 10..11]);
    }
}
