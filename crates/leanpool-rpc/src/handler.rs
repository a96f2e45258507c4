//! The seam between transport and work: the server knows framing, peers and
//! shutdown; a [`Handler`] knows methods. The daemon plugs in
//! `leanpool_daemon::PoolHandler`; tests plug in handlers that need no Lean.

use crate::tunnel::Upgrade;
use leanpool_protocol::{ErrorCode, RpcError};
use serde::{de::DeserializeOwned, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use std::future::Future;
use std::time::Duration;

/// Who is calling, from `SO_PEERCRED` at accept time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerCred {
    /// The peer's effective user id (checked against `allowed_uids`).
    pub uid: u32,
    /// The peer's effective group id.
    pub gid: u32,
    /// The peer's process id when it connected (for logs).
    pub pid: i32,
}

/// Per-request context handed to the handler.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// Who is calling.
    pub peer: PeerCred,
    /// Sequential number of the connection, for logs.
    pub conn: u64,
}

/// Serves the methods the server itself does not (`ping` and `shutdown`
/// are the server's).
pub trait Handler: Send + Sync + 'static {
    /// Runs one method. The returned future is dropped when the client
    /// disconnects or the shutdown deadline passes: implementations must
    /// treat that as cancellation (the pool skips a job whose future is gone).
    ///
    /// The result comes back already encoded so that it reaches the wire
    /// with its struct's field order (a `serde_json::Value` would sort the
    /// keys) and without an intermediate tree.
    fn call(
        &self,
        method: &str,
        params: Value,
        ctx: &CallContext,
    ) -> impl Future<Output = Result<Box<RawValue>, RpcError>> + Send;

    /// Stops taking work, lets in-flight work finish until `deadline`, then
    /// releases everything (the pool kills its Lean workers here).
    fn shutdown(&self, deadline: Duration) -> impl Future<Output = ()> + Send;

    /// Methods that take their connection over ([`Handler::upgrade`]);
    /// `call` never sees them. None by default.
    fn upgrades(&self, _method: &str) -> bool {
        false
    }

    /// Runs a method for which [`Handler::upgrades`] is true. On `Ok` the
    /// server sends `answer` and hands the connection to the tunnel; on
    /// `Err` it answers the error and the connection stays JSON-RPC. The
    /// server calls it only when no other request of the connection is in
    /// flight and reads nothing more from the connection until it returns;
    /// the future is dropped when the client hangs up or the daemon shuts
    /// down.
    fn upgrade(
        &self,
        method: &str,
        _params: Value,
        _ctx: &CallContext,
    ) -> impl Future<Output = Result<Upgrade, RpcError>> + Send {
        let e = method_not_found(method);
        async move { Err(e) }
    }
}

/// A JSON-RPC error with `code` and `message` and no data.
pub fn rpc_error(code: ErrorCode, message: impl Into<String>) -> RpcError {
    RpcError::new(code, message)
}

/// The answer for a method the handler does not serve
/// (`METHOD_NOT_FOUND`, naming it).
pub fn method_not_found(method: &str) -> RpcError {
    rpc_error(
        ErrorCode::MethodNotFound,
        format!("unknown method `{method}`"),
    )
}

/// Decodes `params` into a method's parameter type; absent params decode as
/// `{}` so that methods whose fields are all optional accept no params.
/// Anything but an object (or absent) is `INVALID_PARAMS`: serde would
/// otherwise read an array as the struct's fields in order (`["x"]` as
/// `{"text": "x"}`), which the protocol does not allow.
pub fn params<P: DeserializeOwned>(method: &str, params: Value) -> Result<P, RpcError> {
    let params = match params {
        Value::Null => Value::Object(Default::default()),
        Value::Object(o) => Value::Object(o),
        other => {
            let kind = match other {
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                _ => "a boolean",
            };
            return Err(rpc_error(
                ErrorCode::InvalidParams,
                format!("invalid params for `{method}`: params must be an object, not {kind}"),
            ));
        }
    };
    serde_json::from_value(params).map_err(|e| {
        rpc_error(
            ErrorCode::InvalidParams,
            format!("invalid params for `{method}`: {e}"),
        )
    })
}

/// Encodes a method's result; failure here is a bug, reported as such.
pub fn result<R: Serialize + ?Sized>(r: &R) -> Result<Box<RawValue>, RpcError> {
    serde_json::value::to_raw_value(r).map_err(|e| {
        rpc_error(
            ErrorCode::InternalError,
            format!("cannot encode result: {e}"),
        )
    })
}
