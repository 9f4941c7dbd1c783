//! The one integration test binary. Each module covers one part; shared helpers live here.

mod catalog;
mod checksum_path;
mod cli;
mod copy;
mod creds;
mod drain;
mod drain_faults;
mod durable;
mod encrypted_source;
mod fast_fail;
mod faults;
mod feedback;
mod fidelity;
mod first_probe;
mod from_url;
mod gzip;
mod habits;
mod help;
mod identity;
mod inventory;
mod job;
mod json_schema;
mod list_split;
mod listing;
mod local;
mod ls_status;
mod matrix;
mod ops;
mod plan_during;
mod plan_file;
mod plan_golden;
mod plan_hops;
mod plan_horizon;
mod plan_inputs;
mod plan_limits;
mod plan_report;
mod plan_restore;
mod plan_src;
mod plan_tiering;
mod probe;
mod probe_copy;
mod range_md5;
mod refusals;
mod regress;
mod resume;
mod server_side;
mod shards;
mod slurm;
mod stage;
mod stores;
mod stream_put;
mod sync;
mod units;

use moverctl::catalog::{Catalog, Place};
use moverctl::plan::corpus::Corpus;
use moverctl::plan::model::{Assumptions, Candidate, evaluate};
use rust_decimal::Decimal;
use std::str::FromStr;
use std::sync::OnceLock;

pub fn catalog() -> &'static Catalog {
    static C: OnceLock<Catalog> = OnceLock::new();
    C.get_or_init(|| Catalog::embedded().unwrap_or_else(|e| panic!("{e}")))
}

pub fn d(s: &str) -> Decimal {
    Decimal::from_str(s).unwrap()
}

pub const GIB: u64 = 1 << 30;

/// Evaluate one move with default assumptions (tweaked by `f`).
pub fn eval_with(
    from: &str,
    to: &str,
    corpus: &Corpus,
    f: impl FnOnce(&mut Assumptions),
) -> Candidate {
    let c = catalog();
    let src = Place::resolve(c, from).unwrap();
    let dst = Place::resolve(c, to).unwrap();
    let mut a = Assumptions::default();
    f(&mut a);
    evaluate(&src, &dst, corpus, &a)
}

pub fn eval(from: &str, to: &str, bytes: u64, objects: u64) -> Candidate {
    eval_with(from, to, &corpus(bytes, objects), |_| {})
}

pub fn corpus(bytes: u64, objects: u64) -> Corpus {
    Corpus::from_flags(Some(&bytes.to_string()), Some(&objects.to_string()), None).unwrap()
}

/// The binary with a clean environment for moverctl's own settings: no provider override and a
/// private state folder (so a developer's saved probes or journals never leak into a test).
/// Tests that need another state folder set MOVERCTL_STATE_DIR again, which wins. No probe on
/// first use (`MOVERCTL_NO_PROBE=1`): a test sees the proof its own setup chose (a saved probe,
/// or none); the probe on first use has its own tests (`first_use_probe`), which remove it.
pub fn moverctl() -> std::process::Command {
    static STATE: OnceLock<tempfile::TempDir> = OnceLock::new();
    let state = STATE.get_or_init(|| tempfile::tempdir().unwrap());
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_moverctl"));
    c.env_remove("MOVERCTL_PROVIDERS");
    c.env_remove("MOVERCTL_CONFIG");
    c.env("MOVERCTL_STATE_DIR", state.path());
    c.env("MOVERCTL_NO_PROBE", "1");
    c
}

/// Endpoints and test credentials of the servers `scripts/servers.sh start` runs on 127.0.0.1.
#[allow(dead_code)]
pub struct Servers {
    pub s3_endpoint: String,
    pub s3b_endpoint: String,
    pub region: String,
    pub key_id: String,
    pub secret: String,
    pub bucket_a: String,
    pub bucket_b: String,
    pub bucket_c: String,
    pub az_container: String,
    pub az_container2: String,
    pub gcs_endpoint: String,
    pub gcs_bucket: String,
    /// scripts/gcs-xml-shim.py in front of fake-gcs-server: GCS as a destination.
    pub gcs_xml_endpoint: String,
}

fn var(name: &str) -> String {
    std::env::var(name)
        .unwrap_or_else(|_| panic!("{name} is not set; source \"$(scripts/servers.sh env)\""))
}

/// The test servers, or None (with a note) when they are not running. With
/// MOVERCTL_REQUIRE_SERVERS=1 (set by scripts/test.sh) their absence fails the test instead.
pub fn servers() -> Option<Servers> {
    if std::env::var("MOVERCTL_TEST_SERVERS").as_deref() != Ok("1") {
        if std::env::var("MOVERCTL_REQUIRE_SERVERS").as_deref() == Ok("1") {
            panic!(
                "MOVERCTL_REQUIRE_SERVERS=1 but the test servers are not running (scripts/servers.sh start)"
            );
        }
        eprintln!(
            "skipped: no test servers (scripts/servers.sh start; source \"$(scripts/servers.sh env)\")"
        );
        return None;
    }
    Some(Servers {
        s3_endpoint: var("MOVERCTL_TEST_S3_ENDPOINT"),
        s3b_endpoint: var("MOVERCTL_TEST_S3B_ENDPOINT"),
        region: var("MOVERCTL_TEST_S3_REGION"),
        key_id: var("MOVERCTL_TEST_S3_KEY_ID"),
        secret: var("MOVERCTL_TEST_S3_SECRET"),
        bucket_a: var("MOVERCTL_TEST_S3_BUCKET_A"),
        bucket_b: var("MOVERCTL_TEST_S3_BUCKET_B"),
        bucket_c: var("MOVERCTL_TEST_S3B_BUCKET"),
        az_container: var("MOVERCTL_TEST_AZURE_CONTAINER"),
        az_container2: var("MOVERCTL_TEST_AZURE_CONTAINER2"),
        gcs_endpoint: var("MOVERCTL_TEST_GCS_ENDPOINT"),
        gcs_bucket: var("MOVERCTL_TEST_GCS_BUCKET"),
        gcs_xml_endpoint: var("MOVERCTL_TEST_GCS_XML_ENDPOINT"),
    })
}

