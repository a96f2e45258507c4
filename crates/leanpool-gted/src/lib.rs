//! Operator trees and their distance: the GTED metric.
//!
//! GTED ("generalized tree edit distance") scores a predicted formal
//! statement against a reference by the tree edit distance of their operator
//! trees: `similarity = 1 - TED / max(|A|, |B|)`, node counts including the
//! root. Three cost regimes ([`Mode`]):
//!
//! - [`Mode::Alpha`] (default): renaming bound names is free only as one
//!   consistent bijection between the two statements' binders
//!   ([`alpha`]): alpha-equivalent statements score 1.0, `x - y` vs `y - x`
//!   does not.
//! - [`Mode::Paper`]: exactly the paper's costs ([`PaperCost`]): any
//!   variable renames freely to any other, occurrence by occurrence. It
//!   reproduces the paper's published scores bit for bit ([`eval`]).
//! - [`Mode::Plain`]: textbook unit-cost TED on labels.
//!
//! The distance itself is exact ([`mod@ted`]); the algorithms take any
//! [`CostModel`].
//!
//! ```
//! use leanpool_gted::{score, Mode, OpTree, Options};
//!
//! // `a - b` in leanpool's format, `y - x` in the GTED paper's format.
//! let ours = OpTree::from_json_str(r#"{"label":"_ - _","kind":"op","children":[
//!     {"label":"a","kind":"bound_var","scope":0},{"label":"b","kind":"bound_var","scope":1}]}"#).unwrap();
//! let theirs = OpTree::from_json_str(r#"{"content":"_ - _","children":[
//!     {"content":"y","variable_freecost":true},{"content":"x","variable_freecost":true}]}"#).unwrap();
//! // Any renaming of the paper's variables is free: same shape, same score.
//! assert_eq!(score(&ours, &theirs, Mode::Paper, &Options::default()).similarity, 1.0);
//! // Plain unit costs count the two relabelled leaves: 1 - 2/3.
//! let plain = score(&ours, &theirs, Mode::Plain, &Options::default()).similarity;
//! assert!((plain - 1.0 / 3.0).abs() < 1e-12, "{plain}");
//! ```

#![deny(missing_docs)]

pub mod alpha;
pub mod cost;
pub mod eval;
mod kernel;
mod layout;
mod strategy;
pub mod ted;
pub mod tree;

pub use alpha::{alpha_distance, AlphaOptions, AlphaOutcome};
pub use cost::{AlphaCost, CostModel, PaperCost, Slot, UnitCost};
pub use ted::{similarity, ted, Algorithm, TedSolver};
pub use tree::{BoundName, NameKind, OpTree, TreeError, TreeNode};

use leanpool_protocol::{GtedParams, GtedResult};
use std::str::FromStr;

/// Which costs to use (see the crate docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    /// Renaming bound names is free only as one consistent bijection
    /// (the default).
    Alpha,
    /// The paper's costs: renaming between any two free-cost nodes is free.
    Paper,
    /// Plain tree edit distance: every rename of a different label costs 1.
    Plain,
}

impl FromStr for Mode {
    type Err = GtedError;
    fn from_str(s: &str) -> Result<Mode, GtedError> {
        match s {
            "alpha" => Ok(Mode::Alpha),
            "paper" => Ok(Mode::Paper),
            "plain" => Ok(Mode::Plain),
            other => Err(GtedError::Mode(other.to_string())),
        }
    }
}

impl Mode {
    /// The mode's name on the wire (`alpha`, `paper`, `plain`).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Alpha => "alpha",
            Mode::Paper => "paper",
            Mode::Plain => "plain",
        }
    }
}

/// Errors of [`gted`].
#[derive(Debug, thiserror::Error)]
pub enum GtedError {
    #[error("unknown mode `{0}` (expected alpha, paper or plain)")]
    /// A mode name that is none of the three.
    Mode(String),
    #[error("tree `{which}`: {source}")]
    /// A tree that could not be read.
    Tree {
        /// Which tree: `a` or `b`.
        which: &'static str,
        /// Why it could not be read.
        source: TreeError,
    },
}

/// Knobs of [`score`]; the defaults are what the CLI and RPC use.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// The exact TED algorithm (strategy or Zhang–Shasha).
    pub algorithm: Algorithm,
    /// Alpha mode's search limits.
    pub alpha: AlphaOptions,
}

/// A scored pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Score {
    /// The tree edit distance.
    pub distance: f64,
    /// `1 - distance / max(size_a, size_b)`.
    pub similarity: f64,
    /// Nodes of tree `a`.
    pub size_a: usize,
    /// Nodes of tree `b`.
    pub size_b: usize,
    /// False only when alpha mode's search hit its cap (then `distance` is
    /// an upper bound; see [`alpha`]).
    pub exact: bool,
    /// TED evaluations spent (1 outside alpha mode).
    pub evaluations: u64,
}

