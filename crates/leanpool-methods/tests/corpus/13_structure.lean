structure Config where
  name : String
  size : Nat := 10
  enabled : Bool
deriving Repr

def c1 : Config := { name := "a", enabled := true }
def c2 : Config := { name := "a" }
def c3 : Config := { name := "a", enabled := true, colour := 3 }
theorem c1size : c1.size = 11 := rfl
