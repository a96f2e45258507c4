//! What the daemon tests share beyond the test kit's daemon fixture.
#![allow(dead_code, unused_imports)]

use leanpool_protocol::method::{self, NoParams};
use std::path::Path;
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_leanpool");

pub mod editor;

/// The daemon fixture (one for every test and bench): `Daemon::start`
/// runs this package's `leanpool serve` binary.
pub use leanpool_testkit::daemon::{Daemon, Lean};

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

/// Whether the worker of process group `pgid` stops computing within
/// `within`: it is gone, or over a 3 s window its group used under 0.3 s
/// of CPU. A request cancelled in Lean either stops there (Lean ended
/// the elaboration) or is ended by the lease's limits; both pass, a
/// worker still computing does not.
pub fn quiet_or_gone(pgid: u64, within: Duration) -> bool {
    let until = Instant::now() + within;
    while Instant::now() < until {
        if !alive(pgid as i32) {
            return true;
        }
        let cpu = || leanpool_lean::proc::group_cpu_time(pgid as u32).unwrap_or_default();
        let before = cpu();
        std::thread::sleep(Duration::from_secs(3));
        if !alive(pgid as i32) || cpu().saturating_sub(before) < Duration::from_millis(300) {
            return true;
        }
    }
    false
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

/// The daemon's `status`.
pub async fn status(c: &leanpool_rpc::Client) -> leanpool_protocol::StatusResult {
    c.request::<method::Status>(&NoParams).await.unwrap()
}

/// The pool's counters from the daemon's `status`.
pub async fn counters(c: &leanpool_rpc::Client) -> leanpool_protocol::Counters {
    status(c).await.pool.counters
}

/// Runs `leanpool ARGS --socket SOCKET` (a CLI command through the
/// daemon) and asserts its exit code is `code` (showing its output when
/// not); the output.
pub fn cli_via(
    socket: &Path,
    args: &[&dyn AsRef<std::ffi::OsStr>],
    code: i32,
) -> std::process::Output {
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
    let out = std::process::Command::new(BIN)
        .args(&args)
        .arg("--socket")
        .arg(socket)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "leanpool {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// [`cli_via`] for a command printing JSON: the value it printed.
pub fn cli_json(
    socket: &Path,
    args: &[&dyn AsRef<std::ffi::OsStr>],
    code: i32,
) -> serde_json::Value {
    serde_json::from_slice(&cli_via(socket, args, code).stdout).unwrap()
}

/// Connects to a daemon started with [`Lean::Real`] and fails the test
/// (never skips) when the daemon found no Lean backend.
pub async fn connect_expecting_lean(d: &Daemon) -> leanpool_rpc::Client {
    let c = leanpool_rpc::Client::connect(&d.socket).await.unwrap();
    let st = status(&c).await;
    assert_ne!(
        st.daemon.backend.kind,
        leanpool_protocol::BackendInfoKind::Unavailable,
        "Lean is not installed (run scripts/setup): {:?}",
        st.daemon.backend
    );
    c
}

/// Issue 26's rules as one attack test checks them: each check is named
/// by its rule and recorded, and the test fails at the end listing every
/// rule that did not hold (not only the first), so that one run with
/// several rules disabled shows each of them failing.
#[derive(Default)]
pub struct Rules {
    broken: Vec<String>,
    held: Vec<&'static str>,
}

impl Rules {
    /// Records whether `rule` held; `detail` says what was seen.
    pub fn check(&mut self, rule: &'static str, held: bool, detail: impl std::fmt::Display) {
        if held {
            self.held.push(rule);
        } else {
            eprintln!("RULE BROKEN: {rule}: {detail}");
            self.broken.push(format!("{rule}: {detail}"));
        }
    }

    /// Fails the test if any rule did not hold.
    pub fn assert_all(&self) {
        eprintln!("rules held: {:?}", self.held);
        assert!(
            self.broken.is_empty(),
            "rules broken:\n{}",
            self.broken.join("\n")
        );
    }
}

/// A slow text for the time and CPU limits: 240 theorems closed by
/// `omega` over a chain of six variables, each a fraction of a second of
/// Lean's CPU on the WASM build (60 shorter ones took 27 s of worker
/// time here); 240 stays under the verdict's cap on declarations.
pub fn slow_theorems() -> String {
    (0..240)
        .map(|k| format!("theorem slow{k} (a b c d e f : Nat) (h1 : a < b) (h2 : b < c) (h3 : c < d) (h4 : d < e) (h5 : e < f) : a + 5 <= f + {k} := by omega\n"))
        .collect()
}

/// A text that keeps Lean computing well past a request limit plus its
/// grace (the grace checks: 15 s + 10 s): 240 theorems closed by `omega`
/// over a chain of twelve variables. Measured on real Lean here
/// (2026-11-27): over 60 s of elaboration (`leanpool check` timed out at
/// 60 s), where [`slow_theorems`] took 24 s in a lease, short of the 25 s
/// at which the grace ends a worker.
pub fn slower_theorems() -> String {
    (0..240)
        .map(|k| {
            let vars: Vec<String> = (0..12).map(|i| format!("x{i}")).collect();
            let hyps: Vec<String> = (0..11)
                .map(|i| format!("(h{i} : x{i} < x{})", i + 1))
                .collect();
            format!(
                "theorem slower{k} ({} : Nat) {} : x0 + 11 <= x11 + {k} := by omega\n",
                vars.join(" "),
                hyps.join(" ")
            )
        })
        .collect()
}

/// Whether `ans` is the per-request time limit's own answer
/// (`REQUEST_FAILED`, its message naming the limit): the CPU budget or the
/// grace ending a lease answers `REQUEST_FAILED` too, and must not pass
/// for it. Used by the `lease` path's and the bridge's time-limit checks.
pub fn is_time_limit_answer(ans: &serde_json::Value) -> bool {
    ans["error"]["code"] == leanpool_protocol::lsp_error::REQUEST_FAILED
        && ans["error"]["message"].to_string().contains("per request")
}

/// [`slow_theorems`] with every theorem renamed for `round`: a leased
/// document edited to it is elaborated anew (Lean reuses nothing), so
/// edits of successive rounds spend CPU until a budget ends the lease.
pub fn slow_theorems_round(round: u64) -> String {
    slow_theorems().replace("theorem slow", &format!("theorem r{round}slow"))
}
