//! Unit tests of `verify` (moved out of `verify.rs`).

use super::*;
use crate::method::PoolMethod;
use leanpool_protocol::{method, VerifyStatus};

#[test]
fn verify_that_does_not_assemble_is_answered_without_queueing() {
    let p = VerifyParams::new("theorem t : True", "trivial\n#eval 1");
    match method::Verify::prepare(p) {
        Err(r) => assert_eq!(r.status, VerifyStatus::Rejected, "{r:?}"),
        Ok((_, a)) => panic!("assembled: {}", a.text),
    }
}

fn params(statement: &str, proof: &str) -> VerifyParams {
    VerifyParams::new(statement, proof).with_header("import Init\n")
}

#[test]
fn assembles_and_strips_sorry() {
    for s in [
        "theorem t (n : Nat) : n + 0 = n := sorry",
        "theorem t (n : Nat) : n + 0 = n := by sorry",
        "theorem t (n : Nat) : n + 0 = n",
    ] {
        let a = assemble(&params(s, "by\n  simp")).unwrap();
        assert_eq!(
            a.text,
            "import Init\ntheorem t (n : Nat) : n + 0 = n := by\n  simp\n"
        );
        assert_eq!(a.statement_line, 1);
        assert_eq!(
            a.proof_start,
            Position {
                line: 1,
                character: 35
            }
        );
        assert_eq!(
            a.trailer_lines[..3],
            crate::verdict::trailer::declaration_lines("t")
        );
        assert_eq!(
            a.trailer_lines[5],
            format!(
                "theorem {REFERENCE} (n : Nat) : n + 0 = n := {}",
                reference::ANY
            )
        );
        assert_eq!(
            a.name_position,
            Position {
                line: 1,
                character: 8
            }
        );
        assert!(matches!(
            a.place(Position {
                line: 2,
                character: 2
            }),
            Place::Proof(Position {
                line: 1,
                character: 2
            })
        ));
        assert!(matches!(
            a.place(Position {
                line: 1,
                character: 36
            }),
            Place::Proof(Position {
                line: 0,
                character: 1
            })
        ));
        assert!(matches!(
            a.place(Position {
                line: 1,
                character: 8
            }),
            Place::Statement(Position {
                line: 0,
                character: 8
            })
        ));
    }
}

#[test]
fn context_goes_between_header_and_statement() {
    let p = params("theorem t : True", "aux").with_context("theorem aux : True := trivial");
    let a = assemble(&p).unwrap();
    assert_eq!(
        a.text,
        "import Init\ntheorem aux : True := trivial\ntheorem t : True := aux\n"
    );
    assert_eq!(a.helpers.len(), 1);
    assert_eq!(&a.text[a.helpers[0].1..a.helpers[0].1 + 3], "aux");
    assert_eq!(
        a.trailer_lines[..3],
        crate::verdict::trailer::declaration_lines("aux")
    );
    let at = |line, character| Position { line, character };
    assert!(matches!(a.place(at(1, 8)), Place::Context(p) if p == at(0, 8)));
    assert!(matches!(a.place(at(2, 8)), Place::Statement(p) if p == at(0, 8)));
    assert!(matches!(a.place(at(0, 1)), Place::Header));
    // The reference is a theorem (a `let` is stored as `have` in both),
    // and the comparison starts at `comparison_line`.
    let a = assemble(&params("theorem t : let n := 1; n = 1", "rfl")).unwrap();
    assert!(a
        .trailer_lines
        .iter()
        .any(|l| l.starts_with(&format!("theorem {REFERENCE} : let n := 1;"))));
    let first = &a.trailer_lines[a.comparison_line as usize];
    assert!(first.contains(&reference::marker(0)), "{first}");
}

#[test]
fn statements_must_be_one_theorem() {
    assert!(assemble(&params("def t : Nat", "1")).is_err());
    assert!(assemble(&params("theorem t : True := trivial", "trivial")).is_err());
    assert!(assemble(&params("theorem t : True\ntheorem u : False", "trivial")).is_err());
    assert!(assemble(&params("theorem t (x : Nat := 3) : x = x", "rfl")).is_ok());
}

#[test]
fn a_refusal_names_the_part_at_fault() {
    let part = |p: VerifyParams| assemble(&p).unwrap_err().part;
    let bad_header = params("theorem t : True", "trivial").with_header("#eval 1\n");
    assert_eq!(part(bad_header), Part::Header);
    assert_eq!(part(params("def t : Nat", "1")), Part::Statement);
    assert_eq!(
        part(params("theorem t : True", "rfl\n#check 1")),
        Part::Proof
    );
    let e = split_statement_file("def x := 1").unwrap_err();
    assert_eq!(
        (e.part, e.to_string().as_str()),
        (Part::StatementFile, "the statement file holds no `theorem`")
    );
}

#[test]
fn headers_declaring_things_are_refused() {
    let with = |h: &str| params("theorem t : True", "trivial").with_header(h);
    for h in [
        "import Init
axiom cheat : False
",
        "import Init
#eval 1
",
        "theorem x : True := trivial
",
        "instance : Inhabited Nat := ⟨0⟩
",
        "attribute [simp] Nat.add_comm
",
    ] {
        assert!(assemble(&with(h)).is_err(), "{h:?} should be refused");
    }
    for h in [
        "import Init
open Nat
set_option maxHeartbeats 400000
",
        "open scoped Nat in
",
        "universe u
variable (n : Nat)
namespace A
",
    ] {
        assert!(assemble(&with(h)).is_ok(), "{h:?}");
    }
    let (h, st) = split_statement_file(
        "import Init
open Nat
-- theorem no
theorem t : True := sorry
",
    )
    .unwrap();
    assert_eq!(
        (h.as_str(), st.as_str()),
        (
            "import Init\nopen Nat\n-- theorem no\n",
            "theorem t : True := sorry"
        )
    );
}
