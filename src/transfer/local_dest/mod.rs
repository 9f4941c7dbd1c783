//! Writing objects into a local folder (a parallel file system mount, node-local NVMe).
//!
//! Every object, small or large, is written into one temporary file in its destination folder
//! (named by [`crate::store::local::partial_name`], never listed as an object), preallocated to
//! its size (`fallocate`; file systems without it, such as some network mounts, get a sparse
//! `set_len`), with positional writes, so several parts of one object are in flight at once and
//! no byte is copied between them. The CRC64 is computed once, as the bytes are written; the
//! source's own digests are checked (`copy::source::check_source`) before the file gets its final
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
//! file; the next run adopts it before its listing would sweep it (`adopt_partials`), reads
//! back each journaled part and keeps the parts whose bytes still have the journaled CRC64 (a part
//! a crash lost or tore is fetched again), and fetches only the rest. The same source version,
//! size and part size are required, as for a multipart upload. A copy that fails with an error
//! (not a crash) removes its file and starts afresh next time. An object read with one GET (its
//! digest needs the bytes in order) is journaled in parts of the plan's part size as the writes
//! behind them complete (`Checkpoints`); it resumes from the longest run of kept parts from its
//! first byte, read back through its in-order digests, and one ranged GET fetches the rest.
//!
//! Durability (`--fsync`, table at [`crate::transfer::Fsync`]): `batch` (default) renames files
//! into place unsynced and syncs them in groups, each group's journal rows written only after
//! its sync returned (`commit`, hooked into `tally::JournalBatch`); `object` syncs each file's
//! data and its folder entry before the object is journaled as done; `end` syncs the
//! destination file system once when the run ends (a crash before that may lose objects the
//! journal calls done: the next run, trusting the journal, would not copy them again); `never`
//! leaves it to the operating system.
//!
//! Metadata: with `--preserve-mtime` (default) the file gets the source's last-modified time
//! (or the time a local source recorded in moverctl's metadata), and the mode a local source
//! recorded (`moverctl_mode`).
//!
//! Here: one object's copy in steps (how it is read, its temporary file, the reads, the final
//! name) and the adoption of a killed run's files. The file itself is in `file`, how bytes reach
//! it in `read`, reading a killed run's parts back in `resume`, and group commit in `commit`.

pub mod commit;
pub(in crate::transfer) mod file;
mod read;
mod resume;

pub use file::sync_file_system;

use crate::checksum::{self, Digests};
use crate::journal::{Journal, JournalError, ObjectRecord, PartRecord, State};
use crate::store::list::Entry;
use crate::transfer::Verify;
use crate::transfer::claims::{Claims, InOrder, Ordered};
use crate::transfer::copy::context::{CopyError, Ctx, Outcome, crc_suffices};
use crate::transfer::copy::source::{check_source, discover};
use crate::transfer::range_md5::Seen;
use crate::transfer::verification::{Verification, WriteCheck};
use file::{
    BATCH, BLOCK, Partial, blocking, create_partial, finish_file, local_unchanged, read_err,
};
use futures::stream::{self, StreamExt, TryStreamExt};
use read::{
    Answer, Checkpoints, Reads, by_range, combine, copy_local_range, get, journal_part, range_size,
    ranges, write_stream,
};
use resume::{resumable_partial, reuse_in_order, reuse_part};
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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
    let Some(root) = dst.local_root() else {
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

async fn copy_file(ctx: &Ctx, src: &Entry, part: Option<u64>) -> Result<Outcome, CopyError> {
    let plan_part = part;
    let dest = dest_path(ctx, src)?;
    let size = src.size;

    // What the source claims, and how it is read.
    let (mut claims, reads, part) = how_read(ctx, src, part).await?;
    let parts = ranges(size, part);

    // Large objects are journaled part by part as they are written, so a killed run resumes:
    // parts read independently as they complete, an object read as one stream in parts of the
    // plan's size as the writes behind them complete.
    let (journal_part_size, journal_parts) = match (&reads, plan_part) {
        (Reads::Stream, Some(p)) => (p, ranges(size, p)),
        _ => (part, parts.clone()),
    };
    let t = Target::open(ctx, src, dest, journal_part_size, journal_parts.len()).await?;
    let large = parts.len() > 1;
    if large {
        ctx.counters
            .in_flight
            .lock()
            .expect("progress lock")
            .insert(src.key.clone(), (0, size));
    }
    let _in_flight = InFlight(ctx, src.key.clone(), large);

    let (crc, ordered) = match &reads {
        Reads::Stream => {
            t.read_stream(&mut claims, &journal_parts, journal_part_size)
                .await?
        }
        Reads::Local(f, sp) => (t.read_local(f, sp, &parts).await?, None),
        Reads::Ranged { src_part } => t.read_ranged(&mut claims, &parts, *src_part).await?,
    };
    claims.add_ranges(&t.seen.lock().expect("claims lock"));
    let read_side = check_source(ctx, src, &claims, crc, ordered.as_ref()).await?;
    if let Reads::Local(f, sp) = &reads {
        local_unchanged(f, sp, src)?;
    }

    // Metadata, durability, then the final name.
    let (etag, write_side) = t.finish(&reads, crc).await?;
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

/// The destination file of `src`: the key as object_store validates it (no empty, '.' or '..'
/// segments) below the folder's root.
fn dest_path(ctx: &Ctx, src: &Entry) -> Result<PathBuf, CopyError> {
    let root = ctx
        .dst
        .local_root()
        .expect("local destinations have a root");
    let key_path = ctx.dst.path_of(&src.key).map_err(|e| CopyError::Store {
        what: "destination key",
        source: e.into(),
    })?;
    Ok(root.join(key_path.as_ref()))
}

/// What the source claims before it is read, how its parts are read, and their size (`part`:
/// the plan's part size, None for a small object).
async fn how_read(
    ctx: &Ctx,
    src: &Entry,
    part: Option<u64>,
) -> Result<(Claims, Reads, u64), CopyError> {
    let size = src.size;
    if let Some(sroot) = ctx.src.local_root() {
        let sp = sroot.join(&src.key);
        let spc = sp.clone();
        let f = blocking(move || File::open(&spc).map_err(read_err(&spc))).await?;
        return Ok((
            Claims::default(),
            Reads::Local(Arc::new(f), sp),
            part.unwrap_or(size),
        ));
    }
    if part.is_none() {
        let strict = ctx.opts.verify == Verify::Strict;
        let mut claims = discover(ctx, src, strict).await?;
        if crc_suffices(ctx) {
            claims.prefer_crc();
        }
        return Ok((claims, Reads::Stream, size));
    }
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
        return Ok((claims, Reads::Stream, size));
    }
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
    Ok((claims, Reads::Ranged { src_part: layout }, p))
}

/// One object's temporary file, and what every way of reading into it shares.
struct Target<'a> {
    ctx: &'a Ctx,
    src: &'a Entry,
    dest: PathBuf,
    partial: Partial,
    /// The parts a killed run journaled in the file (by index), when it is journaled by parts.
    carried: Option<Vec<Option<PartRecord>>>,
    /// The file's name as journaled (only when it is journaled by parts).
    journaled_as: Option<String>,
    /// A cloud source's first answer (its mtime, mode and CRC64 in metadata).
    answer: Arc<Mutex<Option<Answer>>>,
    /// What the range-checked reads of an Azure blob without a digest found (see by_range).
    seen: Seen,
}

