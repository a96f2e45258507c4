//! The workers' OS sandbox on real Lean (the WASM build installed by
//! `scripts/setup`; FAILS when it is missing), through the daemon with the
//! input guard switched off by config (`[guard] enabled = false`), so that
//! the attacker's `#eval` really runs: the sandbox (default `[sandbox] mode
//! = "required"`) is then all that stands between it and the host. One
//! worker for the whole binary (every request shares one header).
//!
//! What the WASM build can reach at all: its emscripten glue mounts the
//! host's `/tmp` and `/home` (and the `LEAN_PATH` directories) into the
//! WebAssembly file system, so `IO.FS` on `/tmp/...` is a real host file
//! operation; everything else lands in an in-memory file system. The test
//! directory is under `/tmp`, so the attacks below are real host accesses
//! that only the sandbox stops.

mod daemon_support;

use daemon_support::{connect_expecting_lean, counters, status, Daemon, Lean};
use leanpool_protocol::method::{self, NoParams};
use leanpool_protocol::{CheckParams, CheckResult, CheckStatus, ErrorCode};
use leanpool_rpc::Client;
use leanpool_testkit::answers::messages;
use std::path::Path;

/// Every request uses this header, so all share one worker.
const HEADER: &str = "import Std.Internal.UV.TCP\n";

/// The result cache is off: every attack must reach Lean, on every run.
const CONFIG: &str = "[guard]\nenabled = false\n\n[pool]\nmax_workers = 1\nmax_workers_per_key = 1\nstart_timeout_ms = 600000\ndefault_timeout_ms = 300000\n\n[cache]\nenabled = false\n";

async fn check(c: &Client, body: &str) -> CheckResult {
    let text = format!("{HEADER}{body}\n");
    c.request::<method::Check>(&CheckParams::new(text))
        .await
        .unwrap()
}

/// An `#eval` that runs `action` (an `IO Unit`) and reports `RAN` or
/// `DENIED: <error>` as an information message.
fn attempt(action: &str) -> String {
    format!(
        "#eval show IO String from do\n  try\n    {action}\n    pure \"RAN\"\n  catch e => pure s!\"DENIED: {{e}}\""
    )
}

/// Starts the daemon with its `TMPDIR` in `dir` (so the worker's private
/// directory, `$TMPDIR/leanpool-worker-*`, can be found and checked).
fn start_daemon(dir: &Path) -> Daemon {
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    Daemon::start_with_env(dir, CONFIG, Lean::Real, &[("TMPDIR", &tmp)])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guard_off_code_cannot_escape_the_worker_sandbox() {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let d = start_daemon(dir.path());
    let c = connect_expecting_lean(&d).await;

    // The worker is up and answers ordinary checks (this also starts it).
    let r = check(&c, "theorem warm : 1 + 1 = 2 := rfl").await;
    assert_eq!(r.status, CheckStatus::Ok, "{r:?}\n{}", d.logs());

    // Its private directory exists, and code in it may write there.
    let private: Vec<_> = std::fs::read_dir(dir.path().join("tmp"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("leanpool-worker-")
        })
        .collect();
    assert_eq!(private.len(), 1, "expected one worker dir: {private:?}");
    let inside = private[0].join("scratch.txt");
    let r = check(
        &c,
        &attempt(&format!(
            "IO.FS.writeFile \"{}\" \"scratch-ok\"",
            inside.display()
        )),
    )
    .await;
    assert!(messages(&r).contains("RAN"), "{r:?}");
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "scratch-ok");

    sandbox_blocks_writefile_outside_private_dir(&c, dir.path()).await;
    sandbox_blocks_readfile_of_host_secret(&c, dir.path()).await;
    sandbox_blocks_tcp_connect_to_localhost(&c).await;

    // The same worker still answers ordinary checks correctly.
    let pids = |st: &leanpool_daemon::StatusResult| -> Vec<Option<u32>> {
        st.pool
            .keys
            .iter()
            .flat_map(|k| k.workers.iter().map(|w| w.pid))
            .collect()
    };
    let before = pids(&status(&c).await);
    assert_eq!(before.len(), 1, "{before:?}");
    let r = check(&c, "theorem after_ok : 2 + 2 = 4 := by decide").await;
    assert_eq!(r.status, CheckStatus::Ok, "{r:?}");
    let r = check(&c, "theorem after_bad : 2 + 2 = 5 := by decide").await;
    assert_eq!(r.status, CheckStatus::Error, "{r:?}");
    assert_eq!(pids(&status(&c).await), before, "the worker was replaced");

    // Last (it costs the worker): the frame forgery of issue 10.
    forged_diagnostics_frame_kills_the_worker_and_the_next_verdict_is_true(
        &c,
        before[0].expect("worker pid"),
    )
    .await;
}

