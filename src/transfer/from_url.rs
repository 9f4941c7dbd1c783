//! Copy into Azure from a signed URL of the source: the blob service reads each block from the
//! source itself (Put Block From URL) and only requests pass through this machine — how AzCopy
//! moves S3 to Azure without the client's bandwidth.
//!
//! Used when the destination is Azure Blob and the source is S3 or Azure, both signing with a
//! key of their own (object_store's `Signer`: a presigned S3 GET, an Azure service SAS). Each
//! source URL is signed for one hour and never printed; each block request carries the listed
//! ETag as `x-ms-source-if-match`, so a source changed since it was listed fails as in a
//! streamed copy. A copy is only made where the blocks' answers can prove it: the blob service
//! answers every Put Block From URL with the MD5 of the bytes it fetched (and, where it computes
//! one, their CRC64/NVME):
//!
//! | the source states | the blocks | the proof (`read+write` label) |
//! |---|---|---|
//! | an MD5 (single-part S3 ETag, an Azure `Content-MD5`), ≤ one block (100 MiB) | one block | its MD5 is the source's (`source-md5+dest-copy-block-md5`) |
//! | a multipart ETag `md5(part md5s)-N` | the source's own parts | their MD5s compose to it (`source-parts-etag+dest-copy-block-md5`) |
//! | a CRC64 (moverctl's, or one S3 keeps) | parts of the usual size | their CRC64s combine to it (`source-crc64` or `source-checksum` + `dest-copy-block-crc64`) |
//!
//! Nothing is committed unless the proof holds; the uncommitted blocks are dropped by the
//! service (Azure keeps them a week). Anything else — no digest, `--verify readback`, a service
//! that cannot reach or read the source URL (`CannotVerifyCopySource`: a private endpoint, a
//! loopback test server, an emulator that only copies within itself), credentials that cannot
//! sign — streams through this machine as before; a refusal of the call turns it off for the
//! run. Blocks are journaled like streamed parts, so a killed run resumes at block level.
//! `--tpslimit` paces the requests; `--bwlimit` does not apply.

use super::Verify;
use super::claims::Claims;
use super::copy::attributes::metadata;
use super::copy::context::{CopyError, Ctx, FromUrl, Outcome, crc_first, progress_in_flight};
use super::copy::resume::{abandon, resume_or_start};
use super::copy::source::discover_for;
use super::server_side::{self, Refused, Verdict};
use super::verification::{ReadCheck, Verification, WriteCheck};
use crate::checksum;
use crate::journal::PartRecord;
use crate::store::Store;
use crate::store::list::Entry;
use crate::store::retry::retryable_status;
use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use futures::stream::{self, StreamExt};
use object_store::Attribute;
use object_store::signer::{HeaderMap, HeaderName, HeaderValue, Method, Signer};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// The largest block fetched from a URL (the catalog's [`crate::catalog::parts::MAX_FROM_URL_BLOCK`]).
pub const MAX_BLOCK: u64 = crate::catalog::parts::MAX_FROM_URL_BLOCK;

/// How long a signed source or destination URL is valid: one block request (retries sign anew).
const SIGNED_FOR: Duration = Duration::from_secs(3600);

impl FromUrl {
    /// Possible when the destination is Azure Blob and the source an S3 or Azure location whose
    /// credentials can sign a URL (not anonymous, not a SAS given to moverctl), and the
    /// destination's credentials can sign a SAS.
    pub async fn between(src: &Store, dst: &Store) -> Option<FromUrl> {
        let d = dst.as_azure()?;
        if src.is_local() || src.is_anonymous() {
            return None;
        }
        let probe = object_store::path::Path::from("moverctl-sign-check");
        d.signed_url(Method::PUT, &probe, SIGNED_FOR).await.ok()?;
        match (src.as_s3(), src.as_azure()) {
            (Some(s), _) => s.signed_url(Method::GET, &probe, SIGNED_FOR).await.ok()?,
            (None, Some(a)) => a.signed_url(Method::GET, &probe, SIGNED_FOR).await.ok()?,
            (None, None) => return None,
        };
        Some(FromUrl {
            off: AtomicBool::new(false),
            no_crc: AtomicBool::new(false),
            unproven: Default::default(),
        })
    }
}

