//! `FaultStore`: an `ObjectStore` + `MultipartStore` wrapper that injects faults from a shared,
//! deterministic plan. A rule names a key, an operation, a fault and how many times it fires;
//! once spent, the operation goes through untouched, so the engine's retries can succeed.

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use moverctl::store::Store;
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartId, MultipartUpload,
    ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// Which operation a rule applies to. Listings are never faulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// A GET whose byte range covers the rule's offset.
    Get,
    /// A single PUT (`put_opts`).
    Put,
    /// `create_multipart_opts`.
    Create,
    /// `put_part` of this part index.
    Part(usize),
    /// `complete_multipart`.
    Complete,
    /// A HEAD (`get_opts` with `head`), e.g. the one that learns a source's digests. (S3's
    /// presigned HEADs do not pass here: fault them with the proxy.)
    Head,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Fail before doing anything, like an exhausted 503 SlowDown.
    Unavailable,
    /// GET: the byte at the rule's offset (absolute, in the object) reaches the caller XOR 0x5a.
    /// PUT / part: the payload byte at the offset (relative to the payload) is flipped before
    /// it is forwarded, so the store keeps the corrupt bytes.
    Flip,
    /// GET: the body ends cleanly just before the offset (a short read nobody reports).
    Truncate,
    /// GET: an error just before the offset, after some bytes were delivered.
    ErrorMidStream,
}

#[derive(Debug, Clone)]
struct Rule {
    key: String,
    op: Op,
    fault: Fault,
    at: u64,
    left: u32,
}

/// One fault that fired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub key: String,
    pub op: Op,
    pub fault: Fault,
}

/// The shared fault plan; clones share state.
#[derive(Debug, Clone, Default)]
pub struct Plan(Arc<Mutex<(Vec<Rule>, Vec<Hit>)>>);

impl Plan {
    pub fn new() -> Plan {
        Plan::default()
    }

    /// Inject `fault` into the first `times` matching `op`s on `key` (relative to the store's
    /// prefix). `at` is the byte offset the fault applies at (see [`Fault`]); for GETs the
    /// request's range must cover it, so a multipart copy's ranged read of another part passes.
    pub fn add(&self, key: &str, op: Op, fault: Fault, at: u64, times: u32) -> &Plan {
        self.0.lock().unwrap().0.push(Rule {
            key: key.to_string(),
            op,
            fault,
            at,
            left: times,
        });
        self
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.0.lock().unwrap().1.clone()
    }

    /// Rules not yet spent (a test that plans a fault expects it to have fired).
    pub fn unspent(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .0
            .iter()
            .filter(|r| r.left > 0)
            .map(|r| format!("{} {:?} {:?} ×{}", r.key, r.op, r.fault, r.left))
            .collect()
    }

    fn take(&self, path: &Path, op: Op, covers: impl Fn(u64) -> bool) -> Option<(Fault, u64)> {
        let full = path.as_ref();
        let mut g = self.0.lock().unwrap();
        let (rules, hits) = &mut *g;
        let r = rules.iter_mut().find(|r| {
            r.left > 0
                && r.op == op
                && (full == r.key || full.ends_with(&format!("/{}", r.key)))
                && covers(r.at)
        })?;
        r.left -= 1;
        let found = (r.fault, r.at);
        hits.push(Hit {
            key: r.key.clone(),
            op,
            fault: r.fault,
        });
        Some(found)
    }
}

pub fn unavailable(what: &str) -> object_store::Error {
    object_store::Error::Generic {
        store: "FaultStore",
        source: format!(
            "injected: {what}: Server returned non-2xx status code: 503 Service Unavailable: <Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
        )
        .into(),
    }
}

fn mid_stream(at: u64) -> object_store::Error {
    object_store::Error::Generic {
        store: "FaultStore",
        source: format!("injected: connection reset while reading the body at byte {at}").into(),
    }
}

fn flip_payload(payload: PutPayload, at: u64) -> PutPayload {
    let mut v: Vec<u8> = Vec::with_capacity(payload.content_length());
    for b in payload.iter() {
        v.extend_from_slice(b);
    }
    if let Some(b) = v.get_mut(at as usize) {
        *b ^= 0x5a;
    }
    PutPayload::from(v)
}

