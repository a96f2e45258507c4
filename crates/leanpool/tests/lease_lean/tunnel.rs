//! The test's client of the daemon: one JSON-RPC call per connection,
//! and a lease's tunnel (one JSON message per line each way).

use crate::daemon_support::alive;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// One JSON-RPC call on a fresh connection; the whole answer.
pub(crate) fn call(socket: &std::path::Path, method: &str, params: Value) -> Value {
    let mut c = Tunnel::open(socket);
    c.send(&json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }));
    c.until(Duration::from_secs(900), |m| m["id"] == 1)
        .expect("an answer")
}

/// A connection to the daemon, the tunnel of a lease once `lease` is
/// answered.
pub(crate) struct Tunnel {
    wr: UnixStream,
    rd: BufReader<UnixStream>,
    /// Every line received, for the "never leaked" checks.
    pub(crate) all: String,
}

impl Tunnel {
    /// Connects to the daemon's socket.
    pub(crate) fn open(socket: &std::path::Path) -> Tunnel {
        let s = UnixStream::connect(socket).unwrap();
        Tunnel {
            rd: BufReader::new(s.try_clone().unwrap()),
            wr: s,
            all: String::new(),
        }
    }

    /// Writes one message.
    pub(crate) fn send(&mut self, v: &Value) {
        // A closed tunnel shows in what comes back.
        let _ = self.wr.write_all(format!("{v}\n").as_bytes());
    }

    /// The next message `pick` accepts within `within` (others skipped);
    /// `None` when nothing matched in time or the connection closed.
    pub(crate) fn until(
        &mut self,
        within: Duration,
        pick: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        let end = Instant::now() + within;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            self.rd.get_ref().set_read_timeout(Some(left)).unwrap();
            let mut line = String::new();
            match self.rd.read_line(&mut line) {
                Ok(n) if n > 0 => {}
                _ => return None,
            }
            self.all.push_str(&line);
            let m: Value = serde_json::from_str(&line).unwrap();
            if pick(&m) {
                return Some(m);
            }
        }
    }

    /// The answer to a request, or `{"noAnswer": ...}` saying whether
    /// the time ran out or the connection closed first.
    pub(crate) fn request(
        &mut self,
        id: &str,
        method: &str,
        params: Value,
        within: Duration,
    ) -> Value {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        let asked = Instant::now();
        self.until(within, |m| m["id"] == id && m.get("method").is_none())
            .unwrap_or_else(|| {
                let waited = asked.elapsed();
                let why = if waited < within {
                    format!("{method}: the connection closed after {waited:?}")
                } else {
                    format!("{method} within {within:?}")
                };
                json!({ "noAnswer": why })
            })
    }

    /// Leases a worker for `header`: the document's URI, its version,
    /// the worker's pid.
    pub(crate) fn lease(&mut self, header: &str) -> (String, i64, u64) {
        let r = self.request(
            "lease",
            "lease",
            json!({ "header": header }),
            Duration::from_secs(900),
        );
        let r = &r["result"];
        (
            r["uri"].as_str().expect("a lease").to_string(),
            r["version"].as_i64().unwrap(),
            r["pid"].as_u64().unwrap(),
        )
    }

    /// Sends `text` as the leased document's `version` (a whole-text `didChange`).
    pub(crate) fn change(&mut self, uri: &str, version: i64, text: &str) {
        self.send(&json!({ "jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": { "uri": uri, "version": version }, "contentChanges": [{ "text": text }] } }));
    }
}

pub(crate) fn is_error(ans: &Value, code: i64) -> bool {
    ans["error"]["code"] == code
}

/// Waits up to `within` for `pid` to be gone.
pub(crate) fn gone_within(pid: u64, within: Duration) -> bool {
    let until = Instant::now() + within;
    while alive(pid as i32) {
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    true
}

/// Pids of the pool's workers (`status`).
pub(crate) fn pool_pids(socket: &std::path::Path) -> Vec<u64> {
    let st = call(socket, "status", json!({}));
    st["result"]["pool"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|k| k["workers"].as_array().unwrap().iter())
        .filter_map(|w| w["pid"].as_u64())
        .collect()
}
