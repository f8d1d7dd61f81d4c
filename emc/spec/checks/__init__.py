"""The checker's passes, one module a concern (emc/spec/check.py composes them): the spec's header,
attribute references, blocks and their options, features, weights and their expressions, and
corpus-level constraints."""