/// How one object is proven.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    /// One block; its MD5 must be this.
    Whole([u8; 16]),
    /// Blocks of the source's own parts; their MD5s must compose to its multipart ETag.
    Parts { part: u64, etag: String },
    /// Blocks of `part`; their CRC64s must combine to `crc` (`stored`: a CRC the source store
    /// keeps, else moverctl's metadata).
    Crc { part: u64, crc: u64, stored: bool },
}

impl Mode {
    fn part(&self, size: u64) -> u64 {
        match self {
            Mode::Whole(_) => size,
            Mode::Parts { part, .. } | Mode::Crc { part, .. } => *part,
        }
    }

    fn label(&self) -> Verification {
        match self {
            Mode::Whole(_) => Verification::new(ReadCheck::SourceMd5, WriteCheck::DestCopyBlockMd5),
            Mode::Parts { .. } => {
                Verification::new(ReadCheck::SourcePartsEtag, WriteCheck::DestCopyBlockMd5)
            }
            Mode::Crc { stored: true, .. } => {
                Verification::new(ReadCheck::SourceChecksum, WriteCheck::DestCopyBlockCrc64)
            }
            Mode::Crc { stored: false, .. } => {
                Verification::new(ReadCheck::SourceCrc64, WriteCheck::DestCopyBlockCrc64)
            }
        }
    }
}

/// The proof this object's copy can have, or None (stream it). `part` is the part size the
/// streamed copy would use.
fn mode_for(
    claims: &Claims,
    size: u64,
    part: u64,
    limits: &crate::catalog::Limits,
    crc_ok: bool,
) -> Option<Mode> {
    if size == 0 {
        return None;
    }
    // The planner decides with the same two functions (`plan::requests`), so plan and exec agree
    // on which objects are fetched from the URL and which stream.
    let max_block = crate::catalog::parts::from_url_max_block(limits);
    let fits = |p: u64| crate::catalog::parts::from_url_fits(size, p, limits);
    if let Some((p, etag)) = &claims.parts_etag
        && fits(*p)
    {
        return Some(Mode::Parts {
            part: *p,
            etag: etag.clone(),
        });
    }
    if let Some(md5) = claims.md5
        && size <= max_block
    {
        return Some(Mode::Whole(md5));
    }
    let crc = claims
        .crc64_stored
        .map(|c| (c, true))
        .or(claims.crc64_meta.map(|c| (c, false)));
    let part = part.min(max_block);
    if let Some((crc, stored)) = crc
        && crc_ok
        && fits(part)
    {
        return Some(Mode::Crc { part, crc, stored });
    }
    None
}

