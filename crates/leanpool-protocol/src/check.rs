//! `check`: does a Lean snippet elaborate?

use crate::options::RequestOptions;
use serde::{Deserialize, Serialize};

/// Outcome of a check, from best to worst as far as the caller is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    /// Elaborated with no error and no `sorry`.
    Ok,
    /// At least one error diagnostic.
    Error,
    /// No error, but a warning mentions `sorry` in any form (Lean's
    /// ``declaration uses `sorry` ``, ``declaration uses `sorryAx` ``).
    Sorry,
    /// The request ran past its time limit; Lean was stopped (interrupted,
    /// or its worker killed when it did not stop in time).
    Timeout,
    /// Refused before reaching Lean (see `reason`).
    Rejected,
}

/// LSP severity, as text so the JSON is readable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Lean's errors: the text does not elaborate as written.
    Error,
    /// Lean's warnings (`declaration uses 'sorry'`, linters).
    Warning,
    /// Output of commands such as `#check` and `#print`.
    Information,
    /// Lean's hints (rarely sent).
    Hint,
}

/// A position in the caller's text: 0-based line, 0-based column counted in
/// UTF-16 code units (the LSP convention).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Position {
    /// 0-based line number.
    pub line: u32,
    /// 0-based column, in UTF-16 code units from the start of the line.
    pub character: u32,
}

/// A stretch of the caller's text, `end` exclusive (as LSP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Range {
    /// The first character of the stretch.
    pub start: Position,
    /// The position just after its last character.
    pub end: Position,
}

/// One message of Lean's about the caller's text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Diagnostic {
    /// How bad it is; an `Error` makes the status `error`.
    pub severity: Severity,
    /// Range in the caller's own text (not in the document leanpool built).
    pub range: Range,
    /// Lean's text, as Lean wrote it.
    pub message: String,
}

/// A declaration of the caller's body, as leanpool found it in Lean's
/// environment after elaboration (see "Verdicts" in docs/protocol.md).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DeclarationInfo {
    /// Full name (namespaces included), `«»` where a component needs it.
    pub name: String,
    /// The declaring keyword: `theorem`, `def`, `axiom`, ...
    pub kind: String,
    /// Where the name is written, in the caller's text.
    pub range: Range,
    /// Whether Lean's environment holds it after elaboration. A `false`
    /// here always comes with an error diagnostic and status `error`.
    pub present: bool,
    /// What was proved: its type as Lean elaborated it (hypotheses from
    /// `variable`/`include` included, `False → 2 + 2 = 5`), printed by
    /// Lean under options leanpool fixes (the text's `pp.*` settings do
    /// not apply); absent when it is not present.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// The same type with every implicit argument and instance shown and
    /// no notation (a redefined numeral shows as `@OfNat.ofNat Nat 5
    /// evil`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explicit_type: Option<String>,
    /// The axioms it depends on, as Lean's `#print axioms` lists them;
    /// absent when Lean did not list them (see "Verdicts" in
    /// docs/protocol.md: the WASM backend runs documents as modules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub axioms: Option<Vec<String>>,
}

/// Parameters of `check`.
///
/// The caller sends one Lean file's text. leanpool splits it into a *header*
/// (the leading `import`s, `open`s, `set_option`s... before the first
/// declaration; it selects the warm worker) and a *body*.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckParams {
    /// Full text of a Lean file (header and body).
    pub text: String,
    /// Its time limit and timings (`timeout_ms`, `timings` on the wire).
    #[serde(flatten)]
    pub options: RequestOptions,
}

crate::options::lean_params!(CheckParams);

impl CheckParams {
    /// A `check` of `text` with the daemon's default time limit and no
    /// timings (the request that gives the same bytes each time).
    ///
    /// ```
    /// use leanpool_protocol::CheckParams;
    /// let p = CheckParams::new("theorem t : 1 = 1 := rfl").with_timeout_ms(60_000);
    /// assert_eq!(p.options.timeout_ms, Some(60_000));
    /// assert!(!p.options.timings);
    /// ```
    pub fn new(text: impl Into<String>) -> Self {
        CheckParams {
            text: text.into(),
            options: RequestOptions::default(),
        }
    }
}

/// Result of `check`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckResult {
    /// The verdict (see "Verdicts" in docs/protocol.md for what `ok`
    /// promises).
    pub status: CheckStatus,
    /// Sorted by range, then severity, then message.
    pub diagnostics: Vec<Diagnostic>,
    /// Why the request was `rejected` (or why it timed out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The declarations the body introduces, in text order, as leanpool
    /// checked them after elaboration (absent when there are none, and
    /// for `rejected`/`timeout`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declarations: Vec<DeclarationInfo>,
    /// Wall time of the request inside leanpool, when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
    /// With `timings`: microseconds the Lean worker spent on the request
    /// (from sending the edit until its diagnostics were final). The rest
    /// of the round trip is leanpool's own overhead (transport, queue,
    /// dispatch), which the daemon bench reports as the difference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_us: Option<u64>,
}

