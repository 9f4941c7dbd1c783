//! Deciding what to copy: a merge-join of the sorted source and destination listings, consulting
//! the journal per key. Memory holds one entry of each listing at a time.
//!
//! Decision table (first row that matches wins):
//!
//! | destination has the key? | evidence                                                 | decision |
//! |---|---|---|
//! | no                        | —                                                        | copy (`new`) |
//! | yes, other size           | —                                                        | copy (`size differs`) |
//! | yes, same size            | journal: verified, same source size + ETag, same destination ETag | skip (`verified earlier`), no request |
//! | yes, same size            | [`JoinPolicy::compare_md5_etags`] (both stores' single-part ETags are MD5s): both listed ETags are plain MD5s (not multipart `…-N`) and equal | skip (`same md5`), no request |
//! | yes, same size            | the same, and they differ   | copy (`md5 differs`) |
//! | yes, same size            | journal: failed, or still copying                         | copy (`failed earlier`, `unfinished earlier`) |
//! | yes, same size            | anything else                                            | check: HEAD the destination; skip if its moverctl metadata names the same source ETag and size (`same source version`), else copy (`unproven`) |
//!
//! The digest wins when both sides have one: an MD5 ETag is computed by the store over the bytes
//! it holds, so two equal ones prove equal content and two different ones prove a change, whatever
//! modification times or an earlier failure say. The journal's proof comes first only because it
//! covers exactly the ETags listed now (it matters where an ETag looks like an MD5 but is not one,
//! e.g. S3 objects encrypted with SSE-KMS: copied once, then skipped as verified, never copied on
//! every run). The MD5 rows apply only when the caller knows both
//! stores' single-part ETags are MD5s (S3 providers whose catalog entry says so, GCS); Azure,
//! local and in-memory ETags are opaque and never match the MD5 pattern anyway.
//!
//! Modification times are not used: a source whose mtime is newer than the journal's recorded
//! one but whose size and ETag are unchanged is the same object (a re-upload of the same bytes,
//! a metadata rewrite), and copying it again would only cost requests. Stores whose ETag folds in
//! the mtime (local folders: inode-mtime-size) see a touched file as changed through its ETag.
//!
//! Keys only at the destination are left alone by `copy`. With [`JoinPolicy::dest_only`] (sync)
//! the join also yields them, in key order, as [`Joined::DestOnly`]: the deletion candidates.

use crate::journal::{Journal, State};
use crate::store::list::{Entry, ListError, Listed};
use futures::stream::{BoxStream, StreamExt};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Copy(&'static str),
    Skip(&'static str),
    /// Same size, no journal proof: look at the destination's metadata before deciding.
    Check,
}

#[derive(Debug, Clone)]
pub struct Action {
    pub src: Entry,
    pub dst: Option<Entry>,
    pub decision: Decision,
}

/// Items of the join: an action, a source key that cannot be handled, or (sync only) a key that
/// exists only at the destination.
pub enum Joined {
    Action(Action),
    Refused { key: String, reason: String },
    DestOnly(Entry),
}

/// What the join does beyond `copy`'s decisions; the default is `copy`'s behaviour.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JoinPolicy {
    /// Yield keys found only at the destination as [`Joined::DestOnly`].
    pub dest_only: bool,
    /// Both stores' single-part ETags are MD5s of the content: compare them (see the table).
    pub compare_md5_etags: bool,
}

pub struct Differ {
    src: futures::stream::Peekable<BoxStream<'static, Result<Listed, ListError>>>,
    dst: futures::stream::Peekable<BoxStream<'static, Result<Listed, ListError>>>,
    policy: JoinPolicy,
    dst_objects: u64,
}

impl Differ {
    pub fn new(
        src: BoxStream<'static, Result<Listed, ListError>>,
        dst: BoxStream<'static, Result<Listed, ListError>>,
    ) -> Self {
        Self::with_policy(src, dst, JoinPolicy::default())
    }

    pub fn with_policy(
        src: BoxStream<'static, Result<Listed, ListError>>,
        dst: BoxStream<'static, Result<Listed, ListError>>,
        policy: JoinPolicy,
    ) -> Self {
        Differ {
            src: src.peekable(),
            dst: dst.peekable(),
            policy,
            dst_objects: 0,
        }
    }

    /// Destination objects the join has passed so far (all of them once it has ended, when
    /// [`JoinPolicy::dest_only`] is set).
    pub fn dst_objects(&self) -> u64 {
        self.dst_objects
    }

