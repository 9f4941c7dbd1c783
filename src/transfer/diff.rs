//! Deciding what to copy: a merge-join of the sorted source and destination listings, consulting
//! the journal per key. Memory holds one entry of each listing at a time.
//!
//! Decision table (first row that matches wins):
//!
//! | destination has the key? | journal says                                             | decision |
//! |---|---|---|
//! | no                        | —                                                        | copy (`new`) |
//! | yes, other size           | —                                                        | copy (`size differs`) |
//! | yes, same size            | verified, same source size + ETag, same destination ETag | skip (`verified earlier`) |
//! | yes, same size            | failed, or still copying                                  | copy (`failed earlier`, `unfinished earlier`) |
//! | yes, same size            | anything else                                            | check: HEAD the destination; skip if its moverctl metadata names the same source ETag and size (`same source version`), else copy (`unproven`) |
//!
//! Keys only at the destination are left alone (copy never deletes).

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

/// Items of the join: an action, or a source key that cannot be handled.
pub enum Joined {
    Action(Action),
    Refused { key: String, reason: String },
}

pub struct Differ {
    src: futures::stream::Peekable<BoxStream<'static, Result<Listed, ListError>>>,
    dst: futures::stream::Peekable<BoxStream<'static, Result<Listed, ListError>>>,
}

impl Differ {
    pub fn new(
        src: BoxStream<'static, Result<Listed, ListError>>,
        dst: BoxStream<'static, Result<Listed, ListError>>,
    ) -> Self {
        Differ {
            src: src.peekable(),
            dst: dst.peekable(),
        }
    }

    /// The next source key with its decision, or None at the end of the source listing.
    pub async fn next(&mut self, journal: Option<&Journal>) -> Option<Result<Joined, DiffError>> {
        let src = match self.src.next().await? {
            Ok(Listed::Object(e)) => e,
            Ok(Listed::Refused { key, reason }) => {
                return Some(Ok(Joined::Refused { key, reason }));
            }
            Err(e) => return Some(Err(DiffError::List(e))),
        };
        // Advance the destination past keys below this one.
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
            match key.as_bytes().cmp(src.key.as_bytes()) {
                std::cmp::Ordering::Less => {
                    self.dst.next().await;
                }
                std::cmp::Ordering::Equal => match self.dst.next().await {
                    Some(Ok(Listed::Object(e))) => break Some(e),
                    _ => break None,
                },
                std::cmp::Ordering::Greater => break None,
            }
        };
        let decision = decide(&src, dst.as_ref(), journal);
        let decision = match decision {
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
    let Some(dst) = dst else {
        return Ok(Decision::Copy("new"));
    };
    if dst.size != src.size {
        return Ok(Decision::Copy("size differs"));
    }
    if let Some(j) = journal
        && let Some(r) = j.get(&src.key)?
    {
        match r.state {
            State::Verified
                if r.size == src.size
                    && norm(&r.src_etag) == norm(&src.e_tag)
                    && norm(&r.dst_etag) == norm(&dst.e_tag) =>
            {
                return Ok(Decision::Skip("verified earlier"));
            }
            // What an earlier attempt left may be wrong whatever its metadata says.
            State::Failed => return Ok(Decision::Copy("failed earlier")),
            State::Copying => return Ok(Decision::Copy("unfinished earlier")),
            State::Verified => {}
        }
    }
    Ok(Decision::Check)
}
