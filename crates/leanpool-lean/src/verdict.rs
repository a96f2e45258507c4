//! The verdict: what leanpool itself establishes about a body after Lean
//! elaborated it, beyond the absence of error messages.
//!
//! Messages alone are not a verdict a judge can stake anything on: a
//! command can consume messages (`#guard_msgs`, refused by the guard), a
//! declaration that failed is simply absent, and an `axiom` proves
//! anything without a single warning. So after the caller's body leanpool
//! appends a *trailer* of its own commands, which run no user code:
//!
//! - one `#check @_root_.«A».«x»` per declaration the body introduces
//!   (found from the guard's token stream: `theorem`, `lemma`, `def`,
//!   `abbrev`, `instance NAME`, `opaque`, `axiom`, `structure`, `class`,
//!   `inductive`, with the `namespace`s around them; an anonymous
//!   `instance`, like an `example`, is judged from Lean's messages only).
//!   Lean answers each
//!   with one information message at that line if the declaration exists
//!   in its environment, and with an error if it does not;
//!
//! and reads the trailer's messages back by position: every trailer line
//! must carry exactly one information message and no error, or the
//! answer is `error` (fail closed: a body that swallowed or changed the
//! trailer, e.g. by ending inside a command, cannot produce that). The
//! trailer's messages are taken out of the caller's diagnostics.
//!
//! Axioms: a body that declares an `axiom` gets `error` with a diagnostic
//! naming it at the declaration (every axiom a body declares is one it can
//! prove anything with). Axioms reached in imported libraries by name are
//! refused by the guard where Lean's core has them (`Lean.ofReduceBool`,
//! `Lean.trustCompiler`); `sorryAx` by name gives `sorry`.
//!
//! Why not `#print axioms`: Lean 4.28's worker treats the document as a
//! `module`, where `#print axioms` is disabled ("cannot use `#print axioms`
//! in a `module`"); seen on the WASM build this repository tests with.

use crate::guard::lexer::{self, Kind, Token};
use leanpool_protocol::{Diagnostic, Position, Range, Severity};

/// Words after which the next identifier names a new declaration.
const DECL_WORDS: &[&str] =
    &["theorem", "lemma", "def", "abbrev", "instance", "opaque", "axiom", "structure", "class", "inductive"];

/// Words that start a command (so they are never a `section`/`end` name).
const COMMAND_WORDS: &[&str] = &[
    "theorem", "lemma", "def", "example", "abbrev", "instance", "structure", "class", "inductive", "axiom",
    "opaque", "variable", "universe", "namespace", "section", "end", "open", "set_option", "noncomputable",
    "private", "protected", "attribute", "mutual", "deriving", "notation", "infix", "infixl", "infixr",
    "prefix", "postfix", "export", "partial", "omit", "include", "public", "meta",
];

/// One declaration of the caller's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declaration {
    /// Full name, components without `«»`.
    pub name: Vec<String>,
    /// The declaring keyword (`theorem`, `axiom`, ...).
    pub keyword: String,
    /// Byte range of the name in the body.
    pub start: usize,
    pub end: usize,
}

impl Declaration {
    /// `A.b`, with `«»` where a component needs it.
    pub fn display(&self) -> String {
        self.name.iter().map(|c| escape(c)).collect::<Vec<_>>().join(".")
    }

    /// The fully qualified reference leanpool writes in its trailer.
    fn reference(&self) -> String {
        let parts: Vec<String> = self.name.iter().map(|c| format!("«{c}»")).collect();
        format!("@_root_.{}", parts.join("."))
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
            let end = rest.find(|c: char| !lexer::is_id_rest(c)).unwrap_or(rest.len());
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

fn keyword<'a>(src: &'a str, t: &Token) -> Option<&'a str> {
    // A keyword is written plainly: `«theorem»` is an identifier.
    (t.kind == Kind::Ident && &src[t.start..t.end] == t.text).then_some(&src[t.start..t.end])
}

