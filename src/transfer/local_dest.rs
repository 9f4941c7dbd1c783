//! Writing objects into a local folder (a parallel file system mount, node-local NVMe).
//!
//! Every object, small or large, is written into one temporary file in its destination folder
//! (named by [`crate::store::local::partial_name`], never listed as an object), preallocated to
//! its size (`fallocate`; file systems without it, such as some network mounts, get a sparse
//! `set_len`), with positional writes, so several parts of one object are in flight at once and
//! no byte is copied between them. The CRC64 is computed once, as the bytes are written; the
//! source's own digests are checked ([`super::copy::source::check_source`]) before the file gets its final
//! name with one atomic `rename`. Until then a reader of the destination sees the old object or
//! nothing, never a part of the new one.
//!
//! How parts are read:
//! - a local source: each part with positional reads (1 MiB blocks, one buffer per part);
//! - a cloud source whose only in-order claim is a multipart ETag: ranged GETs (pinned to the
//!   listed ETag) of whole multiples of the source's part size (about `--part-size` each), the
//!   MD5 of each source part computed as it streams, so the ETag is recomputed from them;
//! - a cloud source whose digest needs every byte in order (a plain MD5, a CRC32C): one GET,
//!   hashed as it streams, the writes running behind it;
//! - an Azure blob whose answer states no digest (a block list the SDKs committed without
//!   Content-MD5): each of those GETs is replaced by reads of at most 4 MiB that Azure checks
//!   ([`super::range_md5`], `source-range-md5`), the GET's body dropped unread; where they
//!   cannot be made the object is `unverified`.
//!
//! Resume after a crash: a large object read by parts (a local source, or ranged GETs) is
//! journaled as it goes — the temporary file's name as the object's upload, and each part's
//! CRC64 once it is written. A run killed part way (`kill -9`, an OOM kill, a node lost) leaves the
//! file; the next run adopts it before its listing would sweep it ([`adopt_partials`]), reads
//! back each journaled part and keeps the parts whose bytes still have the journaled CRC64 (a part
//! a crash lost or tore is fetched again), and fetches only the rest. The same source version,
//! size and part size are required, as for a multipart upload. A copy that fails with an error
//! (not a crash) removes its file and starts afresh next time. An object read with one GET (its
//! digest needs the bytes in order) is journaled in parts of the plan's part size as the writes
//! behind them complete ([`Checkpoints`]); it resumes from the longest run of kept parts from its
//! first byte, read back through its in-order digests, and one ranged GET fetches the rest.
//!
//! Durability (`--fsync`): `object` (default) syncs the file's data and its folder entry before
//! the object is journaled as done; `end` syncs the destination file system once when the run
//! ends (a crash before that may lose objects the journal calls done: the next run, trusting the
//! journal, would not copy them again without `--no-journal`-like care); `never` leaves it to the
//! operating system.
//!
//! Metadata: with `--preserve-mtime` (default) the file gets the source's last-modified time
//! (or the time a local source recorded in moverctl's metadata), and the mode a local source
//! recorded (`moverctl_mode`).

use super::claims::{Claims, InOrder, Ordered};
use super::copy::context::{CopyError, Ctx, Outcome, crc_suffices, store_err};
use super::copy::read::exact_length;
use super::copy::source::{check_source, discover};
use super::range_md5::Seen;
use super::verification::{Verification, WriteCheck};
use super::{Fsync, Verify};
use crate::checksum::{self, Digests, Hasher, META_CRC64, META_MODE, META_MTIME};
use crate::journal::{Journal, JournalError, ObjectRecord, PartRecord, State};
use crate::store::http::DigestHeaders;
use crate::store::list::Entry;
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use md5::Digest as _;
use object_store::{Attribute, Attributes, GetOptions, GetRange};
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

