def f (x : Nat) : Nat := x +

def g : Nat := 3

theorem t : 1 = 1 := by
  exact (rfl

def h := 5
