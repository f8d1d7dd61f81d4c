"""The reference model specs, shipped inside the package as emc.specs (the demo uses them)."""