/// Bytes gathered before one positional write (network chunks are small). Small enough that the
/// bytes are still in the CPU's cache when the kernel copies them into the page cache: with 1 MiB
/// batches, 4 x 256 MiB S3 -> local from a CRC64 source spent 1.1-1.5 s of system CPU, most of it
/// in that copy, against 0.7-0.9 s with 128-256 KiB (and 60-85 MB peak RSS against 33-40).
const BATCH: usize = 256 << 10;
/// Block of a positional read from a local source.
const BLOCK: usize = 1 << 20;

/// Where the bytes of one object go: its temporary file, removed unless it was renamed.
struct Partial {
    tmp: PathBuf,
    file: Arc<File>,
    renamed: bool,
}

impl Drop for Partial {
    fn drop(&mut self) {
        if !self.renamed {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

fn write_err(path: &Path) -> impl Fn(std::io::Error) -> CopyError + '_ {
    move |source| CopyError::Write {
        path: path.display().to_string(),
        source,
    }
}

fn read_err(path: &Path) -> impl Fn(std::io::Error) -> CopyError + '_ {
    move |source| CopyError::Io {
        path: path.display().to_string(),
        source,
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, CopyError> + Send + 'static,
) -> Result<T, CopyError> {
    tokio::task::spawn_blocking(f)
        .await
        .expect("blocking file work does not panic")
}

/// Reserves `size` bytes for a file: `fallocate` where the file system has it (a full disk fails
/// here, before any byte is read), else the length alone (tmpfs on old kernels, some network file
/// systems).
fn preallocate(f: &File, size: u64) -> std::io::Result<()> {
    if size == 0 {
        return Ok(());
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a valid open descriptor; mode 0 allocates and extends the file.
        let rc = unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, size as libc::off_t) };
        if rc == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) | Some(libc::EINVAL) => {}
            _ => return Err(e),
        }
    }
    f.set_len(size)
}

/// Creates the folders and the preallocated temporary file for `dest`.
fn create_partial(dest: &Path, size: u64) -> Result<Partial, CopyError> {
    let err = write_err(dest);
    let dir = dest.parent().expect("a destination file has a folder");
    std::fs::create_dir_all(dir).map_err(&err)?;
    let name = dest
        .file_name()
        .and_then(|n| n.to_str())
        .expect("keys are UTF-8");
    let tmp = dir.join(crate::store::local::partial_name(name));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(&err)?;
    let p = Partial {
        tmp,
        file: Arc::new(file),
        renamed: false,
    };
    preallocate(&p.file, size).map_err(&err)?;
    Ok(p)
}

