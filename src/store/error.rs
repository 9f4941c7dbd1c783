//! One classification of store errors: what a failed request means for the run (credentials
//! refused, slow down, the body's digest refused, a precondition failed, no such object, or
//! anything else). Every rule that depends on what kind of error a store returned (exit code 4,
//! whether to retry, whether to shrink the request window) asks [`StoreErrorKind::of`].
//!
//! Order of evidence:
//! 1. object_store's typed variants (`Unauthenticated`, `PermissionDenied`, `Precondition`,
//!    `NotFound`): object_store turns 401, 403, 412 and 404 answers into these itself.
//! 2. The HTTP status of a `Generic` error: from an [`HttpStatus`] in the source chain (the
//!    errors moverctl builds for its own requests carry one).
//! 3. Text, only where the status is not reachable as a value: object_store 0.14 keeps the
//!    status of the requests it makes in its `RetryError`, whose module is private (the type
//!    cannot be named, so it cannot be downcast to); its Display says `status code: 503 …`
//!    and includes the store's error body. So the status is read back from that text, and the
//!    store's error code (`<Code>BadDigest</Code>`, `SlowDown`, …) from the body: a 400 says
//!    nothing about a digest, and an error body inside a 200 answer has no status at all.

use std::fmt;

/// What a store error means for the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StoreErrorKind {
    /// Credentials missing, wrong, expired or not allowed (401, 403, AccessDenied, …).
    Auth,
    /// The store asked to slow down (429, 503, SlowDown).
    Throttled,
    /// The store compared the body with the Content-MD5 that was sent and refused it.
    DigestRefused,
    /// A condition (If-Match, If-None-Match) did not hold (412).
    PreconditionFailed,
    /// No such object or bucket (404).
    NotFound,
    Other,
}

impl StoreErrorKind {
    pub fn of(e: &object_store::Error) -> StoreErrorKind {
        use object_store::Error as E;
        match e {
            E::Unauthenticated { .. } | E::PermissionDenied { .. } => return Self::Auth,
            E::Precondition { .. } => return Self::PreconditionFailed,
            E::NotFound { .. } => return Self::NotFound,
            _ => {}
        }
        if let Some(k) = http_status(e).and_then(Self::of_status) {
            return k;
        }
        Self::of_text(&e.to_string())
    }

    /// The kind an HTTP status alone decides (None: the status says nothing more, e.g. 400).
    pub fn of_status(status: u16) -> Option<StoreErrorKind> {
        Some(match status {
            401 | 403 => Self::Auth,
            429 | 503 => Self::Throttled,
            412 => Self::PreconditionFailed,
            404 => Self::NotFound,
            _ => return None,
        })
    }

    /// The store's error code in an error's text (see the module notes for why text).
    fn of_text(text: &str) -> StoreErrorKind {
        let has = |codes: &[&str]| codes.iter().any(|c| text.contains(c));
        if has(&[
            "<Code>BadDigest</Code>",
            "<Code>InvalidDigest</Code>",
            "Md5Mismatch",
        ]) {
            Self::DigestRefused
        } else if has(&["SlowDown", "reduce your request rate", "ServerBusy"]) {
            Self::Throttled
        } else if has(&[
            "AccessDenied",
            "InvalidAccessKeyId",
            "SignatureDoesNotMatch",
            "AuthenticationFailed",
            "AuthorizationFailure",
            // object_store's Azure and GCS token providers (Entra ID, metadata server, OAuth).
            "Error performing token request",
            "Error getting token response body",
            "Error reading federated token file",
            "az account get-access-token",
            "Failed to parse azure cli response",
            "Unable to open service account file",
            "Unable to decode service account file",
        ]) || expired_text(text)
        {
            Self::Auth
        } else {
            Self::Other
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auth => "auth",
            Self::Throttled => "throttled",
            Self::DigestRefused => "digest_refused",
            Self::PreconditionFailed => "precondition_failed",
            Self::NotFound => "not_found",
            Self::Other => "other",
        }
    }
}

impl fmt::Display for StoreErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error codes (and messages) that mean the credentials expired or a fresh credential would
/// cure the refusal: S3 answers `ExpiredToken` / `InvalidToken` / `TokenRefreshRequired` with
/// 400 (sometimes 403), a presigned URL past its time "Request has expired".
pub const EXPIRED_CODES: &[&str] = &[
    "ExpiredToken",
    "InvalidToken",
    "TokenRefreshRequired",
    "RequestExpired",
    "Request has expired",
    "The provided token has expired",
];

/// Whether an error code or text names expired credentials (see [`EXPIRED_CODES`]).
pub fn expired_text(text: &str) -> bool {
    EXPIRED_CODES.iter().any(|c| text.contains(c))
}

/// Whether a store error is a refusal that fresh credentials may cure: a 401, or a refusal whose
/// code says the credentials expired. (A 403 AccessDenied is not: the same principal would be
/// refused again.)
pub fn is_expired_credentials(e: &object_store::Error) -> bool {
    StoreErrorKind::of(e) == StoreErrorKind::Auth
        && (http_status(e) == Some(401)
            || matches!(e, object_store::Error::Unauthenticated { .. })
            || expired_text(&e.to_string()))
}

/// An HTTP answer that ended a request moverctl made itself (a presigned HEAD, a LIST page), as
/// the source of an `object_store::Error::Generic`: the status stays a value.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct HttpStatus {
    pub status: u16,
    pub message: String,
}

