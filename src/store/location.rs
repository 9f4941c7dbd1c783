//! Where objects live, as the user writes it: `s3://bucket/prefix`, `gs://bucket/prefix`,
//! `az://container/prefix`, `file:///path`, a plain path, `memory://` (tests), or a named remote
//! `NAME:bucket/prefix` from the remotes file.
//!
//! A remote of the remotes file points to a location here too ([`Remote`]'s location), so
//! the remotes file knows nothing of locations and references run one way.

use super::config::{Remote, Remotes};
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    S3 {
        bucket: String,
        prefix: String,
        remote: Option<String>,
    },
    Gcs {
        bucket: String,
        prefix: String,
        remote: Option<String>,
    },
    Azure {
        container: String,
        prefix: String,
        remote: Option<String>,
    },
    Local {
        root: PathBuf,
    },
    Memory {
        prefix: String,
    },
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LocationError {
    #[error("{given:?}: {reason}")]
    Invalid { given: String, reason: String },
    #[error(
        "{given:?}: unknown remote {name:?}; configured remotes: {known} (a local path with ':' in it is written ./{given})"
    )]
    UnknownRemote {
        given: String,
        name: String,
        known: String,
    },
}

/// Normalise a prefix: no leading '/', and a trailing '/' unless empty, so `train` lists
/// `train/…` and never `training/…`.
fn norm_prefix(p: &str) -> String {
    let p = p.trim_start_matches('/');
    if p.is_empty() || p.ends_with('/') {
        p.to_string()
    } else {
        format!("{p}/")
    }
}

fn split_bucket(given: &str, rest: &str, what: &str) -> Result<(String, String), LocationError> {
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(LocationError::Invalid {
            given: given.to_string(),
            reason: format!("no {what} name"),
        });
    }
    if bucket.contains('@') || given.contains('?') {
        return Err(LocationError::Invalid {
            given: "(location withheld: it may carry a credential)".to_string(),
            reason: "locations must not carry credentials (user info or query strings); use the environment, a profile or a remote".into(),
        });
    }
    Ok((bucket.to_string(), norm_prefix(prefix)))
}

impl Location {
    pub fn parse(given: &str, remotes: &Remotes) -> Result<Location, LocationError> {
        let g = given.trim();
        if let Some((scheme, rest)) = g.split_once("://") {
            return match scheme {
                "s3" | "s3a" => {
                    let (bucket, prefix) = split_bucket(g, rest, "bucket")?;
                    Ok(Location::S3 {
                        bucket,
                        prefix,
                        remote: None,
                    })
                }
                "gs" | "gcs" => {
                    let (bucket, prefix) = split_bucket(g, rest, "bucket")?;
                    Ok(Location::Gcs {
                        bucket,
                        prefix,
                        remote: None,
                    })
                }
                "az" | "azure" => {
                    let (container, prefix) = split_bucket(g, rest, "container")?;
                    Ok(Location::Azure {
                        container,
                        prefix,
                        remote: None,
                    })
                }
                "file" => {
                    let path = rest.strip_prefix("localhost").unwrap_or(rest);
                    if !path.starts_with('/') {
                        return Err(LocationError::Invalid {
                            given: g.to_string(),
                            reason: "file:// needs an absolute path (file:///data/x)".into(),
                        });
                    }
                    Ok(Location::Local {
                        root: PathBuf::from(path),
                    })
                }
                "memory" => Ok(Location::Memory {
                    prefix: norm_prefix(rest),
                }),
                other => Err(LocationError::Invalid {
                    given: g.to_string(),
                    reason: format!(
                        "unknown scheme {other}:// (use s3://, gs://, az://, file://, a path, or a remote NAME:bucket/prefix)"
                    ),
                }),
            };
        }
        if let Some((name, rest)) = g.split_once(':')
            && !name.is_empty()
            && !name.contains('/')
            && !name.starts_with('.')
        {
            let Some(remote) = remotes.get(name) else {
                return Err(LocationError::UnknownRemote {
                    given: g.to_string(),
                    name: name.to_string(),
                    known: remotes.names().join(", ").if_empty("(none)"),
                });
            };
            return remote.location(name, g, rest);
        }
        if g.is_empty() {
            return Err(LocationError::Invalid {
                given: g.to_string(),
                reason: "empty location".into(),
            });
        }
        Ok(Location::Local {
            root: PathBuf::from(g),
        })
    }

