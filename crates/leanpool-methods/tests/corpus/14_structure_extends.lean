structure A where
  x : Nat
structure B extends A where
  y : Nat
  h : x < y
def b : B := { x := 1, y := 2, h := by decide }
def b' : B := { x := 3, y := 2, h := by decide }
example : b.toA.x = 1 := rfl
structure C extends B, Nonexistent where
  z : Nat
