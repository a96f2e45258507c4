//! What every check of the guard shares: its result ([`Check`], a
//! [`Finding`] made by [`refuse`]), how far a construct's scan may look
//! ([`MAX_SCAN`]; [`closing`] finds a group's end within it) and where the header ends ([`Header`], found by
//! `rules::header`). The checks live in `rules.rs` (the walk over every
//! token) and the modules it calls (`commands`, `config`, `options`,
//! `tactic_heads`).

use crate::lex::{Kind, Token};

/// A refused construct, located by the byte offset of its first token.
#[derive(Debug)]
pub(crate) struct Finding {
    pub offset: usize,
    pub construct: String,
    pub reason: String,
}

pub(crate) type Check = Result<(), Finding>;

pub(crate) fn refuse(t: &Token, construct: impl Into<String>, reason: impl Into<String>) -> Check {
    Err(Finding {
        offset: t.start,
        construct: construct.into(),
        reason: reason.into(),
    })
}

/// Where the header ends, in token indices.
#[derive(Debug, Default)]
pub(crate) struct Header {
    /// Tokens before this index are the leading `import` commands.
    pub imports_end: usize,
    /// Indices of `set_option` tokens that are header commands (not `… in`).
    pub options: Vec<usize>,
}

/// How far forward a construct's own scan may look (attribute list,
/// notation atoms, configuration value). Keeps screening linear on
/// adversarial input such as thousands of unclosed `@[`; no legitimate
/// construct comes near it.
pub(crate) const MAX_SCAN: usize = 1024;

/// The `closer` (`)` or `]`) that closes a group whose contents start at
/// token `k`, brackets `(` `[` `{` `⟨` nested inside counted; `None` when
/// it is not found within [`MAX_SCAN`] tokens.
pub(crate) fn closing(toks: &[Token], mut k: usize, closer: &str) -> Option<usize> {
    let limit = k + MAX_SCAN;
    let mut depth = 0u32;
    while let Some(t) = toks.get(k).filter(|_| k < limit) {
        if t.kind == Kind::Symbol {
            match t.text.as_str() {
                "(" | "[" | "{" | "⟨" => depth += 1,
                c if c == closer && depth == 0 => return Some(k),
                ")" | "]" | "}" | "⟩" => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        k += 1;
    }
    None
}
