# The DMV's dynamic program (Klein & Manning 2004; split heads, Eisner & Satta 1999), stated as
# rules and compiled by emc like any structure written as rules: emc/structures/deptree/dp.py runs
# it on a sentence whose tokens are its positions 0..n-1, so each table below holds the scores the
# deptree glue computed for that sentence (the root's per position, an attachment's per head and
# dependent position, a stop decision's per head position, side and valence), and its expected
# counts are the parts' marginals. `make generated` writes chart.py beside it (tests/test_generated.py checks it is fresh).
model chart
observed x : tokens                                           # the positions of a sentence
structure split(x)
  item  ropen(h in 0..n-1, e in 0..n-1, a in 0..1)           # h's right dependents within x[h..e], a: none yet
  item  rdone(h in 0..n-1, e in 0..n-1)                      # ... and h has stopped on its right
  item  rlink(h in 0..n-1, d in 0..n-1)                      # h has just taken d on its right
  item  lopen(s in 0..n-1, h in 0..n-1, a in 0..1)           # h's left dependents within x[s..h]
  item  ldone(s in 0..n-1, h in 0..n-1)
  item  llink(d in 0..n-1, h in 0..n-1)                      # h has just taken d on its left
  item  sentence()
  axiom ropen(h, h, 1) for h in 0..n-1
  axiom lopen(h, h, 1) for h in 0..n-1
  part  rstop(h, e, a) : rdone(h, e) += ropen(h, e, a) for e in h..n-1
        where head = x[h], stop = 1 in 0..1, direction = 1 in 0..1, adjacent = a in 0..1
  part  lstop(s, h, a) : ldone(s, h) += lopen(s, h, a) for s in 0..h
        where head = x[h], stop = 1 in 0..1, direction = 0 in 0..1, adjacent = a in 0..1
  part  right(h, m, d, a) : rlink(h, d) += ropen(h, m, a) * ldone(m + 1, d) for m in h..d-1
        where head = x[h], dependent = x[d], stop = 0 in 0..1, direction = 1 in 0..1, adjacent = a in 0..1
        attaches d to h
  part  rgrow(h, d, e) : ropen(h, e, 0) += rlink(h, d) * rdone(d, e) for d in h+1..e
  part  left(d, m, h, a) : llink(d, h) += rdone(d, m) * lopen(m + 1, h, a) for m in d..h-1
        where head = x[h], dependent = x[d], stop = 0 in 0..1, direction = 0 in 0..1, adjacent = a in 0..1
        attaches d to h
  part  lgrow(s, d, h) : lopen(s, h, 0) += ldone(s, d) * llink(d, h) for d in s..h-1
  part  top(h) : sentence() += ldone(0, h) * rdone(h, n - 1) where root = x[h] attaches h
  goal  sentence()
latent d : split(x)
multinomial root   : P(d.root)
multinomial attach : P(d.right.dependent | d.right.head)
multinomial attach_left : P(d.left.dependent | d.left.head) shares attach
multinomial stop   : P(d.rstop.stop | d.rstop.head, d.rstop.direction, d.rstop.adjacent)
multinomial stop_left : P(d.lstop.stop | d.lstop.head, d.lstop.direction, d.lstop.adjacent) shares stop
multinomial go_right : P(d.right.stop | d.right.head, d.right.direction, d.right.adjacent) shares stop
multinomial go_left  : P(d.left.stop | d.left.head, d.left.direction, d.left.adjacent) shares stop
