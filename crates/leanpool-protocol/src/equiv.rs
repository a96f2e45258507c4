//! `equiv`: are two statements equivalent? Answered only with a proof that
//! Lean checked, either way.

use crate::check::Diagnostic;
use crate::options::RequestOptions;
use crate::verify::VerifyStatus;
use serde::{Deserialize, Serialize};

/// Parameters of `equiv`: two statements under one header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EquivParams {
    /// `import`s and other header commands (`open`, `set_option` ...) both
    /// statements are read under; may be empty. No `variable` (a variable
    /// would be shared by the two statements).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub header: String,
    /// The first statement (the reference): `theorem NAME binders : type`,
    /// with or without `:= sorry` / `:= by sorry`.
    pub a: String,
    /// The second statement (the candidate), in the same form.
    pub b: String,
    /// Its time limit and timings (`timeout_ms`, `timings` on the wire).
    /// The limit is for the whole request (every attempt). Each attempt is
    /// also bounded by Lean heartbeats, which decide the answer; this limit
    /// only stops a request that would not end.
    #[serde(flatten)]
    pub options: RequestOptions,
}

crate::options::lean_params!(EquivParams);

impl EquivParams {
    /// An `equiv` of statements `a` (the reference) and `b` (the
    /// candidate) under `header`, with the daemon's default time limit and
    /// no timings.
    pub fn new(header: impl Into<String>, a: impl Into<String>, b: impl Into<String>) -> Self {
        EquivParams {
            header: header.into(),
            a: a.into(),
            b: b.into(),
            options: RequestOptions::default(),
        }
    }
}

/// Outcome of `equiv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EquivStatus {
    /// Lean proved `(∀ a) ↔ (∀ b)`; `evidence` holds the theorem and proof.
    Equivalent,
    /// Lean proved `¬ ((∀ a) ↔ (∀ b))`; `evidence` holds the theorem and
    /// proof (one side proved, the other refuted on a finite range).
    NotEquivalent,
    /// No attempt succeeded either way (within its heartbeats).
    Unknown,
    /// The statements do not elaborate together (see `diagnostics`).
    Error,
    /// The request ran past its time limit; Lean was stopped.
    Timeout,
    /// Refused before reaching Lean (see `reason`).
    Rejected,
}

/// A theorem Lean checked under `verify`'s verdict rules, and its proof.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EquivEvidence {
    /// Which attempt found it (`definitional`, `tactics`, `refute_b`,
    /// `refute_a`).
    pub attempt: String,
    /// The theorem, as `verify` took it.
    pub statement: String,
    /// Its proof, as `verify` took it.
    pub proof: String,
    /// The axioms the proof uses, as `verify` reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub axioms: Option<Vec<String>>,
}

/// One attempt and how `verify` judged it, in the order they ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EquivAttempt {
    /// The attempt's name (see [`EquivEvidence::attempt`]).
    pub attempt: String,
    /// `verify`'s verdict on it.
    pub status: VerifyStatus,
}

/// Result of `equiv`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EquivResult {
    /// The verdict.
    pub status: EquivStatus,
    /// The checked theorem behind `equivalent` / `not_equivalent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<EquivEvidence>,
    /// The attempts that ran, in order (empty when refused).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<EquivAttempt>,
    /// With `error`: the theorem `(∀ a) ↔ (∀ b)` as sent, and Lean's
    /// messages about it (positions in that text, 0-based line, UTF-16
    /// column).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statement: Option<String>,
    /// See `statement`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<Diagnostic>,
    /// Why the request was `rejected` (or why it timed out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// With `timings`: the request's wall time inside leanpool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
}

impl EquivResult {
    fn bare(status: EquivStatus, reason: Option<String>) -> Self {
        EquivResult {
            status,
            evidence: None,
            attempts: vec![],
            statement: None,
            diagnostics: vec![],
            reason,
            elapsed_ms: None,
        }
    }

    /// The answer for a request refused before reaching Lean, saying why.
    pub fn rejected(reason: impl Into<String>) -> Self {
        Self::bare(EquivStatus::Rejected, Some(reason.into()))
    }

    /// The answer for a request that ran past its limit of `limit_ms`.
    pub fn timeout(limit_ms: u64) -> Self {
        Self::bare(
            EquivStatus::Timeout,
            Some(format!("no answer within {limit_ms} ms; Lean was stopped")),
        )
    }

    /// Whether the request or one of its attempts ran past the time limit
    /// (Lean was stopped, the worker with it): such an answer depends on
    /// the machine's load, not only on the request.
    pub fn timed_out(&self) -> bool {
        self.status == EquivStatus::Timeout
            || self
                .attempts
                .iter()
                .any(|a| a.status == VerifyStatus::Timeout)
    }

    /// The answer when no attempt succeeded.
    pub fn unknown(attempts: Vec<EquivAttempt>) -> Self {
        EquivResult {
            attempts,
            ..Self::bare(EquivStatus::Unknown, None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_form() {
        let r = EquivResult {
            evidence: Some(EquivEvidence {
                attempt: "definitional".into(),
                statement: "theorem t : A ↔ B".into(),
                proof: "Iff.rfl".into(),
                axioms: None,
            }),
            attempts: vec![EquivAttempt {
                attempt: "definitional".into(),
                status: VerifyStatus::Proved,
            }],
            ..EquivResult::bare(EquivStatus::Equivalent, None)
        };
        let s = serde_json::to_string(&r).unwrap();
        assert_eq!(
            s,
            r#"{"status":"equivalent","evidence":{"attempt":"definitional","statement":"theorem t : A ↔ B","proof":"Iff.rfl"},"attempts":[{"attempt":"definitional","status":"proved"}]}"#
        );
        assert_eq!(serde_json::from_str::<EquivResult>(&s).unwrap(), r);
        let n = serde_json::to_string(&EquivResult::unknown(vec![])).unwrap();
        assert_eq!(n, r#"{"status":"unknown"}"#);
        let p: EquivParams =
            serde_json::from_str(r#"{"a":"theorem x : True","b":"theorem y : True"}"#).unwrap();
        assert_eq!(p.header, "");
        assert!(serde_json::from_str::<EquivParams>(r#"{"a":"x"}"#).is_err());
    }
}