/// Writes all of `bufs` at `off` with as few `pwritev` calls as the kernel allows.
fn pwrite_all(f: &File, mut off: u64, bufs: &[Bytes]) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let mut idx = 0;
    let mut skip = 0usize;
    while idx < bufs.len() {
        let iov: Vec<libc::iovec> = bufs[idx..]
            .iter()
            .take(512)
            .enumerate()
            .map(|(i, b)| {
                let s = if i == 0 { &b[skip..] } else { &b[..] };
                libc::iovec {
                    iov_base: s.as_ptr() as *mut libc::c_void,
                    iov_len: s.len(),
                }
            })
            .collect();
        // SAFETY: every iovec points into a live Bytes of `bufs` for the call's duration.
        let n = unsafe {
            libc::pwritev(
                f.as_raw_fd(),
                iov.as_ptr(),
                iov.len() as libc::c_int,
                off as libc::off_t,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        let mut n = n as usize;
        off += n as u64;
        while n > 0 {
            let rem = bufs[idx].len() - skip;
            if n >= rem {
                n -= rem;
                idx += 1;
                skip = 0;
            } else {
                skip += n;
                n = 0;
            }
        }
        while idx < bufs.len() && bufs[idx].len() == skip {
            idx += 1;
            skip = 0;
        }
    }
    Ok(())
}

/// What a GET answered besides the bytes: moverctl's metadata and the digest headers.
#[derive(Debug, Default, Clone)]
struct Answer {
    crc64_meta: Option<String>,
    mode: Option<u32>,
    mtime: Option<chrono::DateTime<chrono::Utc>>,
    headers: Option<DigestHeaders>,
}

impl Answer {
    fn of(attrs: &Attributes, headers: Option<&DigestHeaders>) -> Answer {
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
async fn get(
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
/// ([`super::range_md5`], the counts going to `seen`) and the GET's body is dropped unread, as
/// on every other destination's path ([`super::copy::read::read_range`]).
async fn by_range(
    ctx: &Ctx,
    src: &Entry,
    claims: &Claims,
    range: Range<u64>,
    s: BoxStream<'static, Result<Bytes, CopyError>>,
    seen: &Seen,
) -> BoxStream<'static, Result<Bytes, CopyError>> {
    if range.is_empty() || !super::range_md5::wanted(claims) {
        return s;
    }
    let Some(rd) = super::range_md5::Reader::of(ctx, src) else {
        return s;
    };
    let url = match ctx.src.path_of(&src.key) {
        Ok(path) => rd.signed(&path).await,
        Err(_) => None,
    };
    match url {
        Some(url) => {
            drop(s);
            super::range_md5::stream(rd, range, url, seen.clone())
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
struct PieceMd5s {
    size: u64,
    filled: u64,
    cur: md5::Md5,
    done: Vec<[u8; 16]>,
}

impl PieceMd5s {
    fn new(size: u64) -> PieceMd5s {
        PieceMd5s {
            size,
            filled: 0,
            cur: md5::Md5::new(),
            done: Vec::new(),
        }
    }

    fn update(&mut self, mut data: &[u8]) {
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

    fn finish(mut self) -> Vec<[u8; 16]> {
        if self.filled > 0 {
            self.done.push(self.cur.finalize().into());
        }
        self.done
    }
}

/// The parts of an object written as one stream, journaled as the writes behind them complete
/// (so that a killed run resumes from the last of them).
struct Checkpoints<'a> {
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
    fn new(name: &'a str, part: u64, from: u64) -> Self {
        Checkpoints {
            name,
            part,
            at: from,
            cur: Hasher::new(false),
            waiting: Vec::new(),
        }
    }

    fn update(&mut self, mut c: &[u8]) {
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
    fn written_to(&mut self, ctx: &Ctx, src: &Entry, off: u64) -> Result<(), CopyError> {
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
async fn write_stream(
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

fn progress(ctx: &Ctx, src: &Entry, n: u64) {
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
async fn copy_local_range(
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
fn range_size(size: u64, layout: u64, preferred: u64, in_flight: usize) -> u64 {
    let layout = layout.max(1);
    let target = preferred
        .min(size.div_ceil(in_flight.max(1) as u64))
        .max(layout);
    let count = size.div_ceil(target).max(1);
    size.div_ceil(count).div_ceil(layout) * layout
}

fn ranges(size: u64, part: u64) -> Vec<Range<u64>> {
    if part == 0 || size <= part {
        return std::iter::once(0..size).collect();
    }
    (0..size.div_ceil(part))
        .map(|i| i * part..((i + 1) * part).min(size))
        .collect()
}

/// How the parts of this copy are read.
enum Reads {
    /// A local file, by positional reads.
    Local(Arc<File>, PathBuf),
    /// A cloud object by ranged GETs; with the source's part size, the MD5 of each of its parts
    /// (ranges are whole multiples of it) so its multipart ETag can be recomputed.
    Ranged { src_part: Option<u64> },
    /// A cloud object by one GET, hashed in order.
    Stream,
}

/// Copies one object into a local destination folder (see the module comment). `part` is the
/// part size the plan chose (None: a small object, one part).
pub(super) async fn copy(ctx: &Ctx, src: &Entry, part: Option<u64>) -> Result<Outcome, CopyError> {
    let r = copy_file(ctx, src, part).await;
    if r.is_err()
        && let Some(j) = &ctx.journal
    {
        // The temporary file went with the error (only a killed run leaves one to resume): the
        // journal's row of it goes too, so that the failure is journaled as one.
        let j = j.lock().expect("journal lock");
        if j.get(&src.key)?.is_some_and(|r| carries_partial(&r)) {
            j.forget(&src.key)?;
        }
    }
    r
}

/// Whether a journal row is a local copy in progress: its upload is a temporary file's name.
fn carries_partial(r: &ObjectRecord) -> bool {
    r.state == State::Copying
        && r.upload_id
            .as_deref()
            .is_some_and(|n| crate::store::local::parse_partial(n).is_some())
}

/// Before a run lists a local destination (whose walk removes temporary files of writers that
/// are gone), each temporary file the journal names as a copy in progress is renamed to one of
/// this process and the journal follows, so it survives the walk and the copy resumes from it.
/// A file that is gone (or still has a live writer) leaves the row as it is: the copy finds no
/// file and starts again.
pub(super) fn adopt_partials(
    dst: &crate::store::Store,
    j: &mut Journal,
) -> Result<u64, JournalError> {
    let Some(root) = &dst.local_root else {
        return Ok(0);
    };
    let mut adopted = 0;
    for (key, name) in j.open_uploads()? {
        let Some((pid, host)) = crate::store::local::parse_partial(&name) else {
            continue;
        };
        if !crate::store::local::writer_gone(pid, host) {
            continue;
        }
        let Ok(path) = dst.path_of(&key) else {
            continue;
        };
        let dest = root.join(path.as_ref());
        let (Some(dir), Some(file)) = (dest.parent(), dest.file_name().and_then(|n| n.to_str()))
        else {
            continue;
        };
        let fresh = crate::store::local::partial_name(file);
        if std::fs::rename(dir.join(&name), dir.join(&fresh)).is_err() {
            continue;
        }
        if let Some(mut r) = j.get(&key)? {
            r.upload_id = Some(fresh);
            j.put_all(&[r])?;
            adopted += 1;
        }
    }
    Ok(adopted)
}

/// The temporary file of a large object read by parts, and the parts a killed run journaled in
/// it (by index); a new, journaled one when there is none to resume (or it is of another
/// source version, size or part size).
async fn resumable_partial(
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
async fn fresh_partial(
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
async fn reuse_part(
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
async fn reuse_in_order(
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

/// Journals a part written into a resumable temporary file (`name`).
fn journal_part(
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

async fn copy_file(ctx: &Ctx, src: &Entry, part: Option<u64>) -> Result<Outcome, CopyError> {
    let plan_part = part;
    let root = ctx
        .dst
        .local_root
        .clone()
        .expect("local destinations have a root");
    // The key as object_store validates it (no empty, '.' or '..' segments).
    let key_path = ctx.dst.path_of(&src.key).map_err(|e| CopyError::Store {
        what: "destination key",
        source: e.into(),
    })?;
    let dest = root.join(key_path.as_ref());
    let size = src.size;

    // What the source claims, and how it is read.
    let (mut claims, reads, part) = if let Some(sroot) = &ctx.src.local_root {
        let sp = sroot.join(&src.key);
        let spc = sp.clone();
        let f = blocking(move || File::open(&spc).map_err(read_err(&spc))).await?;
        (
            Claims::default(),
            Reads::Local(Arc::new(f), sp),
            part.unwrap_or(size),
        )
    } else if part.is_none() {
        let strict = ctx.opts.verify == Verify::Strict;
        let mut claims = discover(ctx, src, strict).await?;
        if crc_suffices(ctx) {
            claims.prefer_crc();
        }
        (claims, Reads::Stream, size)
    } else {
        let mut claims = discover(ctx, src, true).await?;
        // A source that states a CRC is checked by it alone: no MD5 pass, and its ranges
        // need not follow its own part layout.
        if crc_suffices(ctx) {
            claims.prefer_crc();
        }
        let rest = Claims {
            parts_etag: None,
            ..claims.clone()
        };
        if rest.needs_in_order() {
            (claims, Reads::Stream, size)
        } else {
            // Ranges are whole multiples of the source's own part size, so its multipart ETag
            // comes from the MD5s of its parts; about the preferred part size each (few requests:
            // a 5 MiB layout is not read with 5 MiB GETs), enough of them to fill the parts in
            // flight.
            let layout = claims.parts_etag.as_ref().map(|(p, _)| *p);
            let want = part.unwrap_or(size);
            let p = match layout {
                Some(lp) => range_size(
                    size,
                    lp,
                    ctx.opts.part_rule.preferred_part,
                    ctx.opts.part_concurrency,
                ),
                None => want,
            };
            (claims, Reads::Ranged { src_part: layout }, p)
        }
    };
    let parts = ranges(size, part);

    // Large objects are journaled part by part as they are written, so a killed run resumes:
    // parts read independently as they complete, an object read as one stream in parts of the
    // plan's size as the writes behind them complete.
    let (journal_part_size, journal_parts) = match (&reads, plan_part) {
        (Reads::Stream, Some(p)) => (p, ranges(size, p)),
        _ => (part, parts.clone()),
    };
    let (partial, carried) =
        if journal_parts.len() > 1 && ctx.journal.is_some() && !ctx.opts.dry_run {
            let (p, c) =
                resumable_partial(ctx, src, &dest, journal_part_size, journal_parts.len()).await?;
            (p, Some(c))
        } else {
            let d2 = dest.clone();
            (blocking(move || create_partial(&d2, size)).await?, None)
        };
    let journaled_as = carried.as_ref().and_then(|_| {
        partial
            .tmp
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string)
    });
    let carried_part = |i: usize| carried.as_ref().and_then(|c| c[i].as_ref());
    let large = parts.len() > 1;
    if large {
        ctx.counters
            .in_flight
            .lock()
            .expect("progress lock")
            .insert(src.key.clone(), (0, size));
    }
    let _in_flight = InFlight(ctx, src.key.clone(), large);

    // Memory: each part in flight holds up to two batches (one written, one gathered).
    let mib = ((2 * BATCH) >> 20) as u32;
    let answer: Arc<Mutex<Option<Answer>>> = Arc::new(Mutex::new(None));
    // What the range-checked reads of an Azure blob without a digest found (see by_range).
    let seen: Seen = Arc::new(Mutex::new(Claims::default()));
    let (crc, ordered) = match &reads {
        Reads::Stream => {
            let _permit = ctx
                .buffers
                .acquire_many(mib.min(ctx.buffer_mib))
                .await
                .expect("buffer semaphore open");
            // The longest run of a killed run's parts from the first byte whose bytes still
            // have their journaled CRC64, read back in order and hashed for every in-order
            // digest the object may be checked by (its claims are known after the GET).
            let mut kept = 0u64;
            let mut kept_crc: Option<u64> = None;
            let mut w = None;
            if let Some(c) = &carried {
                let mut all = InOrder::new(&Claims {
                    md5: Some([0; 16]),
                    crc32c: Some(0),
                    parts_etag: claims.parts_etag.clone(),
                    ..Default::default()
                });
                for (i, r) in journal_parts.iter().enumerate() {
                    let Some(rec) = c[i].as_ref() else {
                        break;
                    };
                    let Some((d, next)) =
                        reuse_in_order(ctx, src, &partial.file, &dest, r.clone(), rec, &all)
                            .await?
                    else {
                        break;
                    };
                    all = next;
                    kept_crc = Some(match kept_crc {
                        None => d.crc64,
                        Some(k) => checksum::crc64_combine(k, d.crc64, d.bytes),
                    });
                    kept = r.end;
                }
                if kept > 0 {
                    w = Some(all);
                }
            }
            let (a, s) = get(ctx, src, (kept > 0).then_some(kept..size)).await?;
            if let Some(v) = &a.crc64_meta {
                claims.add_meta_crc64(v);
            }
            if let Some(h) = &a.headers {
                claims.add_headers(h, kept > 0);
            }
            *answer.lock().expect("answer lock") = Some(a);
            let s = by_range(ctx, src, &claims, kept..size, s, &seen).await;
            if w.is_none() {
                w = claims.needs_in_order().then(|| InOrder::new(&claims));
            }
            let mut k = journaled_as
                .as_deref()
                .map(|n| Checkpoints::new(n, journal_part_size, kept));
            let (d, _) = write_stream(
                ctx,
                src,
                &partial.file,
                &dest,
                kept..size,
                s,
                None,
                w.as_mut(),
                k.as_mut(),
            )
            .await?;
            let crc = match kept_crc {
                Some(k) => checksum::crc64_combine(k, d.crc64, d.bytes),
                None => d.crc64,
            };
            (crc, w.map(InOrder::finish))
        }
        Reads::Local(f, sp) => {
            let results: Vec<(usize, Digests)> = stream::iter(parts.iter().cloned().enumerate())
                .map(|(i, r)| {
                    let (f, sp, file, dest) = (f, sp, &partial.file, &dest);
                    let (carried, name) = (carried_part(i), journaled_as.as_deref());
                    async move {
                        let _permit = ctx
                            .buffers
                            .acquire_many(((BLOCK >> 20) as u32).clamp(1, ctx.buffer_mib))
                            .await
                            .expect("buffer semaphore open");
                        if let Some((d, _)) =
                            reuse_part(ctx, src, file, dest, r.clone(), carried, None).await?
                        {
                            return Ok((i, d));
                        }
                        let d = copy_local_range(ctx, src, f, sp, file, dest, r).await?;
                        journal_part(ctx, src, name, i, &d)?;
                        Ok::<_, CopyError>((i, d))
                    }
                })
                .buffer_unordered(ctx.opts.part_concurrency.max(1))
                .try_collect()
                .await?;
            let results = results.into_iter().map(|(i, d)| (i, d, Vec::new()));
            (combine(results.collect()).0, None)
        }
        Reads::Ranged { src_part } => {
            let src_part = *src_part;
            let results: Vec<(usize, Digests, Vec<[u8; 16]>)> =
                stream::iter(parts.iter().cloned().enumerate())
                    .map(|(i, r)| {
                        let (file, dest, answer) = (&partial.file, &dest, answer.clone());
                        let (claims, seen) = (&claims, &seen);
                        let (carried, name) = (carried_part(i), journaled_as.as_deref());
                        async move {
                            let _permit = ctx
                                .buffers
                                .acquire_many(mib.min(ctx.buffer_mib))
                                .await
                                .expect("buffer semaphore open");
                            if let Some((d, m)) =
                                reuse_part(ctx, src, file, dest, r.clone(), carried, src_part)
                                    .await?
                            {
                                return Ok((i, d, m));
                            }
                            let (a, s) = get(ctx, src, Some(r.clone())).await?;
                            // This range's answer with what the object's claims say.
                            let mut c = claims.clone();
                            if let Some(v) = &a.crc64_meta {
                                c.add_meta_crc64(v);
                            }
                            if let Some(h) = &a.headers {
                                c.add_headers(h, true);
                            }
                            let s = by_range(ctx, src, &c, r.clone(), s, seen).await;
                            answer.lock().expect("answer lock").get_or_insert(a);
                            let (d, m) =
                                write_stream(ctx, src, file, dest, r, s, src_part, None, None)
                                    .await?;
                            journal_part(ctx, src, name, i, &d)?;
                            Ok::<_, CopyError>((i, d, m))
                        }
                    })
                    .buffer_unordered(ctx.opts.part_concurrency.max(1))
                    .try_collect()
                    .await?;
            let (crc, md5s) = combine(results);
            let ordered = src_part.map(|_| Ordered {
                parts_etag: Some(checksum::multipart_etag(&md5s)),
                ..Default::default()
            });
            if let Some(a) = answer.lock().expect("answer lock").as_ref()
                && let Some(v) = &a.crc64_meta
            {
                claims.add_meta_crc64(v);
            }
            (crc, ordered)
        }
    };
    claims.add_ranges(&seen.lock().expect("claims lock"));
    let read_side = check_source(ctx, src, &claims, crc, ordered.as_ref()).await?;
    if let Reads::Local(f, sp) = &reads {
        local_unchanged(f, sp, src)?;
    }

    // Metadata, durability, then the final name.
    let answer = answer
        .lock()
        .expect("answer lock")
        .take()
        .unwrap_or_default();
    let mtime = ctx
        .opts
        .preserve_mtime
        .then(|| answer.mtime.unwrap_or(src.last_modified));
    let mode = match &reads {
        Reads::Local(f, _) => f.metadata().ok().map(|m| {
            use std::os::unix::fs::PermissionsExt;
            m.permissions().mode()
        }),
        _ => answer.mode,
    };
    let fsync = ctx.opts.fsync;
    let readback = ctx.opts.verify == Verify::Readback;
    let mut partial = partial;
    let tmp = partial.tmp.clone();
    let file = partial.file.clone();
    let d2 = dest.clone();
    let (etag, write_side) =
        blocking(move || finish_file(&file, &tmp, &d2, size, crc, mtime, mode, fsync, readback))
            .await?;
    partial.renamed = true;
    Ok(Outcome {
        digests: Digests {
            crc64: crc,
            md5: None,
            bytes: size,
        },
        dst_etag: Some(etag),
        verified_by: Verification::new(read_side, write_side),
        parts: if large { parts.len() as u64 } else { 0 },
        upload_id: None,
        part_size: large.then_some(part),
        crc64_known: true,
        server_side: false,
    })
}

/// The whole CRC64 of parts (combined in order) and the MD5s of the source's parts in order.
fn combine(mut results: Vec<(usize, Digests, Vec<[u8; 16]>)>) -> (u64, Vec<[u8; 16]>) {
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

/// A local source must still be the version listed after it was read (same inode, mtime and
/// size): a file rewritten during the copy is not stitched from two versions.
fn local_unchanged(f: &File, sp: &Path, src: &Entry) -> Result<(), CopyError> {
    let m = f.metadata().map_err(read_err(sp))?;
    let now = std::fs::metadata(sp).map_err(read_err(sp))?;
    let same_file = {
        use std::os::unix::fs::MetadataExt;
        m.ino() == now.ino() && m.dev() == now.dev()
    };
    let etag = crate::store::local::local_etag(&m);
    if !same_file || src.e_tag.as_deref().is_some_and(|e| e != etag) {
        return Err(CopyError::SourceChanged);
    }
    Ok(())
}

/// The end of a local write: times and mode, the data synced (`--fsync object`), a read-back
/// when asked, the rename, and the folder synced. Returns the file's ETag (as its listing will
/// show it) and the write-side check.
#[allow(clippy::too_many_arguments)]
fn finish_file(
    file: &File,
    tmp: &Path,
    dest: &Path,
    size: u64,
    crc: u64,
    mtime: Option<chrono::DateTime<chrono::Utc>>,
    mode: Option<u32>,
    fsync: Fsync,
    readback: bool,
) -> Result<(String, WriteCheck), CopyError> {
    let err = write_err(dest);
    if let Some(m) = mode {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(m & 0o777))
            .map_err(&err)?;
    }
    if let Some(t) = mtime {
        file.set_modified(t.into()).map_err(&err)?;
    }
    if fsync == Fsync::Object {
        file.sync_all().map_err(&err)?;
    }
    let meta = file.metadata().map_err(&err)?;
    if meta.len() != size {
        return Err(CopyError::Mismatch(format!(
            "{} holds {} bytes after writing, expected {size}",
            dest.display(),
            meta.len()
        )));
    }
    let write_side = if readback {
        let got = crc_of_file(file, size).map_err(read_err(dest))?;
        if got != crc {
            return Err(CopyError::Mismatch(
                "the destination reads back different bytes".into(),
            ));
        }
        WriteCheck::ReadbackCrc64
    } else {
        WriteCheck::WrittenCrc64
    };
    if let Ok(m) = std::fs::symlink_metadata(dest)
        && m.is_dir()
    {
        return Err(CopyError::Write {
            path: dest.display().to_string(),
            source: std::io::Error::other("a folder of that name is in the way"),
        });
    }
    std::fs::rename(tmp, dest).map_err(&err)?;
    if fsync == Fsync::Object
        && let Some(dir) = dest.parent()
    {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(write_err(dir))?;
    }
    // The ETag as the destination's listing will show it: the rename moves the inode's ctime on
    // most file systems, so the file is looked at again under its final name.
    let meta = std::fs::metadata(dest).map_err(&err)?;
    Ok((crate::store::local::local_etag(&meta), write_side))
}

/// The CRC64 of a file's first `size` bytes, read again from the file system.
fn crc_of_file(f: &File, size: u64) -> std::io::Result<u64> {
    let mut h = Hasher::new(false);
    let mut buf = vec![0u8; BLOCK];
    let mut off = 0u64;
    while off < size {
        let want = ((size - off) as usize).min(BLOCK);
        let n = f.read_at(&mut buf[..want], off)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        off += n as u64;
    }
    Ok(h.finish().crc64)
}

/// `--fsync end`: the destination's file system synced once, when the run ends.
pub fn sync_file_system(root: &Path) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let d = File::open(root)?;
    // SAFETY: a valid open descriptor.
    if unsafe { libc::syncfs(d.as_raw_fd()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Removes a large object from the in-flight progress map however its copy ends.
struct InFlight<'a>(&'a Ctx, String, bool);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.2
            && let Ok(mut m) = self.0.counters.in_flight.lock()
        {
            m.remove(&self.1);
        }
    }
}

/// The mode and modification time of a local source file, for the metadata of its copy in a
/// store (`moverctl_mode` in octal, `moverctl_mtime` in RFC 3339 with nanoseconds), so a copy
/// back to a folder restores them.
pub(super) fn source_file_attributes(ctx: &Ctx, src: &Entry, a: &mut Attributes) {
    let Some(root) = &ctx.src.local_root else {
        return;
    };
    let Ok(m) = std::fs::metadata(root.join(&src.key)) else {
        return;
    };
    use std::os::unix::fs::PermissionsExt;
    a.insert(
        Attribute::Metadata(META_MODE.into()),
        format!("{:o}", m.permissions().mode() & 0o7777).into(),
    );
    if let Ok(t) = m.modified() {
        let t: chrono::DateTime<chrono::Utc> = t.into();
        a.insert(
            Attribute::Metadata(META_MTIME.into()),
            t.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true).into(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pwrite_all_writes_every_chunk_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let f = File::create(dir.path().join("f")).unwrap();
        let chunks: Vec<Bytes> = (0..2000u32)
            .map(|i| Bytes::from(vec![(i % 251) as u8; (i % 7) as usize]))
            .collect();
        pwrite_all(&f, 5, &chunks).unwrap();
        let got = std::fs::read(dir.path().join("f")).unwrap();
        let want: Vec<u8> = std::iter::repeat_n(0u8, 5)
            .chain(chunks.iter().flat_map(|c| c.iter().copied()))
            .collect();
        assert_eq!(got, want);
    }

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
