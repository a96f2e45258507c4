#check Nat.add_comm
#check (fun x : Nat => x + 1)
#print Nat.add
#check @List.map
#reduce (fun x => x + 2) 3
#check ∀ x : Nat, ∃ y, y > x
