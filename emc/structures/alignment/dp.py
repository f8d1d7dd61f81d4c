"""The alignment DPs, each written once for the sum and max semirings.

A sentence pair's link scores are a matrix scores[i, j]: source position i (the last row is NULL
when null=yes), target position j. Every target word links to exactly one row.

jump=no (IBM Model 1): the links are independent, so Z = prod_j sum_i scores[i, j] and the
posterior of each link is its share of its column; under max each column's best row (NULL wins
ties, then the first source position).

jump=yes (the HMM aligner, Vogel et al. 1996): the links form a chain over target positions whose
states are source positions, run by the chain's DP (emc/structures/chain/dp.py) rather than a new
one. With NULL, a state also remembers the source position a NULL link keeps (Och & Ney 2003):
states 0..l-1 link to source position i, state l + i is NULL after a link to i, and state 2l is
NULL before any link (position -1). A transition into a real state i scores the jump bucket of
i - i_prev; into a NULL state, the `null` bucket, and only into the NULL state that keeps i_prev.
Buckets: jumps are clipped to [-maxjump, maxjump] (index jump + maxjump), `null` is 2 maxjump + 1.
An end bucket (jumps of maxjump or more, or of -maxjump or less) stands for every source
position it reaches from i_prev, and its score is shared evenly among them: the bucket is chosen,
then one of its positions uniformly. (Giving each of them the bucket's whole score would let EM
pile mass onto the end buckets, since a long sentence has many far positions.)

Sampling (emc/structures/sampling.py): IBM 1 draws each target word's link from its column
independently; the HMM aligner samples its chain (forward-filtering backward-sampling).
"""
import numpy as np
from numba import njit

from emc.structures.alignment import hmm_sum
from emc.structures.alignment.jumps import jump_bucket
from emc.structures.chain import dp as chain_dp
from emc.structures.pointers import by_pointer
from emc.structures.sampling import draw, is_sampling, sample_count
from emc.structures.semiring import MAX, SUM

NEG_INF = -np.inf
NO_LINK = -1  # a decoded target word linked to NULL


@njit(cache=True)
def jump_buckets(maxjump, null):
    return 2 * maxjump + 1 + null


@njit(cache=True)
def jump_score(jump_scores, jump, at, l, maxjump):
    """The score of jumping from position `at` to a source position `jump` away: its bucket's,
    shared among the positions an end bucket reaches from `at` in a sentence of l words."""
    score = jump_scores[jump_bucket(jump, maxjump)]
    if jump >= maxjump:
        return score / (l - (at + maxjump))
    if jump <= -maxjump:
        return score / (at - maxjump + 1)
    return score


@njit(cache=True)
def jump_matrix(jump_scores, maxjump, l):
    """trans[p + 1, i]: the score of the jump from position p (-1 .. l-1) into source word i."""
    trans = np.empty((l + 1, l))
    for p in range(-1, l):
        for i in range(l):
            trans[p + 1, i] = jump_score(jump_scores, i - p, p, l, maxjump)
    return trans


@njit(cache=True)
def diagonal_position(j, l, m):
    """The source position under the middle of target word j of m, in a source of l words."""
    return ((2 * j + 1) * l) // (2 * m)


@njit(cache=True)
def multiply_diagonal(scores, bucket_scores, maxjump, null):
    """scores[i, j] *= the diagonal slot's score of link (i, j): the bucket of its distance from
    the diagonal, scored as a jump from the diagonal's position; a NULL link, the null bucket."""
    width, m = scores.shape
    l = width - null
    for j in range(m):
        at = diagonal_position(j, l, m)
        for i in range(l):
            scores[i, j] *= jump_score(bucket_scores, i - at, at, l, maxjump)
        if null:
            scores[l, j] *= bucket_scores[2 * maxjump + 1]


@njit(cache=True)
def diagonal_counts(posterior, maxjump, null, bucket_counts):
    """bucket_counts[d] += the posterior mass of the links whose distance from the diagonal is in
    bucket d (NULL links: the null bucket)."""
    width, m = posterior.shape
    l = width - null
    for j in range(m):
        at = diagonal_position(j, l, m)
        for i in range(l):
            bucket_counts[jump_bucket(i - at, maxjump)] += posterior[i, j]
        if null:
            bucket_counts[2 * maxjump + 1] += posterior[l, j]


@njit(cache=True)
def _best_row(scores, j, null):
    """The best row of column j: NULL on ties, then the first source position."""
    width = scores.shape[0]
    best = width - 1 if null else 0
    for i in range(width - null):
        if scores[i, j] > scores[best, j]:
            best = i
    return best


