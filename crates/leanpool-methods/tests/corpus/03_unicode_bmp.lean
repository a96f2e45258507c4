-- ∀ ∃ ⟨⟩ λ → ↔ ≤ ≠ ∧ ∨ ¬ ×
theorem ex₁ : ∀ n : Nat, ∃ m, m > n := fun n => ⟨n + 1, Nat.lt_succ_self n⟩
theorem ex₂ (α : Type) (a b : α) : a = b ↔ b = a := ⟨Eq.symm, Eq.symm⟩
theorem ex₃ : ∀ n : Nat, n ≤ n + 1 ∧ ¬ (n + 1 ≤ n) := fun n => ⟨Nat.le_succ n, by omega⟩
theorem ex₄ (p q : Prop) (hp : p) : p ∨ q ∧ ¬ p := Or.inr ⟨hp, hp⟩
def café : String := "naïve résumé"
theorem ex₅ : café.length = 4 := by decide
