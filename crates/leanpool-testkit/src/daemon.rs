//! The one daemon fixture of the tests and benches: a daemon on a socket
//! in a directory of the caller's, stopped gracefully when dropped (the
//! daemon then kills its Lean workers, which live in their own process
//! groups and would survive a SIGKILL of the daemon).
//!
//! Two ways to run it, the same daemon (`leanpool_daemon::serve`):
//! - [`Daemon::start`]: the `leanpool serve` binary as a child process,
//!   for what only a process shows (signals, exit codes, stderr logs, the
//!   CLI). The binary is `$LEANPOOL_BIN`, else `leanpool` in the cargo
//!   target directory of the running test or bench.
//! - `Daemon::in_process` (feature `daemon`): `leanpool_daemon::serve_with`
//!   as a task of the caller's runtime, e.g. on the scripted fake Lean.
//!
//! The result cache is off unless the test asks for it (a `[cache]` table
//! in a process's config, a `cache.dir` in an in-process one): tests and
//! benches not about the cache must see every request reach Lean, and no
//! test may read or fill the user's default store.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Which Lean a daemon process may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lean {
    /// The real one set up by `scripts/setup` (tests using it fail, not
    /// skip, when it is missing).
    Real,
    /// None: Lean methods answer SPAWN_FAILED at once. For tests of the
    /// transport, so that a stray `check` can never start a worker.
    Off,
}

/// A running daemon (see the module docs).
pub struct Daemon {
    /// Its socket (`DIR/leanpool.sock`).
    pub socket: PathBuf,
    /// Its stderr log (a process), or the caller's log.
    pub log: PathBuf,
    /// The directory it was started in.
    pub dir: PathBuf,
    run: Run,
}

enum Run {
    Process(Child),
    #[cfg(feature = "daemon")]
    Task {
        stop: Option<tokio::sync::oneshot::Sender<()>>,
        task: tokio::task::JoinHandle<Result<(), leanpool_daemon::ServeError>>,
    },
}

/// How long a daemon may take to listen, and to stop after SIGTERM.
const READY_WITHIN: Duration = Duration::from_secs(30);
const STOP_WITHIN: Duration = Duration::from_secs(60);

