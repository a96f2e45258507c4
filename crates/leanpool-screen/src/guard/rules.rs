//! The checks, run over the token stream from [`crate::lex`].
//!
//! Every check looks at *all* code tokens, wherever they are: inside
//! `open … in`, `set_option … in`, `#guard_msgs in`, attribute arguments,
//! notation right-hand sides, `by` blocks or `{…}` parts of interpolated
//! strings. Position-dependent rules (imports, header options) use the
//! header found by [`header`].

use super::check::{refuse, Check, Finding, Header, MAX_SCAN};
use super::tables::*;
use super::{GuardPolicy, Screening};
use crate::lex::{Kind, Token};
use crate::vocab::COMMAND_WORDS;

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

pub(crate) fn check_all(src: &str, toks: &[Token], screening: Screening<'_>) -> Check {
    let policy = screening.policy;
    if let Some(e) = screening.library.failed() {
        return Err(Finding {
            offset: 0,
            construct: "library".into(),
            reason: format!("the workers' library is unknown, so no text is accepted: {e}"),
        });
    }
    let h = header(toks);
    import_names(src, &toks[..h.imports_end])?;
    let imported = screening
        .library
        .words_for(&imported_modules(src, &toks[..h.imports_end]));
    let library = super::commands::LibraryWords::new(
        imported.map_err(|e| Finding {
            offset: 0,
            construct: "library".into(),
            reason: format!("the commands of a module this text imports are unknown: {e}"),
        })?,
        src,
    );
    let hook = super::config::declares_elaboration_hooks(toks);
    let heads = super::tactic_heads::heads(src, toks);
    // Tokens before this index were read as a known tactic's configuration.
    let mut config_end = 0;
    for (i, t) in toks.iter().enumerate() {
        match t.kind {
            Kind::HashCmd => hash_command(t, policy)?,
            Kind::Ident | Kind::NameLit => {
                ident(toks, i, &h, screening)?;
                super::commands::known_command(src, t, &library)?;
                line_start(src, toks, i)?;
                if t.kind == Kind::Ident && i >= config_end {
                    config_end =
                        super::config::items(toks, i, heads[i], hook, screening.native_decide)?;
                }
            }
            Kind::Symbol => symbol(toks, i, policy, config_end)?,
            _ => {}
        }
    }
    super::commands::positions(src, toks)
}

/// The modules a header imports (the identifier after each `import` /
/// `import all`), for [`crate::vocab::LibraryCommands::words_for`].
fn imported_modules(src: &str, header: &[Token]) -> Vec<String> {
    let plain = |t: &Token| crate::vocab::keyword(src, t);
    header
        .iter()
        .enumerate()
        .filter(|(_, t)| plain(t) == Some("import"))
        .filter_map(|(k, _)| {
            let k = k + usize::from(header.get(k + 1).and_then(plain) == Some("all")) + 1;
            header.get(k).filter(|t| t.kind == Kind::Ident)
        })
        .map(|t| t.text.clone())
        .collect()
}

/// The header's module names read as plain dotted identifiers: Lean
/// opens `ROOT/A/B.olean` for `import A.B` (for each `LEAN_PATH` root), so
/// a component written with `«»` escapes can be any string, `..` or
/// `a/b`, and name a file outside the libraries (`import «..».«..».tmp.X`
/// loads `/tmp/X.olean`, anyone's). Allowlist: an escaped component is
/// accepted only when its content could be written without the escape
/// ([`escaped_component_is_plain`]: `«Init».«Data»` is `Init.Data`); the
/// header's other words (`module`, `public`, `meta`, `import`, `all`)
/// may not be escaped at all. This is also the worker's spawn check
/// (`leanpool_lean`'s `import_header_only` screens the header).
fn import_names(src: &str, header: &[Token]) -> Check {
    let escaped = |t: &&Token| t.kind == Kind::Ident && src[t.start..t.end].contains('«');
    let words = ["module", "public", "meta", "import", "all", "prelude"];
    match header.iter().find(|t| {
        escaped(t)
            && (words.contains(&t.text.as_str())
                || !module_components(&src[t.start..t.end])
                    .is_some_and(|c| c.iter().all(|p| escaped_component_is_plain(p))))
    }) {
        None => Ok(()),
        Some(t) => refuse(
            t,
            &src[t.start..t.end],
            "an imported module's name must be a dotted identifier whose `«»`-escaped \
             components could be written plainly (letters, digits, `_`, `'` as in a Lean \
             identifier: `«Init».«Data»` is `Init.Data`): any other escaped component \
             (`«..»`, `«a/b»`, `«a.b»`, `«»`) would name a file outside the libraries \
             the worker is allowed to import",
        ),
    }
}

