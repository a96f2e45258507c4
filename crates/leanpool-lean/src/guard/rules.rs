//! The checks, run over the token stream from [`super::lexer`].
//!
//! Every check looks at *all* code tokens, wherever they are: inside
//! `open … in`, `set_option … in`, `#guard_msgs in`, attribute arguments,
//! notation right-hand sides, `by` blocks or `{…}` parts of interpolated
//! strings. Position-dependent rules (imports, header options) use the
//! header found by [`header`].

use super::lexer::{Kind, Token};
use super::tables::*;
use super::GuardPolicy;
use crate::vocab::COMMAND_WORDS;

/// A refused construct, located by the byte offset of its first token.
#[derive(Debug)]
pub(crate) struct Finding {
    pub offset: usize,
    pub construct: String,
    pub reason: String,
}

type Check = Result<(), Finding>;

fn refuse(t: &Token, construct: impl Into<String>, reason: impl Into<String>) -> Check {
    Err(Finding {
        offset: t.start,
        construct: construct.into(),
        reason: reason.into(),
    })
}

fn lookup<'a>(table: &'a [(&str, &'a str)], key: &str) -> Option<&'a str> {
    table.iter().find(|(k, _)| *k == key).map(|(_, r)| *r)
}

/// `simp?`, `simps!` → `simp`, `simps`.
fn base(name: &str) -> &str {
    name.trim_end_matches(['!', '?'])
}

fn is_ident(t: Option<&Token>, text: &str) -> bool {
    t.is_some_and(|t| t.kind == Kind::Ident && t.text == text)
}

fn is_sym(t: Option<&Token>, text: &str) -> bool {
    t.is_some_and(|t| t.kind == Kind::Symbol && t.text == text)
}

/// Words that end an `open A B C` (or `universe u v`) run: a command
/// word, or `open`'s own `in` / `hiding` / `renaming`.
fn ends_open_run(word: &str) -> bool {
    COMMAND_WORDS.contains(&word) || matches!(word, "in" | "hiding" | "renaming")
}

/// Where the header ends, in token indices.
#[derive(Debug, Default)]
pub(crate) struct Header {
    /// Tokens before this index are the leading `import` commands.
    pub imports_end: usize,
    /// Indices of `set_option` tokens that are header commands (not `… in`).
    pub options: Vec<usize>,
}

/// The header: optional `module`/`prelude`, the `import`s, then
/// `set_option` / `open` / `universe` / `namespace` / `section` commands
/// without `in`, module docs `/-! -/` anywhere among them.
pub(crate) fn header(toks: &[Token]) -> Header {
    let mut h = Header::default();
    let at = |j: usize| toks.get(j);
    let mut j = 0;
    let skip_docs = |mut j: usize| {
        while at(j).is_some_and(|t| t.kind == Kind::DocComment && t.text == "/-!") {
            j += 1;
        }
        j
    };
    j = skip_docs(j);
    if is_ident(at(j), "module") || is_ident(at(j), "prelude") {
        j += 1;
    }
    loop {
        j = skip_docs(j);
        let mut k = j;
        for modifier in ["public", "meta"] {
            if is_ident(at(k), modifier) {
                k += 1;
            }
        }
        if !is_ident(at(k), "import") {
            break;
        }
        k += 1;
        if is_ident(at(k), "all") {
            k += 1;
        }
        if !at(k).is_some_and(|t| t.kind == Kind::Ident) {
            break;
        }
        j = k + 1;
    }
    h.imports_end = j;
    let ident_run = |mut k: usize| {
        while at(k).is_some_and(|t| t.kind == Kind::Ident && !ends_open_run(&t.text)) {
            k += 1;
        }
        k
    };
    loop {
        j = skip_docs(j);
        let Some(t) = at(j) else { break };
        if t.kind != Kind::Ident {
            break;
        }
        let next = match t.text.as_str() {
            "set_option" => {
                if !at(j + 1).is_some_and(|t| t.kind == Kind::Ident) || at(j + 2).is_none() {
                    break;
                }
                if is_ident(at(j + 3), "in") {
                    break;
                }
                h.options.push(j);
                j + 3
            }
            "open" | "universe" | "universes" => {
                let k = ident_run(j + 1);
                if k == j + 1 || is_ident(at(k), "in") {
                    break;
                }
                k
            }
            "namespace" => {
                if !at(j + 1).is_some_and(|t| t.kind == Kind::Ident) {
                    break;
                }
                j + 2
            }
            "section" => ident_run(j + 1).min(j + 2),
            "noncomputable" if is_ident(at(j + 1), "section") => ident_run(j + 2).min(j + 3),
            _ => break,
        };
        j = next;
    }
    h
}

pub(crate) fn check_all(toks: &[Token], policy: &GuardPolicy) -> Check {
    let h = header(toks);
    for (i, t) in toks.iter().enumerate() {
        match t.kind {
            Kind::HashCmd => hash_command(t, policy)?,
            Kind::Ident | Kind::NameLit => ident(toks, i, &h, policy)?,
            Kind::Symbol => symbol(toks, i, policy)?,
            _ => {}
        }
    }
    Ok(())
}

fn hash_command(t: &Token, policy: &GuardPolicy) -> Check {
    let name = t.text.as_str();
    if ALLOWED_HASH_COMMANDS.contains(&name) || policy.extra_hash_commands.iter().any(|c| c == name)
    {
        return Ok(());
    }
    let reason = lookup(HASH_REASONS, name)
        .map(str::to_string)
        .unwrap_or_else(|| {
            format!(
                "`{name}` is not one of the read-only commands the guard allows ({}); \
             `#` commands can run code",
                ALLOWED_HASH_COMMANDS.join(", ")
            )
        });
    refuse(t, name, reason)
}

fn ident(toks: &[Token], i: usize, h: &Header, policy: &GuardPolicy) -> Check {
    let t = &toks[i];
    let name = t.text.as_str();
    for word in [name, base(name)] {
        if let Some(r) = lookup(DENY_WORDS, word) {
            return refuse(t, word, r);
        }
    }
    let last = name.rsplit('.').next().unwrap_or(name);
    if let Some(r) = lookup(DENY_LAST_COMPONENT, last) {
        return refuse(t, name, r);
    }
    if t.kind == Kind::NameLit {
        return Ok(());
    }
    if let Some(r) = lookup(DENY_PERCENT, name) {
        if toks
            .get(i + 1)
            .is_some_and(|n| n.kind == Kind::Symbol && n.text == "%" && n.start == t.end)
        {
            return refuse(t, format!("{name}%"), r);
        }
    }
    match name {
        "import" if i >= h.imports_end => refuse(
            t,
            "import",
            "`import` is allowed only at the start of the text, before any other command; \
             the imported environment is fixed per worker",
        ),
        "meta" if i >= h.imports_end => refuse(
            t,
            "meta",
            "`meta` declarations exist only to be run by the elaborator",
        ),
        "native" if (i > 0 && is_sym(toks.get(i - 1), "+")) || is_sym(toks.get(i + 1), ":=") => {
            refuse(
                t,
                "native",
                "`decide +native` / `native := true` decides the goal by running compiled code \
                 and trusts the result",
            )
        }
        "set_option" => set_option(toks, i, h, policy),
        "attribute" if is_sym(toks.get(i + 1), "[") => attributes(toks, i + 2, policy),
        _ if NOTATION_WORDS.contains(&name) => notation_atoms(toks, i),
        _ if CONFIG_TACTICS.contains(&base(name)) => config_items(toks, i + 1),
        _ => Ok(()),
    }
}

fn symbol(toks: &[Token], i: usize, policy: &GuardPolicy) -> Check {
    let t = &toks[i];
    match t.text.as_str() {
        "@" if is_sym(toks.get(i + 1), "[") => attributes(toks, i + 2, policy),
        "(" if is_sym(toks.get(i + 2), ":=")
            && toks.get(i + 1).is_some_and(|n| {
                n.kind == Kind::Ident && matches!(n.text.as_str(), "config" | "options" | "cfg")
            }) =>
        {
            literal_value(toks, i + 3, &toks[i + 1]).map(|_| ())
        }
        _ => Ok(()),
    }
}

/// Options that set resource limits or change how the kernel, compiler or
/// server behave. Named by exact name, by prefix, and by shape (any part
/// starting with `max` or mentioning heartbeats, thresholds, limits or
/// depths), so a new limit option is refused by default.
pub(crate) fn option_restriction(name: &str) -> Option<&'static str> {
    const LIMIT: &str = "resource limits are set by the daemon's operator (header and worker \
                         configuration); a request must not raise them — e.g. a large \
                         `maxRecDepth` lets elaboration overflow the native stack and kill the worker";
    const PREFIXES: &[(&str, &str)] = &[
        ("debug.", "`debug.*` options change what the kernel and elaborator check (e.g. `debug.skipKernelTC`)"),
        ("trace.", "trace output is unbounded and would be returned with the answer"),
        ("profiler", "profiler output is unbounded and would be returned with the answer"),
        ("bootstrap.", "`bootstrap.*` options change the elaborator's core behaviour"),
        ("interpreter.", "`interpreter.*` options change how compiled code runs"),
        ("compiler.", "`compiler.*` options change code generation"),
        ("internal.", "`internal.*` options are not meant for users"),
        ("Elab.", "`Elab.*` options change how the server elaborates and reports"),
        ("doc.", "`doc.*` options change how documentation comments are parsed and elaborated"),
        ("server.", "`server.*` options change the language server"),
        ("warn.", "`warn.*` options silence warnings a verdict relies on (`warn.sorry false` hides `declaration uses sorry`)"),
    ];
    if name == "allowUnsafeReducibility" {
        return Some("`allowUnsafeReducibility` lets declarations change reducibility unsafely");
    }
    if let Some((_, r)) = PREFIXES.iter().find(|(p, _)| name.starts_with(p)) {
        return Some(r);
    }
    let limit_like = name.split('.').any(|part| {
        let lower = part.to_ascii_lowercase();
        lower.starts_with("max")
            || ["heartbeat", "threshold", "limit", "depth"]
                .iter()
                .any(|w| lower.contains(w))
    });
    limit_like.then_some(LIMIT)
}

fn set_option(toks: &[Token], i: usize, h: &Header, policy: &GuardPolicy) -> Check {
    let t = &toks[i];
    let Some(opt) = toks.get(i + 1).filter(|n| n.kind == Kind::Ident) else {
        return Ok(()); // malformed: Lean reports it
    };
    let name = opt.text.as_str();
    // `h.options` is in token order (pushed by a forward scan): a binary
    // search keeps a header of n `set_option`s linear-log, where
    // `contains` made it quadratic.
    let in_header = h.options.binary_search(&i).is_ok();
    if in_header && policy.allow_header_options.iter().any(|o| o == name) {
        return Ok(());
    }
    match option_restriction(name) {
        Some(reason) => {
            let place = if in_header {
                "in the header (not in `GuardPolicy::allow_header_options`)"
            } else {
                "outside the header"
            };
            refuse(
                t,
                format!("set_option {name}"),
                format!("`set_option {name}` {place}: {reason}"),
            )
        }
        None => Ok(()),
    }
}

/// How far forward a construct's own scan may look (attribute list,
/// notation atoms, configuration value). Keeps screening linear on
/// adversarial input such as thousands of unclosed `@[`; no legitimate
/// construct comes near it.
const MAX_SCAN: usize = 1024;

fn too_long(t: &Token, what: &str) -> Check {
    refuse(
        t,
        t.text.clone(),
        format!("{what} longer than {MAX_SCAN} tokens or not closed"),
    )
}

/// An attribute list starting at `k` (just after `@[` or `attribute [`).
fn attributes(toks: &[Token], mut k: usize, policy: &GuardPolicy) -> Check {
    let limit = k + MAX_SCAN;
    loop {
        if k >= limit && k < toks.len() {
            return too_long(&toks[k], "attribute list");
        }
        if is_sym(toks.get(k), "-") {
            k += 1; // `attribute [-simp] foo`: erasing
        }
        while toks
            .get(k)
            .is_some_and(|t| t.kind == Kind::Ident && matches!(t.text.as_str(), "local" | "scoped"))
        {
            k += 1;
        }
        let Some(t) = toks.get(k) else { return Ok(()) };
        if t.kind != Kind::Ident {
            return refuse(t, t.text.clone(), "unrecognised attribute syntax");
        }
        let name = base(&t.text);
        if let Some(r) = lookup(CODE_ATTRIBUTES, name) {
            return refuse(t, format!("@[{name}]"), r);
        }
        if !ALLOWED_ATTRIBUTES.contains(&name) && !policy.extra_attributes.iter().any(|a| a == name)
        {
            return refuse(
                t,
                format!("@[{name}]"),
                format!(
                    "attribute `{name}` is not on the guard's allowlist of declarative attributes \
                     (many attributes register the tagged definition as code the elaborator runs)"
                ),
            );
        }
        // Arguments, up to `,` or `]` at this level.
        k += 1;
        let mut depth = 0u32;
        loop {
            let Some(a) = toks.get(k) else { return Ok(()) };
            if k >= limit {
                return too_long(a, "attribute list");
            }
            k += 1;
            match (a.kind, a.text.as_str()) {
                (Kind::Symbol, "(" | "[" | "{" | "⟨") => depth += 1,
                (Kind::Symbol, "]") if depth == 0 => return Ok(()),
                (Kind::Symbol, ",") if depth == 0 => break,
                (Kind::Symbol, ")" | "]" | "}" | "⟩") => depth = depth.saturating_sub(1),
                (Kind::Ident, n) => {
                    if let Some(r) = lookup(CODE_ATTRIBUTES, base(n)) {
                        return refuse(a, format!("@[{}]", base(n)), r);
                    }
                }
                _ => {}
            }
        }
    }
}

/// Quoted atoms of `notation`/`infix`/... up to `=>`: a new token that
/// contains a quote, escape or comment opener would make Lean tokenize the
/// rest of the text differently from the guard.
fn notation_atoms(toks: &[Token], i: usize) -> Check {
    let mut k = i + 1;
    while let Some(t) = toks.get(k) {
        if k > i + MAX_SCAN {
            return too_long(&toks[i], "notation declaration");
        }
        if is_sym(Some(t), "=") && is_sym(toks.get(k + 1), ">") && toks[k + 1].start == t.end {
            return Ok(());
        }
        if t.kind == Kind::Str {
            let atom = t.text.strip_prefix('"').and_then(|s| s.strip_suffix('"'));
            let bad = match atom.map(str::trim) {
                None => true, // raw string atom
                Some(a) => {
                    ["\"", "'", "\\", "«", "--", "/-", "`"]
                        .iter()
                        .any(|p| a.contains(p))
                        || (a.chars().count() > 1 && a.ends_with(['-', '/', 'r']))
                }
            };
            if bad {
                return refuse(
                    t,
                    t.text.clone(),
                    "notation token containing a quote, escape, comment opener, or ending in \
                     `-`, `/` or `r`: it would change how Lean splits the rest of the text into tokens",
                );
            }
        }
        k += 1;
    }
    Ok(())
}

/// Configuration items right after a tactic name: `+opt`, `-opt`,
/// `(opt := value)`; values are evaluated, so they must be literals.
fn config_items(toks: &[Token], mut k: usize) -> Check {
    loop {
        let t = toks.get(k);
        if (is_sym(t, "+") || is_sym(t, "-"))
            && toks
                .get(k + 1)
                .is_some_and(|n| n.kind == Kind::Ident && !n.space_before)
        {
            k += 2;
        } else if is_sym(t, "(")
            && is_sym(toks.get(k + 2), ":=")
            && toks.get(k + 1).is_some_and(|n| n.kind == Kind::Ident)
        {
            let item = &toks[k + 1];
            k = if TACTIC_VALUED_CONFIG.contains(&item.text.as_str()) {
                matching_close(toks, k + 3)
            } else {
                literal_value(toks, k + 3, item)?
            };
        } else {
            return Ok(());
        }
    }
}

/// Index after the `)` closing a group whose contents start at `k`
/// (at most [`MAX_SCAN`] tokens on).
fn matching_close(toks: &[Token], mut k: usize) -> usize {
    let mut depth = 0u32;
    let limit = k + MAX_SCAN;
    while let Some(t) = toks.get(k) {
        if k >= limit {
            return k;
        }
        k += 1;
        if t.kind == Kind::Symbol {
            match t.text.as_str() {
                "(" | "[" | "{" | "⟨" => depth += 1,
                ")" if depth == 0 => return k,
                ")" | "]" | "}" | "⟩" => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
    }
    k
}

/// A configuration value from `k` to its closing `)`: only numbers,
/// strings, `true`/`false`, `.constructor`, and `{ field := literal, … }`
/// structure instances and `[…]` lists of those. Returns the index after `)`.
fn literal_value(toks: &[Token], k: usize, item: &Token) -> Result<usize, Finding> {
    let end = matching_close(toks, k);
    let close = end.saturating_sub(1).max(k);
    for j in k..close {
        let t = &toks[j];
        let ok = match t.kind {
            Kind::Num | Kind::Str | Kind::Char => true,
            Kind::Ident => {
                matches!(t.text.as_str(), "true" | "false")
                    || is_sym(toks.get(j + 1), ":=")
                    || (j > 0 && is_sym(toks.get(j - 1), ".") && !t.space_before)
            }
            Kind::Symbol => matches!(
                t.text.as_str(),
                "{" | "}" | "[" | "]" | "(" | ")" | "," | ":=" | "." | "-"
            ),
            _ => false,
        };
        if !ok {
            return Err(Finding {
                offset: t.start,
                construct: format!("({} := …)", item.text),
                reason: format!(
                    "tactic configuration `{}` is evaluated by compiling and running it; only literal \
                     values (numbers, strings, true/false, `.ctor`, `{{ field := literal }}`) are accepted",
                    item.text
                ),
            });
        }
    }
    Ok(end)
}
