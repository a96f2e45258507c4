//! `equiv` and `leanpool gted pairs` on real Lean (the WASM build
//! installed by `scripts/setup`; FAILS when it is missing). One daemon,
//! one worker for the whole file.

mod daemon_support;

use daemon_support::{connect_expecting_lean, Daemon, Lean, BIN};
use leanpool_protocol::method;
use leanpool_protocol::{EquivParams, EquivResult, EquivStatus};
use leanpool_rpc::Client;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

const CONFIG: &str = "[pool]\nmax_workers = 1\nmax_workers_per_key = 1\nspares_per_key = 0\nmax_queue_per_key = 64\nstart_timeout_ms = 600000\ndefault_timeout_ms = 300000\ntimeout_grace_ms = 5000\n[guard]\nallow_header_options = [\"synthInstance.maxSize\"]\n";

/// An option only the daemon's `[guard]` allows (`CONFIG`; not built in).
const OPTION: &str = "synthInstance.maxSize";

fn lines(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn write_lines(p: &Path, items: &[Value]) {
    std::fs::write(
        p,
        items.iter().map(|v| format!("{v}\n")).collect::<String>(),
    )
    .unwrap();
}

/// Runs `leanpool ARGS`: exit code, stdout, stderr.
fn leanpool(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `leanpool gted pairs`: exit code, stdout (the summary), stderr.
fn pairs(socket: &Path, input: &Path, output: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args: Vec<&std::ffi::OsStr> = vec!["gted".as_ref(), "pairs".as_ref()];
    args.extend([input.as_os_str(), output.as_os_str()]);
    args.extend(["--socket".as_ref(), socket.as_os_str()]);
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    leanpool(&args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gted_pairs_and_equiv_on_real_lean() {
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(dir.path(), CONFIG, Lean::Real);
    let c = connect_expecting_lean(&d).await;
    equiv_verdicts(&c).await;
    candidate_false_hypothesis_is_not_equivalent(&c).await;
    candidate_assuming_the_conclusion_is_not_equivalent(&c).await;
    candidate_true_is_not_equivalent_to_an_easy_fact(&c).await;
    candidate_closing_the_theorem_early_is_refused(&c).await;
    candidate_sorry_is_an_error(&c).await;
    free_names_are_not_shared_by_the_statements(&c).await;
    attempts_are_screened_under_the_configured_guard(&c).await;
    equiv_from_the_cli_and_batch(&d, dir.path());
    gted_pairs(&d, dir.path());
}

fn eq(a: &str, b: &str) -> EquivParams {
    EquivParams::new("", a, b)
}

async fn equiv(c: &Client, a: &str, b: &str) -> EquivResult {
    let r = c.request::<method::Equiv>(&eq(a, b)).await.unwrap();
    eprintln!("[equiv] {}", serde_json::to_string(&r).unwrap());
    r
}

/// The verdicts, each with the Lean-checked evidence it rests on.
async fn equiv_verdicts(c: &Client) {
    // Renamed binders: definitionally the same proposition.
    let r = equiv(
        c,
        "theorem a (a b : Nat) : a + b = b + a",
        "theorem b (x y : Nat) : x + y = y + x := by sorry",
    )
    .await;
    assert_eq!(r.status, EquivStatus::Equivalent, "{r:?}");
    let ev = r.evidence.as_ref().unwrap();
    assert_eq!(
        (ev.attempt.as_str(), ev.proof.as_str()),
        ("definitional", "Iff.rfl")
    );
    // `succ` for `+ 1`: definitional too.
    let r = equiv(
        c,
        "theorem a (n : Nat) : n < n + 1",
        "theorem b (k : Nat) : k < Nat.succ k",
    )
    .await;
    assert_eq!(r.status, EquivStatus::Equivalent, "{r:?}");
    // Reordered binders, `<` as `¬ ≥`: the tactics.
    let r = equiv(
        c,
        "theorem a (a b : Nat) (h : a + 2 = b) : a < b",
        "theorem b (y x : Nat) (h : x + 2 = y) : ¬ (x ≥ y)",
    )
    .await;
    assert_eq!(r.status, EquivStatus::Equivalent, "{r:?}");
    assert_eq!(r.evidence.as_ref().unwrap().attempt, "tactics", "{r:?}");
    // Hypotheses in another order.
    let hyps = eq(
        "theorem a (a b : Nat) (h₁ : a = 2) (h₂ : b = 3) : a * b = 6",
        "theorem b (a b : Nat) (h₂ : b = 3) (h₁ : a = 2) : a * b = 6",
    );
    let r = c.request::<method::Equiv>(&hyps).await.unwrap();
    assert_eq!(r.status, EquivStatus::Equivalent, "{r:?}");
    assert_eq!(r.evidence.as_ref().unwrap().attempt, "tactics", "{r:?}");
    // A false candidate: the reference proved, the candidate refuted.
    let r = equiv(
        c,
        "theorem a (x : Nat) (h₀ : x + 3 = 7) : x = 4",
        "theorem b (x : Nat) (h₀ : x + 3 = 7) : x = 5",
    )
    .await;
    assert_eq!(r.status, EquivStatus::NotEquivalent, "{r:?}");
    let ev = r.evidence.as_ref().unwrap();
    assert_eq!(ev.attempt, "refute_b");
    assert!(
        ev.statement.starts_with("theorem leanpool_equiv : ¬ ("),
        "{r:?}"
    );
    // Beyond the battery either way: unknown, every attempt listed.
    let r = equiv(
        c,
        "theorem a (f : Nat → Nat) (h : ∀ x, f x = f (x + 1)) : f 0 = f 5",
        "theorem b (f : Nat → Nat) (h : ∀ x, f x = f (x + 1)) : f 0 = f 6",
    )
    .await;
    assert_eq!(r.status, EquivStatus::Unknown, "{r:?}");
    assert_eq!(r.attempts.len(), 4, "{r:?}");
    // Same request, same bytes (the second one from the result cache or
    // not, the verdict and evidence are the same).
    let raw = || async {
        let v = serde_json::to_value(&hyps).unwrap();
        let mut r: Value =
            serde_json::from_str(c.call_raw("equiv", v).await.unwrap().get()).unwrap();
        r.as_object_mut().unwrap().remove("cached");
        r
    };
    assert_eq!(raw().await, raw().await);
    // A statement that does not elaborate: error, Lean's message kept.
    let r = equiv(c, "theorem a : undefined_thing = 1", "theorem b : 1 = 1").await;
    assert_eq!(r.status, EquivStatus::Error, "{r:?}");
    let said = |r: &EquivResult, what: &str| r.diagnostics.iter().any(|d| d.message.contains(what));
    assert!(said(&r, "undefined_thing"), "{r:?}");
    assert!(r.statement.is_some());
}

const EASY: &str = "theorem a (n : Nat) (h : n > 3) : n + n > 6";

/// The attack: a candidate whose hypothesis is `False` is true whatever
/// its conclusion; against a reference that `omega` proves, a battery
/// that may close a direction without the other side would answer
/// `equivalent`. Rule: a direction is `apply` of the other side, its
/// leftovers closed by `assumption` only.
async fn candidate_false_hypothesis_is_not_equivalent(c: &Client) {
    let r = equiv(c, EASY, "theorem b (n : Nat) (h : False) : n + n > 6").await;
    assert_eq!(r.status, EquivStatus::Unknown, "{r:?}");
}

/// The attack: the candidate assumes the reference's conclusion (a
/// tautology); `apply` leaves that conclusion as a goal, which `omega`
/// would prove from the reference's hypotheses. Same rule.
async fn candidate_assuming_the_conclusion_is_not_equivalent(c: &Client) {
    let b = "theorem b (n : Nat) (h : n > 3) (h2 : n + n > 6) : n + n > 6";
    let r = equiv(c, EASY, b).await;
    assert_eq!(r.status, EquivStatus::Unknown, "{r:?}");
}

/// The attack: `True` against a fact `decide` proves. Same rule.
async fn candidate_true_is_not_equivalent_to_an_easy_fact(c: &Client) {
    let r = equiv(c, "theorem a : 2 + 2 = 4", "theorem b : True").await;
    assert_eq!(r.status, EquivStatus::Unknown, "{r:?}");
}

/// The attack: a candidate that ends leanpool's theorem (its own proof,
/// a second command) or closes leanpool's parenthesis around it (`False)
/// ∨ (True`, which makes leanpool's theorem `(False) ∨ (True) ↔ (True)`).
/// Rules: `statement_parts` (one theorem, no proof but `sorry`) and the
/// bracket nesting check. Refused before Lean.
async fn candidate_closing_the_theorem_early_is_refused(c: &Client) {
    for (b, why) in [
        ("theorem b : False) ∨ (True", "bracket"),
        ("theorem b : (False)) ∨ ((True", "bracket"),
        ("theorem b : True := trivial", "statement"),
        ("theorem b : True\ntheorem c : False", "statement"),
    ] {
        let r = equiv(c, "theorem a : True", b).await;
        assert_eq!(r.status, EquivStatus::Rejected, "{b:?}: {r:?}");
        assert!(
            r.reason.as_deref().unwrap_or("").contains(why),
            "{b:?}: {r:?}"
        );
    }
}

/// The attack: `sorry` in the candidate's statement. `verify`'s verdict
/// rules judge every attempt: never `equivalent`.
async fn candidate_sorry_is_an_error(c: &Client) {
    for b in [
        "theorem b (n : Nat) (h : sorry) : n + 0 = n",
        "theorem b (n : Nat) : n + 0 = (sorry : Nat)",
    ] {
        let r = equiv(c, "theorem a (n : Nat) : n + 0 = n", b).await;
        assert_eq!(r.status, EquivStatus::Error, "{b:?}: {r:?}");
    }
}

/// The attack: a name left free in both statements. With `autoImplicit`
/// on it would be bound once by leanpool's theorem and shared by both
/// sides (`∀ n, (A n ↔ B n)` is not the statements' meaning); leanpool's
/// fixed option line turns it off, so such statements do not elaborate.
async fn free_names_are_not_shared_by_the_statements(c: &Client) {
    let r = equiv(c, "theorem a : n + 0 = n", "theorem b : n + 0 = n").await;
    assert_eq!(r.status, EquivStatus::Error, "{r:?}");
    let said = r
        .diagnostics
        .iter()
        .any(|d| d.message.contains("autoImplicit"));
    assert!(said, "{r:?}");
}

/// Every attempt is screened again under the daemon's configured guard
/// policy, the one `check` and `verify` get: an option that only `[guard]
/// allow_header_options` allows passes in the header. Screened under the
/// built-in policy instead, every attempt would be `rejected` (the pair
/// needs two attempts: `definitional` fails, `tactics` proves it).
async fn attempts_are_screened_under_the_configured_guard(c: &Client) {
    assert!(CONFIG.contains(OPTION));
    let header = format!("set_option {OPTION} 256\n");
    let text = format!("{header}theorem t : True := trivial\n");
    let builtin = leanpool_screen::GuardPolicy::default();
    assert!(
        leanpool_screen::screen(&text, &builtin).is_err(),
        "the built-in guard allows `{OPTION}`: pick an option only [guard] allows"
    );
    let mut p = eq(
        "theorem a (a b : Nat) (h₁ : a = 2) (h₂ : b = 3) : a * b = 6",
        "theorem b (a b : Nat) (h₂ : b = 3) (h₁ : a = 2) : a * b = 6",
    );
    p.header = header;
    let r = c.request::<method::Equiv>(&p).await.unwrap();
    assert_eq!(r.status, EquivStatus::Equivalent, "{r:?}");
    assert_eq!(r.evidence.as_ref().unwrap().attempt, "tactics", "{r:?}");
}

/// `leanpool equiv A B --socket` and `leanpool batch --method equiv`.
fn equiv_from_the_cli_and_batch(d: &Daemon, dir: &Path) {
    let (a, b) = (dir.join("a.lean"), dir.join("b.lean"));
    std::fs::write(&a, "theorem a (n : Nat) : n < n + 1 := by sorry\n").unwrap();
    std::fs::write(&b, "theorem b (k : Nat) : k < Nat.succ k\n").unwrap();
    let args = [
        "equiv".as_ref(),
        a.as_os_str(),
        b.as_os_str(),
        "--socket".as_ref(),
    ];
    let mut args: Vec<&std::ffi::OsStr> = args.to_vec();
    args.push(d.socket.as_os_str());
    let (code, out, err) = leanpool(&args);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("status: equivalent"), "{out}");
    let (input, output) = (dir.join("eq.jsonl"), dir.join("eq.out.jsonl"));
    write_lines(
        &input,
        &[json!({"id": 1, "a": "theorem a : 1 + 1 = 2", "b": "theorem b : 2 = 1 + 1"})],
    );
    let (code, _, err) = leanpool(&[
        "batch".as_ref(),
        input.as_os_str(),
        output.as_os_str(),
        "--socket".as_ref(),
        d.socket.as_os_str(),
        "--method".as_ref(),
        "equiv".as_ref(),
    ]);
    assert_eq!(code, 0, "{err}");
    let out = lines(&output);
    assert_eq!(out[0]["id"], json!(1));
    assert!(out[0]["result"]["status"].is_string(), "{}", out[0]);
}

/// `gted pairs`: trees of both sides, a renamed candidate scores 1, a
/// candidate that does not elaborate scores 0, a reference that does not
/// elaborate is the line's error; resumable; the summary counts labels.
fn gted_pairs(d: &Daemon, dir: &Path) {
    let input = dir.join("pairs.jsonl");
    let output = dir.join("pairs.out.jsonl");
    write_lines(
        &input,
        &[
            json!({"id": "renamed", "reference": "theorem r (a b : Nat) (h : a < b) : a + 1 ≤ b := by sorry",
                   "candidate": "theorem c (x y : Nat) (hxy : x < y) : x + 1 ≤ y := by sorry", "label": true}),
            json!({"id": 2, "header": "open Nat", "reference": "theorem r (n : Nat) : n + 0 = n := by sorry",
                   "candidate": "theorem c (n : Nat) : n + 0 = \"x\" := by sorry", "label": false}),
            json!({"id": "bad_reference", "reference": "theorem r : (1 : Nat) = \"x\" := by sorry",
                   "candidate": "theorem c : 1 = 1 := by sorry"}),
            json!({"id": "different", "reference": "theorem r (a b : Nat) : a + b = b + a := by sorry",
                   "candidate": "theorem c (a : Nat) : a * a = a + 7 := by sorry", "label": false}),
        ],
    );
    let (code, summary, err) = pairs(
        &d.socket,
        &input,
        &output,
        &["--concurrency", "2", "--equiv"],
    );
    assert_eq!(code, 0, "{err}\n{}", d.logs());
    lines_scored_as_documented(&lines(&output));
    assert!(
        summary.contains("4 lines in") && summary.contains("3 scored, 1 errors; 3 labelled"),
        "{summary}"
    );
    assert!(
        summary.contains("| GTED (alpha) >= 0.754 | 1 | 2 | 0 | 0 | 1.000 |"),
        "{summary}"
    );
    assert!(
        summary.contains("| equiv (equivalent ⇒ same) | 1 | 2 | 0 | 0 | 1.000 |"),
        "{summary}"
    );
    torn_pairs_output_resumes(d, &input, &output);
}

/// `gted pairs`' lines for the four pairs: in order; the renamed pair
/// scores 1 and is equivalent; an ill-typed candidate scores 0; a bad
/// reference is the line's error; a different pair scores below the
/// threshold and is refuted.
fn lines_scored_as_documented(out: &[Value]) {
    let ids: Vec<&Value> = out.iter().map(|l| &l["id"]).collect();
    assert_eq!(
        ids,
        [
            &json!("renamed"),
            &json!(2),
            &json!("bad_reference"),
            &json!("different")
        ]
    );
    assert_eq!(out[0]["similarity"], json!(1.0), "{}", out[0]);
    assert_eq!(out[0]["same"], json!(true));
    assert_eq!(out[0]["equiv"]["status"], json!("equivalent"), "{}", out[0]);
    let refuted = &out[3]["equiv"]["status"];
    assert_eq!(refuted, &json!("not_equivalent"), "{}", out[3]);
    assert_eq!(out[0]["reference"]["status"], json!("ok"), "{}", out[0]);
    assert!(out[0]["reference"]["tree"].is_object() && out[0]["candidate"]["tree"].is_object());
    assert_eq!(out[1]["similarity"], json!(0.0), "{}", out[1]);
    assert_eq!(out[1]["candidate"]["status"], json!("error"));
    assert!(out[1]["candidate"]["tree"].is_null());
    assert!(out[2]["similarity"].is_null(), "{}", out[2]);
    assert!(
        out[2]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the reference does not elaborate"),
        "{}",
        out[2]
    );
    let s = out[3]["similarity"].as_f64().unwrap();
    assert!(s > 0.0 && s < 0.754, "{}", out[3]);
}

/// Resume: a torn last line is cut and completed to the same bytes.
fn torn_pairs_output_resumes(d: &Daemon, input: &Path, output: &Path) {
    let full = std::fs::read_to_string(output).unwrap();
    let first: String = full.lines().take(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(output, format!("{first}{{\"id\":2,\"simil")).unwrap();
    let (code, _, err) = pairs(&d.socket, input, output, &["--equiv"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("3 answered now") && err.contains("1 already"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(output).unwrap(),
        full,
        "resumed file differs"
    );
}
