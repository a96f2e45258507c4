def ack : Nat → Nat → Nat
  | 0, n => n + 1
  | m + 1, 0 => ack m 1
  | m + 1, n + 1 => ack m (ack (m + 1) n)
termination_by m n => (m, n)

def loop (n : Nat) : Nat := loop (n + 1)

def bad_measure (n : Nat) : Nat :=
  if h : n = 0 then 0 else bad_measure (n + 1)
termination_by n
