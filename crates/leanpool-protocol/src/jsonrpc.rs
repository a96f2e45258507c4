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
    /// What kind of failure (an integer on the wire).
    pub code: ErrorCode,
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

impl RpcError {
    /// An error with no `data`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }
}

impl Response {
    /// A success answer.
    pub fn ok(id: Id, result: Value) -> Self {
        Response {
            jsonrpc: "2.0".into(),
            id,
            result: Some(result),
            error: None,
        }
    }
    /// A failure answer with no `data`.
    pub fn err(id: Id, code: ErrorCode, message: impl Into<String>) -> Self {
        Response {
            jsonrpc: "2.0".into(),
            id,
            result: None,
            error: Some(RpcError::new(code, message)),
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

/// A JSON-RPC error code: the JSON-RPC reserved range first, then
/// leanpool's own (-32000..-32099, "server error" in JSON-RPC terms).
///
/// On the wire it is the plain integer (`"code": -32003`). A code this
/// version does not know (a newer daemon's) decodes as
/// [`ErrorCode::Unknown`] with its integer kept, so an old client still
/// reads the answer. Equality and hashing go by the integer:
/// `Unknown(-32003) == WorkerFailed`.
#[derive(Debug, Clone, Copy)]
pub enum ErrorCode {
    /// Not valid JSON, or not valid UTF-8 (-32700).
    ParseError,
    /// Valid JSON that is not a JSON-RPC request (-32600).
    InvalidRequest,
    /// No method of that name (-32601).
    MethodNotFound,
    /// `params` missing fields or of the wrong type (-32602).
    InvalidParams,
    /// A fault inside leanpool: a bug, never the caller's text (-32603).
    InternalError,
    /// The request line is longer than the daemon's `max_request_bytes`
    /// (-32001).
    RequestTooLarge,
    /// The queue for this header is full, or the daemon has too many
    /// connections; retry later (-32002).
    Overloaded,
    /// A Lean worker failed on this request; `data.cause` says how
    /// ([`FailureCause`]) (-32003).
    WorkerFailed,
    /// The peer's uid may not call this method (e.g. `shutdown`) (-32004).
    Unauthorized,
    /// The daemon is shutting down and takes no new work (-32005).
    ShuttingDown,
    /// A Lean worker could not be started (bad backend or header) (-32006).
    SpawnFailed,
    /// The request names a `project` the daemon does not serve (-32007);
    /// `data.projects` lists the ones it does.
    UnknownProject,
    /// A code this version of leanpool does not know.
    Unknown(i64),
}

impl ErrorCode {
    /// Every code this version knows.
    pub const ALL: [ErrorCode; 12] = [
        ErrorCode::ParseError,
        ErrorCode::InvalidRequest,
        ErrorCode::MethodNotFound,
        ErrorCode::InvalidParams,
        ErrorCode::InternalError,
        ErrorCode::RequestTooLarge,
        ErrorCode::Overloaded,
        ErrorCode::WorkerFailed,
        ErrorCode::Unauthorized,
        ErrorCode::ShuttingDown,
        ErrorCode::SpawnFailed,
        ErrorCode::UnknownProject,
    ];

    /// The integer on the wire.
    pub const fn code(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::InternalError => -32603,
            ErrorCode::RequestTooLarge => -32001,
            ErrorCode::Overloaded => -32002,
            ErrorCode::WorkerFailed => -32003,
            ErrorCode::Unauthorized => -32004,
            ErrorCode::ShuttingDown => -32005,
            ErrorCode::SpawnFailed => -32006,
            ErrorCode::UnknownProject => -32007,
            ErrorCode::Unknown(c) => c,
        }
    }

    /// The code of an integer: a known variant when there is one.
    pub fn from_code(code: i64) -> ErrorCode {
        ErrorCode::ALL
            .into_iter()
            .find(|c| c.code() == code)
            .unwrap_or(ErrorCode::Unknown(code))
    }

    /// The name docs/protocol.md gives the code (`WORKER_FAILED`), `None`
    /// for an unknown one.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            ErrorCode::ParseError => "PARSE_ERROR",
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::MethodNotFound => "METHOD_NOT_FOUND",
            ErrorCode::InvalidParams => "INVALID_PARAMS",
            ErrorCode::InternalError => "INTERNAL_ERROR",
            ErrorCode::RequestTooLarge => "REQUEST_TOO_LARGE",
            ErrorCode::Overloaded => "OVERLOADED",
            ErrorCode::WorkerFailed => "WORKER_FAILED",
            ErrorCode::Unauthorized => "UNAUTHORIZED",
            ErrorCode::ShuttingDown => "SHUTTING_DOWN",
            ErrorCode::SpawnFailed => "SPAWN_FAILED",
            ErrorCode::UnknownProject => "UNKNOWN_PROJECT",
            ErrorCode::Unknown(_) => return None,
        })
    }
}

