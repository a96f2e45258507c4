//! Positive evidence: which of Lean's messages leave a verdict `ok`.
//!
//! Every message Lean returns for the caller's text is *read* into one
//! [`Reading`]; `ok`/`proved` needs every message to read
//! [`Reading::Harmless`]. The allowlist, from what Lean attaches to a
//! message where it attaches anything (Lean 4.28's
//! `msgToInteractiveDiagnostic`: the LSP `tags` come from the message's own
//! tag, never from its text; `code` only names *errors*):
//!
//! - severity information or hint (the output of commands such as `#check`,
//!   `trace`, `exact?`'s suggestion): says nothing about the verdict;
//! - a warning Lean tagged `unnecessary` (tag 1: only the
//!   `linter.unusedVariables` linter) or `deprecated` (tag 2: only the
//!   `linter.deprecated` linter);
//! - a warning from any other linter: Lean's `logLint` ends every linter
//!   warning with the paragraph ``Note: This linter can be disabled with
//!   `set_option linter.NAME false` `` and attaches nothing the LSP carries,
//!   so this fixed suffix, naming the linter's option, is what identifies
//!   it (the caller cannot define a linter: that needs code the guard
//!   refuses).
//!
//! Checked before the allowlist: a warning that mentions `sorry` in any
//! form ([`leanpool_protocol::is_sorry_warning`]) (`sorry`, `sorryAx`, a `pp` option's rewording `sorryAx (…) false`,
//! any case) reads [`Reading::Sorry`]; a warning leanpool does not
//! recognise reads [`Reading::Unrecognised`] and makes the answer `error`
//! (fail closed: leanpool cannot tell what it means for the proof).

use leanpool_lean::lsp::LeanMessage;
use leanpool_protocol::{is_sorry_warning, Severity};

/// LSP diagnostic tag `unnecessary`: Lean's unused-variables linter.
const TAG_UNNECESSARY: u64 = 1;
/// LSP diagnostic tag `deprecated`: Lean's deprecation linter.
const TAG_DEPRECATED: u64 = 2;

/// What one of Lean's messages means for the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Positively recognised as harmless; the name says by what.
    Harmless(&'static str),
    /// A warning about `sorry`: the verdict is `sorry` at best.
    Sorry,
    /// An error: the verdict is `error`.
    Error,
    /// A warning leanpool does not recognise: no `ok`.
    Unrecognised,
}

/// The linter option named by Lean's `logLint` note ending `message`:
/// `Some("linter.x")` when the message's last paragraph is exactly that
/// note.
pub fn linter_of(message: &str) -> Option<&str> {
    let last = message.trim_end().rsplit("\n\n").next()?;
    let name = last
        .strip_prefix("Note: This linter can be disabled with `set_option ")?
        .strip_suffix(" false`")?;
    let plain = name.starts_with("linter.")
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '.' || c == '_');
    plain.then_some(name)
}

/// Reads one message (see the module docs for the allowlist).
pub fn read(m: &LeanMessage) -> Reading {
    match m.diagnostic.severity {
        Severity::Error => Reading::Error,
        Severity::Information => Reading::Harmless("information"),
        Severity::Hint => Reading::Harmless("hint"),
        Severity::Warning if is_sorry_warning(&m.diagnostic) => Reading::Sorry,
        Severity::Warning if m.tags.contains(&TAG_UNNECESSARY) => {
            Reading::Harmless("linter.unusedVariables (LSP tag unnecessary)")
        }
        Severity::Warning if m.tags.contains(&TAG_DEPRECATED) => {
            Reading::Harmless("linter.deprecated (LSP tag deprecated)")
        }
        Severity::Warning if linter_of(&m.diagnostic.message).is_some() => {
            Reading::Harmless("a linter's warning (logLint note)")
        }
        Severity::Warning => Reading::Unrecognised,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leanpool_protocol::{Diagnostic, Position, Range};

    fn warning(message: &str, tags: &[u64]) -> LeanMessage {
        let p = Position {
            line: 0,
            character: 0,
        };
        LeanMessage {
            diagnostic: Diagnostic {
                severity: Severity::Warning,
                range: Range { start: p, end: p },
                message: message.into(),
            },
            code: None,
            tags: tags.to_vec(),
            lean_tags: vec![],
        }
    }

    // Messages as real Lean 4.28 (WASM) sent them (tests/verdict_lean.rs).
    #[test]
    fn sorry_in_any_spelling_is_sorry() {
        for m in [
            "declaration uses `sorry`",
            "declaration uses `sorryAx`",
            "declaration uses `sorryAx (∀ (tag : Lean.Name), Eq (HAdd.hAdd 2 2) 5) false\n  (((Lean.Name.anonymous.str \"x\")`",
            "declaration uses 'sorry'",
            // Even dressed up as an allowed linter's warning.
            "unused variable `hSorry`\n\nNote: This linter can be disabled with `set_option linter.unusedVariables false`",
        ] {
            assert_eq!(read(&warning(m, &[1])), Reading::Sorry, "{m}");
        }
    }

    #[test]
    fn allowlisted_warnings_by_what_lean_attached() {
        assert!(matches!(
            read(&warning("unused variable `h`\n\nNote: This linter can be disabled with `set_option linter.unusedVariables false`", &[1])),
            Reading::Harmless(_)
        ));
        assert!(matches!(
            read(&warning("`old` has been deprecated: use other", &[2])),
            Reading::Harmless(_)
        ));
        let simp = "This simp argument is unused:\n  Nat.add_comm\n\nHint: Omit it from the simp argument list.\n  simp ̵[̵N̵a̵t̵.̵a̵d̵d̵_̵c̵o̵m̵m̵]̵\n\nNote: This linter can be disabled with `set_option linter.unusedSimpArgs false`";
        assert_eq!(linter_of(simp), Some("linter.unusedSimpArgs"));
        assert!(matches!(read(&warning(simp, &[])), Reading::Harmless(_)));
    }

    #[test]
    fn anything_else_is_unrecognised() {
        for m in [
            // The deprecation wording without Lean's tag.
            "`old` has been deprecated: use other",
            "unused variable `h`",
            // The note not as the last paragraph, or not Lean's exact form.
            "Note: This linter can be disabled with `set_option linter.x false`\n\nmore",
            "Note: This linter can be disabled with `set_option linter.x true`",
            "Note: This linter can be disabled with `set_option maxHeartbeats false`",
            "Note: This linter can be disabled with `set_option linter.x y false`",
            "some warning of a future Lean",
        ] {
            assert_eq!(read(&warning(m, &[])), Reading::Unrecognised, "{m}");
        }
    }
}
