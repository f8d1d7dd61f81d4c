"""The .em grammar (em.lark), shipped inside the package as emc.grammars."""
