//! The OS sandbox every Lean worker runs in.
//!
//! Code that gets past the input guard (a guard bug, or `[guard] enabled =
//! false`) runs inside Lean with the daemon's uid. The sandbox limits what
//! that code can reach, enforced by the kernel on the worker process and
//! everything it starts:
//!
//! - **Landlock** (filesystem): read (and execute) only the Lean toolchain
//!   and its library path (natively the `lean` install and `LEAN_PATH`;
//!   for WASM Lean the Node install, the glue, `.lean-wasm/lib`), the
//!   system's shared libraries (`/usr`, `/lib`, `/lib64`, `/etc/ld.so.cache`)
//!   and a few devices (`/dev/null`, `/dev/urandom`, `/dev/random`); read and
//!   write only a private per-worker temp dir (`$TMPDIR/leanpool-worker-*`,
//!   removed when the worker goes). Everything else (the caller's files,
//!   `/proc` of other processes, `$HOME`, `/etc`) is denied.
//! - **Landlock** (network, ABI >= 4): no TCP bind or connect.
//! - **Landlock** scoping (ABI >= 6): no abstract Unix sockets outside the
//!   sandbox, no signals to processes outside it (the daemon, other workers).
//! - **seccomp**: `socket(2)` fails with `EACCES` (no UDP, raw, netlink or
//!   Unix-domain sockets, e.g. to the daemon's own socket: a network
//!   namespace would not stop a pathname Unix socket, this does),
//!   `io_uring_setup(2)` fails with `ENOSYS` (io_uring can open sockets
//!   without the `socket` syscall), and syscalls of a foreign ABI (i386,
//!   x32) fail.
//! - `no_new_privs` (required by both), and the pool's existing limits
//!   (process group, parent-death signal, `RLIMIT_AS`).
//!
//! The ruleset and the seccomp program are built in the parent; the child
//! only makes the enforcing syscalls between `fork` and `exec` (no
//! allocation there: the daemon is multi-threaded).
//!
//! Modes (`[sandbox] mode`): `required` (the default) refuses to start a
//! worker unless everything above can be enforced (Landlock ABI >= 6);
//! `best-effort` enforces what the kernel supports and logs what it could
//! not; `off` runs Lean unsandboxed (trusted local use only).

use crate::backend::{BackendKind, LeanCommand};
use landlock::{
    Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};
use serde::{Deserialize, Serialize};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// The Landlock ABI `required` needs: filesystem rules (1), TCP rules (4),
/// abstract-socket and signal scoping (6).
pub const REQUIRED_ABI: i32 = 6;

/// Test hook: lowers the Landlock ABI leanpool believes the kernel has to
/// at most this number (`0` = "no Landlock"), to test how `required` and
/// `best-effort` behave on older kernels. It can only weaken what is
/// *detected*, never what `required` demands.
pub const ABI_CAP_ENV: &str = "LEANPOOL_SANDBOX_MAX_ABI";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
/// How strictly the OS sandbox is applied (`[sandbox] mode`).
pub enum SandboxMode {
    #[default]
    /// Refuse to start a worker unless every rule is enforced (the default).
    Required,
    /// Enforce what the kernel supports and log what is missing.
    BestEffort,
    /// No sandbox: for trusted local use only.
    Off,
}

impl SandboxMode {
    /// The mode as the config file spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Required => "required",
            SandboxMode::BestEffort => "best-effort",
            SandboxMode::Off => "off",
        }
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A sandbox mode that is none of `required`, `best-effort`, `off`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sandbox mode {0:?}: expected required, best-effort or off")]
pub struct UnknownSandboxMode(pub String);

impl std::str::FromStr for SandboxMode {
    type Err = UnknownSandboxMode;
    fn from_str(s: &str) -> Result<Self, UnknownSandboxMode> {
        match s {
            "required" => Ok(SandboxMode::Required),
            "best-effort" => Ok(SandboxMode::BestEffort),
            "off" => Ok(SandboxMode::Off),
            other => Err(UnknownSandboxMode(other.to_string())),
        }
    }
}

/// `[sandbox]` in the daemon config.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// How strictly to apply it.
    pub mode: SandboxMode,
    /// Extra paths the worker may read (e.g. a Lean toolchain reached
    /// through an elan proxy, a Mathlib outside `LEAN_PATH`).
    pub read: Vec<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
