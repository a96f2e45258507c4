structure Point where
  private mk ::
  x : Nat
  y : Nat
private structure Hidden where
  val : Nat
private def h : Hidden := ⟨3⟩
theorem hv : h.val = 4 := rfl
def p : Point := ⟨1, 2⟩
def q : Point := Point.mk 1 2
