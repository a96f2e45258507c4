//! The input guard, case by case: every refused construct, attempts to
//! smuggle them past the tokenizer, and inputs that must pass (all miniF2F
//! statements of the GTED data set, comments and strings mentioning the
//! refused words). No Lean needed.

use leanpool_screen::guard::{screen, GuardPolicy, Rejection, Screening};
use proptest::prelude::*;

fn check(text: &str) -> Result<(), Rejection> {
    screen(text, &GuardPolicy::default()).map(|_| ())
}

#[track_caller]
fn assert_rejected(text: &str, construct: &str) -> Rejection {
    match check(text) {
        Ok(()) => panic!("expected `{construct}` to be rejected in:\n{text}"),
        Err(r) => {
            assert_eq!(r.construct, construct, "wrong construct for:\n{text}\n{r}");
            assert!(!r.reason.is_empty());
            r
        }
    }
}

#[track_caller]
fn assert_passes(text: &str) {
    if let Err(r) = check(text) {
        panic!("expected to pass, got {r}\nin:\n{text}");
    }
}

const HEADER: &str = "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 0\n\nopen BigOperators Real Nat Topology Rat\n\n";

/// One `#[test]` per refused input: `name: text => construct`.
macro_rules! rejects {
    ($($name:ident: $text:expr => $construct:expr;)*) => {
        $(#[test] fn $name() { assert_rejected($text, $construct); })*
    };
}

/// One `#[test]` per input that must pass.
macro_rules! passes {
    ($($name:ident: $text:expr;)*) => {
        $(#[test] fn $name() { assert_passes($text); })*
    };
}

rejects! {
    // An import's module name is a path under the library roots: escaped
    // components climb out of them or name any file (issue 25); only an
    // escaped component that could be written plainly passes.
    import_escaped_parent_components: "import «..».«..».«..».tmp.Evil\ntheorem t : True := trivial" => "«..».«..».«..».tmp.Evil";
    import_escaped_slash: "import Mathlib\nimport «/tmp/x»\ntheorem t : True := trivial" => "«/tmp/x»";
    import_escaped_after_modifiers: "module\n\npublic import all «a/b».C\n" => "«a/b».C";
    import_escaped_dot_inside: "import «Init.Data».List\n" => "«Init.Data».List";
    import_escaped_empty: "import Init.«»\n" => "Init.«»";
    import_escaped_space: "import «Init Data»\n" => "«Init Data»";
    import_escaped_leading_digit: "import Init.«1x»\n" => "Init.«1x»";
    import_escaped_dots_only: "import Init.«..»\n" => "Init.«..»";
    import_escaped_backslash: "import «a\\b»\n" => "«a\\b»";
    import_escaped_keyword_word: "module\n\n«public» import Init\n" => "«public»";
    eval: "#eval 1 + 1" => "#eval";
    eval_bang: "#eval! (1 : Nat)" => "#eval!";
    eval_io: "#eval IO.Process.exit 0" => "#eval";
    exit: "theorem t : True := trivial\n#exit\ntheorem f : False := sorry" => "#exit";
    unknown_command_at_line_start: "theorem t : True := trivial\nmy_new_command foo" => "my_new_command";
    unindented_tactic_at_line_start: "theorem t : True := by\ntrivial" => "trivial";
    guard_cmd: "#guard 1 = 1" => "#guard";
    unknown_hash_command: "#test ∀ n : Nat, n = n" => "#test";
    hash_glued_to_letters: "#evalIO.println 1" => "#evalIO";
    run_cmd: "run_cmd Lean.logInfo \"x\"" => "run_cmd";
    run_elab: "run_elab pure ()" => "run_elab";
    run_meta: "run_meta pure ()" => "run_meta";
    run_tac: "example : True := by run_tac Lean.Elab.Tactic.evalTactic (← `(tactic| trivial))" => "run_tac";
    by_elab: "example : Nat := by_elab pure (Lean.mkNatLit 1)" => "by_elab";
    initialize: "initialize counter : IO.Ref Nat ← IO.mkRef 0" => "initialize";
    builtin_initialize: "builtin_initialize pure ()" => "builtin_initialize";
    import_in_body: "theorem t : True := trivial\nimport Mathlib" => "import";
    import_after_set_option: "set_option maxHeartbeats 0\nimport Mathlib" => "import";
    import_after_open: "import Mathlib\nopen Nat\nimport Aesop" => "import";
    unsafe_def: "unsafe def f : Nat := unsafeCast ()" => "unsafe";
    unsafe_guillemets: "«unsafe» def f : Nat := 0" => "unsafe";
    partial_unsafe_term: "def f : Nat := unsafe (unsafeCast ())" => "unsafe";
    extern_attr: "@[extern \"lean_io_exit\"] opaque myExit : UInt8 → IO Unit" => "@[extern]";
    extern_attr_guillemets: "@[«extern» \"x\"] opaque f : Nat" => "@[extern]";
    extern_attr_over_lines: "@[simp,\n  -- a comment\n  extern\n  \"x\"]\nopaque f : Nat" => "@[extern]";
    implemented_by: "@[implemented_by g] def f : Nat := 0" => "@[implemented_by]";
    implemented_by_attribute_cmd: "attribute [implemented_by g] f" => "@[implemented_by]";
    init_attr: "@[init] def f : IO Unit := pure ()" => "@[init]";
    command_elab_attr: "@[command_elab Lean.Parser.Command.check] def f : Lean.Elab.Command.CommandElab := fun _ => pure ()" => "@[command_elab]";
    tactic_attr: "@[tactic Lean.Parser.Tactic.omega] def f : Lean.Elab.Tactic.Tactic := fun _ => pure ()" => "@[tactic]";
    term_elab_attr: "@[term_elab foo] def f := 0" => "@[term_elab]";
    local_scoped_attr: "attribute [local app_unexpander Nat.add] f" => "@[app_unexpander]";
    unknown_attr: "@[my_fancy_attr] theorem t : True := trivial" => "@[my_fancy_attr]";
    nested_attr_in_args: "@[to_additive (attr := extern \"f\")] def f : Nat := 0" => "@[extern]";
    norm_num_ext: "@[norm_num _ + _] def evalFoo : Mathlib.Meta.NormNum.NormNumExt := sorry" => "@[norm_num]";
    macro_cmd: "macro \"go\" : command => `(#check 1)" => "macro";
    macro_rules_cmd: "macro_rules | `(tactic| trivial) => `(tactic| rfl)" => "macro_rules";
    elab_cmd: "elab \"go\" : command => pure ()" => "elab";
    elab_rules_cmd: "elab_rules : command | `(go) => pure ()" => "elab_rules";
    syntax_cmd: "syntax \"go\" : command" => "syntax";
    syntax_cat: "declare_syntax_cat foo" => "declare_syntax_cat";
    local_macro: "local macro \"go\" : tactic => `(tactic| rfl)" => "macro";
    simproc_cmd: "simproc foo (_ + _) := fun _ => pure .continue" => "simproc";
    register_simp_attr: "register_simp_attr my_simps" => "register_simp_attr";
    native_decide: "example : 2 + 2 = 4 := by native_decide" => "native_decide";
    decide_plus_native: "example : 2 + 2 = 4 := by decide +native" => "decide native";
    decide_native_item: "example : 2 + 2 = 4 := by decide (native := true)" => "decide native";
    decide_config_positional: "example : 2 + 2 = 4 := by decide (config := ⟨false, true⟩)" => "decide (config := …)";
    decide_config_dot_mk: "example : 2 + 2 = 4 := by decide (config := .mk false true true false)" => "decide (config := …)";
    decide_config_struct_native: "example : 2 + 2 = 4 := by decide (config := { native := true })" => "decide native";
    decide_config_with: "example : 2 + 2 = 4 := by decide (config := { c with kernel := true })" => "decide (config := …)";
    simp_config_dot_ctor: "example : True := by simp (config := { maxSteps := .evil })" => "(maxSteps := …)";
    simp_unknown_switch: "example : True := by simp +evilSwitch" => "simp evilSwitch";
    config_numeral_with_instance: "instance (priority := high) evil (n : Nat) : OfNat Nat n := ⟨dbgTrace \"X\" fun _ => n⟩\nexample : True := by simp (maxSteps := 7)" => "(maxSteps := …)";
    config_switch_with_notation: "notation \"yes\" => true\nexample : True := by simp +contextual" => "+contextual";
    config_on_unknown_tactic: "example : True := by my_tactic (config := { x := 1 })" => "my_tactic (config := …)";
    of_reduce_bool: "example : True := Lean.ofReduceBool _ _ rfl ▸ trivial" => "Lean.ofReduceBool";
    of_reduce_bool_opened: "open Lean in example : f = true := ofReduceBool f true rfl" => "ofReduceBool";
    trust_compiler: "#print axioms Lean.trustCompiler" => "Lean.trustCompiler";
    sorry_ax_applied: "theorem t : 2 + 2 = 5 := (id sorryAx) _ false" => "sorryAx";
    sorry_ax_at: "theorem t : 2 + 2 = 5 := let s := @sorryAx; s _ false" => "sorryAx";
    sorry_ax_root_guillemets: "theorem t : 2 + 2 = 5 := _root_.«sorryAx» _ false" => "_root_.sorryAx";
    sorry_ax_name_literal: "example : Lean.Name := `sorryAx" => "sorryAx";
    lc_proof: "theorem t : 2 + 2 = 5 := lcProof" => "lcProof";
    of_reduce_bool_root: "example : True := @_root_.Lean.«ofReduceBool» _ _ rfl ▸ trivial" => "_root_.Lean.ofReduceBool";
    plausible: "example (n : Nat) : n + 0 = n := by plausible" => "plausible";
    polyrith: "example (x : ℚ) (h : x = 1) : 2 * x = 2 := by polyrith" => "polyrith";
    bv_decide: "example (x : BitVec 8) : x + 0 = x := by bv_decide" => "bv_decide";
    include_str: "theorem t : include_str \"/etc/passwd\" = \"\" := rfl" => "include_str";
    meta_def: "meta def f : Nat := 0" => "meta";
    simp_config_non_literal: "example : True := by simp (config := myConfig)" => "simp (config := …)";
    simp_config_inline_io: "example : True := by simp (maxSteps := match (IO.println \"x\" : IO Unit) () with | _ => 5)" => "(maxSteps := …)";
    simp_config_item_after_literal: "example : True := by simp (maxSteps := 10) (maxDischargeDepth := evil)" => "(maxDischargeDepth := …)";
    apply_config: "example : True := by apply (config := cfg) trivial" => "apply (config := …)";
    set_max_heartbeats_over_cap: "theorem t : True := trivial\nset_option maxHeartbeats 20000001" => "set_option maxHeartbeats";
    set_max_heartbeats_not_a_number: "set_option maxHeartbeats n in\ntheorem t : True := trivial" => "set_option maxHeartbeats";
    set_max_heartbeats_hex: "import Mathlib\nset_option maxHeartbeats 0xffffffff in\ntheorem t : True := trivial" => "set_option maxHeartbeats";
    set_max_rec_depth_over_cap: "set_option maxRecDepth 100001" => "set_option maxRecDepth";
    set_pp_notation_in: "set_option pp.notation false in\ntheorem t : 2 + 2 = 5 := sorry" => "set_option pp.notation";
    set_pp_header: "import Mathlib\nset_option pp.fullNames true\ntheorem t : True := trivial" => "set_option pp.fullNames";
    set_autoimplicit: "set_option autoImplicit true in\ntheorem t : x = x := rfl" => "set_option autoImplicit";
    set_linter_in: "set_option linter.unusedVariables false in\ntheorem t (x : Nat) : True := trivial" => "set_option linter.unusedVariables";
    set_synth_heartbeats_over_cap: "set_option synthInstance.maxHeartbeats 99999999999 in\nexample : True := trivial" => "set_option synthInstance.maxHeartbeats";
    set_synth_size: "set_option synthInstance.maxSize 100000" => "set_option synthInstance.maxSize";
    set_exponentiation: "set_option exponentiation.threshold 100000" => "set_option exponentiation.threshold";
    set_max_size: "set_option maxSize 1000000" => "set_option maxSize";
    set_tactic_option_in_by: "example : True := by\n  set_option maxRecDepth 1000000 in\n  trivial" => "set_option maxRecDepth";
    set_skip_kernel: "set_option debug.skipKernelTC true" => "set_option debug.skipKernelTC";
    set_trace: "set_option trace.Meta.synthInstance true in\nexample : True := trivial" => "set_option trace.Meta.synthInstance";
    set_guillemet_option: "set_option «pp.all» true in\nexample : True := trivial" => "set_option pp.all";
    set_allow_unsafe_reducibility: "set_option allowUnsafeReducibility true" => "set_option allowUnsafeReducibility";
    header_rec_depth_over_cap: "import Mathlib\nset_option maxRecDepth 1000000\n" => "set_option maxRecDepth";
    open_in_eval: "open Lean in #eval 1" => "#eval";
    open_in_run_cmd: "open Lean Elab Command in\nrun_cmd logInfo \"hi\"" => "run_cmd";
    set_option_in_eval: "set_option maxHeartbeats 0 in #eval 1" => "#eval";
    guard_msgs_in_eval: "/-- info: 2 -/\n#guard_msgs in\n#eval 1 + 1" => "#guard_msgs";
    // Issue 11's repro files: `#guard_msgs` swallowing the sorry warning of
    // a proof of `False`, and the error of a theorem that was never added.
    guard_msgs_hides_sorry_warning: "/-- warning: declaration uses `sorry` -/\n#guard_msgs in\ntheorem bogus : False := sorry" => "#guard_msgs";
    guard_msgs_drop_error_hides_failed_theorem: "#guard_msgs (drop error) in\ntheorem bogus2 : 1 = 2 := rfl" => "#guard_msgs";
    guard_msgs_check: "/-- info: 1 : Nat -/\n#guard_msgs in\n#check 1" => "#guard_msgs";
    warn_sorry_off_hides_sorry: "set_option warn.sorry false in\ntheorem bogus : False := sorry" => "set_option warn.sorry";
    eval_after_block_comment: "/- comment -/ #eval 1" => "#eval";
    eval_after_nested_comment: "/- outer /- inner -/ still outer -/\n#eval 1" => "#eval";
    eval_in_interpolation: "def s : String := s!\"{(by run_tac pure () : Nat)}\"" => "run_tac";
    eval_in_interpolation_after_text: "def s := s!\"a {1} b {(by native_decide : 1 = 1)}\"" => "native_decide";
    // A string inside `{…}` ends the string early when read as a plain
    // string, so the two readings disagree: refused as ambiguous.
    nested_string_in_interpolation: "def s := s!\"a{s!\"b{(by native_decide : 1 = 1)}\"}\"" => "string literal";
    nested_string_in_interpolation_smuggle: "def s := s!\"{\"}\" ++ (by native_decide : 1 = 1)}\"" => "string literal";
    string_then_eval: "def s := \"-/ /-\" #eval 1" => "#eval";
    char_quote_then_eval: "def c := '\"' #eval 1 --\"" => "#eval";
    unterminated_string: "def s := \"abc\n#eval 1" => "unterminated string literal";
    bad_escape: "def s := \"\\q #eval 1\"" => "invalid escape in string literal";
    unterminated_raw_string: "def s := r#\"abc\"\n#eval 1" => "unterminated raw string literal";
    unterminated_guillemet: "def «abc := 1\n#eval 1" => "«";
    failed_char_literal_before_quote: "def c := 'x\" #eval 1 \"" => "'";
    interpolation_recovery_into_text: "def s := s!\"{x)} #eval (1 : Nat) \"" => "#eval";
    // The price of that rule: a string with braces may not mention refused words.
    braces_string_mentioning_eval: "def s (n : Nat) : String := s!\"{n} #eval\"" => "#eval";
    interpolation_text_glued: "def s := m!\"{x} run_cmd\"" => "run_cmd";
    // With Mathlib, `∑'` is one token, so `'"'` below is a character
    // literal and `#eval` is code.
    glued_quote_after_symbol: "example := ∑'+'\"' #eval 1 \"" => "'";
    // Found by the `lexdiff` bench (fifth session): core Lean has the token
    // `]'` (`a[i]'h`), so after `]` the `'"'` is not a character literal;
    // Lean reads a string `"' /- "` and then the next line as a command,
    // while a guard that took `'"'` for a literal saw a comment hiding it.
    attack_char_literal_after_bracket_token: "def c : Nat := 0]'\"' /- \"\n#eval (424501 : Nat)\n-- -/" => "'";
    attack_char_literal_after_paren_notation_token: "notation \"('\" x => x\ndef c : Nat := ('\"' /- \"\n#eval (424502 : Nat)\n-- -/" => "'";
    char_literal_glued_to_bracket: "def l : List Char := ['a']" => "'";
    // Also found by the bench: core Lean has no `∑` token, so it fails
    // there and resumes inside what follows.
    attack_raw_string_after_unknown_symbol: "theorem s : 1 = 1∑r#\" \"\n#eval (424503 : Nat)\n-- \"\n\"# = 1 := rfl" => "r";
    attack_quote_after_unknown_symbol_prime: "def c : Nat := 0∑' -/ \"\n#eval (424504 : Nat)\n-- \"" => "'";
    glued_line_comment: "example : ∀ x, x <-- #eval 1\n = x := sorry" => "--";
    glued_block_comment: "def S := {x : Nat //- \n#eval 1\n-- -/ x > 0}" => "/-";
    // Issue 10: a comment glued to a symbol is a comment for Lean (its
    // `whitespace` runs after every token); the old guard read it as code,
    // so a string opened on that line hid the next line from the guard only.
    attack_line_comment_glued_to_eq: "example : True =-- \"\n#eval (424201 : Nat)\n-- \"\n" => "--";
    attack_block_comment_glued_to_colon: "example :/- \"\n-/ #eval (424202 : Nat)\n-- \"\n" => "/-";
    attack_line_comment_glued_to_assign: "example : True :=-- \"\n#eval (424203 : Nat)\n-- \"\n" => "--";
    attack_block_comment_glued_to_plus: "example : 1 +/- \"\n-/ #eval (424204 : Nat)\n-- \"\n = 1 := rfl" => "/-";
    attack_glued_comment_then_raw_string: "example : True =-- r#\"\n#eval (424205 : Nat)\n-- \"#\n" => "--";
    attack_glued_comment_then_guillemet: "example : True =-- «\n#eval (424206 : Nat)\n-- »\n" => "--";
    attack_glued_comment_after_name: "example : True := trivial-- \"\n#eval (424207 : Nat)\n-- \"\n" => "--";
    attack_glued_doc_comment: "example : True :/-- \"\n-/ #eval (424208 : Nat)\n-- \"\n" => "/-";
    // Issue 10: `/--/` opens a doc comment for Lean (its body starts
    // after `/--`); the old guard closed it at once.
    attack_doc_comment_slash_dash_dash_slash: "/--/ \"\n-/ #eval (424210 : Nat)\n-- \"\ntheorem x : True := trivial\n" => "#eval";
    // A plain comment's body starts after `/-X`: `/-/- -/` is a whole
    // comment for Lean, not a nested one.
    // Without a `↔'` / `''` token, `'` is a failed character literal for
    // Lean: it consumes two more characters and resumes *inside* the name
    // the guard read, at the keyword `run_cmd`.
    attack_failed_char_literal_resumes_inside_a_name: "example : a ↔'xyrun_cmd Lean.logInfo \"x\"" => "'";
    attack_failed_double_quote_resumes_inside_a_name: "example : f ''xyrun_cmd Lean.logInfo \"x\"" => "''";
    attack_failed_char_literal_resumes_inside_a_comment: "example : a ↔'x-- \n#eval 1" => "'";
    attack_comment_slash_dash_slash_nesting: "/-/- -/ #eval (424211 : Nat) -/" => "#eval";
    zero_width_space: "#ev\u{200B}al 1" => "invisible character U+200B";
    zero_width_in_keyword: "run\u{200D}_cmd pure ()" => "invisible character U+200D";
    bidi_override: "theorem t : True := \u{202E}trivial" => "invisible character U+202E";
    nbsp_in_code: "theorem\u{00A0}t : True := trivial" => "invisible character U+00A0";
    notation_with_quote_token: "notation a \"x\\\"y\" b => a + b\n#check 1" => "\"x\\\"y\"";
    notation_with_comment_token: "infixl:65 \" <-- \" => HAdd.hAdd" => "\" <-- \"";
    eval_percent: "example : 2 ^ 10 = eval% 2 ^ 10 := rfl" => "eval%";
    aesop_user_tactic: "example : True := by aesop (add safe tactic myTac)" => "tactic";
    count_heartbeats: "count_heartbeats in\ntheorem t : True := trivial" => "count_heartbeats";
    run_io_lake: "run_io IO.println \"x\"" => "run_io";
    grind_propagator: "grind_propagator ↓foo (e) := pure ()" => "grind_propagator";
    header_then_body_over_cap: "import Mathlib\nset_option maxHeartbeats 0\ntheorem t : True := trivial\nset_option maxHeartbeats 40000000\n" => "set_option maxHeartbeats";
    doc_verso_option: "set_option doc.verso true" => "set_option doc.verso";
}

passes! {
    mathlib_primes_with_short_names: "example : ∑' n, f n = ∑' (k : ℕ), f k ∧ f ⁻¹' s = f '' t := sorry";
    plain_theorem: "theorem t (a b : Nat) : a + b = b + a := by omega";
    header_and_statement: "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 0\n\nopen BigOperators Real Nat Topology Rat\n\ntheorem x : (2 : ℝ) + 2 = 4 := by norm_num";
    check_print_reduce: "#check Nat.add_comm\n#print Nat.add\n#print axioms Nat.add_comm\n#reduce 2 + 2\n#synth Inhabited Nat";
    words_inside_identifiers: "def evaluate := 1\ndef my_eval := 2\ndef Nat.unsafe_thing := 3\ntheorem elab_ok : evaluate = 1 := rfl\ndef unsafeish := 4\ndef macro_like := 5";
    eval_in_line_comment: "-- #eval IO.Process.exit 0\ntheorem t : True := trivial";
    eval_in_block_comment: "/- #eval 1\n run_cmd x\n unsafe def -/ theorem t : True := trivial";
    eval_in_nested_comment: "/- a /- #eval 1 -/ run_cmd -/ theorem t : True := trivial";
    eval_in_doc_comment: "/-- Do not `#eval` this; it is `unsafe` elab syntax. -/\ntheorem t : True := trivial";
    eval_in_module_doc: "/-! # Notes\n`#eval`, `run_cmd`, `import` -/\ntheorem t : True := trivial";
    eval_in_string: "def s : String := \"#eval IO.Process.exit 0 -- run_cmd unsafe\"";
    comment_markers_in_string: "def s : String := \"-/ /- --\"\ntheorem t : True := trivial";
    escaped_quote_in_string: "def s : String := \"a \\\"#eval\\\" b\"";
    string_gap: "def s : String := \"abc\\\n   def #eval\"";
    raw_string_with_eval: "def s : String := r#\"#eval \"quoted\" run_cmd\"#";
    char_literals: "def c : Char := '\"'\ndef d : Char := '\\''\ndef e := '#'\ndef l := [ 'a', 'b']\ndef p := ( 'x')";
    guillemet_name_with_eval: "def «#eval is just a name» : Nat := 1";
    interpolation_with_safe_code: "def s (n : Nat) : String := s!\"n = {n + 1}, m = {n}: it's done\"";
    braces_in_plain_string: "def s : String := \"{x} and {y}\"";
    fullwidth_hash_is_not_eval: "＃eval 1"; // Lean does not read it as `#eval` (parse error)
    cyrillic_lookalike_is_not_eval: "#\u{0435}val 1"; // `#` then Cyrillic `е`: parse error in Lean
    notation_and_infix: "local notation \"‖\" x \"‖₊\" => Int.natAbs x\ninfixl:65 \" +++ \" => Nat.add\ntheorem t : ‖(3 : ℤ)‖₊ = 3 := rfl";
    simp_attributes: "@[simp, norm_cast] theorem t : (1 : Nat) = 1 := rfl\nattribute [local simp] Nat.add_comm\nattribute [-simp] Nat.add_comm\n@[instance 100] def i : Inhabited Nat := ⟨0⟩";
    literal_configs: "example : True := by simp (config := { decide := true, maxSteps := 1000 }) (maxDischargeDepth := 2) +arith -zeta";
    named_args_in_terms: "example (s : Finset ℕ) : True := by have := Finset.sum_comm (s := s); trivial";
    limits_within_caps: "set_option maxHeartbeats 400000 in\nset_option maxRecDepth 100000 in\ntheorem t (x : Nat) : True := trivial\nset_option maxHeartbeats 0\nset_option synthInstance.maxHeartbeats 400000";
    header_rec_depth: "import Mathlib\nset_option maxRecDepth 100000\ntheorem t : True := by\n  set_option maxRecDepth 10000 in\n  trivial";
    simp_config_literals: "example : True := by simp (config := { decide := true, maxSteps := 400000 }) +contextual -zeta (maxDischargeDepth := 3)";
    simp_all_config_decide: "example : True := by\n  interval_cases t <;> simp_all (config := {decide := true})";
    decide_kernel_switch: "example : 2 + 2 = 4 := by decide +kernel";
    simp_disch: "example : True := by simp (disch := omega) (config := { contextual := true })";
    mathlib_image_two_spaces: "example (f : ℕ → ℕ) : f ''  Set.univ = f '' (Set.univ) := rfl";
    local_instance_with_config: "theorem t : True := by\n  letI : Inhabited Nat := ⟨3⟩\n  simp (maxSteps := 7)";
    mathlib_quote_tokens: "example (f : ℝ → ℝ) (s : Set ℝ) : f '' s = f '' s := rfl\nexample (f : ℝ → ℝ) : f ⁻¹' {0} = f ⁻¹' {0} := rfl\nexample : ∑' n : ℕ, (0 : ℝ) = 0 := tsum_zero";
    bom_at_start: "\u{FEFF}theorem t : True := trivial";
    crlf_lines: "import Mathlib\r\nset_option maxHeartbeats 0\r\ntheorem t : True := trivial\r\n";
    unterminated_block_comment: "theorem t : True := trivial\n/- never closed #eval 1";
    // Nesting 2 → 1: still inside the comment at the end; Lean reports an
    // unterminated comment at the end and reads nothing after it.
    nested_comment_left_open: "/- /- -/ #eval 1";
    empty: "";
    sorry_and_axiom: "axiom ax : 1 = 1\ntheorem t : 2 = 2 := by sorry";
    typical_competition_proof: "theorem p (a b : ℝ) (ha : 0 < a) (hb : 0 < b) (h₀ : a * b = 1) :\n    a + b ≥ 2 ∧ |a - b| ≥ 0 := by\n  constructor\n  · nlinarith [sq_nonneg (a - b), mul_pos ha hb, h₀.symm ▸ le_refl (1 : ℝ)]\n  · positivity\n\ntheorem q (n : ℕ) (h₀ : n % 5 = 3) : (2 * n) % 5 = 1 := by\n  omega\n\ntheorem r (x : ℕ) (h : x < 4) : x ^ 2 < 16 := by\n  interval_cases x <;> simp_all\n\ntheorem s (f : ℕ → ℕ) (h : ∀ n, f n = 2 * n) : ∑ k ∈ Finset.range 4, f k = 12 := by\n  simp only [h, Finset.sum_range_succ, Finset.sum_range_zero]\n  norm_num [Nat.Prime] at *\n\ntheorem t (x : ℝ) (hx : x ≠ 0) : x * x⁻¹ = 1 := by\n  field_simp\n\ntheorem u (x : ℝ) (h : √x = 2) (hx : 0 ≤ x) : ⌊x⌋ = 4 := by\n  have h2 : x = 4 := by\n    calc x = (√x) ^ 2 := (Real.sq_sqrt hx).symm\n      _ = 4 := by rw [h]; norm_num\n  rw [h2]; norm_num\n\ntheorem v : ∃! x : ℕ, x + 1 = 2 := ⟨1, rfl, fun y hy => by omega⟩\nexample (p q : Prop) (hp : p) (hq : q) : p ∧ q := ⟨‹_›, ‹_›⟩\nexample : (fun x : ℕ => x ^ 2) 3 = 9 := by decide\nexample (s : Set ℝ) (h : s = {x | 0 < x}) : (1 : ℝ) ∈ s := by rw [h]; norm_num";
    decide_and_kernel: "example : 2 + 2 = 4 := by decide\nexample : 10 < 20 := by decide +kernel";
    plain_module_names: "module\n\npublic import Judge.Basic\nimport all JudgeDecide.DecideBang\nimport Mathlib.Analysis.SpecialFunctions.Pow.Real\nimport Ωmega.Lemma₁\n\ntheorem t : True := trivial";
    escapes_after_the_imports: "import Mathlib\ntheorem «t/../x» : True := trivial";
    import_escaped_plain_name: "import «Mathlib»\ntheorem t : True := trivial";
    import_escaped_plain_components: "module\n\npublic import all «Init».«Data».List\nimport Ωmega.«Lemma₁»\nimport «Init».«Data».«List»\ntheorem t : True := trivial";
}

#[test]
fn adversarial_unclosed_constructs_stay_fast() {
    // Thousands of unclosed attribute lists / configurations: each scan is
    // capped, so this is linear, not quadratic.
    let text = "@[simp, ".repeat(20_000) + &"(config := ".repeat(20_000) + &"s!\"{".repeat(5);
    let start = std::time::Instant::now();
    let _ = check(&text);
    // Not a speed assertion: a quadratic scan would take minutes here, and
    // the generous bound only catches that.
    assert!(start.elapsed() < std::time::Duration::from_secs(60));
}

/// A group's end is looked for within the scan cap: an unclosed
/// discharger is refused where the scan stopped (here the last token), and
/// a closed one with nested brackets passes.
#[test]
fn unclosed_discharger_is_refused_where_its_scan_ends() {
    let r = assert_rejected(
        "example : True := by simp (disch := (omega)",
        "(disch := …)",
    );
    assert_eq!((r.line, r.character), (0, 42));
    assert_passes("example : True := by simp (disch := (first | omega | simp [Nat.add_comm]))");
}

#[test]
fn rejection_positions_are_utf16() {
    // `ℝ` is one UTF-16 unit (3 bytes), `𝓝` two units (4 bytes).
    let r = assert_rejected(
        "theorem t (x : ℝ) : True := by\n  -- 𝓝\n  /- 𝓝 -/ native_decide",
        "native_decide",
    );
    assert_eq!((r.line, r.character), (2, 11));
    let r = assert_rejected("def s := \"𝓝\" ++ \"𝓝\"; #eval 1", "#eval");
    assert_eq!((r.line, r.character), (0, 23));
}

#[test]
fn minif2f_header_with_body_limits_within_caps_passes() {
    let text = format!("{HEADER}set_option maxHeartbeats 400000 in\ntheorem t : True := trivial");
    assert_passes(&text);
    let text =
        format!("{HEADER}set_option maxHeartbeats 400000000 in\ntheorem t : True := trivial");
    let r = assert_rejected(&text, "set_option maxHeartbeats");
    assert_eq!((r.line, r.character), (7, 0));
}

#[test]
fn header_options_follow_policy() {
    let text = "import Mathlib\nset_option maxHeartbeats 0\nset_option autoImplicit false\ntheorem t : True := trivial";
    assert_eq!(
        check(text).unwrap_err().construct,
        "set_option autoImplicit"
    );
    let policy = GuardPolicy {
        allow_header_options: vec!["autoImplicit".into(), "pp.all".into()],
        ..GuardPolicy::default()
    };
    assert!(screen(text, &policy).is_ok());
    // The policy never relaxes the body, nor allows printing options.
    let body = "theorem t : True := trivial\nset_option autoImplicit false";
    assert_eq!(
        screen(body, &policy).unwrap_err().construct,
        "set_option autoImplicit"
    );
    let pp = "import Mathlib\nset_option pp.all true\ntheorem t : True := trivial";
    assert_eq!(
        screen(pp, &policy).unwrap_err().construct,
        "set_option pp.all"
    );
}

#[test]
fn policy_extends_allowlists() {
    let text = "@[my_attr] theorem t : True := trivial\n#help attr";
    assert_eq!(check(text).unwrap_err().construct, "@[my_attr]");
    let policy = GuardPolicy {
        extra_attributes: vec!["my_attr".into()],
        extra_hash_commands: vec!["#help".into()],
        ..GuardPolicy::default()
    };
    assert!(screen(text, &policy).is_ok());
    // Code attributes stay refused whatever the policy says.
    let policy = GuardPolicy {
        extra_attributes: vec!["extern".into()],
        ..GuardPolicy::default()
    };
    assert_eq!(
        screen("@[extern \"f\"] opaque f : Nat", &policy)
            .unwrap_err()
            .construct,
        "@[extern]"
    );
}

#[test]
fn reasons_explain_the_refusal() {
    let r = assert_rejected("#eval 1", "#eval");
    assert!(r.reason.contains("runs arbitrary code"), "{}", r.reason);
    let r = assert_rejected(
        "set_option pp.notation false in\nexample : True := trivial",
        "set_option pp.notation",
    );
    assert!(r.reason.contains("allowlist"), "{}", r.reason);
    assert!(
        r.to_string()
            .starts_with("1:1: rejected `set_option pp.notation`"),
        "{r}"
    );
}

#[derive(serde::Deserialize)]
struct Statement {
    name: String,
    header: String,
    informal_prefix: String,
    formal_statement: String,
}

fn minif2f() -> Vec<Statement> {
    let dir = leanpool_testkit::data::minif2f_dir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.join("label.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| serde_json::from_str(l).expect("label.jsonl line"))
        .collect()
}

#[test]
fn all_minif2f_statements_pass() {
    let statements = minif2f();
    assert_eq!(statements.len(), 244);
    for s in &statements {
        for text in [
            format!("{}{}", s.header, s.formal_statement),
            format!("{}{}{}", s.header, s.informal_prefix, s.formal_statement),
        ] {
            if let Err(r) = check(&text) {
                panic!("{}: {r}", s.name);
            }
        }
    }
}

#[test]
fn minif2f_statements_with_an_appended_eval_are_rejected() {
    for s in minif2f() {
        let text = format!(
            "{}{}\n#eval IO.Process.exit 0",
            s.header, s.formal_statement
        );
        assert_eq!(check(&text).unwrap_err().construct, "#eval", "{}", s.name);
    }
}

/// Characters that exercise every lexer path.
fn lean_ish() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "#eval",
        "run_cmd",
        "-",
        "/",
        "--",
        "/-",
        "-/",
        "\"",
        "'",
        "\\",
        "{",
        "}",
        "«",
        "»",
        "r",
        "#",
        "`",
        "@[",
        "[",
        "]",
        "(",
        ")",
        ":=",
        "+",
        "native",
        "set_option",
        "maxHeartbeats",
        "import",
        "in",
        "open",
        "x",
        " ",
        "\n",
        "0",
        "1.5e",
        "0x",
        "ℝ",
        "𝓝",
        "\u{200B}",
        "\r",
        "\t",
        "s!",
        "simp",
        "config",
        "notation",
        "attribute",
        "extern",
        "⁻¹'",
        "''",
        "∑'",
        "é",
    ]);
    prop::collection::vec(pieces, 0..40).prop_map(|v| v.concat())
}