/// The `leanpool` binary: `$LEANPOOL_BIN`, else next to the running test
/// (`target/PROFILE/deps/..`) or bench (`target/PROFILE/`).
pub fn binary() -> PathBuf {
    if let Some(p) = std::env::var_os("LEANPOOL_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("the running executable");
    let mut dir = exe.parent().expect("its directory").to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir.join("leanpool")
}

impl Daemon {
    /// Starts `leanpool serve` in `dir` with `config` (TOML) and waits
    /// until it accepts connections; panics (with its log) if it does not
    /// within 30 s.
    pub fn start(dir: &Path, config: &str, lean: Lean) -> Daemon {
        Daemon::try_start(dir, config, lean).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Daemon::start`] with extra environment variables for the daemon
    /// (e.g. its `TMPDIR`).
    pub fn start_with_env(dir: &Path, config: &str, lean: Lean, env: &[(&str, &Path)]) -> Daemon {
        let d = Daemon::try_spawn(dir, config, lean, env).unwrap_or_else(|e| panic!("{e}"));
        d.wait_ready();
        d
    }

    /// [`Daemon::start`] with extra `leanpool serve` arguments (e.g.
    /// `--project judge=DIR`).
    pub fn start_with_args(dir: &Path, config: &str, lean: Lean, args: &[String]) -> Daemon {
        let d =
            Daemon::try_spawn_with(dir, config, lean, &[], args).unwrap_or_else(|e| panic!("{e}"));
        d.wait_ready();
        d
    }

    /// [`Daemon::start`] returning why not instead of panicking (benches).
    pub fn try_start(dir: &Path, config: &str, lean: Lean) -> Result<Daemon, String> {
        let d = Daemon::try_spawn(dir, config, lean, &[])?;
        d.try_wait_ready()?;
        Ok(d)
    }

    /// Starts the process without waiting; panics if it cannot be run.
    pub fn spawn(dir: &Path, config: &str, lean: Lean) -> Daemon {
        Daemon::try_spawn(dir, config, lean, &[]).unwrap_or_else(|e| panic!("{e}"))
    }

    fn try_spawn(
        dir: &Path,
        config: &str,
        lean: Lean,
        env: &[(&str, &Path)],
    ) -> Result<Daemon, String> {
        Daemon::try_spawn_with(dir, config, lean, env, &[])
    }

    fn try_spawn_with(
        dir: &Path,
        config: &str,
        lean: Lean,
        env: &[(&str, &Path)],
        args: &[String],
    ) -> Result<Daemon, String> {
        let socket = dir.join("leanpool.sock");
        let cfg = dir.join("daemon.toml");
        let io = |what: &str, e: std::io::Error| format!("{what}: {e}");
        let config = cache_off_unless_asked(config);
        std::fs::write(&cfg, config).map_err(|e| io("writing the config", e))?;
        let n = std::fs::read_dir(dir)
            .map_err(|e| io("reading the dir", e))?
            .count();
        let log = dir.join(format!("daemon-{n}.log"));
        let bin = binary();
        let mut cmd = Command::new(&bin);
        cmd.args(["serve", "--socket"])
            .arg(&socket)
            .arg("--config")
            .arg(&cfg)
            .args(args);
        cmd.env("RUST_LOG", "info")
            // The default `[cache] dir` is in the daemon's own directory.
            .env("XDG_CACHE_HOME", dir.join("xdg-cache"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).map_err(|e| io("creating the log", e))?);
        if lean == Lean::Off {
            cmd.env("LEANPOOL_BACKEND_JSON", dir.join("no-lean-here.json"));
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().map_err(|e| {
            format!(
                "cannot run {} ({e}): build it (`cargo build -p leanpool`, `--release` for benches) or set LEANPOOL_BIN",
                bin.display()
            )
        })?;
        Ok(Daemon {
            socket,
            log,
            dir: dir.to_owned(),
            run: Run::Process(child),
        })
    }

    /// Waits until the socket accepts connections; panics after 30 s.
    pub fn wait_ready(&self) {
        self.try_wait_ready().unwrap_or_else(|e| panic!("{e}"))
    }

    fn try_wait_ready(&self) -> Result<(), String> {
        let t0 = Instant::now();
        while std::os::unix::net::UnixStream::connect(&self.socket).is_err() {
            if t0.elapsed() > READY_WITHIN {
                return Err(format!(
                    "daemon not ready after {READY_WITHIN:?}:\n{}",
                    self.logs()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    fn child(&mut self) -> &mut Child {
        match &mut self.run {
            Run::Process(c) => c,
            #[cfg(feature = "daemon")]
            Run::Task { .. } => panic!("an in-process daemon has no process"),
        }
    }

    /// The daemon process's pid (a process daemon only).
    pub fn pid(&self) -> i32 {
        match &self.run {
            Run::Process(c) => c.id() as i32,
            #[cfg(feature = "daemon")]
            Run::Task { .. } => std::process::id() as i32,
        }
    }

    /// Sends `sig` to the daemon process.
    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid()), sig).unwrap();
    }

    /// Waits for the process to exit (panics after `within`).
    pub fn wait_exit(&mut self, within: Duration) -> ExitStatus {
        let t0 = Instant::now();
        loop {
            if let Some(st) = self.child().try_wait().unwrap() {
                return st;
            }
            assert!(
                t0.elapsed() < within,
                "daemon still running after {within:?}:\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends `sig` and asserts the daemon exits with success within
    /// `within` (its log shown when it does not): a graceful stop.
    pub fn exits_cleanly_on(&mut self, sig: nix::sys::signal::Signal, within: Duration) {
        self.signal(sig);
        let st = self.wait_exit(within);
        assert!(
            st.success(),
            "{sig} ended the daemon with {st}:\n{}",
            self.logs()
        );
    }

    /// Whether the daemon is still running.
    pub fn is_running(&mut self) -> bool {
        match &mut self.run {
            Run::Process(c) => matches!(c.try_wait(), Ok(None)),
            #[cfg(feature = "daemon")]
            Run::Task { task, .. } => !task.is_finished(),
        }
    }

    /// The daemon's log so far.
    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stops the daemon gracefully (SIGTERM; killed if still there after
    /// 60 s). Dropping it does the same.
    pub fn stop(&mut self) {
        match &mut self.run {
            Run::Process(child) => stop_process(child),
            #[cfg(feature = "daemon")]
            Run::Task { stop, .. } => {
                if let Some(s) = stop.take() {
                    let _ = s.send(());
                }
            }
        }
    }
}

fn stop_process(child: &mut Child) {
    if let Ok(None) = child.try_wait() {
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let t0 = Instant::now();
        while t0.elapsed() < STOP_WITHIN {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!("daemon ignored SIGTERM for {STOP_WITHIN:?}; killing it");
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The result cache answers repeated requests without a worker: a daemon
/// whose config has no `[cache]` table runs without it, so that tests and
/// benches not about the cache see every request reach Lean.
fn cache_off_unless_asked(config: &str) -> String {
    if config.contains("[cache]") {
        config.to_string()
    } else {
        format!("{config}\n[cache]\nenabled = false\n")
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(feature = "daemon")]
impl Daemon {
    /// `leanpool_daemon::serve_with(lean, config, DIR/leanpool.sock)` as a
    /// task of the current runtime; the socket accepts connections when
    /// this returns. `log` is the caller's (e.g. the fake's log).
    pub async fn in_process(
        dir: &Path,
        lean: leanpool_daemon::Lean,
        config: leanpool_daemon::DaemonConfig,
        log: PathBuf,
    ) -> Daemon {
        let socket = dir.join("leanpool.sock");
        // As for a process: the cache only when the test gave it a dir (the
        // default dir is the user's, shared by every run).
        let mut config = config;
        if config.cache.dir.is_none() {
            config.cache.enabled = false;
        }
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let at = socket.clone();
        let task = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stopped.await;
            };
            leanpool_daemon::serve_with(lean, config, &at, shutdown).await
        });
        let t0 = Instant::now();
        while tokio::net::UnixStream::connect(&socket).await.is_err() {
            assert!(!task.is_finished(), "the daemon stopped before listening");
            assert!(t0.elapsed() < READY_WITHIN, "daemon not ready");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Daemon {
            socket,
            log,
            dir: dir.to_owned(),
            run: Run::Task {
                stop: Some(stop),
                task,
            },
        }
    }

    /// Stops an in-process daemon and waits until it has drained, killed
    /// its workers and removed its socket.
    pub async fn shutdown(mut self) {
        self.stop();
        if let Run::Task { task, .. } = &mut self.run {
            task.await
                .expect("the daemon task")
                .expect("the daemon served");
        }
    }
}
