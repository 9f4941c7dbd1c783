//! What a source claims about an object's bytes: learned before they are read ([`discover`]:
//! its MD5 ETag, a multipart ETag's part layout, what one HEAD shows) and checked against them
//! after ([`check_source`]), with the part layouts of unevenly uploaded multipart sources learned
//! in this process.

use super::context::{CopyError, Ctx, crc_first, store_err};
use super::head::raw_head;
use super::read::local_still_listed;
use crate::checksum::{self, META_CRC64};
use crate::store::http::DigestHeaders;
use crate::store::list::Entry;
use crate::transfer::Verify;
use crate::transfer::claims::{self, Claims};
use crate::transfer::fidelity::ObjectMeta;
use crate::transfer::verification::ReadCheck;
use object_store::{Attribute, GetOptions};
use std::sync::Mutex;
use std::sync::atomic::Ordering::Relaxed;

/// The read side's verdict: every claim of the source checked against the bytes read.
///
/// A multipart ETag is recomputed with the part size part 1 shows, as if every part but the last
/// had that size (what every common uploader does). An upload whose parts differ in size while
/// their count still agrees gives another ETag for the same bytes, so before such a mismatch is
/// called corruption one HEAD of the last part tells whether the layout was regular; if it was
/// not, the ETag proves nothing and the other claims decide (possibly none: `source-size`).
pub(in crate::transfer) async fn check_source(
    ctx: &Ctx,
    src: &Entry,
    claims: &Claims,
    crc64: u64,
    ordered: Option<&claims::Ordered>,
) -> Result<ReadCheck, CopyError> {
    // A local file must still be the version listed once all its bytes are read: a rewrite
    // during the read (even one that puts the mtime back) moves its ctime, and a copy stitched
    // from two versions is never written.
    if let Some(root) = ctx.src.local_root() {
        local_still_listed(root.join(&src.key), src).await?;
    }
    // An encrypted S3 object's ETag proves nothing: one HEAD with checksum mode looks for the
    // CRC the store keeps for it (S3 stores one for every upload since December 2024).
    let looked;
    let claims = match ctx.src.as_s3() {
        Some(s3) if claims.etag_opaque && !claims.states_crc() => {
            let mut c = claims.clone();
            if let Some(h) = raw_head(ctx, s3, src, None).await? {
                c.add_headers(&h, false);
                if let Some(v) = h.get(&format!("x-amz-meta-{META_CRC64}")) {
                    c.add_meta_crc64(v);
                }
            }
            looked = c;
            &looked
        }
        _ => claims,
    };
    let e = match claims.check(crc64, ordered) {
        Ok(label) => return require_digest(ctx, src, label),
        Err(e) => e,
    };
    let Some((part, _)) = &claims.parts_etag else {
        return Err(e);
    };
    let rest = Claims {
        parts_etag: None,
        ..claims.clone()
    };
    let Ok(label) = rest.check(crc64, ordered) else {
        return Err(e);
    };
    if layout_is_regular(ctx, src, *part).await? {
        return Err(e);
    }
    // Parts of unequal size: learn every part's size, and read the object again hashing over
    // them (the next attempt finds the layout learned here).
    if let (Some(s3), Some(etag)) = (ctx.src.as_s3(), &src.e_tag)
        && let Some(sizes) = learn_layout(ctx, s3, src, None).await?
    {
        LAYOUTS
            .lock()
            .expect("layouts lock")
            .insert(layout_key(ctx, src, etag), sizes);
        return Err(CopyError::Mismatch(
            "the source's multipart parts are not all one size: their sizes were learned, and it is read again to check its multipart ETag over them".into(),
        ));
    }
    require_digest(ctx, src, label)
}

/// Part layouts of S3 multipart sources whose parts are not all one size, learned in this
/// process: (source location and key, ETag) → every part's size.
static LAYOUTS: Mutex<std::collections::BTreeMap<(String, String), Vec<u64>>> =
    Mutex::new(std::collections::BTreeMap::new());

