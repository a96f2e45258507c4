structure Big where
  a : Nat
  b : Nat
  c : String
  d : List Nat
  e : Bool × Nat

def big : Big := { a := 1, b := 2, c := "three", d := [4, 5, 6], e := (true, 7) }
theorem big_eq : big = { a := 1, b := 2, c := "three", d := [4, 5, 6, 7], e := (false, 7) } := rfl
example : (fun (x : Nat) (y : List (Nat × String)) (z : Option (Array Nat)) => (x, y, z)) = 5 := rfl
