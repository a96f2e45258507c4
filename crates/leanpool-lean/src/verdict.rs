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
//! - one `set_option pp.fullNames true in set_option pp.notation false in #print axioms _root_.«A».«x»` per
//!   declaration: Lean's own list of the axioms the declaration depends
//!   on (`'A.x' depends on axioms: [propext, …]` or `… does not depend on
//!   any axioms`), read back by position like the `#check`s. Full names
//!   and no notation: a body's `open` or `notation` (which also makes
//!   Lean print a constant as its notation) cannot make a forbidden axiom
//!   print as an allowed one.
//!
//! Axioms ([`VerdictPolicy`]): every axiom listed must be in
//! `allowed_axioms` (default `propext`, `Classical.choice`, `Quot.sound`);
//! `sorryAx` makes the answer `sorry` (never `ok`), any other axiom adds an
//! error diagnostic naming it at the declaration. A body that declares an
//! `axiom` is `error` whatever it is used for.
//!
//! Where Lean refuses `#print axioms` ("cannot use `#print axioms` in a
//! `module`": the WASM build imports every library at the `exported` level
//! and elaborates every file as a `module`), the declaration's axioms are
//! *unlisted* (`axioms: null` in the answer). `unlisted_axioms = "error"`
//! makes that an error; `"allow"` accepts it; the default `"auto"` is
//! `error` on the native backend (the deployment, where the listing works)
//! and `allow` on WASM (the test backend of this repository, where it never
//! can), and `status`/`doctor` report which applies.

use crate::backend::BackendKind;
use crate::guard::lexer::{self, Kind, Token};
use crate::vocab::{keyword, COMMAND_WORDS, DECLARATION_WORDS};
use leanpool_protocol::{Diagnostic, Position, Range, Severity};
use serde::{Deserialize, Serialize};

/// The start of Lean's refusal of `#print axioms` in a `module`.
pub const MODULE_REFUSAL: &str = "cannot use `#print axioms` in a `module`";

/// What to do with a declaration whose axioms Lean would not list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnlistedAxioms {
    /// `error` on the native backend, `allow` on WASM (see the module docs).
    #[default]
    Auto,
    /// An unlisted declaration makes the answer `error` (fail closed).
    Error,
    /// Accepted; the declaration reports `axioms: null`.
    Allow,
}

impl UnlistedAxioms {
    /// `Error` or `Allow` for a backend.
    pub fn resolve(self, backend: BackendKind) -> UnlistedAxioms {
        match (self, backend) {
            (UnlistedAxioms::Auto, BackendKind::Native) => UnlistedAxioms::Error,
            (UnlistedAxioms::Auto, BackendKind::Wasm) => UnlistedAxioms::Allow,
            (other, _) => other,
        }
    }

    /// `error`, `allow` or `auto`.
    pub fn as_str(self) -> &'static str {
        match self {
            UnlistedAxioms::Auto => "auto",
            UnlistedAxioms::Error => "error",
            UnlistedAxioms::Allow => "allow",
        }
    }
}

/// The daemon's `[verdict]` table: which axioms an `ok` may rest on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VerdictPolicy {
    /// Axioms a declaration may depend on and still be `ok`/`proved`.
    pub allowed_axioms: Vec<String>,
    /// What a declaration whose axioms Lean did not list gives.
    pub unlisted_axioms: UnlistedAxioms,
    /// Trust the compiler: `native_decide` and its spellings (`decide
    /// +native`, `native := true`) pass the guard, on the native backend
    /// only (where `#print axioms` lists `Lean.ofReduceBool` /
    /// `Lean.trustCompiler` and the answer's `axioms` show them; add them
    /// to `allowed_axioms` for such a declaration to be `ok`). On WASM,
    /// where axioms are never listed, they stay refused. Default `false`.
    #[serde(default)]
    pub trust_compiler: bool,
}

impl Default for VerdictPolicy {
    fn default() -> Self {
        VerdictPolicy {
            allowed_axioms: ["propext", "Classical.choice", "Quot.sound"]
                .map(String::from)
                .to_vec(),
            unlisted_axioms: UnlistedAxioms::Auto,
            trust_compiler: false,
        }
    }
}

