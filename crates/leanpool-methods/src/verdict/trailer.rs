//! leanpool's own commands after a body (the *trailer*) and how their
//! answers are read back.
//!
//! Every trailer command runs under [`FIXED_OPTIONS`]: every option Lean
//! 4.28 has that changes how it prints, set explicitly with
//! `set_option … in`, so that nothing the caller's text set (a `pp.*`
//! option at the top level, which outlives its command) can reword what
//! leanpool reads or shows.

use super::scan::{Declaration, Scan};

/// The start of Lean's refusal of `#print axioms` in a `module`.
pub const MODULE_REFUSAL: &str = "cannot use `#print axioms` in a `module`";

/// Lines the trailer uses per declaration: the readable `#check`, the
/// explicit `#check`, `#print axioms`.
pub const LINES_PER_DECLARATION: u32 = 3;

/// Every printing option of Lean 4.28 (all `pp.*` that change output, and
/// `format.*`), with the value leanpool's own commands run under: Lean's
/// defaults, except that nothing is elided (`pp.proofs`, `pp.deepTerms`,
/// a large `pp.maxSteps`: a type never prints as `⋯`) and names are full
/// (`pp.fullNames`: an `open` or `namespace` left by the body cannot
/// shorten them). The `pp.analyze.*` switches only act under `pp.analyze`,
/// which is off. A real-Lean test sets each of them (crates/leanpool-methods/
/// tests/verdict_lean.rs), so a name Lean does not know fails there.
pub const FIXED_OPTIONS: &[(&str, &str)] = &[
    ("pp.all", "false"),
    ("pp.analyze", "false"),
    ("pp.beta", "false"),
    ("pp.coercions", "true"),
    ("pp.coercions.types", "false"),
    ("pp.deepTerms", "true"),
    ("pp.deepTerms.threshold", "50"),
    ("pp.explicit", "false"),
    ("pp.exprSizes", "false"),
    ("pp.fieldNotation", "true"),
    ("pp.fieldNotation.generalized", "true"),
    ("pp.foralls", "true"),
    ("pp.fullNames", "true"),
    ("pp.funBinderTypes", "false"),
    ("pp.instanceTypes", "false"),
    ("pp.instances", "true"),
    ("pp.instantiateMVars", "true"),
    ("pp.letVarTypes", "false"),
    ("pp.match", "true"),
    ("pp.maxSteps", "1000000"),
    ("pp.motives.all", "false"),
    ("pp.motives.nonConst", "false"),
    ("pp.motives.pi", "true"),
    ("pp.mvars", "true"),
    ("pp.mvars.anonymous", "true"),
    ("pp.mvars.delayed", "false"),
    ("pp.mvars.levels", "true"),
    ("pp.mvars.withType", "false"),
    ("pp.natLit", "false"),
    ("pp.notation", "true"),
    ("pp.numericTypes", "false"),
    ("pp.oneline", "false"),
    ("pp.parens", "false"),
    ("pp.piBinderNames", "false"),
    ("pp.piBinderTypes", "true"),
    ("pp.privateNames", "false"),
    ("pp.proofs", "true"),
    ("pp.proofs.threshold", "0"),
    ("pp.proofs.withType", "false"),
    ("pp.raw", "false"),
    ("pp.raw.maxDepth", "32"),
    ("pp.raw.showInfo", "false"),
    ("pp.rawOnError", "false"),
    ("pp.safeShadowing", "true"),
    ("pp.sorrySource", "false"),
    ("pp.structureInstanceTypes", "false"),
    ("pp.structureInstances", "true"),
    ("pp.structureInstances.flatten", "true"),
    ("pp.tagAppFns", "false"),
    ("pp.unicode.fun", "false"),
    ("pp.universes", "false"),
    ("format.indent", "2"),
    ("format.width", "120"),
];