/// Why a worker could not be sandboxed as configured.
pub enum SandboxError {
    #[error(
        "sandbox mode `required` but the kernel's Landlock ABI is {found} (needs >= {REQUIRED_ABI}: \
         filesystem and TCP rules, socket and signal scoping); refusing to start Lean unsandboxed. \
         Use a newer kernel (Linux >= 6.12 with Landlock enabled), or set `[sandbox] mode = \"best-effort\"` \
         (or \"off\") for trusted input only"
    )]
    /// Mode `required` on a kernel without what it needs.
    Unsupported {
        /// The kernel's Landlock ABI (0: none).
        found: i32,
    },
    /// The worker's private directory could not be created.
    #[error("sandbox: cannot create the worker's temp dir: {0}")]
    TempDir(#[source] std::io::Error),
    /// The kernel refused a Landlock ruleset or one of its rules.
    #[error("sandbox: {0}")]
    Ruleset(#[from] landlock::RulesetError),
    /// A path the worker must reach cannot be opened for a rule.
    #[error("sandbox: {}: {source}", path.display())]
    RulePath {
        /// The path.
        path: PathBuf,
        /// Why it cannot be opened.
        source: landlock::PathFdError,
    },
    /// Landlock gave no ruleset back.
    #[error("sandbox: Landlock ruleset was not created")]
    NotCreated,
}

/// The kernel's Landlock ABI (0: none), lowered by [`ABI_CAP_ENV`].
pub fn landlock_abi() -> i32 {
    // SAFETY: the documented probe: no attribute, VERSION flag.
    let raw = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32, /* LANDLOCK_CREATE_RULESET_VERSION */
        )
    };
    let abi = if raw < 0 { 0 } else { raw as i32 };
    match std::env::var(ABI_CAP_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<i32>().ok())
    {
        Some(cap) => abi.min(cap.max(0)),
        None => abi,
    }
}

/// What a worker's sandbox allows, for `doctor`, logs and errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The configured mode.
    pub mode: SandboxMode,
    /// The kernel's Landlock ABI as detected (0: none).
    pub abi: i32,
    /// Read and execute.
    pub read_exec: Vec<PathBuf>,
    /// Read only.
    pub read: Vec<PathBuf>,
    /// Device files, read and write.
    pub devices: Vec<PathBuf>,
    /// What is enforced, in words (`landlock-fs`, `landlock-tcp`, ...).
    pub enforced: Vec<&'static str>,
    /// What the kernel could not enforce (only non-empty in best-effort).
    pub missing: Vec<&'static str>,
}

impl Plan {
    /// The plan for workers of `command` under `cfg`, on this kernel.
    /// `Err` when `required` cannot be met.
    pub fn new(command: &LeanCommand, cfg: &SandboxConfig) -> Result<Plan, SandboxError> {
        Self::for_abi(command, cfg, landlock_abi())
    }

    /// [`Plan::new`] for a kernel with Landlock ABI `abi`.
    pub fn for_abi(
        command: &LeanCommand,
        cfg: &SandboxConfig,
        abi: i32,
    ) -> Result<Plan, SandboxError> {
        if cfg.mode == SandboxMode::Required && abi < REQUIRED_ABI {
            return Err(SandboxError::Unsupported { found: abi });
        }
        let (mut read_exec, mut read) = toolchain_paths(command);
        read.extend(cfg.read.iter().cloned());
        for sys in ["/usr", "/lib", "/lib64", "/lib32"] {
            read_exec.push(PathBuf::from(sys));
        }
        read.push(PathBuf::from("/etc/ld.so.cache"));
        // Node's OpenSSL reads its configuration at start and exits
        // without it.
        read.push(PathBuf::from("/etc/ssl/openssl.cnf"));
        // The CPU count (Node's `os.cpus()`, which the WASM glue uses as
        // the number of cores: 0 when these are denied).
        read.extend(["/proc/stat", "/proc/cpuinfo", "/sys/devices/system/cpu"].map(PathBuf::from));
        let devices = ["/dev/null", "/dev/urandom", "/dev/random"]
            .map(PathBuf::from)
            .to_vec();
        for v in [&mut read_exec, &mut read] {
            v.retain(|p| p.exists());
            v.sort();
            v.dedup();
        }
        let mut enforced = vec![];
        let mut missing = vec![];
        if cfg.mode != SandboxMode::Off {
            enforced.extend(["no_new_privs", "seccomp-no-sockets"]);
            for (need, what) in [
                (1, "landlock-fs"),
                (4, "landlock-tcp"),
                (6, "landlock-scope"),
            ] {
                if abi >= need {
                    enforced.push(what);
                } else {
                    missing.push(what);
                }
            }
        }
        Ok(Plan {
            mode: cfg.mode,
            abi,
            read_exec,
            read,
            devices,
            enforced,
            missing,
        })
    }

