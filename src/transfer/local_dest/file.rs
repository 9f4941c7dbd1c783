//! The destination file itself: the temporary file (preallocated, removed unless renamed),
//! positional writes, the final rename with the source's mtime and mode and the durability
//! `--fsync` asks for, a local source's file still being the one listed, and the metadata a
//! local source file gives its copies.

use crate::checksum::{Hasher, META_MODE, META_MTIME};
use crate::store::list::Entry;
use crate::transfer::Fsync;
use crate::transfer::copy::context::{CopyError, Ctx};
use crate::transfer::verification::WriteCheck;
use bytes::Bytes;
use object_store::{Attribute, Attributes};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bytes gathered before one positional write (network chunks are small). Small enough that the
/// bytes are still in the CPU's cache when the kernel copies them into the page cache: with 1 MiB
/// batches, 4 x 256 MiB S3 -> local from a CRC64 source spent 1.1-1.5 s of system CPU, most of it
/// in that copy, against 0.7-0.9 s with 128-256 KiB (and 60-85 MB peak RSS against 33-40).
pub(super) const BATCH: usize = 256 << 10;

/// Block of a positional read from a local source.
pub(super) const BLOCK: usize = 1 << 20;

/// Where the bytes of one object go: its temporary file, removed unless it was renamed.
pub(super) struct Partial {
    pub(super) tmp: PathBuf,
    pub(super) file: Arc<File>,
    pub(super) renamed: bool,
}

impl Drop for Partial {
    fn drop(&mut self) {
        if !self.renamed {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

pub(super) fn write_err(path: &Path) -> impl Fn(std::io::Error) -> CopyError + '_ {
    move |source| CopyError::Write {
        path: path.display().to_string(),
        source,
    }
}

pub(super) fn read_err(path: &Path) -> impl Fn(std::io::Error) -> CopyError + '_ {
    move |source| CopyError::Io {
        path: path.display().to_string(),
        source,
    }
}

pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, CopyError> + Send + 'static,
) -> Result<T, CopyError> {
    tokio::task::spawn_blocking(f)
        .await
        .expect("blocking file work does not panic")
}

/// Reserves `size` bytes for a file: `fallocate` where the file system has it (a full disk fails
/// here, before any byte is read), else the length alone (tmpfs on old kernels, some network file
/// systems).
pub(super) fn preallocate(f: &File, size: u64) -> std::io::Result<()> {
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
pub(super) fn create_partial(dest: &Path, size: u64) -> Result<Partial, CopyError> {
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
pub(super) fn pwrite_all(f: &File, mut off: u64, bufs: &[Bytes]) -> std::io::Result<()> {
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

/// A local source must still be the version listed after it was read (same inode, mtime and
/// size): a file rewritten during the copy is not stitched from two versions.
pub(super) fn local_unchanged(f: &File, sp: &Path, src: &Entry) -> Result<(), CopyError> {
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
pub(super) fn finish_file(
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
    super::commit::note("renamed", &dest.display().to_string());
    if fsync == Fsync::Object
        && let Some(dir) = dest.parent()
    {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(write_err(dir))?;
        super::commit::note("durable", &dest.display().to_string());
    }
    // The ETag as the destination's listing will show it: the rename moves the inode's ctime on
    // most file systems, so the file is looked at again under its final name.
    let meta = std::fs::metadata(dest).map_err(&err)?;
    Ok((crate::store::local::local_etag(&meta), write_side))
}

/// The CRC64 of a file's first `size` bytes, read again from the file system.
pub(super) fn crc_of_file(f: &File, size: u64) -> std::io::Result<u64> {
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
    super::commit::note("sync-start", "end");
    super::commit::syncfs(root)?;
    super::commit::note("sync-end", "end");
    Ok(())
}

/// The mode and modification time of a local source file, for the metadata of its copy in a
/// store (`moverctl_mode` in octal, `moverctl_mtime` in RFC 3339 with nanoseconds), so a copy
/// back to a folder restores them.
pub(in crate::transfer) fn source_file_attributes(ctx: &Ctx, src: &Entry, a: &mut Attributes) {
    let Some(root) = ctx.src.local_root() else {
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
    use bytes::Bytes;

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
}
