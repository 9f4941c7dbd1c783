//! Refusing a source and destination that share objects. A destination equal to the source, inside
//! it or around it is never what was meant, and is destructive: a `sync --delete` from
//! `s3://b/par/child` to `s3://b/par` sees the source's own objects (`child/…` at the
//! destination) as keys the source lacks and deletes them, and the next run deletes the copies;
//! a `copy` into a folder inside its source nests one level deeper on every run.
//!
//! The decision is made on what the locations resolve to, not on how they are written: the store
//! kind, the endpoint each one really talks to (a remote's, else `AWS_ENDPOINT_URL_S3` /
//! `AWS_ENDPOINT_URL`, else AWS itself; compared as normalised URLs, and any
//! `s3[.-]….amazonaws.com` endpoint counts as AWS), the bucket, and the key prefix by whole path
//! segments (`par/` contains `par/child/`, never `parent/`). Local folders are compared by
//! canonical path (symbolic links and `..` resolved); a destination that does not exist yet is
//! resolved through its nearest existing ancestor. In-memory stores share nothing.
//!
//! Two different host names for one server (`localhost` and `127.0.0.1`) are not recognised as
//! the same: that would need name resolution, and a proxy in front could still tell them apart.

use super::config::Remote;
use super::location::Location;
use super::{OpenError, process_env, remote_endpoint, s3_endpoint_with};
use std::path::{Component, Path, PathBuf};

/// What a location's keys are, once resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Keys under `prefix` (empty, or ending in '/') in `bucket` of `service`: the store kind and
    /// its normalised endpoint, e.g. `s3 http://127.0.0.1:3900` or `s3 aws`.
    Keys {
        service: String,
        bucket: String,
        prefix: String,
    },
    /// A local folder, by canonical path.
    Folder(PathBuf),
    /// An in-memory store: each opened one is its own.
    Private,
}

impl Scope {
    /// One string per place, whatever spelling reached it: `s3 http://127.0.0.1:3900 bucket b
    /// prefix train/`, `local /abs/canonical/path`. Journals and locks are keyed by it, so `data`,
    /// `./data` and `/abs/data/` find the same journal and the same lock.
    pub fn identity(&self, shown: &str) -> String {
        match self {
            Scope::Keys {
                service,
                bucket,
                prefix,
            } => format!("{service} bucket {bucket} prefix {prefix}"),
            Scope::Folder(p) => format!("local {}", p.display()),
            Scope::Private => format!("memory {shown}"),
        }
    }
}

/// The identity of a location (see [`Scope::identity`]), resolving remotes and the endpoint
/// variables of this process.
pub fn identity(loc: &Location, remote: Option<&Remote>) -> Result<String, OpenError> {
    Ok(scope_with_env(loc, remote, &process_env)?.identity(&loc.shown()))
}

/// How a destination's scope relates to its source's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    Same,
    DestinationInsideSource,
    SourceInsideDestination,
}

/// Source and destination overlap; nothing was opened or changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    pub source: String,
    pub destination: String,
    pub relation: Relation,
    /// Where both live, resolved (`bucket b at s3 http://…`, or the canonical folders).
    pub resolved: String,
}

impl std::error::Error for Overlap {}

impl std::fmt::Display for Overlap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (s, d) = (&self.source, &self.destination);
        match self.relation {
            Relation::Same => write!(
                f,
                "source {s} and destination {d} are the same place ({}); refusing to copy or sync a location onto itself",
                self.resolved
            )?,
            Relation::DestinationInsideSource => write!(
                f,
                "destination {d} is inside source {s} ({}); refusing: every run would copy the source into itself one level deeper, and sync --delete would delete source objects",
                self.resolved
            )?,
            Relation::SourceInsideDestination => write!(
                f,
                "source {s} is inside destination {d} ({}); refusing: sync --delete would take the source's own objects for keys the source lacks and delete them",
                self.resolved
            )?,
        }
        write!(
            f,
            ". Choose a destination that neither contains nor is inside the source"
        )
    }
}

/// Refuse `src` → `dst` when they share objects (see the module docs). Reads the endpoint
/// variables of this process; an endpoint carrying a password is refused here too.
pub fn check(
    src: &Location,
    src_remote: Option<&Remote>,
    dst: &Location,
    dst_remote: Option<&Remote>,
) -> Result<(), OpenError> {
    check_with_env(src, src_remote, dst, dst_remote, &process_env)
}

