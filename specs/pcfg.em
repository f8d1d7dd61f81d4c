# A probabilistic context-free grammar in Chomsky normal form over 10 labels, trained by
# inside-outside (Baker 1979; Lari & Young 1990) on part-of-speech sequences. Every node of a
# binary tree carries a label: a binary node rewrites its label as its children's, a preterminal
# emits its tag, the root's label is chosen once. Plain EM from random starts is known to find
# poor grammars for bracketing (the reason for CCM): bench/pcfg_wsj10.py measures it beside CCM.
model pcfg
observed x : tokens                                          # one tag sequence per line
latent   t : spantree(x, labels=10)                          # labeled binary trees
multinomial rule : P(t.left_label, t.right_label | t.label)  # binary rewrites
multinomial emit : P(x | t.label)                            # preterminals
multinomial root : P(t.root)                                 # the whole sentence's label
