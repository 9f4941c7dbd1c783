//! Reading a source's bytes: a range as a stream pinned to the listed ETag ([`read_range`]; an
//! Azure blob without a digest through range_md5's checked reads), a local file in reused 1 MiB
//! blocks with positional reads, and a whole range fetched and hashed with its length checked
//! ([`fetch`]).

use super::context::{CopyError, Ctx, store_err};
use crate::checksum::{Digests, Hasher, META_CRC64};
use crate::store::http::DigestHeaders;
use crate::store::list::Entry;
use crate::transfer::claims::Claims;
use crate::transfer::fidelity::ObjectMeta;
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use object_store::{Attribute, GetOptions, GetRange};
use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

/// A byte range of a source object as a stream, pinned to the listed ETag where the store has one.
pub(in crate::transfer) fn read_range(
    ctx: &Ctx,
    src: &Entry,
    range: Range<u64>,
    seen: Option<Seen>,
) -> BoxStream<'static, Result<Bytes, CopyError>> {
    if let Some(root) = ctx.src.local_root() {
        return local_range(root.join(&src.key), range);
    }
    let store = ctx.src.inner.clone();
    let path = match ctx.src.path_of(&src.key) {
        Ok(p) => p,
        Err(e) => {
            let err = CopyError::Store {
                what: "source key",
                source: e.into(),
            };
            return stream::once(async move { Err(err) }).boxed();
        }
    };
    let pin = ctx.src.caps.pins_reads;
    if pin {
        ctx.counters.get.fetch_add(1, Relaxed);
    }
    let etag = src.e_tag.clone();
    let whole = range.start == 0 && range.end == src.size;
    let azure_src = ctx.src.is_azure();
    // An Azure blob whose answer states no digest is read again in ranges the service checks
    // (range_md5.rs); the first answer's body is dropped unread.
    let by_range = seen
        .as_ref()
        .filter(|_| range.end > range.start)
        .and_then(|_| crate::transfer::range_md5::Reader::of(ctx, src));
    stream::once(async move {
        let mut o = GetOptions::default();
        if !whole {
            o.range = Some(GetRange::Bounded(range.clone()));
        }
        if pin {
            o.if_match = etag;
        }
        let r = store
            .get_opts(&path, o)
            .await
            .map_err(store_err("reading the source"))?;
        if let Some(seen) = seen {
            let want = {
                let mut c = seen.lock().expect("claims lock");
                c.meta = Some(ObjectMeta::of_attributes(
                    &r.attributes,
                    r.extensions.get::<DigestHeaders>(),
                    azure_src,
                ));
                if let Some(v) = r.attributes.get(&Attribute::Metadata(META_CRC64.into())) {
                    c.add_meta_crc64(v);
                }
                if let Some(h) = r.extensions.get::<DigestHeaders>() {
                    c.add_headers(h, !whole);
                }
                crate::transfer::range_md5::wanted(&c)
            };
            if let Some(rd) = by_range.filter(|_| want) {
                if let Some(url) = rd.signed(&path).await {
                    drop(r);
                    return Ok::<_, CopyError>(crate::transfer::range_md5::stream(
                        rd, range, url, seen,
                    ));
                }
                // No URL could be signed for this range: its bytes come unchecked, and the
                // object may not be called range-checked on the strength of its other ranges.
                seen.lock().expect("claims lock").ranges_unchecked += 1;
            }
        }
        Ok::<_, CopyError>(
            r.into_stream()
                .map_err(store_err("reading the source"))
                .boxed(),
        )
    })
    .try_flatten()
    .boxed()
}

/// Where a read records what the source claims about its bytes (moverctl's CRC64 in metadata,
/// digest headers).
pub(in crate::transfer) type Seen = Arc<Mutex<Claims>>;

/// A 1 MiB read block of a local file, used again once the bytes handed on are dropped (sent
/// on a socket or written to a file): a fresh block is a new mapping, faulted in and zeroed page
/// by page (about a fifth of a local → S3 copy's CPU). At most [`Block::KEEP`] free blocks are
/// kept, as much as the default `--max-buffer` holds in flight.
struct Block {
    bytes: Vec<u8>,
    len: usize,
}

static FREE_BLOCKS: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());

