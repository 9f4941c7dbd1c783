//! How fast the service copies on the server (issue 29): a move between two buckets of one S3
//! service is copied with CopyObject / UploadPartCopy (`transfer::server_side`), no byte passing
//! through this machine, so neither the probe's throughput nor its request rates time it.
//!
//! S3 only, with a signer, after the throughput phase. The probe writes a small object
//! ([`super::rates::RATE_OBJECT_BYTES`]) and one of `--size` bytes (in 4 parts of at least
//! 5 MiB, as exec writes objects above its threshold, when it is 10 MiB or more; with a
//! full-object CRC64 where the store keeps one, as exec's checksum path writes them — a service
//! may copy such an object otherwise: Garage copies a plain multipart object by reference, and
//! reads one with a stored CRC64 through to compute a new MD5, ~10× slower), then times, as
//! `exec` sends them (a presigned PUT with `x-amz-copy-source`, metadata replaced):
//!
//! | field | how |
//! |---|---|
//! | `small_copy_seconds` | CopyObject of the small object, one in flight, the median of 5 |
//! | `copy_seconds` | CopyObject of the `--size` object, one in flight, the median of 3 |
//! | `small_copies_per_second` | 64 CopyObjects of the small object, 32 in flight |
//! | `small_head_copies_per_second` | 64 objects copied as exec copies each one: a HEAD of the source (checksum mode, pinned to its ETag), then its CopyObject; 32 in flight |
//! | `parallel_bytes_per_second` | `--streams` CopyObjects of the `--size` object at once |
//! | `part_copy_bytes_per_second` | one multipart upload of the `--size` object by UploadPartCopy of 4 ranges (at least 5 MiB each) in parallel, completed |
//!
//! `process_start_seconds` is how long this process took to start before the probe's first
//! request (the catalog, the remotes, the store and its credentials): a move copied on the server
//! is short enough for `exec`'s own start to be a visible share of it.
//!
//! A copy one in flight takes `small_copy_seconds + bytes × (copy_seconds −
//! small_copy_seconds) / (object_bytes − small_object_bytes)`: a fixed cost per request and a
//! cost per byte, from the two sizes ([`ServerCopy::seconds_per_byte`]). Every copy is written
//! under the scratch prefix and removed with it; an unfinished upload is aborted.

use super::common::{short, test_bytes};
use super::{Ctx, Finding, ProbeReport, Status};
use crate::store::location::Location;
use bytes::Bytes;
use object_store::ObjectStoreExt;
use object_store::aws::AmazonS3;
use object_store::multipart::PartId;
use object_store::path::Path;
use object_store::signer::{HeaderMap, HeaderName, HeaderValue, Method, SignedUrlOptions, Signer};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// What the service's own copies took (see the module comment); `None` where not measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCopy {
    pub small_object_bytes: u64,
    pub small_copy_seconds: Option<f64>,
    pub object_bytes: u64,
    pub copy_seconds: Option<f64>,
    pub small_copies_per_second: Option<f64>,
    /// Objects per second copied as exec copies each one (a HEAD of the source, then the
    /// CopyObject), 32 in flight; absent in probes before 2026-12-06.
    #[serde(default)]
    pub small_head_copies_per_second: Option<f64>,
    pub parallel: usize,
    pub parallel_bytes_per_second: Option<f64>,
    pub part_bytes: u64,
    pub part_copy_bytes_per_second: Option<f64>,
    /// The `--size` object was written keeping a full-object CRC64 (`x-amz-checksum-algorithm:
    /// CRC64NVME`), as exec's checksum path writes: its copies are timed as such objects copy.
    #[serde(default)]
    pub source_crc64: bool,
    /// Seconds this probe's process took to start before its first request
    /// ([`since_process_start`]); `exec` starts the same way, for each of its two stores.
    #[serde(default)]
    pub process_start_seconds: Option<f64>,
}

impl ServerCopy {
    /// Seconds per byte of one copy beyond its fixed cost (never below zero: a service that
    /// copies by reference takes as long for a large object as for a small one).
    pub fn seconds_per_byte(&self) -> Option<f64> {
        let (s, l) = (self.small_copy_seconds?, self.copy_seconds?);
        let extra = self.object_bytes.checked_sub(self.small_object_bytes)?;
        (extra > 0).then(|| ((l - s) / extra as f64).max(0.0))
    }
}

