//! The server over real Unix sockets, in-process, with a handler that needs
//! no Lean: framing errors, pipelining, cancellation, peers, shutdown.

mod common;

use common::start;
use leanpool_protocol::method::{self, NoParams};
use leanpool_protocol::ErrorCode;
use leanpool_rpc::{Client, ClientError};
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

/// A raw line-level connection, for sending what no well-behaved client
/// would.
struct Raw {
    rd: BufReader<tokio::net::unix::OwnedReadHalf>,
    wr: tokio::net::unix::OwnedWriteHalf,
}

impl Raw {
    async fn new(path: &std::path::Path) -> Raw {
        let (rd, wr) = UnixStream::connect(path).await.unwrap().into_split();
        Raw {
            rd: BufReader::new(rd),
            wr,
        }
    }
    async fn send(&mut self, bytes: &[u8]) {
        self.wr.write_all(bytes).await.unwrap();
    }
    async fn recv(&mut self) -> Value {
        let mut line = String::new();
        let n = tokio::time::timeout(Duration::from_secs(10), self.rd.read_line(&mut line))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "connection closed");
        serde_json::from_str(&line).unwrap()
    }
    async fn eof(&mut self) -> bool {
        let mut line = String::new();
        matches!(
            tokio::time::timeout(Duration::from_secs(10), self.rd.read_line(&mut line)).await,
            Ok(Ok(0))
        )
    }
}

