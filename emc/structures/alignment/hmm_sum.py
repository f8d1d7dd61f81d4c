"""The HMM aligner's forward-backward under sum, on source positions rather than chain states.

The chain of emc/structures/alignment/dp.py has 2l + 1 states (l words, l NULLs that keep a
position, the NULL before any link), so the chain DP costs (2l + 1)^2 a target word. But every
state that stands at position p has the same transitions out of it (the jump from p into each
word, the NULL bucket into the NULL state that keeps p), so the forward pass needs only each
position's summed mass P[p] = alpha[word p] + alpha[NULL at p] and the backward pass only one
number a position: l (l + 1) a target word each, and as much for the expected jumps, about a
quarter of the chain DP's work. Same model, same numbers up to rounding
(tests/test_alignment_hmm_sum.py compares it with the chain DP).

Positions are indexed p + 1 (index 0 is position -1, before any link); `trans[p + 1, i]` is the
score of jumping from p to word i (dp.jump_matrix, built once a pair).
"""
import numpy as np
from numba import njit

from emc.structures.alignment.jumps import jump_bucket

NEG_INF = -np.inf


@njit(cache=True)
def forward_backward(scores, trans, null_score, null, maxjump, posterior, jump_counts):
    """posterior[i, j] = P(a_j = i) (NULL last, all NULL states summed); jump_counts[bucket] +=
    the expected jumps into each bucket (NULL links into bucket 2 maxjump + 1), unless
    jump_counts is empty (the posteriors alone: a third less work). Returns log Z (-inf:
    posterior zero, jump_counts untouched). `posterior` may be `scores`. (Two functions, not
    four: each compiled function costs a cold start about a quarter of a second.)"""
    width, m = scores.shape
    l = width - null
    word = np.empty((m, l))  # the word scores, target-major (scores may be overwritten below)
    empty = np.zeros(m)  # the NULL row's score (0 without NULL)
    for j in range(m):
        for i in range(l):
            word[j, i] = scores[i, j]
        if null:
            empty[j] = scores[l, j] * null_score
    alpha = np.empty((m, l))  # scaled forward mass of each word state
    alpha_null = np.zeros((m, l + 1))  # ... of the NULL state at each position (index p + 1)
    scale = np.empty(m)
    mass = np.zeros(l + 1)  # P[p + 1] at the previous target word
    mass[0] = 1.0  # before the first word: position -1
    log_z = 0.0
    into = np.empty(l)
    for j in range(m):
        into[:] = 0.0
        for q in range(l + 1):  # row by row: the inner loop runs along trans's rows
            a = mass[q]
            if a != 0.0:
                for i in range(l):
                    into[i] += a * trans[q, i]
        c = 0.0
        for i in range(l):
            alpha[j, i] = into[i] * word[j, i]
            c += alpha[j, i]
        for q in range(l + 1):
            alpha_null[j, q] = mass[q] * empty[j]
            c += alpha_null[j, q]
        if not c > 0.0:
            posterior[:, :] = 0.0
            return NEG_INF
        scale[j] = c
        log_z += np.log(c)
        inv = 1.0 / c
        for i in range(l):
            alpha[j, i] *= inv
        for q in range(l + 1):
            alpha_null[j, q] *= inv
        mass[0] = alpha_null[j, 0]
        for i in range(l):
            mass[i + 1] = alpha[j, i] + alpha_null[j, i + 1]
    _backward(word, empty, trans, alpha, alpha_null, scale, null, maxjump, posterior, jump_counts)
    return log_z


@njit(cache=True)
def _backward(word, empty, trans, alpha, alpha_null, scale, null, maxjump, posterior, jump_counts):
    """The posteriors from beta[p + 1] of every state at position p (word or NULL), scaled by the
    later scales; the expected jumps when jump_counts has room for them."""
    m, l = word.shape
    counting = jump_counts.shape[0] > 0
    # trans transposed: beta's sums over the words run along its rows, one sum per position at a
    # time in the same order as a row's dot product (so the same numbers), but vectorised
    trans_t = np.empty((l, l + 1))  # (a loop: np.ascontiguousarray of the transpose compiled for 0.9 s)
    for q in range(l + 1):
        for i in range(l):
            trans_t[i, q] = trans[q, i]
    beta = np.ones(l + 1)
    carried = np.empty(l + 1)
    ahead = np.empty(l)  # word[j, i] beta_j[i] / scale[j], the word terms of the step into j
    null_bucket = 2 * maxjump + 1
    by_jump = np.zeros(2 * l + 1)  # expected jumps by their length i - p (index i - p + l), bucketed at the end
    for j in range(m - 1, -1, -1):
        for i in range(l):
            posterior[i, j] = alpha[j, i] * beta[i + 1]
        if null:
            total = 0.0
            for q in range(l + 1):
                total += alpha_null[j, q] * beta[q]
            posterior[l, j] = total
            if counting:
                jump_counts[null_bucket] += total
        inv = 1.0 / scale[j]
        for i in range(l):
            ahead[i] = word[j, i] * beta[i + 1] * inv
        for q in range(l + 1 if counting else 0):  # the mass at j - 1 (position -1 alone before the first word)
            if j == 0:
                before = 1.0 if q == 0 else 0.0
            else:
                before = alpha_null[j - 1, q] + (alpha[j - 1, q - 1] if q > 0 else 0.0)
            if before != 0.0:
                at = l + 1 - q  # index of the jump from p = q - 1 into word 0
                for i in range(l):
                    by_jump[at + i] += before * trans[q, i] * ahead[i]
        carried[:] = 0.0
        for i in range(l):
            a = ahead[i]
            for q in range(l + 1):
                carried[q] += trans_t[i, q] * a
        stay = empty[j] * inv
        for q in range(l + 1):
            beta[q] = carried[q] + stay * beta[q]
    for d in range(2 * l + 1 if counting else 0):
        if by_jump[d] != 0.0:
            jump_counts[jump_bucket(d - l, maxjump)] += by_jump[d]