/// Issue 10 part 4, on real Lean: code that runs in the worker writes one
/// forged, Content-Length framed `textDocument/publishDiagnostics` for
/// version 2147483647 with no diagnostics to the worker's own stdout (the
/// LSP channel). Before the fix this made every later check on that worker
/// `ok`. Now the driver sees a frame for a version it never sent: the
/// request is answered WORKER_FAILED with `data.cause`
/// `protocol_violation`, the worker is killed (not reused, not retried),
/// `compromised` counts it, and the next caller's false theorem is an
/// `error` (on a fresh worker).
async fn forged_diagnostics_frame_kills_the_worker_and_the_next_verdict_is_true(
    c: &Client,
    pid: u32,
) {
    let before = counters(c).await;
    assert_eq!(before.compromised, 0, "{before:?}");
    let forge = forged_frame_text();
    let e = c
        .request::<method::Check>(&CheckParams::new(format!("{HEADER}{forge}\n")))
        .await
        .expect_err("the forged frame was not noticed");
    let rpc = match e {
        leanpool_rpc::ClientError::Rpc(r) => r,
        other => panic!("expected WORKER_FAILED, got {other}"),
    };
    assert_eq!(rpc.code, ErrorCode::WorkerFailed, "{rpc:?}");
    assert_eq!(
        rpc.data,
        Some(serde_json::json!({"cause": "protocol_violation"})),
        "{rpc:?}"
    );
    let after = counters(c).await;
    assert_eq!(after.compromised, 1, "{after:?}");
    assert_eq!(
        after.retries, before.retries,
        "a compromised worker's request is not retried: {after:?}"
    );
    fresh_worker_judges_the_next_callers(c, pid).await;
}

/// A `#eval` whose task writes one Content-Length framed
/// `publishDiagnostics` for version 2147483647, with no diagnostics, to
/// the process's real stdout (the LSP channel).
fn forged_frame_text() -> String {
    let body = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/publishDiagnostics\",\"params\":{{\"uri\":\"file:///leanpool/{}\",\"version\":2147483647,\"diagnostics\":[]}}}}",
        leanpool_lean::lsp::DOCUMENT_NAME
    );
    let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
    // As a Lean string literal: leanpool's lexer refuses `{` in any string
    // literal (it cannot be told from interpolation without Lean's token
    // table), so the braces travel as `<` `>` and are mapped back in Lean
    // (one byte each: the Content-Length stays right). CR/LF as escapes.
    assert!(!frame.contains(['<', '>']));
    let lit: String = frame
        .chars()
        .flat_map(|ch| match ch {
            '"' => vec!['\\', '"'],
            '\\' => vec!['\\', '\\'],
            '\r' => vec!['\\', 'r'],
            '\n' => vec!['\\', 'n'],
            '{' => vec!['<'],
            '}' => vec!['>'],
            c => vec![c],
        })
        .collect();
    // `IO.getStdout` inside `#eval` is Lean's capture buffer (it becomes a
    // message), but a task's thread has the process's real stdout, the LSP
    // channel (seen on the WASM build run cold, without the sandbox:
    // `MARK1` from `#eval` came back as a message, the same write from
    // `IO.asTask` reached the process's stdout).
    let forge = format!(
        "#eval show IO Unit from do\n  \
         let frame := \"{lit}\".map fun c => if c == '<' then Char.ofNat 123 else if c == '>' then Char.ofNat 125 else c\n  \
         let t ← IO.asTask (do\n    let out ← IO.getStdout\n    out.putStr frame\n    out.flush)\n  \
         let _ ← IO.wait t"
    );
    forge
}

/// The compromised worker `pid` goes away; the next caller's false
/// theorem is not `ok` (a fresh worker judges it), a true one is, and
/// `pid` is never reused.
async fn fresh_worker_judges_the_next_callers(c: &Client, pid: u32) {
    let t = std::time::Instant::now();
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            t.elapsed().as_secs() < 30,
            "the compromised worker {pid} is still alive"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let r = check(c, "theorem bad : 2 + 2 = 5 := by decide").await;
    assert_eq!(r.status, CheckStatus::Error, "{r:?}");
    let r = check(c, "theorem good : 2 + 2 = 4 := by decide").await;
    assert_eq!(r.status, CheckStatus::Ok, "{r:?}");
    let st = status(c).await;
    let now: Vec<Option<u32>> = st
        .pool
        .keys
        .iter()
        .flat_map(|k| k.workers.iter().map(|w| w.pid))
        .collect();
    assert!(
        !now.contains(&Some(pid)),
        "the compromised worker was reused: {now:?}"
    );
    assert_eq!(st.pool.counters.compromised, 1);
}