impl CheckResult {
    /// Status from a finished elaboration's diagnostics: `error` if any
    /// error, else `sorry` if any "declaration uses 'sorry'" warning, else
    /// `ok`. Sorts the diagnostics so the answer is deterministic.
    pub fn from_diagnostics(mut diagnostics: Vec<Diagnostic>) -> Self {
        diagnostics.sort_by(|a, b| {
            (a.range, a.severity, &a.message).cmp(&(b.range, b.severity, &b.message))
        });
        diagnostics.dedup();
        let status = if diagnostics.iter().any(|d| d.severity == Severity::Error) {
            CheckStatus::Error
        } else if diagnostics.iter().any(is_sorry_warning) {
            CheckStatus::Sorry
        } else {
            CheckStatus::Ok
        };
        CheckResult {
            status,
            diagnostics,
            reason: None,
            declarations: vec![],
            elapsed_ms: None,
            worker_us: None,
        }
    }

    /// The answer for a text refused before reaching Lean, saying why.
    pub fn rejected(reason: impl Into<String>) -> Self {
        CheckResult {
            status: CheckStatus::Rejected,
            diagnostics: vec![],
            reason: Some(reason.into()),
            declarations: vec![],
            elapsed_ms: None,
            worker_us: None,
        }
    }

    /// The answer for a request that ran past its limit of `limit_ms`.
    pub fn timeout(limit_ms: u64) -> Self {
        CheckResult {
            status: CheckStatus::Timeout,
            diagnostics: vec![],
            reason: Some(format!("no answer within {limit_ms} ms; Lean was stopped")),
            declarations: vec![],
            elapsed_ms: None,
            worker_us: None,
        }
    }
}

/// A warning that mentions `sorry` in any form: Lean's
/// ``declaration uses `sorry` `` (4.28; `'sorry'` before), its
/// ``declaration uses `sorryAx` `` for an unapplied `sorryAx`, the same
/// reworded by a `pp` option (``declaration uses `sorryAx (…) false` ``),
/// leanpool's own `depends on sorryAx`: any case, anywhere in the text.
/// Such a warning makes the status `sorry`, never `ok`.
pub fn is_sorry_warning(d: &Diagnostic) -> bool {
    d.severity == Severity::Warning && d.message.to_lowercase().contains("sorry")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diag(sev: Severity, line: u32, msg: &str) -> Diagnostic {
        let p = Position { line, character: 0 };
        Diagnostic {
            severity: sev,
            range: Range { start: p, end: p },
            message: msg.into(),
        }
    }

    #[test]
    fn status_logic() {
        assert_eq!(
            CheckResult::from_diagnostics(vec![]).status,
            CheckStatus::Ok
        );
        let s = vec![diag(Severity::Warning, 0, "declaration uses 'sorry'")];
        assert_eq!(
            CheckResult::from_diagnostics(s.clone()).status,
            CheckStatus::Sorry
        );
        let mut e = s;
        e.push(diag(Severity::Error, 3, "type mismatch"));
        assert_eq!(CheckResult::from_diagnostics(e).status, CheckStatus::Error);
        let s428 = vec![diag(Severity::Warning, 0, "declaration uses `sorry`")];
        assert_eq!(
            CheckResult::from_diagnostics(s428).status,
            CheckStatus::Sorry
        );
        let ax = vec![diag(Severity::Warning, 0, "declaration uses `sorryAx`")];
        assert_eq!(CheckResult::from_diagnostics(ax).status, CheckStatus::Sorry);
        let w = vec![diag(Severity::Warning, 0, "unused variable `x`")];
        assert_eq!(CheckResult::from_diagnostics(w).status, CheckStatus::Ok);
    }

    #[test]
    fn diagnostics_sorted_and_deduped() {
        let r = CheckResult::from_diagnostics(vec![
            diag(Severity::Error, 5, "b"),
            diag(Severity::Error, 1, "a"),
            diag(Severity::Error, 5, "b"),
        ]);
        assert_eq!(r.diagnostics.len(), 2);
        assert_eq!(r.diagnostics[0].range.start.line, 1);
    }

    #[test]
    fn wire_shape() {
        let r = CheckResult::rejected("`#eval` runs code");
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"status":"rejected","diagnostics":[],"reason":"`#eval` runs code"}"#
        );
    }
}
