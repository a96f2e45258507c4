//! Which answers may be stored, and how a stored answer is given back.
//!
//! **Storable** (deterministic Lean verdicts only): `check` `ok` / `error` /
//! `sorry`; `verify` `proved` / `sorry` / `error`; `normalize` and `opt`
//! whose `check.status` is one of `ok` / `error` / `sorry`; `equiv`
//! `equivalent` / `not_equivalent` / `unknown` / `error` when none of its
//! attempts timed out (each attempt is bounded by Lean's heartbeats, which
//! are deterministic). Never stored:
//! `timeout` (depends on the machine's load and the request's limit),
//! `rejected` (decided before Lean, as cheap to recompute as to look up),
//! and every error answer (worker failures, spawn failures, overload,
//! invalid params, shutdown: they are RPC errors, never results).
//!
//! **Timing fields** (`elapsed_ms`, `worker_us`) are removed before an
//! answer is stored. A cached answer is the stored bytes with one member
//! appended to the top-level object, `"cached":true` ([`mark_cached`]);
//! when the request asked for `timings`, `elapsed_ms` is its own wall time
//! inside leanpool (and `worker_us` is absent: no worker ran).

use leanpool_protocol::{
    CheckResult, CheckStatus, EquivResult, EquivStatus, NormalizeResult, OptResult, VerifyResult,
    VerifyStatus,
};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// The member a cached answer carries (see [`mark_cached`]).
pub const CACHED_MEMBER: &str = "cached";

/// A method result the cache knows how to judge and store.
pub trait Answer: Serialize + DeserializeOwned + Send + 'static {
    /// Whether this answer is a deterministic verdict (see the module docs).
    fn storable(&self) -> bool;
    /// Removes the timing fields.
    fn clear_timings(&mut self);
    /// Sets the request's wall time (a hit asked with `timings`).
    fn set_elapsed_ms(&mut self, ms: u64);
}

fn check_storable(s: CheckStatus) -> bool {
    matches!(s, CheckStatus::Ok | CheckStatus::Error | CheckStatus::Sorry)
}

impl Answer for CheckResult {
    fn storable(&self) -> bool {
        check_storable(self.status)
    }
    fn clear_timings(&mut self) {
        self.elapsed_ms = None;
        self.worker_us = None;
    }
    fn set_elapsed_ms(&mut self, ms: u64) {
        self.elapsed_ms = Some(ms);
    }
}

impl Answer for VerifyResult {
    fn storable(&self) -> bool {
        matches!(
            self.status,
            VerifyStatus::Proved | VerifyStatus::Sorry | VerifyStatus::Error
        )
    }
    fn clear_timings(&mut self) {
        self.elapsed_ms = None;
    }
    fn set_elapsed_ms(&mut self, ms: u64) {
        self.elapsed_ms = Some(ms);
    }
}

/// [`Answer`] for results around a `check` (`normalize`'s, `opt`'s): the
/// check decides whether it is stored and carries the timings.
macro_rules! answer_by_its_check {
    ($($result:ty),+) => {$(
        impl Answer for $result {
            fn storable(&self) -> bool {
                self.check.storable()
            }
            fn clear_timings(&mut self) {
                self.check.clear_timings()
            }
            fn set_elapsed_ms(&mut self, ms: u64) {
                self.check.set_elapsed_ms(ms)
            }
        }
    )+};
}

answer_by_its_check!(NormalizeResult, OptResult);

impl Answer for EquivResult {
    fn storable(&self) -> bool {
        let verdict = matches!(
            self.status,
            EquivStatus::Equivalent
                | EquivStatus::NotEquivalent
                | EquivStatus::Unknown
                | EquivStatus::Error
        );
        verdict && !self.timed_out()
    }
    fn clear_timings(&mut self) {
        self.elapsed_ms = None;
    }
    fn set_elapsed_ms(&mut self, ms: u64) {
        self.elapsed_ms = Some(ms);
    }
}

/// The bytes to store for `answer`: its JSON without timing fields, or
/// `None` when it is not storable.
pub fn to_stored<A: Answer>(answer: &A) -> Option<Vec<u8>> {
    if !answer.storable() {
        return None;
    }
    // A typed copy, not the JSON map: member order stays the struct's, so
    // the bytes are those of the same answer without timings.
    let mut typed: A = serde_json::from_value(serde_json::to_value(answer).ok()?).ok()?;
    typed.clear_timings();
    let bytes = serde_json::to_vec(&typed).ok()?;
    // A stored answer must be a non-empty JSON object for `mark_cached`.
    (bytes.starts_with(b"{\"") && bytes.ends_with(b"}")).then_some(bytes)
}

