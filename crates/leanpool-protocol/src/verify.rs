//! `verify`: a proof judged against a fixed statement.

use crate::check::Diagnostic;
use crate::options::RequestOptions;
use serde::{Deserialize, Serialize};

/// Parameters of `verify`.
///
/// leanpool assembles `header`, then `statement` (with a trailing
/// `:= sorry` / `:= by sorry` removed) followed by ` := ` and `proof`,
/// and answers `proved` only if that theorem is in Lean's environment
/// with exactly the statement's type, with no error and no `sorry`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyParams {
    /// `import`s and other header commands (`open`, `set_option` ...);
    /// may be empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub header: String,
    /// Helper declarations (`lemma`, `theorem`, `def`, `abbrev`) placed
    /// between the header and the theorem, judged under the same rules
    /// (present, no `sorry`, no axiom outside the policy) and refused when
    /// they could change how the statement reads (see `verify` in
    /// docs/protocol.md); may be empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub context: String,
    /// One `theorem NAME binders : type`, with or without `:= sorry` /
    /// `:= by sorry`.
    pub statement: String,
    /// A term or a tactic block (`by ...`): the text after `:=`.
    pub proof: String,
    /// Its time limit and timings (`timeout_ms`, `timings` on the wire).
    #[serde(flatten)]
    pub options: RequestOptions,
}

crate::options::lean_params!(VerifyParams);

impl VerifyParams {
    /// A `verify` of `proof` (the text after `:=`) for `statement`, with
    /// no header and no helper declarations, the daemon's default time
    /// limit and no timings; [`VerifyParams::with_header`] and
    /// [`VerifyParams::with_context`] add the others.
    ///
    /// ```
    /// use leanpool_protocol::VerifyParams;
    /// let p = VerifyParams::new("theorem t : 1 = 1 := sorry", "rfl")
    ///     .with_context("theorem h : True := trivial")
    ///     .with_timeout_ms(60_000);
    /// assert_eq!((p.header.as_str(), p.options.timeout_ms), ("", Some(60_000)));
    /// ```
    pub fn new(statement: impl Into<String>, proof: impl Into<String>) -> Self {
        VerifyParams {
            header: String::new(),
            context: String::new(),
            statement: statement.into(),
            proof: proof.into(),
            options: RequestOptions::default(),
        }
    }

    /// The same request under `header` (`import`s, `open` ...).
    pub fn with_header(mut self, header: impl Into<String>) -> Self {
        self.header = header.into();
        self
    }

    /// The same request with helper declarations `context` between the
    /// header and the theorem.
    pub fn with_context(mut self, context: impl Into<String>) -> Self {
        self.context = context.into();
        self
    }
}

/// Outcome of a `verify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VerifyStatus {
    /// The theorem exists with exactly the statement's type; no error, no
    /// `sorry`, no axiom declared.
    Proved,
    /// No error, but the proof uses `sorry`.
    Sorry,
    /// Lean reported an error, or the theorem is not there with exactly
    /// the statement's type (see the diagnostics).
    Error,
    /// The request ran past its time limit; Lean was stopped.
    Timeout,
    /// Refused before reaching Lean (see `reason`).
    Rejected,
}

/// Result of `verify`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyResult {
    /// The verdict; only `proved` means the proof was accepted.
    pub status: VerifyStatus,
    /// Lean's messages about the proof, positioned in the caller's
    /// `proof` text (0-based line, UTF-16 column).
    pub diagnostics: Vec<Diagnostic>,
    /// Messages about the statement or the header, positioned in the
    /// caller's `statement` text (header messages at 0:0, prefixed
    /// `header: `), and leanpool's own verdict errors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statement_diagnostics: Vec<Diagnostic>,
    /// Messages about the helpers of `context`, positioned in the caller's
    /// `context` text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_diagnostics: Vec<Diagnostic>,
    /// Why the request was `rejected` (or why it timed out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The axioms the theorem depends on, as Lean's `#print axioms` lists
    /// them (present when Lean elaborated the request and listed them;
    /// absent when it did not, see "Verdicts" in docs/protocol.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub axioms: Option<Vec<String>>,
    /// With `timings`: the request's wall time inside leanpool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
}

impl VerifyResult {
    /// The answer for a request refused before reaching Lean, saying why.
    pub fn rejected(reason: impl Into<String>) -> Self {
        VerifyResult {
            status: VerifyStatus::Rejected,
            diagnostics: vec![],
            statement_diagnostics: vec![],
            context_diagnostics: vec![],
            reason: Some(reason.into()),
            axioms: None,
            elapsed_ms: None,
        }
    }

    /// The answer for a request that ran past its limit of `limit_ms`.
    pub fn timeout(limit_ms: u64) -> Self {
        VerifyResult {
            status: VerifyStatus::Timeout,
            diagnostics: vec![],
            statement_diagnostics: vec![],
            context_diagnostics: vec![],
            reason: Some(format!("no answer within {limit_ms} ms; Lean was stopped")),
            axioms: None,
            elapsed_ms: None,
        }
    }
}
