# The DMV guided by universal rules (Naseem, Chen, Barzilay & Johnson 2010), by posterior
# regularization (Ganchev et al. 2010): after each E-step the posterior over trees is projected
# onto those in which, in expectation, at least 75% of the attachments are (head tag, dependent
# tag) pairs listed in specs/ud_rules.txt (relative to where emc runs): the rules in Universal
# Dependencies' conventions (a noun heads its adposition and determiner, a verb its auxiliaries).
# The M-step re-estimates the DMV's blocks from the projected posterior. Read UD with --format
# conllu (UPOS tags, gold heads); emc fit --constraints off fits the plain DMV for comparison.
model dmv_rules
observed x : tokens                               # tag sequences (UPOS)
latent   d : deptree(x)                           # a projective dependency tree with one root
multinomial root   : P(d.root)
multinomial attach : P(d.dependent | d.head, d.direction)
multinomial stop   : P(d.stop | d.head, d.direction, d.adjacent)   # valence
constraint rules : E[d.head, d.dependent in "specs/ud_rules.txt"] >= 0.75   # share of attachments
