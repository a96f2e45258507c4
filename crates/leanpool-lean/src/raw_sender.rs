//! [`RawSender`]: the one way to write to a passthrough (leased) worker's
//! Lean, which lets document text through only as screened text.

use crate::framing::encode;
use leanpool_screen::guard::LeanText;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Writes raw LSP messages to one worker's Lean process (see
/// [`Worker::raw_sender`](crate::Worker::raw_sender)). Cheap to clone.
///
/// Document text reaches Lean through [`RawSender::send_text`] only,
/// which takes a [`LeanText`] (made only from a
/// [`Screened`](leanpool_screen::guard::Screened)): [`RawSender::send`] refuses the
/// messages that carry document text (`textDocument/didOpen`,
/// `textDocument/didChange`), so a leased worker, like a pooled one,
/// elaborates only what was screened.
#[derive(Clone)]
pub struct RawSender {
    out: mpsc::UnboundedSender<Vec<u8>>,
    liveness: Arc<dyn Liveness>,
}

/// Whether a connection is dead, without knowing its handler type (the
/// connection implements it for its shared state).
pub(crate) trait Liveness: Send + Sync {
    fn is_dead(&self) -> bool;
}

/// The LSP methods whose messages carry document text: only
/// [`RawSender::send_text`] sends them.
pub const TEXT_METHODS: &[&str] = &["textDocument/didOpen", "textDocument/didChange"];

impl RawSender {
    pub(crate) fn new(out: mpsc::UnboundedSender<Vec<u8>>, liveness: Arc<dyn Liveness>) -> Self {
        RawSender { out, liveness }
    }

    /// Queues `msg` for Lean; `false` when the worker is dead or gone, and
    /// for a message that carries document text (`TEXT_METHODS`: send
    /// those with [`RawSender::send_text`]).
    pub fn send(&self, msg: &Value) -> bool {
        let method = msg.get("method").and_then(Value::as_str);
        if method.is_some_and(|m| TEXT_METHODS.contains(&m)) {
            return false;
        }
        self.queue(msg)
    }

    /// Replaces the document `uri` with `text` as `version` (a
    /// `textDocument/didChange` with the whole text); `false` when the
    /// worker is dead or gone.
    pub fn send_text(&self, uri: &str, version: i64, text: &LeanText) -> bool {
        self.queue(&serde_json::json!({
            "jsonrpc": "2.0",
            "method": "textDocument/didChange",
            "params": {
                "textDocument": { "uri": uri, "version": version },
                "contentChanges": [{ "text": text.as_str() }],
            },
        }))
    }

    fn queue(&self, msg: &Value) -> bool {
        if self.liveness.is_dead() {
            return false;
        }
        let body = serde_json::to_vec(msg).expect("serializable");
        self.out.send(encode(&body)).is_ok()
    }
}
