//! Load and restarts on a live daemon with methods that need no Lean
//! (`gted`, `ping`): 32 clients x 20 requests with every answer matched to
//! its request, none lost or duplicated; clients that ride out a daemon
//! restart (SIGTERM and SIGKILL) by reconnecting.

mod daemon_support;

use daemon_support::{call_surviving, Daemon, Lean};
use leanpool_protocol::method;
use leanpool_rpc::Client;
use nix::sys::signal::Signal;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

/// A chain `op(op(...(x)))` with `n` nodes in GTED's format, so that the
/// answer's `size_a` tells which request it belongs to.
fn chain(n: usize) -> Value {
    let mut t = json!({"content": "x", "variable_freecost": true});
    for _ in 1..n {
        t = json!({"content": " f _ ", "children": [t]});
    }
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_32_by_20_nothing_lost_or_duplicated() {
    const CLIENTS: usize = 32;
    const REQS: usize = 20;
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(dir.path(), "", Lean::Off);
    let t0 = std::time::Instant::now();
    let mut js = tokio::task::JoinSet::new();
    for c in 0..CLIENTS {
        let socket = d.socket.clone();
        js.spawn(async move {
            let (rd, mut wr) = UnixStream::connect(&socket).await.unwrap().into_split();
            let mut rd = BufReader::new(rd);
            // All 20 pipelined at once, half gted, half ping.
            let mut want = HashMap::new();
            let mut out = String::new();
            for i in 0..REQS {
                let id = format!("c{c}-r{i}");
                let req = if i % 2 == 0 {
                    let n = 1 + (c * REQS + i) % 23;
                    want.insert(id.clone(), json!({"size_a": n, "size_b": 1}));
                    json!({"jsonrpc": "2.0", "id": id, "method": "gted", "params": {"a": chain(n), "b": chain(1), "mode": "plain"}})
                } else {
                    want.insert(id.clone(), json!({"c": c, "i": i}));
                    json!({"jsonrpc": "2.0", "id": id, "method": "ping", "params": {"c": c, "i": i}})
                };
                out.push_str(&format!("{req}\n"));
            }
            wr.write_all(out.as_bytes()).await.unwrap();
            let mut got = 0;
            while !want.is_empty() {
                let mut line = String::new();
                assert!(rd.read_line(&mut line).await.unwrap() > 0, "client {c}: connection closed with {} unanswered", want.len());
                let a: Value = serde_json::from_str(&line).unwrap();
                let id = a["id"].as_str().unwrap().to_string();
                let w = want.remove(&id).unwrap_or_else(|| panic!("client {c}: unexpected or duplicate answer {a}"));
                let r = &a["result"];
                if w.get("size_a").is_some() {
                    assert_eq!((&r["size_a"], &r["size_b"]), (&w["size_a"], &w["size_b"]), "{a}");
                } else {
                    assert_eq!(r, &w);
                }
                got += 1;
            }
            // A duplicate would arrive before this one.
            wr.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"end\",\"method\":\"ping\"}\n").await.unwrap();
            let mut line = String::new();
            rd.read_line(&mut line).await.unwrap();
            assert_eq!(serde_json::from_str::<Value>(&line).unwrap()["id"], "end", "client {c}: extra answer");
            got
        });
    }
    let mut total = 0;
    while let Some(r) = js.join_next().await {
        total += r.unwrap();
    }
    assert_eq!(total, CLIENTS * REQS);
    eprintln!("{CLIENTS} clients x {REQS} pipelined requests: {total} answers matched, 0 lost, 0 duplicated, {:?}", t0.elapsed());
    let c = Client::connect(&d.socket).await.unwrap();
    assert_eq!(
        c.request::<method::Ping>(&json!("still up")).await.unwrap(),
        json!("still up")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_reconnect_across_daemon_restarts() {
    const CLIENTS: usize = 8;
    const REQS: usize = 100;
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(dir.path(), "", Lean::Off);
    let socket = d.socket.clone();
    let mut js = tokio::task::JoinSet::new();
    for c in 0..CLIENTS {
        let socket = socket.clone();
        js.spawn(async move {
            let mut client = Client::connect(&socket).await.unwrap();
            let mut reconnects = 0;
            for i in 0..REQS {
                let v = call_surviving(
                    &mut client,
                    &socket,
                    "ping",
                    json!({"c": c, "i": i}),
                    &mut reconnects,
                )
                .await;
                assert_eq!(v, json!({"c": c, "i": i}));
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            reconnects
        });
    }
    let dir_path = dir.path().to_owned();
    let restarts = tokio::task::spawn_blocking(move || {
        let mut d = d;
        for sig in [Signal::SIGTERM, Signal::SIGKILL] {
            std::thread::sleep(Duration::from_millis(150));
            d.signal(sig);
            d.wait_exit(Duration::from_secs(15));
            d = Daemon::start(&dir_path, "", Lean::Off);
        }
        d
    });
    let mut reconnects = 0;
    while let Some(r) = js.join_next().await {
        reconnects += r.unwrap();
    }
    let d = restarts.await.unwrap();
    assert!(
        reconnects >= CLIENTS,
        "clients did not see the restarts ({reconnects} reconnects)"
    );
    eprintln!("{CLIENTS} clients x {REQS} requests across a SIGTERM and a SIGKILL restart: all answered, {reconnects} reconnects");
    assert!(d.pid() > 0);
}
