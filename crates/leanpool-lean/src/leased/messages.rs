//! What the gate answers: a holder's message refused ([`Refusal`]), a
//! frame from Lean nobody asked for ([`Forged`]), where a message from
//! Lean goes ([`FromLean`]), a holder's whole text checked ([`Edit`]).

use leanpool_protocol::lsp_error;
use serde_json::{json, Value};

/// Why a message from the holder was not passed to Lean.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// An [`lsp_error`] code.
    pub code: i64,
    /// What to do about it.
    pub message: String,
}

impl Refusal {
    pub(super) fn new(code: i64, message: impl Into<String>) -> Self {
        Refusal {
            code,
            message: message.into(),
        }
    }

    /// Params outside their rule.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Refusal::new(lsp_error::INVALID_PARAMS, message)
    }

    /// The JSON-RPC error answer to the request `id`.
    pub fn answer(&self, id: Value) -> Value {
        json!({ "jsonrpc": "2.0", "id": id, "error": { "code": self.code, "message": self.message } })
    }
}

/// A frame from Lean that nobody asked for: what it was. The worker must
/// be killed (code in it may be forging output).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forged(pub String);

/// Where a message from Lean goes (`W`: the owner's waiter of a request,
/// see [`Gate`](super::Gate)).
#[derive(Debug, PartialEq)]
pub enum FromLean<W = ()> {
    /// Lean's answer to one of the holder's requests, for its waiter; its
    /// `id` is the holder's own again, items' `data` are tokens.
    Answer(W, Value),
    /// To the holder (a notification, or a request of Lean's).
    Holder(Value),
    /// Back to Lean (the answer to a request of Lean's the holder does
    /// not see).
    Lean(Value),
    /// Nowhere (a late report of the pool's texts, an answer to a request
    /// the holder stopped waiting for, Lean's own bookkeeping).
    Drop,
}

/// A whole text the holder sent, checked but not yet screened.
#[derive(Debug)]
pub struct Edit {
    /// The holder's version.
    pub version: i64,
    /// The whole text.
    pub text: String,
}