/// Like [`lean_ish`] without the refused words, so most texts pass.
fn benign_ish() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "-", "/", "--", "/-", "-/", "\"", "'", "{", "}", "«", "»", "r", "#", "`", "[", "]", "(",
        ")", ":=", "+", "in", "open", "x", " ", "\n", "0", "ℝ", "𝓝", "s!", "⁻¹'", "''", "∑'", "é",
        "#check", "theorem", "by", "#eval",
    ]);
    prop::collection::vec(pieces, 0..30).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, max_global_rejects: 1_000_000, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_arbitrary_text(text in any::<String>()) {
        let _ = check(&text);
    }

    #[test]
    fn never_panics_on_lean_like_text(text in lean_ish()) {
        let first = check(&text);
        // Deterministic, and a rejection points inside the text.
        prop_assert_eq!(&first, &check(&text));
        if let Err(r) = first {
            prop_assert!((r.line as usize) <= text.matches('\n').count());
        }
    }

    #[test]
    fn a_line_comment_hides_anything_without_a_newline(body in "[^\n\r]*") {
        let text = format!("-- {body}\ntheorem t : True := trivial");
        prop_assert_eq!(check(&text), Ok(()));
    }

    #[test]
    fn an_eval_command_after_any_passing_text_is_found(text in benign_ish()) {
        // Whatever came before, once the text is closed off (comments and
        // strings terminated by construction below), `#eval` is seen.
        prop_assume!(check(&text).is_ok());
        let closed = format!("{text}\n{}\n#eval 1", "-/ ".repeat(40));
        prop_assert!(check(&closed).is_err());
    }
}