impl Block {
    const SIZE: usize = 1 << 20;
    const KEEP: usize = 128;

    fn take() -> Block {
        let free = FREE_BLOCKS.lock().expect("block pool lock").pop();
        Block {
            bytes: free.unwrap_or_else(|| vec![0u8; Block::SIZE]),
            len: 0,
        }
    }

    /// Up to `n` (at most [`Block::SIZE`]) bytes of `file` from `off` with positional reads; short
    /// only at the end of the file. With a hasher, each quarter is hashed as soon as it is read,
    /// on this thread while the bytes are still in its core's cache.
    fn read(
        file: &std::fs::File,
        off: u64,
        n: usize,
        mut hash: Option<&mut Hasher>,
    ) -> std::io::Result<Block> {
        use std::os::unix::fs::FileExt;
        let step = if hash.is_some() { Block::SIZE / 4 } else { n };
        let mut buf = Block::take();
        let mut got = 0;
        while got < n {
            let upto = (got + step).min(n);
            let k = file.read_at(&mut buf.bytes[got..upto], off + got as u64)?;
            if k == 0 {
                break;
            }
            if let Some(h) = hash.as_deref_mut() {
                h.update(&buf.bytes[got..got + k]);
            }
            got += k;
        }
        buf.len = got;
        Ok(buf)
    }
}

impl AsRef<[u8]> for Block {
    fn as_ref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        let bytes = std::mem::take(&mut self.bytes);
        let mut free = FREE_BLOCKS.lock().expect("block pool lock");
        if bytes.len() == Block::SIZE && free.len() < Block::KEEP {
            free.push(bytes);
        }
    }
}

/// The local file at `path` still has the ETag (inode, mtime, size, ctime) it was listed with.
pub(super) async fn local_still_listed(
    path: std::path::PathBuf,
    src: &Entry,
) -> Result<(), CopyError> {
    let Some(listed) = src.e_tag.clone() else {
        return Ok(());
    };
    let shown = path.display().to_string();
    let meta = tokio::task::spawn_blocking(move || std::fs::metadata(path))
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))
        .and_then(|r| r)
        .map_err(|e| CopyError::Io {
            path: shown,
            source: e,
        })?;
    if crate::store::local::local_etag(&meta) != listed {
        return Err(CopyError::SourceChanged);
    }
    Ok(())
}

/// Up to `n` bytes (at most 1 MiB) of `file` from `off` in a reused block, hashed into `h` a
/// quarter at a time as they are read; short only at the end of the file.
pub(in crate::transfer) fn read_hashed_block(
    file: &std::fs::File,
    off: u64,
    n: usize,
    h: &mut Hasher,
) -> std::io::Result<Bytes> {
    let b = Block::read(file, off, n.min(Block::SIZE), Some(h))?;
    Ok(Bytes::from_owner(b))
}

/// Opens a local file on the blocking pool.
pub(in crate::transfer) async fn open_local(
    path: std::path::PathBuf,
) -> std::io::Result<std::fs::File> {
    tokio::task::spawn_blocking(move || std::fs::File::open(path))
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))
        .and_then(|r| r)
}

/// The bytes a read of `range` hashed must be exactly its length.
pub(in crate::transfer) fn exact_length(d: &Digests, range: &Range<u64>) -> Result<(), CopyError> {
    let want = range.end - range.start;
    if d.bytes != want {
        return Err(CopyError::Mismatch(format!(
            "the source returned {} bytes for {}..{}, expected {want}",
            d.bytes, range.start, range.end
        )));
    }
    Ok(())
}

