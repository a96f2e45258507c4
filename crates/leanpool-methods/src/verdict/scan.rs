//! Which declarations a body introduces, read from the guard's token
//! stream (the names leanpool's trailer asks Lean about).

use leanpool_screen::lex::{self as lexer, Kind, Token};
use leanpool_screen::vocab::{keyword, COMMAND_WORDS, DECLARATION_WORDS};

/// One declaration of the caller's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declaration {
    /// Full name, components without `«»`.
    pub name: Vec<String>,
    /// The declaring keyword (`theorem`, `axiom`, ...).
    pub keyword: String,
    /// Byte range of the name in the body.
    pub start: usize,
    /// Byte offset just past the name.
    pub end: usize,
}

impl Declaration {
    /// `A.b`, with `«»` where a component needs it.
    pub fn display(&self) -> String {
        self.name
            .iter()
            .map(|c| escape(c))
            .collect::<Vec<_>>()
            .join(".")
    }

    /// `_root_.«A».«x»`: how the trailer names it, whatever namespace
    /// the body left open.
    pub(crate) fn axioms_reference(&self) -> String {
        let parts: Vec<String> = self.name.iter().map(|c| format!("«{c}»")).collect();
        format!("_root_.{}", parts.join("."))
    }
}

fn escape(c: &str) -> String {
    let mut chars = c.chars();
    let plain = chars.next().is_some_and(lexer::is_id_first) && chars.all(lexer::is_id_rest);
    if plain && !COMMAND_WORDS.contains(&c) {
        c.to_string()
    } else {
        format!("«{c}»")
    }
}

/// What the body declares, from its tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// The declarations, in text order.
    pub declarations: Vec<Declaration>,
}

enum Scope {
    Namespace(usize),
    Section,
    Mutual,
}

/// Splits a name as written (`A.«b c».d`) into components; `None` when it
/// is not a plain dotted name.
fn components(src: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = src;
    loop {
        if let Some(r) = rest.strip_prefix('«') {
            let close = r.find('»')?;
            out.push(r[..close].to_string());
            rest = &r[close + '»'.len_utf8()..];
        } else {
            let end = rest
                .find(|c: char| !lexer::is_id_rest(c))
                .unwrap_or(rest.len());
            let part = &rest[..end];
            if !part.chars().next().is_some_and(lexer::is_id_first) {
                return None;
            }
            out.push(part.to_string());
            rest = &rest[end..];
        }
        if rest.is_empty() {
            return Some(out);
        }
        rest = rest.strip_prefix('.')?;
    }
}

/// Most named declarations one text (`check`'s text, `verify`'s
/// `context`) may have: leanpool asks Lean three questions about each
/// and answers with each one's type, so the count bounds both the work
/// and the answer. More is `rejected`.
pub const MAX_DECLARATIONS: usize = 256;

/// Finds the declarations a body introduces. `Err(reason)` for a body
/// whose declarations leanpool cannot name (the request is `rejected`):
/// an `instance` without a name, a declaration name it cannot read.
pub fn scan(body: &str) -> Result<Scan, (usize, String)> {
    let toks = lexer::tokenize(body).map_err(|e| (e.offset, e.reason))?;
    scan_tokens(body, &toks)
}

/// [`scan`] over tokens already read (the screened document's): `toks`
/// are tokens of `body` (offsets into it, as every returned offset is),
/// e.g. the tokens of a screened document after its import header with
/// `body` the whole document text.
pub fn scan_tokens(body: &str, toks: &[Token]) -> Result<Scan, (usize, String)> {
    let mut scopes: Vec<Scope> = Vec::new();
    let mut namespace: Vec<String> = Vec::new();
    let mut out = Scan::default();
    let line_of = |off: usize| body[..off].matches('\n').count();
    let name_after = |i: usize| -> Option<&Token> {
        let n = toks.get(i + 1)?;
        let plain_kw = keyword(body, n).is_some_and(|k| COMMAND_WORDS.contains(&k));
        (n.kind == Kind::Ident && !plain_kw && line_of(n.start) == line_of(toks[i].start))
            .then_some(n)
    };
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        let Some(kw) = keyword(body, t) else {
            i += 1;
            continue;
        };
        match kw {
            "namespace" => {
                let n = toks.get(i + 1).filter(|n| n.kind == Kind::Ident);
                let comps = n.and_then(|n| components(&body[n.start..n.end]));
                let Some(comps) = comps else {
                    return Err((
                        t.start,
                        "a `namespace` whose name leanpool cannot read".into(),
                    ));
                };
                scopes.push(Scope::Namespace(comps.len()));
                namespace.extend(comps);
            }
            "section" => scopes.push(Scope::Section),
            "mutual" => scopes.push(Scope::Mutual),
            "end" => {
                if let Some(Scope::Namespace(k)) = scopes.pop() {
                    namespace.truncate(namespace.len() - k);
                }
                if name_after(i).is_some() {
                    i += 1;
                }
            }
            w if DECLARATION_WORDS.contains(&w) => {
                i = declaration(body, toks, i, w, &namespace, &mut out)?;
            }
            _ => {}
        }
        i += 1;
    }
    Ok(out)
}

