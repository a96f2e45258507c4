//! What the daemon tests share beyond the test kit's daemon fixture.
#![allow(dead_code, unused_imports)]

use leanpool_protocol::method::{self, NoParams};
use std::path::Path;
use std::time::Duration;

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
    let st = c.request::<method::Status>(&NoParams).await.unwrap();
    assert_ne!(
        st.daemon.backend.kind,
        leanpool_protocol::BackendInfoKind::Unavailable,
        "Lean is not installed (run scripts/setup): {:?}",
        st.daemon.backend
    );
    c
}