/// Finds the declarations a body introduces. `Err(reason)` for a body
/// whose declarations leanpool cannot name (the request is `rejected`):
/// an `instance` without a name, a declaration name it cannot read.
pub fn scan(body: &str) -> Result<Scan, (usize, String)> {
    let toks = lexer::tokenize(body).map_err(|e| (e.offset, e.reason))?;
    let mut scopes: Vec<Scope> = Vec::new();
    let mut namespace: Vec<String> = Vec::new();
    let mut out = Scan::default();
    let line_of = |off: usize| body[..off].matches('\n').count();
    let name_after = |i: usize| -> Option<&Token> {
        let n = toks.get(i + 1)?;
        let plain_kw = keyword(body, n).is_some_and(|k| COMMAND_WORDS.contains(&k));
        (n.kind == Kind::Ident && !plain_kw && line_of(n.start) == line_of(toks[i].start)).then_some(n)
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
                    return Err((t.start, "a `namespace` whose name leanpool cannot read".into()));
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
            w if DECL_WORDS.contains(&w) => {
                let prev = i.checked_sub(1).and_then(|p| keyword(body, &toks[p]));
                // `deriving instance`, `class inductive` (the name follows
                // `inductive`), `class abbrev`.
                if prev == Some("deriving")
                    || (w == "class" && toks.get(i + 1).and_then(|n| keyword(body, n)).is_some_and(|k| DECL_WORDS.contains(&k)))
                {
                    i += 1;
                    continue;
                }
                let mut k = i + 1;
                if w == "instance" {
                    // `instance (priority := n) name`
                    if toks.get(k).is_some_and(|n| n.kind == Kind::Symbol && n.text == "(")
                        && toks.get(k + 1).is_some_and(|n| n.text == "priority")
                    {
                        let mut depth = 0i32;
                        while let Some(n) = toks.get(k) {
                            if n.kind == Kind::Symbol && n.text == "(" {
                                depth += 1;
                            } else if n.kind == Kind::Symbol && n.text == ")" {
                                depth -= 1;
                                if depth == 0 {
                                    k += 1;
                                    break;
                                }
                            }
                            k += 1;
                        }
                    }
                }
                let n = toks.get(k).filter(|n| {
                    n.kind == Kind::Ident && !keyword(body, n).is_some_and(|k| COMMAND_WORDS.contains(&k))
                });
                let Some(n) = n else {
                    // An anonymous `instance` (Lean names it itself): like an
                    // `example`, judged from Lean's messages only.
                    if w == "instance" {
                        i = k;
                        continue;
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
                out.declarations.push(Declaration { name, keyword: w.to_string(), start: n.start, end: n.end });
                i = k;
            }
            _ => {}
        }
        i += 1;
    }
    Ok(out)
}

/// leanpool's commands appended after a body: the text to append (it
/// starts on a new line) and, for each declaration, the trailer line
/// (0-based, counted from the trailer's first line) that checks it.
pub fn trailer(body: &str, scan: &Scan) -> String {
    let mut t = String::new();
    if !body.is_empty() && !body.ends_with('\n') {
        t.push('\n');
    }
    for d in &scan.declarations {
        t.push_str(&format!("#check {}\n", d.reference()));
    }
    t
}

/// A declaration as the answer reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    pub name: String,
    pub keyword: String,
    /// The name's range in the document.
    pub range: Range,
    pub present: bool,
}

