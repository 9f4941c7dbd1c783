//! How `exec` moves a candidate's bytes (streamed through the workers, copied on the server,
//! fetched by the destination from the source's URL) and the requests it makes at each end: one
//! PUT, or create + parts + complete, by the destination's part rules (see the module comment of
//! [`super::model`]).

use super::candidate::{Assumptions, Counts};
use super::corpus::Corpus;
use crate::catalog::Place;
use crate::catalog::parts::{Upload, from_url_block, part_plan};

/// The API a provider's stores speak, as far as the executor's requests differ by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    S3,
    Gcs,
    Azure,
}

/// `gcp` is GCS, `azure` is Azure Blob; every other provider (`onprem` included: an S3-compatible
/// server; a local folder costs no requests and no fees either way) speaks S3.
pub fn api_of(p: &Place) -> Api {
    match p.provider_id() {
        "gcp" => Api::Gcs,
        "azure" => Api::Azure,
        _ => Api::S3,
    }
}

/// Whether `exec` would copy this move on the server: both ends S3-API stores of one provider
/// in one region (one endpoint; `exec` also needs one set of credentials), not an archive
/// class, and not the generic `onprem` provider (two on-prem clusters are two services).
/// Between regions `exec` streams (its server-side copy needs one endpoint), and so does the plan.
/// Where both locations are known, whether they are one service decides instead of the catalog
/// (an on-prem cluster's two buckets are one service).
pub fn server_side_copy(src: &Place, dst: &Place, a: &Assumptions) -> bool {
    let one_service = match a.same_service {
        Some(same) => same,
        None => {
            src.provider_id() == dst.provider_id()
                && src.region.id == dst.region.id
                && src.provider.file.kind != crate::catalog::ProviderKind::Onprem
        }
    };
    a.server_side
        && one_service
        && api_of(src) == Api::S3
        && api_of(dst) == Api::S3
        && !src.class.archive
}

/// Whether `exec` would have the destination fetch each block from the source's URL (Put Block
/// From URL): an Azure Blob destination and an S3-API or Azure source of a cloud provider (a
/// signed URL the blob service can reach; not `onprem`, not an archive class), copies on the
/// server allowed. Objects whose source states no digest stream (the plan cannot tell them).
pub fn from_url_copy(src: &Place, dst: &Place, a: &Assumptions) -> bool {
    a.server_side
        && api_of(dst) == Api::Azure
        && matches!(api_of(src), Api::S3 | Api::Azure)
        && src.provider.file.kind != crate::catalog::ProviderKind::Onprem
        && !src.class.archive
}

/// The largest block the blob service fetches from a URL (`exec`'s limit for Put Block From URL).
pub const FROM_URL_MAX_BLOCK: u64 = crate::catalog::parts::MAX_FROM_URL_BLOCK;

/// How `exec` moves the bytes of a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CopyPath {
    /// Through the workers: GET at the source, PUT at the destination.
    Streamed,
    /// CopyObject / UploadPartCopy within one S3 service: nothing read at the source.
    ServerSide,
    /// Put Block From URL: the destination reads each block from the source.
    FromUrl,
}

/// The requests `exec` makes with its defaults (see the module comment). A server-side copy of
/// a multipart object is one CopyObject where the destination keeps a copied object's parts
/// (`copy_keeps_multipart_etag`), up to its single-PUT limit.
pub(super) fn count_requests(
    src: &Place,
    dst: &Place,
    corpus: &Corpus,
    a: &Assumptions,
    path: CopyPath,
) -> Counts {
    let whole_copy = path == CopyPath::ServerSide
        && dst.limits().copy_keeps_multipart_etag == crate::catalog::Tristate::Yes;
    let mut c = Counts::default();
    let objects = corpus.total_objects();
    c.source_list = objects.div_ceil(1000).max(1);
    c.destination_list = c.source_list;
    let s3_source = api_of(src) == Api::S3;
    let head_after_multipart = matches!(api_of(dst), Api::Gcs | Api::Azure);
    for b in &corpus.buckets {
        for (n, size) in b.split() {
            if n == 0 {
                continue;
            }
            if s3_source && size > a.part_rule.threshold {
                c.source_head += n;
            } else if path == CopyPath::ServerSide {
                // A single CopyObject replaces the metadata (to add moverctl's keys), so one
                // HEAD first learns the source's content headers and user metadata.
                c.source_head += n;
            }
            if path == CopyPath::FromUrl {
                // One Put Block From URL per block (the service GETs its range at the source),
                // blocks of the streamed copy's part size up to the call's limit, and a block
                // list per object; an object that does not fit in blocks of that limit streams
                // through the workers, as `exec` decides ([`from_url_block`]).
                match from_url_block(size, dst.limits(), a.part_rule) {
                    Ok(Some(block)) => {
                        let blocks = size.div_ceil(block).max(1);
                        if blocks > 1 {
                            c.multipart_objects += n;
                            c.parts += n * blocks;
                            c.max_part_size = c.max_part_size.max(block);
                        }
                        c.source_get += n * blocks;
                        c.destination_put += n * (blocks + 1);
                        continue;
                    }
                    Ok(None) => {
                        c.streamed_objects += n;
                        c.streamed_bytes = c.streamed_bytes.saturating_add(n.saturating_mul(size));
                        if size > 0 && size > c.largest_streamed {
                            c.largest_streamed = size;
                        }
                    }
                    Err(_) => {
                        c.unplaceable_objects += n;
                        c.largest_unplaceable = c.largest_unplaceable.max(size);
                        continue;
                    }
                }
            }
            match part_plan(size, dst.limits(), a.part_rule) {
                Ok(Upload::Single) => {
                    c.source_get += n;
                    c.destination_put += n;
                }
                Ok(Upload::Multipart { .. })
                    if whole_copy && size <= dst.limits().max_single_put_bytes =>
                {
                    c.source_get += n;
                    c.destination_put += n;
                }
                Ok(Upload::Multipart { part_size, parts }) => {
                    c.multipart_objects += n;
                    c.parts += n * parts;
                    c.source_get += if a.ranged_reads { n * parts } else { n };
                    // Create, the parts, complete; Azure has no create (Put Block, then one Put
                    // Block List).
                    let framing = if api_of(dst) == Api::Azure { 1 } else { 2 };
                    c.destination_put += n * (parts + framing);
                    if head_after_multipart {
                        c.destination_head += n;
                    }
                    c.max_part_size = c.max_part_size.max(part_size);
                }
                Err(_) => {
                    c.unplaceable_objects += n;
                    c.largest_unplaceable = c.largest_unplaceable.max(size);
                }
            }
        }
    }
    if path == CopyPath::ServerSide {
        // CopyObject / UploadPartCopy at the destination; nothing is read from the source.
        c.source_get = 0;
    }
    c
}
