//! One leased worker as an open document's requests see it: the way to
//! its Lean ([`Sink`]) and the leased-worker gate
//! (`leanpool_lean::leased::Gate`), which every message to and from the
//! worker passes and which keeps the one map of requests waiting for
//! Lean's answers (the same filter as the daemon's `lease` tunnel; with
//! `--socket` the daemon's gate applies too).

use crate::convert::{replace_uri, shift_version};
use crate::failed;
use leanpool_lean::leased::{Gate, Refusal};
use leanpool_lean::RawSender;
use leanpool_protocol::lsp_error;
use leanpool_screen::guard;
use leanpool_screen::guard::LeanText;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Instant;
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

/// Where the answer to one forwarded request goes: Lean's answer, or the
/// gate's error answer (time limit passed, the worker went away).
pub(crate) type Waiter = oneshot::Sender<Value>;

/// One leased worker as seen by requests and the forwarder.
pub(crate) struct Conn {
    pub(crate) gen: u64,
    pub(crate) raw: Sink,
    pub(crate) pid: u32,
    pub(crate) worker_uri: String,
    pub(crate) editor_uri: String,
    /// worker version = editor version + offset.
    pub(crate) offset: i64,
    /// The leased-worker filter and the requests waiting for Lean.
    pub(crate) gate: Mutex<Gate<Waiter>>,
}

/// A gate's refusal as the editor sees it.
fn refusal(r: Refusal) -> Error {
    Error {
        code: ErrorCode::from(r.code),
        message: r.message.into(),
        data: None,
    }
}

/// A request the gate passed and that was sent to Lean, waiting for its
/// answer. Dropped before the answer (the editor cancelled: tower-lsp drops
/// the handler's future), it is cancelled in Lean; the gate then expects
/// Lean to stop within the lease's grace, or the worker is ended
/// (`Gate::tick`).
pub(crate) struct Started {
    conn: Arc<Conn>,
    /// Lean's id of the request; `None` once answered.
    id: Option<i64>,
    answer: oneshot::Receiver<Value>,
}

impl Drop for Started {
    fn drop(&mut self) {
        let Some(id) = self.id else { return };
        let cancel = self.conn.gate.lock().unwrap().cancel(id, Instant::now());
        if let Some((msg, _)) = cancel {
            self.conn.raw.send(&msg);
        }
    }
}

impl Started {
    /// Lean's answer (URIs in the editor's terms), Lean's error, or the
    /// gate's (time limit passed, the worker went away).
    pub(crate) async fn answer(mut self) -> Result<Value> {
        let answer = (&mut self.answer).await;
        self.id = None;
        let msg = answer.map_err(|_| worker_gone())?;
        if let Some(err) = msg.get("error") {
            let code = err["code"].as_i64().unwrap_or(lsp_error::INTERNAL_ERROR);
            let message = err["message"].as_str().unwrap_or("").to_string();
            return Err(Error {
                code: ErrorCode::from(code),
                message: message.into(),
                data: err.get("data").cloned(),
            });
        }
        let mut r = msg.get("result").cloned().unwrap_or(Value::Null);
        replace_uri(&mut r, &self.conn.worker_uri, &self.conn.editor_uri);
        Ok(r)
    }
}

impl Conn {
    /// Passes a request of the editor's through the gate and sends it to
    /// Lean, at once (no waiting): the document's actor calls this in
    /// the editor's order with its edits, so the gate checks each request
    /// against the text the editor had when it asked.
    pub(crate) fn start(self: &Arc<Self>, method: &str, mut params: Value) -> Result<Started> {
        replace_uri(&mut params, &self.editor_uri, &self.worker_uri);
        if method == "textDocument/waitForDiagnostics" {
            shift_version(&mut params, &["version"], self.offset);
        }
        let (tx, answer) = oneshot::channel();
        let msg = self
            .gate
            .lock()
            .unwrap()
            .request(Value::Null, tx, method, &params, Instant::now())
            .map_err(refusal)?;
        if !self.raw.send(&msg) {
            self.gate.lock().unwrap().unsent(&msg);
            return Err(worker_gone());
        }
        Ok(Started {
            conn: self.clone(),
            id: msg["id"].as_i64(),
            answer,
        })
    }

    pub(crate) fn notify(&self, method: &str, mut params: Value) {
        replace_uri(&mut params, &self.editor_uri, &self.worker_uri);
        let msg = self
            .gate
            .lock()
            .unwrap()
            .notification(method, &params, Instant::now());
        match msg {
            Ok(Some(m)) => {
                self.raw.send(&m);
            }
            Ok(None) => {}
            Err(r) => {
                tracing::warn!(uri = %self.editor_uri, "`{method}` not passed to Lean: {}", r.message);
            }
        }
    }

    /// Sends the editor's screened text to Lean as the worker's `version`
    /// through the gate, which refuses a text whose imports are not the
    /// ones the worker was leased for.
    pub(crate) fn send_text(
        &self,
        version: i64,
        screened: &guard::Screened,
    ) -> std::result::Result<(), Refusal> {
        let text = self
            .gate
            .lock()
            .unwrap()
            .accepted(version, screened, Instant::now())?;
        self.raw.send_text(&self.worker_uri, version, &text);
        Ok(())
    }
}

pub(crate) fn worker_gone() -> Error {
    failed("the Lean worker serving this file stopped; it is being replaced and the file re-opened, ask again".into())
}
