//! Differential test of leanpool's lexer against Lean itself, with no
//! code run (issue 10 part 2). Shared by `tests/guard_lean.rs` (a sample,
//! in CI) and the `lexdiff` bench (every case).
//!
//! `#check (N : Nat)` is allowed by the guard, and Lean answers it with an
//! information message `N : Nat`: it reveals whether Lean saw a command
//! without running anything. Each generated case glues an *opener* (a
//! comment, doc comment, string, raw string, char literal, `«`, name
//! literal, interpolated string) directly after a *glue* (a symbol, a name,
//! a number, a literal or a space) in a header command, a body command or
//! a statement's signature, with a payload `#check (N : Nat)` on the next
//! line, where one reading hides it and another does not; closer lines end
//! both readings. Cases the guard refuses are refused (no claim). The
//! accepted ones are batched into documents built exactly as `check`
//! (`Document`) and `normalize`/`opt` (`StatementDoc`) build them; the
//! guard's *belief* for a payload is "live" when its number is a token of
//! the sent text's own token stream (not inside a comment or literal), and
//! Lean's answer is the set of numbers it printed. They must be equal: a
//! payload believed dead that Lean printed is a hole, one believed live
//! that Lean did not print is a lexer disagreement too.

#![allow(dead_code)]

use leanpool_methods::terms::source::StatementDoc;
use leanpool_protocol::{Diagnostic, Severity};
use leanpool_screen::guard::{screen, GuardPolicy};
use leanpool_screen::lex::{self, Kind};
use leanpool_screen::LeanText;
use std::collections::BTreeSet;

/// What a glue is followed by: the opener, then a filler on the same line.
pub const GLUES: &[&str] = &[
    " ", "=", ":", ":=", "+", "-", "*", "/", "<", ">", "<-", "->", "|", "||", "&", "^", "%", "$",
    "!", "?", "~", "@", "#", ".", ",", ";", "(", ")", "[", "]", "{", "}", "⟨", "⟩", "←", "→", "∀",
    "↔", "∑", "x", "x'", "1", "0x", "\"s\"", "'c'", "`n", "«n»",
];

/// Openers glued after the glue.
pub const OPENERS: &[&str] = &[
    "--", "---", "/-", "/--", "/-!", "/--/", "/-/", "/-/-", "/- /-", "\"", "r\"", "r#\"", "r##\"",
    "'", "''", "'\"'", "'\\''", "«", "`«", "s!\"", "m!\"{", "\\", "/", "-",
];

/// Second openers at the end of the line (filler) and the closer line
/// that ends them in either reading.
pub const FILLERS: &[(&str, &str)] = &[
    ("", ""),
    (" \"", "-- \""),
    (" /-", "-- -/"),
    (" r#\"", "-- \"#"),
    (" «", "-- »"),
    (" -/ \"", "-- \""),
];

/// Where the glue sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// After a header command (`open Nat`), `check` documents.
    Header,
    /// In a body command (`def c : Nat := 0`), `check` documents.
    Body,
    /// The same, in front of the statement of a `normalize`/`opt` document.
    StatementBody,
    /// Inside the statement's signature (`normalize`/`opt`).
    Signature,
}

#[derive(Debug, Clone)]
pub struct Case {
    pub place: Place,
    /// The case's text: a few lines, payload(s) included.
    pub text: String,
    /// Payload numbers in this case.
    pub payloads: Vec<u32>,
}

/// The opener's own closer line (ends what it opened, in its reading).
fn opener_closer(o: &str) -> &'static str {
    if o.starts_with("/-") {
        if o.matches("/-").count() > 1 {
            "-/ -/"
        } else {
            "-/"
        }
    } else if o == "r#\"" {
        "\"#"
    } else if o == "r##\"" {
        "\"##"
    } else if o.ends_with('"') || o == "m!\"{" {
        "\""
    } else if o.ends_with('«') {
        "»"
    } else {
        ""
    }
}

/// Every case, payload numbers from `first` on.
pub fn cases(first: u32) -> Vec<Case> {
    let mut out = Vec::new();
    let mut n = first;
    for place in [
        Place::Header,
        Place::Body,
        Place::StatementBody,
        Place::Signature,
    ] {
        for (gi, g) in GLUES.iter().enumerate() {
            for o in OPENERS {
                for (f, c) in FILLERS {
                    let lead = match place {
                        Place::Header => "open Nat".to_string(),
                        Place::Body | Place::StatementBody => format!("def c{n} : Nat := 0"),
                        Place::Signature => format!("theorem s{gi} : 1 = 1"),
                    };
                    let closer = opener_closer(o);
                    let tail = if place == Place::Signature {
                        " = 1 := rfl"
                    } else {
                        ""
                    };
                    let text =
                        format!("{lead}{g}{o}{f}\n#check ({n} : Nat)\n{c}\n{closer}{tail}\n");
                    out.push(Case {
                        place,
                        text,
                        payloads: vec![n],
                    });
                    n += 1;
                }
            }
        }
    }
    out
}

/// A document to send, with the guard's belief.
#[derive(Debug, Clone)]
pub struct Batch {
    pub statement: bool,
    /// The caller's text (what `check`/`normalize`/`opt` would get).
    pub caller: String,
    /// The text leanpool sends to Lean for it.
    pub sent: LeanText,
    /// Every payload number in the batch.
    pub payloads: BTreeSet<u32>,
    /// Those the guard believes Lean reads as code.
    pub live: BTreeSet<u32>,
    /// The batch's sync payload (after every case, believed live).
    pub sync: u32,
}