/// The answer's error code, read as the integer on the wire.
fn code(v: &Value) -> ErrorCode {
    ErrorCode::from_code(
        v["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("not an error: {v}")),
    )
}

#[tokio::test]
async fn bad_frames_are_answered_and_the_connection_survives() {
    let d = start(|o| o.max_request_bytes = 1000);
    let mut c = Raw::new(&d.path).await;
    c.send(b"{not json\n").await;
    let r = c.recv().await;
    assert_eq!((code(&r), &r["id"]), (ErrorCode::ParseError, &Value::Null));
    c.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"st\xffatus\"}\n")
        .await;
    assert_eq!(code(&c.recv().await), ErrorCode::ParseError);
    c.send(b"\n   \r\n").await; // blank lines: no answer
    c.send(br#"{"jsonrpc":"2.0","id":2,"method":"nope"}"#).await;
    c.send(b"\n").await;
    let r = c.recv().await;
    assert_eq!((code(&r), &r["id"]), (ErrorCode::MethodNotFound, &json!(2)));
    c.send(br#"{"jsonrpc":"2.0","id":"t","method":"sleep","params":{"ms":"soon"}}"#)
        .await;
    c.send(b"\n").await;
    let r = c.recv().await;
    assert_eq!(
        (code(&r), &r["id"]),
        (ErrorCode::InvalidParams, &json!("t"))
    );
    let mut big = br#"{"jsonrpc":"2.0","id":3,"method":"sleep","params":{"value":""#.to_vec();
    big.extend(vec![b'a'; 100_000]);
    big.extend(b"\"}}\n");
    c.send(&big).await;
    let r = c.recv().await;
    assert_eq!(
        (code(&r), &r["id"]),
        (ErrorCode::RequestTooLarge, &json!(3))
    );
    c.send(b"[{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"status\"}]\n")
        .await;
    assert_eq!(code(&c.recv().await), ErrorCode::InvalidRequest);
    c.send(b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"status\"}\r\n")
        .await;
    let r = c.recv().await;
    assert_eq!(
        (&r["id"], &r["result"]),
        (&json!(5), &json!({"test": true}))
    );
}

#[tokio::test]
async fn pipelined_answers_come_as_they_finish() {
    let d = start(|_| {});
    let mut c = Raw::new(&d.path).await;
    for (id, ms) in [(1, 800), (2, 400), (3, 0)] {
        let req =
            json!({"jsonrpc":"2.0","id":id,"method":"sleep","params":{"ms":ms,"value":id*10}});
        c.send(format!("{req}\n").as_bytes()).await;
    }
    let mut order = vec![];
    for _ in 0..3 {
        let r = c.recv().await;
        assert_eq!(
            r["result"].as_i64().unwrap(),
            r["id"].as_i64().unwrap() * 10
        );
        order.push(r["id"].as_i64().unwrap());
    }
    assert_eq!(order, vec![3, 2, 1]);
}

#[tokio::test]
async fn half_close_still_gets_every_answer() {
    let d = start(|_| {});
    let mut c = Raw::new(&d.path).await;
    c.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sleep\",\"params\":{\"ms\":300,\"value\":\"late\"}}\n").await;
    c.wr.shutdown().await.unwrap(); // SHUT_WR: we are done sending, not gone
    assert_eq!(c.recv().await["result"], json!("late"));
    assert!(c.eof().await);
    assert_eq!(d.counters.cancelled.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn disconnect_cancels_pending_work() {
    let d = start(|_| {});
    let mut c = Raw::new(&d.path).await;
    for id in 0..5 {
        c.send(format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"sleep\",\"params\":{{\"ms\":60000}}}}\n").as_bytes()).await;
    }
    while d.counters.started.load(Ordering::SeqCst) < 5 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(c);
    let t0 = std::time::Instant::now();
    while d.counters.cancelled.load(Ordering::SeqCst) < 5 {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "pending calls were not cancelled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn uid_not_allowed_is_rejected() {
    let me = nix::unistd::geteuid().as_raw();
    let d = start(|o| o.allowed_uids = vec![me.wrapping_add(12345)]);
    let mut c = Raw::new(&d.path).await;
    c.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status\"}\n")
        .await;
    let r = c.recv().await;
    assert_eq!(
        (code(&r), &r["id"]),
        (ErrorCode::Unauthorized, &Value::Null)
    );
    assert!(c.eof().await);
    // The Rust client surfaces it as the daemon's error, not a bare EOF.
    let client = d.client().await;
    let e = client.call("status", Value::Null).await.unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::Unauthorized), "{e}");
    assert_eq!(d.counters.started.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn shutdown_is_for_the_owner_only() {
    let me = nix::unistd::geteuid().as_raw();
    let d = start(|o| o.owner_uid = me.wrapping_add(1));
    let c = d.client().await;
    assert_eq!(
        c.request::<method::Shutdown>(&NoParams)
            .await
            .unwrap_err()
            .code(),
        Some(ErrorCode::Unauthorized)
    );
    assert_eq!(
        c.request::<method::Ping>(&json!([1, "x"])).await.unwrap(),
        json!([1, "x"])
    );
    assert!(d.path.exists());
}

#[tokio::test]
async fn shutdown_drains_then_removes_the_socket() {
    let d = start(|o| o.shutdown_deadline = Duration::from_secs(5));
    let c = std::sync::Arc::new(d.client().await);
    let slow = {
        let c = c.clone();
        tokio::spawn(async move { c.call("sleep", json!({"ms": 500, "value": "done"})).await })
    };
    while d.counters.started.load(Ordering::SeqCst) < 1 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        c.request::<method::Shutdown>(&NoParams)
            .await
            .unwrap()
            .shutting_down
    );
    let e = c.call("sleep", json!({"ms": 0})).await.unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::ShuttingDown));
    // The accept loop stops right after the phase change; give it a moment.
    let t0 = std::time::Instant::now();
    while Client::connect(&d.path).await.is_ok() {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "still accepting after shutdown"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(slow.await.unwrap().unwrap(), json!("done"));
    d.task.await.unwrap().unwrap();
    assert!(!d.path.exists(), "socket file left behind");
    assert_eq!(d.counters.shutdowns.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn deadline_answers_what_is_left() {
    let d = start(|o| o.shutdown_deadline = Duration::from_millis(200));
    let c = d.client().await;
    let stuck = c.call("sleep", json!({"ms": 60000}));
    let stop = async {
        while d.counters.started.load(Ordering::SeqCst) < 1 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        d.stop.shutdown();
    };
    let (r, ()) = tokio::join!(stuck, stop);
    assert_eq!(r.unwrap_err().code(), Some(ErrorCode::ShuttingDown));
    d.task.await.unwrap().unwrap();
    assert!(!d.path.exists());
}

#[tokio::test]
async fn client_pipelines_many_calls_on_one_connection() {
    let d = start(|_| {});
    let c = std::sync::Arc::new(d.client().await);
    let mut js = tokio::task::JoinSet::new();
    for i in 0..200u64 {
        let c = c.clone();
        js.spawn(async move {
            (
                i,
                c.call("sleep", json!({"ms": (i * 7) % 50, "value": i}))
                    .await,
            )
        });
    }
    let mut seen = [false; 200];
    while let Some(r) = js.join_next().await {
        let (i, v) = r.unwrap();
        assert_eq!(v.unwrap(), json!(i));
        assert!(!std::mem::replace(&mut seen[i as usize], true));
    }
    assert!(seen.iter().all(|s| *s));
    match c.call("gted", json!({"a": {"content": "x"}})).await {
        Err(ClientError::Rpc(e)) => assert_eq!(e.code, ErrorCode::InvalidParams),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn backpressure_bounds_inflight_per_connection() {
    let d = start(|o| o.max_inflight_per_connection = 4);
    let c = std::sync::Arc::new(d.client().await);
    let mut js = tokio::task::JoinSet::new();
    for i in 0..12 {
        let c = c.clone();
        js.spawn(async move { c.call("sleep", json!({"ms": 1000, "value": i})).await });
    }
    while let Some(r) = js.join_next().await {
        r.unwrap().unwrap();
    }
    assert_eq!(d.counters.started.load(Ordering::SeqCst), 12);
    // The handler itself counts the calls running at once: no waiting for
    // a fifth start that must not come.
    assert_eq!(
        d.counters.max_running.load(Ordering::SeqCst),
        4,
        "more than the cap ran at once (or never 4)"
    );
}

/// The attack: a client pipelines requests with big answers and never
/// reads them (it pinned ~4 MiB per `ping` echo, up to 1024 per
/// connection). Once the unsent answers pass the cap the server stops
/// reading that connection; when the client reads again, every request
/// is answered.
#[tokio::test]
async fn a_client_that_never_reads_cannot_pin_unbounded_answers() {
    const N: usize = 40;
    const VALUE: usize = 200 << 10;
    let d = start(|o| o.max_unsent_bytes_per_connection = 1 << 20);
    let (rd, mut wr) = UnixStream::connect(&d.path).await.unwrap().into_split();
    let writer = tokio::spawn(async move {
        let value = "v".repeat(VALUE);
        for i in 0..N {
            let line = format!(
                "{}\n",
                json!({"jsonrpc": "2.0", "id": i, "method": "sleep", "params": {"ms": 0, "value": value}})
            );
            wr.write_all(line.as_bytes()).await.unwrap();
        }
        wr
    });
    // Wait until the server has stopped taking requests.
    let mut last = usize::MAX;
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = d.counters.started.load(Ordering::SeqCst);
        if now == last {
            break;
        }
        last = now;
    }
    // 1 MiB of answers, plus what the socket buffers and the writer's
    // buffer hold, plus the request being read: far fewer than N.
    eprintln!("requests taken while the client did not read: {last} of {N}");
    assert!(
        last < 20,
        "the server kept reading: {last} of {N} requests taken"
    );
    // The client reads again: everything is answered.
    let mut rd = BufReader::new(rd);
    let mut ids = Vec::new();
    for _ in 0..N {
        let mut line = String::new();
        tokio::time::timeout(Duration::from_secs(20), rd.read_line(&mut line))
            .await
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["result"].as_str().map(str::len), Some(VALUE));
        ids.push(v["id"].as_u64().unwrap() as usize);
    }
    ids.sort();
    assert_eq!(ids, (0..N).collect::<Vec<_>>());
    writer.await.unwrap();
}

/// The attack: unbounded connections. Past `max_connections` a new one
/// gets one `OVERLOADED` line (id null) and is closed; when a connection
/// ends, a new one is served again.
#[tokio::test]
async fn connections_past_the_limit_are_refused_with_a_clear_error() {
    let d = start(|o| o.max_connections = 2);
    let status = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status\"}\n";
    let mut a = Raw::new(&d.path).await;
    let mut b = Raw::new(&d.path).await;
    for c in [&mut a, &mut b] {
        c.send(status).await;
        assert_eq!(c.recv().await["result"], json!({"test": true}));
    }
    let mut c = Raw::new(&d.path).await;
    let r = c.recv().await;
    assert_eq!((code(&r), &r["id"]), (ErrorCode::Overloaded, &Value::Null));
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 2 connections"),
        "{r}"
    );
    assert!(c.eof().await);
    drop(a);
    // The server notices the closed connection on its own time.
    let t0 = std::time::Instant::now();
    loop {
        let mut c = Raw::new(&d.path).await;
        c.send(status).await;
        let r = c.recv().await;
        if r.get("result").is_some() {
            break;
        }
        assert_eq!(code(&r), ErrorCode::Overloaded);
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "a freed place was never reused"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    b.send(status).await;
    assert_eq!(b.recv().await["result"], json!({"test": true}));
}

/// Attack on "exactly one answer": a method whose task panics (a leanpool
/// bug) used to leave its request unanswered (the connection's JoinSet
/// dropped the panic). It is answered INTERNAL_ERROR, never WORKER_FAILED,
/// and the connection goes on serving.
#[tokio::test]
async fn a_panicking_method_is_answered_internal_error() {
    let s = start(|_| {});
    let mut raw = Raw::new(&s.path).await;
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"panic\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"status\"}\n").await;
    let mut got = vec![raw.recv().await, raw.recv().await];
    got.sort_by_key(|v| v["id"].as_i64());
    assert_eq!(got[0]["id"], 1, "{got:?}");
    assert_eq!(
        got[0]["error"]["code"],
        ErrorCode::InternalError.code(),
        "{got:?}"
    );
    assert!(
        got[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the test handler's `panic` method"),
        "{got:?}"
    );
    assert_eq!(got[1]["result"], json!({"test": true}), "{got:?}");
}

/// Attack on "exactly one answer" through the other door: a method that
/// takes its connection over (`lease`) and panics before answering used to
/// take its connection's task down, leaving the request unanswered. It is
/// answered INTERNAL_ERROR, the connection stays JSON-RPC, and a request
/// in flight on another connection is answered meanwhile.
#[tokio::test]
async fn a_panicking_upgrade_is_answered_internal_error() {
    let s = start(|_| {});
    let mut other = Raw::new(&s.path).await;
    other.send(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"sleep\",\"params\":{\"ms\":300,\"value\":\"late\"}}\n").await;
    let mut raw = Raw::new(&s.path).await;
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"upgrade_panic\"}\n")
        .await;
    let got = raw.recv().await;
    assert_eq!(
        (got["id"].clone(), code(&got)),
        (json!(1), ErrorCode::InternalError),
        "{got}"
    );
    assert!(
        got["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`upgrade_panic` method"),
        "{got}"
    );
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"status\"}\n")
        .await;
    assert_eq!(raw.recv().await["result"], json!({"test": true}));
    assert_eq!(other.recv().await["result"], json!("late"));
    assert!(!s.task.is_finished());
}

/// A tunnel that panics after its upgrade was answered: its connection
/// closes (the client reads the end, not a hang), and the daemon serves
/// other connections on.
#[tokio::test]
async fn a_panicking_tunnel_closes_only_its_connection() {
    let s = start(|_| {});
    let mut raw = Raw::new(&s.path).await;
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tunnel_panic\"}\n")
        .await;
    assert_eq!(raw.recv().await["result"], json!({"tunnel": true}));
    raw.send(b"anything\n").await;
    assert!(raw.eof().await, "the connection was not closed");
    let mut other = Raw::new(&s.path).await;
    other
        .send(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"status\"}\n")
        .await;
    assert_eq!(other.recv().await["result"], json!({"test": true}));
    assert!(!s.task.is_finished());
}
