def pairs : List (Nat × Nat) :=
  [(1, 2),
   (3, "four"),
   (5, 6)]

def total (xs : List Nat) : Nat :=
  xs.foldl (fun acc x =>
    acc + x)
    ""
