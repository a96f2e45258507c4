//! The tasks that move a Lean process's bytes: the writer (stdin), the
//! reader (stdout: each frame through the one filter, then routed) and
//! the stderr drain, and the reaping of a killed process.

use super::{Notifications, Shared};
use crate::frames::{classify, Frame, Violation};
use crate::framing::{encode, FrameError, FrameReader};
use crate::lsp;
use crate::proc::RingLog;
use leanpool_protocol::pending::Completion;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

/// Waits for a killed child off the caller's path: on the current tokio
/// runtime if there is one, else on a plain thread.
pub(super) fn reap_in_background(mut child: tokio::process::Child, pid: u32) {
    match tokio::runtime::Handle::try_current() {
        Ok(h) => {
            h.spawn(async move {
                let _ = child.wait().await;
            });
        }
        Err(_) => {
            std::thread::spawn(move || {
                let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid as i32), None);
                drop(child);
            });
        }
    }
}

pub(super) async fn write_loop(
    mut stdin: tokio::process::ChildStdin,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    while let Some(bytes) = rx.recv().await {
        if stdin.write_all(&bytes).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
}

/// What Lean's runtime prints before it gives up on the process
/// (`lean_internal_panic`: out of memory, stack overflow in C code, ...).
/// Native Lean exits right after; the WASM build prints it and then hangs
/// with its threads gone (the 2 GiB heap cap, scripts/wasm/README.md), so
/// the drain treats the line itself as the worker's death instead of
/// letting the request wait for its time limit.
const PANIC_MARKER: &[u8] = b"INTERNAL PANIC";

pub(super) async fn stderr_loop<N>(
    mut pipe: tokio::process::ChildStderr,
    log: Arc<Mutex<RingLog>>,
    shared: Arc<Mutex<Shared<N>>>,
    events: watch::Sender<()>,
) {
    let mut buf = vec![0u8; 8192];
    // The marker may straddle two reads: keep the end of the previous one.
    let mut carry: Vec<u8> = Vec::new();
    let mut panicked = false;
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            break;
        }
        log.lock().unwrap().push(&buf[..n]);
        if panicked {
            continue;
        }
        carry.extend_from_slice(&buf[..n]);
        if let Some(at) = find(&carry, PANIC_MARKER) {
            panicked = true;
            let line_end = carry[at..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(carry.len(), |e| at + e);
            let line = String::from_utf8_lossy(&carry[at..line_end])
                .trim()
                .to_string();
            tracing::warn!("Lean worker panicked: {line}");
            let mut st = shared.lock().unwrap();
            st.panic = Some(line.clone());
            // As a closed stdout does.
            st.die(line);
            drop(st);
            events.send_replace(());
        } else {
            let keep = carry.len().saturating_sub(PANIC_MARKER.len() - 1);
            carry.drain(..keep);
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

pub(super) async fn read_loop<N: Notifications>(
    stdout: tokio::process::ChildStdout,
    shared: Arc<Mutex<Shared<N>>>,
    events: watch::Sender<()>,
    out: mpsc::UnboundedSender<Vec<u8>>,
) {
    let mut reader = FrameReader::new(stdout);
    loop {
        let body = match reader.next().await {
            Ok(Some(b)) => b,
            Ok(None) => {
                shared.lock().unwrap().die("stdout closed".into());
                break;
            }
            Err(FrameError::Io(e)) => {
                shared.lock().unwrap().die(e.to_string());
                break;
            }
            Err(e @ FrameError::BadHeader(_)) => {
                shared
                    .lock()
                    .unwrap()
                    .violation(Violation::MalformedFrame(e.to_string()));
                break;
            }
        };
        let verdict = match serde_json::from_slice::<Value>(&body) {
            Ok(msg) => handle_message(msg, &shared, &out),
            Err(e) => Err(Violation::NotJson(e.to_string())),
        };
        if let Err(what) = verdict {
            shared.lock().unwrap().violation(what);
            break;
        }
        events.send_replace(());
    }
    tracing::debug!(
        "Lean worker reader stopped: {:?}",
        shared.lock().unwrap().dead
    );
    events.send_replace(());
}

/// Routes one message from Lean: an answer to its request, a request of
/// the server's own (answered `null`), or a notification for the handler.
/// `Err` names a frame the driver did not ask for: the caller marks the
/// worker compromised.
fn handle_message<N: Notifications>(
    msg: Value,
    shared: &Mutex<Shared<N>>,
    out: &mpsc::UnboundedSender<Vec<u8>>,
) -> Result<(), Violation> {
    {
        // Passthrough (an editor's leased document): what is not an answer
        // to the worker's own requests belongs to the editor, unchecked.
        let st = shared.lock().unwrap();
        if let Some(tap) = &st.tap {
            let method = msg.get("method");
            let id = msg.get("id");
            let ours = method.is_none()
                && id
                    .and_then(Value::as_i64)
                    .is_some_and(|i| st.pending.is_waiting(i));
            if !ours {
                let _ = tap.send(msg);
                return Ok(());
            }
        }
    }
    match classify(&msg)? {
        Frame::Request { id, .. } => {
            // The server's own requests (`workspace/semanticTokens/refresh`…).
            shared.lock().unwrap().server_requests += 1;
            let body = serde_json::to_vec(&lsp::null_response(id)).expect("serializable");
            let _ = out.send(encode(&body));
        }
        Frame::Notification { method, params } => {
            shared
                .lock()
                .unwrap()
                .handler
                .notification(method, params)?;
        }
        Frame::Answer { id, error, result } => {
            let reply = match error {
                Some(err) => Err((
                    err.get("code").and_then(Value::as_i64).unwrap_or(0),
                    err.get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                )),
                None => Ok(result.cloned().unwrap_or(Value::Null)),
            };
            match shared.lock().unwrap().pending.complete(id) {
                Completion::Waiting(tx) => {
                    let _ = tx.send(reply);
                }
                Completion::Ignored => {}
                Completion::Unasked => return Err(Violation::Unasked(id)),
            }
        }
    }
    Ok(())
}
