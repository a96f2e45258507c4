//! `leanpool opt`/`normalize` through the daemon.

use super::*;

/// `leanpool opt --gted` and `leanpool normalize --json` with `--socket`,
/// on this binary's warm worker (`cli_terms` runs `opt` on a local worker:
/// every local run costs a worker start).
pub(crate) fn cli_opt_and_normalize_through_the_daemon(d: &Daemon, dir: &std::path::Path) {
    let f = dir.join("terms.lean");
    std::fs::write(
        &f,
        "theorem t (a b : Nat) (h : a < b) : ∀ c, a + c < b + c := by\n  omega\n",
    )
    .unwrap();
    let g = cli_json(&d.socket, &[&"opt", &"--gted", &f], 0);
    assert_eq!(g["content"], "theorem");
    assert_eq!(g["children"][0]["children"][0]["variable_freecost"], true);
    assert_eq!(g["children"][2]["children"][0]["hypothesis_freecost"], true);

    let n = cli_json(&d.socket, &[&"normalize", &"--json", &f], 0);
    assert_eq!(n["check"]["status"], "ok");
    assert_eq!(
        n["normalized"]["statement"],
        "theorem stmt (a : Nat) (b : Nat) (h : a < b) : ∀ (c : Nat), a + c < b + c"
    );
    assert_eq!(n["normalized"]["binders"][2]["is_prop"], true);
}

/// `leanpool check FILE --socket`: exit 0 for ok, 1 otherwise.
pub(crate) fn cli_check_exit_codes(d: &Daemon, dir: &std::path::Path) {
    for (name, text, code, status) in [
        ("good.lean", ok(5), 0, "ok"),
        ("bad.lean", bad(5), 1, "error"),
    ] {
        let f = dir.join(name);
        std::fs::write(&f, &text).unwrap();
        let r = cli_json(&d.socket, &[&"check", &f, &"--json"], code);
        assert_eq!(r["status"], status);
    }
}