/// Splits the document's diagnostics into the body's (returned) and the
/// trailer's (judged): every trailer line (document lines from
/// `first_line` on, one per declaration) must carry exactly one
/// information message and nothing else. Adds an error diagnostic (in
/// document coordinates, at the declaration's name) for every declaration
/// that is not present, and one at `body_end` if the trailer's messages
/// are not exactly where leanpool put them.
pub fn judge(
    diags: Vec<Diagnostic>,
    first_line: u32,
    decls: &[(Declaration, Range)],
    body_end: Position,
) -> (Vec<Diagnostic>, Vec<Judged>) {
    let (trail, mut body): (Vec<_>, Vec<_>) = diags.into_iter().partition(|d| d.range.start.line >= first_line);
    let mut judged = Vec::new();
    for (k, (d, range)) in decls.iter().enumerate() {
        let line = first_line + k as u32;
        let here: Vec<&Diagnostic> = trail.iter().filter(|m| m.range.start.line == line).collect();
        // One information message (`#check`'s answer); a warning (e.g.
        // the declaration is deprecated) may come with it, an error not.
        let infos = here.iter().filter(|m| m.severity == Severity::Information).count();
        let present = infos == 1 && here.iter().all(|m| matches!(m.severity, Severity::Information | Severity::Warning));
        if !present {
            body.push(Diagnostic {
                severity: Severity::Error,
                range: *range,
                message: format!(
                    "leanpool: `{}` is not in Lean's environment after elaboration (the {} failed or never ran)",
                    d.display(),
                    d.keyword
                ),
            });
        }
        judged.push(Judged { name: d.display(), keyword: d.keyword.clone(), range: *range, present });
        if d.keyword == "axiom" {
            body.push(Diagnostic {
                severity: Severity::Error,
                range: *range,
                message: format!(
                    "leanpool: axiom `{}` is declared here; a body may not add axioms (anything can be proved from them)",
                    d.display()
                ),
            });
        }
    }
    let expected = first_line + decls.len() as u32;
    if trail.iter().any(|m| m.range.start.line >= expected) {
        body.push(Diagnostic {
            severity: Severity::Error,
            range: Range { start: body_end, end: body_end },
            message: "leanpool: its own checks after the body did not run as written (the body's end changed \
                      how Lean read them); no verdict"
                .into(),
        });
    }
    (body, judged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(body: &str) -> Vec<String> {
        scan(body).unwrap().declarations.iter().map(|d| format!("{} {}", d.keyword, d.display())).collect()
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
    fn keywords_in_comments_strings_and_guillemets_are_not_declarations() {
        assert_eq!(names("-- theorem x\n/- def y -/\ndef s := \"theorem z\"\ndef «theorem» := 1\n"), ["def s", "def «theorem»"]);
    }

    #[test]
    fn anonymous_instances_and_examples_are_not_listed() {
        assert!(scan("instance : Inhabited Nat := ⟨0⟩").unwrap().declarations.is_empty());
        assert!(scan("instance (priority := low) : Inhabited Nat := ⟨0⟩").unwrap().declarations.is_empty());
        assert!(scan("example : True := trivial").unwrap().declarations.is_empty());
    }

    #[test]
    fn trailer_references_are_absolute() {
        let s = scan("namespace A\ntheorem t : True := trivial\nend A").unwrap();
        assert_eq!(trailer("namespace A\ntheorem t : True := trivial\nend A", &s), "\n#check @_root_.«A».«t»\n");
    }

    fn diag(sev: Severity, line: u32, msg: &str) -> Diagnostic {
        let p = Position { line, character: 0 };
        Diagnostic { severity: sev, range: Range { start: p, end: p }, message: msg.into() }
    }

    #[test]
    fn judge_requires_one_info_per_trailer_line() {
        let s = scan("theorem a : True := trivial\ntheorem b : True := trivial\n").unwrap();
        let decls: Vec<_> = s.declarations.iter().map(|d| (d.clone(), Range { start: Position { line: 0, character: 0 }, end: Position { line: 0, character: 0 } })).collect();
        let end = Position { line: 2, character: 0 };
        let ok = vec![diag(Severity::Information, 2, "a : True"), diag(Severity::Information, 3, "b : True")];
        let (body, j) = judge(ok, 2, &decls, end);
        assert!(body.is_empty() && j.iter().all(|j| j.present));
        let missing = vec![diag(Severity::Information, 2, "a : True"), diag(Severity::Error, 3, "unknown constant")];
        let (body, j) = judge(missing, 2, &decls, end);
        assert!(!j[1].present && body.len() == 1 && body[0].message.contains("`b`"));
        let extra = vec![
            diag(Severity::Information, 2, "a : True"),
            diag(Severity::Information, 3, "b : True"),
            diag(Severity::Error, 4, "unexpected end"),
        ];
        assert!(judge(extra, 2, &decls, end).0.iter().any(|d| d.message.contains("no verdict")));
        let doubled = vec![diag(Severity::Information, 2, "a : True"), diag(Severity::Information, 2, "forged"), diag(Severity::Information, 3, "b")];
        let (_, j) = judge(doubled, 2, &decls, end);
        assert!(!j[0].present);
    }
}