/// The HTTP status behind a store error, where one is known: an [`HttpStatus`] in the source
/// chain, else the `status code: NNN` object_store's (unnameable) RetryError prints.
pub fn http_status(e: &object_store::Error) -> Option<u16> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(x) = cur {
        if let Some(h) = x.downcast_ref::<HttpStatus>() {
            return Some(h.status);
        }
        cur = x.source();
    }
    // Text fallback: object_store's RetryError cannot be named (see the module notes).
    e.to_string()
        .split("status code: ")
        .skip(1)
        .find_map(|rest| rest.get(..3)?.parse::<u16>().ok())
}

#[cfg(test)]
mod tests {
    use super::StoreErrorKind as K;
    use super::*;

    fn generic(msg: &str) -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: msg.to_string().into(),
        }
    }

    /// What object_store 0.14's RetryError prints for a status answer (its Display).
    fn retry_text(status: &str, body: &str) -> object_store::Error {
        generic(&format!(
            "Error performing PUT http://127.0.0.1:3900/b/k in 1.2s, after 3 retries, \
             max_retries: 10, retry_timeout: 240s  - Server returned non-2xx status code: \
             {status}: {body}"
        ))
    }

    #[test]
    fn typed_variants_decide_first() {
        let src = || -> Box<dyn std::error::Error + Send + Sync> { "x".into() };
        let p = || "k".to_string();
        use object_store::Error as E;
        assert_eq!(
            K::of(&E::PermissionDenied {
                path: p(),
                source: src()
            }),
            K::Auth
        );
        assert_eq!(
            K::of(&E::Unauthenticated {
                path: p(),
                source: src()
            }),
            K::Auth
        );
        assert_eq!(
            K::of(&E::Precondition {
                path: p(),
                source: src()
            }),
            K::PreconditionFailed
        );
        assert_eq!(
            K::of(&E::NotFound {
                path: p(),
                source: src()
            }),
            K::NotFound
        );
        assert_eq!(
            K::of(&E::AlreadyExists {
                path: p(),
                source: src()
            }),
            K::Other
        );
        assert_eq!(
            K::of(&E::NotImplemented {
                operation: "copy".into(),
                implementer: "x".into()
            }),
            K::Other
        );
    }

    #[test]
    fn a_status_in_the_source_chain_is_read_as_a_value() {
        let e = object_store::Error::Generic {
            store: "S3",
            source: Box::new(HttpStatus {
                status: 503,
                message: "the store answered 503".into(),
            }),
        };
        assert_eq!(http_status(&e), Some(503));
        assert_eq!(K::of(&e), K::Throttled);
        let e = object_store::Error::Generic {
            store: "S3",
            source: Box::new(HttpStatus {
                status: 403,
                message: "no".into(),
            }),
        };
        assert_eq!(K::of(&e), K::Auth);
        // A status that says nothing more (500) is Other, whatever the text around it.
        let e = object_store::Error::Generic {
            store: "S3",
            source: Box::new(HttpStatus {
                status: 500,
                message: "the store answered 500".into(),
            }),
        };
        assert_eq!(K::of(&e), K::Other);
    }

    #[test]
    fn object_stores_retry_error_text_gives_the_status_and_the_code() {
        let slow = retry_text(
            "503 Service Unavailable",
            "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>",
        );
        assert_eq!(http_status(&slow), Some(503));
        assert_eq!(K::of(&slow), K::Throttled);
        assert_eq!(
            K::of(&retry_text("429 Too Many Requests", "")),
            K::Throttled
        );
        assert_eq!(K::of(&retry_text("403 Forbidden", "")), K::Auth);
        assert_eq!(K::of(&retry_text("401 Unauthorized", "")), K::Auth);
        let bad = retry_text(
            "400 Bad Request",
            "<Error><Code>BadDigest</Code><Message>The Content-MD5 you specified did not match</Message></Error>",
        );
        assert_eq!(K::of(&bad), K::DigestRefused);
        assert_eq!(
            K::of(&retry_text("400 Bad Request", "<Code>InvalidDigest</Code>")),
            K::DigestRefused
        );
        assert_eq!(
            K::of(&retry_text("400 Bad Request", "<Code>Md5Mismatch</Code>")),
            K::DigestRefused
        );
        assert_eq!(
            K::of(&retry_text("500 Internal Server Error", "InternalError")),
            K::Other
        );
        // A body without a status (object_store's "error response" inside a 200 answer).
        assert_eq!(
            K::of(&generic(
                "Server returned error response: <Code>InvalidAccessKeyId</Code>"
            )),
            K::Auth
        );
        assert_eq!(K::of(&generic("connection reset")), K::Other);
        // Expired session credentials: S3 answers 400 ExpiredToken, which is no bad request.
        let expired = retry_text(
            "400 Bad Request",
            "<Error><Code>ExpiredToken</Code><Message>The provided token has expired.</Message></Error>",
        );
        assert_eq!(K::of(&expired), K::Auth);
        assert!(is_expired_credentials(&expired));
        assert!(!is_expired_credentials(&retry_text(
            "403 Forbidden",
            "<Code>AccessDenied</Code>"
        )));
        assert!(is_expired_credentials(&retry_text("401 Unauthorized", "")));
        // A "503" that is not a status (a size, a key) is not a slow-down.
        assert_eq!(K::of(&generic("object part-503 is 503 bytes")), K::Other);
    }

    #[test]
    fn statuses_alone() {
        assert_eq!(K::of_status(403), Some(K::Auth));
        assert_eq!(K::of_status(429), Some(K::Throttled));
        assert_eq!(K::of_status(412), Some(K::PreconditionFailed));
        assert_eq!(K::of_status(404), Some(K::NotFound));
        assert_eq!(K::of_status(400), None);
        assert_eq!(K::of_status(500), None);
    }
}
