//! Which Lean to run, and how: the backend abstraction.
//!
//! A worker is "some program that speaks Lean's file-worker LSP on stdio
//! when given `--worker`". Natively that is `lean --worker`; here it is
//! `node <patched lean.js> --worker` (Lean compiled to WebAssembly, see
//! `scripts/setup`). Everything else in leanpool only sees a
//! [`LeanCommand`], so the two are interchangeable.

#![deny(missing_docs)]

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which Lean build runs the workers (a wire type: `status` reports it).
pub use leanpool_protocol::BackendKind;

/// Why no usable Lean command could be found or run.
#[derive(Debug, thiserror::Error)]
pub enum LeanError {
    /// Neither a backend description nor a `lean` on `PATH` (the text
    /// says where it looked).
    #[error("no Lean found: {0}")]
    NotFound(String),
    /// A `backend.json` that cannot be used.
    #[error("bad backend description {path}: {msg}")]
    BadBackendJson {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        msg: String,
    },
    /// `lean --version` could not be run or gave no version.
    #[error("running `{program} --version` failed: {msg}")]
    Version {
        /// The program that was run.
        program: String,
        /// How it failed.
        msg: String,
    },
    /// An I/O error while looking.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// How to start Lean. `args` come before the mode flag (`--worker`,
/// `--version`), so a WASM backend puts `lean.js` (and any Node flags
/// before it) there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeanCommand {
    /// The executable (`lean`, or `node` for the WASM backend).
    pub program: PathBuf,
    /// Arguments before the mode flag.
    pub args: Vec<String>,
    /// Added to the inherited environment (sorted, for stable output).
    pub env: Vec<(String, String)>,
    /// Working directory of the process; the caller's when `None`.
    pub cwd: Option<PathBuf>,
    /// Native or WASM.
    pub backend: BackendKind,
    /// `lean --version` as recorded by set-up (running it on the WASM
    /// backend costs ~20 s, so `doctor` prefers the recorded one).
    pub version: Option<String>,
    /// Where this description came from, for `doctor`.
    pub source: String,
}

/// `.lean-wasm/backend.json`, written by `scripts/setup`.
#[derive(Debug, Deserialize)]
struct BackendJson {
    backend: String,
    program: PathBuf,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    cwd: Option<PathBuf>,
    #[serde(default)]
    version: Option<String>,
    /// What selects worker mode; leanpool always appends `--worker`, so
    /// anything else is refused rather than silently ignored.
    #[serde(default)]
    mode_args: Option<Vec<String>>,
}

const WASM_DIR: &str = ".lean-wasm";
/// Where `scripts/setup` describes a native (elan) Lean.
const NATIVE_DIR: &str = ".lean-native";

impl LeanCommand {
    /// Resolution order: `LEANPOOL_BACKEND_JSON=<file>`; then
    /// `LEANPOOL_BACKEND=native|wasm`; otherwise native (setup's
    /// `.lean-native/backend.json` if found, else `lean` on `PATH`), else
    /// the WASM backend's `backend.json`, looked up in
    /// `LEANPOOL_WASM_DIR`, then in `.lean-wasm/` of the current directory
    /// or any parent, then of the executable's directory or any parent.
    pub fn detect() -> Result<LeanCommand, LeanError> {
        if let Some(path) = std::env::var_os("LEANPOOL_BACKEND_JSON") {
            return Self::from_backend_json(Path::new(&path));
        }
        match std::env::var("LEANPOOL_BACKEND").ok().as_deref() {
            Some("native") => Self::native().ok_or_else(|| {
                LeanError::NotFound("LEANPOOL_BACKEND=native but no `lean` on PATH".into())
            }),
            Some("wasm") => Self::wasm(),
            Some(other) => Err(LeanError::NotFound(format!(
                "LEANPOOL_BACKEND={other:?}: expected `native` or `wasm`"
            ))),
            None => match Self::native() {
                Some(cmd) => Ok(cmd),
                None => Self::wasm(),
            },
        }
    }

    fn wasm() -> Result<LeanCommand, LeanError> {
        match find_backend_json() {
            Some(path) => Self::from_backend_json(&path),
            None => Err(LeanError::NotFound(format!(
                "no `lean` on PATH and no {WASM_DIR}/backend.json (set LEANPOOL_WASM_DIR, or run scripts/setup)"
            ))),
        }
    }

