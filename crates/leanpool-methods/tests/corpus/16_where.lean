def sumTo (n : Nat) : Nat := go n 0
where
  go : Nat → Nat → Nat
    | 0, acc => acc
    | k + 1, acc => go k (acc + k + 1)

theorem sumTo3 : sumTo 3 = 6 := by decide

def broken (n : Nat) : Nat := helper n
where
  helper (k : Nat) : Nat := k + true
