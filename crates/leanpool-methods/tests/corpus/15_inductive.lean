inductive Color where
  | red | green | blue
deriving DecidableEq, Repr

def Color.next : Color → Color
  | .red => .green
  | .green => .blue

inductive Bad where
  | mk : (Bad → Nat) → Bad

inductive Vec (α : Type) : Nat → Type where
  | nil : Vec α 0
  | cons : α → Vec α n → Vec α (n + 1)
def Vec.head : Vec α (n + 1) → α
  | .cons a _ => a
