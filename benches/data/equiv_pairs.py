#!/usr/bin/env python3
"""Writes equiv_pairs.jsonl: core-Lean reference/candidate statement pairs
with human-style labels (same meaning?), for `leanpool gted pairs --equiv`
(benches/README.md, "GTED and equiv on labelled pairs").

Each family is one reference with candidates that mean the same (renamed or
reordered binders, hypotheses in another order, `<` as `¬ ≥`, `succ` as
`+ 1`, sides of an equation swapped, `2 * n` as `n + n`) labelled true, and
candidates that do not (a changed constant, relation or hypothesis)
labelled false. The label is a human judgement of "the same statement",
not of logical equivalence: the last two families (f26, f27) pair a true
fact with a different true fact, logically equivalent but not the same
statement, so they are labelled false. `equiv` (the landed method) answers
`equivalent` for such a pair only when Lean finds the two propositions
definitionally equal (`2 + 2 = 4` and `2 * 2 = 4` both reduce to `4 = 4`:
a false positive of `equiv` against these labels, reported as such), and
`unknown` otherwise (`n + 0 = n` against `0 + k = k`): it does not prove
each side outright the way BEq's "equivalent as propositions" would.
Run: python3 benches/data/equiv_pairs.py > benches/data/equiv_pairs.jsonl
"""
import json