/// A remotes file naming the test servers; credentials come from the MOVERCTL_TEST_* variables.
pub fn remotes_toml(s: &Servers) -> String {
    format!(
        r#"[remotes.garage]
type = "s3"
provider = "onprem"
endpoint = "{s3}"
region = "{region}"
access_key_id_env = "MOVERCTL_TEST_S3_KEY_ID"
secret_access_key_env = "MOVERCTL_TEST_S3_SECRET"

[remotes.garage2]
type = "s3"
endpoint = "{s3b}"
region = "{region}"
access_key_id_env = "MOVERCTL_TEST_S3B_KEY_ID"
secret_access_key_env = "MOVERCTL_TEST_S3B_SECRET"

[remotes.azurite]
type = "azure"
endpoint = "{az}"
account = "{account}"
account_key_env = "MOVERCTL_TEST_AZURE_KEY"

[remotes.fakegcs]
type = "gcs"
service_account_path_env = "MOVERCTL_TEST_GCS_SERVICE_ACCOUNT"

[remotes.gcsxml]
type = "gcs"
endpoint = "{gcsxml}"
service_account_path_env = "MOVERCTL_TEST_GCS_SERVICE_ACCOUNT"
"#,
        s3 = s.s3_endpoint,
        s3b = s.s3b_endpoint,
        region = s.region,
        az = var("MOVERCTL_TEST_AZURE_ENDPOINT"),
        account = var("MOVERCTL_TEST_AZURE_ACCOUNT"),
        gcsxml = s.gcs_xml_endpoint,
    )
}

pub fn remotes(s: &Servers) -> moverctl::store::config::Remotes {
    moverctl::store::config::Remotes::parse("test-remotes.toml", &remotes_toml(s)).unwrap()
}

/// A prefix no other test (or earlier run) uses.
pub fn unique(name: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("t-{name}-{t:x}-{}", N.fetch_add(1, Ordering::Relaxed))
}

/// Garage's S3 address, for a proxy to forward to.
pub fn s3_upstream(s: &Servers) -> std::net::SocketAddr {
    s.s3_endpoint
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .expect("the S3 test endpoint is http://127.0.0.1:PORT")
}

/// A remote `viaproxy` (type s3) that reaches Garage through `endpoint` (a fault proxy).
pub fn proxy_remote_toml(s: &Servers, endpoint: &str) -> String {
    format!(
        r#"[remotes.viaproxy]
type = "s3"
provider = "onprem"
endpoint = "{endpoint}"
region = "{}"
access_key_id_env = "MOVERCTL_TEST_S3_KEY_ID"
secret_access_key_env = "MOVERCTL_TEST_S3_SECRET"
"#,
        s.region
    )
}

/// Every key at a location, in listing order.
pub async fn keys_at(store: &moverctl::store::Store) -> Vec<String> {
    use futures::TryStreamExt;
    let items: Vec<moverctl::store::list::Listed> = moverctl::store::list::list(store)
        .try_collect()
        .await
        .unwrap();
    items.iter().map(|l| l.key().to_string()).collect()
}

/// A finished command's exit code and both outputs, for assertion messages.
pub fn text(o: &std::process::Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The `--json` summary: the last line of stdout, which must be the summary object.
pub fn summary(o: &std::process::Output) -> serde_json::Value {
    let out = String::from_utf8_lossy(&o.stdout);
    let last = out
        .lines()
        .last()
        .unwrap_or_else(|| panic!("no output: {}", text(o)));
    let v: serde_json::Value =
        serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {}", text(o)));
    assert_eq!(v["event"], "summary", "{}", text(o));
    v
}

/// How many objects a `--json` summary counts as verified by `label` (`source-md5+dest-md5`).
pub fn verified(v: &serde_json::Value, label: &str) -> u64 {
    v["verified_by"][label].as_u64().unwrap_or(0)
}

/// Bytes of request bodies (PUTs and POSTs, by their Content-Length) among requests the fault
/// proxy logged: what a run sent to the store.
pub fn body_bytes(log: &[faults::proxy::Seen]) -> u64 {
    log.iter()
        .filter(|(m, _, _)| m == "PUT" || m == "POST")
        .map(|(_, _, h)| {
            h.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                .and_then(|(_, v)| v.parse::<u64>().ok())
                .unwrap_or(0)
        })
        .sum()
}

/// Whether a request the fault proxy logged carried a header (any case).
pub fn has_header(h: &[(String, String)], name: &str) -> bool {
    h.iter().any(|(k, _)| k.eq_ignore_ascii_case(name))
}

pub fn expect(o: &std::process::Output, code: i32) {
    assert_eq!(o.status.code(), Some(code), "{}", text(o));
}
