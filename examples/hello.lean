-- checked by scripts/quickstart: `leanpool check examples/hello.lean --socket SOCKET`
theorem add_zero' (n : Nat) : n + 0 = n := by simp

theorem two_plus_two : 2 + 2 = 4 := by decide