    /// A location that names a store and no bucket: `s3://`, `gs://`, `az://` (the configured
    /// account), or `REMOTE:` of an s3, gcs or azure remote: what `ls` lists the buckets or
    /// containers of. The location returned has an empty bucket and prefix (it opens, but only
    /// [`super::buckets`] uses it). None for every other location.
    pub fn store_root(given: &str, remotes: &Remotes) -> Option<Location> {
        let g = given.trim();
        let empty = |remote: Option<String>, kind: &str| {
            let (bucket, prefix) = (String::new(), String::new());
            match kind {
                "s3" => Some(Location::S3 {
                    bucket,
                    prefix,
                    remote,
                }),
                "gcs" => Some(Location::Gcs {
                    bucket,
                    prefix,
                    remote,
                }),
                "azure" => Some(Location::Azure {
                    container: bucket,
                    prefix,
                    remote,
                }),
                _ => None,
            }
        };
        if let Some((scheme, rest)) = g.split_once("://") {
            if !rest.trim_matches('/').is_empty() {
                return None;
            }
            return match scheme {
                "s3" | "s3a" => empty(None, "s3"),
                "gs" | "gcs" => empty(None, "gcs"),
                "az" | "azure" => empty(None, "azure"),
                _ => None,
            };
        }
        let (name, rest) = g.split_once(':')?;
        if !rest.trim_matches('/').is_empty() {
            return None;
        }
        empty(Some(name.to_string()), &remotes.get(name)?.kind)
    }

    /// The location as shown to people; never carries a credential.
    pub fn shown(&self) -> String {
        match self {
            Location::S3 {
                bucket,
                prefix,
                remote,
            } => match remote {
                Some(r) if bucket.is_empty() => format!("{r}:"),
                Some(r) => format!("{r}:{bucket}/{prefix}"),
                None if bucket.is_empty() => "s3://".to_string(),
                None => format!("s3://{bucket}/{prefix}"),
            },
            Location::Gcs {
                bucket,
                prefix,
                remote,
            } => match remote {
                Some(r) if bucket.is_empty() => format!("{r}:"),
                Some(r) => format!("{r}:{bucket}/{prefix}"),
                None if bucket.is_empty() => "gs://".to_string(),
                None => format!("gs://{bucket}/{prefix}"),
            },
            Location::Azure {
                container,
                prefix,
                remote,
            } => match remote {
                Some(r) if container.is_empty() => format!("{r}:"),
                Some(r) => format!("{r}:{container}/{prefix}"),
                None if container.is_empty() => "az://".to_string(),
                None => format!("az://{container}/{prefix}"),
            },
            Location::Local { root } => root.display().to_string(),
            Location::Memory { prefix } => format!("memory://{prefix}"),
        }
    }

    /// The key prefix inside the bucket (empty for local roots and whole buckets).
    pub fn prefix(&self) -> &str {
        match self {
            Location::S3 { prefix, .. }
            | Location::Gcs { prefix, .. }
            | Location::Azure { prefix, .. }
            | Location::Memory { prefix } => prefix,
            Location::Local { .. } => "",
        }
    }
}

trait IfEmpty {
    fn if_empty(self, alt: &str) -> String;
}

impl IfEmpty for String {
    fn if_empty(self, alt: &str) -> String {
        if self.is_empty() {
            alt.to_string()
        } else {
            self
        }
    }
}

