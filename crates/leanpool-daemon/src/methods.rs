//! The daemon's methods and their parameter decoding, separate from their
//! execution so the fuzz test can drive the exact decoding the daemon uses.

use leanpool_protocol::method::{self, Method, NoParams};
use leanpool_protocol::{ErrorCode, GtedParams, GtedResult, RpcError};
use leanpool_rpc::handler::{method_not_found, params, rpc_error};
use serde_json::Value;

/// Every method the daemon serves (`ping` and `shutdown` are answered by
/// the server itself, see `docs/protocol.md`).
pub const METHODS: &[&str] = method::NAMES;

/// A decoded call to one of the handler's methods.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    Check(<method::Check as Method>::Params),
    Verify(<method::Verify as Method>::Params),
    Normalize(<method::Normalize as Method>::Params),
    Opt(<method::Opt as Method>::Params),
    Gted(<method::Gted as Method>::Params),
    Status,
    /// Takes the connection over (the server routes it to
    /// `Handler::upgrade`, never to `call`).
    Lease(<method::Lease as Method>::Params),
}

impl Call {
    /// `INVALID_PARAMS` for wrong shapes or types, `METHOD_NOT_FOUND` for
    /// names the daemon does not serve.
    pub fn decode(method: &str, p: Value) -> Result<Call, RpcError> {
        Ok(match method {
            method::Check::NAME => Call::Check(params(method, p)?),
            method::Verify::NAME => Call::Verify(params(method, p)?),
            method::Normalize::NAME => Call::Normalize(params(method, p)?),
            method::Opt::NAME => Call::Opt(params(method, p)?),
            method::Gted::NAME => Call::Gted(params(method, p)?),
            method::Lease::NAME => Call::Lease(params(method, p)?),
            method::Status::NAME => {
                let _: NoParams = serde_json::from_value(p)
                    .map_err(|_| rpc_error(ErrorCode::InvalidParams, "`status` takes no params"))?;
                Call::Status
            }
            _ => return Err(method_not_found(method)),
        })
    }
}

/// Caps on the trees of one `gted` call, checked on the request's JSON
/// before any tree or distance matrix is built: exact TED allocates
/// `|a| x |b|` cells (two flat trees of 100,000 leaves asked for 80 GB and
/// aborted the daemon) and takes up to cubic time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GtedLimits {
    /// Nodes per tree, the root included.
    pub max_nodes: usize,
    /// Depth of a tree (a lone root has depth 1).
    pub max_depth: usize,
}

impl Default for GtedLimits {
    /// 2,000 nodes (a 32 MB matrix; miniF2F statements have at most a
    /// few hundred) and depth 100.
    fn default() -> Self {
        GtedLimits {
            max_nodes: 2_000,
            max_depth: 100,
        }
    }
}

/// Checks one tree's size and depth on its JSON, without recursion and
/// stopping as soon as a cap is passed. Only `children` arrays count:
/// anything else is left for the tree reader to refuse.
pub fn check_tree_size(which: &str, tree: &Value, limits: &GtedLimits) -> Result<(), RpcError> {
    let too_big = |what: String| {
        rpc_error(
            ErrorCode::InvalidParams,
            format!("invalid params for `gted`: tree `{which}` {what}"),
        )
    };
    let mut stack = vec![(tree, 1usize)];
    let mut nodes = 0usize;
    while let Some((node, depth)) = stack.pop() {
        nodes += 1;
        if nodes > limits.max_nodes {
            return Err(too_big(format!(
                "has more than {} nodes (the daemon's gted_max_nodes)",
                limits.max_nodes
            )));
        }
        if depth > limits.max_depth {
            return Err(too_big(format!(
                "is deeper than {} (the daemon's gted_max_depth)",
                limits.max_depth
            )));
        }
        if let Some(Value::Array(children)) = node.get("children") {
            stack.extend(children.iter().map(|c| (c, depth + 1)));
        }
    }
    Ok(())
}

