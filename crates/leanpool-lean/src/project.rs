//! A Lean project a daemon serves (issue 25): the one place that turns a
//! project directory into the Lean command its workers run, its Lean
//! version and the identity of its library, resolved once at start-up.
//!
//! The library a scorer or judge needs is pinned by *its* project, not by
//! leanpool's repository. A [`Project`] is a name, a root directory and:
//!
//! * **natively**: the toolchain named by the project's `lean-toolchain`
//!   (`elan which lean` run in the root; the toolchain must be installed),
//!   `LEAN_PATH` from `lake env printenv LEAN_PATH` run in the root (the
//!   project must be built: a `.lake/` directory and `.olean` files);
//! * **on the WASM backend** (one Lean, no elan or Lake): the backend's own
//!   command with `LEAN_PATH` = the core library followed by
//!   `ROOT/.lake/build/lib` when it exists, else `ROOT` (modules built with
//!   `lean --root=ROOT -o ROOT/Judge/Basic.olean ...`).
//!
//! Its library identity is Mathlib's revision from the root's
//! `lake-manifest.json` plus the digest of the project's own `.olean` files
//! (`ROOT/.lake/build/lib`) when it requires Mathlib, else the digest of
//! every `.olean` on its `LEAN_PATH` ([`crate::provenance`]). A project
//! that is not built, or whose toolchain is missing, is an error that says
//! which command to run. The sandbox's read rules follow from the command
//! (`LEAN_PATH` entries), so a project's workers read that project's
//! library only.

use crate::backend::{BackendKind, LeanCommand};
use crate::provenance::{self, LibraryIdentity};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The name of the project a daemon serves when none is configured (its
/// detected backend, as before projects existed).
pub const DEFAULT_PROJECT: &str = "default";

/// Longest project name (names are ASCII letters, digits, `_`, `-`, `.`).
pub const MAX_NAME_LEN: usize = 64;

/// How long one tool run at start-up (`lake env`, `elan which`, `lean
/// --version`) may take.
const TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// Why a project cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    /// `--project` / `[[project]]` is malformed.
    #[error("bad project {0}")]
    BadSpec(String),
    /// Two projects have one name.
    #[error("two projects are named {0:?}: give one of them another name (`--project NAME=DIR`)")]
    Duplicate(String),
    /// The root is not a directory.
    #[error("project {name}: {dir} is not a directory")]
    NotADirectory {
        /// The project's name.
        name: String,
        /// Its root.
        dir: PathBuf,
    },
    /// Natively a project must be a Lake project.
    #[error("project {name}: {dir} has no lakefile.lean or lakefile.toml (a native project is a Lake package)")]
    NotLake {
        /// The project's name.
        name: String,
        /// Its root.
        dir: PathBuf,
    },
    /// No `lean-toolchain` file in the root.
    #[error("project {name}: {dir}/lean-toolchain is missing: write the toolchain the project is pinned to there (e.g. `leanprover/lean4:v4.28.0`)")]
    NoToolchainFile {
        /// The project's name.
        name: String,
        /// Its root.
        dir: PathBuf,
    },
    /// elan is not on `PATH`.
    #[error("project {name}: natively a project's toolchain comes from its lean-toolchain through elan, and `elan` (or its `lake`) is not on PATH: install elan (https://github.com/leanprover/elan) and `source ~/.elan/env`")]
    NoElan {
        /// The project's name.
        name: String,
    },
    /// The pinned toolchain is not installed.
    #[error("project {name}: toolchain {toolchain} (from {dir}/lean-toolchain) is not installed: run `elan toolchain install {toolchain}`")]
    ToolchainMissing {
        /// The project's name.
        name: String,
        /// Its root.
        dir: PathBuf,
        /// The toolchain it names.
        toolchain: String,
    },
    /// The project has not been built.
    #[error("project {name}: {dir} is not built ({why}): run {command}")]
    NotBuilt {
        /// The project's name.
        name: String,
        /// Its root.
        dir: PathBuf,
        /// What is missing.
        why: String,
        /// What to run.
        command: String,
    },
    /// A tool run at start-up failed.
    #[error("project {name}: `{tool}` in {dir} failed: {msg}")]
    Tool {
        /// The project's name.
        name: String,
        /// Its root.
        dir: PathBuf,
        /// The command line.
        tool: String,
        /// How it failed (exit status, stderr).
        msg: String,
    },
    /// The project's library could not be identified.
    #[error("project {name}: cannot identify its library: {source}")]
    Library {
        /// The project's name.
        name: String,
        /// Why.
        source: provenance::ProvenanceError,
    },
}