/// The declaration whose keyword `w` is token `i`: recorded in `out`
/// (under `namespace`); returns the index of the last token read (the
/// scan goes on after it).
fn declaration(
    body: &str,
    toks: &[Token],
    i: usize,
    w: &str,
    namespace: &[String],
    out: &mut Scan,
) -> Result<usize, (usize, String)> {
    let t = &toks[i];
    let prev = i.checked_sub(1).and_then(|p| keyword(body, &toks[p]));
    // `deriving instance`, `class inductive` (the name follows
    // `inductive`), `class abbrev`.
    if prev == Some("deriving")
        || (w == "class"
            && toks
                .get(i + 1)
                .and_then(|n| keyword(body, n))
                .is_some_and(|k| DECLARATION_WORDS.contains(&k)))
    {
        return Ok(i);
    }
    let mut k = i + 1;
    if w == "instance" {
        k = after_priority(toks, k);
    }
    let n = toks.get(k).filter(|n| {
        n.kind == Kind::Ident && !keyword(body, n).is_some_and(|k| COMMAND_WORDS.contains(&k))
    });
    let Some(n) = n else {
        // An anonymous `instance` (Lean names it itself): like an
        // `example`, judged from Lean's messages only.
        if w == "instance" {
            return Ok(k - 1);
        }
        return Err((t.start, format!("`{w}` without a name leanpool can read")));
    };
    let Some(mut comps) = components(&body[n.start..n.end]) else {
        return Err((n.start, "a declaration name leanpool cannot read".into()));
    };
    let name = if comps.first().map(String::as_str) == Some("_root_") {
        comps.remove(0);
        comps
    } else {
        namespace.iter().cloned().chain(comps).collect()
    };
    if name.is_empty() || name.iter().any(|c| c.contains('»') || c.contains('«')) {
        return Err((n.start, "a declaration name leanpool cannot read".into()));
    }
    if out.declarations.len() == MAX_DECLARATIONS {
        return Err((
            n.start,
            format!(
                "more than {MAX_DECLARATIONS} declarations in one text: each one's type \
                     and axioms come back in the answer; split the text into several requests"
            ),
        ));
    }
    out.declarations.push(Declaration {
        name,
        keyword: w.to_string(),
        start: n.start,
        end: n.end,
    });
    Ok(k)
}

/// `instance (priority := n) name`: the index after the priority group
/// starting at `k`, or `k` when there is none.
fn after_priority(toks: &[Token], mut k: usize) -> usize {
    let opens = toks
        .get(k)
        .is_some_and(|n| n.kind == Kind::Symbol && n.text == "(")
        && toks.get(k + 1).is_some_and(|n| n.text == "priority");
    if !opens {
        return k;
    }
    let mut depth = 0i32;
    while let Some(n) = toks.get(k) {
        if n.kind == Kind::Symbol && n.text == "(" {
            depth += 1;
        } else if n.kind == Kind::Symbol && n.text == ")" {
            depth -= 1;
            if depth == 0 {
                return k + 1;
            }
        }
        k += 1;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(body: &str) -> Vec<String> {
        scan(body)
            .unwrap()
            .declarations
            .iter()
            .map(|d| format!("{} {}", d.keyword, d.display()))
            .collect()
    }

    #[test]
    fn declarations_are_capped() {
        let body = |n: usize| {
            (0..n)
                .map(|i| format!("theorem t{i} : True := trivial\n"))
                .collect::<String>()
        };
        assert_eq!(
            scan(&body(MAX_DECLARATIONS)).unwrap().declarations.len(),
            MAX_DECLARATIONS
        );
        let (_, why) = scan(&body(MAX_DECLARATIONS + 1)).unwrap_err();
        assert!(why.contains("more than 256 declarations"), "{why}");
    }

    #[test]
    fn declarations_with_namespaces() {
        let b = "namespace A.B\ntheorem t : True := trivial\nsection S\nprivate def «x y» := 1\nend S\nend A.B\n\
                 theorem _root_.C.u : True := trivial\nnamespace D\ntheorem _root_.E : True := trivial\nend D\n\
                 instance (priority := 10) instFoo : Inhabited Nat := ⟨0⟩\naxiom cheat : False\n\
                 class inductive K | a\nstructure P where\n  x : Nat\nderiving instance Repr for P\n";
        assert_eq!(
            names(b),
            [
                "theorem A.B.t",
                "def A.B.«x y»",
                "theorem C.u",
                "theorem E",
                "instance instFoo",
                "axiom cheat",
                "inductive K",
                "structure P"
            ]
        );
    }

    #[test]
    fn latin_letters_are_part_of_names_as_in_lean() {
        // Lean 4.28 reads `café` as one name (cold, corpus/03_unicode_bmp);
        // `×` is not a letter.
        assert_eq!(
            names("def café := \"café\"\ntheorem Ärger_ł : True := trivial\n"),
            ["def café", "theorem Ärger_ł"]
        );
        let toks = lexer::tokenize("a×b").unwrap();
        assert_eq!(
            toks.iter().map(|t| t.text.as_str()).collect::<Vec<_>>(),
            ["a", "×", "b"]
        );
    }

    #[test]
    fn keywords_in_comments_strings_and_guillemets_are_not_declarations() {
        assert_eq!(
            names("-- theorem x\n/- def y -/\ndef s := \"theorem z\"\ndef «theorem» := 1\n"),
            ["def s", "def «theorem»"]
        );
    }

    #[test]
    fn anonymous_instances_and_examples_are_not_listed() {
        assert!(scan("instance : Inhabited Nat := ⟨0⟩")
            .unwrap()
            .declarations
            .is_empty());
        assert!(scan("instance (priority := low) : Inhabited Nat := ⟨0⟩")
            .unwrap()
            .declarations
            .is_empty());
        assert!(scan("example : True := trivial")
            .unwrap()
            .declarations
            .is_empty());
    }
}