@njit(cache=True)
def _link_posterior(scores, posterior):
    """posterior[i, j] = P(a_j = i) under IBM 1; returns log Z (-inf, posterior 0, if some target
    word has no link). `posterior` may be `scores` itself."""
    width, m = scores.shape
    log_z = 0.0
    column = np.zeros(m)  # each column's total, then its inverse
    for i in range(width):  # row by row: unit-stride inner loops
        for j in range(m):
            column[j] += scores[i, j]
    for j in range(m):
        if not column[j] > 0.0:
            posterior[:, :] = 0.0
            return NEG_INF
        log_z += np.log(column[j])
        column[j] = 1.0 / column[j]
    for i in range(width):
        for j in range(m):
            posterior[i, j] = scores[i, j] * column[j]
    return log_z


@njit(cache=True)
def independent(semiring, scores, null, posterior):
    """IBM 1: posterior[i, j] = P(a_j = i) under sum, the best row's indicator under max, the
    average indicators of sampled links under a sampling request. Returns log Z (the best
    score's log under max); -inf if some target word has no link. `posterior` may be `scores`
    itself."""
    width, m = scores.shape
    if semiring == SUM:
        return _link_posterior(scores, posterior)
    if is_sampling(semiring):
        log_z = _link_posterior(scores, posterior)
        if log_z > NEG_INF:
            _sampled_links(posterior, sample_count(semiring))
        return log_z
    log_z = 0.0
    column = np.zeros(m)  # each column's best row
    for j in range(m):
        best = _best_row(scores, j, null)
        column[j] = best
        log_z += np.log(scores[best, j])
    posterior[:, :] = 0.0
    if not log_z > NEG_INF:
        return NEG_INF
    for j in range(m):
        posterior[int(column[j]), j] = 1.0
    return log_z


@njit(cache=True)
def _sampled_links(posterior, draws):
    """Replace each column's link posterior by the average indicators of `draws` links drawn
    from it."""
    width, m = posterior.shape
    probabilities = np.empty(width)
    for j in range(m):
        for i in range(width):
            probabilities[i] = posterior[i, j]
            posterior[i, j] = 0.0
        for _ in range(draws):
            posterior[draw(probabilities, width), j] += 1.0 / draws


@njit(cache=True)
def independent_sample(scores, null, links):
    """IBM 1: links[j] drawn from the posterior of target word j's link (NO_LINK for NULL).
    Returns log Z (-inf, links all NO_LINK, when some target word has no possible link)."""
    width, m = scores.shape
    log_z = 0.0
    column = np.empty(width)
    for j in range(m):
        total = 0.0
        for i in range(width):
            column[i] = scores[i, j]
            total += scores[i, j]
        if not total > 0.0:
            links[:] = NO_LINK
            return NEG_INF
        log_z += np.log(total)
        i = draw(column, width)
        links[j] = NO_LINK if null and i == width - 1 else i
    return log_z


@njit(cache=True)
def independent_best(scores, null, links):
    """IBM 1 Viterbi: links[j] = the best source position of target word j (NO_LINK for NULL)."""
    width, m = scores.shape
    log_score = 0.0
    for j in range(m):
        best = _best_row(scores, j, null)
        if not scores[best, j] > 0.0:
            links[:] = NO_LINK
            return NEG_INF
        links[j] = NO_LINK if null and best == width - 1 else best
        log_score += np.log(scores[best, j])
    return log_score


@njit(cache=True)
def _position(state, l):
    """The source position a state stands at (-1: before any link)."""
    if state < l:
        return state
    if state < 2 * l:
        return state - l
    return -1


@njit(cache=True)
def chain_parts(scores, jump_scores, maxjump, null):
    """The chain's node scores (m x K), transitions (K x K), initial and final vectors."""
    width, m = scores.shape
    l = width - null
    K = 2 * l + 1 if null else l
    null_bucket = 2 * maxjump + 1
    node = np.empty((m, K))
    for j in range(m):
        for i in range(l):
            node[j, i] = scores[i, j]
        for s in range(l, K):
            node[j, s] = scores[l, j]
    trans = np.zeros((K, K))
    initial = np.zeros(K)
    for s in range(K + 1):  # s = K: START, at position -1
        at = -1 if s == K else _position(s, l)
        for i in range(l):
            score = jump_score(jump_scores, i - at, at, l, maxjump)
            if s == K:
                initial[i] = score
            else:
                trans[s, i] = score
        if null:
            keep = l + at if at >= 0 else 2 * l
            if s == K:
                initial[keep] = jump_scores[null_bucket]
            else:
                trans[s, keep] = jump_scores[null_bucket]
    return node, trans, initial, np.ones(K)


