//! Reading answers in asserts.

use leanpool_protocol::CheckResult;

/// The messages of `r`'s diagnostics, one a line (for `contains` asserts
/// and failure output).
pub fn messages(r: &CheckResult) -> String {
    r.diagnostics
        .iter()
        .map(|d| d.message.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}
