class Shape (α : Type) where
  area : α → Nat
  name : String := "shape"

structure Sq where
  side : Nat

instance : Shape Sq where
  area s := s.side * s.side

def total [Shape α] (xs : List α) : Nat := xs.foldl (fun acc x => acc + Shape.area x) 0

example : total [Sq.mk 2, Sq.mk 3] = 13 := by decide
def noInst : Nat := Shape.area (3 : Nat)
instance : Shape String where
  name := "string"