/// A project as configured: a name and a root directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectSpec {
    /// The name requests use (`project` param).
    pub name: String,
    /// The project's root directory; `None`: the backend's own library
    /// (what a daemon without projects serves).
    pub root: Option<PathBuf>,
}

impl ProjectSpec {
    /// `NAME=DIR`, `DIR` (named after its last component), or `NAME=`
    /// (the backend's own library under that name).
    pub fn parse(arg: &str) -> Result<ProjectSpec, ProjectError> {
        let (name, dir) = match arg.split_once('=') {
            Some((n, d)) => (Some(n.to_string()), d),
            None => (None, arg),
        };
        let root = (!dir.is_empty()).then(|| PathBuf::from(dir));
        let name = match (name, &root) {
            (Some(n), _) => n,
            (None, Some(r)) => std::path::absolute(r)
                .ok()
                .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
                .unwrap_or_default(),
            (None, None) => {
                return Err(ProjectError::BadSpec(format!(
                    "{arg:?}: expected DIR, NAME=DIR or NAME="
                )))
            }
        };
        ProjectSpec::new(name, root)
    }

    /// A spec with a checked name.
    pub fn new(name: String, root: Option<PathBuf>) -> Result<ProjectSpec, ProjectError> {
        check_name(&name)?;
        Ok(ProjectSpec { name, root })
    }
}

/// Refuses names that are empty, too long, or not ASCII letters, digits,
/// `_`, `-`, `.`.
pub fn check_name(name: &str) -> Result<(), ProjectError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(ProjectError::BadSpec(format!(
            "name {name:?}: 1-{MAX_NAME_LEN} ASCII letters, digits, `_`, `-` or `.` (use NAME=DIR)"
        )))
    }
}

/// Refuses two specs with one name.
pub fn check_unique(specs: &[ProjectSpec]) -> Result<(), ProjectError> {
    for (i, s) in specs.iter().enumerate() {
        if specs[..i].iter().any(|t| t.name == s.name) {
            return Err(ProjectError::Duplicate(s.name.clone()));
        }
    }
    Ok(())
}

/// A project, resolved: what its workers run and what they load.
#[derive(Debug, Clone)]
pub struct Project {
    /// The name requests use.
    pub name: String,
    /// The root directory (canonical); `None` for the daemon's own backend
    /// ([`Project::from_backend`]).
    pub root: Option<PathBuf>,
    /// How its workers start (program, `LEAN_PATH`, version).
    pub command: LeanCommand,
    /// Its library's identity, or why it has none (only a backend without
    /// a project may lack one).
    pub library: Result<LibraryIdentity, String>,
}

impl Project {
    /// The daemon's own backend as a project (no `--project`): the
    /// library identified as before (`provenance::library_identity`).
    /// Blocking (hashes the library).
    pub fn from_backend(name: &str, command: LeanCommand) -> Project {
        let library = provenance::library_identity(&command).map_err(|e| e.to_string());
        Project {
            name: name.to_string(),
            root: None,
            command,
            library,
        }
    }

