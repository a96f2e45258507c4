//! The forwarder of one leased worker: carries Lean's messages to the
//! editor through the worker's gate (answers to their waiting requests,
//! diagnostics and progress of versions the editor sent, Lean's own
//! requests to the editor and back; anything else is forged and ends the
//! worker), and applies the lease's limits: the gate's per-request time
//! limit and idle limit, and the one memory/CPU watch of a worker in this
//! process (`leanpool_lean::proc::LeaseWatch`).

use super::DocMsg;
use crate::conn::{Conn, Sink};
use crate::convert::{replace_uri, shift_version};
use crate::Shared;
use leanpool_lean::leased::{FromLean, LeaseLimits};
use leanpool_lean::proc;
use leanpool_protocol::{lsp_error, LEASE_ENDED_NOTIFICATION, LEASE_REFUSED_NOTIFICATION};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::mpsc;
use tower_lsp::jsonrpc::Request;
use tower_service::Service;

/// Why the forwarder stopped.
struct Ended {
    reason: String,
    /// A crash (re-open at once) rather than a limit or a forged frame
    /// (re-open at the next edit only).
    reopen: bool,
}

pub(crate) async fn send_notification(shared: &Shared, method: &str, params: Value) {
    let req = Request::build(method.to_string()).params(params).finish();
    let mut client = shared.client.clone();
    let _ = client.call(req).await;
}

/// Carries one worker's messages to the editor until the worker ends or
/// a limit ends it; then tells the document.
pub(crate) async fn forward(
    conn: Arc<Conn>,
    mut rx: mpsc::UnboundedReceiver<Value>,
    shared: Arc<Shared>,
    doc: mpsc::UnboundedSender<DocMsg>,
    notes: Arc<Mutex<Vec<Value>>>,
    watch: Option<proc::LeaseWatch>,
) {
    let mut tick = tokio::time::interval(LeaseLimits::POLL);
    let ended = loop {
        tokio::select! {
            m = rx.recv() => match m {
                None => break Ended {
                    reason: match conn.raw {
                        Sink::Local(_) => "the process ended".to_string(),
                        Sink::Remote(_) => "the connection to the leanpool daemon closed".to_string(),
                    },
                    reopen: true,
                },
                Some(m) => {
                    if let Some(end) = forward_one(&conn, &shared, &notes, m).await {
                        break end;
                    }
                }
            },
            _ = tick.tick() => {
                if let Some(reason) = on_tick(&conn, watch.as_ref()) {
                    break Ended { reason, reopen: false };
                }
            }
        }
    };
    // Whatever still waits is answered now; the actor kills the worker
    // (or closes the daemon's lease).
    for (tx, answer) in conn.gate.lock().unwrap().close(&ended.reason) {
        let _ = tx.send(answer);
    }
    let _ = doc.send(DocMsg::Died {
        gen: conn.gen,
        reason: ended.reason,
        reopen: ended.reopen,
    });
}

/// The gate's time limits, then the memory cap and CPU budget: why the
/// worker must end, if it must.
fn on_tick(conn: &Conn, watch: Option<&proc::LeaseWatch>) -> Option<String> {
    let due = conn.gate.lock().unwrap().tick(Instant::now());
    for m in &due.to_lean {
        conn.raw.send(m);
    }
    for (tx, answer) in due.to_holder {
        let _ = tx.send(answer);
    }
    due.end
        .or_else(|| watch.and_then(proc::LeaseWatch::exceeded))
}

/// Passes one message on; `Some` when the worker must go (a forged frame,
/// or the daemon's last message on a lease).
async fn forward_one(
    conn: &Arc<Conn>,
    shared: &Arc<Shared>,
    notes: &Mutex<Vec<Value>>,
    m: Value,
) -> Option<Ended> {
    if matches!(conn.raw, Sink::Remote(_)) {
        match m.get("method").and_then(Value::as_str) {
            Some(LEASE_ENDED_NOTIFICATION) => {
                let why = m["params"]["reason"].as_str().unwrap_or("no reason given");
                // The daemon ended it for a reason (a limit, a forged
                // frame, the worker's end): the next edit re-opens.
                return Some(Ended {
                    reason: format!("the leanpool daemon ended the lease: {why}"),
                    reopen: false,
                });
            }
            Some(LEASE_REFUSED_NOTIFICATION) => {
                tracing::warn!(uri = %conn.editor_uri, "the daemon did not pass a message on: {}", m["params"]);
                return None;
            }
            _ => {}
        }
    }
    let routed = conn.gate.lock().unwrap().from_lean(m);
    match routed {
        Ok(FromLean::Answer(tx, answer)) => {
            let _ = tx.send(answer);
        }
        Ok(FromLean::Lean(answer)) => {
            conn.raw.send(&answer);
        }
        Ok(FromLean::Drop) => {}
        Ok(FromLean::Holder(m)) if m.get("id").is_some() => ask_editor(conn, shared, m),
        Ok(FromLean::Holder(m)) => notify_editor(conn, shared, notes, m).await,
        Err(forged) => {
            tracing::warn!(uri = %conn.editor_uri, pid = conn.pid, "worker compromised: {}", forged.0);
            return Some(Ended {
                reason: format!("it wrote a frame nobody asked for ({})", forged.0),
                reopen: false,
            });
        }
    }
    None
}

/// Lean's own request (a refresh) that the gate passed: the editor
/// answers it, the answer goes back to Lean.
fn ask_editor(conn: &Arc<Conn>, shared: &Arc<Shared>, mut m: Value) {
    let id = m["id"].take();
    let method = m["method"].as_str().unwrap_or_default().to_string();
    let mut params = m.get_mut("params").map(Value::take).unwrap_or(Value::Null);
    replace_uri(&mut params, &conn.worker_uri, &conn.editor_uri);
    let conn = conn.clone();
    let mut client = shared.client.clone();
    tokio::spawn(async move {
        let cid = client.next_request_id();
        let req = Request::build(method).id(cid).params(params).finish();
        let answer = match client.call(req).await {
            Ok(Some(resp)) => {
                let mut v = serde_json::to_value(resp).unwrap_or(Value::Null);
                v["id"] = id.clone();
                replace_uri(&mut v, &conn.editor_uri, &conn.worker_uri);
                v
            }
            _ => {
                json!({ "jsonrpc": "2.0", "id": id, "error": { "code": lsp_error::INTERNAL_ERROR, "message": "the editor went away" } })
            }
        };
        if conn.gate.lock().unwrap().holder_answer(&id) {
            conn.raw.send(&answer);
        }
    });
}

/// A notification of Lean's the gate passed (diagnostics or progress of a
/// version the editor sent): versions and URI in the editor's terms,
/// leanpool's notes appended to diagnostics.
async fn notify_editor(conn: &Conn, shared: &Shared, notes: &Mutex<Vec<Value>>, mut m: Value) {
    let method = m["method"].as_str().unwrap_or_default().to_string();
    let mut params = m.get_mut("params").map(Value::take).unwrap_or(Value::Null);
    let path: &[&str] = match method.as_str() {
        "textDocument/publishDiagnostics" => &["version"],
        "$/lean/fileProgress" => &["textDocument", "version"],
        _ => &[],
    };
    if !path.is_empty() {
        shift_version(&mut params, path, -conn.offset);
    }
    replace_uri(&mut params, &conn.worker_uri, &conn.editor_uri);
    if method == "textDocument/publishDiagnostics" {
        let extra = notes.lock().unwrap().clone();
        if let Some(a) = params.get_mut("diagnostics").and_then(Value::as_array_mut) {
            a.extend(extra);
        }
    }
    send_notification(shared, &method, params).await;
}
