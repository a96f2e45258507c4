import Nonexistent.Module

theorem fine : 1 + 1 = 2 := rfl
theorem bad : 1 + 1 = 3 := rfl
