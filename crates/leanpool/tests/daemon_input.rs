//! Bad input against a live daemon: every frame answered, the connection
//! survives, the process never dies. Lean is switched off, so the Lean
//! methods answer SPAWN_FAILED at once and nothing heavy starts.

mod daemon_support;

#[path = "../../leanpool-daemon/tests/fuzzgen/mod.rs"]
mod fuzzgen;

use daemon_support::{Daemon, Lean};
use leanpool_protocol::ErrorCode;
use leanpool_rpc::framing::Frame;
use leanpool_rpc::request::{decode, Decoded};
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

const MAX: usize = 2048;

fn connect(d: &Daemon) -> (BufReader<UnixStream>, UnixStream) {
    let s = UnixStream::connect(&d.socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    (BufReader::new(s.try_clone().unwrap()), s)
}

fn recv(r: &mut BufReader<UnixStream>) -> Value {
    let mut line = String::new();
    assert!(r.read_line(&mut line).unwrap() > 0, "connection closed");
    serde_json::from_str(&line).unwrap()
}

/// The answer's error code, read as the integer on the wire.
fn code(v: &Value) -> ErrorCode {
    ErrorCode::from_code(
        v["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("not an error: {v}")),
    )
}

fn vm_hwm_kib(pid: i32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let l = s.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    l.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn bad_frames_get_errors_and_the_connection_survives() {
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(
        dir.path(),
        &format!("max_request_bytes = {MAX}\n"),
        Lean::Off,
    );
    let (mut r, mut w) = connect(&d);
    let cases: Vec<(Vec<u8>, ErrorCode, Value)> = vec![
        (b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"".to_vec(), ErrorCode::ParseError, Value::Null),
        (b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"p\xc3\x28ng\"}".to_vec(), ErrorCode::ParseError, Value::Null),
        (br#"{"jsonrpc":"2.0","id":3,"method":"frobnicate"}"#.to_vec(), ErrorCode::MethodNotFound, json!(3)),
        (br#"{"jsonrpc":"2.0","id":4,"method":"check","params":{"text":42}}"#.to_vec(), ErrorCode::InvalidParams, json!(4)),
        (br#"{"jsonrpc":"2.0","id":5,"method":"check","params":"text"}"#.to_vec(), ErrorCode::InvalidParams, json!(5)),
        (br#"{"jsonrpc":"2.0","id":6,"method":"gted","params":{"a":{"content":"x"},"b":{}}}"#.to_vec(), ErrorCode::InvalidParams, json!(6)),
        (br#"{"jsonrpc":"2.0","id":7,"method":"status","params":{"verbose":true}}"#.to_vec(), ErrorCode::InvalidParams, json!(7)),
        (br#"{"jsonrpc":"2.0","id":"eight","method":"check","params":{"text":"theorem t : True := trivial"}}"#.to_vec(), ErrorCode::SpawnFailed, json!("eight")),
        (br#"{"id":9,"method":"ping"}"#.to_vec(), ErrorCode::InvalidRequest, json!(9)),
        (br#"{"jsonrpc":"2.0","method":"ping"}"#.to_vec(), ErrorCode::InvalidRequest, Value::Null),
        (b"[]".to_vec(), ErrorCode::InvalidRequest, Value::Null),
        ([b"{\"jsonrpc\":\"2.0\",\"id\":10,\"params\":\"".as_slice(), &[b'x'; 10 * MAX], b"\"}"].concat(), ErrorCode::RequestTooLarge, json!(10)),
        ([&[b'['; 5000][..]].concat(), ErrorCode::RequestTooLarge, Value::Null),
        ([&[b'['; 1000][..]].concat(), ErrorCode::ParseError, Value::Null),
    ];
    for (line, want, id) in cases {
        w.write_all(&line).unwrap();
        w.write_all(b"\n").unwrap();
        let a = recv(&mut r);
        assert_eq!(
            (code(&a), &a["id"]),
            (want, &id),
            "for {}",
            String::from_utf8_lossy(&line[..line.len().min(80)])
        );
        // Still the same, working connection.
        w.write_all(
            b"{\"jsonrpc\":\"2.0\",\"id\":\"alive\",\"method\":\"ping\",\"params\":true}\n",
        )
        .unwrap();
        assert_eq!(
            recv(&mut r),
            json!({"jsonrpc": "2.0", "id": "alive", "result": true})
        );
    }
}

#[test]
fn a_huge_line_is_skipped_without_being_buffered() {
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(dir.path(), "max_request_bytes = 65536\n", Lean::Off);
    let (mut r, mut w) = connect(&d);
    let before = vm_hwm_kib(d.pid());
    let chunk = vec![b'a'; 1 << 20];
    w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":\"")
        .unwrap();
    for _ in 0..256 {
        w.write_all(&chunk).unwrap(); // 256 MiB in one line
    }
    w.write_all(b"\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":2}\n")
        .unwrap();
    let a = recv(&mut r);
    assert_eq!(
        (code(&a), &a["id"]),
        (ErrorCode::RequestTooLarge, &json!(1))
    );
    assert!(
        a["error"]["message"].as_str().unwrap().contains("268435"),
        "{a}"
    );
    assert_eq!(recv(&mut r)["result"], json!(2));
    let grew_mib = (vm_hwm_kib(d.pid()) - before) / 1024;
    assert!(
        grew_mib < 32,
        "daemon peak RSS grew by {grew_mib} MiB for a 256 MiB line"
    );
}

/// Mutated frames sent to a live daemon over one connection: exactly one
/// answer per non-blank frame, all well-formed, and the daemon still up.
#[test]
fn live_fuzz() {
    const N: usize = 5000;
    let dir = tempfile::tempdir().unwrap();
    let mut d = Daemon::start(
        dir.path(),
        &format!("max_request_bytes = {MAX}\n"),
        Lean::Off,
    );
    let mut rng = StdRng::seed_from_u64(0x5eed_da3e);
    let seeds = fuzzgen::seeds();
    let mut input = Vec::new();
    let mut expected = 0usize;
    let mut n = 0;
    while n < N {
        let f = fuzzgen::frame(&mut rng, &seeds, MAX);
        let frame = if f.len() > MAX {
            Frame::TooLarge {
                len: f.len(),
                prefix: f.clone(),
            }
        } else {
            Frame::Line(f.clone())
        };
        match decode(&frame, MAX) {
            // A valid `shutdown` would (rightly) stop the daemon mid-test.
            Decoded::Call(req) if req.method == "shutdown" => continue,
            Decoded::Blank => {}
            _ => expected += 1,
        }
        input.extend(f);
        input.push(b'\n');
        n += 1;
    }
    let (mut r, mut w) = connect(&d);
    let sender = std::thread::spawn(move || {
        w.write_all(&input).unwrap();
        w // keep the connection open until the answers are in
    });
    let known = [
        ErrorCode::ParseError,
        ErrorCode::InvalidRequest,
        ErrorCode::MethodNotFound,
        ErrorCode::InvalidParams,
        ErrorCode::RequestTooLarge,
        ErrorCode::SpawnFailed,
    ];
    for i in 0..expected {
        let a = recv(&mut r);
        assert_eq!(a["jsonrpc"], "2.0");
        match (a.get("result"), a.get("error")) {
            (Some(_), None) => {}
            (None, Some(_)) => assert!(known.contains(&code(&a)), "answer {i}: unexpected {a}"),
            _ => panic!("answer {i} malformed: {a}"),
        }
    }
    let w = sender.join().unwrap();
    // Nothing extra: a ping is the very next answer.
    let mut w2 = w.try_clone().unwrap();
    w2.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"last\",\"method\":\"ping\"}\n")
        .unwrap();
    assert_eq!(recv(&mut r)["id"], json!("last"));
    assert!(d.is_running(), "daemon died:\n{}", d.logs());
    eprintln!("live fuzz: {N} frames, {expected} answers");
    drop(w);
    d.exits_cleanly_on(nix::sys::signal::Signal::SIGTERM, Duration::from_secs(15));
}

/// Two attacks on the live daemon that need no Lean. One `gted` request
/// with two flat trees of 100,000 leaves aborted the daemon (`memory
/// allocation of 80001600008 bytes failed`), leaving a stale socket: now
/// refused INVALID_PARAMS before anything is allocated, and the daemon
/// keeps serving with its memory unchanged. `params: ["x"]` was read as
/// `{"text": "x"}`: now INVALID_PARAMS.
#[test]
fn huge_gted_trees_and_array_params_are_refused_and_the_daemon_lives() {
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(dir.path(), "", Lean::Off);
    let (mut r, mut w) = connect(&d);
    let flat = json!({"content": "r", "children": vec![json!({"content": "x"}); 100_000]});
    let req = json!({"jsonrpc": "2.0", "id": 1, "method": "gted", "params": {"a": flat, "b": flat, "mode": "plain"}});
    let hwm_before = vm_hwm_kib(d.pid());
    w.write_all(format!("{req}\n").as_bytes()).unwrap();
    let a = recv(&mut r);
    assert_eq!(
        (code(&a), &a["id"]),
        (ErrorCode::InvalidParams, &json!(1)),
        "{a}"
    );
    assert!(
        a["error"]["message"]
            .as_str()
            .unwrap()
            .contains("more than 2000 nodes"),
        "{a}"
    );
    let grew_mib = vm_hwm_kib(d.pid()).saturating_sub(hwm_before) >> 10;
    assert!(
        grew_mib < 1024,
        "the daemon's peak memory grew by {grew_mib} MiB"
    );
    for (id, params) in [
        (2, json!(["x"])),
        (3, json!(["theorem t : True := trivial", 100, false])),
    ] {
        let req = json!({"jsonrpc": "2.0", "id": id, "method": "check", "params": params});
        w.write_all(format!("{req}\n").as_bytes()).unwrap();
        let a = recv(&mut r);
        assert_eq!(
            (code(&a), &a["id"]),
            (ErrorCode::InvalidParams, &json!(id)),
            "{a}"
        );
    }
    w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"alive\",\"method\":\"ping\",\"params\":true}\n")
        .unwrap();
    assert_eq!(
        recv(&mut r),
        json!({"jsonrpc": "2.0", "id": "alive", "result": true})
    );
}