/// In flight for the small copies' rate (exec's default `--transfers` is 32).
const SMALL_IN_FLIGHT: usize = 32;
const SMALL_COPIES: usize = 64;

struct Copier<'a> {
    ctx: &'a Ctx<'a>,
    s3: &'a AmazonS3,
    bucket: String,
}

impl Copier<'_> {
    /// A signed PUT to `to` copying `from` (a range of it with `part`: part number, upload id,
    /// range); the ETag of the answer.
    async fn copy(
        &self,
        from: &Path,
        to: &Path,
        part: Option<(usize, &str, std::ops::Range<u64>)>,
    ) -> Result<String, String> {
        let mut h = HeaderMap::new();
        let source = format!("{}/{}", self.bucket, encode(from.as_ref()));
        let v = |s: &str| HeaderValue::from_str(s).map_err(|e| e.to_string());
        h.insert(HeaderName::from_static("x-amz-copy-source"), v(&source)?);
        let mut query = Vec::new();
        match &part {
            Some((n, id, r)) => {
                h.insert(
                    HeaderName::from_static("x-amz-copy-source-range"),
                    v(&format!("bytes={}-{}", r.start, r.end - 1))?,
                );
                query.push(("partNumber".to_string(), n.to_string()));
                query.push(("uploadId".to_string(), id.to_string()));
            }
            None => {
                // As exec's CopyObject: the metadata is replaced (moverctl adds its own keys).
                h.insert(
                    HeaderName::from_static("x-amz-metadata-directive"),
                    v("REPLACE")?,
                );
            }
        }
        let mut opts = SignedUrlOptions::default().with_query(query);
        for (k, val) in &h {
            opts = opts.with_signed_header(k.clone(), val.clone());
        }
        let url = self
            .s3
            .signed_url_opts(Method::PUT, to, Duration::from_secs(300), &opts)
            .await
            .map_err(|e| format!("presigning failed: {}", short(&e)))?;
        let resp = crate::store::presign::client()
            .put(url)
            .headers(h)
            .header("content-length", "0")
            .send()
            .await
            .map_err(|e| format!("request failed: {}", short(&e.without_url())))?;
        let status = resp.status().as_u16();
        let body = resp.text().await.unwrap_or_default();
        if !(200..300).contains(&status) || body.contains("<Error") {
            return Err(format!("HTTP {status} {}", short(&body)));
        }
        crate::store::presign::xml_field(&body, "ETag")
            .map(|e| e.replace("&quot;", "\""))
            .ok_or_else(|| "the copy's answer holds no ETag".to_string())
    }

    /// A HEAD of `from` as exec sends one before copying it: presigned, with checksum mode,
    /// pinned to `etag`.
    async fn head(&self, from: &Path, etag: &str) -> Result<(), String> {
        use crate::store::presign::{HeadFailed, checksum_head, client};
        let resp = checksum_head(self.s3, false, client(), from, (None, Some(etag)))
            .await
            .map_err(|e| match e {
                HeadFailed::Sign(e) => format!("presigning failed: {}", short(&e)),
                HeadFailed::Send(e) => format!("request failed: {}", short(&e)),
            })?;
        match resp.status().as_u16() {
            200..=299 => Ok(()),
            s => Err(format!("HEAD answered HTTP {s}")),
        }
    }

    /// `count` objects copied as exec copies each (a HEAD of `from`, then its CopyObject),
    /// `in_flight` at a time; objects per second.
    async fn many_with_head(
        &self,
        from: &Path,
        etag: &str,
        count: usize,
        in_flight: usize,
    ) -> Result<f64, String> {
        use futures::StreamExt;
        let to: Vec<Path> = (0..count)
            .map(|i| self.ctx.path(&format!("copy/headed-{i}")))
            .collect();
        let t = Instant::now();
        let res: Vec<Result<String, String>> = futures::stream::iter(to.iter())
            .map(|p| async move {
                self.head(from, etag).await?;
                self.copy(from, p, None).await
            })
            .buffer_unordered(in_flight.max(1))
            .collect()
            .await;
        res.into_iter().collect::<Result<Vec<_>, _>>()?;
        Ok(count as f64 / t.elapsed().as_secs_f64().max(1e-9))
    }

    /// Seconds of one CopyObject of `from`, the median of `n`.
    async fn one(&self, from: &Path, name: &str, n: usize) -> Result<f64, String> {
        let mut v = Vec::with_capacity(n);
        for i in 0..n {
            let to = self.ctx.path(&format!("copy/{name}-{i}"));
            let t = Instant::now();
            self.copy(from, &to, None).await?;
            v.push(t.elapsed().as_secs_f64());
        }
        v.sort_by(f64::total_cmp);
        Ok(v[v.len() / 2])
    }

    /// `count` CopyObjects of `from`, `in_flight` at a time; copies per second.
    async fn many(
        &self,
        from: &Path,
        name: &str,
        count: usize,
        in_flight: usize,
    ) -> Result<f64, String> {
        use futures::StreamExt;
        let to: Vec<Path> = (0..count)
            .map(|i| self.ctx.path(&format!("copy/{name}-{i}")))
            .collect();
        let t = Instant::now();
        let res: Vec<Result<String, String>> = futures::stream::iter(to.iter())
            .map(|p| self.copy(from, p, None))
            .buffer_unordered(in_flight.max(1))
            .collect()
            .await;
        res.into_iter().collect::<Result<Vec<_>, _>>()?;
        Ok(count as f64 / t.elapsed().as_secs_f64().max(1e-9))
    }

    /// One multipart upload of `from` (`size` bytes) by UploadPartCopy of parts of `part` bytes
    /// in parallel, completed; bytes per second. The upload is aborted when a step fails.
    async fn by_parts(&self, from: &Path, size: u64, part: u64) -> Result<f64, String> {
        let mp = (self.ctx.store.multipart.as_ref()).ok_or("no multipart API for this store")?;
        let to = self.ctx.path("copy/parts");
        let t = Instant::now();
        let id = (mp.create_multipart(&to).await).map_err(|e| short(&e))?;
        let ranges: Vec<_> = (0..size.div_ceil(part))
            .map(|i| i * part..((i + 1) * part).min(size))
            .collect();
        let copies = futures::future::join_all(
            (ranges.iter().enumerate())
                .map(|(i, r)| self.copy(from, &to, Some((i + 1, &id, r.clone())))),
        )
        .await;
        let parts: Result<Vec<PartId>, String> = copies
            .into_iter()
            .map(|r| r.map(|content_id| PartId { content_id }))
            .collect();
        let done = match parts {
            Ok(p) => (mp.complete_multipart(&to, &id, p).await).map_err(|e| short(&e)),
            Err(e) => Err(e),
        };
        if let Err(e) = done {
            let _ = mp.abort_multipart(&to, &id).await;
            return Err(e);
        }
        Ok(size as f64 / t.elapsed().as_secs_f64().max(1e-9))
    }
}

