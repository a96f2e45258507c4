//! `normalize` and `opt`: the statement as Lean elaborated it.

#![deny(missing_docs)]

use crate::options::RequestOptions;
use crate::{BinderKind, CheckResult, GtedNode, Node};
use serde::{Deserialize, Serialize};

/// Parameters of `normalize` and `opt`: one Lean file whose body is a single
/// `theorem`/`lemma`/`example` (proof ignored; `:= by sorry` is fine).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatementParams {
    /// Full text of the Lean file (header and body).
    pub text: String,
    /// Its time limit and timings (`timeout_ms`, `timings` on the wire;
    /// timings: `check.elapsed_ms`).
    #[serde(flatten)]
    pub options: RequestOptions,
}

crate::options::lean_params!(StatementParams);

impl StatementParams {
    /// A `normalize` or `opt` of `text` with the daemon's default time
    /// limit and no timings.
    pub fn new(text: impl Into<String>) -> Self {
        StatementParams {
            text: text.into(),
            options: RequestOptions::default(),
        }
    }
}

/// One binder of the elaborated statement, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binder {
    /// The binder's name as Lean shows it.
    pub name: String,
    /// Explicit, implicit, strict implicit or instance implicit.
    pub kind: BinderKind,
    /// Type, pretty-printed from the elaborated term.
    #[serde(rename = "type")]
    pub ty: String,
    /// The binder's type is a proposition (a hypothesis).
    pub is_prop: bool,
}

/// The statement as Lean elaborated it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Normalized {
    /// Canonical statement text: `theorem stmt (a : T) (b : T) : concl`.
    pub statement: String,
    /// The statement's binders, in order.
    pub binders: Vec<Binder>,
    /// The type after the binders, pretty-printed.
    pub conclusion: String,
}

/// Result of `normalize`. `normalized` is present iff `check.status` is
/// `ok` or `sorry` (never a half result).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NormalizeResult {
    /// The elaboration's verdict and diagnostics, as `check` gives them.
    pub check: CheckResult,
    /// The elaborated statement (only for `ok` / `sorry`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalized: Option<Normalized>,
}

/// Result of `opt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OptResult {
    /// The elaboration's verdict and diagnostics, as `check` gives them.
    pub check: CheckResult,
    /// The elaborated statement, as in `normalize` (only for `ok` / `sorry`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalized: Option<Normalized>,
    /// The statement's operator tree in leanpool's format.
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
    /// The first tree, in leanpool's or GTED's format.
    pub a: serde_json::Value,
    /// The second tree, in either format.
    pub b: serde_json::Value,
    /// `alpha` (default), `paper` or `plain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// Result of `gted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GtedResult {
    /// The tree edit distance under the mode's costs.
    pub distance: f64,
    /// `1 - distance / max(size_a, size_b)`.
    pub similarity: f64,
    /// Node count of `a`, root included.
    pub size_a: usize,
    /// Node count of `b`, root included.
    pub size_b: usize,
    /// False only when alpha mode's matching search hit its cap; then
    /// `distance` is an upper bound (never reached by statements with up to
    /// ~10 bound names).
    pub exact: bool,
}
