//! One leased worker as an open document's requests see it: the way to
//! its Lean ([`Sink`]), the requests waiting for Lean's answers, and the
//! leased-worker gate (`leanpool_lean::leased`) every request to a worker
//! in this process passes.

use crate::convert::{replace_uri, shift_version};
use crate::{failed, next_id, Shared};
use leanpool_lean::guard;
use leanpool_lean::guard::LeanText;
use leanpool_lean::leased::{Gate, Refusal};
use leanpool_lean::RawSender;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tower_lsp::jsonrpc::{Error, ErrorCode, Result};

/// The way to a worker's Lean.
#[derive(Clone)]
pub(crate) enum Sink {
    Local(RawSender),
    Remote(mpsc::UnboundedSender<Value>),
}

impl Sink {
    /// `false` when the worker (or the connection to it) is gone.
    pub(crate) fn send(&self, msg: &Value) -> bool {
        match self {
            Sink::Local(r) => r.send(msg),
            Sink::Remote(tx) => tx.send(msg.clone()).is_ok(),
        }
    }

    /// Replaces the worker's document `uri` with the screened `text` as
    /// `version`: locally through [`RawSender::send_text`] (the only way
    /// text reaches a local worker), remotely as the `didChange` the
    /// daemon's lease screens again.
    pub(crate) fn send_text(&self, uri: &str, version: i64, text: &LeanText) -> bool {
        match self {
            Sink::Local(r) => r.send_text(uri, version, text),
            Sink::Remote(tx) => tx
                .send(serde_json::json!({
                    "jsonrpc": "2.0",
                    "method": "textDocument/didChange",
                    "params": {
                        "textDocument": { "uri": uri, "version": version },
                        "contentChanges": [{ "text": text.as_str() }],
                    },
                }))
                .is_ok(),
        }
    }
}

/// One leased worker as seen by requests and the forwarder.
pub(crate) struct Conn {
    pub(crate) gen: u64,
    pub(crate) raw: Sink,
    pub(crate) pid: u32,
    pub(crate) worker_uri: String,
    pub(crate) editor_uri: String,
    /// worker version = editor version + offset.
    pub(crate) offset: i64,
    /// The first worker version holding the editor's text.
    pub(crate) first_version: i64,
    pub(crate) pending: Mutex<HashMap<i64, oneshot::Sender<Value>>>,
    /// The leased-worker filter (allowlist, params, bounds) for a worker
    /// in this process; a daemon's lease applies its own.
    pub(crate) gate: Option<Mutex<Gate>>,
    /// Time limit per request.
    pub(crate) limit: Duration,
}

/// A gate's refusal as the editor sees it.
fn refusal(r: Refusal) -> Error {
    Error {
        code: ErrorCode::from(r.code),
        message: r.message.into(),
        data: None,
    }
}

/// Sends `$/cancelRequest` to Lean when a forwarded request is dropped
/// before its answer (the editor cancelled it: tower-lsp drops the
/// handler's future).
struct CancelOnDrop<'a> {
    conn: &'a Conn,
    id: i64,
    done: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.conn.pending.lock().unwrap().remove(&self.id);
            self.conn.raw.send(&json!({ "jsonrpc": "2.0", "method": "$/cancelRequest", "params": { "id": self.id } }));
        }
    }
}

impl Conn {
    pub(crate) async fn request(
        &self,
        shared: &Shared,
        method: &str,
        mut params: Value,
    ) -> Result<Value> {
        replace_uri(&mut params, &self.editor_uri, &self.worker_uri);
        if method == "textDocument/waitForDiagnostics" {
            shift_version(&mut params, &["version"], self.offset);
        }
        if let Some(g) = &self.gate {
            params = g
                .lock()
                .unwrap()
                .check_request(method, &params)
                .map_err(refusal)?;
        }
        let id = next_id(shared);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, tx);
        let mut guard = CancelOnDrop {
            conn: self,
            id,
            done: false,
        };
        if !self
            .raw
            .send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
        {
            guard.done = true;
            self.pending.lock().unwrap().remove(&id);
            return Err(worker_gone());
        }
        let Ok(answer) = tokio::time::timeout(self.limit, rx).await else {
            // Dropping `guard` cancels the request in Lean.
            return Err(failed(format!(
                "`{method}` took longer than the limit of {} s per request; Lean was asked to cancel it",
                self.limit.as_secs()
            )));
        };
        guard.done = true;
        let msg = answer.map_err(|_| worker_gone())?;
        if let Some(err) = msg.get("error") {
            let code = err
                .get("code")
                .and_then(Value::as_i64)
                .unwrap_or(leanpool_protocol::lsp_error::INTERNAL_ERROR);
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            return Err(Error {
                code: ErrorCode::from(code),
                message: message.into(),
                data: err.get("data").cloned(),
            });
        }
        let mut r = msg.get("result").cloned().unwrap_or(Value::Null);
        if let Some(g) = &self.gate {
            g.lock().unwrap().rewrite_answer(method, &mut r);
        }
        replace_uri(&mut r, &self.worker_uri, &self.editor_uri);
        Ok(r)
    }

    pub(crate) fn notify(&self, method: &str, mut params: Value) {
        replace_uri(&mut params, &self.editor_uri, &self.worker_uri);
        let msg = match &self.gate {
            Some(g) => match g
                .lock()
                .unwrap()
                .notification(method, &params, Instant::now())
            {
                Ok(Some(m)) => m,
                Ok(None) => return,
                Err(r) => {
                    tracing::warn!(uri = %self.editor_uri, "`{method}` not passed to Lean: {}", r.message);
                    return;
                }
            },
            None => json!({ "jsonrpc": "2.0", "method": method, "params": params }),
        };
        self.raw.send(&msg);
    }

    /// Lean's document is now `screened` at the worker's `version`.
    pub(crate) fn sent(&self, version: i64, screened: &guard::Screened) {
        if let Some(g) = &self.gate {
            g.lock().unwrap().sent_text(version, screened);
        }
    }
}

pub(crate) fn worker_gone() -> Error {
    failed("the Lean worker serving this file stopped; it is being replaced and the file re-opened, ask again".into())
}