/// Numbers that are tokens of `sent`'s own token stream.
fn believed_live(sent: &str, payloads: &BTreeSet<u32>) -> Option<BTreeSet<u32>> {
    let toks = lex::tokenize(sent).ok()?;
    Some(
        toks.iter()
            .filter(|t| t.kind == Kind::Num && !t.nested)
            .filter_map(|t| t.text.parse::<u32>().ok())
            .filter(|n| payloads.contains(n))
            .collect(),
    )
}

/// Marker payload after every batch: must be live and printed (the batch
/// did not leave Lean inside a comment or literal the guard missed).
fn sync_line(n: u32) -> String {
    format!("\n-- -/ -/\n#check ({n} : Nat)\n")
}

fn build(statement: bool, cases: &[&Case], sync: u32) -> Option<Batch> {
    let policy = GuardPolicy::default();
    let mut caller = String::new();
    let mut payloads = BTreeSet::new();
    let sig = cases.iter().find(|c| c.place == Place::Signature);
    for c in cases.iter().filter(|c| c.place != Place::Signature) {
        caller.push_str(&c.text);
        payloads.extend(&c.payloads);
    }
    caller.push_str(&sync_line(sync));
    payloads.insert(sync);
    if statement {
        match sig {
            Some(c) => {
                caller.push_str(&c.text);
                payloads.extend(&c.payloads);
            }
            None => caller.push_str("theorem s_end : 1 = 1 := rfl\n"),
        }
    }
    let screened = screen(&caller, &policy).ok()?;
    let sent = if statement {
        StatementDoc::new(&screened).ok()?.lean_text().clone()
    } else {
        screened.to_lean()
    };
    let live = believed_live(sent.as_str(), &payloads)?;
    Some(Batch {
        statement,
        caller,
        sent,
        payloads,
        live,
        sync,
    })
}

/// Statistics of a run.
#[derive(Debug, Default, Clone)]
pub struct Plan {
    pub cases: usize,
    pub refused: usize,
    pub batches: Vec<Batch>,
}

/// Screens every case on its own (refused cases make no claim), then
/// batches the accepted ones, `per_batch` cases per document, each batch
/// ending with a sync payload numbered from `sync_first`. A batch the
/// guard refuses as a whole (cases interacting) is split into single
/// cases.
pub fn plan(cases: &[Case], per_batch: usize, sync_first: u32) -> Plan {
    let policy = GuardPolicy::default();
    let mut p = Plan {
        cases: cases.len(),
        ..Plan::default()
    };
    let mut sync = sync_first;
    for statement in [false, true] {
        let mine: Vec<&Case> = cases
            .iter()
            .filter(|c| matches!(c.place, Place::StatementBody | Place::Signature) == statement)
            .filter(|c| {
                let ok = screen(&c.text, &policy).is_ok()
                    && if statement {
                        let t = if c.place == Place::Signature {
                            c.text.clone()
                        } else {
                            format!("{}theorem s_end : 1 = 1 := rfl\n", c.text)
                        };
                        screen(&t, &policy).is_ok_and(|s| StatementDoc::new(&s).is_ok())
                    } else {
                        true
                    };
                if !ok {
                    p.refused += 1;
                }
                ok
            })
            .collect();
        // Body cases in chunks; each statement batch takes one signature case.
        let (sigs, bodies): (Vec<&Case>, Vec<&Case>) =
            mine.iter().partition(|c| c.place == Place::Signature);
        let mut sigs = sigs.into_iter();
        let mut chunks: Vec<Vec<&Case>> = bodies.chunks(per_batch).map(|c| c.to_vec()).collect();
        if statement {
            for s in sigs.by_ref() {
                match chunks
                    .iter_mut()
                    .find(|c| !c.iter().any(|x| x.place == Place::Signature))
                {
                    Some(c) => c.push(s),
                    None => chunks.push(vec![s]),
                }
            }
        }
        for chunk in chunks {
            match build(statement, &chunk, sync) {
                Some(b) => p.batches.push(b),
                None => {
                    for c in chunk {
                        sync += 1;
                        if let Some(b) = build(statement, &[c], sync) {
                            p.batches.push(b);
                        }
                    }
                }
            }
            sync += 1;
        }
    }
    p
}

/// The payload numbers Lean printed: an information message that starts
/// with the number. `#check (N : Nat)` answers `N : Nat`, but where the
/// payload's term runs on into the case's next lines Lean checks more
/// (`theorem s : 1 = 1 --` / `#check (N : Nat)` / ` = 1 := rfl` answers
/// `N = 1 : Prop`): the command ran all the same. Reading only `N : Nat`
/// counted 200 + 57 such payloads as "believed live, not printed" in the
/// full run; reading more can only find more holes, never hide one.
pub fn printed(diags: &[Diagnostic], payloads: &BTreeSet<u32>) -> BTreeSet<u32> {
    diags
        .iter()
        .filter(|d| d.severity == Severity::Information)
        .filter_map(|d| {
            let m = d.message.trim_start();
            let digits = m.find(|c: char| !c.is_ascii_digit()).unwrap_or(m.len());
            m[..digits].parse::<u32>().ok()
        })
        .filter(|n| payloads.contains(n))
        .collect()
}

/// Disagreements of one batch: `(number, believed live, Lean printed)`.
pub fn disagreements(b: &Batch, printed: &BTreeSet<u32>) -> Vec<(u32, bool, bool)> {
    b.payloads
        .iter()
        .filter(|n| b.live.contains(n) != printed.contains(n))
        .map(|&n| (n, b.live.contains(&n), printed.contains(&n)))
        .collect()
}