@njit(cache=True)
def _no_constraints():
    return np.empty(0, np.int32), np.empty(0, np.int64), np.empty(0, np.int64)


@njit(cache=True)
def chain(semiring, scores, jump_scores, maxjump, null, posterior, jump_counts):
    """The HMM aligner: posterior[i, j] = P(a_j = i) (NULL states summed into the NULL row) and
    jump_counts[bucket] += the expected number of jumps into each bucket, under sum; the best
    alignment's indicators and jump counts under max. Returns log Z (log best score under max).
    `posterior` may be `scores` itself. Under sum, the forward-backward on source positions
    (emc/structures/alignment/hmm_sum.py, a quarter of the chain DP's work)."""
    if semiring == SUM:
        return chain_sum(scores, jump_scores, maxjump, null, posterior, jump_counts)
    return chain_states(semiring, scores, jump_scores, maxjump, null, posterior, jump_counts)


@njit(cache=True)
def chain_sum(scores, jump_scores, maxjump, null, posterior, jump_counts):
    """chain() under sum: what an E-step under sum calls, which then never compiles the chain DP
    over 2l + 1 states that the other semirings run (most of the HMM aligner's cold start)."""
    trans = jump_matrix(jump_scores, maxjump, scores.shape[0] - null)
    null_score = jump_scores[2 * maxjump + 1] if null else 0.0
    return hmm_sum.forward_backward(scores, trans, null_score, null, maxjump, posterior, jump_counts)


@njit(cache=True)
def chain_states(semiring, scores, jump_scores, maxjump, null, posterior, jump_counts):
    """chain() on the chain DP over the 2l + 1 states: the max semiring's path (and the sum's
    reference, in the tests)."""
    width, m = scores.shape
    l = width - null
    node, trans, initial, final = chain_parts(scores, jump_scores, maxjump, null)
    K = node.shape[1]
    node_marg = np.empty((m, K))
    edge_marg = np.zeros((K, K))
    states, lo, hi = _no_constraints()
    trans_t = np.ascontiguousarray(trans.T)
    log_z = chain_dp.marginals(semiring, node, trans, trans_t, initial, final, states, lo, hi, node_marg, edge_marg)
    posterior[:, :] = 0.0
    if not log_z > NEG_INF:
        return log_z
    for j in range(m):
        for s in range(K):
            posterior[min(s, l), j] += node_marg[j, s]
    null_bucket = 2 * maxjump + 1
    for s in range(K + 1):
        at = -1 if s == K else _position(s, l)
        for t in range(K):
            expected = node_marg[0, t] if s == K else edge_marg[t, s]  # outcome-major (chain dp)
            if expected != 0.0:
                bucket = jump_bucket(t - at, maxjump) if t < l else null_bucket
                jump_counts[bucket] += expected
    return log_z


@njit(inline="always")
def _chain_links(semiring, scores, jump_scores, maxjump, null, links):
    """The HMM aligner's links read back from its chain under `semiring` (the chain DP's
    read_path): links[j] = source position, NO_LINK for NULL; the log score or log Z."""
    width, m = scores.shape
    l = width - null
    node, trans, initial, final = chain_parts(scores, jump_scores, maxjump, null)
    path = np.empty(m, np.int64)
    states, lo, hi = _no_constraints()
    total = chain_dp.read_path(semiring, node, trans, initial, final, states, lo, hi, path)
    for j in range(m):
        links[j] = path[j] if 0 <= path[j] < l else NO_LINK
    return total


@njit(cache=True)
def chain_best(scores, jump_scores, maxjump, null, links):
    """The HMM aligner's Viterbi alignment: links[j] = source position, NO_LINK for NULL."""
    return _chain_links(MAX, scores, jump_scores, maxjump, null, links)


@njit(cache=True)
def chain_sample(scores, jump_scores, maxjump, null, links):
    """The HMM aligner: an alignment drawn from the posterior, links[j] = source position or
    NO_LINK; returns log Z (-inf: links all NO_LINK)."""
    return _chain_links(SUM, scores, jump_scores, maxjump, null, links)


# What the glue calls: each compiled once, not linked into every entry point (emc/structures/pointers.py).
chain_by_pointer = by_pointer(chain)
chain_sum_by_pointer = by_pointer(chain_sum)
chain_best_by_pointer = by_pointer(chain_best)
chain_sample_by_pointer = by_pointer(chain_sample)