/// [`check`] with the environment read through `env` (tests).
pub fn check_with_env(
    src: &Location,
    src_remote: Option<&Remote>,
    dst: &Location,
    dst_remote: Option<&Remote>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), OpenError> {
    let a = scope_with_env(src, src_remote, env)?;
    let b = scope_with_env(dst, dst_remote, env)?;
    let Some(relation) = relate(&a, &b) else {
        return Ok(());
    };
    let resolved = match (&a, &b) {
        (
            Scope::Keys {
                service, bucket, ..
            },
            _,
        ) => format!("bucket {bucket} at {service}"),
        (Scope::Folder(x), Scope::Folder(y)) if x == y => format!("folder {}", x.display()),
        (Scope::Folder(x), Scope::Folder(y)) => {
            format!("folders {} and {}", x.display(), y.display())
        }
        _ => String::new(),
    };
    Err(Overlap {
        source: src.shown(),
        destination: dst.shown(),
        relation,
        resolved,
    }
    .into())
}

/// What `loc` resolves to (see [`Scope`]), reading the environment through `env`.
pub fn scope_with_env(
    loc: &Location,
    remote: Option<&Remote>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Scope, OpenError> {
    let shown = loc.shown();
    Ok(match loc {
        Location::S3 { bucket, prefix, .. } => {
            let service = match s3_endpoint_with(remote, &shown, env)? {
                Some(e) => {
                    let (norm, host) = normalise_endpoint(&e);
                    if host.as_deref().is_some_and(is_aws_s3_host) {
                        "s3 aws".to_string()
                    } else {
                        format!("s3 {norm}")
                    }
                }
                None => "s3 aws".to_string(),
            };
            Scope::Keys {
                service,
                bucket: bucket.clone(),
                prefix: prefix.clone(),
            }
        }
        Location::Gcs { bucket, prefix, .. } => {
            let e = remote_endpoint(remote, &shown)?
                .unwrap_or_else(|| "https://storage.googleapis.com".into());
            Scope::Keys {
                service: format!("gcs {}", normalise_endpoint(&e).0),
                bucket: bucket.clone(),
                prefix: prefix.clone(),
            }
        }
        Location::Azure {
            container, prefix, ..
        } => {
            let account = remote
                .and_then(|r| r.account.clone())
                .or_else(|| env("AZURE_STORAGE_ACCOUNT_NAME"))
                .or_else(|| env("AZURE_STORAGE_ACCOUNT"))
                .unwrap_or_default();
            let endpoint = match remote_endpoint(remote, &shown)? {
                Some(e) => normalise_endpoint(&e).0,
                None if remote.is_some_and(|r| r.use_emulator) => "emulator".into(),
                None => "default".into(),
            };
            Scope::Keys {
                service: format!("azure {endpoint} account {account}"),
                bucket: container.clone(),
                prefix: prefix.clone(),
            }
        }
        Location::Local { root } => {
            Scope::Folder(resolve_folder(root).map_err(|e| OpenError::Build {
                location: shown.clone(),
                message: e.to_string(),
            })?)
        }
        Location::Memory { .. } => Scope::Private,
    })
}

/// How `dst` relates to `src`, or None when they share nothing.
pub fn relate(src: &Scope, dst: &Scope) -> Option<Relation> {
    match (src, dst) {
        (
            Scope::Keys {
                service: s1,
                bucket: b1,
                prefix: p1,
            },
            Scope::Keys {
                service: s2,
                bucket: b2,
                prefix: p2,
            },
        ) if s1 == s2 && b1 == b2 => {
            // Prefixes are empty or end in '/', so a string prefix is a whole-segment prefix.
            if p1 == p2 {
                Some(Relation::Same)
            } else if p2.starts_with(p1.as_str()) {
                Some(Relation::DestinationInsideSource)
            } else if p1.starts_with(p2.as_str()) {
                Some(Relation::SourceInsideDestination)
            } else {
                None
            }
        }
        (Scope::Folder(a), Scope::Folder(b)) => {
            // Path::starts_with compares whole components.
            if a == b {
                Some(Relation::Same)
            } else if b.starts_with(a) {
                Some(Relation::DestinationInsideSource)
            } else if a.starts_with(b) {
                Some(Relation::SourceInsideDestination)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// An endpoint as `scheme://host:port/path` (host lowercased, default port made explicit, no
/// trailing '/'), and its host; text that is not a URL is only trimmed and lowercased.
fn normalise_endpoint(e: &str) -> (String, Option<String>) {
    match url::Url::parse(e.trim()) {
        Ok(u) if u.host_str().is_some() => {
            let host = u.host_str().unwrap_or_default().to_ascii_lowercase();
            let port = u
                .port_or_known_default()
                .map(|p| format!(":{p}"))
                .unwrap_or_default();
            let norm = format!(
                "{}://{host}{port}{}",
                u.scheme(),
                u.path().trim_end_matches('/')
            );
            (norm, Some(host))
        }
        _ => (e.trim().trim_end_matches('/').to_ascii_lowercase(), None),
    }
}

/// `s3.amazonaws.com`, `s3.REGION.amazonaws.com`, `s3-REGION.amazonaws.com`,
/// `s3.dualstack.REGION.amazonaws.com`, `s3-fips.…`: AWS's one global bucket namespace.
fn is_aws_s3_host(host: &str) -> bool {
    host.ends_with(".amazonaws.com") && (host.starts_with("s3.") || host.starts_with("s3-"))
}

/// The canonical path of `p`, which need not exist: its nearest existing ancestor is
/// canonicalised (symbolic links and `..` resolved by the file system) and the rest appended, with
/// `..` in that rest taken lexically (components that do not exist cannot be links).
pub fn resolve_folder(p: &Path) -> std::io::Result<PathBuf> {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    };
    let parts: Vec<Component> = abs.components().collect();
    for i in (1..=parts.len()).rev() {
        let head: PathBuf = parts[..i].iter().collect();
        let Ok(mut out) = head.canonicalize() else {
            continue;
        };
        for c in &parts[i..] {
            match c {
                Component::ParentDir => {
                    out.pop();
                }
                Component::Normal(n) => out.push(n),
                _ => {}
            }
        }
        return Ok(out);
    }
    Ok(abs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::config::Remotes;

    const REMOTES: &str = r#"
[remotes.garage]
type = "s3"
endpoint = "http://127.0.0.1:3900"
[remotes.garage_again]
type = "s3"
endpoint = "HTTP://127.0.0.1:3900/"
[remotes.garage2]
type = "s3"
endpoint = "http://127.0.0.1:3910"
[remotes.plain]
type = "s3"
[remotes.aws_east]
type = "s3"
endpoint = "https://s3.us-east-1.amazonaws.com"
[remotes.web]
type = "s3"
endpoint = "https://objects.example.com"
[remotes.web443]
type = "s3"
endpoint = "https://objects.example.com:443/"
"#;

    fn remotes() -> Remotes {
        Remotes::parse("r.toml", REMOTES).unwrap()
    }

    /// The check with a fixed environment: `endpoint` as AWS_ENDPOINT_URL, if given.
    fn overlap(src: &str, dst: &str, endpoint: Option<&str>) -> Option<Relation> {
        let r = remotes();
        let (s, d) = (
            Location::parse(src, &r).unwrap(),
            Location::parse(dst, &r).unwrap(),
        );
        let env = |k: &str| (k == "AWS_ENDPOINT_URL").then(|| endpoint.map(str::to_string))?;
        let (sr, dr) = (
            crate::store::remote_of(&s, &r),
            crate::store::remote_of(&d, &r),
        );
        match check_with_env(&s, sr, &d, dr, &env) {
            Ok(()) => None,
            Err(OpenError::Overlap(o)) => Some(o.relation),
            Err(e) => panic!("{e}"),
        }
    }

    use Relation::*;

    #[test]
    fn equal_and_nested_prefixes_overlap_both_ways() {
        assert_eq!(overlap("s3://b/par", "s3://b/par/", None), Some(Same));
        assert_eq!(
            overlap("s3://b/par", "s3://b/par/child", None),
            Some(DestinationInsideSource)
        );
        assert_eq!(
            overlap("s3://b/par/child", "s3://b/par", None),
            Some(SourceInsideDestination)
        );
        // A whole bucket contains every prefix in it.
        assert_eq!(
            overlap("s3://b", "s3://b/x/y", None),
            Some(DestinationInsideSource)
        );
        assert_eq!(overlap("gs://b/a", "gs://b/a", None), Some(Same));
        assert_eq!(
            overlap("az://c/a/b", "az://c/a", None),
            Some(SourceInsideDestination)
        );
    }

    #[test]
    fn sibling_prefixes_sharing_a_string_prefix_do_not_overlap() {
        assert_eq!(overlap("s3://b/par", "s3://b/parent", None), None);
        assert_eq!(overlap("s3://b/parent", "s3://b/par", None), None);
        assert_eq!(overlap("s3://b/par/a", "s3://b/par/ab", None), None);
    }

    #[test]
    fn different_buckets_kinds_or_endpoints_do_not_overlap() {
        assert_eq!(overlap("s3://b/x", "s3://c/x", None), None);
        assert_eq!(overlap("s3://b/x", "gs://b/x", None), None);
        assert_eq!(overlap("garage:b/x", "garage2:b/x", None), None);
        assert_eq!(overlap("garage:b/x", "s3://b/x", None), None);
        assert_eq!(overlap("web:b/x", "aws_east:b/x", None), None);
        assert_eq!(overlap("memory://x", "memory://x", None), None);
    }

    #[test]
    fn the_same_store_written_differently_overlaps() {
        // Two remotes naming the same endpoint (case, default port, trailing '/').
        assert_eq!(
            overlap("garage:b/x", "garage_again:b/x/y", None),
            Some(DestinationInsideSource)
        );
        assert_eq!(overlap("web:b/x", "web443:b/x", None), Some(Same));
        // The default endpoint and a remote without one: both AWS, or both the variable's.
        assert_eq!(overlap("s3://b/x", "plain:b/x", None), Some(Same));
        let garage = Some("http://127.0.0.1:3900");
        assert_eq!(overlap("s3://b/x", "plain:b/x", garage), Some(Same));
        assert_eq!(overlap("s3://b/x", "garage:b/x", garage), Some(Same));
        assert_eq!(overlap("s3://b/x", "garage:b/x", None), None);
        // An explicit AWS endpoint is AWS's one bucket namespace.
        assert_eq!(overlap("s3://b/x", "aws_east:b/x", None), Some(Same));
    }

    #[test]
    fn local_folders_compare_by_canonical_path() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/sub")).unwrap();
        std::fs::create_dir_all(root.join("b")).unwrap();
        let p = |rel: &str| root.join(rel).display().to_string();
        assert_eq!(overlap(&p("a"), &p("a/sub/../"), None), Some(Same));
        assert_eq!(
            overlap(&p("a"), &p("b/../a/mirror/new"), None),
            Some(DestinationInsideSource),
            "a destination that does not exist yet, through '..'"
        );
        assert_eq!(
            overlap(&p("a/sub"), &p("a"), None),
            Some(SourceInsideDestination)
        );
        assert_eq!(overlap(&p("a"), &p("ab"), None), None);
        assert_eq!(overlap(&p("a"), &p("b"), None), None);
        assert_eq!(overlap(&p("a"), &p("nope/../b/x"), None), None);
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(root.join("a"), root.join("link")).unwrap();
            assert_eq!(overlap(&p("link"), &p("a"), None), Some(Same));
            assert_eq!(
                overlap(&p("a"), &p("link/mirror"), None),
                Some(DestinationInsideSource)
            );
            assert_eq!(
                overlap(&p("link/sub"), &format!("file://{}", p("a")), None),
                Some(SourceInsideDestination)
            );
        }
    }

    #[test]
    fn the_message_names_both_locations() {
        let r = remotes();
        let (s, d) = (
            Location::parse("garage:bkt/par/child", &r).unwrap(),
            Location::parse("garage_again:bkt/par", &r).unwrap(),
        );
        let e = check_with_env(
            &s,
            crate::store::remote_of(&s, &r),
            &d,
            crate::store::remote_of(&d, &r),
            &|_| None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("garage:bkt/par/child/")
                && e.contains("garage_again:bkt/par/")
                && e.contains("http://127.0.0.1:3900"),
            "{e}"
        );
    }

    /// Fails on the main of 2026-12-01, which used AWS_ENDPOINT_URL(_S3) as written.
    #[test]
    fn an_endpoint_variable_with_a_password_is_refused_unechoed() {
        let r = Remotes::default();
        let s = Location::parse("s3://b/x", &r).unwrap();
        let d = Location::parse("s3://c/x", &r).unwrap();
        let env = |k: &str| {
            (k == "AWS_ENDPOINT_URL_S3").then(|| "http://AKIA:hunter2@10.0.0.5:9000".to_string())
        };
        let e = check_with_env(&s, None, &d, None, &env).unwrap_err();
        assert!(matches!(e, OpenError::Refused { .. }), "{e:?}");
        let e = e.to_string();
        assert!(
            e.contains("AWS_ENDPOINT_URL_S3") && e.contains("_env"),
            "{e}"
        );
        assert!(!e.contains("hunter2") && !e.contains("AKIA"), "{e}");
    }
}