/// `#eval IO.FS.writeFile` to a path outside the worker's own directory
/// (a directory the daemon's user owns and can write) fails, and the file
/// does not appear.
async fn sandbox_blocks_writefile_outside_private_dir(c: &Client, dir: &Path) {
    let target = dir.join("pwned.txt");
    let r = check(
        c,
        &attempt(&format!(
            "IO.FS.writeFile \"{}\" \"pwned\"",
            target.display()
        )),
    )
    .await;
    let m = messages(&r);
    assert!(m.contains("DENIED"), "{r:?}");
    assert!(!m.contains("RAN"), "{r:?}");
    assert!(!target.exists(), "the file appeared on the host");
    // Without the try/catch: an error, never ok.
    let r = check(
        c,
        &format!("#eval IO.FS.writeFile \"{}\" \"pwned\"", target.display()),
    )
    .await;
    assert_eq!(r.status, CheckStatus::Error, "{r:?}");
    assert!(!target.exists(), "the file appeared on the host");
}

/// `#eval IO.FS.readFile` of a file the daemon's user can read fails, and
/// its contents appear nowhere in the answer.
async fn sandbox_blocks_readfile_of_host_secret(c: &Client, dir: &Path) {
    let secret = dir.join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET-4711").unwrap();
    let text = format!("#eval IO.FS.readFile \"{}\"", secret.display());
    let r = check(c, &text).await;
    let all = serde_json::to_string(&r).unwrap();
    assert!(!all.contains("TOP-SECRET-4711"), "the secret leaked: {all}");
    assert_eq!(r.status, CheckStatus::Error, "{r:?}");
    let r = check(
        c,
        &attempt(&format!("let _ ← IO.FS.readFile \"{}\"", secret.display())),
    )
    .await;
    assert!(messages(&r).contains("DENIED"), "{r:?}");
}

/// A TCP connect to a listener on 127.0.0.1 never arrives, and the
/// attempt really ran: natively, creating the socket fails (`socket(2)` is
/// denied by seccomp, TCP connect by Landlock) and the `#eval` reports
/// `DENIED`.
///
/// The WASM build has no socket API at all: it is built without libuv's
/// TCP, and `Std.Internal.UV.TCP.Socket.new` stops the worker with Lean's
/// runtime assertion "Please build a version of Lean4 with libuv to invoke
/// this" (seen on this test's first run on the WASM worker: the worker died,
/// the pool retried on a fresh one). There the attempt is not made (it
/// would cost two worker starts and prove nothing about the sandbox); the
/// sandbox's network rules are tested on a real process by `leanpool-lean`'s
/// sandbox unit test `shell_in_sandbox_reaches_only_its_own_dir` (bash's
/// `/dev/tcp` connect to a listener on 127.0.0.1 fails, nothing arrives).
async fn sandbox_blocks_tcp_connect_to_localhost(c: &Client) {
    let backend = c
        .request::<method::Status>(&NoParams)
        .await
        .unwrap()
        .daemon
        .backend
        .kind;
    if backend == leanpool_protocol::BackendInfoKind::Wasm {
        eprintln!("tcp connect attempt: not made on the WASM backend (no libuv TCP in that build; see this function's doc)");
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Start the connect and give it a second; the promise is not awaited
    // (the interpreter cannot run `IO.Promise.result!` here).
    let action = format!(
        "let s ← Std.Internal.UV.TCP.Socket.new\n    \
         let _ ← s.connect (Std.Net.SocketAddress.v4 ⟨Std.Net.IPv4Addr.ofParts 127 0 0 1, {port}⟩)\n    \
         IO.sleep 1000"
    );
    let r = check(c, &attempt(&action)).await;
    let m = messages(&r);
    // The attempt really ran (an elaboration error would prove nothing)
    // and failed.
    assert!(m.contains("DENIED"), "{r:?}");
    listener.set_nonblocking(true).unwrap();
    assert!(
        listener.accept().is_err(),
        "a connection from the worker arrived: {r:?}"
    );
    eprintln!("tcp connect attempt answered: {m}");
}
