//! The methods leanpool runs on a warm Lean worker, one module each:
//! [`check`] (does a text elaborate, and its verdict), [`verify`] (a proof
//! of a fixed statement), [`terms`] (`normalize` and `opt`: a statement as
//! Lean elaborated it, and its operator tree), and the verdict they share
//! ([`verdict`]: what an answer may rest on). Each takes a text the guard
//! screened (`leanpool_screen::Screened`) and a `leanpool_lean::Worker`
//! whose header is the text's.

#![deny(missing_docs)]

pub mod check;
pub mod equiv;
pub mod method;
pub mod normalize;
pub mod opt;
pub mod terms;
pub mod verdict;
pub mod verify;

pub use check::{check_on, check_on_with, check_once, check_screened};
pub use method::{Input, PoolMethod};
pub use verdict::{UnlistedAxioms, VerdictPolicy};

use leanpool_screen::GuardPolicy;

/// What a method's answer is subject to: the input guard's policy (before
/// Lean: `[guard]`) and the verdict's (after: `[verdict]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// What the guard lets through beyond its built-in rules.
    pub guard: GuardPolicy,
    /// Which axioms an `ok` may rest on.
    pub verdict: VerdictPolicy,
}
