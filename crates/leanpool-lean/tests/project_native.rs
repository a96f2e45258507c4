//! The native `--project` path (issue 25): toolchain from the project's
//! `lean-toolchain` through elan, `LEAN_PATH` from `lake env`, the errors
//! of a project that is not built or whose toolchain is missing.
//!
//! TEST DOUBLES: no native Lean, elan or Lake can be installed on these
//! machines (see /work/shared/notes), so `elan`, `lake` and `lean` here are
//! small shell scripts written by the test that answer the few commands
//! `Project::resolve` runs (`elan toolchain list`, `elan which lean`,
//! `lake env printenv LEAN_PATH`, `lean --version`) the way the real tools
//! do. The WASM project path is tested on real Lean in the `leanpool`
//! crate's `projects_lean` test.
//!
//! One test function: it sets `PATH` for the whole process.

use leanpool_lean::project::{Project, ProjectError, ProjectSpec};
use leanpool_lean::{BackendKind, LeanCommand};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn script(dir: &Path, name: &str, body: &str) {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `elan`, `lake` and `lean` doubles in `bin`; the installed toolchains are
/// the lines of `bin/installed`.
fn doubles(bin: &Path) {
    let b = bin.display();
    script(
        bin,
        "elan",
        &format!(
            r#"case "$1 $2" in
  "toolchain list") cat {b}/installed ;;
  "which lean") echo {b}/lean ;;
  *) echo "elan double: unexpected $*" >&2; exit 9 ;;
esac"#
        ),
    );
    script(
        bin,
        "lake",
        r#"[ "$*" = "env printenv LEAN_PATH" ] || { echo "lake double: unexpected $*" >&2; exit 9; }
echo "$PWD/.lake/packages/mathlib/.lake/build/lib:$PWD/.lake/build/lib""#,
    );
    script(
        bin,
        "lean",
        r#"[ "$1" = "--version" ] && echo "Lean (version 4.12.0, x86_64-unknown-linux-gnu, commit dc2533473114, Release)""#,
    );
}

fn native_base() -> LeanCommand {
    LeanCommand {
        program: "lean".into(),
        args: vec![],
        env: vec![],
        cwd: None,
        backend: BackendKind::Native,
        version: None,
        source: "test".into(),
    }
}

const MANIFEST: &str = r#"{"version": "1.1.0", "packagesDir": ".lake/packages", "name": "judge",
  "packages": [{"url": "https://github.com/leanprover-community/mathlib4", "type": "git",
                "rev": "809c3fb3b5c8f5d7dace56e200b426187516535a", "name": "mathlib"}]}"#;

#[test]
fn native_project_through_elan_and_lake_doubles() {
    let bin = tempfile::tempdir().unwrap();
    doubles(bin.path());
    std::fs::write(
        bin.path().join("installed"),
        "leanprover/lean4:v4.28.0 (default)\n",
    )
    .unwrap();
    let proj = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(proj.path()).unwrap();
    let spec = ProjectSpec::parse(&format!("judge={}", root.display())).unwrap();
    let resolve = || Project::resolve(&spec, &native_base());

    refused_before_the_toolchain(&root, bin.path(), &resolve);
    toolchain_missing_then_not_built(&root, bin.path(), &resolve);
    built_project_resolves(&root, bin.path(), &resolve);
    // A failing tool is reported with its stderr.
    script(
        bin.path(),
        "lake",
        "echo 'error: manifest out of date' >&2; exit 1",
    );
    let e = resolve().unwrap_err().to_string();
    assert!(e.contains("manifest out of date"), "{e}");
}

