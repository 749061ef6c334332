"""State that graphs read and update at every call: Variable, GradientTape, TensorArray, optimizers."""
