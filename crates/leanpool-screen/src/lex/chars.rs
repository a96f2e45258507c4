//! Character classes of Lean's tokenizer, as the guard reads them
//! (`Lean.isLetterLike`, `isIdFirst`, `isIdRest`, subscripts) and the
//! characters it refuses in code (invisible ones), with the core tokens a
//! literal may be glued to.

/// `Lean.isLetterLike`, in the narrowest form any Lean 4 release used.
pub(crate) fn is_letter_like(c: char) -> bool {
    let v = c as u32;
    ((0x3b1..=0x3c9).contains(&v) && v != 0x3bb)
        || ((0x391..=0x3a9).contains(&v) && v != 0x3a0 && v != 0x3a3)
        || (0x3ca..=0x3fb).contains(&v)
        || (0x1f00..=0x1ffe).contains(&v)
        || (0x2100..=0x214f).contains(&v)
        || (0x1d49c..=0x1d59f).contains(&v)
        // Latin-1 letters (not `×`, `÷`) and Latin Extended-A: Lean 4.28
        // reads `café` as one name (seen cold: corpus/03_unicode_bmp).
        || ((0xc0..=0xff).contains(&v) && v != 0xd7 && v != 0xf7)
        || (0x100..=0x17f).contains(&v)
}

pub(crate) fn is_subscript_alnum(c: char) -> bool {
    let v = c as u32;
    (0x2080..=0x2089).contains(&v)
        || (0x2090..=0x209c).contains(&v)
        || (0x1d62..=0x1d6a).contains(&v)
        || v == 0x2c7c
}

/// Whether `c` may start a Lean identifier.
pub fn is_id_first(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || is_letter_like(c)
}

/// Whether `c` may continue a Lean identifier.
pub fn is_id_rest(c: char) -> bool {
    is_id_first(c) || c.is_ascii_digit() || matches!(c, '\'' | '!' | '?') || is_subscript_alnum(c)
}

/// Characters that render as nothing (or as a plain space) but are not
/// Lean whitespace: controls, format characters (zero-width joiners,
/// bidirectional overrides and isolates), variation selectors, tags,
/// fillers and non-ASCII spaces.
pub(crate) fn is_invisible(c: char) -> bool {
    let v = c as u32;
    (v < 0x20 && !matches!(c, '\n' | '\t' | '\r'))
        || (0x7f..=0x9f).contains(&v)
        || matches!(
            v,
            0xa0 | 0xad
                | 0x34f
                | 0x61c
                | 0x115f
                | 0x1160
                | 0x1680
                | 0x17b4
                | 0x17b5
                | 0x202f
                | 0x205f
                | 0x3000
                | 0x3164
                | 0xfeff
                | 0xffa0
        )
        || (0x180b..=0x180f).contains(&v)
        || (0x2000..=0x200f).contains(&v)
        || (0x2028..=0x202e).contains(&v)
        || (0x2060..=0x206f).contains(&v)
        || (0xfe00..=0xfe0f).contains(&v)
        || (0xfff9..=0xfffb).contains(&v)
        || (0x1d173..=0x1d17a).contains(&v)
        || (0xe0000..=0xe0fff).contains(&v)
}

/// Non-ASCII symbols that are tokens of core Lean (so a literal glued after
/// one is lexed the same with or without a library's tokens).
pub(crate) const CORE_UNICODE_TOKENS: &[&str] = &[
    "⟨", "⟩", "←", "→", "↔", "∀", "∃", "¬", "∧", "∨", "≠", "≤", "≥", "∈", "∉", "×", "∘", "⦃", "⦄",
    "λ", "↑", "▸",
];