/// Reads Lean's answer to `#print axioms`: `Some(list)` for
/// `'X' depends on axioms: [a, b]` / `'X' does not depend on any axioms`.
pub fn parse_axioms(message: &str) -> Option<Vec<String>> {
    let m = message.trim();
    if m.starts_with('\'') && m.ends_with("' does not depend on any axioms") {
        return Some(vec![]);
    }
    let at = m.rfind("' depends on axioms: [")?;
    if !m.starts_with('\'') || !m.ends_with(']') {
        return None;
    }
    let list = &m[at + "' depends on axioms: [".len()..m.len() - 1];
    // Split on commas outside `«»`; Lean may break a long list over lines.
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0usize);
    for c in list.chars() {
        match c {
            '«' => depth += 1,
            '»' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    let out: Vec<String> = out
        .into_iter()
        .map(|a| a.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    if out
        .iter()
        .any(|a| a.is_empty() || a.contains(' ') && !a.contains('«'))
    {
        return None;
    }
    Some(out)
}

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

    /// The fully qualified reference leanpool writes in its trailer.
    fn reference(&self) -> String {
        format!("@{}", self.axioms_reference())
    }

    /// `_root_.«A».«x»` (what `#print axioms` takes: no `@`).
    fn axioms_reference(&self) -> String {
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
                    i += 1;
                    continue;
                }
                let mut k = i + 1;
                if w == "instance" {
                    // `instance (priority := n) name`
                    if toks
                        .get(k)
                        .is_some_and(|n| n.kind == Kind::Symbol && n.text == "(")
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
                    n.kind == Kind::Ident
                        && !keyword(body, n).is_some_and(|k| COMMAND_WORDS.contains(&k))
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
                out.declarations.push(Declaration {
                    name,
                    keyword: w.to_string(),
                    start: n.start,
                    end: n.end,
                });
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
        t.push_str(&format!(
            "set_option pp.fullNames true in set_option pp.notation false in #print axioms {}\n",
            d.axioms_reference()
        ));
    }
    t
}

/// Lines the trailer uses per declaration.
pub const LINES_PER_DECLARATION: u32 = 2;

/// A declaration as the answer reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// Full name, `«»` where a component needs it.
    pub name: String,
    /// The declaring keyword.
    pub keyword: String,
    /// The name's range in the document.
    pub range: Range,
    /// Whether Lean's environment holds it after elaboration.
    pub present: bool,
    /// Lean's list of its axioms; `None` when Lean did not list them.
    pub axioms: Option<Vec<String>>,
}

