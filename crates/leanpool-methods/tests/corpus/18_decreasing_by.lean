def half (n : Nat) : Nat :=
  if h : n < 2 then 0 else 1 + half (n - 2)
termination_by n
decreasing_by omega

def wrong (n : Nat) : Nat :=
  if h : n < 2 then 0 else 1 + wrong (n - 1)
termination_by n
decreasing_by
  simp_wf
  exact Nat.lt_irrefl _