    /// One line for logs and `doctor`.
    pub fn summary(&self) -> String {
        if self.mode == SandboxMode::Off {
            return "off (Lean runs unsandboxed)".into();
        }
        let mut s = format!(
            "{} (Landlock ABI {}): {}",
            self.mode.as_str(),
            self.abi,
            self.enforced.join(", ")
        );
        if !self.missing.is_empty() {
            s.push_str(&format!(
                "; NOT enforced on this kernel: {}",
                self.missing.join(", ")
            ));
        }
        s
    }
}

/// The toolchain a command needs: (read+exec, read). The program's
/// install directory (the parent of its `bin/`, or its own directory), the
/// directory of every absolute path among its arguments (the WASM glue and
/// `lean.wasm`), every `LEAN_PATH` entry and the working directory.
fn toolchain_paths(command: &LeanCommand) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut read_exec = vec![];
    let mut read = vec![];
    let program =
        std::fs::canonicalize(&command.program).unwrap_or_else(|_| command.program.clone());
    if let Some(dir) = program.parent() {
        // `<root>/bin/node`, `<toolchain>/bin/lean`: the root holds the
        // shared libraries (`lib/`) and Lean's own library.
        if dir.file_name().is_some_and(|n| n == "bin") {
            read_exec.push(dir.parent().unwrap_or(dir).to_path_buf());
        } else {
            read_exec.push(dir.to_path_buf());
        }
    }
    // An elan proxy (`~/.elan/bin/lean`) execs the toolchain under `~/.elan`.
    if let Some(elan) = command
        .program
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == ".elan"))
    {
        read_exec.push(elan.to_path_buf());
    }
    for a in &command.args {
        let p = Path::new(a);
        if p.is_absolute() && p.exists() {
            let p = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
            let dir = if p.is_dir() {
                p.clone()
            } else {
                p.parent().map(Path::to_path_buf).unwrap_or(p.clone())
            };
            read_exec.push(dir);
        }
    }
    if command.backend == BackendKind::Wasm {
        // The glue's `require`s resolve in `node_modules` next to its
        // directory (`.lean-wasm/node_modules`).
        for a in &command.args {
            let p = Path::new(a);
            if p.is_absolute() {
                if let Some(nm) = p
                    .parent()
                    .and_then(Path::parent)
                    .map(|d| d.join("node_modules"))
                {
                    if nm.is_dir() {
                        read.push(nm);
                    }
                }
            }
        }
    }
    if let Some(lp) = command.lean_path() {
        read.extend(std::env::split_paths(&lp).filter(|p| p.is_absolute()));
    }
    if let Some(cwd) = &command.cwd {
        read.push(cwd.clone());
    }
    (read_exec, read)
}

/// One worker's sandbox: the enforcing state prepared in the parent, and
/// the private temp dir (removed on drop, i.e. when the worker goes).
pub struct Sandbox {
    mode: SandboxMode,
    ruleset: Option<OwnedFd>,
    seccomp: Vec<libc::sock_filter>,
    dir: Option<tempfile::TempDir>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("mode", &self.mode)
            .field("dir", &self.dir())
            .finish()
    }
}

impl Sandbox {
    /// Prepares the sandbox for one worker of `command`. `Err` in
    /// `required` mode when it cannot be fully enforced.
    pub fn prepare(command: &LeanCommand, cfg: &SandboxConfig) -> Result<Sandbox, SandboxError> {
        let plan = Plan::new(command, cfg)?;
        if plan.mode == SandboxMode::Off {
            return Ok(Sandbox {
                mode: plan.mode,
                ruleset: None,
                seccomp: vec![],
                dir: None,
            });
        }
        if !plan.missing.is_empty() {
            tracing::warn!(sandbox = %plan.summary(), "sandbox is incomplete on this kernel (mode best-effort)");
        }
        let dir = tempfile::Builder::new()
            .prefix("leanpool-worker-")
            .tempdir()
            .map_err(SandboxError::TempDir)?;
        let ruleset = if plan.abi >= 1 {
            Some(build_ruleset(&plan, dir.path())?)
        } else {
            None
        };
        Ok(Sandbox {
            mode: plan.mode,
            ruleset,
            seccomp: seccomp_program(),
            dir: Some(dir),
        })
    }

