universe u v
variable {α : Type u} {β : Type v}
def swap (p : α × β) : β × α := (p.2, p.1)
theorem swap_swap (p : α × β) : swap (swap p) = p := rfl
def bad (p : α × β) : α × α := (p.1, p.2)
variable (γ : Sort w)
