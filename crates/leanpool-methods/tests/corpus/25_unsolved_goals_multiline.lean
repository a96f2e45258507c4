theorem long (a b c : Nat) (h₁ : a ≤ b) (h₂ : b ≤ c) :
    a ≤ c ∧
    c ≥ a := by
  constructor
  exact Nat.le_trans h₁ h₂

theorem induct (n : Nat) : 0 + n = n := by
  induction n with
  | zero => rfl
  | succ k ih =>
    skip