/// The body stream with `fault` applied at `rel` bytes from its start.
fn faulty_body(
    body: BoxStream<'static, Result<Bytes>>,
    fault: Fault,
    rel: u64,
) -> BoxStream<'static, Result<Bytes>> {
    // (stream, bytes passed so far, finished)
    stream::unfold((body, 0u64, false), move |(mut s, pos, done)| async move {
        if done {
            return None;
        }
        match fault {
            Fault::Truncate | Fault::ErrorMidStream if pos >= rel => {
                return match fault {
                    Fault::Truncate => None,
                    _ => Some((Err(mid_stream(rel)), (s, pos, true))),
                };
            }
            _ => {}
        }
        let chunk = match s.next().await? {
            Ok(c) => c,
            Err(e) => return Some((Err(e), (s, pos, true))),
        };
        let end = pos + chunk.len() as u64;
        let chunk = match fault {
            Fault::Flip if pos <= rel && rel < end => {
                let mut v = chunk.to_vec();
                v[(rel - pos) as usize] ^= 0x5a;
                Bytes::from(v)
            }
            Fault::Truncate | Fault::ErrorMidStream if end > rel => {
                chunk.slice(..(rel - pos) as usize)
            }
            _ => chunk,
        };
        Some((Ok(chunk), (s, end, false)))
    })
    .boxed()
}

pub struct FaultStore {
    inner: Arc<dyn ObjectStore>,
    mp: Option<Arc<dyn MultipartStore>>,
    plan: Plan,
}

impl fmt::Debug for FaultStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultStore({:?})", self.inner)
    }
}

impl fmt::Display for FaultStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultStore({})", self.inner)
    }
}

/// The same location with every object and multipart operation going through `plan`. Listing
/// (`pages`) is left alone. The original `store` still reaches the real data without faults.
pub fn faulty(store: &Store, plan: &Plan) -> Store {
    let f = Arc::new(FaultStore {
        inner: store.inner.clone(),
        mp: store.multipart.clone(),
        plan: plan.clone(),
    });
    let mut s = store.clone();
    s.inner = f.clone();
    if store.multipart.is_some() {
        s.multipart = Some(f);
    }
    // The checksum-only path writes through the CRC64-sending twin: faulted the same way.
    if let Some(w) = &store.crc_writer {
        let c = Arc::new(FaultStore {
            inner: w.inner.clone(),
            mp: Some(w.multipart.clone()),
            plan: plan.clone(),
        });
        // Writes sent by URL skip the wrapper: the plan's write faults are applied to their
        // bytes after moverctl hashed them, as the wrapper applies them to bodies it is handed.
        let plan = plan.clone();
        let tamper: moverctl::store::WriteTamper = Arc::new(move |path, idx, chunks| {
            let len: u64 = chunks.iter().map(|c| c.len() as u64).sum();
            let op = idx.map_or(Op::Put, Op::Part);
            match plan.take(path, op, |at| at < len.max(1)) {
                Some((Fault::Unavailable, _)) => Err(unavailable(match idx {
                    Some(_) => "UploadPart",
                    None => "PUT",
                })
                .to_string()),
                Some((Fault::Flip, at)) => Ok(vec![Bytes::from(
                    flip_payload(PutPayload::from_iter(chunks), at)
                        .iter()
                        .flat_map(|b| b.iter().copied())
                        .collect::<Vec<u8>>(),
                )]),
                _ => Ok(chunks),
            }
        });
        s.crc_writer = Some(moverctl::store::CrcWriter {
            inner: c.clone(),
            multipart: c,
            multipart_unproven: w.multipart_unproven.clone(),
            by_url: w.by_url,
            urls_refused: w.urls_refused.clone(),
            streams_refused: w.streams_refused.clone(),
            trailer: w.trailer,
            tamper: Some(tamper),
        });
    }
    s
}