fn layout_key(ctx: &Ctx, src: &Entry, etag: &str) -> (String, String) {
    (
        format!("{}\u{0}{}", ctx.src.shown(), src.key),
        checksum::etag_norm(etag),
    )
}

/// Every part's size of an S3 multipart source (a HEAD of each with `partNumber`; `first`: part
/// 1's, known already), when the ETag's part count and the sizes add up to the object; None
/// where a part cannot be asked for.
async fn learn_layout(
    ctx: &Ctx,
    s3: &object_store::aws::AmazonS3,
    src: &Entry,
    first: Option<u64>,
) -> Result<Option<Vec<u64>>, CopyError> {
    let Some(n) = src
        .e_tag
        .as_deref()
        .map(checksum::etag_norm)
        .and_then(|e| e.rsplit_once('-').and_then(|(_, n)| n.parse::<u32>().ok()))
        .filter(|n| (1..=10_000).contains(n))
    else {
        return Ok(None);
    };
    let mut sizes = Vec::with_capacity(n as usize);
    for k in 1..=n {
        let len = match (k, first) {
            (1, Some(l)) => Some(l),
            _ => raw_head(ctx, s3, src, Some(k))
                .await?
                .and_then(|h| h.get("content-length").and_then(|v| v.parse::<u64>().ok())),
        };
        match len {
            Some(l) => sizes.push(l),
            None => return Ok(None),
        }
    }
    Ok((sizes.iter().sum::<u64>() == src.size).then_some(sizes))
}

/// Whether the source's last part has the size a regular layout of `part`-sized parts implies
/// (one HEAD of that part); true when it cannot be told.
async fn layout_is_regular(ctx: &Ctx, src: &Entry, part: u64) -> Result<bool, CopyError> {
    let Some(s3) = ctx.src.as_s3() else {
        return Ok(true);
    };
    let n = src.size.div_ceil(part.max(1));
    if n < 2 {
        return Ok(true);
    }
    let want = src.size - (n - 1) * part;
    Ok(match raw_head(ctx, s3, src, Some(n as u32)).await? {
        Some(h) => h.get("content-length").and_then(|v| v.parse::<u64>().ok()) == Some(want),
        None => true,
    })
}

/// A cloud source's object whose bytes nothing but their size checked: refused under `--verify
/// strict`, accepted as `source-size` under `--verify size`, else `unverified` (written, never
/// stamped with a CRC64, not recorded as done). A local file is read here from the file itself.
fn require_digest(ctx: &Ctx, src: &Entry, label: ReadCheck) -> Result<ReadCheck, CopyError> {
    // No byte of an empty object can be wrong.
    if label != ReadCheck::SourceSize || ctx.src.caps.in_process || src.size == 0 {
        return Ok(label);
    }
    match ctx.opts.verify {
        Verify::Strict => Err(CopyError::NoSourceDigest),
        Verify::Size => Ok(ReadCheck::SourceSize),
        _ => Ok(ReadCheck::Unverified),
    }
}

fn source_md5(ctx: &Ctx, src: &Entry) -> Option<[u8; 16]> {
    if !ctx.src.caps.put_etag_is_md5 {
        return None;
    }
    src.e_tag.as_deref().and_then(checksum::etag_md5)
}

/// What the source claims before its bytes are read: the listing's MD5 ETag; for an S3
/// multipart ETag, the part size from a HEAD of part 1 so the ETag can be recomputed; otherwise,
/// with `head` and no MD5 yet, what one HEAD shows (moverctl's CRC64, Azure/GCS digest
/// properties, S3's stored CRC64 with checksum mode). A HEAD that still fails after the retry
/// policy is an error of this attempt: going on would silently verify by size alone.
pub(in crate::transfer) async fn discover(
    ctx: &Ctx,
    src: &Entry,
    head: bool,
) -> Result<Claims, CopyError> {
    discover_for(ctx, src, head, crc_first(ctx)).await
}

