//! Positions: UTF-8 byte offsets <-> LSP positions (0-based line, UTF-16
//! code units).
//!
//! Lean's server speaks UTF-16 columns (the LSP default), Rust strings are
//! UTF-8, and callers index their text either way. Every conversion goes
//! through [`LineIndex`] so there is exactly one place where astral-plane
//! characters (two UTF-16 units, four UTF-8 bytes, e.g. `𝓝`) and
//! multi-byte BMP characters (`∀`: one unit, three bytes) are handled.
//!
//! Line breaks follow Lean's `FileMap`: only `\n` ends a line. A `\r`
//! directly before `\n` is treated as part of the line terminator (so a
//! column past the visible end of a CRLF line clamps before the `\r`); a
//! lone `\r` is an ordinary character, as it is for Lean.

#![deny(missing_docs)]

use leanpool_protocol::{Position, Range};

/// Line starts of one text, for O(log n) offset -> position lookups.
#[derive(Debug, Clone)]
pub struct LineIndex<'a> {
    text: &'a str,
    /// Byte offset of the first byte of every line; `line_starts[0] == 0`.
    line_starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    /// Indexes the line starts of `text`.
    pub fn new(text: &'a str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { text, line_starts }
    }

    /// The indexed text.
    pub fn text(&self) -> &'a str {
        self.text
    }

    /// Number of lines (a trailing `\n` opens one more, empty line).
    pub fn line_count(&self) -> u32 {
        self.line_starts.len() as u32
    }

    /// Byte range of a line's content, without its `\n` / `\r\n`.
    pub fn line_bytes(&self, line: u32) -> Option<std::ops::Range<usize>> {
        let start = *self.line_starts.get(line as usize)?;
        let mut end = self
            .line_starts
            .get(line as usize + 1)
            .map(|&next| next - 1)
            .unwrap_or(self.text.len());
        if end > start && self.text.as_bytes()[end - 1] == b'\r' && end < self.text.len() {
            end -= 1;
        }
        Some(start..end)
    }

    /// Position of a byte offset. Offsets past the end clamp to the end;
    /// offsets inside a multi-byte character are floored to its start.
    pub fn position(&self, offset: usize) -> Position {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = self.line_starts[line];
        let character = self.text[start..offset].encode_utf16().count() as u32;
        Position {
            line: line as u32,
            character,
        }
    }

    /// Byte offset of a position. Lines past the end clamp to the end of
    /// the text, columns past the end of a line clamp to the end of its
    /// content, and a column in the middle of a surrogate pair is floored
    /// to the start of that character.
    pub fn offset(&self, pos: Position) -> usize {
        let Some(bytes) = self.line_bytes(pos.line) else {
            return self.text.len();
        };
        let mut units = 0u32;
        for (i, ch) in self.text[bytes.clone()].char_indices() {
            let next = units + ch.len_utf16() as u32;
            if next > pos.character {
                return bytes.start + i;
            }
            units = next;
        }
        bytes.end
    }

    /// The LSP range (UTF-16 columns) of a byte range.
    pub fn range(&self, bytes: std::ops::Range<usize>) -> Range {
        Range {
            start: self.position(bytes.start),
            end: self.position(bytes.end),
        }
    }
}

/// Length of a string in UTF-16 code units (an LSP column width).
pub fn utf16_len(s: &str) -> u32 {
    s.encode_utf16().count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(line: u32, character: u32) -> Position {
        Position { line, character }
    }

    #[test]
    fn ascii_lines() {
        let t = "ab\ncd\n";
        let ix = LineIndex::new(t);
        assert_eq!(ix.line_count(), 3);
        assert_eq!(ix.position(0), p(0, 0));
        assert_eq!(ix.position(2), p(0, 2));
        assert_eq!(ix.position(3), p(1, 0));
        assert_eq!(ix.position(6), p(2, 0));
        assert_eq!(ix.position(100), p(2, 0));
        assert_eq!(ix.offset(p(1, 1)), 4);
        assert_eq!(
            ix.offset(p(1, 99)),
            5,
            "column clamps to end of line content"
        );
        assert_eq!(ix.offset(p(9, 0)), t.len());
    }

    #[test]
    fn bmp_non_ascii_is_one_unit_per_char() {
        // `∀` and `∃` are 3 UTF-8 bytes, 1 UTF-16 unit.
        let t = "theorem x : ∀ n : Nat, ∃ m, m > n := by\n  intro n; exact ⟨n+1, by omega⟩";
        let ix = LineIndex::new(t);
        let m = t.find("m >").unwrap();
        // "theorem x : " = 12, "∀ n : Nat, " = 11, "∃ " = 2, "m, " = 3 -> 28
        assert_eq!(ix.position(m), p(0, 28));
        assert_eq!(ix.offset(p(0, 28)), m);
        let angle = t.find('⟩').unwrap();
        let pos = ix.position(angle);
        assert_eq!(pos.line, 1);
        assert_eq!(ix.offset(pos), angle);
    }

    #[test]
    fn astral_char_is_two_units() {
        // `𝓝` is U+1D4DD: 4 UTF-8 bytes, 2 UTF-16 units (a surrogate pair).
        let t = "-- 𝓝 x\nexample : True := bad";
        let ix = LineIndex::new(t);
        let x = t.find('x').unwrap();
        assert_eq!(x, 8);
        assert_eq!(ix.position(x), p(0, 6));
        assert_eq!(ix.offset(p(0, 6)), x);
        // Column 4 is the middle of the surrogate pair: floor to the char.
        assert_eq!(ix.offset(p(0, 4)), 3);
        assert_eq!(ix.offset(p(0, 3)), 3);
        // Byte offset inside the 4-byte char floors to its start.
        assert_eq!(ix.position(5), p(0, 3));
        let bad = t.find("bad").unwrap();
        assert_eq!(ix.position(bad), p(1, 18));
    }

    #[test]
    fn crlf_lines() {
        let t = "a∀\r\nbc\r\n";
        let ix = LineIndex::new(t);
        assert_eq!(ix.line_count(), 3);
        assert_eq!(ix.line_bytes(0), Some(0..4));
        assert_eq!(ix.position(6), p(1, 0));
        assert_eq!(ix.offset(p(0, 2)), 4);
        assert_eq!(ix.offset(p(0, 50)), 4, "clamps before the \\r");
        assert_eq!(ix.offset(p(1, 2)), 8);
        // A lone \r is an ordinary character, as in Lean.
        let ix = LineIndex::new("a\rb");
        assert_eq!(ix.line_count(), 1);
        assert_eq!(ix.position(2), p(0, 2));
    }

    #[test]
    fn roundtrip_every_char_boundary() {
        let t = "∀ n : Nat, ∃ m, m > n\n-- 𝓝 and 𝔽\r\nε := 1\n";
        let ix = LineIndex::new(t);
        for (i, _) in t.char_indices() {
            // The `\n` of a CRLF is the one byte no column reaches: columns
            // clamp before the `\r`.
            if t[..i].ends_with('\r') {
                assert_eq!(ix.offset(ix.position(i)), i - 1);
                continue;
            }
            assert_eq!(ix.offset(ix.position(i)), i, "offset {i}");
        }
        assert_eq!(utf16_len("𝓝∀a"), 4);
    }
}