/// A remote's location: where `NAME:rest` points for the remote `NAME` of the remotes file.
impl Remote {
    fn location(&self, name: &str, given: &str, rest: &str) -> Result<Location, LocationError> {
        remote_location(&self.kind, name, given, rest, self.root.as_ref())
    }
}

fn remote_location(
    kind: &str,
    name: &str,
    given: &str,
    rest: &str,
    root: Option<&PathBuf>,
) -> Result<Location, LocationError> {
    let remote = Some(name.to_string());
    match kind {
        "s3" => {
            let (bucket, prefix) = split_bucket(given, rest, "bucket")?;
            Ok(Location::S3 {
                bucket,
                prefix,
                remote,
            })
        }
        "gcs" => {
            let (bucket, prefix) = split_bucket(given, rest, "bucket")?;
            Ok(Location::Gcs {
                bucket,
                prefix,
                remote,
            })
        }
        "azure" => {
            let (container, prefix) = split_bucket(given, rest, "container")?;
            Ok(Location::Azure {
                container,
                prefix,
                remote,
            })
        }
        "local" => {
            let base = root.cloned().unwrap_or_default();
            Ok(Location::Local {
                root: base.join(rest.trim_start_matches('/')),
            })
        }
        other => Err(LocationError::Invalid {
            given: given.to_string(),
            reason: format!("remote {name:?} has unknown type {other:?}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Location, LocationError> {
        Location::parse(s, &Remotes::default())
    }

    #[test]
    fn schemes() {
        assert_eq!(
            p("s3://b/train").unwrap(),
            Location::S3 {
                bucket: "b".into(),
                prefix: "train/".into(),
                remote: None
            }
        );
        assert_eq!(p("gs://b").unwrap().prefix(), "");
        assert_eq!(p("az://c/x/y/").unwrap().prefix(), "x/y/");
        assert_eq!(
            p("file:///data/x").unwrap(),
            Location::Local {
                root: "/data/x".into()
            }
        );
        assert_eq!(
            p("./rel:path").unwrap(),
            Location::Local {
                root: "./rel:path".into()
            }
        );
        assert!(matches!(p("ftp://x"), Err(LocationError::Invalid { .. })));
        assert!(matches!(p("s3://"), Err(LocationError::Invalid { .. })));
    }

    #[test]
    fn a_store_without_a_bucket_is_its_root() {
        let r = Remotes::parse(
            "r.toml",
            "[remotes.g]\ntype = \"s3\"\n[remotes.l]\ntype = \"local\"\nroot = \"/x\"\n",
        )
        .unwrap();
        let root = |s: &str| Location::store_root(s, &r).map(|l| l.shown());
        assert_eq!(root("s3://").as_deref(), Some("s3://"));
        assert_eq!(root("s3:///").as_deref(), Some("s3://"));
        assert_eq!(root("gs://").as_deref(), Some("gs://"));
        assert_eq!(root("az://").as_deref(), Some("az://"));
        assert_eq!(root("g:").as_deref(), Some("g:"));
        assert_eq!(root("g:/").as_deref(), Some("g:"));
        for not in ["s3://b", "g:b/p", "l:", "nope:", "./x", "file:///"] {
            assert_eq!(root(not), None, "{not}");
        }
    }

    #[test]
    fn credentials_in_locations_are_refused_without_echo() {
        let e = p("s3://AKIA:secret@bucket/x").unwrap_err().to_string();
        assert!(!e.contains("secret"), "{e}");
        let e = p("az://c/x?sig=SECRETSIG").unwrap_err().to_string();
        assert!(!e.contains("SECRETSIG"), "{e}");
    }

    #[test]
    fn unknown_remote_says_how_to_write_a_path() {
        let e = p("b2:bucket/x").unwrap_err().to_string();
        assert!(
            e.contains("unknown remote \"b2\"") && e.contains("./b2:bucket/x"),
            "{e}"
        );
    }
}
