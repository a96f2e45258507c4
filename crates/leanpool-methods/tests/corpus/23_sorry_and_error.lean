theorem s1 : 2 + 2 = 4 := sorry
theorem e1 : 2 + 2 = 5 := by decide
theorem s2 (a b : Nat) : a + b = b + a := by
  sorry
theorem e2 : True := by exact False.elim