/// Copies `src` from a signed URL and proves it, or `Ok(None)`: this object (or this run) is to
/// be streamed instead, and `known` holds what the source claims if a HEAD learned it here (the
/// streamed copy does not ask again).
pub(super) async fn copy(
    ctx: &Ctx,
    fu: &FromUrl,
    src: &Entry,
    part: u64,
    known: &mut Option<Claims>,
) -> Result<Option<Outcome>, CopyError> {
    if fu.off.load(Relaxed)
        || ctx.opts.verify == Verify::Readback
        || ctx.dst.is_single()
        || fu.unproven.lock().expect("lock").contains(&src.key)
    {
        return Ok(None);
    }
    let (Some(az), Some(e_tag)) = (ctx.dst.as_azure(), &src.e_tag) else {
        return Ok(None);
    };
    // A single upload's part size is the whole object.
    let part = part.min(src.size);
    let claims = discover_for(ctx, src, true, false).await?;
    if !crc_first(ctx) {
        // Learned as the streamed copy would learn them.
        *known = Some(claims.clone());
    }
    if claims.meta.is_none() && ctx.dst.caps.keeps_metadata {
        // No HEAD showed the source's content headers and metadata (it failed where the
        // source's MD5 was known without it): streamed, the GET shows them.
        return Ok(None);
    }
    let Some(mode) = mode_for(
        &claims,
        src.size,
        part,
        &ctx.opts.dst_limits,
        !fu.no_crc.load(Relaxed),
    ) else {
        return Ok(None);
    };
    let path = ctx.dst.path_of(&src.key).map_err(|e| CopyError::Store {
        what: "destination key",
        source: e.into(),
    })?;
    let src_path = ctx.src.path_of(&src.key).map_err(|e| CopyError::Store {
        what: "source key",
        source: e.into(),
    })?;
    let signed = match (ctx.src.as_s3(), ctx.src.as_azure()) {
        (Some(s), _) => s.signed_url(Method::GET, &src_path, SIGNED_FOR).await,
        (None, Some(a)) => a.signed_url(Method::GET, &src_path, SIGNED_FOR).await,
        (None, None) => return Ok(None),
    };
    let Ok(source_url) = signed else {
        return Ok(None);
    };
    // object_store signs a SAS over the percent-encoded path, where Azure (and Azurite) sign
    // the decoded name: a key with a character that needs encoding (a space, non-ASCII) would be
    // refused (403), so it streams.
    if (ctx.src.is_azure() && source_url.path().contains('%'))
        || az
            .signed_url(Method::PUT, &path, SIGNED_FOR)
            .await
            .map_or(true, |u| u.path().contains('%'))
    {
        return Ok(None);
    }
    let Some(mp) = ctx.dst.multipart.as_ref() else {
        return Ok(None);
    };
    let req = Req {
        ctx,
        az,
        path: &path,
        source_url: source_url.to_string(),
        if_match: e_tag.clone(),
    };
    match blocks(&req, fu, mp, src, &claims, &mode).await {
        Ok(Some(mut out)) => {
            out.verified_by = mode.label();
            ctx.counters.server_side_objects.fetch_add(1, Relaxed);
            ctx.counters.server_side_bytes.fetch_add(src.size, Relaxed);
            Ok(Some(out))
        }
        Ok(None) => {
            fu.unproven.lock().expect("lock").insert(src.key.clone());
            Ok(None)
        }
        Err(Refused::Off(why)) => {
            if !fu.off.swap(true, Relaxed) {
                tracing::warn!(
                    target: "moverctl::copy",
                    "copy from the source's URL refused ({why}); this run streams every object through this machine"
                );
            }
            Ok(None)
        }
        Err(Refused::Copy(e)) => Err(e),
    }
}

/// What every request of one object's copy shares.
struct Req<'a> {
    ctx: &'a Ctx,
    az: &'a object_store::azure::MicrosoftAzure,
    path: &'a object_store::path::Path,
    /// The signed source URL (a secret: never printed).
    source_url: String,
    if_match: String,
}

/// A block id of this attempt: 32 characters, the same length for every block of a blob (the
/// journal keeps it, as object_store's own block ids).
fn block_id(idx: usize) -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    format!("{t:016x}{:08x}{:08x}", std::process::id(), idx as u32)
}

/// One block of the object (`part` bytes at index `idx`): reused where an earlier attempt
/// journaled it (`prior`, with the digest the proof needs: its MD5, or with `want_md5` false its
/// CRC64), else fetched by the destination from the source's URL and journaled with the digests
/// its answer carried.
async fn stage_block(
    req: &Req<'_>,
    src: &Entry,
    idx: usize,
    part: u64,
    prior: Option<PartRecord>,
    want_md5: bool,
) -> Result<PartRecord, Refused> {
    let ctx = req.ctx;
    let start = idx as u64 * part;
    let end = (start + part).min(src.size);
    if let Some(p) = prior
        && p.size == end - start
        && (!want_md5 || p.md5.as_deref().and_then(checksum::etag_md5).is_some())
        && (want_md5 || u64::from_str_radix(&p.crc64, 16).is_ok())
    {
        ctx.counters.resumed_parts.fetch_add(1, Relaxed);
        progress_in_flight(ctx, &src.key, p.size);
        return Ok(p);
    }
    let content_id = block_id(idx);
    let mut h = HeaderMap::new();
    h.insert(
        HeaderName::from_static("x-ms-copy-source"),
        header(&req.source_url, "the source URL")?,
    );
    h.insert(
        HeaderName::from_static("x-ms-source-range"),
        header(&format!("bytes={}-{}", start, end - 1), "the range")?,
    );
    h.insert(
        HeaderName::from_static("x-ms-source-if-match"),
        header(&req.if_match, "the source ETag")?,
    );
    let answer = send(
        ctx,
        req.az,
        req.path,
        &[
            ("comp", "block"),
            ("blockid", &BASE64_STANDARD.encode(&content_id)),
        ],
        h,
        bytes::Bytes::new(),
        "copying a block from the source's URL (Put Block From URL)",
    )
    .await?;
    // The service read the range at the source: a GET and egress the source bills.
    ctx.counters.fetched_by_destination.fetch_add(1, Relaxed);
    ctx.counters
        .fetched_by_destination_bytes
        .fetch_add(end - start, Relaxed);
    let md5 = answer
        .get("content-md5")
        .and_then(|v| v.to_str().ok())
        .and_then(b64::<16>);
    let crc = answer
        .get("x-ms-content-crc64")
        .and_then(|v| v.to_str().ok())
        .and_then(b64::<8>)
        .map(u64::from_le_bytes);
    let rec = PartRecord {
        idx: idx as u32,
        content_id,
        crc64: crc.map(checksum::crc64_hex).unwrap_or_default(),
        md5: md5.map(|m| checksum::hex(&m)),
        size: end - start,
    };
    server_side::journal_part(ctx, &src.key, rec)
}