/// Local reads in 1 MiB blocks (object_store's local stream reads 8 KiB at a time), each a
/// positional read on the blocking pool straight into the block handed on (tokio's `File` reads
/// into a buffer of its own and copies from it: one memory copy per byte more).
fn local_range(
    path: std::path::PathBuf,
    range: Range<u64>,
) -> BoxStream<'static, Result<Bytes, CopyError>> {
    const BLOCK: u64 = Block::SIZE as u64;
    let shown = path.display().to_string();
    let io = |shown: &str| {
        let shown = shown.to_string();
        move |e: std::io::Error| CopyError::Io {
            path: shown.clone(),
            source: e,
        }
    };
    stream::once(async move {
        let f = open_local(path).await.map_err(io(&shown))?;
        Ok::<_, CopyError>((Arc::new(f), range.start, range.end, shown))
    })
    .map_ok(move |(f, start, end, shown)| {
        stream::try_unfold(
            (f, start, end, shown),
            move |(f, off, end, shown)| async move {
                if off >= end {
                    return Ok(None);
                }
                let n = (end - off).min(BLOCK) as usize;
                let file = f.clone();
                let buf = tokio::task::spawn_blocking(move || Block::read(&file, off, n, None))
                    .await
                    .map_err(|e| std::io::Error::other(e.to_string()))
                    .and_then(|r| r)
                    .map_err(io(&shown))?;
                if buf.len == 0 {
                    return Ok(None);
                }
                let next = off + buf.len as u64;
                Ok(Some((Bytes::from_owner(buf), (f, next, end, shown))))
            },
        )
    })
    .try_flatten()
    .boxed()
}

/// Read a range fully, hashing as it streams; its length must be exact. (`--bwlimit` paces the
/// writes, not the reads: reads run ahead only as far as the buffers allow, so the upload side
/// sees a steady rate instead of all parts finishing their paced reads at once and then
/// bursting.)
pub(super) async fn fetch(
    ctx: &Ctx,
    src: &Entry,
    range: Range<u64>,
    md5: bool,
    seen: Option<Seen>,
) -> Result<(Vec<Bytes>, Digests), CopyError> {
    if let Some(root) = ctx.src.local_root() {
        return local_fetch(ctx, root.join(&src.key), range, md5).await;
    }
    let mut s = read_range(ctx, src, range.clone(), seen);
    let mut h = Hasher::new(md5);
    let mut chunks = Vec::new();
    while let Some(chunk) = s.next().await {
        let chunk = chunk?;
        ctx.counters
            .read_bytes
            .fetch_add(chunk.len() as u64, Relaxed);
        h.update(&chunk);
        chunks.push(chunk);
    }
    let d = h.finish();
    exact_length(&d, &range)?;
    Ok((chunks, d))
}

/// [`fetch`] of a local file: each 1 MiB block is read and hashed on the same blocking thread, a
/// quarter at a time while the bytes are still in that core's cache (hashed later on a runtime
/// thread, they were read from memory again: 64 x 16 MiB local -> S3 took 0.245 s of user CPU
/// per GiB instead of 0.21).
async fn local_fetch(
    ctx: &Ctx,
    path: std::path::PathBuf,
    range: Range<u64>,
    md5: bool,
) -> Result<(Vec<Bytes>, Digests), CopyError> {
    const BLOCK: u64 = Block::SIZE as u64;
    let shown = path.display().to_string();
    let io = |e: std::io::Error| CopyError::Io {
        path: shown.clone(),
        source: e,
    };
    let f = Arc::new(open_local(path).await.map_err(io)?);
    let mut h = Hasher::new(md5);
    let mut chunks = Vec::new();
    let mut off = range.start;
    while off < range.end {
        let n = (range.end - off).min(BLOCK) as usize;
        let file = f.clone();
        let (buf, back) = tokio::task::spawn_blocking(move || {
            Block::read(&file, off, n, Some(&mut h)).map(|b| (b, h))
        })
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))
        .and_then(|r| r)
        .map_err(io)?;
        h = back;
        if buf.len == 0 {
            break;
        }
        off += buf.len as u64;
        ctx.counters.read_bytes.fetch_add(buf.len as u64, Relaxed);
        chunks.push(Bytes::from_owner(buf));
    }
    let d = h.finish();
    exact_length(&d, &range)?;
    Ok((chunks, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_read_blocks_are_used_again_up_to_a_bound() {
        let b = Block::take();
        let at = b.bytes.as_ptr();
        drop(Bytes::from_owner(b));
        assert!(
            FREE_BLOCKS.lock().unwrap().iter().any(|v| v.as_ptr() == at),
            "a dropped block is kept for the next read"
        );
        let many: Vec<Block> = (0..Block::KEEP + 8).map(|_| Block::take()).collect();
        drop(many);
        assert!(FREE_BLOCKS.lock().unwrap().len() <= Block::KEEP);
    }
}
