//! `gted` (no Lean): two operator trees compared, within caps checked on
//! the request's JSON before any tree or matrix is built.

use leanpool_protocol::{ErrorCode, GtedParams, GtedResult, RpcError};
use leanpool_rpc::handler::rpc_error;
use serde_json::Value;

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
    fn gted_runs_and_refuses_bad_trees() {
        let g = GtedParams {
            a: json!({"content": "x"}),
            b: json!({"content": "x"}),
            mode: None,
        };
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