impl PartialEq for ErrorCode {
    fn eq(&self, other: &Self) -> bool {
        self.code() == other.code()
    }
}

impl Eq for ErrorCode {}

impl std::hash::Hash for ErrorCode {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.code().hash(state)
    }
}

impl From<i64> for ErrorCode {
    fn from(code: i64) -> Self {
        ErrorCode::from_code(code)
    }
}

impl From<ErrorCode> for i64 {
    fn from(c: ErrorCode) -> i64 {
        c.code()
    }
}

/// The integer, as on the wire.
impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.code())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(self.code())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        i64::deserialize(d).map(ErrorCode::from_code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_causes_have_their_wire_names() {
        use FailureCause::*;
        for c in [
            DiedTwice,
            LeanPanic,
            MemoryCap,
            ProtocolViolation,
            LeanError,
            UnexpectedAnswer,
        ] {
            assert_eq!(
                serde_json::to_value(c).unwrap(),
                Value::String(c.as_str().into())
            );
        }
    }

    /// The codes are the integers docs/protocol.md lists, distinct, and
    /// round-trip through JSON.
    #[test]
    fn error_codes_are_their_integers() {
        let ints: Vec<i64> = ErrorCode::ALL.iter().map(|c| c.code()).collect();
        assert_eq!(
            ints,
            [
                -32700, -32600, -32601, -32602, -32603, -32001, -32002, -32003, -32004, -32005,
                -32006, -32007
            ]
        );
        for c in ErrorCode::ALL {
            let j = serde_json::to_string(&c).unwrap();
            assert_eq!(j, c.code().to_string());
            let back: ErrorCode = serde_json::from_str(&j).unwrap();
            assert!(!matches!(back, ErrorCode::Unknown(_)) && back == c, "{c:?}");
            assert!(c.name().is_some());
        }
        let mut names: Vec<_> = ErrorCode::ALL.iter().map(|c| c.name().unwrap()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ErrorCode::ALL.len());
    }

    /// A newer daemon's code must not make an older client fail to read
    /// the answer: the integer is kept.
    #[test]
    fn an_unknown_error_code_decodes_and_keeps_its_integer() {
        let r: Response = serde_json::from_str(
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32042,"message":"new"}}"#,
        )
        .unwrap();
        let e = r.error.unwrap();
        assert_eq!(e.code, ErrorCode::Unknown(-32042));
        assert_eq!(e.code.code(), -32042);
        assert_eq!(e.code.name(), None);
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"code":-32042,"message":"new"}"#
        );
        // An `Unknown` holding a known integer is that code.
        assert_eq!(ErrorCode::Unknown(-32003), ErrorCode::WorkerFailed);
        assert_eq!(ErrorCode::from_code(-32003).name(), Some("WORKER_FAILED"));
        // Not an integer: refused.
        assert!(serde_json::from_str::<ErrorCode>("\"x\"").is_err());
        assert!(serde_json::from_str::<ErrorCode>("1.5").is_err());
    }
}
