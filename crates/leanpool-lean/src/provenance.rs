//! What library a backend's workers load, identified so that a scorer can
//! record with each run exactly what judged it (`status`, `doctor`).
//!
//! - Natively (a Lake project with Mathlib): Mathlib's git revision from
//!   the project's `lake-manifest.json`.
//! - Otherwise (the WASM backend's own library: Init, Std, Lean, Lake): a
//!   digest of the olean set on `LEAN_PATH`, SHA-256 over the sorted list
//!   of (path relative to its `LEAN_PATH` entry, size, SHA-256 of the
//!   content) of every `.olean` file. Two installs with the same digest load
//!   byte-identical libraries. Hashing ~240 MB takes about a second, so it
//!   is computed once (at daemon start) and cached by the caller.

use crate::backend::{BackendKind, LeanCommand};
pub use leanpool_protocol::LibraryIdentity;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
/// Why the library's identity could not be computed.
pub enum ProvenanceError {
    #[error("no LEAN_PATH to identify the library by")]
    /// The command has no `LEAN_PATH`.
    NoLeanPath,
    #[error("no .olean files under LEAN_PATH {0}")]
    /// `LEAN_PATH` (given) holds no `.olean` file.
    NoOleans(String),
    #[error("{path}: {msg}")]
    /// A file or directory of the library could not be read.
    Io {
        /// What could not be read.
        path: String,
        /// The error.
        msg: String,
    },
}

/// Identifies `command`'s library: a native backend with a
/// `lake-manifest.json` naming Mathlib reports its revision; anything else
/// the digest of its olean set. Blocking (reads files).
pub fn library_identity(command: &LeanCommand) -> Result<LibraryIdentity, ProvenanceError> {
    if command.backend == BackendKind::Native {
        if let Some((manifest, rev)) =
            find_manifest(command).and_then(|m| mathlib_rev(&m).map(|r| (m, r)))
        {
            return Ok(LibraryIdentity {
                kind: "mathlib".into(),
                mathlib_rev: Some(rev),
                manifest: Some(manifest.display().to_string()),
                oleans_sha256: None,
                olean_files: None,
            });
        }
    }
    let lean_path = command.lean_path().ok_or(ProvenanceError::NoLeanPath)?;
    let identity = oleans_identity(&lean_path)?;
    if identity.olean_files == Some(0) {
        return Err(ProvenanceError::NoOleans(lean_path));
    }
    Ok(identity)
}

/// The identity of the library on `lean_path` (directories as `LEAN_PATH`
/// lists them) by its `.olean`s alone: their digest and how many there
/// are (kind `oleans`). Blocking (reads every `.olean`).
pub(crate) fn oleans_identity(lean_path: &str) -> Result<LibraryIdentity, ProvenanceError> {
    let roots: Vec<PathBuf> = std::env::split_paths(lean_path).collect();
    let (digest, n) = olean_digest(&roots)?;
    Ok(LibraryIdentity {
        kind: "oleans".into(),
        mathlib_rev: None,
        manifest: None,
        oleans_sha256: Some(digest),
        olean_files: Some(n),
    })
}

/// `lake-manifest.json` of the Lake project the backend runs in: its
/// `cwd`, else the current directory, or an ancestor.
fn find_manifest(command: &LeanCommand) -> Option<PathBuf> {
    let mut starts = vec![];
    if let Some(c) = &command.cwd {
        starts.push(c.clone());
    }
    if let Ok(c) = std::env::current_dir() {
        starts.push(c);
    }
    starts.iter().find_map(|s| {
        s.ancestors()
            .map(|d| d.join("lake-manifest.json"))
            .find(|p| p.is_file())
    })
}

/// The `rev` of the package named `mathlib` in a Lake manifest.
pub fn mathlib_rev(manifest: &Path) -> Option<String> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(manifest).ok()?).ok()?;
    v.get("packages")?
        .as_array()?
        .iter()
        .find(|p| p.get("name").and_then(|n| n.as_str()) == Some("mathlib"))?
        .get("rev")?
        .as_str()
        .map(str::to_string)
}

