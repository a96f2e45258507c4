//! The daemon's methods and their parameter decoding, separate from their
//! execution so the fuzz test can drive the exact decoding the daemon uses.

use crate::handler::{method_not_found, params, rpc_error};
use leanpool_protocol::{codes, CheckParams, GtedParams, GtedResult, RpcError, StatementParams};
use serde_json::Value;

/// Every method the daemon serves (`ping` and `shutdown` are answered by
/// the server itself, see `docs/protocol.md`).
pub const METHODS: &[&str] = &["check", "normalize", "opt", "gted", "status", "ping", "shutdown"];

/// A decoded call to one of the handler's methods.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    Check(CheckParams),
    Normalize(StatementParams),
    Opt(StatementParams),
    Gted(GtedParams),
    Status,
}

impl Call {
    /// `INVALID_PARAMS` for wrong shapes or types, `METHOD_NOT_FOUND` for
    /// names the daemon does not serve.
    pub fn decode(method: &str, p: Value) -> Result<Call, RpcError> {
        Ok(match method {
            "check" => Call::Check(params(method, p)?),
            "normalize" => Call::Normalize(params(method, p)?),
            "opt" => Call::Opt(params(method, p)?),
            "gted" => Call::Gted(params(method, p)?),
            "status" => {
                if !(p.is_null() || p.as_object().is_some_and(|o| o.is_empty())) {
                    return Err(rpc_error(codes::INVALID_PARAMS, "`status` takes no params"));
                }
                Call::Status
            }
            _ => return Err(method_not_found(method)),
        })
    }
}

/// Runs `gted` (pure CPU, no Lean). Tree or mode errors are the caller's:
/// `INVALID_PARAMS`.
pub fn run_gted(p: &GtedParams) -> Result<GtedResult, RpcError> {
    leanpool_gted::gted(p).map_err(|e| rpc_error(codes::INVALID_PARAMS, format!("invalid params for `gted`: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decoding() {
        assert!(matches!(Call::decode("check", json!({"text": "example : 1 = 1 := rfl"})), Ok(Call::Check(_))));
        assert_eq!(Call::decode("check", json!({"txt": "x"})).unwrap_err().code, codes::INVALID_PARAMS);
        assert_eq!(Call::decode("check", json!({"text": 5})).unwrap_err().code, codes::INVALID_PARAMS);
        assert_eq!(Call::decode("check", json!([1])).unwrap_err().code, codes::INVALID_PARAMS);
        assert_eq!(Call::decode("opt", json!({"text": "t", "timeout_ms": -1})).unwrap_err().code, codes::INVALID_PARAMS);
        assert_eq!(Call::decode("status", Value::Null).unwrap(), Call::Status);
        assert_eq!(Call::decode("status", json!({"x": 1})).unwrap_err().code, codes::INVALID_PARAMS);
        assert_eq!(Call::decode("frobnicate", Value::Null).unwrap_err().code, codes::METHOD_NOT_FOUND);
        let g = Call::decode("gted", json!({"a": {"content": "x"}, "b": {"content": "x"}})).unwrap();
        let Call::Gted(g) = g else { panic!() };
        assert_eq!(run_gted(&g).unwrap().similarity, 1.0);
        let bad = GtedParams { a: json!(3), b: json!(4), mode: None };
        assert_eq!(run_gted(&bad).unwrap_err().code, codes::INVALID_PARAMS);
    }
}
