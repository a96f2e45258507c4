mutual
def f : Nat → Nat
  | 0 => 0
  | n + 1 => g (n + 2)
def g : Nat → Nat
  | 0 => 1
  | n + 1 => f (n + 2)
end
mutual
inductive Tree where
  | node : Forest → Tree
inductive Forest where
  | nil : Forest
  | cons : Tree → Forest → Nat
end
