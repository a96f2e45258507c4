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

use leanpool_screen::{GuardPolicy, Screening};

/// What a method's answer is subject to: the input guard's policy (before
/// Lean: `[guard]`) and the verdict's (after: `[verdict]`), both as the
/// config file has them, and the one fact about the workers they depend
/// on. Texts are screened with [`Policy::screening`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// What the guard lets through beyond its built-in rules.
    pub guard: GuardPolicy,
    /// Which axioms an `ok` may rest on.
    pub verdict: VerdictPolicy,
    /// The workers are native Lean (`leanpool_lean::BackendKind::Native`),
    /// not WASM: only there does `#print axioms` show a trusted compiler,
    /// so only there may `verdict.trust_compiler` let `native_decide`
    /// through the guard. Default `false`.
    pub native_backend: bool,
    /// The command keywords of the workers' libraries, read from their
    /// `.olean`s (`leanpool_screen::vocab::LibraryCommands::for_lean_path`
    /// of the workers' `LEAN_PATH`, when the pool is made, on a blocking
    /// thread, one reading shared by the pools of one `LEAN_PATH`; a
    /// failed read refuses the texts importing that module). Default: none
    /// beyond the static vocabulary.
    pub library: std::sync::Arc<leanpool_screen::vocab::LibraryCommands>,
}

impl Policy {
    /// The guard as applied to this policy's workers: `guard`, with
    /// `native_decide` let through only when `verdict.trust_compiler` is
    /// set and the workers are native.
    pub fn screening(&self) -> Screening<'_> {
        Screening {
            policy: &self.guard,
            native_decide: self.verdict.trust_compiler && self.native_backend,
            library: &self.library,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 20 part 7: `native_decide` passes only when the operator
    /// trusts the compiler *and* the workers are native; never on WASM,
    /// never by default.
    #[test]
    fn native_decide_needs_a_trusted_compiler_on_native_lean() {
        let text = "theorem t : 2 + 2 = 4 := by native_decide\n";
        let mut p = Policy::default();
        assert!(!p.screening().native_decide);
        assert!(leanpool_screen::screen(text, p.screening()).is_err());
        p.verdict.trust_compiler = true;
        assert!(
            leanpool_screen::screen(text, p.screening()).is_err(),
            "WASM: refused"
        );
        p.native_backend = true;
        assert!(leanpool_screen::screen(text, p.screening()).is_ok());
        p.verdict.trust_compiler = false;
        assert!(leanpool_screen::screen(text, p.screening()).is_err());
    }
}
