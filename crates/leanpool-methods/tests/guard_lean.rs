//! The guard's tokenizer decisions, checked against the real Lean: for
//! each case, whether Lean actually *executes* a payload `#eval (N : Nat)`
//! (it prints `N` on a line of its own), and whether the guard refuses the
//! case. Each smuggling trick the guard rejects must be one that really
//! runs in Lean (otherwise the rule would be needless), and each lookalike
//! the guard lets through must be one Lean does not run.
//!
//! Needs a Lean (WASM or native, found like the daemon finds it); fails
//! when there is none. One Lean process, file mode, ~1 minute on WASM.

use leanpool_lean::LeanCommand;
use leanpool_screen::guard::{screen, GuardPolicy};
use std::time::Duration;

struct Case {
    /// The payload number `N` in `#eval (N : Nat)`.
    n: u32,
    text: &'static str,
    /// Does Lean run the payload?
    lean_runs: bool,
}

/// In file order. Cases that leave Lean inside an unterminated string come
/// last; the interpolation case reopens a string that the following line
/// closes (`-- "`), which is harmless for the later cases.
const CASES: &[Case] = &[
    Case {
        n: 9000,
        text: "#eval (9000 : Nat)",
        lean_runs: true,
    },
    Case {
        n: 9001,
        text: "＃eval (9001 : Nat)",
        lean_runs: false,
    },
    Case {
        n: 9002,
        text: "#\u{0435}val (9002 : Nat)",
        lean_runs: false,
    },
    Case {
        n: 9003,
        text: "def S := {x : Nat //- \n#eval (9003 : Nat)\n-- -/ x > 0}",
        lean_runs: true,
    },
    Case {
        n: 9004,
        text: "example : ∀ x : Nat, x <-- #eval (9004 : Nat)",
        lean_runs: true,
    },
    Case {
        n: 9005,
        text: "def c := 'x\" #eval (9005 : Nat)",
        lean_runs: true,
    },
    Case {
        n: 9006,
        text: "theorem h : /-- #eval (9006 : Nat) -/ True := trivial",
        lean_runs: false,
    },
    Case {
        n: 9007,
        text: "-- #eval (9007 : Nat)",
        lean_runs: false,
    },
    Case {
        n: 9008,
        text: "/- /- -/ #eval (9008 : Nat) -/",
        lean_runs: false,
    },
    Case {
        n: 9009,
        text: "def s9 := \"#eval (9009 : Nat)\"",
        lean_runs: false,
    },
    Case {
        n: 9010,
        text: "open Lean in #eval (9010 : Nat)",
        lean_runs: true,
    },
    Case {
        n: 9011,
        text: "set_option pp.all true in\n#eval (9011 : Nat)",
        lean_runs: true,
    },
    // Issue 10: a comment glued to a symbol is a comment for Lean.
    Case {
        n: 9015,
        text: "example : True =-- \"\n#eval (9015 : Nat)\n-- \"",
        lean_runs: true,
    },
    // Issue 10: `/--/` opens a doc comment (its body starts after `/--`).
    Case {
        n: 9016,
        text: "/--/ \"\n-/ #eval (9016 : Nat)\n-- \"\ntheorem x9016 : True := trivial",
        lean_runs: true,
    },
    // A block comment's body starts after `/-X`: `/-/- -/` is whole.
    // Core's `]'` token (`a[i]'h`): Lean reads `]'`, a string `"' /- "`,
    // then the payload as a command; a guard that took `'"'` for a
    // character literal saw a comment hiding it (lexdiff bench hole).
    Case {
        n: 9018,
        text: "def c18 : Nat := 0]'\"' /- \"\n#eval (9018 : Nat)\n-- -/",
        lean_runs: true,
    },
    // Core Lean has no `∑` token: its lexer fails there and the error
    // recovery restarts inside what follows, so a raw string a naive lexer
    // opens after `∑` is no literal for Lean, and the payload on the next
    // line runs (lexdiff bench hole, shard 1). The guard refuses a literal,
    // name or raw string glued after a non-ASCII symbol that is not a core
    // token.
    Case {
        n: 9019,
        text: "theorem s19 : 1 = 1∑r#\" \"\n#eval (9019 : Nat)\n-- \"#",
        lean_runs: true,
    },
    Case {
        n: 9017,
        text: "/-/- -/ #eval (9017 : Nat)\n-- -/",
        lean_runs: true,
    },
    Case {
        n: 9012,
        text: "def s12 := s!\"{x)} #eval (9012 : Nat) \"\n-- \"",
        lean_runs: true,
    },
    Case {
        n: 9013,
        text: "def s13 := \"\\q #eval (9013 : Nat)",
        lean_runs: true,
    },
    Case {
        n: 9014,
        text: "\"#eval (9014 : Nat)",
        lean_runs: true,
    },
];

#[tokio::test(flavor = "current_thread")]
async fn guard_decisions_match_what_lean_executes() {
    // The guard side first: cheap, and independent of Lean.
    for c in CASES {
        let refused = screen(c.text, &GuardPolicy::default()).is_err();
        assert_eq!(refused, c.lean_runs, "guard on case {}:\n{}", c.n, c.text);
    }

    let lean = LeanCommand::detect().expect("a Lean installation (run scripts/setup)");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("smuggle.lean");
    let text: Vec<&str> = CASES.iter().map(|c| c.text).collect();
    std::fs::write(&file, text.join("\n\n") + "\n").unwrap();

    let mut cmd = lean.command(&[file.to_str().unwrap()]);
    cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(900), cmd.output())
        .await
        .expect("Lean finished within 15 minutes")
        .expect("Lean started");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Sanity: Lean really elaborated the file (the control payload ran and
    // an error for a later case was reported).
    assert!(
        stdout.contains("invalid escape sequence"),
        "Lean output:\n{stdout}"
    );
    for c in CASES {
        let ran = stdout.lines().any(|l| l.trim() == c.n.to_string());
        assert_eq!(
            ran, c.lean_runs,
            "Lean on case {}:\n{}\nLean output:\n{stdout}",
            c.n, c.text
        );
    }
}
