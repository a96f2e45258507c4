structure P where
  a : Nat
  b : String
deriving Repr, BEq, Hashable, DecidableEq

inductive T where
  | leaf
  | node (l r : T)
deriving Repr, BEq, Inhabited

structure NoRepr where
  f : Nat → Nat
deriving Repr

structure NoEq where
  f : Nat → Nat
deriving DecidableEq
