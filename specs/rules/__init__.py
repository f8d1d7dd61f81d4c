"""The built-in structures restated as rule programs (docs/writing-models.md), shipped as emc.specs.rules."""