#[async_trait]
impl ObjectStore for FaultStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let len = payload.content_length() as u64;
        match self.plan.take(location, Op::Put, |at| at < len.max(1)) {
            Some((Fault::Unavailable, _)) => Err(unavailable("PUT")),
            Some((Fault::Flip, at)) => {
                self.inner
                    .put_opts(location, flip_payload(payload, at), opts)
                    .await
            }
            _ => self.inner.put_opts(location, payload, opts).await,
        }
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let inner = self.inner.put_multipart_opts(location, opts).await?;
        Ok(Box::new(FaultUpload {
            inner,
            plan: self.plan.clone(),
            path: location.clone(),
            next: 0,
        }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        if options.head {
            if self.plan.take(location, Op::Head, |_| true).is_some() {
                return Err(unavailable("HEAD"));
            }
            return self.inner.get_opts(location, options).await;
        }
        let res = self.inner.get_opts(location, options).await?;
        let range: Range<u64> = res.range.clone();
        let Some((fault, at)) = self
            .plan
            .take(location, Op::Get, |at| range.start <= at && at < range.end)
        else {
            return Ok(res);
        };
        if fault == Fault::Unavailable {
            return Err(unavailable("GET"));
        }
        let GetResult {
            payload,
            meta,
            range,
            attributes,
            extensions,
        } = res;
        let body = match payload {
            GetResultPayload::Stream(s) => s,
            file => GetResult {
                payload: file,
                meta: meta.clone(),
                range: range.clone(),
                attributes: attributes.clone(),
                extensions: Default::default(),
            }
            .into_stream(),
        };
        Ok(GetResult {
            payload: GetResultPayload::Stream(faulty_body(body, fault, at - range.start)),
            meta,
            range,
            attributes,
            extensions,
        })
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.inner.get_ranges(location, ranges).await
    }
}

impl FaultStore {
    fn mp(&self) -> &Arc<dyn MultipartStore> {
        self.mp
            .as_ref()
            .expect("faulty() only exposes MultipartStore when the store has one")
    }
}

#[async_trait]
impl MultipartStore for FaultStore {
    async fn create_multipart(&self, path: &Path) -> Result<MultipartId> {
        self.create_multipart_opts(path, PutMultipartOptions::default())
            .await
    }

    async fn create_multipart_opts(
        &self,
        path: &Path,
        opts: PutMultipartOptions,
    ) -> Result<MultipartId> {
        if self.plan.take(path, Op::Create, |_| true).is_some() {
            return Err(unavailable("CreateMultipartUpload"));
        }
        self.mp().create_multipart_opts(path, opts).await
    }

    async fn put_part(
        &self,
        path: &Path,
        id: &MultipartId,
        part_idx: usize,
        data: PutPayload,
    ) -> Result<PartId> {
        let len = data.content_length() as u64;
        match self
            .plan
            .take(path, Op::Part(part_idx), |at| at < len.max(1))
        {
            Some((Fault::Unavailable, _)) => Err(unavailable("UploadPart")),
            Some((Fault::Flip, at)) => {
                self.mp()
                    .put_part(path, id, part_idx, flip_payload(data, at))
                    .await
            }
            _ => self.mp().put_part(path, id, part_idx, data).await,
        }
    }

    async fn complete_multipart(
        &self,
        path: &Path,
        id: &MultipartId,
        parts: Vec<PartId>,
    ) -> Result<PutResult> {
        if self.plan.take(path, Op::Complete, |_| true).is_some() {
            return Err(unavailable("CompleteMultipartUpload"));
        }
        self.mp().complete_multipart(path, id, parts).await
    }

    async fn abort_multipart(&self, path: &Path, id: &MultipartId) -> Result<()> {
        self.mp().abort_multipart(path, id).await
    }
}

/// A streaming upload (`put_multipart`, the path of stores without a multipart API such as local
/// folders) whose parts, counted from 0, take `Op::Part` rules like `put_part` does.
#[derive(Debug)]
struct FaultUpload {
    inner: Box<dyn MultipartUpload>,
    plan: Plan,
    path: Path,
    next: usize,
}

#[async_trait]
impl MultipartUpload for FaultUpload {
    fn put_part(&mut self, data: PutPayload) -> object_store::UploadPart {
        let idx = self.next;
        self.next += 1;
        let len = data.content_length() as u64;
        match self
            .plan
            .take(&self.path, Op::Part(idx), |at| at < len.max(1))
        {
            Some((Fault::Unavailable, _)) => Box::pin(async { Err(unavailable("part")) }),
            Some((Fault::Flip, at)) => self.inner.put_part(flip_payload(data, at)),
            _ => self.inner.put_part(data),
        }
    }

    async fn complete(&mut self) -> Result<PutResult> {
        self.inner.complete().await
    }

    async fn abort(&mut self) -> Result<()> {
        self.inner.abort().await
    }
}