/// The blocks' CRC64s, combined: the object's, when every answer carried one.
fn blocks_crc64(recs: &[PartRecord]) -> Option<u64> {
    let crc = recs.iter().try_fold(None::<u64>, |acc, p| {
        let c = u64::from_str_radix(&p.crc64, 16).ok()?;
        Some(Some(match acc {
            None => c,
            Some(a) => checksum::crc64_combine(a, c, p.size),
        }))
    });
    crc.flatten()
}

/// Whether the blocks' digests (their MD5s, or `crc` combined) prove the copy as `mode` asks;
/// the first answer without a CRC64 turns CRC-proven copies off for the run.
fn proves(fu: &FromUrl, mode: &Mode, md5s: Option<&[[u8; 16]]>, crc: Option<u64>) -> bool {
    match mode {
        Mode::Whole(want) => md5s == Some(std::slice::from_ref(want)),
        Mode::Parts { etag, .. } => {
            md5s.map(checksum::multipart_etag).as_deref() == Some(etag.as_str())
        }
        Mode::Crc { crc: want, .. } => {
            if crc.is_none() && !fu.no_crc.swap(true, Relaxed) {
                tracing::info!(
                    target: "moverctl::copy",
                    "the destination's block answers carry no CRC64; objects proven only by a CRC are streamed"
                );
            }
            crc == Some(*want)
        }
    }
}

/// Stages every block (journaled, resumable), checks the proof, and commits the block list.
async fn blocks(
    req: &Req<'_>,
    fu: &FromUrl,
    mp: &std::sync::Arc<dyn object_store::multipart::MultipartStore>,
    src: &Entry,
    claims: &Claims,
    mode: &Mode,
) -> Result<Option<Outcome>, Refused> {
    let ctx = req.ctx;
    let part = mode.part(src.size).max(1);
    let n = src.size.div_ceil(part);
    let known_crc = claims.crc64_meta.or(claims.crc64_stored);
    let (id, done) = resume_or_start(
        ctx,
        mp,
        req.path,
        src,
        (part, n),
        (known_crc, claims.meta.as_ref()),
        false,
    )
    .await
    .map_err(Refused::Copy)?;
    let want_md5 = !matches!(mode, Mode::Crc { .. });
    let staged = stream::iter(
        done.into_iter()
            .enumerate()
            .map(|(idx, prior)| stage_block(req, src, idx, part, prior, want_md5)),
    )
    .buffered(ctx.opts.part_concurrency.max(1))
    .collect::<Vec<_>>()
    .await;
    // The blocks staged so far stay journaled on an error: the next attempt resumes after them.
    let recs = server_side::gather(ctx, mp, req.path, &id, &src.key, staged).await?;
    let md5s = server_side::part_md5s(&recs);
    let crc = blocks_crc64(&recs);
    let proven = proves(fu, mode, md5s.as_deref(), crc);
    if !proven {
        abandon(ctx, mp, req.path, &id, &src.key, false).await;
        if crc.is_some() || !matches!(mode, Mode::Crc { .. }) {
            tracing::warn!(
                target: "moverctl::copy",
                key = %src.key,
                "the blocks the destination fetched from the source's URL do not match the source's digest; copying it through this machine instead"
            );
        }
        return Ok(None);
    }
    // The object's CRC64 goes into its metadata (the source's, or the blocks' combined); its
    // MD5, where the source states one, as the blob's Content-MD5 property.
    let crc = known_crc.or(crc);
    let whole_md5 = match mode {
        Mode::Whole(m) => Some(*m),
        _ => claims.md5,
    };
    let ids: Vec<&str> = recs.iter().map(|p| p.content_id.as_str()).collect();
    let answer = match commit(
        ctx,
        req.az,
        req.path,
        &ids,
        &metadata(ctx, src, crc, claims.meta.as_ref()),
        whole_md5,
    )
    .await
    {
        Ok(a) => a,
        Err(Refused::Off(why)) => {
            abandon(ctx, mp, req.path, &id, &src.key, false).await;
            return Err(Refused::Off(why));
        }
        // Staged and proven: the next attempt commits them without fetching again.
        Err(e) => return Err(e),
    };
    let mut out = server_side::outcome(src, crc, whole_md5, answer.e_tag, n, Some(id), Some(part));
    out.verified_by = mode.label();
    Ok(Some(out))
}

