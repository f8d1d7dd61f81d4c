# A hidden semi-Markov model (an explicit-duration HMM), written as rules: no built-in structure
# has it. A sentence is cut into segments of 1..maxlen tokens, each with a latent class; a
# segment's class depends on the previous segment's, its first token and each further token on its
# class, its length on its class. Read CoNLL-2000 with the part-of-speech tags as tokens and the
# chunk tags as gold:
#   emc fit specs/hsmm.em train.txt.gz --format conll --word-column 2 --gold-column 3
# prints the chunk spans' F1 (boundary_f1, beside the all-singletons baseline) and the segment
# classes' many-to-one accuracy against the gold chunk types (class_many_to_one).
model hsmm
observed x : tokens
structure chunks(x, classes=12, maxlen=6)
  item  done(i in 0..n, c in 0..classes)                    # x[0:i] cut into segments, the last of class c
  item  open(i in 0..n, c in 0..classes-1, l in 1..maxlen)  # a segment of class c holds x[i-l:i] so far
  axiom done(0, classes)                                    # c = classes: the start
  part  start(i, b, c) : open(i + 1, c, 1) += done(i, b) for c in 0..classes-1 where first = x[i]
  part  grow(i, c, l) : open(i + 1, c, l + 1) += open(i, c, l) for l in 1..maxlen-1 where next = x[i]
  part  close(i, c, l) : done(i, c) += open(i, c, l) labels x[i-l:i] as c
  goal  done(n, c) for c in 0..classes-1
latent s : chunks(x)
multinomial trans  : P(s.start.c | s.b)                   # s.b = classes: the first segment
multinomial first  : P(s.first | s.start.c)
multinomial next   : P(s.next | s.grow.c)
multinomial length : P(s.close.l | s.close.c)
