# specs/dmv_rules.em for Penn Treebank tags (WSJ10: --format ptb --max-length 10): the DMV whose
# posterior is projected, after each E-step, onto trees in which at least 70% of the attachments
# (in expectation) are pairs listed in specs/ptb_rules.txt, Naseem et al.'s (2010) universal rules
# in the conventions of Collins' head rules (a preposition heads its noun, a modal its verb).
model dmv_rules_ptb
observed x : tokens                               # tag sequences (PTB tags)
latent   d : deptree(x)                           # a projective dependency tree with one root
multinomial root   : P(d.root)
multinomial attach : P(d.dependent | d.head, d.direction)
multinomial stop   : P(d.stop | d.head, d.direction, d.adjacent)   # valence
constraint rules : E[d.head, d.dependent in "specs/ptb_rules.txt"] >= 0.7   # share of attachments