    /// Resolves `spec` on the backend `base` ([`LeanCommand::detect`]'s):
    /// natively through elan and Lake, on WASM by extending `LEAN_PATH`.
    /// Blocking (runs `lake`, `elan`, `lean --version`; hashes oleans).
    pub fn resolve(spec: &ProjectSpec, base: &LeanCommand) -> Result<Project, ProjectError> {
        let name = spec.name.clone();
        let Some(dir) = &spec.root else {
            return Ok(Project::from_backend(&name, base.clone()));
        };
        let root = std::fs::canonicalize(dir)
            .ok()
            .filter(|p| p.is_dir())
            .ok_or_else(|| ProjectError::NotADirectory {
                name: name.clone(),
                dir: dir.clone(),
            })?;
        let command = match base.backend {
            BackendKind::Native => native_command(&name, &root)?,
            BackendKind::Wasm => wasm_command(&name, &root, base)?,
        };
        let library = identity(&name, &root, &command)?;
        Ok(Project {
            name,
            root: Some(root),
            command,
            library: Ok(library),
        })
    }
}

/// The WASM backend's command with the project's build directory after
/// the core library on `LEAN_PATH`.
fn wasm_command(name: &str, root: &Path, base: &LeanCommand) -> Result<LeanCommand, ProjectError> {
    let build = root.join(".lake/build/lib");
    let dir = if build.is_dir() {
        build
    } else {
        root.to_path_buf()
    };
    let (_, n) = provenance::olean_digest(std::slice::from_ref(&dir)).map_err(|source| {
        ProjectError::Library {
            name: name.into(),
            source,
        }
    })?;
    if n == 0 {
        return Err(ProjectError::NotBuilt {
            name: name.into(),
            dir: root.into(),
            why: format!("no .olean file under {}", dir.display()),
            command: format!(
                "`lake build` in {} (WASM: `lean --root={} -o {}/M.olean {}/M.lean` per module, with LEAN_PATH = the core library)",
                root.display(), root.display(), root.display(), root.display()
            ),
        });
    }
    let mut paths: Vec<PathBuf> = base
        .lean_path()
        .map(|lp| std::env::split_paths(&lp).collect())
        .unwrap_or_default();
    paths.push(dir);
    let lean_path = std::env::join_paths(&paths)
        .map_err(|e| ProjectError::BadSpec(format!("{name}: {e}")))?
        .to_string_lossy()
        .into_owned();
    let mut command = base.clone();
    command.env.retain(|(k, _)| k != "LEAN_PATH");
    command.env.push(("LEAN_PATH".into(), lean_path));
    command.env.sort();
    command.source = format!("{} + project {name} ({})", base.source, root.display());
    Ok(command)
}

/// The native command of a Lake project: its toolchain's `lean` (through
/// elan), `LEAN_PATH` from `lake env`, the version that `lean` reports.
fn native_command(name: &str, root: &Path) -> Result<LeanCommand, ProjectError> {
    if !root.join("lakefile.lean").is_file() && !root.join("lakefile.toml").is_file() {
        return Err(ProjectError::NotLake {
            name: name.into(),
            dir: root.into(),
        });
    }
    let toolchain = std::fs::read_to_string(root.join("lean-toolchain"))
        .ok()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| ProjectError::NoToolchainFile {
            name: name.into(),
            dir: root.into(),
        })?;
    let elan =
        crate::backend::which("elan").ok_or_else(|| ProjectError::NoElan { name: name.into() })?;
    let run = |program: &Path, args: &[&str]| run_tool(name, root, program, args);
    let installed = run(&elan, &["toolchain", "list"])?;
    if !installed
        .lines()
        .any(|l| l.split_whitespace().next() == Some(toolchain.as_str()))
    {
        return Err(ProjectError::ToolchainMissing {
            name: name.into(),
            dir: root.into(),
            toolchain,
        });
    }
    let not_built = |why: String| {
        ProjectError::NotBuilt {
        name: name.into(),
        dir: root.into(),
        why,
        command: format!(
            "`lake exe cache get && lake build` in {} (`lake build` alone if it does not require Mathlib)",
            root.display()
        ),
    }
    };
    // `lake env` in a project never built would start fetching and
    // building its dependencies: refuse before running it.
    if !root.join(".lake").is_dir() {
        return Err(not_built("no .lake directory".into()));
    }
    // elan's `lake` proxy, run in the root, picks the project's toolchain.
    let lake =
        crate::backend::which("lake").ok_or_else(|| ProjectError::NoElan { name: name.into() })?;
    let lean_path = run(&lake, &["env", "printenv", "LEAN_PATH"])?
        .trim()
        .to_string();
    let roots: Vec<PathBuf> = std::env::split_paths(&lean_path).collect();
    let (_, n) = provenance::olean_digest(&roots).map_err(|source| ProjectError::Library {
        name: name.into(),
        source,
    })?;
    if n == 0 {
        return Err(not_built(format!(
            "no .olean file on its LEAN_PATH {lean_path:?}"
        )));
    }
    let lean = PathBuf::from(run(&elan, &["which", "lean"])?.trim());
    let version = run(&lean, &["--version"])?
        .lines()
        .find(|l| l.starts_with("Lean "))
        .map(str::to_string);
    Ok(LeanCommand {
        program: lean,
        args: vec![],
        env: vec![("LEAN_PATH".into(), lean_path)],
        cwd: None,
        backend: BackendKind::Native,
        version,
        source: format!("project {name} ({}): {toolchain}", root.display()),
    })
}

