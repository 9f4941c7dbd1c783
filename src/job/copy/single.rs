//! `moverctl copy FILE DEST` as `cp` does it: a local source that is one regular file is copied
//! by the same engine (verified, journaled) from its folder, where the folder is never walked.
//!
//! | DEST | written at |
//! |---|---|
//! | ends in `/`, an existing local folder, or a bucket/container root | `DEST/FILE-NAME` |
//! | anything else | `DEST` itself: its last segment is the key, the rest the folder |

use crate::store::config::Remotes;
use crate::store::location::Location;
use crate::store::{SingleKey, Store};

/// The folders to open and the one key on each side.
#[derive(Debug, PartialEq, Eq)]
pub struct Single {
    pub src_dir: String,
    pub dst_dir: String,
    pub src_key: String,
    pub dst_key: String,
}

impl Single {
    /// Opens both folders. The folder-overlap refusal does not apply (a file may be copied
    /// beside itself, as `cp` does); copying a file onto itself is refused.
    pub fn open(&self, remotes: &Remotes) -> Result<(Store, Store), crate::job::JobError> {
        let mut src = Store::open(&self.src_dir, remotes)?;
        let mut dst = Store::open_destination(&self.dst_dir, remotes)?;
        if let (Some(a), Some(b)) = (&src.local_root, &dst.local_root)
            && a.join(&self.src_key) == b.join(&self.dst_key)
        {
            return Err(crate::job::JobError::Usage(format!(
                "{} and {} are the same file",
                a.join(&self.src_key).display(),
                b.join(&self.dst_key).display()
            )));
        }
        self.apply(&mut src, &mut dst);
        Ok((src, dst))
    }

    /// Marks both stores as holding the one object.
    pub fn apply(&self, src: &mut Store, dst: &mut Store) {
        src.single = Some(SingleKey {
            listed_as: self.src_key.clone(),
            key: self.src_key.clone(),
        });
        dst.single = Some(SingleKey {
            listed_as: self.src_key.clone(),
            key: self.dst_key.clone(),
        });
        // One object of each side: the pair's journal and lock are that object's, not the
        // folders' (a copy of the same file under another name is another pair).
        src.identity = format!("{} key {}", src.identity, self.src_key);
        dst.identity = format!("{} key {}", dst.identity, self.dst_key);
    }
}

/// `Some` when `src` is a local path to a regular file (a file name that is not UTF-8 is left to
/// the usual refusal).
pub fn detect(src: &str, dst: &str, remotes: &Remotes) -> Option<Single> {
    let Ok(Location::Local { root }) = Location::parse(src, remotes) else {
        return None;
    };
    if !std::fs::metadata(&root).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let name = root.file_name()?.to_str()?.to_string();
    let parent = root
        .parent()
        .map(|p| p.display().to_string())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| ".".into());
    let folder = |dst_dir: String, dst_key: String| Single {
        src_dir: parent.clone(),
        dst_dir,
        src_key: name.clone(),
        dst_key,
    };
    let dst_t = dst.trim();
    let into_folder = dst_t.ends_with('/')
        || match Location::parse(dst_t, remotes) {
            Ok(Location::Local { root }) => root.is_dir(),
            Ok(l @ (Location::S3 { .. } | Location::Gcs { .. } | Location::Azure { .. })) => {
                l.prefix().is_empty()
            }
            _ => false,
        };
    if into_folder {
        return Some(folder(dst_t.to_string(), name.clone()));
    }
    match dst_t.rsplit_once('/') {
        // `s3://b/key`: keep the slash so the folder is the bucket root, not a bare `s3:`.
        Some((dir, key)) => Some(folder(format!("{dir}/"), key.to_string())),
        None => match dst_t.split_once(':') {
            // `remote:key` with no bucket would be refused when opened; leave it to that.
            Some(_) => None,
            None => Some(folder(".".into(), dst_t.to_string())),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_are_read_as_cp_reads_them() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("f.bin");
        std::fs::write(&f, b"x").unwrap();
        std::fs::create_dir(t.path().join("there")).unwrap();
        let src = f.display().to_string();
        let dir = t.path().display().to_string();
        let r = Remotes::default();
        let got = |dst: &str| detect(&src, dst, &r).map(|s| (s.dst_dir, s.dst_key));
        let s = |a: &str, b: &str| Some((a.to_string(), b.to_string()));
        assert_eq!(got("s3://b/p/"), s("s3://b/p/", "f.bin"));
        assert_eq!(got("s3://b"), s("s3://b", "f.bin"));
        assert_eq!(got("s3://b/p/g.bin"), s("s3://b/p/", "g.bin"));
        assert_eq!(got("/tmp/new/g.bin"), s("/tmp/new/", "g.bin"));
        let there = format!("{dir}/there");
        assert_eq!(got(&there), s(&there, "f.bin"));
        assert_eq!(got("g.bin"), s(".", "g.bin"));
        let one = detect(&src, "out/", &r).unwrap();
        assert_eq!((one.src_dir, one.src_key), (dir.clone(), "f.bin".into()));
        assert_eq!(
            detect(&dir, "out/", &r),
            None,
            "a folder is copied as a folder"
        );
    }
}
