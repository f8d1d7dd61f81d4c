# Latent classes over verb-object pairs (Pereira, Tishby & Lee 1993; Rooth et al. 1999): each
# (verb, noun) pair is drawn from one of 30 classes, which generates the verb and the noun
# independently. Input: one pair per line, `verb ||| noun`, each field its own vocabulary
# (bench/verb_object_conll.py extracts them from CoNLL-2000 chunks); `emc info RUN` lists each
# class's top verbs and nouns. Smoothing keeps held-out pairs from scoring zero (add 0.1 generalised
# best of 0.01, 0.1 and 1 in bench/verb_object_conll.py, where EM also overfits after ~10 iterations).
model verb_object
observed v : tokens, n : tokens                  # one (verb, noun) pair per line: `v ||| n`
latent   c : label(v, n, classes=30)             # one latent class per pair
multinomial prior : P(c)
multinomial verb  : P(v | c)    smooth add(0.1)
multinomial noun  : P(n | c)    smooth add(0.1)