/// Runs `gted` (pure CPU, no Lean) within `limits`. Tree, size or mode
/// errors are the caller's: `INVALID_PARAMS`.
pub fn run_gted(p: &GtedParams, limits: &GtedLimits) -> Result<GtedResult, RpcError> {
    check_tree_size("a", &p.a, limits)?;
    check_tree_size("b", &p.b, limits)?;
    leanpool_gted::gted(p).map_err(|e| {
        rpc_error(
            ErrorCode::InvalidParams,
            format!("invalid params for `gted`: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decoding() {
        assert!(matches!(
            Call::decode("check", json!({"text": "example : 1 = 1 := rfl"})),
            Ok(Call::Check(_))
        ));
        assert_eq!(
            Call::decode("check", json!({"txt": "x"})).unwrap_err().code,
            ErrorCode::InvalidParams
        );
        assert_eq!(
            Call::decode("check", json!({"text": 5})).unwrap_err().code,
            ErrorCode::InvalidParams
        );
        assert_eq!(
            Call::decode("check", json!([1])).unwrap_err().code,
            ErrorCode::InvalidParams
        );
        assert_eq!(
            Call::decode("opt", json!({"text": "t", "timeout_ms": -1}))
                .unwrap_err()
                .code,
            ErrorCode::InvalidParams
        );
        assert_eq!(Call::decode("status", Value::Null).unwrap(), Call::Status);
        assert_eq!(
            Call::decode("status", json!({"x": 1})).unwrap_err().code,
            ErrorCode::InvalidParams
        );
        assert_eq!(
            Call::decode("frobnicate", Value::Null).unwrap_err().code,
            ErrorCode::MethodNotFound
        );
        let g = Call::decode(
            "gted",
            json!({"a": {"content": "x"}, "b": {"content": "x"}}),
        )
        .unwrap();
        let Call::Gted(g) = g else { panic!() };
        assert_eq!(
            run_gted(&g, &GtedLimits::default()).unwrap().similarity,
            1.0
        );
        let bad = GtedParams {
            a: json!(3),
            b: json!(4),
            mode: None,
        };
        assert_eq!(
            run_gted(&bad, &GtedLimits::default()).unwrap_err().code,
            ErrorCode::InvalidParams
        );
    }

    /// Params must be an object (or absent): `["x"]` was decoded as
    /// `{"text": "x"}` by serde's sequence form of structs.
    #[test]
    fn non_object_params_are_invalid() {
        for p in [
            json!(["x"]),
            json!(["x", 5, false]),
            json!("x"),
            json!(3),
            json!(true),
        ] {
            for m in ["check", "normalize", "opt", "gted"] {
                let e = Call::decode(m, p.clone()).unwrap_err();
                assert_eq!(e.code, ErrorCode::InvalidParams, "{m} {p}");
                assert!(e.message.contains("object"), "{m}: {}", e.message);
            }
        }
        assert_eq!(
            Call::decode("status", json!([])).unwrap_err().code,
            ErrorCode::InvalidParams
        );
    }

    fn flat(leaves: usize) -> Value {
        json!({"content": "r", "children": vec![json!({"content": "x"}); leaves]})
    }

    fn chain(depth: usize) -> Value {
        let mut t = json!({"content": "x"});
        for _ in 1..depth {
            t = json!({"content": "f", "children": [t]});
        }
        t
    }

    /// The attack that aborted the daemon (`memory allocation of
    /// 80001600008 bytes failed`): two flat trees of 100,000 leaves. Refused
    /// before any tree or matrix is built, and quickly.
    #[test]
    fn gted_with_100k_leaf_trees_is_refused_before_allocating() {
        let p = GtedParams {
            a: flat(100_000),
            b: flat(100_000),
            mode: Some("plain".into()),
        };
        let t = std::time::Instant::now();
        let e = run_gted(&p, &GtedLimits::default()).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidParams);
        assert!(
            e.message.contains("tree `a` has more than 2000 nodes"),
            "{}",
            e.message
        );
        assert!(
            t.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            t.elapsed()
        );
        // At the cap: accepted.
        let l = GtedLimits {
            max_nodes: 11,
            max_depth: 3,
        };
        let ok = GtedParams {
            a: flat(10),
            b: chain(3),
            mode: Some("plain".into()),
        };
        assert_eq!(run_gted(&ok, &l).unwrap().size_a, 11);
        let e = run_gted(
            &GtedParams {
                a: flat(11),
                b: flat(1),
                mode: None,
            },
            &l,
        )
        .unwrap_err();
        assert!(
            e.message.contains("tree `a` has more than 11 nodes"),
            "{}",
            e.message
        );
        let e = run_gted(
            &GtedParams {
                a: flat(1),
                b: chain(4),
                mode: None,
            },
            &l,
        )
        .unwrap_err();
        assert!(
            e.message.contains("tree `b` is deeper than 3"),
            "{}",
            e.message
        );
    }
}