N = "Nat"
FAMILIES = [
    ("(a b : Nat) (h : a < b) : a + 1 ≤ b",
     ["(x y : Nat) (hxy : x < y) : x + 1 ≤ y", "(y x : Nat) (h : ¬ y ≤ x) : Nat.succ x ≤ y"],
     ["(a b : Nat) (h : a < b) : a + 2 ≤ b", "(a b : Nat) (h : a ≤ b) : a + 1 ≤ b"]),
    ("(n : Nat) (h₀ : n % 2 = 1) : (n + 1) % 2 = 0",
     ["(m : Nat) (h : m % 2 = 1) : (m + 1) % 2 = 0", "(n : Nat) (h₀ : n % 2 = 1) : (Nat.succ n) % 2 = 0"],
     ["(n : Nat) (h₀ : n % 2 = 1) : (n + 2) % 2 = 0", "(n : Nat) (h₀ : n % 2 = 0) : (n + 1) % 2 = 0"]),
    ("(x : Nat) (h₀ : x + 3 = 7) : x = 4",
     ["(y : Nat) (h : 3 + y = 7) : y = 4", "(x : Nat) (h₀ : 7 = x + 3) : 4 = x"],
     ["(x : Nat) (h₀ : x + 3 = 7) : x = 5", "(x : Nat) (h₀ : x + 4 = 7) : x = 4"]),
    ("(a b : Nat) (h₁ : a = 2) (h₂ : b = 3) : a * b = 6",
     ["(a b : Nat) (h₂ : b = 3) (h₁ : a = 2) : a * b = 6", "(b a : Nat) (hb : b = 3) (ha : a = 2) : b * a = 6"],
     ["(a b : Nat) (h₁ : a = 2) (h₂ : b = 3) : a * b = 5", "(a b : Nat) (h₁ : a = 2) (h₂ : b = 4) : a * b = 6"]),
    ("(n : Nat) (h : 0 < n) : n - 1 + 1 = n",
     ["(n : Nat) (h : n ≠ 0) : n - 1 + 1 = n", "(k : Nat) (hk : 1 ≤ k) : k - 1 + 1 = k"],
     ["(n : Nat) : n - 1 + 1 = n", "(n : Nat) (h : 0 < n) : n + 1 - 1 = n + 1"]),
    ("(a b : Nat) : a + b = b + a",
     ["(x y : Nat) : x + y = y + x", "(a b : Nat) : b + a = a + b"],
     ["(a b : Nat) : a - b = b - a", "(a b : Nat) : a + b = a * b"]),
    ("(a b c : Nat) (h₀ : a ≤ b) : a + c ≤ b + c",
     ["(a b c : Nat) (h₀ : b ≥ a) : c + a ≤ c + b", "(x y z : Nat) (h : x ≤ y) : x + z ≤ y + z"],
     ["(a b c : Nat) (h₀ : a ≤ b) : a + c < b + c", "(a b c : Nat) (h₀ : a ≤ b) : a * c < b * c"]),
    ("(x : Nat) (h₀ : 2 * x + 1 = 9) : x = 4",
     ["(x : Nat) (h₀ : x + x + 1 = 9) : x = 4", "(n : Nat) (h : 1 + 2 * n = 9) : n = 4"],
     ["(x : Nat) (h₀ : 2 * x + 1 = 9) : x = 3", "(x : Nat) (h₀ : 2 * x + 1 = 11) : x = 4"]),
    ("(n : Nat) (h₀ : n < 3) : n * n < 9",
     ["(n : Nat) (h₀ : n ≤ 2) : n * n < 9", "(m : Nat) (h : 3 > m) : m * m < 9"],
     ["(n : Nat) (h₀ : n < 3) : n * n < 4", "(n : Nat) (h₀ : n < 4) : n * n < 9"]),
    ("(a b : Nat) (h₀ : a + b = 10) (h₁ : a = 4) : b = 6",
     ["(a b : Nat) (h₁ : a = 4) (h₀ : a + b = 10) : b = 6", "(x y : Nat) (h : x = 4) (h' : x + y = 10) : y = 6"],
     ["(a b : Nat) (h₀ : a + b = 10) (h₁ : a = 4) : b = 5", "(a b : Nat) (h₀ : a + b = 10) : b = 6"]),
    ("(a : Nat) (h₀ : a % 4 = 3) : a % 2 = 1",
     ["(a : Nat) (h₀ : a % 4 = 3) : a % 2 ≠ 0", "(n : Nat) (h : n % 4 = 3) : n % 2 = 1"],
     ["(a : Nat) (h₀ : a % 4 = 3) : a % 2 = 0", "(a : Nat) (h₀ : a % 4 = 2) : a % 2 = 1"]),
    ("(x y : Nat) (h₀ : x = y + 2) (h₁ : y = 5) : x = 7",
     ["(x y : Nat) (h₁ : y = 5) (h₀ : x = y + 2) : x = 7", "(y x : Nat) (h₁ : y = 5) (h₀ : x = 2 + y) : x = 7"],
     ["(x y : Nat) (h₀ : x = y + 2) (h₁ : y = 5) : x = 8", "(x y : Nat) (h₀ : x = y + 2) (h₁ : y = 6) : x = 7"]),
    ("(n : Nat) (h₀ : n ≥ 1) : 2 ^ n ≥ 2",
     ["(n : Nat) (h₀ : 1 ≤ n) : 2 ≤ 2 ^ n", "(n : Nat) (h₀ : 0 < n) : 2 ^ n ≥ 2"],
     ["(n : Nat) (h₀ : n ≥ 1) : 2 ^ n ≥ 4", "(n : Nat) : 2 ^ n ≥ 2"]),
    ("(a b : Nat) (h₀ : a < b) (h₁ : b < 5) : a < 4",
     ["(a b : Nat) (h₁ : b < 5) (h₀ : a < b) : a < 4", "(a b : Nat) (h₀ : ¬ b ≤ a) (h₁ : b < 5) : a ≤ 3"],
     ["(a b : Nat) (h₀ : a < b) (h₁ : b < 5) : a < 3", "(a b : Nat) (h₀ : a ≤ b) (h₁ : b < 5) : a < 4"]),
    ("(x : Nat) (h₀ : x * 3 = 12) : x = 4",
     ["(x : Nat) (h₀ : 3 * x = 12) : x = 4", "(y : Nat) (h : 12 = y * 3) : y = 4"],
     ["(x : Nat) (h₀ : x * 3 = 12) : x = 3", "(x : Nat) (h₀ : x * 3 = 15) : x = 4"]),
    ("(a b : Nat) (h₀ : a = b) : a + a = 2 * b",
     ["(a b : Nat) (h₀ : b = a) : 2 * b = a + a", "(p q : Nat) (h : p = q) : p + p = 2 * q"],
     ["(a b : Nat) (h₀ : a = b) : a + a = 2 * b + 1", "(a b : Nat) (h₀ : a ≤ b) : a + a = 2 * b"]),
    ("(n : Nat) (h₀ : n % 3 = 0) (h₁ : n < 10) (h₂ : 7 < n) : n = 9",
     ["(n : Nat) (h₂ : 7 < n) (h₁ : n < 10) (h₀ : n % 3 = 0) : n = 9", "(m : Nat) (h : m % 3 = 0) (h' : m ≤ 9) (h'' : m ≥ 8) : m = 9"],
     ["(n : Nat) (h₀ : n % 3 = 0) (h₁ : n < 10) (h₂ : 7 < n) : n = 8", "(n : Nat) (h₀ : n % 3 = 0) (h₁ : n < 10) : n = 9"]),
    ("(a b : Nat) : max a b ≥ a",
     ["(a b : Nat) : a ≤ max a b", "(x y : Nat) : max x y ≥ x"],
     ["(a b : Nat) : min a b ≥ a", "(a b : Nat) : max a b > a"]),
    ("(n : Nat) (h₀ : n + n = 10) : n = 5",
     ["(n : Nat) (h₀ : 2 * n = 10) : n = 5", "(m : Nat) (h : m + m = 10) : 5 = m"],
     ["(n : Nat) (h₀ : n + n = 10) : n = 4", "(n : Nat) (h₀ : n + n = 12) : n = 5"]),
    ("(x : Int) (h₀ : x + 5 = 2) : x = -3",
     ["(y : Int) (h : 5 + y = 2) : y = -3", "(x : Int) (h₀ : x + 5 = 2) : -3 = x"],
     ["(x : Int) (h₀ : x + 5 = 2) : x = 3", "(x : Int) (h₀ : x - 5 = 2) : x = -3"]),
    ("(a b : Int) (h₀ : a < b) : a - b < 0",
     ["(a b : Int) (h₀ : ¬ b ≤ a) : a - b < 0", "(x y : Int) (h : x < y) : x - y < 0"],
     ["(a b : Int) (h₀ : a < b) : a - b > 0", "(a b : Int) (h₀ : a ≤ b) : a - b < 0"]),
    ("(p q : Prop) (hp : p) (hq : q) : p ∧ q",
     ["(p q : Prop) (hq : q) (hp : p) : p ∧ q", "(a b : Prop) (ha : a) (hb : b) : a ∧ b"],
     ["(p q : Prop) (hp : p) : p ∧ q", "(p q : Prop) (hp : p) (hq : q) : p ∧ ¬ q"]),
    ("(l : List Nat) : (l ++ []).length = l.length",
     ["(xs : List Nat) : (xs ++ []).length = xs.length", "(l : List Nat) : l.length = (l ++ []).length"],
     ["(l : List Nat) : (l ++ [0]).length = l.length", "(l : List Nat) : (l ++ l).length = l.length"]),
    ("(n : Nat) : n < n + 1",
     ["(n : Nat) : n < Nat.succ n", "(k : Nat) : k + 1 > k"],
     ["(n : Nat) : n + 1 < n", "(n : Nat) : n < n"]),
    (": 7 * 8 = 56",
     [": 56 = 7 * 8", ": 8 * 7 = 56"],
     [": 7 * 8 = 54", ": 7 + 8 = 56"]),
]
# Provable closed facts against different provable facts: equivalent as
# propositions, not the same statement.
TRUE_BUT_DIFFERENT = [
    (": 2 + 2 = 4", [": 2 * 2 = 4", ": 3 + 1 = 4"]),
    ("(n : Nat) : n + 0 = n", ["(k : Nat) : 0 + k = k", "(n : Nat) : n * 1 = n"]),
]


def main():
    rows = []
    for f, (ref, same, diff) in enumerate(FAMILIES, 1):
        for label, cands in ((True, same), (False, diff)):
            for c in cands:
                rows.append((f, ref, c, label))
    for f, (ref, cands) in enumerate(TRUE_BUT_DIFFERENT, len(FAMILIES) + 1):
        for c in cands:
            rows.append((f, ref, c, False))
    for i, (f, ref, cand, label) in enumerate(rows, 1):
        print(json.dumps({
            "id": f"f{f:02}-{i:03}",
            "reference": f"theorem ref {ref} := by sorry",
            "candidate": f"theorem cand {cand} := by sorry",
            "label": label,
        }, ensure_ascii=False))


if __name__ == "__main__":
    main()
