//! What a listing yields: an object's [`Entry`], a key that is [`Listed`] as an object or
//! refused, and the [`ListError`] that ends a listing. Shared by the listers (`super::list`) and
//! the local folder walk (`super::local`), so neither refers to the other for its vocabulary.

use super::error::StoreErrorKind;
use chrono::{DateTime, Utc};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Relative to the location's prefix.
    pub key: String,
    pub size: u64,
    pub last_modified: DateTime<Utc>,
    pub e_tag: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listed {
    Object(Entry),
    /// A key that exists but cannot be handled; listing goes on.
    Refused {
        key: String,
        reason: String,
    },
}

impl Listed {
    pub fn key(&self) -> &str {
        match self {
            Listed::Object(e) => &e.key,
            Listed::Refused { key, .. } => key,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ListError {
    #[error("listing {location}: {source}")]
    Store {
        location: String,
        #[source]
        source: object_store::Error,
    },
    #[error("listing {location}: {message}")]
    Local { location: String, message: String },
    /// The store's answers cannot be made into a complete listing: a request that kept failing
    /// or was refused, or an answer that cannot be continued or contradicts the request.
    #[error("listing {location}: {message}")]
    Broken {
        location: String,
        /// The last HTTP status the store answered with, when it answered at all.
        status: Option<u16>,
        message: String,
    },
    /// The bucket or container the location names does not exist (exit 2): the store answered
    /// 404 with `NoSuchBucket` (S3, GCS) or `ContainerNotFound` (Azure).
    #[error(
        "{location}: the {what} {name:?} does not exist ({code}); check the {what} name in the location (moverctl does not create buckets or containers)"
    )]
    NoBucket {
        location: String,
        what: &'static str,
        name: String,
        code: &'static str,
    },
    #[error(
        "listing {location} is not in key order ({prev:?} came before {key:?}); moverctl needs sorted listings (S3 Express directory buckets and some S3-compatible stores do not sort)"
    )]
    Unsorted {
        location: String,
        prev: String,
        key: String,
    },
}

/// Store error codes that mean the bucket or container itself is missing (not a key).
const NO_BUCKET_CODES: &[&str] = &["NoSuchBucket", "ContainerNotFound"];

impl ListError {
    /// This error as [`ListError::NoBucket`] when it is a 404 naming a missing bucket or
    /// container of `loc`; else unchanged.
    pub fn naming_bucket(self, loc: &super::location::Location) -> ListError {
        use super::location::Location as L;
        let (what, name) = match loc {
            L::S3 { bucket, .. } | L::Gcs { bucket, .. } => ("bucket", bucket),
            L::Azure { container, .. } => ("container", container),
            _ => return self,
        };
        if self.kind() != StoreErrorKind::NotFound {
            return self;
        }
        let text = self.to_string();
        match NO_BUCKET_CODES.iter().find(|c| text.contains(*c)) {
            Some(code) => ListError::NoBucket {
                location: loc.shown(),
                what,
                name: name.clone(),
                code,
            },
            None => self,
        }
    }

    /// What the failure means for the run, from the error's values (never its text): a store's
    /// typed error by [`StoreErrorKind::of`], a broken listing by its last HTTP status.
    pub fn kind(&self) -> StoreErrorKind {
        match self {
            ListError::Store { source, .. } => StoreErrorKind::of(source),
            ListError::Broken {
                status: Some(s), ..
            } => StoreErrorKind::of_status(*s).unwrap_or(StoreErrorKind::Other),
            _ => StoreErrorKind::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ListError;
    use crate::store::location::Location;

    #[test]
    fn a_404_naming_a_missing_bucket_becomes_no_bucket_and_nothing_else_does() {
        let gcs = Location::Gcs {
            bucket: "b".into(),
            prefix: "p/".into(),
            remote: None,
        };
        let broken = |status, message: &str| ListError::Broken {
            location: "gs://b/p/".into(),
            status: Some(status),
            message: message.into(),
        };
        // Real GCS (XML API) and S3: 404 with NoSuchBucket.
        let e = broken(
            404,
            "404 (NoSuchBucket: The specified bucket does not exist.)",
        );
        assert!(matches!(
            e.naming_bucket(&gcs),
            ListError::NoBucket { what: "bucket", ref name, code: "NoSuchBucket", .. } if name == "b"
        ));
        // A missing key, or the code in another status, is not a missing bucket.
        let e = broken(404, "404 (NoSuchKey)");
        assert!(matches!(e.naming_bucket(&gcs), ListError::Broken { .. }));
        let e = broken(500, "500 (NoSuchBucket)");
        assert!(matches!(e.naming_bucket(&gcs), ListError::Broken { .. }));
        let local = Location::Local { root: "/x".into() };
        let e = broken(404, "NoSuchBucket");
        assert!(matches!(e.naming_bucket(&local), ListError::Broken { .. }));
    }
}