/// Issue 20 part 7: `native_decide` and its spellings pass only when the
/// screening allows it (`Screening::native_decide`: the operator trusts the
/// compiler *and* the workers are native, where `#print axioms` shows the
/// trust; that conjunction is `leanpool_methods::Policy::screening`'s,
/// tested there); never by default, never from a bare `[guard]` table.
#[test]
fn native_decide_passes_only_with_a_trusted_compiler_on_native_lean() {
    let text = "theorem t : 2 + 2 = 4 := by native_decide\n\
                theorem u : 2 + 2 = 4 := by decide +native\n\
                theorem v : 2 + 2 = 4 := by decide (config := { native := true })";
    let p = GuardPolicy::default();
    assert_eq!(screen(text, &p).unwrap_err().construct, "native_decide");
    let trusted = Screening {
        native_decide: true,
        ..Screening::from(&p)
    };
    assert!(
        screen(text, trusted).is_ok(),
        "{:?}",
        screen(text, trusted).err()
    );
    let untrusted = Screening {
        native_decide: false,
        ..trusted
    };
    assert!(screen(text, untrusted).is_err());
    // The trust route named directly stays refused.
    let direct = "example : True := Lean.ofReduceBool _ _ rfl ▸ trivial";
    assert!(screen(direct, trusted).is_err());
}