/// The components of an identifier as written (`«a.b».c` is `["a.b",
/// "c"]`): escaped ones without their `«»`, or `None` when `raw` is not
/// one identifier (an unterminated escape).
pub(crate) fn module_components(raw: &str) -> Option<Vec<&str>> {
    let mut out = Vec::new();
    let mut rest = raw;
    loop {
        let (part, after) = match rest.strip_prefix('«') {
            Some(body) => {
                let k = body.find('»')?;
                (&body[..k], &body[k + '»'.len_utf8()..])
            }
            None => {
                let k = rest.find('.').unwrap_or(rest.len());
                (&rest[..k], &rest[k..])
            }
        };
        out.push(part);
        match after.strip_prefix('.') {
            Some(next) => rest = next,
            None if after.is_empty() => return Some(out),
            None => return None,
        }
    }
}

/// Whether `content` (an escaped name component without its `«»`) is one
/// Lean could read unescaped as a single component: non-empty, an
/// identifier's first character then identifier characters (no `.`, `/`,
/// whitespace or any other character). Writing it plainly names the same
/// module, so accepting the escape adds no file that `import` could not
/// name anyway.
pub(crate) fn escaped_component_is_plain(content: &str) -> bool {
    let mut chars = content.chars();
    chars
        .next()
        .is_some_and(|c| crate::lex::is_id_first(c) && chars.all(crate::lex::is_id_rest))
}

/// A plainly written word at column 0 starts a command (or continues a
/// declaration): it must be on [`LINE_START_WORDS`].
fn line_start(src: &str, toks: &[Token], i: usize) -> Check {
    let t = &toks[i];
    let at_column_0 = matches!(src.as_bytes()[..t.start].last(), None | Some(b'\n'));
    if t.kind != Kind::Ident
        || t.nested
        || !at_column_0
        || LINE_START_WORDS.contains(&t.text.as_str())
    {
        return Ok(());
    }
    refuse(
        t,
        t.text.clone(),
        format!(
            "`{}` at the start of a line is not a command leanpool accepts (accepted: {}); \
             tactics and terms that continue a declaration must be indented",
            t.text,
            LINE_START_WORDS.join(", ")
        ),
    )
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

fn ident(toks: &[Token], i: usize, h: &Header, screening: Screening<'_>) -> Check {
    let t = &toks[i];
    let name = t.text.as_str();
    for word in [name, base(name)] {
        if word == "native_decide" && screening.native_decide {
            continue;
        }
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
        "native"
            if !screening.native_decide
                && ((i > 0 && is_sym(toks.get(i - 1), "+")) || is_sym(toks.get(i + 1), ":=")) =>
        {
            refuse(
                t,
                "native",
                "`decide +native` / `native := true` decides the goal by running compiled code \
                 and trusts the result",
            )
        }
        "set_option" => super::options::set_option(toks, i, h, screening.policy),
        "attribute" if is_sym(toks.get(i + 1), "[") => attributes(toks, i + 2, screening.policy),
        _ if NOTATION_WORDS.contains(&name) => notation_atoms(toks, i),
        _ => Ok(()),
    }
}

fn symbol(toks: &[Token], i: usize, policy: &GuardPolicy, config_end: usize) -> Check {
    let t = &toks[i];
    match t.text.as_str() {
        "@" if is_sym(toks.get(i + 1), "[") => attributes(toks, i + 2, policy),
        "(" if i >= config_end
            && is_sym(toks.get(i + 2), ":=")
            && toks.get(i + 1).is_some_and(|n| {
                n.kind == Kind::Ident && matches!(n.text.as_str(), "config" | "options" | "cfg")
            }) =>
        {
            refuse(
                t,
                format!("({} := …)", toks[i + 1].text),
                "a configuration that does not follow a tactic leanpool has a field list for: \
                 Lean compiles and runs configurations, so only known tactics' listed fields \
                 are accepted",
            )
        }
        _ => Ok(()),
    }
}

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
