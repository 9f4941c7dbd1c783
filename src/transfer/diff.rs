//! Deciding what to copy: a merge-join of the sorted source and destination listings, consulting
//! the journal per key. Memory holds one entry of each listing at a time.
//!
//! Each source key is decided once, by [`decide`] (its doc comment is the decision table), from
//! the two listed entries and the journal's record of the key, looked up once by the join.
//!
//! Keys only at the destination are left alone by `copy`. With [`JoinPolicy::dest_only`] (sync)
//! the join also yields them, in key order, as [`Joined::DestOnly`]: the deletion candidates.

use crate::journal::{Journal, ObjectRecord, State};
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

impl JoinPolicy {
    /// The policy for a run from `src` to `dst`: the one place that decides whether listed ETags
    /// are compared. Two listed MD5 ETags that differ prove a change, whatever moverctl metadata
    /// on the destination says, and two equal ones prove equal content, so they are compared
    /// where both stores' single-part ETags are MD5s of the content. `dest_only`: sync's join,
    /// which also yields what only the destination holds.
    pub fn for_pair(src: &crate::store::Store, dst: &crate::store::Store, dest_only: bool) -> Self {
        JoinPolicy {
            dest_only,
            compare_md5_etags: src.caps.put_etag_is_md5 && dst.caps.put_etag_is_md5,
        }
    }
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
    /// listings with [`JoinPolicy::dest_only`]). A source key the destination also holds is
    /// decided with the journal's record of it (the lock is taken after the listings' awaits,
    /// never held across one).
    pub async fn next(
        &mut self,
        journal: Option<&std::sync::Mutex<Journal>>,
    ) -> Option<Result<Joined, DiffError>> {
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
        let record = match (journal, &dst) {
            (Some(j), Some(_)) => match j.lock().expect("journal lock").get(&src.key) {
                Ok(r) => r,
                Err(e) => return Some(Err(e.into())),
            },
            _ => None,
        };
        let decision = decide(&src, dst.as_ref(), record.as_ref(), self.policy);
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

/// The reason for not copying again an object an earlier run wrote `unverified` (row 3c).
pub const UNVERIFIED_EARLIER: &str = "unverified earlier";

/// The reason for re-copying an object another writer changed at the destination (row 3b).
pub const CHANGED_AT_DESTINATION: &str = "changed at destination";

/// The journal's ETag and the listed one name the same version ([`crate::checksum::same_etag`]).
fn same(recorded: &Option<String>, listed: &Option<String>) -> bool {
    crate::checksum::same_etag(recorded.as_deref(), listed.as_deref())
}

/// A plain (single-part) MD5 ETag: 32 hex digits or base64, never a multipart `…-N`.
fn plain_md5(e: &Option<String>) -> Option<[u8; 16]> {
    e.as_deref().and_then(crate::checksum::etag_md5)
}

/// What to do with one source key, from its listed entry, the destination's entry for the same
/// key, the journal's record of the key and the policy. Pure: no request, no journal access.
///
/// Decision table (first row that matches wins):
///
/// | # | destination has the key? | evidence | decision |
/// |---|---|---|---|
/// | 1 | no | — | copy (`new`) |
/// | 2 | yes, other size | — | copy (`size differs`) |
/// | 3 | yes, same size | journal: verified, same source size + ETag, same destination ETag | skip (`verified earlier`), no request |
/// | 3b | yes, same size | journal: verified, same source size + ETag, but the destination's listed ETag is not the one recorded for that verified write | copy (`changed at destination`), no request |
/// | 3c | yes, same size | journal: written `unverified` (no digest could check it), same source size + ETag, same destination ETag | skip (`unverified earlier`), no request: another copy could be checked no better; the run still counts it unverified (exit 9) unless `--verify size` |
/// | 4 | yes, same size | [`JoinPolicy::compare_md5_etags`] (both stores' single-part ETags are MD5s), both listed ETags are plain MD5s (not multipart `…-N`) and equal | skip (`same md5`), no request |
/// | 5 | yes, same size | the same, and they differ | copy (`md5 differs`) |
/// | 6 | yes, same size | journal: failed | copy (`failed earlier`) |
/// | 7 | yes, same size | journal: still copying | copy (`unfinished earlier`) |
/// | 8 | yes, same size | anything else | [`Decision::Check`]: the engine HEADs the destination and skips if its moverctl metadata names the same source ETag and size (`same source version`), else copies (`unproven`); a run that takes only its journal as proof (`CopyOptions::journal_proof_only`, drain) copies at once |
///
/// ETags are compared normalised (quotes, `W/` and case ignored). The digest (rows 4–5) wins
/// over an earlier failure (rows 6–7) when both sides have one: an MD5 ETag is computed by the
/// store over the bytes it holds, so two equal ones prove equal content and two different ones
/// prove a change, whatever modification times or an earlier failure say. The journal's proof
/// (row 3) comes first only because it covers exactly the ETags listed now (it matters where an
/// ETag looks like an MD5 but is not one, e.g. S3 objects encrypted with SSE-KMS: copied once,
/// then skipped as verified, never copied on every run). The MD5 rows apply only when the
/// caller knows both stores' single-part ETags are MD5s (S3 providers whose catalog entry says
/// so, GCS); Azure, local and in-memory ETags are opaque and never match the MD5 pattern anyway.
///
/// Modification times are not used: a source whose mtime is newer than the journal's recorded
/// one but whose size and ETag are unchanged is the same object (a re-upload of the same bytes,
/// a metadata rewrite), and copying it again would only cost requests. Stores whose ETag folds
/// in the mtime (local folders: inode-mtime-size) see a touched file as changed through its ETag.
pub fn decide(
    src: &Entry,
    dst: Option<&Entry>,
    journal: Option<&ObjectRecord>,
    policy: JoinPolicy,
) -> Decision {
    let Some(dst) = dst else {
        return Decision::Copy("new");
    };
    if dst.size != src.size {
        return Decision::Copy("size differs");
    }
    if let Some(r) = journal
        && r.state == State::Verified
        && r.size == src.size
        && same(&r.src_etag, &src.e_tag)
        && same(&r.dst_etag, &dst.e_tag)
    {
        return Decision::Skip("verified earlier");
    }
    if let Some(r) = journal
        && r.state == State::Verified
        && r.size == src.size
        && same(&r.src_etag, &src.e_tag)
        && r.dst_etag.is_some()
        && !same(&r.dst_etag, &dst.e_tag)
    {
        // The source is the version moverctl verified a copy of, but the destination's ETag is
        // not the one that copy got: something else wrote it since. Its moverctl metadata may
        // have been copied over with it, so a HEAD would prove nothing.
        return Decision::Copy(CHANGED_AT_DESTINATION);
    }
    if let Some(r) = journal
        && r.state == State::Failed
        && r.verified_by
            .as_deref()
            .is_some_and(|v| v.starts_with("unverified"))
        && r.size == src.size
        && same(&r.src_etag, &src.e_tag)
        && r.dst_etag.is_some()
        && same(&r.dst_etag, &dst.e_tag)
    {
        // Written in full, but the source states nothing its bytes could be checked by: copying
        // the same version again would prove no more and cost the transfer again (every run of
        // a cron sync). It stays counted as unverified.
        return Decision::Skip(UNVERIFIED_EARLIER);
    }
    if policy.compare_md5_etags
        && let (Some(a), Some(b)) = (plain_md5(&src.e_tag), plain_md5(&dst.e_tag))
    {
        return if a == b {
            Decision::Skip("same md5")
        } else {
            Decision::Copy("md5 differs")
        };
    }
    match journal.map(|r| &r.state) {
        // What an earlier attempt left may be wrong whatever its metadata says.
        Some(State::Failed) => Decision::Copy("failed earlier"),
        Some(State::Copying) => Decision::Copy("unfinished earlier"),
        _ => Decision::Check,
    }
}

#[cfg(test)]
mod tests {
    //! One test per row of [`decide`]'s table (named after the row), then where rows compete.
    use super::*;

    const MD5_A: &str = "\"0123456789abcdef0123456789abcdef\"";
    const MD5_B: &str = "\"fedcba9876543210fedcba9876543210\"";
    const MD5: JoinPolicy = JoinPolicy {
        dest_only: false,
        compare_md5_etags: true,
    };
    const PLAIN: JoinPolicy = JoinPolicy {
        dest_only: false,
        compare_md5_etags: false,
    };

    fn entry(size: u64, etag: &str) -> Entry {
        Entry {
            key: "k".into(),
            size,
            last_modified: chrono::DateTime::parse_from_rfc3339("2026-01-02T03:04:05Z")
                .unwrap()
                .with_timezone(&chrono::Utc),
            e_tag: Some(etag.into()),
        }
    }

    fn record(state: State, src: &Entry, dst_etag: &str) -> ObjectRecord {
        ObjectRecord {
            key: src.key.clone(),
            size: src.size,
            src_etag: src.e_tag.clone(),
            src_mtime: Some("2020-01-01T00:00:00+00:00".into()),
            state,
            crc64: None,
            md5: None,
            dst_etag: Some(dst_etag.into()),
            verified_by: None,
            attempts: 1,
            error: None,
            upload_id: None,
            part_size: None,
        }
    }

    // Row 1.
    #[test]
    fn row_1_no_destination_copies_new() {
        let src = entry(5, "\"s\"");
        let verified = record(State::Verified, &src, "\"d\"");
        for policy in [PLAIN, MD5] {
            assert_eq!(decide(&src, None, None, policy), Decision::Copy("new"));
            assert_eq!(
                decide(&src, None, Some(&verified), policy),
                Decision::Copy("new")
            );
        }
    }

    // Row 2.
    #[test]
    fn row_2_other_size_copies_size_differs() {
        let (src, dst) = (entry(5, "\"s\""), entry(6, "\"d\""));
        assert_eq!(
            decide(&src, Some(&dst), None, PLAIN),
            Decision::Copy("size differs")
        );
    }

    // Row 3.
    #[test]
    fn row_3_journal_verified_same_etags_skips_verified_earlier() {
        let (src, dst) = (entry(5, "\"s\""), entry(5, "\"d\""));
        let r = record(State::Verified, &src, "\"d\"");
        assert_eq!(
            decide(&src, Some(&dst), Some(&r), PLAIN),
            Decision::Skip("verified earlier")
        );
    }

    // Row 4.
    #[test]
    fn row_4_equal_plain_md5s_skip_same_md5() {
        let (src, dst) = (entry(5, MD5_A), entry(5, MD5_A));
        assert_eq!(
            decide(&src, Some(&dst), None, MD5),
            Decision::Skip("same md5")
        );
        // Hex and base64 spellings of one MD5 are equal.
        let b64 = entry(5, "ASNFZ4mrze8BI0VniavN7w==");
        assert_eq!(
            decide(&src, Some(&b64), None, MD5),
            Decision::Skip("same md5")
        );
    }

    // Row 5.
    #[test]
    fn row_5_differing_plain_md5s_copy_md5_differs() {
        let (src, dst) = (entry(5, MD5_A), entry(5, MD5_B));
        assert_eq!(
            decide(&src, Some(&dst), None, MD5),
            Decision::Copy("md5 differs")
        );
    }

    // Row 6.
    #[test]
    fn row_6_journal_failed_copies_failed_earlier() {
        let (src, dst) = (entry(5, "\"s\""), entry(5, "\"d\""));
        let r = record(State::Failed, &src, "\"d\"");
        assert_eq!(
            decide(&src, Some(&dst), Some(&r), PLAIN),
            Decision::Copy("failed earlier")
        );
    }

    #[test]
    fn row_3c_an_unverified_copy_of_the_same_version_is_not_copied_again() {
        let (src, dst) = (entry(5, "\"s\""), entry(5, "\"d\""));
        let mut r = record(State::Failed, &src, "\"d\"");
        r.verified_by = Some("unverified+dest-md5".into());
        assert_eq!(
            decide(&src, Some(&dst), Some(&r), PLAIN),
            Decision::Skip(UNVERIFIED_EARLIER)
        );
        // another source version, or a destination changed since: copied
        let other = entry(5, "\"s2\"");
        assert_eq!(
            decide(&other, Some(&dst), Some(&r), PLAIN),
            Decision::Copy("failed earlier")
        );
        let changed = entry(5, "\"d2\"");
        assert_eq!(
            decide(&src, Some(&changed), Some(&r), PLAIN),
            Decision::Copy("failed earlier")
        );
        // a plain failure is copied again
        r.verified_by = None;
        assert_eq!(
            decide(&src, Some(&dst), Some(&r), PLAIN),
            Decision::Copy("failed earlier")
        );
    }

    // Row 7.
    #[test]
    fn row_7_journal_copying_copies_unfinished_earlier() {
        let (src, dst) = (entry(5, "\"s\""), entry(5, "\"d\""));
        let r = record(State::Copying, &src, "\"d\"");
        assert_eq!(
            decide(&src, Some(&dst), Some(&r), PLAIN),
            Decision::Copy("unfinished earlier")
        );
    }

    // Row 8.
    #[test]
    fn row_8_anything_else_checks() {
        let (src, dst) = (entry(5, "\"s\""), entry(5, "\"d\""));
        assert_eq!(decide(&src, Some(&dst), None, PLAIN), Decision::Check);
        assert_eq!(decide(&src, Some(&dst), None, MD5), Decision::Check);
    }

    // Precedence and the edges of each row.

    #[test]
    fn size_differs_beats_a_verified_journal_and_equal_md5s() {
        let (src, dst) = (entry(5, MD5_A), entry(6, MD5_A));
        let r = record(State::Verified, &src, MD5_A);
        assert_eq!(
            decide(&src, Some(&dst), Some(&r), MD5),
            Decision::Copy("size differs")
        );
    }

    #[test]
    fn journal_verified_beats_differing_md5s() {
        // E.g. SSE-KMS: the destination's ETag looks like an MD5 but is not the content's.
        let (src, dst) = (entry(5, MD5_A), entry(5, MD5_B));
        let r = record(State::Verified, &src, MD5_B);
        assert_eq!(
            decide(&src, Some(&dst), Some(&r), MD5),
            Decision::Skip("verified earlier")
        );
    }

    /// Row 3b. Fails on the main of 2026-12-02, which HEADed the rewritten destination, found
    /// moverctl's metadata copied over with it and skipped it (`same source version`).
    #[test]
    fn row_3b_a_destination_rewritten_since_the_verified_write_copies_changed_at_destination() {
        let (src, dst) = (entry(5, "\"s\""), entry(5, "\"d\""));
        let r = record(State::Verified, &src, "\"older\"");
        for policy in [PLAIN, MD5] {
            assert_eq!(
                decide(&src, Some(&dst), Some(&r), policy),
                Decision::Copy(CHANGED_AT_DESTINATION)
            );
        }
        // Equal plain MD5s cannot overrule it: the record says the bytes written had another ETag.
        let (src, dst) = (entry(5, MD5_A), entry(5, MD5_A));
        let r = record(State::Verified, &src, MD5_B);
        assert_eq!(
            decide(&src, Some(&dst), Some(&r), MD5),
            Decision::Copy(CHANGED_AT_DESTINATION)
        );
        // A record without a destination ETag proves nothing either way.
        let (src, dst) = (entry(5, "\"s\""), entry(5, "\"d\""));
        let mut r = record(State::Verified, &src, "");
        r.dst_etag = None;
        assert_eq!(decide(&src, Some(&dst), Some(&r), PLAIN), Decision::Check);
    }

    #[test]
    fn journal_verified_for_other_etags_or_size_proves_nothing() {
        let (src, dst) = (entry(5, "\"s\""), entry(5, "\"d\""));
        // The source changed since.
        let r = record(State::Verified, &entry(5, "\"s0\""), "\"d\"");
        assert_eq!(decide(&src, Some(&dst), Some(&r), PLAIN), Decision::Check);
        // Recorded with another size.
        let r = record(State::Verified, &entry(4, "\"s\""), "\"d\"");
        assert_eq!(decide(&src, Some(&dst), Some(&r), PLAIN), Decision::Check);
        // ...and then the MD5s decide.
        let (src, dst) = (entry(5, MD5_A), entry(5, MD5_B));
        let r = record(State::Verified, &entry(5, "\"s0\""), "\"older\"");
        assert_eq!(
            decide(&src, Some(&dst), Some(&r), MD5),
            Decision::Copy("md5 differs")
        );
    }

    #[test]
    fn journal_verified_compares_etags_normalised_and_ignores_mtimes() {
        let (src, dst) = (entry(5, "\"ABC\""), entry(5, "W/\"Def\""));
        let mut r = record(State::Verified, &entry(5, "abc"), "\"def\"");
        r.src_mtime = Some("1999-01-01T00:00:00+00:00".into());
        assert_eq!(
            decide(&src, Some(&dst), Some(&r), PLAIN),
            Decision::Skip("verified earlier")
        );
    }

    #[test]
    fn equal_md5s_beat_failed_earlier() {
        let (src, dst) = (entry(5, MD5_A), entry(5, MD5_A));
        let r = record(State::Failed, &src, MD5_A);
        assert_eq!(
            decide(&src, Some(&dst), Some(&r), MD5),
            Decision::Skip("same md5")
        );
        let r = record(State::Copying, &src, MD5_A);
        assert_eq!(
            decide(&src, Some(&dst), Some(&r), MD5),
            Decision::Skip("same md5")
        );
    }

    #[test]
    fn differing_md5s_beat_failed_earlier() {
        let (src, dst) = (entry(5, MD5_A), entry(5, MD5_B));
        let r = record(State::Failed, &src, MD5_B);
        assert_eq!(
            decide(&src, Some(&dst), Some(&r), MD5),
            Decision::Copy("md5 differs")
        );
    }

    #[test]
    fn md5_rows_need_the_policy_and_two_plain_md5s() {
        let (src, dst) = (entry(5, MD5_A), entry(5, MD5_A));
        // Without the policy, equal MD5-looking ETags prove nothing.
        assert_eq!(decide(&src, Some(&dst), None, PLAIN), Decision::Check);
        let r = record(State::Failed, &src, MD5_A);
        assert_eq!(
            decide(&src, Some(&dst), Some(&r), PLAIN),
            Decision::Copy("failed earlier")
        );
        // A multipart ETag or an opaque one on either side: not an MD5 of the content.
        let multipart = entry(5, "\"0123456789abcdef0123456789abcdef-2\"");
        let opaque = entry(5, "\"0x8DC0123456789AB\"");
        for other in [&multipart, &opaque] {
            assert_eq!(decide(&src, Some(other), None, MD5), Decision::Check);
            assert_eq!(decide(other, Some(&src), None, MD5), Decision::Check);
        }
        let r = record(State::Copying, &multipart, MD5_A);
        assert_eq!(
            decide(&multipart, Some(&dst), Some(&r), MD5),
            Decision::Copy("unfinished earlier")
        );
    }

    #[test]
    fn missing_etags_on_both_sides_match_a_record_without_them() {
        let (mut src, mut dst) = (entry(5, ""), entry(5, ""));
        src.e_tag = None;
        dst.e_tag = None;
        let mut r = record(State::Verified, &src, "");
        r.dst_etag = None;
        assert_eq!(
            decide(&src, Some(&dst), Some(&r), MD5),
            Decision::Skip("verified earlier")
        );
    }
}
