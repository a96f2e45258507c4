//! The input guard's default-deny rules (issue 20 parts 2, 3, 7, 9),
//! each shown against real Lean: every case is refused by the guard, and
//! Lean, given the same text with no guard, shows the attack is real
//! (caller code ran, a trust route proved a falsehood, the option exists).
//! Removing the rule a case names makes its guard assertion fail.
//!
//! One Lean process in file mode for all cases (~1 minute on WASM; run
//! under `flock /tmp/leanpool-lean.lock`). Fails when there is no Lean.

use leanpool_lean::LeanCommand;
use leanpool_screen::guard::{screen, GuardPolicy};
use std::time::Duration;

/// What Lean must show for a case (the text run with no guard).
#[derive(Clone, Copy)]
enum Evidence {
    /// Caller code ran at elaboration time: Lean's output has this line.
    Ran(&'static str),
    /// A falsehood was accepted: Lean's `declaration uses `sorry…``
    /// warning on the case's first line (it names `sorryAx` or `sorry`,
    /// depending on the spelling), and no error there.
    SorryAx,
    /// The option exists: no error on the case's lines.
    Accepted,
    /// Lean ran the command: a message on the case's lines has this text
    /// (the command's own message, not a parse error).
    Says(&'static str),
}

struct Case {
    /// The rule that refuses it (for people).
    rule: &'static str,
    text: String,
    /// The construct the guard names.
    construct: String,
    lean: Evidence,
}

fn case(rule: &'static str, text: &str, construct: &str, lean: Evidence) -> Case {
    Case {
        rule,
        text: text.to_string(),
        construct: construct.to_string(),
        lean,
    }
}

/// Every `pp` option of Lean 4.28, with a value of its type: the
/// pretty printer's (`Lean/PrettyPrinter/Delaborator/Options.lean`,
/// `pp.raw*` and `pp.oneline` of `Lean/Util/PPExt.lean`), and (issue 20,
/// seventh session) every other declaration `*.pp.*` of the installed
/// 4.28 `.olean`s' constant names (`pp.sorrySource`, `pp.analyze.*`,
/// `pp.showLetValues*`, `pp.macroStack`, ...: 24 were missing).
const PP_OPTIONS: &[(&str, &str)] = &[
    ("pp.maxSteps", "10"),
    ("pp.all", "true"),
    ("pp.notation", "false"),
    ("pp.parens", "true"),
    ("pp.unicode", "false"),
    ("pp.unicode.fun", "true"),
    ("pp.match", "false"),
    ("pp.coercions", "false"),
    ("pp.coercions.types", "true"),
    ("pp.universes", "true"),
    ("pp.fullNames", "true"),
    ("pp.privateNames", "true"),
    ("pp.funBinderTypes", "true"),
    ("pp.piBinderTypes", "false"),
    ("pp.piBinderNames", "true"),
    ("pp.foralls", "false"),
    ("pp.letVarTypes", "true"),
    ("pp.natLit", "true"),
    ("pp.numericTypes", "true"),
    ("pp.instantiateMVars", "false"),
    ("pp.mvars", "false"),
    ("pp.mvars.levels", "false"),
    ("pp.mvars.anonymous", "false"),
    ("pp.mvars.withType", "true"),
    ("pp.mvars.delayed", "true"),
    ("pp.beta", "true"),
    ("pp.structureInstances", "false"),
    ("pp.structureInstances.flatten", "false"),
    ("pp.fieldNotation", "false"),
    ("pp.fieldNotation.generalized", "false"),
    ("pp.explicit", "true"),
    ("pp.structureInstanceTypes", "true"),
    ("pp.safeShadowing", "false"),
    ("pp.tagAppFns", "true"),
    ("pp.proofs", "true"),
    ("pp.proofs.withType", "true"),
    ("pp.proofs.threshold", "5"),
    ("pp.instances", "false"),
    ("pp.instanceTypes", "true"),
    ("pp.deepTerms", "true"),
    ("pp.deepTerms.threshold", "3"),
    ("pp.motives.pi", "false"),
    ("pp.motives.nonConst", "true"),
    ("pp.motives.all", "true"),
    ("pp.raw", "true"),
    ("pp.raw.showInfo", "true"),
    ("pp.raw.maxDepth", "3"),
    ("pp.rawOnError", "true"),
    ("pp.oneline", "true"),
    ("pp.sorrySource", "true"),
    ("pp.analyze", "true"),
    ("pp.analyze.checkInstances", "true"),
    ("pp.analyze.explicitHoles", "true"),
    ("pp.analyze.knowsType", "false"),
    ("pp.analyze.omitMax", "false"),
    ("pp.analyze.trustId", "false"),
    ("pp.analyze.trustKnownFOType2TypeHOFuns", "false"),
    ("pp.analyze.trustOfNat", "false"),
    ("pp.analyze.trustOfScientific", "false"),
    ("pp.analyze.trustSubst", "true"),
    ("pp.analyze.trustSubtypeMk", "false"),
    ("pp.analyze.typeAscriptions", "false"),
    ("pp.auxDecls", "true"),
    ("pp.exprSizes", "true"),
    ("pp.implementationDetailHyps", "true"),
    ("pp.inaccessibleNames", "true"),
    ("pp.macroStack", "true"),
    ("pp.piBinderNames.hygienic", "true"),
    ("pp.sanitizeNames", "false"),
    ("pp.showLetValues", "true"),
    ("pp.showLetValues.threshold", "0"),
    ("pp.showLetValues.tactic.threshold", "0"),
    ("pp.structureInstances.defaults", "false"),
];

/// Tactic configuration that would run the caller's code, or `native_decide`.
fn configuration_cases() -> Vec<Case> {
    use Evidence::*;
    vec![
        case(
            "no caller code at elaboration time (configuration in a text with an instance)",
            "instance (priority := high) evil (n : Nat) : OfNat Nat n := ⟨dbgTrace \"LP_ATTACK_CFG\" fun _ => n⟩\nexample : True := by simp (maxSteps := 7)",
            "(maxSteps := …)",
            Ran("LP_ATTACK_CFG"),
        ),
        case(
            "positional configuration (`.mk`): decide +native spelled positionally",
            "def lpPos (_ : Nat) : Bool := dbgTrace \"LP_ATTACK_POSITIONAL\" fun _ => true\ntheorem lp_pos : lpPos 0 = true := by decide (config := .mk false true true false)",
            "decide (config := …)",
            Ran("LP_ATTACK_POSITIONAL"),
        ),
        case(
            "named configuration: `native` not on decide's field list",
            "def lpNamed (_ : Nat) : Bool := dbgTrace \"LP_ATTACK_NAMED\" fun _ => true\ntheorem lp_named : lpNamed 0 = true := by decide (config := { native := true })",
            "decide native",
            Ran("LP_ATTACK_NAMED"),
        ),
        case(
            "switch not on decide's field list: +native",
            "def lpPlus (_ : Nat) : Bool := dbgTrace \"LP_ATTACK_PLUS\" fun _ => true\ntheorem lp_plus : lpPlus 0 = true := by decide +native",
            "decide native",
            Ran("LP_ATTACK_PLUS"),
        ),
        case(
            "native_decide refused by default",
            "def lpNd (_ : Nat) : Bool := dbgTrace \"LP_ATTACK_NATIVE_DECIDE\" fun _ => true\ntheorem lp_nd : lpNd 0 = true := by native_decide",
            "native_decide",
            Ran("LP_ATTACK_NATIVE_DECIDE"),
        ),
    ]
}

/// `sorryAx` reached by routes the verdict must still see.
fn trust_route_cases() -> Vec<Case> {
    use Evidence::*;
    vec![
        case(
            "trust route: sorryAx applied through id",
            "theorem lp_sorry1 : 2 + 2 = 5 := (id sorryAx) _ false",
            "sorryAx",
            SorryAx,
        ),
        case(
            "trust route: @sorryAx bound by let",
            "theorem lp_sorry2 : 2 + 2 = 5 := let s := @sorryAx; s _ false",
            "sorryAx",
            SorryAx,
        ),
        case(
            "trust route: _root_.«sorryAx»",
            "theorem lp_sorry3 : 2 + 2 = 5 := _root_.«sorryAx» _ false",
            "_root_.sorryAx",
            SorryAx,
        ),
    ]
}

/// Default-deny configuration and commands anywhere.
fn default_deny_cases() -> Vec<Case> {
    use Evidence::*;
    vec![
        case(
            "default-deny configuration: a tactic without a field list (`lia`) is not configured",
            "instance (priority := high) lpEvilLia (n : Nat) : OfNat Nat n := ⟨dbgTrace \"LP_ATTACK_LIA\" fun _ => n⟩\nexample (x : Int) (h : x > 2) : x > 1 := by lia (gen := 7)",
            "lia (gen := …)",
            Ran("LP_ATTACK_LIA"),
        ),
        case(
            "default-deny configuration: a tactic without a field list (`cutsat`) after `<;>`",
            "instance (priority := high) lpEvilSw (n : Nat) : OfNat Nat n := ⟨dbgTrace \"LP_ATTACK_SWITCH\" fun _ => n⟩\nexample (x : Int) (h : x > 2) : x > 1 ∧ x > 0 := by constructor <;> cutsat (gen := 3)",
            "cutsat (gen := …)",
            Ran("LP_ATTACK_SWITCH"),
        ),
        case(
            "commands anywhere: a command after a term on the same line (`unseal`)",
            "def lpSealed (n : Nat) : Nat := n\ntheorem lp_mid : True := trivial unseal lpSealed",
            "unseal",
            Says("failed to set `[local semireducible]`"),
        ),
        // Issue 20: core Lean 4.28 commands the vocabulary did not list
        // passed mid-line (no allowlist meets a word after a term).
        case(
            "commands anywhere: `set_library_suggestions` (Init/Notation) after a term",
            "example : True := trivial set_library_suggestions (fun _ _ => pure #[])",
            "set_library_suggestions",
            Says("before using the `set_library_suggestions` command"),
        ),
        case(
            "commands anywhere: `tactic_extension` (Lean/Parser/Command) after a term",
            "example : True := trivial tactic_extension simp",
            "tactic_extension",
            Says("Missing documentation comment"),
        ),
        case(
            "commands anywhere: `register_try?_tactic` (Init/Try; also a forbidden word in guard/tables.rs)",
            "example : True := trivial register_try?_tactic (priority := 1) trivial",
            "register_try?_tactic",
            Says("before using the `register_try?_tactic` command"),
        ),
        case(
            "commands anywhere: `gen_injective_theorems%` (Lean/Parser/Command), one token for Lean",
            "example : True := trivial gen_injective_theorems% Nat",
            "gen_injective_theorems%",
            Says("(kernel) constant has already been declared 'Nat.succ.inj'"),
        ),
        case(
            "commands anywhere: `declare_int_theorems` (Init/Data/SInt/Lemmas) declares theorems",
            "example : True := trivial declare_int_theorems Int8 8",
            "declare_int_theorems",
            Says("`Int8.toBitVec_inj` has already been declared"),
        ),
        case(
            "commands anywhere: a command after `set_option … in` on one line",
            "def lpSealed2 (n : Nat) : Nat := n\nset_option maxHeartbeats 400000 in unseal lpSealed2",
            "unseal",
            Says("failed to set `[local semireducible]`"),
        ),
    ]
}

fn cases() -> Vec<Case> {
    use Evidence::*;
    let mut v = configuration_cases();
    v.extend(trust_route_cases());
    v.extend(default_deny_cases());
    for (i, (opt, val)) in PP_OPTIONS.iter().enumerate() {
        v.push(Case {
            rule: "set_option allowlist: every pp option refused",
            text: format!("set_option {opt} {val} in\ntheorem lp_pp{i} : True := trivial"),
            construct: format!("set_option {opt}"),
            lean: Accepted,
        });
    }
    v
}

#[tokio::test(flavor = "current_thread")]
async fn attacks_are_refused_and_real_in_lean() {
    let cases = cases();
    // The guard side first: cheap, and independent of Lean.
    for c in &cases {
        match screen(&c.text, &GuardPolicy::default()) {
            Ok(_) => panic!("[{}] not refused:\n{}", c.rule, c.text),
            Err(r) => assert_eq!(r.construct, c.construct, "[{}] {r}", c.rule),
        }
    }
    // Lean side: all cases in one file, each starting on a known line.
    let lean = LeanCommand::detect().expect("a Lean installation (run scripts/setup)");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("attacks.lean");
    let mut text = String::new();
    let mut spans = Vec::new();
    for c in &cases {
        let first = text.matches('\n').count() + 1;
        text.push_str(&c.text);
        text.push_str("\n\n");
        spans.push(first..text.matches('\n').count());
    }
    std::fs::write(&file, &text).unwrap();
    let mut cmd = lean.command(&[file.to_str().unwrap()]);
    cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(900), cmd.output())
        .await
        .expect("Lean finished within 15 minutes")
        .expect("Lean started");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let all = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    // Lean's messages `attacks.lean:LINE:COL: severity: …`, per line.
    let at = |line: usize, what: &str| {
        stdout
            .lines()
            .any(|l| l.contains(&format!("attacks.lean:{line}:")) && l.contains(what))
    };
    for (c, span) in cases.iter().zip(&spans) {
        let errors: Vec<usize> = span.clone().filter(|&l| at(l, "error")).collect();
        match c.lean {
            Evidence::Ran(marker) => assert!(
                all.lines().any(|l| l.trim() == marker),
                "[{}] Lean did not run the caller's code:\n{}\nLean:\n{stdout}",
                c.rule,
                c.text
            ),
            Evidence::SorryAx => assert!(
                at(span.start, "declaration uses `sorry") && errors.is_empty(),
                "[{}] Lean did not accept the falsehood with a sorryAx warning:\n{}\nLean:\n{stdout}",
                c.rule,
                c.text
            ),
            Evidence::Says(what) => assert!(
                span.clone().any(|l| at(l, what)),
                "[{}] Lean did not run the command:\n{}\nLean:\n{stdout}",
                c.rule,
                c.text
            ),
            Evidence::Accepted => assert!(
                errors.is_empty(),
                "[{}] Lean does not know this option as written:\n{}\nLean:\n{stdout}",
                c.rule,
                c.text
            ),
        }
    }
}
