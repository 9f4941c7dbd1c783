//! Copying one object, verified end to end.
//!
//! Bytes are hashed as they stream (CRC64/NVME always; MD5 when an ETag can be compared with it).
//! - Read side: the number of bytes must equal the listed size; every read is pinned to the
//!   listed ETag (`If-Match`), so a source that changes mid-copy fails instead of being stitched;
//!   when the source's ETag is a plain MD5 (single-part S3, GCS), the bytes must hash to it.
//! - Write side: a destination ETag that is an MD5 (single PUT) or an S3 multipart ETag
//!   (`md5(part md5s)-N`) must match what was sent; otherwise a HEAD must show the right size
//!   and, where metadata is kept, moverctl's CRC. `--verify readback` (and local destinations)
//!   read the object back and compare CRCs.
//!
//! A mismatch is an error: the object is retried by the engine, never recorded as done.
//!
//! Which way an object is copied is decided here ([`copy_object`]): into a local folder
//! (`local_dest`), on the server (`server_side`), by the destination from the source's URL
//! (`from_url`), as one streamed PUT (`stream_put`), else through this machine in one request
//! (`single`) or in parts (`multipart`). What the strategies share lives in the submodules:
//! the per-run `context`, reading (`read`) and the source's claims (`source`), raw HEADs
//! (`head`), what is written besides the bytes (`attributes`), a multipart upload's journal
//! (`resume`) and parts (`parts`), and the write side's proof (`verify`).

pub(in crate::transfer) mod attributes;
pub(in crate::transfer) mod context;
pub(in crate::transfer) mod head;
mod multipart;
mod parts;
pub(in crate::transfer) mod read;
pub(in crate::transfer) mod resume;
mod single;
pub(in crate::transfer) mod source;
mod trailer;
mod verify;

pub use context::{CopyError, Ctx, Outcome};

use crate::catalog::parts::{Upload, part_plan};
use crate::store::list::Entry;
use multipart::copy_multipart;
use single::copy_single;

/// Copies `src` by the first way that applies to it, verified end to end.
pub async fn copy_object(ctx: &Ctx, src: &Entry) -> Result<Outcome, CopyError> {
    let plan = part_plan(src.size, &ctx.opts.dst_limits, ctx.opts.part_rule)
        .map_err(|e| CopyError::TooLarge(e.to_string()))?;
    if ctx.dst.is_local() {
        // A local folder: one preallocated file per object, positional writes (local_dest.rs).
        let part = match plan {
            Upload::Single => None,
            Upload::Multipart { part_size, .. } => Some(part_size),
        };
        return crate::transfer::local_dest::copy(ctx, src, part).await;
    }
    if let Some(ss) = &ctx.server_side
        && let Some(out) = crate::transfer::server_side::copy(ctx, ss, src).await?
    {
        return Ok(out);
    }
    // Claims a declined copy from the source's URL learned (with a HEAD) serve the streamed copy.
    let mut known = None;
    if let Some(fu) = &ctx.from_url
        && let Some(out) =
            crate::transfer::from_url::copy(ctx, fu, src, plan.part_size(), &mut known).await?
    {
        return Ok(out);
    }
    if let Upload::Multipart { part_size, .. } = plan
        && let Some(md5) = crate::transfer::stream_put::applies(ctx, src, part_size)
        && let Some(out) = crate::transfer::stream_put::copy(ctx, src, md5).await?
    {
        return Ok(out);
    }
    let out = match plan {
        Upload::Single => copy_single(ctx, src, known).await?,
        Upload::Multipart { part_size, parts } => {
            copy_multipart(ctx, src, part_size, parts, known).await?
        }
    };
    Ok(out)
}
