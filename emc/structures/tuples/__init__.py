"""label(v, n, classes=K): one latent class per tuple of fields (the front end is the label
structure's, emc/structures/label/__init__.py; its codegen and data for several fields live here)."""
