//! Header / body split, and the document leanpool builds from a caller's
//! text.
//!
//! A warm worker has one document open whose *header* (imports and other
//! file-level set-up) has already been elaborated; each request replaces
//! only what follows it, so Lean reuses the imported environment. The
//! header therefore selects the worker, and two callers whose headers
//! differ only in comments, blank lines or trailing spaces should share
//! one. [`Document`] builds the text actually sent to Lean (the
//! *canonical* header followed by the caller's body, verbatim) and maps
//! Lean's positions back into the caller's text.
//!
//! ## The header rule
//!
//! The header is the longest run of whole lines from the top of the file
//! that consist only of
//! - blank lines, `--` line comments, and `/- … -/` / `/-! … -/` block
//!   comments (nested, possibly spanning lines), and
//! - *header commands*: a line whose first word is `prelude`, `module`,
//!   `import`, `public`/`meta` (as in `public import`), `open`,
//!   `set_option`, `universe`, `universes`, `namespace`, `section`, or
//!   `noncomputable section`, plus any following indented continuation
//!   lines;
//!
//! except that a header command containing the token `in` (e.g.
//! `set_option maxHeartbeats 0 in` or `open Nat in`) belongs to the next
//! declaration and so starts the body, and a doc comment `/-- … -/` always
//! starts the body (it documents the next declaration).

use crate::text::LineIndex;
use leanpool_protocol::{Position, Range};

/// A caller's text cut into header and body at a line boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split<'a> {
    /// Whole lines, including the last line's terminator.
    pub header: &'a str,
    pub body: &'a str,
    /// 0-based line of the caller's text on which `body` starts.
    pub body_line: u32,
}

const HEADER_WORDS: &[&str] = &[
    "prelude",
    "module",
    "import",
    "public",
    "meta",
    "open",
    "set_option",
    "universe",
    "universes",
    "namespace",
    "section",
];

/// What one line contributes, after comments are removed.
#[derive(Debug, PartialEq, Eq)]
enum LineKind {
    /// Only whitespace and comments.
    Blank,
    /// Code starting at column 0 (a new command) or indented code
    /// (a continuation of the previous command).
    Code { indented: bool },
    /// Starts with a doc comment: the next declaration's.
    DocComment,
}

/// Strips comments from one line given the block-comment depth at its
/// start; returns the code text (comments replaced by a space) and the
/// depth at its end. String literals are honoured so `"--"` is not a
/// comment.
fn strip_comments(line: &str, depth: &mut u32) -> (String, bool) {
    let b = line.as_bytes();
    let mut code = String::new();
    let mut doc_comment = false;
    let mut i = 0;
    let mut in_string = false;
    while i < b.len() {
        if *depth > 0 {
            if b[i..].starts_with(b"/-") {
                *depth += 1;
                i += 2;
            } else if b[i..].starts_with(b"-/") {
                *depth -= 1;
                i += 2;
                code.push(' ');
            } else {
                i += 1;
            }
            continue;
        }
        if in_string {
            match b[i] {
                b'\\' => i += 2,
                b'"' => {
                    in_string = false;
                    i += 1
                }
                _ => i += 1,
            }
            continue;
        }
        if b[i..].starts_with(b"--") {
            break;
        }
        if b[i..].starts_with(b"/-") {
            if b[i..].starts_with(b"/--") && !b[i..].starts_with(b"/--/") && code.trim().is_empty() {
                doc_comment = true;
            }
            *depth += 1;
            i += 2;
            continue;
        }
        if b[i] == b'"' {
            in_string = true;
        }
        // Copy one whole UTF-8 character.
        let ch_len = line[i..].chars().next().map_or(1, char::len_utf8);
        code.push_str(&line[i..i + ch_len]);
        i += ch_len;
    }
    (code, doc_comment)
}

fn classify(line: &str, depth: &mut u32) -> (LineKind, String) {
    let started_in_comment = *depth > 0;
    let (code, doc) = strip_comments(line, depth);
    if doc {
        return (LineKind::DocComment, code);
    }
    if code.trim().is_empty() {
        return (LineKind::Blank, code);
    }
    let indented = started_in_comment || code.starts_with(char::is_whitespace);
    (LineKind::Code { indented }, code)
}

fn is_header_command(code: &str) -> bool {
    let mut words = code.split_whitespace();
    let first = words.next().unwrap_or("");
    HEADER_WORDS.contains(&first) || (first == "noncomputable" && words.next() == Some("section"))
}

fn has_in_token(code: &str) -> bool {
    code.split_whitespace().any(|w| w == "in")
}