/// No elan on PATH; not a Lake package; no `lean-toolchain`.
fn refused_before_the_toolchain(
    root: &Path,
    bin: &Path,
    resolve: &dyn Fn() -> Result<Project, ProjectError>,
) {
    // No elan on PATH.
    std::env::set_var("PATH", "/nonexistent-leanpool-bin");
    std::fs::write(root.join("lakefile.toml"), "name = \"judge\"\n").unwrap();
    std::fs::write(root.join("lean-toolchain"), "leanprover/lean4:v4.12.0\n").unwrap();
    let e = resolve().unwrap_err();
    assert!(matches!(e, ProjectError::NoElan { .. }), "{e}");
    std::env::set_var("PATH", format!("{}:/usr/bin:/bin", bin.display()));

    // Not a Lake package; then no lean-toolchain.
    std::fs::remove_file(root.join("lakefile.toml")).unwrap();
    assert!(matches!(
        resolve().unwrap_err(),
        ProjectError::NotLake { .. }
    ));
    std::fs::write(root.join("lakefile.toml"), "name = \"judge\"\n").unwrap();
    std::fs::remove_file(root.join("lean-toolchain")).unwrap();
    assert!(matches!(
        resolve().unwrap_err(),
        ProjectError::NoToolchainFile { .. }
    ));
}

/// The pinned toolchain is not installed (the error names the command);
/// once it is, the package is not built.
fn toolchain_missing_then_not_built(
    root: &Path,
    bin: &Path,
    resolve: &dyn Fn() -> Result<Project, ProjectError>,
) {
    std::fs::write(root.join("lean-toolchain"), "leanprover/lean4:v4.12.0\n").unwrap();
    let e = resolve().unwrap_err().to_string();
    assert!(
        e.contains("run `elan toolchain install leanprover/lean4:v4.12.0`"),
        "{e}"
    );
    std::fs::write(
        bin.join("installed"),
        "leanprover/lean4:v4.28.0 (default)\nleanprover/lean4:v4.12.0\n",
    )
    .unwrap();

    // Not built: no .lake (lake env would start fetching), then no oleans.
    let e = resolve().unwrap_err();
    assert!(matches!(e, ProjectError::NotBuilt { .. }), "{e}");
    assert!(
        e.to_string().contains("lake exe cache get && lake build"),
        "{e}"
    );
    std::fs::create_dir_all(root.join(".lake/build/lib/Judge")).unwrap();
    let e = resolve().unwrap_err();
    assert!(
        e.to_string().contains("no .olean file on its LEAN_PATH"),
        "{e}"
    );
}

/// Built: the toolchain's lean, lake's LEAN_PATH, Mathlib's revision plus
/// the digest of the project's own modules (which a rebuild changes).
fn built_project_resolves(
    root: &Path,
    bin: &Path,
    resolve: &dyn Fn() -> Result<Project, ProjectError>,
) {
    std::fs::create_dir_all(root.join(".lake/packages/mathlib/.lake/build/lib")).unwrap();
    std::fs::write(
        root.join(".lake/packages/mathlib/.lake/build/lib/Mathlib.olean"),
        b"m",
    )
    .unwrap();
    std::fs::write(root.join(".lake/build/lib/Judge/Basic.olean"), b"j").unwrap();
    std::fs::write(root.join("lake-manifest.json"), MANIFEST).unwrap();
    let p = resolve().unwrap();
    assert_eq!(p.command.program, bin.join("lean"));
    assert_eq!(
        p.command.lean_path().unwrap(),
        format!(
            "{r}/.lake/packages/mathlib/.lake/build/lib:{r}/.lake/build/lib",
            r = root.display()
        )
    );
    assert_eq!(
        p.command.version.as_deref(),
        Some("Lean (version 4.12.0, x86_64-unknown-linux-gnu, commit dc2533473114, Release)")
    );
    assert_eq!(p.command.cwd, None);
    let lib = p.library.unwrap();
    assert_eq!(lib.kind, "mathlib");
    assert_eq!(
        lib.mathlib_rev.as_deref(),
        Some("809c3fb3b5c8f5d7dace56e200b426187516535a")
    );
    assert_eq!(lib.olean_files, Some(1));
    // Rebuilding the project's own module changes its identity.
    std::fs::write(root.join(".lake/build/lib/Judge/Basic.olean"), b"J").unwrap();
    let lib2 = resolve().unwrap().library.unwrap();
    assert_ne!(lib2.oleans_sha256, lib.oleans_sha256);
}
