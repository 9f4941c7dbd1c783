//! Files a command will write when it ends (`sync --metrics-file`) are checked before any work
//! starts: a missing or unwritable folder is exit 2 at once, not an error after a day's sync.

use super::CliError;
use std::path::Path;

/// The folder of `path` exists, is a folder and takes a new file; `path` is not a folder.
pub fn check_file(flag: &str, path: &Path) -> Result<(), CliError> {
    let bad = |why: String| CliError::Usage(format!("{flag} {}: {why}", path.display()));
    if path.is_dir() {
        return Err(bad("is a folder; give a file name".into()));
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(bad(format!("{} is not a folder", dir.display()))),
        Err(e) => {
            return Err(bad(format!(
                "its folder {} cannot be used ({e}); create it first",
                dir.display()
            )));
        }
    }
    // Writable? Try what the writer will do: create a file beside it, then remove it.
    let probe = dir.join(format!(".moverctl-write-check-{}", std::process::id()));
    match std::fs::File::create(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(bad(format!(
            "cannot write in its folder {}: {e}",
            dir.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_wrong_folders_are_refused() {
        let t = tempfile::tempdir().unwrap();
        assert!(check_file("--metrics-file", &t.path().join("m.prom")).is_ok());
        let e = check_file("--metrics-file", &t.path().join("no/m.prom"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--metrics-file") && e.contains("create it first"),
            "{e}"
        );
        assert!(check_file("--metrics-file", t.path()).is_err());
        std::fs::write(t.path().join("f"), b"").unwrap();
        assert!(check_file("--metrics-file", &t.path().join("f/m.prom")).is_err());
        assert_eq!(
            std::fs::read_dir(t.path()).unwrap().count(),
            1,
            "no probe left"
        );
    }
}
