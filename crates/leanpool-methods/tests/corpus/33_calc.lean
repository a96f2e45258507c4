theorem t (a b c : Nat) (h₁ : a = b) (h₂ : b = c) : a = c :=
  calc a = b := h₁
    _ = c := h₂

theorem u (a b c : Nat) (h₁ : a < b) (h₂ : b < c) : a < c :=
  calc a < b := h₁
    _ < c := h₂
    _ = c + 0 := rfl

theorem w (a b : Nat) (h : a = b) : b = a :=
  calc b = b := rfl
    _ = a := h
