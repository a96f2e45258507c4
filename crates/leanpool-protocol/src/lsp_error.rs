//! The error codes leanpool's LSP paths answer an editor or a lease
//! holder with (the daemon's `lease` tunnel, `leanpool lsp`): JSON-RPC's,
//! LSP's and leanpool's own, in one place so no file writes a literal;
//! and the one of Lean's own that leanpool reads ([`LEAN_RPC_NEEDS_RECONNECT`]).

use crate::ErrorCode;

/// JSON-RPC: not valid JSON.
pub const PARSE_ERROR: i64 = ErrorCode::ParseError.code();
/// JSON-RPC: a JSON value that is not a request, answer or notification.
pub const INVALID_REQUEST: i64 = ErrorCode::InvalidRequest.code();
/// JSON-RPC: a method not served (not on the lease's allowlist).
pub const METHOD_NOT_FOUND: i64 = ErrorCode::MethodNotFound.code();
/// JSON-RPC: parameters outside their rule (another document, a position
/// outside the text, `data` leanpool did not issue...).
pub const INVALID_PARAMS: i64 = ErrorCode::InvalidParams.code();
/// JSON-RPC: a fault inside leanpool or an answer it could not pass on.
pub const INTERNAL_ERROR: i64 = ErrorCode::InternalError.code();
/// leanpool: a message longer than the connection's line cap.
pub const REQUEST_TOO_LARGE: i64 = ErrorCode::RequestTooLarge.code();
/// leanpool: too many requests pending at once.
pub const OVERLOADED: i64 = ErrorCode::Overloaded.code();
/// LSP `RequestCancelled`: the client cancelled the request.
pub const REQUEST_CANCELLED: i64 = -32800;
/// LSP `ContentModified`: the document changed under the request.
pub const CONTENT_MODIFIED: i64 = -32801;
/// Lean's own: an RPC session expired or unknown, connect again (Lean
/// answers leanpool's `$/lean/rpc/call` with it; leanpool never sends it).
pub const LEAN_RPC_NEEDS_RECONNECT: i64 = -32900;
/// LSP `RequestFailed`: a well-formed request that could not be served
/// (the text was refused, no text was sent yet, the worker stopped, the
/// request ran past its time limit).
pub const REQUEST_FAILED: i64 = -32803;

#[cfg(test)]
mod tests {
    use super::*;

    /// The wire values, pinned here once (tests elsewhere name the
    /// constants): JSON-RPC's and LSP's numbers, Lean's reconnect code.
    #[test]
    fn codes_are_the_specified_numbers() {
        let codes = [
            PARSE_ERROR,
            INVALID_REQUEST,
            METHOD_NOT_FOUND,
            INVALID_PARAMS,
            INTERNAL_ERROR,
            REQUEST_CANCELLED,
            CONTENT_MODIFIED,
            REQUEST_FAILED,
            LEAN_RPC_NEEDS_RECONNECT,
        ];
        let specified = [
            -32700, -32600, -32601, -32602, -32603, -32800, -32801, -32803, -32900,
        ];
        assert_eq!(codes, specified);
    }
}