/// [`discover`], unless an earlier way of copying this object that declined it (a copy from the
/// source's URL) already learned the claims with a HEAD: its HEAD is not made again.
pub(super) async fn discover_once(
    ctx: &Ctx,
    src: &Entry,
    head: bool,
    known: Option<Claims>,
) -> Result<Claims, CopyError> {
    match known {
        Some(c) => Ok(c),
        None => discover(ctx, src, head).await,
    }
}

/// [`discover`], saying whether a CRC the source keeps is looked for first (`crc_first`: the
/// checksum-only path, where it spares an MD5 pass; not for a server-side copy, whose proof is
/// the source's multipart ETag and so needs its part layout).
pub(in crate::transfer) async fn discover_for(
    ctx: &Ctx,
    src: &Entry,
    head: bool,
    crc_first: bool,
) -> Result<Claims, CopyError> {
    let md5 = source_md5(ctx, src);
    let mut c = Claims {
        md5,
        md5_is_etag: md5.is_some(),
        ..Default::default()
    };
    if !ctx.src.caps.pins_reads {
        return Ok(c);
    }
    let multipart_etag = ctx.src.caps.multipart_etag_is_md5_of_parts
        && src
            .e_tag
            .as_deref()
            .is_some_and(|e| checksum::etag_norm(e).contains('-'));
    let crc_path = crc_first;
    // On the checksum-only path a HEAD may find a CRC that spares an MD5 pass; where the source
    // has another proof (its MD5, or the part layout asked next), that HEAD failing costs only
    // the MD5 pass, so its error is not the copy's (a source that changed fails its pinned
    // GET anyway).
    if multipart_etag
        && crc_path
        && let Some(s3) = ctx.src.as_s3()
        && let Ok(Some(h)) = raw_head(ctx, s3, src, None).await
    {
        // The checksum-only path: a CRC64 the source keeps (S3 stores one for every upload made
        // with a CRC64 checksum, and by default since December 2024) or moverctl's own proves the
        // bytes without the MD5 pass a multipart ETag needs; part 1 is asked only without one.
        c.add_headers(&h, false);
        c.meta = Some(ObjectMeta::of_headers(&h));
        if let Some(v) = h.get(&format!("x-amz-meta-{META_CRC64}")) {
            c.add_meta_crc64(v);
        }
        if c.crc64_meta.is_some() || c.crc64_stored.is_some() {
            return Ok(c);
        }
    }
    let learned = src.e_tag.as_deref().and_then(|e| {
        LAYOUTS
            .lock()
            .expect("layouts lock")
            .get(&layout_key(ctx, src, e))
            .cloned()
    });
    if multipart_etag && let (Some(sizes), Some(e)) = (learned, &src.e_tag) {
        // Parts of unequal size, learned by an earlier attempt.
        c.parts_sizes = Some((sizes, checksum::etag_norm(e)));
    } else if multipart_etag && let Some(s3) = ctx.src.as_s3() {
        part_layout(ctx, s3, src, &mut c).await?;
    } else if head && (c.md5.is_none() || crc_path || (c.md5_is_etag && ctx.src.as_s3().is_some()))
    {
        head_claims(ctx, src, &mut c).await?;
    }
    Ok(c)
}