    /// The next item of the join, or None at its end (the end of the source listing, or of both
    /// listings with [`JoinPolicy::dest_only`]).
    pub async fn next(&mut self, journal: Option<&Journal>) -> Option<Result<Joined, DiffError>> {
        let src_key = match std::pin::Pin::new(&mut self.src).peek().await {
            None => None,
            Some(Ok(Listed::Object(e))) => Some(e.key.clone()),
            Some(Ok(Listed::Refused { .. })) => {
                let Some(Ok(Listed::Refused { key, reason })) = self.src.next().await else {
                    unreachable!("peeked")
                };
                return Some(Ok(Joined::Refused { key, reason }));
            }
            Some(Err(_)) => {
                let Some(Err(e)) = self.src.next().await else {
                    unreachable!("peeked")
                };
                return Some(Err(DiffError::List(e)));
            }
        };
        if src_key.is_none() && !self.policy.dest_only {
            return None;
        }
        // Advance the destination past keys below this one (all of them once the source ended).
        let dst = loop {
            let Some(peek) = std::pin::Pin::new(&mut self.dst).peek().await else {
                break None;
            };
            let key = match peek {
                Ok(l) => l.key().to_string(),
                Err(_) => {
                    let Some(Err(e)) = self.dst.next().await else {
                        unreachable!()
                    };
                    return Some(Err(DiffError::List(e)));
                }
            };
            let order = match &src_key {
                Some(s) => key.as_bytes().cmp(s.as_bytes()),
                None => std::cmp::Ordering::Less,
            };
            match order {
                std::cmp::Ordering::Less => {
                    // A refused destination key cannot be named to the store, so it is never a
                    // candidate for anything.
                    if let Some(Ok(Listed::Object(e))) = self.dst.next().await {
                        self.dst_objects += 1;
                        if self.policy.dest_only {
                            return Some(Ok(Joined::DestOnly(e)));
                        }
                    }
                }
                std::cmp::Ordering::Equal => match self.dst.next().await {
                    Some(Ok(Listed::Object(e))) => {
                        self.dst_objects += 1;
                        break Some(e);
                    }
                    _ => break None,
                },
                std::cmp::Ordering::Greater => break None,
            }
        };
        src_key.as_ref()?;
        let Some(Ok(Listed::Object(src))) = self.src.next().await else {
            unreachable!("peeked an object")
        };
        let decision = match decide_with(&src, dst.as_ref(), journal, self.policy) {
            Ok(d) => d,
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(Joined::Action(Action { src, dst, decision })))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error(transparent)]
    List(#[from] ListError),
    #[error(transparent)]
    Journal(#[from] crate::journal::JournalError),
}

fn norm(e: &Option<String>) -> Option<String> {
    e.as_deref().map(crate::checksum::etag_norm)
}

pub fn decide(
    src: &Entry,
    dst: Option<&Entry>,
    journal: Option<&Journal>,
) -> Result<Decision, DiffError> {
    decide_with(src, dst, journal, JoinPolicy::default())
}

/// A plain (single-part) MD5 ETag: 32 hex digits or base64, never a multipart `…-N`.
fn plain_md5(e: &Option<String>) -> Option<[u8; 16]> {
    e.as_deref().and_then(crate::checksum::etag_md5)
}

/// The decision table above, with the policy's optional rows.
pub fn decide_with(
    src: &Entry,
    dst: Option<&Entry>,
    journal: Option<&Journal>,
    policy: JoinPolicy,
) -> Result<Decision, DiffError> {
    let Some(dst) = dst else {
        return Ok(Decision::Copy("new"));
    };
    if dst.size != src.size {
        return Ok(Decision::Copy("size differs"));
    }
    let record = match journal {
        Some(j) => j.get(&src.key)?,
        None => None,
    };
    if let Some(r) = &record
        && r.state == State::Verified
        && r.size == src.size
        && norm(&r.src_etag) == norm(&src.e_tag)
        && norm(&r.dst_etag) == norm(&dst.e_tag)
    {
        return Ok(Decision::Skip("verified earlier"));
    }
    if policy.compare_md5_etags
        && let (Some(a), Some(b)) = (plain_md5(&src.e_tag), plain_md5(&dst.e_tag))
    {
        return Ok(if a == b {
            Decision::Skip("same md5")
        } else {
            Decision::Copy("md5 differs")
        });
    }
    match record.map(|r| r.state) {
        // What an earlier attempt left may be wrong whatever its metadata says.
        Some(State::Failed) => return Ok(Decision::Copy("failed earlier")),
        Some(State::Copying) => return Ok(Decision::Copy("unfinished earlier")),
        _ => {}
    }
    Ok(Decision::Check)
}