/// Lines of `text` with their terminators kept.
fn lines_with_ends(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive('\n')
}

/// Splits a caller's text into header and body (see the module docs for
/// the rule).
pub fn split_header(text: &str) -> Split<'_> {
    let lines: Vec<&str> = lines_with_ends(text).collect();
    let mut depth = 0u32;
    // Byte offset / line index where the header provably ends so far.
    let mut header_end = (0usize, 0u32);
    let mut offset = 0usize;
    let mut i = 0usize;
    while i < lines.len() {
        let line = lines[i];
        let (kind, code) = classify(line.trim_end_matches(['\n', '\r']), &mut depth);
        match kind {
            LineKind::Blank => {
                offset += line.len();
                i += 1;
                if depth == 0 {
                    header_end = (offset, i as u32);
                }
            }
            LineKind::DocComment => break,
            LineKind::Code { indented: true } => break,
            LineKind::Code { indented: false } => {
                if !is_header_command(&code) {
                    break;
                }
                // Gather the command: this line and indented continuations.
                let mut command = code;
                let mut end = offset + line.len();
                let mut j = i + 1;
                let mut d = depth;
                while j < lines.len() {
                    let (k, c) = classify(lines[j].trim_end_matches(['\n', '\r']), &mut d);
                    match k {
                        LineKind::Code { indented: true } => {
                            command.push(' ');
                            command.push_str(&c);
                            end += lines[j].len();
                            depth = d;
                            j += 1;
                        }
                        _ => break,
                    }
                }
                if has_in_token(&command) {
                    break;
                }
                offset = end;
                i = j;
                if depth == 0 {
                    header_end = (offset, i as u32);
                }
            }
        }
    }
    Split { header: &text[..header_end.0], body: &text[header_end.0..], body_line: header_end.1 }
}

/// The text sent to Lean for one caller's text, and the way back.
///
/// `text == canonical_header + body`, where the canonical header keeps only
/// the header's lines that carry code, each without trailing whitespace or
/// `\r`, joined by `\n`. Kept lines are otherwise verbatim, so a column on
/// a kept line means the same thing in both texts; the body is verbatim,
/// so body positions only shift by whole lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// The canonical header: the worker's key and the didOpen text.
    pub header: String,
    /// Full document text (`header` + the caller's body).
    pub text: String,
    /// Line of the caller's text where the body starts.
    caller_body_line: u32,
    /// For every line of `header`, the caller's line it came from.
    header_origin: Vec<u32>,
}

impl Document {
    pub fn new(caller_text: &str) -> Document {
        let split = split_header(caller_text);
        let mut header = String::new();
        let mut header_origin = Vec::new();
        let mut depth = 0u32;
        // Lines joined by a block comment that stays open across their
        // ends form one group, kept or dropped as a whole so the kept text
        // never has half a comment.
        let mut group: Vec<(u32, &str)> = Vec::new();
        let mut group_has_code = false;
        for (n, line) in lines_with_ends(split.header).enumerate() {
            let bare = line.trim_end_matches(['\n', '\r']);
            let (kind, _) = classify(bare, &mut depth);
            group.push((n as u32, bare));
            group_has_code |= kind != LineKind::Blank;
            if depth == 0 {
                if group_has_code {
                    for (origin, bare) in group.drain(..) {
                        header.push_str(bare.trim_end());
                        header.push('\n');
                        header_origin.push(origin);
                    }
                }
                group.clear();
                group_has_code = false;
            }
        }
        let text = format!("{header}{}", split.body);
        Document { header, text, caller_body_line: split.body_line, header_origin }
    }

    /// Line of `text` on which the body starts.
    pub fn body_line(&self) -> u32 {
        self.header_origin.len() as u32
    }

    /// Maps a position in `text` to the caller's text.
    pub fn to_caller(&self, pos: Position) -> Position {
        let body_line = self.body_line();
        if pos.line >= body_line {
            Position { line: pos.line - body_line + self.caller_body_line, character: pos.character }
        } else {
            Position { line: self.header_origin[pos.line as usize], character: pos.character }
        }
    }

    pub fn range_to_caller(&self, r: Range) -> Range {
        Range { start: self.to_caller(r.start), end: self.to_caller(r.end) }
    }

    /// Maps a position in the caller's text into `text` (`None` for a
    /// position on a header line leanpool dropped).
    pub fn from_caller(&self, pos: Position) -> Option<Position> {
        if pos.line >= self.caller_body_line {
            Some(Position { line: pos.line - self.caller_body_line + self.body_line(), character: pos.character })
        } else {
            let line = self.header_origin.iter().position(|&o| o == pos.line)?;
            Some(Position { line: line as u32, character: pos.character })
        }
    }