    /// `lean` from `PATH`. `LEAN_PATH` is inherited when set; otherwise it
    /// is taken from `lake env` of the enclosing Lake project, if that
    /// project has been built (`.lake/` exists — `lake env` on a fresh
    /// project would start fetching dependencies).
    fn native() -> Option<LeanCommand> {
        // What `scripts/setup` recorded (its LEAN_PATH comes from `lake env`
        // of this project, so Mathlib is found) wins over a bare `lean`.
        if let Some(cmd) =
            find_setup_json(NATIVE_DIR).and_then(|p| Self::from_backend_json(&p).ok())
        {
            if cmd.backend == BackendKind::Native {
                return Some(cmd);
            }
        }
        let program = which("lean")?;
        let mut env = Vec::new();
        if std::env::var_os("LEAN_PATH").is_none() {
            if let Some(lean_path) = lake_lean_path() {
                env.push(("LEAN_PATH".to_string(), lean_path));
            }
        }
        Some(LeanCommand {
            program,
            args: vec![],
            env,
            cwd: None,
            backend: BackendKind::Native,
            version: None,
            source: "`lean` on PATH".into(),
        })
    }

    /// Reads a backend description. Relative paths in it are relative to
    /// the file's directory.
    pub fn from_backend_json(path: &Path) -> Result<LeanCommand, LeanError> {
        let bad = |msg: String| LeanError::BadBackendJson {
            path: path.to_path_buf(),
            msg,
        };
        let raw = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        let j: BackendJson = serde_json::from_str(&raw).map_err(|e| bad(e.to_string()))?;
        let backend = match j.backend.as_str() {
            "wasm" => BackendKind::Wasm,
            "native" => BackendKind::Native,
            other => return Err(bad(format!("unknown backend {other:?}"))),
        };
        if let Some(m) = &j.mode_args {
            if m != &["--worker"] {
                return Err(bad(format!(
                    "mode_args {m:?} not supported (leanpool appends `--worker`)"
                )));
            }
        }
        let base = path.parent().unwrap_or(Path::new("."));
        let program = if j.program.is_absolute() || j.program.components().count() == 1 {
            j.program
        } else {
            base.join(j.program)
        };
        Ok(LeanCommand {
            program,
            args: j.args,
            env: j.env.into_iter().collect(),
            cwd: j.cwd.map(|c| base.join(c)),
            backend,
            version: j.version.map(|v| v.trim().to_string()),
            source: path.display().to_string(),
        })
    }

