theorem t1 (a b : Nat) (h : a < b) : a + 1 < b + 1 := by
  omega

theorem t2 (a b : Nat) : a * b = b * a + 1 := by
  simp [Nat.mul_comm]

theorem t3 (p q : Prop) (hp : p) : p ∧ q := by
  constructor
  · exact hp

theorem t4 (n : Nat) : n = n := by
  rfl
  rfl
