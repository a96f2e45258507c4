def 𝓐 (n : Nat) : Nat :=
  match n with
  | 0 => "𝔷𝔢𝔯𝔬"
  | k + 1 => 𝓐 k
theorem 𝓑 : ∀ n : Nat,
    𝓐 n = 0 := by
  intro n
  induction n with
  | zero => rfl
