def f (x : Nat) (unused : Nat) : Nat := x

theorem t (h : 1 = 1) (h2 : 2 = 2) : True := by
  have h3 : 3 = 3 := rfl
  trivial

def g (n : Nat) : Nat :=
  let y := 5
  n
