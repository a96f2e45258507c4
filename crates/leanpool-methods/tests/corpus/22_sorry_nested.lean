theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by
  constructor
  · sorry
  · exact hq

theorem u (n : Nat) : n + 0 = n ∧ 0 + n = n := by
  refine ⟨?_, ?_⟩
  · have h : n + 0 = n := sorry
    exact h
  · simp

def v : Nat × Nat := (sorry, 2)