/// Commits staged blocks (by their ids, as the journal keeps them) with moverctl's metadata and,
/// when known, the object's MD5 as its `Content-MD5` property, authorised by a SAS: object_store's
/// own block-list commit cannot carry metadata.
pub(super) async fn commit(
    ctx: &Ctx,
    az: &object_store::azure::MicrosoftAzure,
    path: &object_store::path::Path,
    ids: &[&str],
    attrs: &object_store::Attributes,
    md5: Option<[u8; 16]>,
) -> Result<object_store::PutResult, Refused> {
    let mut h = HeaderMap::new();
    for (k, v) in attrs {
        let name = match k {
            Attribute::Metadata(m) => format!("x-ms-meta-{m}"),
            Attribute::StorageClass => "x-ms-access-tier".to_string(),
            a => match super::fidelity::Header::ALL
                .into_iter()
                .find(|h| &h.attribute() == a)
            {
                Some(h) => h.azure_name().to_string(),
                None => continue,
            },
        };
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(v.as_ref()),
        ) {
            h.insert(n, v);
        }
    }
    if let Some(m) = md5 {
        h.insert(
            HeaderName::from_static("x-ms-blob-content-md5"),
            header(&BASE64_STANDARD.encode(m), "the MD5")?,
        );
    }
    let mut list = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<BlockList>\n");
    for id in ids {
        list.push_str(&format!(
            "\t<Uncommitted>{}</Uncommitted>\n",
            BASE64_STANDARD.encode(id)
        ));
    }
    list.push_str("</BlockList>");
    let answer = send(
        ctx,
        az,
        path,
        &[("comp", "blocklist")],
        h,
        bytes::Bytes::from(list),
        "committing the blocks (Put Block List)",
    )
    .await?;
    Ok(object_store::PutResult {
        e_tag: answer
            .get("etag")
            .and_then(|v| v.to_str().ok())
            .map(checksum::etag_norm),
        version: None,
        extensions: Default::default(),
    })
}

fn b64<const N: usize>(v: &str) -> Option<[u8; N]> {
    BASE64_STANDARD.decode(v.trim()).ok()?.try_into().ok()
}

fn header(v: &str, what: &'static str) -> Result<HeaderValue, Refused> {
    HeaderValue::from_str(v).map_err(|_| {
        Refused::Copy(CopyError::Store {
            what: "copying from the source's URL",
            source: object_store::Error::Generic {
                store: "Azure",
                source: format!("{what} cannot be sent as a header").into(),
            },
        })
    })
}

/// An Azure error answer's code (`x-ms-error-code`, else the XML body's `<Code>`).
fn error_code(headers: &reqwest::header::HeaderMap, body: &str) -> String {
    headers
        .get("x-ms-error-code")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| crate::store::presign::xml_field(body, "Code"))
        .unwrap_or_default()
}

