"""Drop-in replacements for training stacks' own configuration code (see `compat.slime`)."""
