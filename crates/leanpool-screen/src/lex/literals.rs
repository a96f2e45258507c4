//! Literals and the places where Lean's reading of a `'` depends on its
//! token table: `numberFnAux`, `quotedCharCoreFn`, `strLitFnAux` (and
//! `interpolatedStrFn`), `charLitFnAux`, `rawStrLitFnAux`. Part of
//! [`super::Lexer`]; the reasoning is in the parent module's docs.

use super::{err, Kind, LexError, Lexer, Token, MAX_INTERP_DEPTH};

impl Lexer<'_> {
    /// `numberFnAux` / `decimalNumberFn`: ends where Lean's number (or its
    /// error position) ends; numbers hide nothing, so errors are left to Lean.
    pub(super) fn number(&self, i: usize) -> usize {
        let b = self.src.as_bytes();
        let digits = |mut j: usize, p: fn(u8) -> bool| {
            while j < b.len() && (p(b[j]) || b[j] == b'_') {
                j += 1;
            }
            j
        };
        if b[i] == b'0' {
            match b.get(i + 1) {
                Some(b'b' | b'B') => return digits(i + 2, |c| c == b'0' || c == b'1'),
                Some(b'o' | b'O') => return digits(i + 2, |c| (b'0'..=b'7').contains(&c)),
                Some(b'x' | b'X') => return digits(i + 2, |c| c.is_ascii_hexdigit()),
                _ => {}
            }
        }
        let mut j = digits(i, |c| c.is_ascii_digit());
        if b.get(j) == Some(&b'.') {
            j += 1;
            if b.get(j).is_some_and(u8::is_ascii_digit) {
                j = digits(j, |c| c.is_ascii_digit());
            }
        }
        if matches!(b.get(j), Some(b'e' | b'E')) {
            let mut k = j + 1;
            if matches!(b.get(k), Some(b'-' | b'+')) {
                k += 1;
            }
            if b.get(k).is_some_and(u8::is_ascii_digit) {
                j = digits(k, |c| c.is_ascii_digit());
            }
        }
        j
    }

    /// An escape after `\` at `i` (`quotedCharCoreFn`); returns the offset after it.
    pub(super) fn escape(&self, i: usize, in_string: bool, brace: bool) -> Option<usize> {
        let c = self.ch(i)?;
        let hex = |j: usize, n: usize| {
            let s = self.src.get(j..j + n)?;
            s.bytes().all(|b| b.is_ascii_hexdigit()).then_some(j + n)
        };
        match c {
            '\\' | '"' | '\'' | 'r' | 'n' | 't' => Some(i + 1),
            '{' if brace => Some(i + 1),
            'x' => hex(i + 1, 2),
            'u' => hex(i + 1, 4),
            '\n' if in_string => {
                // `stringGapFn`: whitespace containing exactly one newline.
                let mut j = i + 1;
                while let Some(d) = self.ch(j) {
                    match d {
                        '\n' => return None,
                        ' ' | '\t' | '\r' => j += 1,
                        _ => break,
                    }
                }
                Some(j)
            }
            _ => None,
        }
    }

    /// `strLitFnAux` (and, for strings with braces, `interpolatedStrFn`).
    pub(super) fn string(&mut self, i: usize, depth: u32, space: bool) -> Result<usize, LexError> {
        let plain = self.plain_string_end(i)?;
        let body = &self.src[i + 1..plain - 1];
        self.push(Kind::Str, self.src[i..plain].into(), i, plain, space);
        if !body.contains('{') {
            return Ok(plain);
        }
        if depth >= MAX_INTERP_DEPTH {
            return Err(err(
                i,
                "string interpolation",
                "string interpolations nest too deeply",
            ));
        }
        // Read it as an interpolated string too: it must end at the same
        // place, or the guard cannot know where Lean thinks code resumes.
        let mark = self.out.len();
        let mut j = i + 1;
        while let Some(c) = self.ch(j) {
            match c {
                '"' => {
                    j += 1;
                    break;
                }
                '\\' => match self.escape(j + 1, true, true) {
                    Some(e) => j = e,
                    None => break,
                },
                '{' => j = self.code(j + 1, true, depth + 1)? + 1,
                c => j += c.len_utf8(),
            }
        }
        self.out.truncate(mark);
        if j != plain {
            return Err(err(
                i,
                "string literal",
                "string literal whose braces change where it ends when read as an \
                 interpolated string (`s!\"…\"`): the guard cannot tell which reading Lean uses",
            ));
        }
        // Inspect the whole content as code, not only the `{…}` parts: when
        // a term inside braces does not end exactly at its `}`, Lean's error
        // recovery goes on reading the string's text as code.
        let mut sub = Lexer::new(body);
        sub.code(0, false, depth + 1)
            .and_then(|_| sub.verify_resumes())
            .map_err(|e| LexError {
                offset: e.offset + i + 1,
                ..e
            })?;
        self.out.extend(sub.out.into_iter().map(|t| Token {
            start: t.start + i + 1,
            end: t.end + i + 1,
            nested: true,
            ..t
        }));
        Ok(plain)
    }

    pub(super) fn plain_string_end(&self, i: usize) -> Result<usize, LexError> {
        let mut j = i + 1;
        loop {
            let Some(c) = self.ch(j) else {
                return Err(err(
                    i,
                    "unterminated string literal",
                    "Lean recovers from an unterminated string by reading its contents as code",
                ));
            };
            match c {
                '"' => return Ok(j + 1),
                '\\' => match self.escape(j + 1, true, false) {
                    Some(e) => j = e,
                    None => return Err(err(
                        j,
                        "invalid escape in string literal",
                        "Lean recovers from a bad escape by reading the rest of the string as code",
                    )),
                },
                c => j += c.len_utf8(),
            }
        }
    }

    /// `charLitFnAux`, entered at a `'` not followed by `'`.
    /// With `glued` (directly after a symbol) the `'` may instead end a
    /// longer Lean token such as Mathlib's `∑'` or `⁻¹'`, so it is never
    /// read as a character literal there: `∑'+'"'` is `∑'`, `+`, `'"'` for
    /// Lean with Mathlib, not `∑`, `'+'`, and a string.
    pub(super) fn char_lit(
        &mut self,
        i: usize,
        space: bool,
        glued: bool,
    ) -> Result<usize, LexError> {
        let c1 = i + 1;
        let after = match self.ch(c1) {
            Some('\\') => self.escape(c1 + 1, false, false),
            Some(c) => Some(c1 + c.len_utf8()),
            None => None,
        };
        if let Some(a) = after.filter(|_| !glued) {
            if self.at(a, '\'') {
                self.push(Kind::Char, self.src[i..a + 1].into(), i, a + 1, space);
                return Ok(a + 1);
            }
        }
        // Not (read as) a character literal. Lean either has a token ending
        // in `'` here and goes on at `c1`, or fails the literal and resumes
        // a character or two later. Both readings agree unless one of those
        // characters opens a comment, string, escape or another literal.
        self.check_no_hiding_near(c1, 3, i, "'")?;
        // Lean may also fail before this `'` and resume further on (after
        // `∑` without Mathlib: `0∑' -/ "` hid the next line from the guard
        // only, lexdiff bench): no string, `«`, raw string or comment may
        // open on the rest of the line.
        self.check_no_opener_on_line(c1, i, "'")?;
        self.note_resume(c1, i, "'");
        self.push(Kind::Symbol, "'".into(), i, c1, space);
        Ok(c1)
    }

    /// Reject if a string, `«` name, raw string or comment opens between
    /// `from` and the end of its line.
    pub(super) fn check_no_opener_on_line(
        &self,
        from: usize,
        at: usize,
        what: &str,
    ) -> Result<(), LexError> {
        let end = self.src[from..]
            .find('\n')
            .map_or(self.src.len(), |k| from + k);
        let mut j = from;
        while j < end {
            if self.opens_region(j, false) {
                return Err(err(
                    at,
                    what,
                    "a `'` that is not a character literal, with a quote or comment later on its \
                     line: Lean's error recovery may read the line differently from the guard",
                ));
            }
            j += self.ch(j).map_or(1, char::len_utf8);
        }
        Ok(())
    }

    /// Reject if any of the `n` characters from `from` could open a region
    /// the guard would hide while Lean, resuming elsewhere, would not.
    pub(super) fn check_no_hiding_near(
        &self,
        from: usize,
        n: usize,
        at: usize,
        what: &str,
    ) -> Result<(), LexError> {
        let mut j = from;
        for _ in 0..n {
            let Some(c) = self.ch(j) else { break };
            if self.opens_region(j, true) {
                return Err(err(
                    at,
                    what,
                    "a `'` that is not a character literal, next to a quote, comment or escape: \
                     Lean may read this differently from the guard (a character literal directly \
                     after a symbol, e.g. `['a']`, needs a space before it: `[ 'a']`)",
                ));
            }
            j += c.len_utf8();
        }
        Ok(())
    }

    /// Does a string, `«` name, raw string or comment open at `j`? With
    /// `near`, an escape or a quote `'` counts too.
    pub(super) fn opens_region(&self, j: usize, near: bool) -> bool {
        let Some(c) = self.ch(j) else { return false };
        let next = self.ch(j + c.len_utf8());
        match c {
            '"' | '«' => true,
            '\\' | '\'' => near,
            '-' | '/' => next == Some('-'),
            'r' => self.raw_string_start(j + 1),
            _ => false,
        }
    }

    /// `isRawStrLitStart`, `i` just after the `r`.
    pub(super) fn raw_string_start(&self, i: usize) -> bool {
        let j = self.take_while(i, |c| c == '#');
        self.at(j, '"')
    }

    /// `rawStrLitFnAux`: `r#…#"…"#…#`, no escapes.
    pub(super) fn raw_string(&mut self, i: usize, space: bool) -> Result<usize, LexError> {
        let hashes = self.take_while(i + 1, |c| c == '#') - (i + 1);
        let body = i + 1 + hashes + 1;
        let closing = format!("\"{}", "#".repeat(hashes));
        match self.src[body..].find(&closing) {
            Some(k) => {
                let end = body + k + closing.len();
                self.push(Kind::Str, self.src[i..end].into(), i, end, space);
                Ok(end)
            }
            None => Err(err(
                i,
                "unterminated raw string literal",
                "Lean recovers from an unterminated string by reading its contents as code",
            )),
        }
    }
}