    /// The library search path the worker will see.
    pub fn lean_path(&self) -> Option<String> {
        self.env
            .iter()
            .find(|(k, _)| k == "LEAN_PATH")
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var("LEAN_PATH").ok())
    }

    /// A command line with `mode_args` appended, in its own process group
    /// so that killing it takes any helpers with it, and SIGKILLed by the
    /// kernel if its parent dies.
    ///
    /// The death signal matters when the daemon itself is SIGKILLed (or
    /// crashes): nothing is left to kill the group, and a Lean worker busy
    /// elaborating does not notice its closed stdin; measured on WASM Lean,
    /// such an orphan kept its 3.4 GB for minutes. Linux sends the signal
    /// when the *thread* that spawned the child ends, so spawn the command
    /// with [`crate::proc::spawn`] (a thread that lives as long as the
    /// process), not `Command::spawn` on whatever thread the caller is on.
    pub fn command(&self, mode_args: &[&str]) -> tokio::process::Command {
        let mut c = tokio::process::Command::new(&self.program);
        c.args(&self.args)
            .args(mode_args)
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        if let Some(cwd) = &self.cwd {
            c.current_dir(cwd);
        }
        c.process_group(0);
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: between fork and exec only async-signal-safe calls
        // (prctl, getppid, _exit), no allocation.
        unsafe {
            c.pre_exec(move || {
                if libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent may have died before the prctl: then the signal
                // will never come, so give up now.
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        c
    }

    /// Runs `--version` (ignores the recorded version).
    pub async fn run_version(&self, timeout: Duration) -> Result<String, LeanError> {
        let err = |msg: String| LeanError::Version {
            program: self.program.display().to_string(),
            msg,
        };
        let mut c = self.command(&["--version"]);
        c.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        c.kill_on_drop(true);
        let child = crate::proc::spawn(c).map_err(|e| err(e.to_string()))?;
        let out = tokio::time::timeout(timeout, child.wait_with_output())
            .await
            .map_err(|_| err(format!("no answer within {} s", timeout.as_secs())))?
            .map_err(|e| err(e.to_string()))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        // The WASM build prints `[DEBUG:...]` lines around the answer.
        let line = stdout
            .lines()
            .find(|l| l.starts_with("Lean "))
            .map(str::to_string);
        match (out.status.success(), line) {
            (true, Some(l)) => Ok(l),
            (_, _) => Err(err(format!(
                "exit {:?}, stdout {:?}, stderr {:?}",
                out.status.code(),
                tail(&stdout, 300),
                tail(&String::from_utf8_lossy(&out.stderr), 300)
            ))),
        }
    }

    /// The recorded version if there is one, else runs `--version`.
    pub async fn version(&self, timeout: Duration) -> Result<String, LeanError> {
        match &self.version {
            Some(v) => Ok(v.clone()),
            None => self.run_version(timeout).await,
        }
    }
}

fn tail(s: &str, max: usize) -> &str {
    let mut start = s.len().saturating_sub(max);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

pub(crate) fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            p.metadata()
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

fn lake_lean_path() -> Option<String> {
    let cwd = std::env::current_dir().ok()?;
    let root = cwd
        .ancestors()
        .find(|d| d.join("lakefile.lean").is_file() || d.join("lakefile.toml").is_file())?;
    if !root.join(".lake").is_dir() {
        return None;
    }
    let out = std::process::Command::new(which("lake")?)
        .args(["env", "printenv", "LEAN_PATH"])
        .current_dir(root)
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

/// `backend.json` of the WASM install, by the lookup order of
/// [`LeanCommand::detect`].
pub fn find_backend_json() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("LEANPOOL_WASM_DIR") {
        let p = PathBuf::from(dir).join("backend.json");
        return p.is_file().then_some(p);
    }
    find_setup_json(WASM_DIR)
}

/// `<dir>/backend.json` in the current directory or the executable's
/// directory or any of their ancestors (the repository root, for a binary in
/// `target/release/`).
fn find_setup_json(dir: &str) -> Option<PathBuf> {
    let mut starts = vec![];
    if let Ok(cwd) = std::env::current_dir() {
        starts.push(cwd);
    }
    if let Some(exe_dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        starts.push(exe_dir);
    }
    starts.iter().find_map(|s| {
        s.ancestors()
            .map(|d| d.join(dir).join("backend.json"))
            .find(|p| p.is_file())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_backend_json() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("backend.json");
        std::fs::write(
            &path,
            r#"{"backend":"wasm","program":"/opt/node/bin/node","args":["--stack-size=8000","/x/lean.js"],"mode_args":["--worker"],
               "env":{"ZED":"1","LEAN_PATH":"/x/lib"},"version":"Lean (version 4.28.0-pre)\n"}"#,
        )
        .unwrap();
        let c = LeanCommand::from_backend_json(&path).unwrap();
        assert_eq!(c.backend, BackendKind::Wasm);
        assert_eq!(c.program, PathBuf::from("/opt/node/bin/node"));
        assert_eq!(c.args, ["--stack-size=8000", "/x/lean.js"]);
        assert_eq!(
            c.env,
            [
                ("LEAN_PATH".into(), "/x/lib".into()),
                ("ZED".into(), "1".into())
            ]
        );
        assert_eq!(c.lean_path().as_deref(), Some("/x/lib"));
        assert_eq!(c.version.as_deref(), Some("Lean (version 4.28.0-pre)"));
    }

    #[test]
    fn relative_program_is_relative_to_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("backend.json");
        std::fs::write(&path, r#"{"backend":"wasm","program":"node/bin/node"}"#).unwrap();
        let c = LeanCommand::from_backend_json(&path).unwrap();
        assert_eq!(c.program, dir.path().join("node/bin/node"));
        assert!(c.version.is_none());
    }

    #[test]
    fn rejects_bad_json() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("backend.json");
        std::fs::write(&path, r#"{"backend":"jvm","program":"x"}"#).unwrap();
        let e = LeanCommand::from_backend_json(&path).unwrap_err();
        assert!(e.to_string().contains("unknown backend"), "{e}");
        std::fs::write(
            &path,
            r#"{"backend":"wasm","program":"x","mode_args":["--server"]}"#,
        )
        .unwrap();
        assert!(LeanCommand::from_backend_json(&path)
            .unwrap_err()
            .to_string()
            .contains("mode_args"));
        std::fs::write(&path, "{").unwrap();
        assert!(LeanCommand::from_backend_json(&path).is_err());
        assert!(LeanCommand::from_backend_json(&dir.path().join("missing.json")).is_err());
    }

    #[tokio::test]
    async fn run_version_finds_the_lean_line_among_debug_output() {
        // A stand-in "Lean" that prints like the WASM build does.
        let c = LeanCommand {
            program: "/bin/sh".into(),
            args: vec![
                "-c".into(),
                "echo '[DEBUG: x]'; echo 'Lean (version 9.9.9)'; echo $0".into(),
            ],
            env: vec![],
            cwd: None,
            backend: BackendKind::Wasm,
            version: None,
            source: "test".into(),
        };
        assert_eq!(
            c.run_version(Duration::from_secs(10)).await.unwrap(),
            "Lean (version 9.9.9)"
        );
        let failing = LeanCommand {
            args: vec!["-c".into(), "exit 3".into()],
            ..c
        };
        assert!(failing.run_version(Duration::from_secs(10)).await.is_err());
    }
}
