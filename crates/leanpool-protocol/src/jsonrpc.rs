//! JSON-RPC 2.0 envelope and leanpool's error codes.
//!
//! Framing on the socket is one JSON object per line (`\n`-terminated,
//! UTF-8); see `docs/protocol.md`. These types only describe the objects.

#![deny(missing_docs)]

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A request id: JSON-RPC allows numbers and strings (and null, which we
/// echo back for unparseable requests).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    /// A number id.
    Num(i64),
    /// A string id.
    Str(String),
    /// `null`: only in answers to requests whose id could not be read.
    Null,
}

/// A JSON-RPC request (one line on the socket).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Always `"2.0"`.
    pub jsonrpc: String,
    /// Echoed in the answer.
    pub id: Id,
    /// The method's name (`check`, `normalize`, `opt`, `gted`, ...).
    pub method: String,
    /// The method's parameters; `null` when absent.
    #[serde(default)]
    pub params: Value,
}

/// The `error` member of a failed answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// One of [`codes`].
    pub code: i64,
    /// A one-line explanation for people.
    pub message: String,
    /// Machine-readable detail, when the code has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// A JSON-RPC answer: exactly one of `result` and `error` is present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// Always `"2.0"`.
    pub jsonrpc: String,
    /// The request's id.
    pub id: Id,
    /// The method's result, on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Why the request failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcError>,
}

impl Response {
    /// A success answer.
    pub fn ok(id: Id, result: Value) -> Self {
        Response { jsonrpc: "2.0".into(), id, result: Some(result), error: None }
    }
    /// A failure answer with no `data`.
    pub fn err(id: Id, code: i64, message: impl Into<String>) -> Self {
        Response {
            jsonrpc: "2.0".into(),
            id,
            result: None,
            error: Some(RpcError { code, message: message.into(), data: None }),
        }
    }
}

/// Why a request was answered `WORKER_FAILED`: `error.data.cause` on the
/// wire (`{"cause": "died_twice"}`). Only the first two say anything
/// about the statement; see docs/protocol.md for what to do with each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureCause {
    /// The worker process died on this request, and again on one retry
    /// on a fresh worker.
    DiedTwice,
    /// Lean's runtime gave up on this request (`INTERNAL PANIC`, e.g. out
    /// of memory on the WASM heap); not retried.
    LeanPanic,
    /// The worker's resident memory passed the pool's cap while it ran
    /// this request; it was killed, the request not retried.
    MemoryCap,
    /// The worker wrote a frame the driver did not ask for (a document
    /// version never sent, an answer to no request, a malformed frame, a
    /// notification out of place): code running in Lean forged output.
    /// The worker was killed and is never reused; the request is not
    /// retried.
    ProtocolViolation,
    /// Lean answered one of leanpool's requests with an error (e.g. an RPC
    /// method it does not know); the worker is kept.
    LeanError,
    /// Lean's answer did not have the shape leanpool reads (a Lean version
    /// leanpool does not support, or a leanpool bug); the worker was
    /// replaced.
    UnexpectedAnswer,
}

impl FailureCause {
    /// The wire name (`died_twice`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            FailureCause::DiedTwice => "died_twice",
            FailureCause::LeanPanic => "lean_panic",
            FailureCause::MemoryCap => "memory_cap",
            FailureCause::ProtocolViolation => "protocol_violation",
            FailureCause::LeanError => "lean_error",
            FailureCause::UnexpectedAnswer => "unexpected_answer",
        }
    }
}

/// Error codes. The JSON-RPC reserved range first, then leanpool's own
/// (-32000..-32099, "server error" in JSON-RPC terms).
pub mod codes {
    /// Not valid JSON, or not valid UTF-8.
    pub const PARSE_ERROR: i64 = -32700;
    /// Valid JSON that is not a JSON-RPC request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// No method of that name.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// `params` missing fields or of the wrong type.
    pub const INVALID_PARAMS: i64 = -32602;
    /// A fault inside leanpool.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// The request line is longer than the daemon's `max_request_bytes`.
    pub const REQUEST_TOO_LARGE: i64 = -32001;
    /// The queue for this header is full; retry later.
    pub const OVERLOADED: i64 = -32002;
    /// A Lean worker failed on this request; `data.cause` says how
    /// ([`super::FailureCause`]).
    pub const WORKER_FAILED: i64 = -32003;
    /// The peer's uid may not call this method (e.g. `shutdown`).
    pub const UNAUTHORIZED: i64 = -32004;
    /// The daemon is shutting down and takes no new work.
    pub const SHUTTING_DOWN: i64 = -32005;
    /// A Lean worker could not be started (bad backend or header).
    pub const SPAWN_FAILED: i64 = -32006;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_causes_have_their_wire_names() {
        use FailureCause::*;
        for c in [DiedTwice, LeanPanic, MemoryCap, ProtocolViolation, LeanError, UnexpectedAnswer] {
            assert_eq!(serde_json::to_value(c).unwrap(), Value::String(c.as_str().into()));
        }
    }
}