    /// The worker's private, writable directory (`None` when off).
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_ref().map(|d| d.path())
    }

    /// Makes `cmd` enter the sandbox between fork and exec, and points its
    /// `TMPDIR` at the private directory. The command must be spawned
    /// while `self` is alive.
    pub fn apply(&self, cmd: &mut tokio::process::Command) {
        if self.mode == SandboxMode::Off {
            return;
        }
        if let Some(d) = self.dir() {
            cmd.env("TMPDIR", d);
        }
        let required = self.mode == SandboxMode::Required;
        let ruleset = self.ruleset.as_ref().map_or(-1, |f| f.as_raw_fd());
        // The filter lives in `self`, which outlives the spawn (the child
        // has a copy of the parent's memory at fork time).
        let (len, filter) = (self.seccomp.len() as u16, self.seccomp.as_ptr() as usize);
        // SAFETY: between fork and exec only raw syscalls, no allocation.
        unsafe {
            cmd.pre_exec(move || {
                let fail = |required: bool| -> std::io::Result<()> {
                    if required {
                        Err(std::io::Error::last_os_error())
                    } else {
                        Ok(())
                    }
                };
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    fail(required)?;
                }
                if ruleset >= 0
                    && libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) != 0
                {
                    fail(required)?;
                }
                let prog = libc::sock_fprog {
                    len,
                    filter: filter as *mut libc::sock_filter,
                };
                if libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &prog as *const libc::sock_fprog,
                ) != 0
                {
                    fail(required)?;
                }
                Ok(())
            });
        }
    }
}

fn build_ruleset(plan: &Plan, private: &Path) -> Result<OwnedFd, SandboxError> {
    let abi = match plan.abi {
        1 => ABI::V1,
        2 => ABI::V2,
        3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        6 => ABI::V6,
        _ => ABI::V7,
    };
    let all = AccessFs::from_all(abi);
    let read_exec = AccessFs::ReadFile | AccessFs::ReadDir | AccessFs::Execute;
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    let mut rs = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)?;
    if plan.abi >= 4 {
        rs = rs.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
    }
    if plan.abi >= 6 {
        rs = rs.scope(Scope::AbstractUnixSocket | Scope::Signal)?;
    }
    let mut created = rs.create()?;
    let open = |p: &Path| {
        PathFd::new(p).map_err(|source| SandboxError::RulePath {
            path: p.to_path_buf(),
            source,
        })
    };
    for p in &plan.read_exec {
        // `from_read`-style masks must fit the object: a file gets the
        // file subset.
        created = created.add_rule(PathBeneath::new(open(p)?, fit(p, read_exec)))?;
    }
    for p in &plan.read {
        created = created.add_rule(PathBeneath::new(open(p)?, fit(p, read)))?;
    }
    for p in &plan.devices {
        if p.exists() {
            let rw = AccessFs::ReadFile | AccessFs::WriteFile;
            created = created.add_rule(PathBeneath::new(open(p)?, rw))?;
        }
    }
    created = created.add_rule(PathBeneath::new(open(private)?, all))?;
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or(SandboxError::NotCreated)
}

/// `access` restricted to what applies to `p` (a file takes no directory
/// rights).
fn fit(p: &Path, access: landlock::BitFlags<AccessFs>) -> landlock::BitFlags<AccessFs> {
    if p.is_dir() {
        access
    } else {
        access & AccessFs::from_file(ABI::V7)
    }
}

/// The seccomp-bpf program: deny `socket`, `io_uring_setup` and foreign
/// ABIs, allow everything else.
fn seccomp_program() -> Vec<libc::sock_filter> {
    const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
    const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    #[cfg(target_arch = "x86_64")]
    const ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
    #[cfg(target_arch = "aarch64")]
    const ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64
                                   // x32 syscalls share the x86_64 arch value with this bit set.
    #[cfg(target_arch = "x86_64")]
    const FOREIGN_NR: u32 = 0x4000_0000;
    #[cfg(not(target_arch = "x86_64"))]
    const FOREIGN_NR: u32 = u32::MAX;
    let st = |code: u16, k: u32| libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |code: u16, k: u32, jt: u8, jf: u8| libc::sock_filter { code, jt, jf, k };
    let errno = |e: i32| libc::SECCOMP_RET_ERRNO | (e as u32 & libc::SECCOMP_RET_DATA);
    vec![
        st(LD_W_ABS, 4),                                    // 0: arch
        jump(JEQ_K, ARCH, 1, 0),                            // 1
        st(RET_K, errno(libc::ENOSYS)),                     // 2: foreign arch
        st(LD_W_ABS, 0),                                    // 3: nr
        jump(JGE_K, FOREIGN_NR, 0, 1),                      // 4
        st(RET_K, errno(libc::ENOSYS)),                     // 5: x32
        jump(JEQ_K, libc::SYS_socket as u32, 0, 1),         // 6
        st(RET_K, errno(libc::EACCES)),                     // 7
        jump(JEQ_K, libc::SYS_io_uring_setup as u32, 0, 1), // 8
        st(RET_K, errno(libc::ENOSYS)),                     // 9
        st(RET_K, libc::SECCOMP_RET_ALLOW),                 // 10
    ]
}

#[cfg(test)]
mod tests;