/// Distance and similarity of two trees.
pub fn score(a: &OpTree, b: &OpTree, mode: Mode, opts: &Options) -> Score {
    let (distance, exact, evaluations) = match mode {
        Mode::Paper => (ted(a, b, &PaperCost, opts.algorithm), true, 1),
        Mode::Plain => (ted(a, b, &UnitCost, opts.algorithm), true, 1),
        Mode::Alpha => {
            let o = alpha_distance(a, b, opts.algorithm, &opts.alpha);
            (o.distance, o.exact, o.evaluations)
        }
    };
    Score {
        distance,
        similarity: similarity(distance, a.len(), b.len()),
        size_a: a.len(),
        size_b: b.len(),
        exact,
        evaluations,
    }
}

/// The `gted` RPC method: two trees in either format, mode `alpha`
/// (default), `paper` or `plain`. In alpha mode a search that hits its cap
/// ([`AlphaOptions::max_evaluations`]; not reached by statements with up to
/// ~10 binders) answers with the best assignment found, i.e. an upper bound
/// on the distance; [`score`] reports that case as `exact = false`.
///
/// ```
/// use leanpool_gted::gted;
/// use leanpool_protocol::GtedParams;
/// use serde_json::json;
///
/// // `x + 1` and `y + 1` in the GTED paper's format (free-cost variables).
/// let leaf = |v: &str| json!({"content": v, "variable_freecost": true});
/// let plus_one = |v: &str| json!({"content": "_ + _", "children": [leaf(v), {"content": "1"}]});
/// let params = |mode: &str| GtedParams { a: plus_one("x"), b: plus_one("y"), mode: Some(mode.into()) };
/// // Renaming `x` to `y` everywhere is free: alpha-equivalent.
/// let alpha = gted(&params("alpha")).unwrap();
/// assert_eq!((alpha.distance, alpha.similarity, alpha.size_a), (0.0, 1.0, 3));
/// // Unit costs relabel one leaf of three nodes: 1 - 1/3.
/// let plain = gted(&params("plain")).unwrap();
/// assert_eq!(plain.distance, 1.0);
/// assert!((plain.similarity - 2.0 / 3.0).abs() < 1e-12);
/// // A mode that does not exist is an error, not a default.
/// assert!(gted(&params("fuzzy")).is_err());
/// ```
pub fn gted(params: &GtedParams) -> Result<GtedResult, GtedError> {
    let mode = params
        .mode
        .as_deref()
        .map(Mode::from_str)
        .transpose()?
        .unwrap_or_default();
    let a =
        OpTree::from_json(&params.a).map_err(|source| GtedError::Tree { which: "a", source })?;
    let b =
        OpTree::from_json(&params.b).map_err(|source| GtedError::Tree { which: "b", source })?;
    let s = score(&a, &b, mode, &Options::default());
    Ok(GtedResult {
        distance: s.distance,
        similarity: s.similarity,
        size_a: s.size_a,
        size_b: s.size_b,
        exact: s.exact,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rpc_function_reads_both_formats_and_modes() {
        let x_minus_y = json!({"content": "theorem", "children": [
            {"content": " _ - _ ", "children": [
                {"content": "x", "variable_freecost": true}, {"content": "y", "variable_freecost": true}]}]});
        let y_minus_x = json!({"label": "theorem", "kind": "op", "children": [
            {"label": " _ - _ ", "kind": "op", "children": [
                {"label": "y", "kind": "bound_var", "scope": 1}, {"label": "x", "kind": "bound_var", "scope": 0}]}]});
        let p = |mode: Option<&str>| GtedParams {
            a: x_minus_y.clone(),
            b: y_minus_x.clone(),
            mode: mode.map(String::from),
        };
        let paper = gted(&p(Some("paper"))).unwrap();
        assert_eq!(
            (paper.distance, paper.similarity, paper.size_a, paper.size_b),
            (0.0, 1.0, 4, 4)
        );
        // Without binding sites in the tree, swapping is a consistent
        // renaming: alpha-equivalent.
        assert_eq!(gted(&p(None)).unwrap().distance, 0.0);
        assert_eq!(gted(&p(Some("plain"))).unwrap().distance, 2.0);
        assert!(matches!(gted(&p(Some("fuzzy"))), Err(GtedError::Mode(_))));
        let bad = GtedParams {
            a: json!({}),
            b: y_minus_x.clone(),
            mode: None,
        };
        assert!(matches!(
            gted(&bad),
            Err(GtedError::Tree { which: "a", .. })
        ));
    }
}
