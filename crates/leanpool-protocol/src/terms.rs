//! `normalize` and `opt`: the statement as Lean elaborated it.

use crate::{BinderKind, CheckResult, GtedNode, Node};
use serde::{Deserialize, Serialize};

/// Parameters of `normalize` and `opt`: one Lean file whose body is a single
/// `theorem`/`lemma`/`example` (proof ignored; `:= by sorry` is fine).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatementParams {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binder {
    pub name: String,
    pub kind: BinderKind,
    /// Type, pretty-printed from the elaborated term.
    #[serde(rename = "type")]
    pub ty: String,
    /// The binder's type is a proposition (a hypothesis).
    pub is_prop: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Normalized {
    /// Canonical statement text: `theorem stmt (a : T) (b : T) : concl`.
    pub statement: String,
    pub binders: Vec<Binder>,
    pub conclusion: String,
}

/// Result of `normalize`. `normalized` is present iff `check.status` is
/// `ok` or `sorry` (never a half result).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NormalizeResult {
    pub check: CheckResult,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalized: Option<Normalized>,
}

/// Result of `opt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OptResult {
    pub check: CheckResult,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalized: Option<Normalized>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<Node>,
    /// The same tree in GTED's format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gted_tree: Option<GtedNode>,
    /// LSP round trips to the worker this answer cost (for the bench).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lean_requests: Option<u32>,
}

/// Parameters of `gted`: two trees, each in either format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GtedParams {
    pub a: serde_json::Value,
    pub b: serde_json::Value,
    /// `alpha` (default) or `paper`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GtedResult {
    pub distance: f64,
    pub similarity: f64,
    pub size_a: usize,
    pub size_b: usize,
    /// False only when alpha mode's matching search hit its cap; then
    /// `distance` is an upper bound (never reached by statements with up to
    /// ~10 bound names).
    pub exact: bool,
}
