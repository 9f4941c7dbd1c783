// Embeds every providers/*.toml into the binary, so `moverctl plan` works with no files around it,
// and the version line's commit and features (`moverctl --version`).
use std::fmt::Write;
use std::path::PathBuf;

/// The commit being built: `MOVERCTL_GIT_COMMIT` (a container build has no .git), else
/// `git rev-parse`, else "unknown". Rebuilt when HEAD moves.
fn git_commit() -> String {
    println!("cargo:rerun-if-env-changed=MOVERCTL_GIT_COMMIT");
    if let Ok(c) = std::env::var("MOVERCTL_GIT_COMMIT")
        && !c.trim().is_empty()
    {
        return c.trim().to_string();
    }
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(std::env::var("CARGO_MANIFEST_DIR").unwrap())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    // Watch HEAD and the ref it names, so a new commit rebuilds the version line.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let dir = PathBuf::from(dir);
        println!("cargo:rerun-if-changed={}", dir.join("HEAD").display());
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"])
            && let Some(common) = git(&["rev-parse", "--git-common-dir"])
        {
            let common = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join(common);
            println!("cargo:rerun-if-changed={}", common.join(&r).display());
            println!(
                "cargo:rerun-if-changed={}",
                common.join("packed-refs").display()
            );
        }
    }
    git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_string())
}

/// What this build can do: the stores compiled in, the TLS stack, and any cargo features.
fn features() -> String {
    let mut cargo: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| {
            k.strip_prefix("CARGO_FEATURE_")
                .map(|f| f.to_ascii_lowercase().replace('_', "-"))
        })
        .collect();
    cargo.sort();
    let mut s = String::from("stores: s3 gcs azure local, tls: rustls");
    if !cargo.is_empty() {
        s.push_str(&format!(", features: {}", cargo.join(" ")));
    }
    s
}

fn main() {
    println!("cargo:rustc-env=MOVERCTL_GIT_COMMIT={}", git_commit());
    println!("cargo:rustc-env=MOVERCTL_FEATURES={}", features());
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("providers");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("providers/ exists")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    names.sort();
    let mut out = String::from("pub static EMBEDDED: &[(&str, &str)] = &[\n");
    for p in &names {
        println!("cargo:rerun-if-changed={}", p.display());
        let file = p.file_name().unwrap().to_string_lossy();
        writeln!(
            out,
            "    ({file:?}, include_str!({:?})),",
            p.display().to_string()
        )
        .unwrap();
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("embedded_providers.rs");
    std::fs::write(dest, out).unwrap();
}
