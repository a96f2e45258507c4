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
    /// The worker died twice on this request (once plus one retry).
    pub const WORKER_FAILED: i64 = -32003;
    /// The peer's uid may not call this method (e.g. `shutdown`).
    pub const UNAUTHORIZED: i64 = -32004;
    /// The daemon is shutting down and takes no new work.
    pub const SHUTTING_DOWN: i64 = -32005;
    /// A Lean worker could not be started (bad backend or header).
    pub const SPAWN_FAILED: i64 = -32006;
}