    /// Position in `text` of a byte offset into the caller's body.
    pub fn body_offset_position(&self, body_offset: usize) -> Position {
        LineIndex::new(&self.text).position(self.header.len() + body_offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(t: &str) -> (&str, &str, u32) {
        let s = split_header(t);
        assert_eq!(format!("{}{}", s.header, s.body), t);
        (s.header, s.body, s.body_line)
    }

    #[test]
    fn no_header() {
        assert_eq!(split("theorem t : True := trivial\n"), ("", "theorem t : True := trivial\n", 0));
        assert_eq!(split(""), ("", "", 0));
    }

    #[test]
    fn imports_opens_options_comments() {
        let t = "-- leading\nimport Init\n\n/- block\n   comment -/\nopen Nat\nset_option pp.all true\nuniverse u\n\ntheorem t : True := trivial\n";
        let (h, b, line) = split(t);
        assert_eq!(b, "theorem t : True := trivial\n");
        assert_eq!(line, 9);
        assert!(h.ends_with("universe u\n\n"));
    }

    #[test]
    fn set_option_in_starts_body() {
        let t = "open Nat\nset_option maxHeartbeats 0 in\ntheorem t : True := trivial";
        assert_eq!(split(t), ("open Nat\n", "set_option maxHeartbeats 0 in\ntheorem t : True := trivial", 1));
        let t = "open Nat in\ntheorem t : True := trivial";
        assert_eq!(split(t).2, 0);
    }

    #[test]
    fn doc_comment_starts_body_module_doc_does_not() {
        let t = "import Init\n/-! module doc -/\n/-- doc -/\ntheorem t : True := trivial";
        assert_eq!(split(t).2, 2);
    }

    #[test]
    fn continuation_lines_and_strings() {
        let t = "open Nat\n  List\nset_option trace.x \"--\"\nexample : True := trivial";
        assert_eq!(split(t).2, 3);
        // An indented line with no header command before it is body.
        assert_eq!(split("  theorem t : True := trivial").2, 0);
    }

    #[test]
    fn unterminated_comment_is_not_header() {
        let t = "import Init\n/- never closed\nimport Foo\n";
        assert_eq!(split(t).2, 1);
    }

    #[test]
    fn document_canonical_header_and_mapping() {
        let caller = "-- a comment\r\nimport Init   \r\n\r\n/- two\r\n lines -/\r\nopen Nat -- why\r\n\r\ntheorem t : 𝓝 := by\r\n  bad\r\n";
        let doc = Document::new(caller);
        assert_eq!(doc.header, "import Init\nopen Nat -- why\n");
        assert_eq!(doc.text, format!("{}theorem t : 𝓝 := by\r\n  bad\r\n", doc.header));
        assert_eq!(doc.body_line(), 2);
        // Body positions shift by whole lines, columns unchanged.
        let p = |line, character| Position { line, character };
        assert_eq!(doc.to_caller(p(3, 2)), p(8, 2));
        assert_eq!(doc.from_caller(p(8, 2)), Some(p(3, 2)));
        // Header lines map back to the line they came from.
        assert_eq!(doc.to_caller(p(1, 5)), p(5, 5));
        assert_eq!(doc.to_caller(p(0, 0)), p(1, 0));
        assert_eq!(doc.from_caller(p(0, 0)), None);
        // Same position of the same token, found from both sides.
        let caller_ix = LineIndex::new(caller);
        let doc_ix = LineIndex::new(&doc.text);
        let bad_caller = caller_ix.position(caller.find("bad").unwrap());
        let bad_doc = doc_ix.position(doc.text.find("bad").unwrap());
        assert_eq!(doc.to_caller(bad_doc), bad_caller);
        assert_eq!(doc.body_offset_position(doc.text.len() - doc.header.len() - 5), bad_doc);
    }

    #[test]
    fn headers_differing_in_comments_share_a_worker() {
        let a = Document::new("import Init\n-- x\nopen Nat\ntheorem a : True := trivial");
        let b = Document::new("/- y -/\nimport Init  \n\nopen Nat\n\ntheorem b : True := trivial");
        assert_eq!(a.header, b.header);
    }

    #[test]
    fn multi_line_comment_after_code_is_kept_whole() {
        let doc = Document::new("import Init /- starts\n  ends -/\nopen Nat\nexample : True := trivial");
        assert_eq!(doc.header, "import Init /- starts\n  ends -/\nopen Nat\n");
        assert_eq!(doc.body_line(), 3);
    }
}