/// SHA-256 over the sorted `"<relative path>\t<size>\t<sha256 hex>\n"`
/// lines of every `.olean` under `roots` (a file found under two roots
/// counts under each: both are on the search path), and how many files.
pub fn olean_digest(roots: &[PathBuf]) -> Result<(String, u64), ProvenanceError> {
    let io = |p: &Path, e: std::io::Error| ProvenanceError::Io {
        path: p.display().to_string(),
        msg: e.to_string(),
    };
    let mut lines: Vec<String> = vec![];
    for (i, root) in roots.iter().enumerate() {
        if !root.is_dir() {
            continue;
        }
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).map_err(|e| io(&dir, e))? {
                let path = entry.map_err(|e| io(&dir, e))?.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "olean") {
                    let mut f = std::fs::File::open(&path).map_err(|e| io(&path, e))?;
                    let mut h = Sha256::new();
                    let mut buf = vec![0u8; 1 << 16];
                    let mut size = 0u64;
                    loop {
                        let n = f.read(&mut buf).map_err(|e| io(&path, e))?;
                        if n == 0 {
                            break;
                        }
                        size += n as u64;
                        h.update(&buf[..n]);
                    }
                    let rel = path
                        .strip_prefix(root)
                        .unwrap_or(&path)
                        .to_string_lossy()
                        .into_owned();
                    lines.push(format!("{i}:{rel}\t{size}\t{}\n", hex(&h.finalize())));
                }
            }
        }
    }
    lines.sort();
    let mut h = Sha256::new();
    for l in &lines {
        h.update(l.as_bytes());
    }
    Ok((hex(&h.finalize()), lines.len() as u64))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_depends_on_content_names_and_nothing_else() {
        let a = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(a.path().join("Init/Data")).unwrap();
        std::fs::write(a.path().join("Init.olean"), b"one").unwrap();
        std::fs::write(a.path().join("Init/Data/List.olean"), b"two").unwrap();
        std::fs::write(a.path().join("Init/Data/List.ilean"), b"not hashed").unwrap();
        let (d1, n) = olean_digest(&[a.path().to_path_buf()]).unwrap();
        assert_eq!(n, 2);
        assert_eq!(d1.len(), 64);
        // Same files elsewhere: same digest (paths are relative).
        let b = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(b.path().join("Init/Data")).unwrap();
        std::fs::write(b.path().join("Init/Data/List.olean"), b"two").unwrap();
        std::fs::write(b.path().join("Init.olean"), b"one").unwrap();
        assert_eq!(olean_digest(&[b.path().to_path_buf()]).unwrap().0, d1);
        // Non-olean files do not count.
        std::fs::write(a.path().join("Init/Data/List.ilean"), b"changed").unwrap();
        assert_eq!(olean_digest(&[a.path().to_path_buf()]).unwrap().0, d1);
        // One changed byte, or a renamed file, changes it.
        std::fs::write(b.path().join("Init.olean"), b"onE").unwrap();
        assert_ne!(olean_digest(&[b.path().to_path_buf()]).unwrap().0, d1);
        std::fs::write(b.path().join("Init.olean"), b"one").unwrap();
        std::fs::rename(
            b.path().join("Init/Data/List.olean"),
            b.path().join("Init/Data/Lisp.olean"),
        )
        .unwrap();
        assert_ne!(olean_digest(&[b.path().to_path_buf()]).unwrap().0, d1);
    }

    #[test]
    fn mathlib_rev_from_a_lake_manifest() {
        let d = tempfile::tempdir().unwrap();
        let m = d.path().join("lake-manifest.json");
        std::fs::write(
            &m,
            r#"{"version": "1.1.0", "packagesDir": ".lake/packages", "packages": [
                {"url": "https://example.invalid/plausible", "type": "git", "rev": "aaa", "name": "plausible"},
                {"url": "https://example.invalid/mathlib4", "type": "git", "rev": "0123abcd", "name": "mathlib"}],
              "name": "proj"}"#,
        )
        .unwrap();
        assert_eq!(mathlib_rev(&m).as_deref(), Some("0123abcd"));
        std::fs::write(&m, r#"{"packages": []}"#).unwrap();
        assert_eq!(mathlib_rev(&m), None);
    }

    #[test]
    fn wasm_backend_is_identified_by_its_oleans() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("Init.olean"), b"x").unwrap();
        let cmd = LeanCommand {
            program: "/bin/true".into(),
            args: vec![],
            env: vec![("LEAN_PATH".into(), d.path().display().to_string())],
            cwd: None,
            backend: BackendKind::Wasm,
            version: None,
            source: "test".into(),
        };
        let id = library_identity(&cmd).unwrap();
        assert_eq!(id.kind, "oleans");
        assert_eq!(id.olean_files, Some(1));
        let empty = tempfile::tempdir().unwrap();
        let cmd = LeanCommand {
            env: vec![("LEAN_PATH".into(), empty.path().display().to_string())],
            ..cmd
        };
        assert!(matches!(
            library_identity(&cmd),
            Err(ProvenanceError::NoOleans(_))
        ));
    }
}