/// Splits the document's diagnostics into the body's (returned) and the
/// trailer's (judged). Per declaration `k` the trailer has two lines from
/// `first_line + 2k`: the `#check` must carry exactly one information
/// message (a warning may come with it, an error not), the `#print axioms`
/// exactly one message: Lean's list, or its refusal in a `module`. Adds
/// error diagnostics (in document coordinates, at the declaration's name)
/// for a declaration that is not present, that is an `axiom`, that
/// depends on an axiom not allowed, or whose axioms were not listed under
/// `unlisted = Error`; a warning for `sorryAx` when Lean's own sorry
/// warning is missing; and one error at `body_end` if the trailer's
/// messages are not exactly where leanpool put them.
pub fn judge(
    diags: Vec<Diagnostic>,
    first_line: u32,
    decls: &[(Declaration, Range)],
    body_end: Position,
    policy: &VerdictPolicy,
    unlisted: UnlistedAxioms,
) -> (Vec<Diagnostic>, Vec<Judged>) {
    let (trail, mut body): (Vec<_>, Vec<_>) = diags
        .into_iter()
        .partition(|d| d.range.start.line >= first_line);
    let mut judged = Vec::new();
    let mut trailer_broken = false;
    let error = |range: Range, message: String| Diagnostic {
        severity: Severity::Error,
        range,
        message,
    };
    for (k, (d, range)) in decls.iter().enumerate() {
        let line = first_line + LINES_PER_DECLARATION * k as u32;
        let here: Vec<&Diagnostic> = trail
            .iter()
            .filter(|m| m.range.start.line == line)
            .collect();
        let infos = here
            .iter()
            .filter(|m| m.severity == Severity::Information)
            .count();
        let present = infos == 1
            && here
                .iter()
                .all(|m| matches!(m.severity, Severity::Information | Severity::Warning));
        if !present {
            body.push(error(
                *range,
                format!(
                    "leanpool: `{}` is not in Lean's environment after elaboration (the {} failed or never ran)",
                    d.display(),
                    d.keyword
                ),
            ));
        }
        let listing: Vec<&Diagnostic> = trail
            .iter()
            .filter(|m| m.range.start.line == line + 1)
            .collect();
        let axioms = match listing.as_slice() {
            [m] if m.severity == Severity::Information => match parse_axioms(&m.message) {
                Some(list) => Some(list),
                None => {
                    trailer_broken = true;
                    None
                }
            },
            [m] if m.severity == Severity::Error && m.message.starts_with(MODULE_REFUSAL) => None,
            // Absent declarations make `#print axioms` fail too.
            _ if !present => None,
            _ => {
                trailer_broken = true;
                None
            }
        };
        if d.keyword == "axiom" {
            body.push(error(
                *range,
                format!(
                    "leanpool: axiom `{}` is declared here; a body may not add axioms (anything can be proved from them)",
                    d.display()
                ),
            ));
        }
        match &axioms {
            Some(list) => {
                for a in list {
                    if a == "sorryAx" {
                        if !body.iter().any(leanpool_protocol::is_sorry_warning) {
                            body.push(Diagnostic {
                                severity: Severity::Warning,
                                range: *range,
                                message: format!("leanpool: `{}` depends on `sorryAx`: declaration uses 'sorry'", d.display()),
                            });
                        }
                    } else if !policy.allowed_axioms.iter().any(|x| x == a) {
                        body.push(error(
                            *range,
                            format!(
                                "leanpool: `{}` depends on axiom `{a}`, which is not allowed (allowed: {})",
                                d.display(),
                                policy.allowed_axioms.join(", ")
                            ),
                        ));
                    }
                }
            }
            None if present && unlisted == UnlistedAxioms::Error => body.push(error(
                *range,
                format!(
                    "leanpool: Lean did not list the axioms of `{}` (`#print axioms` refused: the worker runs the document as a `module`); \
                     `[verdict] unlisted_axioms` is `error`",
                    d.display()
                ),
            )),
            None => {}
        }
        judged.push(Judged {
            name: d.display(),
            keyword: d.keyword.clone(),
            range: *range,
            present,
            axioms,
        });
    }
    let expected = first_line + LINES_PER_DECLARATION * decls.len() as u32;
    if trailer_broken || trail.iter().any(|m| m.range.start.line >= expected) {
        body.push(error(
            Range { start: body_end, end: body_end },
            "leanpool: its own checks after the body did not run as written (the body's end changed \
             how Lean read them); no verdict"
                .into(),
        ));
    }
    (body, judged)
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

    #[test]
    fn trailer_references_are_absolute() {
        let s = scan("namespace A\ntheorem t : True := trivial\nend A").unwrap();
        assert_eq!(
            trailer("namespace A\ntheorem t : True := trivial\nend A", &s),
            "\n#check @_root_.«A».«t»\nset_option pp.fullNames true in set_option pp.notation false in #print axioms _root_.«A».«t»\n"
        );
    }

    fn diag(sev: Severity, line: u32, msg: &str) -> Diagnostic {
        let p = Position { line, character: 0 };
        Diagnostic {
            severity: sev,
            range: Range { start: p, end: p },
            message: msg.into(),
        }
    }

    const LISTED: &str = "'a' depends on axioms: [propext]";

    fn run(diags: Vec<Diagnostic>, unlisted: UnlistedAxioms) -> (Vec<Diagnostic>, Vec<Judged>) {
        let s = scan("theorem a : True := trivial\ntheorem b : True := trivial\n").unwrap();
        let zero = Position {
            line: 0,
            character: 0,
        };
        let decls: Vec<_> = s
            .declarations
            .iter()
            .map(|d| {
                (
                    d.clone(),
                    Range {
                        start: zero,
                        end: zero,
                    },
                )
            })
            .collect();
        judge(
            diags,
            2,
            &decls,
            Position {
                line: 2,
                character: 0,
            },
            &VerdictPolicy::default(),
            unlisted,
        )
    }

    #[test]
    fn judge_requires_one_info_per_trailer_line() {
        use Severity::*;
        let ok = vec![
            diag(Information, 2, "a : True"),
            diag(Information, 3, LISTED),
            diag(Information, 4, "b : True"),
            diag(Information, 5, "'b' does not depend on any axioms"),
        ];
        let (body, j) = run(ok, UnlistedAxioms::Error);
        assert!(body.is_empty() && j.iter().all(|j| j.present));
        assert_eq!(j[0].axioms, Some(vec!["propext".to_string()]));
        assert_eq!(j[1].axioms, Some(vec![]));
        let missing = vec![
            diag(Information, 2, "a : True"),
            diag(Information, 3, LISTED),
            diag(Error, 4, "unknown constant"),
            diag(Error, 5, "unknown constant"),
        ];
        let (body, j) = run(missing, UnlistedAxioms::Error);
        assert!(
            !j[1].present && body.len() == 1 && body[0].message.contains("`b`"),
            "{body:?}"
        );
        let extra = vec![
            diag(Information, 2, "a"),
            diag(Information, 3, LISTED),
            diag(Information, 4, "b"),
            diag(Information, 5, LISTED),
            diag(Error, 6, "unexpected end"),
        ];
        assert!(run(extra, UnlistedAxioms::Error)
            .0
            .iter()
            .any(|d| d.message.contains("no verdict")));
        let doubled = vec![
            diag(Information, 2, "a"),
            diag(Information, 2, "forged"),
            diag(Information, 3, LISTED),
            diag(Information, 4, "b"),
            diag(Information, 5, LISTED),
        ];
        assert!(!run(doubled, UnlistedAxioms::Error).1[0].present);
    }

    #[test]
    fn axioms_not_allowed_sorry_and_unlisted() {
        use Severity::*;
        let cheat = vec![
            diag(Information, 2, "a"),
            diag(
                Information,
                3,
                "'a' depends on axioms: [propext, Classical.choice, Lean.ofReduceBool]",
            ),
            diag(Information, 4, "b"),
            diag(Information, 5, "'b' depends on axioms: [sorryAx]"),
        ];
        let (body, j) = run(cheat, UnlistedAxioms::Error);
        let r = leanpool_protocol::CheckResult::from_diagnostics(body.clone());
        assert_eq!(r.status, leanpool_protocol::CheckStatus::Error);
        assert!(
            body.iter()
                .any(|d| d.severity == Error && d.message.contains("`Lean.ofReduceBool`")),
            "{body:?}"
        );
        assert!(body.iter().any(leanpool_protocol::is_sorry_warning));
        assert_eq!(j[1].axioms.as_deref(), Some(&["sorryAx".to_string()][..]));
        let refused = "cannot use `#print axioms` in a `module`; consider temporarily removing the `module` header or placing the command in a separate file";
        let module = vec![
            diag(Information, 2, "a"),
            diag(Error, 3, refused),
            diag(Information, 4, "b"),
            diag(Error, 5, refused),
        ];
        let (body, j) = run(module.clone(), UnlistedAxioms::Allow);
        assert!(body.is_empty() && j.iter().all(|j| j.present && j.axioms.is_none()));
        let (body, _) = run(module, UnlistedAxioms::Error);
        assert_eq!(body.len(), 2);
        // A listing leanpool cannot read, or a second message on the line: no verdict.
        let odd = vec![
            diag(Information, 2, "a"),
            diag(Information, 3, "'a' depends on axioms: propext"),
            diag(Information, 4, "b"),
            diag(Information, 5, LISTED),
        ];
        assert!(run(odd, UnlistedAxioms::Allow)
            .0
            .iter()
            .any(|d| d.message.contains("no verdict")));
    }

    #[test]
    fn axiom_lists_as_lean_prints_them() {
        assert_eq!(
            parse_axioms("'x' does not depend on any axioms"),
            Some(vec![])
        );
        assert_eq!(
            parse_axioms("'A.x' depends on axioms: [propext,\n  Classical.choice, Quot.sound]"),
            Some(vec![
                "propext".into(),
                "Classical.choice".into(),
                "Quot.sound".into()
            ])
        );
        assert_eq!(
            parse_axioms("'x' depends on axioms: [«a, b»]"),
            Some(vec!["«a, b»".into()])
        );
        assert_eq!(parse_axioms("x : Nat"), None);
        assert_eq!(parse_axioms("'x' depends on axioms: [a b]"), None);
    }

    #[test]
    fn unlisted_auto_is_fail_closed_natively() {
        assert_eq!(
            UnlistedAxioms::Auto.resolve(BackendKind::Native),
            UnlistedAxioms::Error
        );
        assert_eq!(
            UnlistedAxioms::Auto.resolve(BackendKind::Wasm),
            UnlistedAxioms::Allow
        );
        assert_eq!(
            UnlistedAxioms::Allow.resolve(BackendKind::Native),
            UnlistedAxioms::Allow
        );
    }
}