/// Changes to [`FIXED_OPTIONS`] for the explicit `#check`: every implicit
/// argument and instance shown, no notation, coercions as functions, so a
/// redefined numeral (`@OfNat.ofNat ℕ 5 evil`) or notation is visible.
const EXPLICIT: &[(&str, &str)] = &[
    ("pp.explicit", "true"),
    ("pp.notation", "false"),
    ("pp.coercions", "false"),
    ("pp.fieldNotation", "false"),
];

/// Changes for `#print axioms`: no notation, so a body's `notation` cannot
/// make a forbidden axiom print as an allowed one.
const AXIOMS: &[(&str, &str)] = &[("pp.notation", "false")];

/// `set_option a v in set_option b v in …` for [`FIXED_OPTIONS`] with
/// `changes` applied.
pub fn fixed_options(changes: &[(&str, &str)]) -> String {
    FIXED_OPTIONS
        .iter()
        .map(|&(k, v)| {
            let v = changes.iter().find(|c| c.0 == k).map_or(v, |c| c.1);
            format!("set_option {k} {v} in ")
        })
        .collect()
}

/// The trailer's commands for one declaration, `reference` written as
/// Lean should resolve it (`_root_.«A».«x»`, or a name as the caller
/// wrote it): the readable `#check`, the explicit `#check`, `#print
/// axioms`, one line each.
pub fn declaration_lines(reference: &str) -> [String; LINES_PER_DECLARATION as usize] {
    [
        format!("{}#check @{reference}", fixed_options(&[])),
        format!("{}#check @{reference}", fixed_options(EXPLICIT)),
        format!("{}#print axioms {reference}", fixed_options(AXIOMS)),
    ]
}

/// leanpool's commands appended after a body: the text to append (it
/// starts on a new line), [`LINES_PER_DECLARATION`] lines per
/// declaration, in order.
pub fn trailer(body: &str, scan: &Scan) -> String {
    let mut t = String::new();
    if !body.is_empty() && !body.ends_with('\n') {
        t.push('\n');
    }
    for d in &scan.declarations {
        for line in declaration_lines(&d.axioms_reference()) {
            t.push_str(&line);
            t.push('\n');
        }
    }
    t
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

/// The type in Lean's answer to the trailer's `#check @x` (`x : TYPE`,
/// the name as Lean printed it): what follows the declaration's name and
/// ` : `, else what follows the first ` : `. `None` when there is none.
pub fn parse_type(message: &str, d: &Declaration) -> Option<String> {
    let plain = d.name.join(".");
    [d.display(), plain]
        .iter()
        .find_map(|n| message.strip_prefix(n.as_str())?.strip_prefix(" : "))
        .or_else(|| message.split_once(" : ").map(|(_, t)| t))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::scan;

    #[test]
    fn trailer_references_are_absolute_and_options_fixed() {
        let body = "namespace A\ntheorem t : True := trivial\nend A";
        let t = trailer(body, &scan(body).unwrap());
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 1 + LINES_PER_DECLARATION as usize);
        assert!(lines[1].ends_with("in #check @_root_.«A».«t»"));
        assert!(lines[3].ends_with("in #print axioms _root_.«A».«t»"));
        for l in &lines[1..] {
            for (k, _) in FIXED_OPTIONS {
                assert!(l.contains(&format!("set_option {k} ")), "{k} in {l}");
            }
        }
        assert!(lines[2].contains("set_option pp.explicit true in"));
        assert!(lines[3].contains("set_option pp.notation false in"));
        assert!(lines[1].contains("set_option pp.notation true in"));
    }

    #[test]
    fn types_after_the_name() {
        let s = scan("namespace A\ntheorem «x y» : True := trivial\nend A").unwrap();
        let d = &s.declarations[0];
        assert_eq!(
            parse_type("A.«x y» : False → 2 + 2 = 5", d).as_deref(),
            Some("False → 2 + 2 = 5")
        );
        assert_eq!(parse_type("A.x y : a : b", d).as_deref(), Some("a : b"));
        assert_eq!(parse_type("nothing", d), None);
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
}
