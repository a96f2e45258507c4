//! What a caller's text can make leanpool send back: capped.
//!
//! A text can make Lean print without limit (a `trace` of a huge term, a
//! `#check` of a deep expression: one request printed 64 MB). The answer
//! carries at most [`MAX_MESSAGES`] of Lean's messages, each at most
//! [`MAX_MESSAGE_BYTES`] of text, at most [`MAX_TOTAL_BYTES`] in all; the
//! same caps apply to the declaration types `check` reports (each type at
//! most [`MAX_MESSAGE_BYTES`], all types of one answer together at most
//! [`MAX_TOTAL_BYTES`]: [`budgeted`]), and a text declares at most
//! [`crate::verdict::MAX_DECLARATIONS`] names.
//! The cap is applied *after* the verdict: the status is decided on every
//! message, whole, so what is cut can never turn a failing verdict into
//! `ok`. Errors are kept before warnings, warnings before the rest; what
//! was left out is counted in one more message at the end of the caller's
//! text (severity information).

use leanpool_protocol::{Diagnostic, Position, Range, Severity};

/// Most messages one answer (one list of diagnostics) carries.
pub const MAX_MESSAGES: usize = 256;
/// Most bytes of one message's text (or one declaration type).
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;
/// Most bytes of message text in one list of diagnostics.
pub const MAX_TOTAL_BYTES: usize = 1024 * 1024;

/// `text` cut to at most `max` bytes on a character boundary, with a note
/// of how much was cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}… [leanpool: {} more bytes not shown]",
        &text[..end],
        text.len() - end
    )
}

/// `text` cut to [`MAX_MESSAGE_BYTES`] and to what is left of `budget`
/// (the bytes all declarations' types may still add to one answer,
/// [`MAX_TOTAL_BYTES`] in all), which it then uses up.
pub fn budgeted(text: &str, budget: &mut usize) -> String {
    let out = truncate(text, MAX_MESSAGE_BYTES.min(*budget));
    *budget = budget.saturating_sub(text.len().min(MAX_MESSAGE_BYTES));
    out
}

/// Caps a final, sorted list of diagnostics (see the module docs); `end`
/// is where the note about left-out messages goes. Keeps the list's order.
pub fn cap(diagnostics: Vec<Diagnostic>, end: Position) -> Vec<Diagnostic> {
    let rank = |d: &Diagnostic| match d.severity {
        Severity::Error => 0,
        Severity::Warning => 1,
        _ => 2,
    };
    let mut order: Vec<usize> = (0..diagnostics.len()).collect();
    order.sort_by_key(|&i| rank(&diagnostics[i]));
    let mut keep = vec![false; diagnostics.len()];
    let (mut bytes, mut kept) = (0usize, 0usize);
    for i in order {
        let len = diagnostics[i].message.len().min(MAX_MESSAGE_BYTES);
        if kept < MAX_MESSAGES && bytes + len <= MAX_TOTAL_BYTES {
            keep[i] = true;
            kept += 1;
            bytes += len;
        }
    }
    let left_out = diagnostics.len() - kept;
    let left_bytes: usize = diagnostics
        .iter()
        .zip(&keep)
        .filter(|(_, k)| !**k)
        .map(|(d, _)| d.message.len())
        .sum();
    let mut out: Vec<Diagnostic> = diagnostics
        .into_iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(mut d, _)| {
            d.message = truncate(&d.message, MAX_MESSAGE_BYTES);
            d
        })
        .collect();
    if left_out > 0 {
        out.push(Diagnostic {
            severity: Severity::Information,
            range: Range { start: end, end },
            message: format!(
                "leanpool: {left_out} more of Lean's messages ({left_bytes} bytes) not shown: an answer carries at most \
                 {MAX_MESSAGES} messages and {MAX_TOTAL_BYTES} bytes of them; the status was decided on all of them"
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(sev: Severity, line: u32, msg: String) -> Diagnostic {
        let p = Position { line, character: 0 };
        Diagnostic {
            severity: sev,
            range: Range { start: p, end: p },
            message: msg,
        }
    }

    #[test]
    fn declaration_types_share_one_budget() {
        let mut budget = MAX_TOTAL_BYTES;
        let big = "x".repeat(MAX_MESSAGE_BYTES * 2);
        let total: usize = (0..1000).map(|_| budgeted(&big, &mut budget).len()).sum();
        assert!(total <= MAX_TOTAL_BYTES + 1000 * 64, "{total}");
        assert_eq!(budget, 0);
    }

    #[test]
    fn long_messages_are_cut_on_a_character_boundary() {
        let t = truncate(&"é".repeat(MAX_MESSAGE_BYTES), MAX_MESSAGE_BYTES + 1);
        assert!(t.starts_with("éé") && t.ends_with("bytes not shown]"));
        assert!(t.len() < MAX_MESSAGE_BYTES + 64);
        assert_eq!(truncate("short", 10), "short");
    }

    #[test]
    fn errors_survive_the_cap_and_the_rest_is_counted() {
        let end = Position {
            line: 9,
            character: 0,
        };
        let mut many: Vec<Diagnostic> = (0..1000)
            .map(|i| d(Severity::Information, i, "x".repeat(10_000)))
            .collect();
        many.push(d(Severity::Error, 5000, "the error".into()));
        let out = cap(many, end);
        assert!(out.len() <= MAX_MESSAGES + 1);
        assert!(out.iter().map(|d| d.message.len()).sum::<usize>() <= MAX_TOTAL_BYTES + 300);
        assert!(out.iter().any(|d| d.message == "the error"));
        let note = out.last().unwrap();
        assert!(note.message.contains("not shown") && note.range.start == end);
        assert!(out[..out.len() - 1]
            .windows(2)
            .all(|w| w[0].range <= w[1].range));
    }
}