/// [`discover_for`] of an S3 multipart source: one HEAD of part 1, whose length is the source's
/// part size (or, where the parts are of unequal size, a HEAD of each), so that its multipart
/// ETag can be recomputed; moverctl's metadata comes with it.
async fn part_layout(
    ctx: &Ctx,
    s3: &object_store::aws::AmazonS3,
    src: &Entry,
    c: &mut Claims,
) -> Result<(), CopyError> {
    // One HEAD of part 1: its length is the source's part size, so the multipart ETag can
    // be recomputed; moverctl's metadata comes with it.
    if let Some(h) = raw_head(ctx, s3, src, Some(1)).await? {
        c.meta.get_or_insert_with(|| ObjectMeta::of_headers(&h));
        if let Some(v) = h.get(&format!("x-amz-meta-{META_CRC64}")) {
            c.add_meta_crc64(v);
        }
        if h.get("x-amz-checksum-type")
            .is_some_and(|t| t.trim().eq_ignore_ascii_case("FULL_OBJECT"))
        {
            c.crc64_part_hint = h.whole_crc64();
        }
        // An encrypted object's multipart ETag is no MD5 of MD5s: no layout to learn.
        c.note_encryption(&h);
        if let (false, Some(len), Some(e)) = (
            c.etag_opaque,
            h.get("content-length").and_then(|v| v.parse().ok()),
            &src.e_tag,
        ) {
            c.parts_etag = claims::parts_layout(e, src.size, len);
            // Part 1's size does not give the ETag's part count: the parts are of unequal
            // size, and every part's size is learned (a HEAD of each).
            if c.parts_etag.is_none()
                && let Some(sizes) = learn_layout(ctx, s3, src, Some(len)).await?
            {
                c.parts_sizes = Some((sizes, checksum::etag_norm(e)));
            }
        }
    }
    Ok(())
}

/// One HEAD of the source object `key` through the store client, counted (pinned to `if_match`
/// when given): the request's own result, for the caller to judge; `Err` only for a key the
/// store cannot name.
pub(in crate::transfer) async fn head_source(
    ctx: &Ctx,
    key: &str,
    if_match: Option<String>,
) -> Result<object_store::Result<object_store::GetResult>, CopyError> {
    let path = ctx.src.path_of(key).map_err(|e| CopyError::Store {
        what: "source key",
        source: e.into(),
    })?;
    ctx.counters.head.fetch_add(1, Relaxed);
    let options = GetOptions {
        head: true,
        if_match,
        ..Default::default()
    };
    Ok(ctx.src.inner.get_opts(&path, options).await)
}

/// [`discover_for`]'s HEAD where the listing's claims do not suffice: without an MD5 it finds what
/// else the source states; on the checksum-only path it looks for a stored CRC64 that makes
/// hashing the MD5 unnecessary; for an MD5 taken from an S3 ETag it shows whether that ETag is
/// one (not for SSE-KMS or SSE-C objects). Where an MD5 is known, its failure is not the copy's.
async fn head_claims(ctx: &Ctx, src: &Entry, c: &mut Claims) -> Result<(), CopyError> {
    // Without an MD5 the HEAD finds what else the source states; on the checksum-only path
    // it looks for a stored CRC64 that makes hashing the MD5 unnecessary; for an MD5 taken
    // from an S3 ETag it shows whether that ETag is one (not for SSE-KMS or SSE-C objects).
    let optional = c.md5.is_some();
    if let Some(s3) = ctx.src.as_s3() {
        match raw_head(ctx, s3, src, None).await {
            Ok(Some(h)) => {
                c.add_headers(&h, false);
                c.meta = Some(ObjectMeta::of_headers(&h));
                if let Some(v) = h.get(&format!("x-amz-meta-{META_CRC64}")) {
                    c.add_meta_crc64(v);
                }
            }
            Ok(None) => {}
            Err(_) if optional => {}
            Err(e) => return Err(e),
        }
    } else {
        match head_source(ctx, &src.key, src.e_tag.clone()).await? {
            Ok(r) => {
                c.meta = Some(ObjectMeta::of_attributes(
                    &r.attributes,
                    r.extensions.get::<DigestHeaders>(),
                    ctx.src.is_azure(),
                ));
                if let Some(v) = r.attributes.get(&Attribute::Metadata(META_CRC64.into())) {
                    c.add_meta_crc64(v);
                }
                if let Some(h) = r.extensions.get::<DigestHeaders>() {
                    c.add_headers(h, false);
                }
            }
            // object_store retried it already: without this HEAD the source's digests are
            // unknown, and the copy would be verified by size alone.
            Err(_) if optional => {}
            Err(e) => return Err(store_err("reading the source's digests (HEAD)")(e)),
        }
    }
    Ok(())
}
