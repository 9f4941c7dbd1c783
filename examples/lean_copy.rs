//! The benchmark's lean reference client (issue 15): list, GET, PUT, check the ETag, nothing
//! else, with N objects in flight. No journal, no retries, no metadata, no hashing on the client:
//! a copy counts as verified when the ETag the destination answers to the PUT equals the source's
//! listed ETag (both are the object's MD5 for single-part objects). It shows what the server
//! allows a client to reach on small objects; `bench/small.sh` runs it beside moverctl and rclone.
//!
//! ```sh
//! cargo run --release --example lean_copy -- --endpoint http://127.0.0.1:3900 \
//!     --src moverctl-a/some/prefix --dst moverctl-b/other/prefix --inflight 128
//! ```
//!
//! Credentials: `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` (or the test servers'
//! `MOVERCTL_TEST_S3_KEY_ID` / `MOVERCTL_TEST_S3_SECRET`), region `AWS_REGION` (default
//! `garage`). Prints one JSON line: objects, bytes, seconds, ETag mismatches, errors. Exits 1 on
//! any mismatch or error.

use std::sync::Arc;
use std::time::Instant;

use futures::{StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

struct Args {
    endpoint: String,
    src: (String, String),
    dst: (String, String),
    inflight: usize,
}

fn usage() -> ! {
    eprintln!(
        "usage: lean_copy --endpoint URL --src BUCKET/PREFIX --dst BUCKET/PREFIX [--inflight N]"
    );
    std::process::exit(2)
}

fn split(s: &str) -> (String, String) {
    let (b, p) = s.split_once('/').unwrap_or((s, ""));
    (b.to_string(), p.trim_matches('/').to_string())
}

fn args() -> Args {
    let mut it = std::env::args().skip(1);
    let (mut endpoint, mut src, mut dst, mut inflight) = (None, None, None, 128);
    while let Some(a) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--endpoint" => endpoint = Some(v()),
            "--src" => src = Some(split(&v())),
            "--dst" => dst = Some(split(&v())),
            "--inflight" => inflight = v().parse().unwrap_or_else(|_| usage()),
            _ => usage(),
        }
    }
    match (endpoint, src, dst) {
        (Some(endpoint), Some(src), Some(dst)) if inflight > 0 => Args {
            endpoint,
            src,
            dst,
            inflight,
        },
        _ => usage(),
    }
}

fn env(names: &[&str]) -> String {
    names
        .iter()
        .find_map(|n| std::env::var(n).ok())
        .unwrap_or_default()
}

fn store(endpoint: &str, bucket: &str) -> object_store::Result<AmazonS3> {
    AmazonS3Builder::new()
        .with_endpoint(endpoint)
        .with_allow_http(true)
        .with_virtual_hosted_style_request(false)
        .with_bucket_name(bucket)
        .with_region(env(&["AWS_REGION", "MOVERCTL_TEST_S3_REGION"]).as_str())
        .with_access_key_id(env(&["AWS_ACCESS_KEY_ID", "MOVERCTL_TEST_S3_KEY_ID"]))
        .with_secret_access_key(env(&["AWS_SECRET_ACCESS_KEY", "MOVERCTL_TEST_S3_SECRET"]))
        .build()
}

#[tokio::main]
async fn main() {
    let a = args();
    if std::env::var("AWS_REGION").is_err() && std::env::var("MOVERCTL_TEST_S3_REGION").is_err() {
        // SAFETY: single-threaded here, before any other thread reads the environment.
        unsafe { std::env::set_var("AWS_REGION", "garage") };
    }
    let src = Arc::new(store(&a.endpoint, &a.src.0).expect("source store"));
    let dst = Arc::new(store(&a.endpoint, &a.dst.0).expect("destination store"));
    let src_prefix = Path::from(a.src.1.as_str());
    let dst_prefix = a.dst.1.clone();
    let start = Instant::now();
    let results: Vec<Result<(u64, bool), String>> = src
        .list(Some(&src_prefix))
        .map_err(|e| e.to_string())
        .map_ok(|meta| {
            let (src, dst) = (src.clone(), dst.clone());
            let rel = meta
                .location
                .as_ref()
                .strip_prefix(src_prefix.as_ref())
                .unwrap_or(meta.location.as_ref())
                .trim_start_matches('/')
                .to_string();
            let to = Path::from(format!("{dst_prefix}/{rel}"));
            async move {
                let body = src
                    .get(&meta.location)
                    .await
                    .map_err(|e| e.to_string())?
                    .bytes()
                    .await
                    .map_err(|e| e.to_string())?;
                let n = body.len() as u64;
                let put = dst
                    .put(&to, PutPayload::from(body))
                    .await
                    .map_err(|e| e.to_string())?;
                Ok((n, put.e_tag.is_some() && put.e_tag == meta.e_tag))
            }
        })
        .try_buffer_unordered(a.inflight)
        .collect()
        .await;
    let secs = start.elapsed().as_secs_f64();
    let (mut objects, mut bytes, mut mismatches, mut errors) = (0u64, 0u64, 0u64, Vec::new());
    for r in results {
        match r {
            Ok((n, ok)) => {
                objects += 1;
                bytes += n;
                mismatches += u64::from(!ok);
            }
            Err(e) => errors.push(e),
        }
    }
    println!(
        "{{\"tool\":\"lean_copy\",\"inflight\":{},\"objects\":{objects},\"bytes\":{bytes},\"seconds\":{secs:.3},\"etag_mismatches\":{mismatches},\"errors\":{}}}",
        a.inflight,
        errors.len()
    );
    if let Some(e) = errors.first() {
        eprintln!("lean_copy: first error: {e}");
    }
    if mismatches > 0 || !errors.is_empty() {
        std::process::exit(1);
    }
}