/// Mathlib's revision plus the digest of the project's own modules when it
/// requires Mathlib; else the digest of its whole `LEAN_PATH`.
fn identity(
    name: &str,
    root: &Path,
    command: &LeanCommand,
) -> Result<LibraryIdentity, ProjectError> {
    let err = |source| ProjectError::Library {
        name: name.into(),
        source,
    };
    let manifest = root.join("lake-manifest.json");
    if let Some(rev) = provenance::mathlib_rev(&manifest) {
        let own = root.join(".lake/build/lib");
        let (digest, n) = provenance::olean_digest(std::slice::from_ref(&own)).map_err(err)?;
        return Ok(LibraryIdentity {
            kind: "mathlib".into(),
            mathlib_rev: Some(rev),
            manifest: Some(manifest.display().to_string()),
            oleans_sha256: (n > 0).then_some(digest),
            olean_files: (n > 0).then_some(n),
        });
    }
    let lean_path = command.lean_path().unwrap_or_default();
    provenance::oleans_identity(&lean_path).map_err(err)
}

/// Runs `program args` in `root` (stdin closed) and returns its stdout;
/// a failure or a run past [`TOOL_TIMEOUT`] is [`ProjectError::Tool`].
fn run_tool(
    name: &str,
    root: &Path,
    program: &Path,
    args: &[&str],
) -> Result<String, ProjectError> {
    let fail = |msg: String| ProjectError::Tool {
        name: name.into(),
        dir: root.into(),
        tool: format!("{} {}", program.display(), args.join(" ")),
        msg,
    };
    let mut child = std::process::Command::new(program)
        .args(args)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| fail(e.to_string()))?;
    let end = Instant::now() + TOOL_TIMEOUT;
    loop {
        match child.try_wait().map_err(|e| fail(e.to_string()))? {
            Some(_) => break,
            None if Instant::now() > end => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(fail(format!(
                    "no answer within {} s",
                    TOOL_TIMEOUT.as_secs()
                )));
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    let out = child.wait_with_output().map_err(|e| fail(e.to_string()))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(stdout)
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        Err(fail(format!("{}: {}", out.status, stderr.trim())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        let s = ProjectSpec::parse("judge=/tmp/x").unwrap();
        assert_eq!(
            (s.name.as_str(), s.root.as_deref()),
            ("judge", Some(Path::new("/tmp/x")))
        );
        let s = ProjectSpec::parse("core=").unwrap();
        assert_eq!((s.name.as_str(), s.root), ("core", None));
        let s = ProjectSpec::parse("/srv/sair-judge").unwrap();
        assert_eq!(s.name, "sair-judge");
        for bad in ["", "a b=/x", "=/x", "=", "ü=/x"] {
            assert!(ProjectSpec::parse(bad).is_err(), "{bad:?}");
        }
        let two = [
            ProjectSpec::parse("a=/x").unwrap(),
            ProjectSpec::parse("a=/y").unwrap(),
        ];
        assert!(matches!(check_unique(&two), Err(ProjectError::Duplicate(n)) if n == "a"));
    }

    fn wasm_base(core: &Path) -> LeanCommand {
        LeanCommand {
            program: "/bin/true".into(),
            args: vec![],
            env: vec![("LEAN_PATH".into(), core.display().to_string())],
            cwd: None,
            backend: BackendKind::Wasm,
            version: Some("Lean (version 4.28.0-pre)".into()),
            source: "test".into(),
        }
    }

    #[test]
    fn wasm_project_follows_the_core_library() {
        let core = tempfile::tempdir().unwrap();
        std::fs::write(core.path().join("Init.olean"), b"core").unwrap();
        let proj = tempfile::tempdir().unwrap();
        let spec = ProjectSpec::new("judge".into(), Some(proj.path().into())).unwrap();
        // Not built: no .olean anywhere.
        let e = Project::resolve(&spec, &wasm_base(core.path())).unwrap_err();
        assert!(matches!(e, ProjectError::NotBuilt { .. }), "{e}");
        assert!(e.to_string().contains("lean --root="), "{e}");
        // Built in place (`lean -o ROOT/Judge/Basic.olean`): ROOT follows core.
        std::fs::create_dir_all(proj.path().join("Judge")).unwrap();
        std::fs::write(proj.path().join("Judge/Basic.olean"), b"judge").unwrap();
        let p = Project::resolve(&spec, &wasm_base(core.path())).unwrap();
        let root = std::fs::canonicalize(proj.path()).unwrap();
        let want = format!("{}:{}", core.path().display(), root.display());
        assert_eq!(p.command.lean_path().as_deref(), Some(want.as_str()));
        let lib = p.library.unwrap();
        assert_eq!((lib.kind.as_str(), lib.olean_files), ("oleans", Some(2)));
        // A Lake build directory wins over the root.
        std::fs::create_dir_all(root.join(".lake/build/lib/Judge")).unwrap();
        std::fs::write(root.join(".lake/build/lib/Judge/Basic.olean"), b"j2").unwrap();
        let p2 = Project::resolve(&spec, &wasm_base(core.path())).unwrap();
        assert!(p2.command.lean_path().unwrap().ends_with(".lake/build/lib"));
        assert_ne!(p2.library.unwrap().oleans_sha256, lib.oleans_sha256);
    }

    /// The sandbox's read rules follow each project's `LEAN_PATH`: the
    /// judge project's workers may read its root, the core library's may
    /// not (the real-Lean check: `leanpool`'s `projects_lean`).
    #[test]
    fn sandbox_reads_follow_the_project() {
        use crate::sandbox::{Plan, SandboxConfig, SandboxMode};
        let core = tempfile::tempdir().unwrap();
        std::fs::write(core.path().join("Init.olean"), b"core").unwrap();
        let proj = tempfile::tempdir().unwrap();
        std::fs::write(proj.path().join("Judge.olean"), b"judge").unwrap();
        let root = std::fs::canonicalize(proj.path()).unwrap();
        let base = wasm_base(core.path());
        let judge = ProjectSpec::new("judge".into(), Some(proj.path().into())).unwrap();
        let plain = ProjectSpec::new("core".into(), None).unwrap();
        let cfg = SandboxConfig {
            mode: SandboxMode::BestEffort,
            ..SandboxConfig::default()
        };
        let reads = |spec: &ProjectSpec| {
            let cmd = Project::resolve(spec, &base).unwrap().command;
            Plan::for_abi(&cmd, &cfg, 7).unwrap().read
        };
        let (j, c) = (reads(&judge), reads(&plain));
        assert!(j.contains(&root), "{j:?}");
        assert!(
            !c.iter()
                .any(|p| root.starts_with(p) || p.starts_with(&root)),
            "{c:?}"
        );
        assert!(c.contains(&core.path().to_path_buf()), "{c:?}");
    }

    #[test]
    fn missing_root_is_named() {
        let core = tempfile::tempdir().unwrap();
        let spec = ProjectSpec::new("x".into(), Some("/nonexistent/leanpool-proj".into())).unwrap();
        let e = Project::resolve(&spec, &wasm_base(core.path())).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/leanpool-proj"), "{e}");
    }
}