/// Percent-encodes a key for `x-amz-copy-source` (every byte but unreserved ones and `/`).
fn encode(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Measure the server-side copy (see the module comment) into `report.server_copy`; a failure
/// is a finding ("unknown", with what the store answered) and leaves the rest unmeasured.
pub(crate) async fn measure(
    ctx: &Ctx<'_>,
    s3: &AmazonS3,
    size: u64,
    streams: usize,
    report: &mut ProbeReport,
) {
    let Location::S3 { bucket, .. } = &ctx.store.location else {
        return;
    };
    let c = Copier {
        ctx,
        s3,
        bucket: bucket.clone(),
    };
    let small_bytes = super::rates::RATE_OBJECT_BYTES;
    let part = (size / 4).max(5 << 20);
    let mut sc = ServerCopy {
        small_object_bytes: small_bytes as u64,
        object_bytes: size,
        parallel: streams.max(1),
        part_bytes: part.min(size),
        ..ServerCopy::default()
    };
    let res = async {
        let small = ctx.path("copy/source-small");
        let large = ctx.path("copy/source-large");
        let put = |p: Path, b: Bytes| async move {
            ctx.inner().put(&p, b.into()).await.map_err(|e| short(&e))
        };
        let small_etag = put(small.clone(), test_bytes(ctx.seed ^ 0xc0b1, small_bytes))
            .await?
            .e_tag
            .unwrap_or_default();
        // Written in parts, as exec writes (and most corpora hold) objects above its
        // threshold: a service may copy such an object part by part.
        let body = test_bytes(ctx.seed ^ 0xc0b2, size as usize);
        if size >= 2 * (5 << 20) {
            let parts: Vec<Bytes> = (0..size.div_ceil(part))
                .map(|i| body.slice((i * part) as usize..(((i + 1) * part).min(size)) as usize))
                .collect();
            // As exec's checksum path writes it (a full-object CRC64 the store keeps), where
            // the store takes that; a plain upload otherwise.
            let crc = match &ctx.store.crc_writer {
                Some(w) => (ctx.multipart_through(&w.inner, &large, &parts).await).is_ok(),
                None => false,
            };
            if !crc {
                (ctx.multipart(&large, &parts).await).map_err(|e| short(&e))?;
            }
            sc.source_crc64 = crc;
        } else {
            put(large.clone(), body).await?;
        }
        sc.small_copy_seconds = Some(round6(c.one(&small, "small", 5).await?));
        sc.copy_seconds = Some(round6(c.one(&large, "large", 3).await?));
        sc.small_copies_per_second = Some(
            c.many(&small, "rate", SMALL_COPIES, SMALL_IN_FLIGHT)
                .await?
                .round(),
        );
        sc.small_head_copies_per_second = Some(
            c.many_with_head(&small, &small_etag, SMALL_COPIES, SMALL_IN_FLIGHT)
                .await?
                .round(),
        );
        let per = c.many(&large, "parallel", sc.parallel, sc.parallel).await?;
        sc.parallel_bytes_per_second = Some((per * size as f64).round());
        if size >= 2 * (5 << 20) {
            sc.part_copy_bytes_per_second = Some(c.by_parts(&large, size, part).await?.round());
        }
        Ok::<(), String>(())
    }
    .await;
    if let Err(e) = res {
        report.findings.push(Finding::new(
            "server_copy",
            "server-side copy (CopyObject / UploadPartCopy)",
            Status::Unknown,
            format!("failed: {e}"),
        ));
    }
    report.server_copy = Some(sc);
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// Seconds from this process's start to now (`/proc/self/stat` against `/proc/uptime`, to the
/// kernel's clock tick): what starting moverctl took on this machine, under its current load —
/// loading the catalog and the remotes, opening the store, fetching credentials. `None` where
/// /proc is not there.
pub fn since_process_start() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces; the fields after its ')' are space-separated,
    // starttime being the 22nd field overall (the 20th after the name).
    let rest = stat.rsplit_once(')')?.1;
    let start_ticks: f64 = rest.split_whitespace().nth(19)?.parse().ok()?;
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let uptime: f64 = (std::fs::read_to_string("/proc/uptime").ok()?)
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    (hz > 0).then(|| (uptime - start_ticks / hz as f64).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_costs_a_fixed_time_and_a_time_per_byte() {
        // 16 KiB in 5 ms, 64 MiB in 405 ms: (0.405 - 0.005) / (67,108,864 - 16,384) s per byte.
        let sc = ServerCopy {
            small_object_bytes: 16_384,
            small_copy_seconds: Some(0.005),
            object_bytes: 64 << 20,
            copy_seconds: Some(0.405),
            ..ServerCopy::default()
        };
        let per = sc.seconds_per_byte().unwrap();
        assert!((per - 0.4 / 67_092_480.0).abs() < 1e-15, "{per}");
        // A service copying by reference: the large copy no slower, nothing per byte.
        let by_ref = ServerCopy {
            copy_seconds: Some(0.004),
            ..sc
        };
        assert_eq!(by_ref.seconds_per_byte(), Some(0.0));
        assert_eq!(ServerCopy::default().seconds_per_byte(), None);
    }

    #[test]
    fn copy_source_keys_are_encoded() {
        assert_eq!(encode("a b/c+d.é"), "a%20b/c%2Bd.%C3%A9");
    }
}