/// A PUT to the destination blob, authorised by a SAS signed for it (the operation's query
/// appended, as a SAS allows), retried under the one retry policy; its answer's headers.
async fn send(
    ctx: &Ctx,
    az: &object_store::azure::MicrosoftAzure,
    path: &object_store::path::Path,
    query: &[(&str, &str)],
    headers: HeaderMap,
    body: bytes::Bytes,
    what: &'static str,
) -> Result<reqwest::header::HeaderMap, Refused> {
    let generic = |msg: String, status: Option<u16>| CopyError::Store {
        what,
        source: object_store::Error::Generic {
            store: "Azure",
            source: match status {
                Some(status) => Box::new(crate::store::error::HttpStatus {
                    status,
                    message: msg,
                }),
                None => msg.into(),
            },
        },
    };
    let sign = || async move {
        let mut url = az
            .signed_url(Method::PUT, path, SIGNED_FOR)
            .await
            .map_err(|e| {
                Refused::Off(format!(
                    "no SAS could be signed: {}",
                    e.to_string().lines().next().unwrap_or("")
                ))
            })?;
        url.query_pairs_mut().extend_pairs(query);
        Ok(url)
    };
    server_side::put_signed(ctx, what, sign, &headers, vec![body], generic, |reply| {
        let code = error_code(&reply.headers, &reply.body);
        let off = || Verdict::Fail(Refused::Off(format!("{} {code}", reply.status)));
        match reply.status {
            200..=299 => Verdict::Done(reply.headers.clone()),
            304 | 412 if code != "ConditionNotMet" => {
                Verdict::Fail(Refused::Copy(CopyError::SourceChanged))
            }
            // The service could not read the source URL (not reachable from it, a signature it
            // does not take, an emulator that copies only within itself): the bytes can still
            // be streamed.
            _ if code == "CannotVerifyCopySource" => off(),
            400 if matches!(
                code.as_str(),
                "UnsupportedHeader" | "InvalidHeaderValue" | "InvalidQueryParameterValue"
            ) =>
            {
                off()
            }
            // Expired credentials are no reason to stream instead (see `copy_with_retries`).
            400 | 401 | 403 if crate::store::error::expired_text(&code) => {
                Verdict::Fail(Refused::Copy(generic(
                    format!("the store answered {} {code}", reply.status),
                    Some(reply.status),
                )))
            }
            401 | 403 | 405 | 501 => off(),
            s if retryable_status(s) => {
                Verdict::Retry(format!("the store answered {s} {code}"), Some(s))
            }
            s => Verdict::Fail(Refused::Copy(generic(
                format!("the store answered {s} {code}"),
                Some(s),
            ))),
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Limits;
    use crate::catalog::parts::example_limits;

    fn limits() -> Limits {
        example_limits(50_000, 1, 4_000 << 20, 50_000 * (4_000 << 20), 5_000 << 20)
    }

    #[test]
    fn the_proof_decides_the_blocks() {
        let md5 = [7u8; 16];
        let l = limits();
        // A multipart ETag: the source's own parts, whatever else it states.
        let parts = Claims {
            md5: None,
            parts_etag: Some((5 << 20, "abc-3".into())),
            crc64_meta: Some(9),
            ..Claims::default()
        };
        assert_eq!(
            mode_for(&parts, 12 << 20, 64 << 20, &l, true),
            Some(Mode::Parts {
                part: 5 << 20,
                etag: "abc-3".into()
            })
        );
        // An MD5 within one block's limit: one block.
        let single = Claims {
            md5: Some(md5),
            ..Claims::default()
        };
        assert_eq!(
            mode_for(&single, 100 << 20, 64 << 20, &l, true),
            Some(Mode::Whole(md5))
        );
        // Above one block's size (100 MiB), only a CRC could prove it: none here, so it streams.
        assert_eq!(mode_for(&single, 101 << 20, 64 << 20, &l, true), None);
        // A CRC: blocks of the usual part size; not once the run learned that answers carry
        // no CRC64.
        let crc = Claims {
            crc64_stored: Some(42),
            ..Claims::default()
        };
        assert_eq!(
            mode_for(&crc, 100 << 20, 64 << 20, &l, true),
            Some(Mode::Crc {
                part: 64 << 20,
                crc: 42,
                stored: true
            })
        );
        assert_eq!(mode_for(&crc, 100 << 20, 64 << 20, &l, false), None);
        // A part size above one block's limit is fetched in blocks of the limit.
        assert_eq!(
            mode_for(&crc, 1 << 30, 512 << 20, &l, true),
            Some(Mode::Crc {
                part: 100 << 20,
                crc: 42,
                stored: true
            })
        );
        // No digest, or an empty object: streamed.
        assert_eq!(mode_for(&Claims::default(), 10, 64 << 20, &l, true), None);
        assert_eq!(mode_for(&single, 0, 64 << 20, &l, true), None);
    }

    #[test]
    fn block_ids_have_one_length() {
        assert_eq!(block_id(0).len(), 32);
        assert_eq!(block_id(49_999).len(), 32);
    }
}
