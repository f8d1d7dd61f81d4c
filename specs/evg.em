# A dependency model with richer valence (in the spirit of Headden, Johnson & McClosky 2009's
# EVG), written as rules: no built-in structure has it. As the DMV (specs/dmv.em), but each head
# tells apart having no dependent yet, one, and two or more on a side (valence 0 / 1 / 2+), for
# its stop decisions and for the choice of the dependent: the first dependent on a side is chosen
# apart from the others. Reads tag sequences, PTB trees or CoNLL like specs/dmv.em; scored by
# directed / undirected attachment.
model evg
observed x : tokens
structure valence(x)
  item  ropen(h in 0..n-1, e in 0..n-1, v in 0..2)            # h's right dependents within x[h..e]: v of them (2: 2+)
  item  rdone(h in 0..n-1, e in 0..n-1)
  item  rlink(h in 0..n-1, d in 0..n-1, v in 0..1)            # h has just taken d, its (v + 1)th on the right (1: 2+)
  item  lopen(s in 0..n-1, h in 0..n-1, v in 0..2)
  item  ldone(s in 0..n-1, h in 0..n-1)
  item  llink(d in 0..n-1, h in 0..n-1, v in 0..1)
  item  sentence()
  axiom ropen(h, h, 0) for h in 0..n-1
  axiom lopen(h, h, 0) for h in 0..n-1
  part  rstop(h, e, v) : rdone(h, e) += ropen(h, e, v) for e in h..n-1
        where head = x[h], stop = 1 in 0..1, direction = 1 in 0..1, valence = v in 0..2
  part  lstop(s, h, v) : ldone(s, h) += lopen(s, h, v) for s in 0..h
        where head = x[h], stop = 1 in 0..1, direction = 0 in 0..1, valence = v in 0..2
  part  right(h, m, d, v) : rlink(h, d, 0) += ropen(h, m, v) * ldone(m + 1, d) for m in h..d-1, v in 0..0
        where head = x[h], dependent = x[d], stop = 0 in 0..1, direction = 1 in 0..1, valence = v in 0..2,
              later = 0 in 0..1
        attaches d to h
  part  rightmore(h, m, d, v) : rlink(h, d, 1) += ropen(h, m, v) * ldone(m + 1, d) for m in h..d-1, v in 1..2
        where head = x[h], dependent = x[d], stop = 0 in 0..1, direction = 1 in 0..1, valence = v in 0..2,
              later = 1 in 0..1
        attaches d to h
  part  rgrow(h, d, e, u) : ropen(h, e, u + 1) += rlink(h, d, u) * rdone(d, e) for d in h+1..e   # v: 1, or 2 for 2+
  part  left(d, m, h, v) : llink(d, h, 0) += rdone(d, m) * lopen(m + 1, h, v) for m in d..h-1, v in 0..0
        where head = x[h], dependent = x[d], stop = 0 in 0..1, direction = 0 in 0..1, valence = v in 0..2,
              later = 0 in 0..1
        attaches d to h
  part  leftmore(d, m, h, v) : llink(d, h, 1) += rdone(d, m) * lopen(m + 1, h, v) for m in d..h-1, v in 1..2
        where head = x[h], dependent = x[d], stop = 0 in 0..1, direction = 0 in 0..1, valence = v in 0..2,
              later = 1 in 0..1
        attaches d to h
  part  lgrow(s, d, h, u) : lopen(s, h, u + 1) += ldone(s, d) * llink(d, h, u) for d in s..h-1
  part  top(h) : sentence() += ldone(0, h) * rdone(h, n - 1) where root = x[h] attaches h
  goal  sentence()
latent d : valence(x)
multinomial root    : P(d.root)
multinomial attach  : P(d.right.dependent | d.right.head, d.right.direction, d.right.later)
multinomial attach2 : P(d.rightmore.dependent | d.rightmore.head, d.rightmore.direction, d.rightmore.later) shares attach
multinomial attach3 : P(d.left.dependent | d.left.head, d.left.direction, d.left.later) shares attach
multinomial attach4 : P(d.leftmore.dependent | d.leftmore.head, d.leftmore.direction, d.leftmore.later) shares attach
multinomial stop    : P(d.rstop.stop | d.rstop.head, d.rstop.direction, d.rstop.valence)
multinomial stop2   : P(d.lstop.stop | d.lstop.head, d.lstop.direction, d.lstop.valence) shares stop
multinomial stop3   : P(d.right.stop | d.right.head, d.right.direction, d.right.valence) shares stop
multinomial stop4   : P(d.rightmore.stop | d.rightmore.head, d.rightmore.direction, d.rightmore.valence) shares stop
multinomial stop5   : P(d.left.stop | d.left.head, d.left.direction, d.left.valence) shares stop
multinomial stop6   : P(d.leftmore.stop | d.leftmore.head, d.leftmore.direction, d.leftmore.valence) shares stop