/// A stored answer as given to a request: `"cached":true` appended to its
/// top-level object and, when `elapsed_ms` is given, the request's own wall
/// time set. `None` if the stored bytes do not decode as `A` (then the
/// entry is not used).
pub fn from_stored<A: Answer>(stored: &[u8], elapsed_ms: Option<u64>) -> Option<String> {
    let typed: A = serde_json::from_slice(stored).ok()?;
    let bytes = match elapsed_ms {
        None => String::from_utf8(stored.to_vec()).ok()?,
        Some(ms) => {
            let mut t = typed;
            t.set_elapsed_ms(ms);
            serde_json::to_string(&t).ok()?
        }
    };
    mark_cached(&bytes)
}

/// Whether an answer's JSON (as the daemon encoded it) is a cached one.
pub fn is_cached(answer: &str) -> bool {
    answer.ends_with(",\"cached\":true}")
}

/// `{...}` becomes `{...,"cached":true}`; anything but a non-empty object
/// is refused.
pub fn mark_cached(answer: &str) -> Option<String> {
    if !(answer.starts_with("{\"") && answer.ends_with('}')) {
        return None;
    }
    let mut s = String::with_capacity(answer.len() + 16);
    s.push_str(&answer[..answer.len() - 1]);
    s.push_str(",\"");
    s.push_str(CACHED_MEMBER);
    s.push_str("\":true}");
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use leanpool_protocol::{Diagnostic, Position, Range, Severity};

    fn result(status: CheckStatus) -> CheckResult {
        let p = Position {
            line: 0,
            character: 1,
        };
        CheckResult {
            status,
            diagnostics: vec![Diagnostic {
                severity: Severity::Information,
                range: Range { start: p, end: p },
                message: "1 = 1 : Prop".into(),
            }],
            reason: None,
            declarations: vec![],
            elapsed_ms: None,
            worker_us: None,
        }
    }

    #[test]
    fn only_deterministic_verdicts_are_stored() {
        for s in [CheckStatus::Ok, CheckStatus::Error, CheckStatus::Sorry] {
            assert!(to_stored(&result(s)).is_some(), "{s:?}");
        }
        assert!(to_stored(&CheckResult::timeout(5)).is_none());
        assert!(to_stored(&CheckResult::rejected("no")).is_none());
        assert!(to_stored(&VerifyResult::timeout(5)).is_none());
        assert!(to_stored(&VerifyResult::rejected("no")).is_none());
        let n = NormalizeResult {
            check: CheckResult::timeout(3),
            normalized: None,
        };
        assert!(to_stored(&n).is_none());
        // equiv: a verdict is stored unless an attempt timed out.
        let attempt = |status| leanpool_protocol::EquivAttempt {
            attempt: "tactics".into(),
            status,
        };
        assert!(to_stored(&EquivResult::unknown(vec![attempt(VerifyStatus::Error)])).is_some());
        assert!(to_stored(&EquivResult::unknown(vec![attempt(VerifyStatus::Timeout)])).is_none());
        assert!(to_stored(&EquivResult::timeout(5)).is_none());
        assert!(to_stored(&EquivResult::rejected("no")).is_none());
    }

    #[test]
    fn a_hit_is_the_first_answer_plus_the_mark() {
        let first = result(CheckStatus::Ok);
        let first_bytes = serde_json::to_string(&first).unwrap();
        let mut timed = first.clone();
        timed.elapsed_ms = Some(12);
        timed.worker_us = Some(3400);
        let stored = to_stored(&timed).unwrap();
        assert_eq!(stored, first_bytes.as_bytes(), "timings are not stored");
        let hit = from_stored::<CheckResult>(&stored, None).unwrap();
        assert_eq!(
            hit,
            format!(
                "{},\"cached\":true}}",
                &first_bytes[..first_bytes.len() - 1]
            )
        );
        let back: CheckResult = serde_json::from_str(&hit).unwrap();
        assert_eq!(back, first);
        let timed_hit = from_stored::<CheckResult>(&stored, Some(7)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&timed_hit).unwrap();
        assert_eq!(v["elapsed_ms"], 7);
        assert_eq!(v["cached"], true);
        assert!(v.get("worker_us").is_none());
        assert!(is_cached(&hit) && is_cached(&timed_hit) && !is_cached(&first_bytes));
    }

    #[test]
    fn garbage_is_never_given_back() {
        assert!(from_stored::<CheckResult>(b"{\"status\":\"maybe\"}", None).is_none());
        assert!(from_stored::<CheckResult>(b"[1]", None).is_none());
        assert!(mark_cached("{}").is_none());
        assert!(mark_cached("[]").is_none());
    }
}
