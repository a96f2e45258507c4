def f : Nat → Bool
  | 0 => true
  | 1 => false

def g : Option Nat → Nat
  | some n => n
  | none => 0
  | some 0 => 1

def h (xs : List Nat) : Nat :=
  match xs with
  | [] => 0
  | x :: _ => x
  | _ => "z"
