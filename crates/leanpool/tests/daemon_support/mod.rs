//! Runs the real `leanpool serve` binary for the daemon tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_leanpool");

/// Which Lean the daemon may use.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Lean {
    /// The real one set up by `scripts/setup` (tests using it fail, not
    /// skip, when it is missing).
    Real,
    /// None: Lean methods answer SPAWN_FAILED at once. For tests of the
    /// transport, so that a stray `check` can never start a 7 GB worker.
    Off,
}

pub struct Daemon {
    pub child: Child,
    pub socket: PathBuf,
    pub log: PathBuf,
    pub dir: PathBuf,
}

impl Daemon {
    /// Starts `leanpool serve` in `dir` with `config` (TOML) and waits until
    /// it accepts connections.
    pub fn start(dir: &Path, config: &str, lean: Lean) -> Daemon {
        let d = Daemon::spawn(dir, config, lean);
        d.wait_ready();
        d
    }

    /// Starts the process without waiting.
    pub fn spawn(dir: &Path, config: &str, lean: Lean) -> Daemon {
        let socket = dir.join("leanpool.sock");
        let cfg = dir.join("daemon.toml");
        std::fs::write(&cfg, config).unwrap();
        let n = std::fs::read_dir(dir).unwrap().count();
        let log = dir.join(format!("daemon-{n}.log"));
        let mut cmd = Command::new(BIN);
        cmd.args(["serve", "--socket"])
            .arg(&socket)
            .arg("--config")
            .arg(&cfg);
        cmd.env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        cmd.stderr(std::fs::File::create(&log).unwrap());
        if lean == Lean::Off {
            cmd.env("LEANPOOL_BACKEND_JSON", dir.join("no-lean-here.json"));
        }
        let child = cmd.spawn().expect("spawn leanpool serve");
        Daemon {
            child,
            socket,
            log,
            dir: dir.to_owned(),
        }
    }

    pub fn wait_ready(&self) {
        let t0 = Instant::now();
        loop {
            if std::os::unix::net::UnixStream::connect(&self.socket).is_ok() {
                return;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "daemon not ready after 30 s:\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid()), sig).unwrap();
    }

    /// Waits for the process to exit (panics after `within`).
    pub fn wait_exit(&mut self, within: Duration) -> ExitStatus {
        let t0 = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
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

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // Graceful first so the pool kills its Lean workers.
            self.signal(nix::sys::signal::Signal::SIGTERM);
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(20) {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Processes whose parent is `pid` (from `/proc`).
pub fn children_of(pid: i32) -> Vec<i32> {
    let mut out = vec![];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // Fields after the parenthesized command name: state, ppid, ...
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        let ppid = rest
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse::<i32>().ok());
        if ppid == Some(pid) {
            out.push(p);
        }
    }
    out
}

pub fn alive(pid: i32) -> bool {
    // A zombie still has a /proc entry; treat it as gone.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rfind(')')
            .is_some_and(|i| !stat[i + 2..].starts_with('Z')),
        Err(_) => false,
    }
}

/// Sends one request and rides out daemon restarts: on a lost connection
/// or a SHUTTING_DOWN answer, reconnects (waiting up to a minute for the
/// new daemon) and asks again; any other error fails the test. For
/// idempotent methods only (`ping`, `gted`, `check`...), as a real client
/// would.
pub async fn call_surviving(
    client: &mut leanpool_rpc::Client,
    socket: &Path,
    method: &str,
    params: serde_json::Value,
    reconnects: &mut usize,
) -> serde_json::Value {
    use leanpool_protocol::ErrorCode;
    use leanpool_rpc::{Client, ClientError};
    loop {
        match client.call(method, params.clone()).await {
            Ok(v) => return v,
            Err(ClientError::Closed(_)) => {}
            Err(ClientError::Rpc(e)) if e.code == ErrorCode::ShuttingDown => {}
            Err(e) => panic!("unexpected error {e}"),
        }
        *reconnects += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
        *client = Client::connect_retry(socket, Duration::from_secs(60))
            .await
            .expect("daemon came back");
    }
}

/// Connects to a daemon started with [`Lean::Real`] and fails the test
/// (never skips) when the daemon found no Lean backend.
pub async fn connect_expecting_lean(d: &Daemon) -> leanpool_rpc::Client {
    let c = leanpool_rpc::Client::connect(&d.socket).await.unwrap();
    let st = c.status().await.unwrap();
    assert_ne!(
        st.daemon.backend.kind,
        leanpool_protocol::BackendInfoKind::Unavailable,
        "Lean is not installed (run scripts/setup): {:?}",
        st.daemon.backend
    );
    c
}