impl<'a> Target<'a> {
    /// The temporary file for `dest`: a killed run's to resume when the object is journaled in
    /// more than one part (`journal_parts` of `journal_part_size`), else a new one.
    async fn open(
        ctx: &'a Ctx,
        src: &'a Entry,
        dest: PathBuf,
        journal_part_size: u64,
        journal_parts: usize,
    ) -> Result<Target<'a>, CopyError> {
        let size = src.size;
        let (partial, carried) = if journal_parts > 1 && ctx.journal.is_some() && !ctx.opts.dry_run
        {
            let (p, c) =
                resumable_partial(ctx, src, &dest, journal_part_size, journal_parts).await?;
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
        Ok(Target {
            ctx,
            src,
            dest,
            partial,
            carried,
            journaled_as,
            answer: Arc::new(Mutex::new(None)),
            seen: Arc::new(Mutex::new(Claims::default())),
        })
    }

    /// The part a killed run journaled at index `i`, if any.
    fn carried_part(&self, i: usize) -> Option<&PartRecord> {
        self.carried.as_ref().and_then(|c| c[i].as_ref())
    }

    /// The longest run of a killed run's parts from the first byte whose bytes still have their
    /// journaled CRC64, read back in order and hashed for every in-order digest the object may
    /// be checked by (its claims are known after the GET): where it ends, its CRC64, and the
    /// in-order digests so far (None: nothing kept).
    async fn kept_in_order(
        &self,
        claims: &Claims,
        journal_parts: &[Range<u64>],
    ) -> Result<(u64, Option<u64>, Option<InOrder>), CopyError> {
        let (mut kept, mut kept_crc) = (0u64, None);
        let Some(c) = &self.carried else {
            return Ok((kept, kept_crc, None));
        };
        let mut all = InOrder::new(&Claims {
            md5: Some([0; 16]),
            crc32c: Some(0),
            parts_etag: claims.parts_etag.clone(),
            ..Default::default()
        });
        let (ctx, src, file) = (self.ctx, self.src, &self.partial.file);
        for (i, r) in journal_parts.iter().enumerate() {
            let Some(rec) = c[i].as_ref() else {
                break;
            };
            let Some((d, next)) =
                reuse_in_order(ctx, src, file, &self.dest, r.clone(), rec, &all).await?
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
        Ok((kept, kept_crc, (kept > 0).then_some(all)))
    }

    /// A cloud object read with one GET (after the parts kept from a killed run), hashed in
    /// order as it is written and journaled in the plan's parts behind the writes.
    async fn read_stream(
        &self,
        claims: &mut Claims,
        journal_parts: &[Range<u64>],
        journal_part_size: u64,
    ) -> Result<(u64, Option<Ordered>), CopyError> {
        let (ctx, src, size) = (self.ctx, self.src, self.src.size);
        // Memory: each part in flight holds up to two batches (one written, one gathered).
        let mib = ((2 * BATCH) >> 20) as u32;
        let _permit = ctx
            .buffers
            .acquire_many(mib.min(ctx.buffer_mib))
            .await
            .expect("buffer semaphore open");
        let (kept, kept_crc, mut w) = self.kept_in_order(claims, journal_parts).await?;
        let (a, s) = get(ctx, src, (kept > 0).then_some(kept..size)).await?;
        if let Some(v) = &a.crc64_meta {
            claims.add_meta_crc64(v);
        }
        if let Some(h) = &a.headers {
            claims.add_headers(h, kept > 0);
        }
        *self.answer.lock().expect("answer lock") = Some(a);
        let s = by_range(ctx, src, claims, kept..size, s, &self.seen).await;
        if w.is_none() {
            w = claims.needs_in_order().then(|| InOrder::new(claims));
        }
        let mut k = self
            .journaled_as
            .as_deref()
            .map(|n| Checkpoints::new(n, journal_part_size, kept));
        let (d, _) = write_stream(
            ctx,
            src,
            &self.partial.file,
            &self.dest,
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
        Ok((crc, w.map(InOrder::finish)))
    }

    /// A local source read part by part with positional reads (parts a killed run journaled
    /// are read back and kept where they still match): the object's CRC64.
    async fn read_local(
        &self,
        f: &Arc<File>,
        sp: &Path,
        parts: &[Range<u64>],
    ) -> Result<u64, CopyError> {
        let (ctx, src) = (self.ctx, self.src);
        let results: Vec<(usize, Digests)> = stream::iter(parts.iter().cloned().enumerate())
            .map(|(i, r)| {
                let (file, dest) = (&self.partial.file, &self.dest);
                let (carried, name) = (self.carried_part(i), self.journaled_as.as_deref());
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
        Ok(combine(results.collect()).0)
    }

    /// A cloud object read by ranged GETs (whole multiples of the source's part size
    /// `src_part`, whose MD5s give its multipart ETag), each range written as it streams.
    async fn read_ranged(
        &self,
        claims: &mut Claims,
        parts: &[Range<u64>],
        src_part: Option<u64>,
    ) -> Result<(u64, Option<Ordered>), CopyError> {
        let (ctx, src) = (self.ctx, self.src);
        // Memory: each part in flight holds up to two batches (one written, one gathered).
        let mib = ((2 * BATCH) >> 20) as u32;
        let results: Vec<(usize, Digests, Vec<[u8; 16]>)> =
            stream::iter(parts.iter().cloned().enumerate())
                .map(|(i, r)| {
                    let (file, dest, answer) =
                        (&self.partial.file, &self.dest, self.answer.clone());
                    let (claims, seen) = (&*claims, &self.seen);
                    let (carried, name) = (self.carried_part(i), self.journaled_as.as_deref());
                    async move {
                        let _permit = ctx
                            .buffers
                            .acquire_many(mib.min(ctx.buffer_mib))
                            .await
                            .expect("buffer semaphore open");
                        if let Some((d, m)) =
                            reuse_part(ctx, src, file, dest, r.clone(), carried, src_part).await?
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
                            write_stream(ctx, src, file, dest, r, s, src_part, None, None).await?;
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
        if let Some(a) = self.answer.lock().expect("answer lock").as_ref()
            && let Some(v) = &a.crc64_meta
        {
            claims.add_meta_crc64(v);
        }
        Ok((crc, ordered))
    }

    /// Gives the file the source's mtime and mode, makes it durable as `--fsync` asks and
    /// renames it to its final name: its ETag and the write side's proof.
    async fn finish(self, reads: &Reads, crc: u64) -> Result<(String, WriteCheck), CopyError> {
        let Target {
            ctx,
            src,
            dest,
            mut partial,
            answer,
            ..
        } = self;
        let answer = answer
            .lock()
            .expect("answer lock")
            .take()
            .unwrap_or_default();
        let mtime = ctx
            .opts
            .preserve_mtime
            .then(|| answer.mtime.unwrap_or(src.last_modified));
        let mode = match reads {
            Reads::Local(f, _) => f.metadata().ok().map(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.permissions().mode()
            }),
            _ => answer.mode,
        };
        let (size, fsync) = (src.size, ctx.opts.fsync);
        let readback = ctx.opts.verify == Verify::Readback;
        let tmp = partial.tmp.clone();
        let file = partial.file.clone();
        let d2 = dest.clone();
        let done = blocking(move || {
            finish_file(&file, &tmp, &d2, size, crc, mtime, mode, fsync, readback)
        })
        .await?;
        partial.renamed = true;
        Ok(done)
    }
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
