theorem a : 1 + 1 = 2 := sorry
def b : Nat := sorry
theorem c (n : Nat) : n = n := by sorry
