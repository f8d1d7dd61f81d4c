"""The segmentation DPs: semi-Markov forward-backward and Viterbi over segment ends, written once for
the sum and max semirings and, for an example whose dynamic range a double cannot hold in linear
space (late in EM, when most words' probabilities have collapsed towards 0, a few percent of a
corpus), once more in log space by the same code (a run-time constant `space`).

Input: seg[i, l - 1], the score of the segment x[i:i+l] (0 when it is ruled out; rows past the end
of the example are never read). With a[j] the (semiring) sum over segmentations of x[:j]:

    a[0] = 1,  a[j] = (+)_{l=1..min(L, j)} a[j-l] seg[j-l, l-1],  Z = a[n].

Rescaling. a[j] = alpha[j] * P_j with P_j = c_1 ... c_j. Position j computes
    raw_j = (+)_l alpha[j-l] seg[j-l, l-1] / (c_{j-l+1} ... c_{j-1})   (= a[j] / P_{j-1})
and is normalised (c_j = raw_j, alpha[j] = 1) unless raw_j < NORMALISE: a prefix that ends inside a
likely word is improbable by hundreds of orders of magnitude after some EM, and normalising there
would make the next ratio as large; such a position keeps c_j = 1 and alpha[j] = raw_j, small but
exact (0: no segmentation of x[:j]). log Z = sum_j log c_j + log alpha[n].

Linear space holds what it can hold exactly: ratios (which span up to L positions) and sums within
[TINY, RANGE]. A term alpha[j-l] seg ratio with a product below TINY is dropped, which is exact when
its true size (taken in logs, rarely) is below e^-NEGLIGIBLE of its position's sum; otherwise, and
whenever a ratio or a sum leaves the range, the example is redone in log space, where nothing can
overflow or underflow. Backward and backtrack drop the same terms.

Backward (sum only): with beta[j] = b[j] P_j / Z, b[j] the sum over segmentations of x[j:],
    marg(i, l) = ((alpha[i] seg[i, l-1] / (c_{i+1} ... c_{i+l-1})) / c_{i+l}) beta[i+l],
    beta[i] = sum_l marg(i, l) / alpha[i],  beta[n] = 1 / alpha[n],
in this order every intermediate is bounded by 1 or by 1 / alpha (the first factor is a term of
raw_{i+l}), and marg(i, l) is the posterior probability of the segment x[i:i+l]. Under max the best
segmentation is backtracked from alpha and the scales (no back-pointers stored) and its segments
get marginal 1. Sampling (emc/structures/sampling.py) walks back the same way from the sum pass,
drawing the last word x[j-l:j] of x[:j] with probability proportional to its backtrack term
(a[j-l] seg[j-l, l-1], up to a factor common to every l).
"""
import numpy as np
from numba import njit

from emc.structures.pointers import by_pointer
from emc.structures.sampling import draw, draw_log, is_sampling, sample_count
from emc.structures.semiring import MAX, SUM, plus

# No reassoc: a reassociated (vectorised) reduction sums in an order that depends on where its
# arrays happen to lie in memory, so two runs of the same fit differed in the last bits (and a
# resumed fit was not bit-identical to an uninterrupted one); the batched E-step's speed did not
# change without it (bench/hmm_vs_hmmlearn.py, 11.1x -> 11.3x hmmlearn). No nnan/ninf either:
# -inf is a real answer.
FASTMATH = {"contract", "nsz", "arcp"}
NEG_INF = -np.inf
LINEAR, LOG = 0, 1
RANGE = 1e300
TINY = 1.0 / RANGE
NEGLIGIBLE = 46.0  # e^-46 ~ 1e-20: a dropped term below this fraction of its sum changes no digit
# Positions whose raw value is below this stay unnormalised. Every scale is then >= NORMALISE, so a
# ratio over L - 1 positions stays below RANGE for L up to 10 (above, an example whose window holds
# that many barely likely positions falls back to log space: slower, still exact).
NORMALISE = 1e-30


@njit(inline="always")
def _zero(space):
    return 0.0 if space == LINEAR else NEG_INF


@njit(inline="always")
def _one(space):
    return 1.0 if space == LINEAR else 0.0


@njit(inline="always")
def _times(space, a, b):
    return a * b if space == LINEAR else a + b


@njit(inline="always")
def _over(space, a, b):
    return a / b if space == LINEAR else a - b


@njit(inline="always")
def _add(semiring, space, a, b):
    if space == LINEAR:
        return plus(semiring, a, b)
    hi, lo = (a, b) if a > b else (b, a)
    if semiring == MAX or lo == NEG_INF:
        return hi
    return hi + np.log1p(np.exp(lo - hi))


@njit(inline="always")
def _out_of_range(space, value):
    return space == LINEAR and not (value < RANGE and value > TINY)


@njit(inline="always")
def _term(space, a, s, ratio):
    """a * s * ratio, or 0 when linear space cannot hold it exactly (a product below TINY)."""
    part = _times(space, a, s)
    t = _times(space, part, ratio)
    if space == LINEAR and not (part > TINY and t > TINY):
        return 0.0
    return t


@njit(cache=True, fastmath=FASTMATH)
def forward(semiring, space, seg, alpha, inv_scale):
    """alpha[0..n] and reciprocal scales inv_scale[j] = 1 / c_j (see the module docstring; in log
    space their logs). Returns log Z (the log best score under max), -inf when no segmentation has
    a non-zero score, or NaN when linear space cannot hold the example (the caller retries in log
    space)."""
    n, L = seg.shape
    zero, one = _zero(space), _one(space)
    alpha[0] = one
    inv_scale[0] = one
    for j in range(1, n + 1):
        raw = zero
        dropped = NEG_INF  # log of the largest term too small for linear space
        ratio = one  # 1 / (c_{j-l+1} ... c_{j-1}): P_{j-l} relative to P_{j-1}
        for l in range(1, min(L, j) + 1):
            i = j - l
            if l > 1:
                ratio = _times(space, ratio, inv_scale[i + 1])
                if _out_of_range(space, ratio):
                    return np.nan
            s = seg[i, l - 1]
            if alpha[i] != zero and s != zero:
                t = _term(space, alpha[i], s, ratio)
                if t == zero:
                    dropped = max(dropped, np.log(alpha[i]) + np.log(s) + np.log(ratio))
                else:
                    raw = _add(semiring, space, raw, t)
        if dropped > NEG_INF and (raw == zero or dropped > np.log(raw) - NEGLIGIBLE):
            return np.nan
        if space == LOG or raw >= NORMALISE:
            if _out_of_range(space, raw):
                return np.nan
            inv_scale[j] = _over(space, one, raw) if raw != zero else one
            alpha[j] = one if raw != zero else zero
        else:
            inv_scale[j] = one
            alpha[j] = raw
    if alpha[n] == zero:
        return NEG_INF
    log_z = np.log(alpha[n]) if space == LINEAR else alpha[n]
    for j in range(1, n + 1):
        log_z -= np.log(inv_scale[j]) if space == LINEAR else inv_scale[j]
    return log_z


@njit(cache=True, fastmath=FASTMATH)
def backward(space, seg, alpha, inv_scale, marg):
    """Sum semiring: marg[i, l-1] = P(segment x[i:i+l]) (linear probabilities, 0 past the end)."""
    n, L = seg.shape
    zero, one = _zero(space), _one(space)
    beta = np.empty(n + 1)
    beta[n] = _over(space, one, alpha[n])
    marg[:, :] = 0.0
    for i in range(n - 1, -1, -1):
        if alpha[i] == zero:
            beta[i] = zero
            continue
        acc = zero
        ratio = one  # 1 / (c_{i+1} ... c_{i+l-1})
        for l in range(1, min(L, n - i) + 1):
            if l > 1:
                ratio = _times(space, ratio, inv_scale[i + l - 1])
            s = seg[i, l - 1]
            if s != zero and beta[i + l] != zero:
                t = _term(space, alpha[i], s, ratio)
                if t != zero:
                    m = _times(space, _times(space, t, inv_scale[i + l]), beta[i + l])
                    acc = _add(SUM, space, acc, m)
                    marg[i, l - 1] = m if space == LINEAR else np.exp(m)
        beta[i] = _over(space, acc, alpha[i])


@njit(cache=True)
def backtrack(space, seg, alpha, inv_scale, starts):
    """The best segmentation from max-semiring alpha and scales: starts[i] = the length of the word
    starting at i, 0 where no word starts."""
    n, L = seg.shape
    zero, one = _zero(space), _one(space)
    starts[:] = 0
    j = n
    while j > 0:
        best, best_l = zero, 1
        found = False
        ratio = one
        for l in range(1, min(L, j) + 1):
            i = j - l
            if l > 1:
                ratio = _times(space, ratio, inv_scale[i + 1])
            s = seg[i, l - 1]
            if alpha[i] != zero and s != zero:
                v = _term(space, alpha[i], s, ratio)
                if v != zero and (not found or v > best):
                    best, best_l, found = v, l, True
        starts[j - best_l] = best_l
        j -= best_l


@njit(cache=True)
def sample_starts(space, seg, alpha, inv_scale, starts):
    """A segmentation drawn from the posterior, from sum-semiring alpha and scales, as backtrack
    gives the best one (starts[i] = length of the word starting at i, 0 elsewhere)."""
    n, L = seg.shape
    zero, one = _zero(space), _one(space)
    terms = np.empty(L)
    scratch = np.empty(L)
    starts[:] = 0
    j = n
    while j > 0:
        ratio = one
        count = min(L, j)
        for l in range(1, count + 1):
            i = j - l
            if l > 1:
                ratio = _times(space, ratio, inv_scale[i + 1])
            s = seg[i, l - 1]
            terms[l - 1] = _term(space, alpha[i], s, ratio) if alpha[i] != zero and s != zero else zero
        l = 1 + (draw(terms, count) if space == LINEAR else draw_log(terms, count, scratch))
        starts[j - l] = l
        j -= l


@njit(cache=True)
def _log_scores(seg):
    out = np.empty_like(seg)
    for i in range(seg.shape[0]):
        for k in range(seg.shape[1]):
            out[i, k] = np.log(seg[i, k]) if seg[i, k] > 0.0 else NEG_INF
    return out


@njit(cache=True)
def _run_forward(semiring, seg, alpha, inv_scale):
    """Forward in linear space, or in log space when linear space cannot hold the example; returns
    (log Z, the space used, the scores in that space)."""
    log_z = forward(semiring, LINEAR, seg, alpha, inv_scale)
    if log_z == log_z:
        return log_z, LINEAR, seg
    log_seg = _log_scores(seg)
    return forward(semiring, LOG, log_seg, alpha, inv_scale), LOG, log_seg


@njit(cache=True)
def marginals(semiring, seg, marg):
    """Segment marginals marg[i, l-1] = P(segment x[i:i+l]) under sum; the 0/1 indicators of the
    best segmentation's segments under max. Returns log Z (or the log best score); -inf when every
    segmentation scores 0, with marg left at 0."""
    n, L = seg.shape
    alpha = np.empty(n + 1)
    inv_scale = np.empty(n + 1)
    log_z, space, scores = _run_forward(SUM if is_sampling(semiring) else semiring, seg, alpha, inv_scale)
    if not log_z > NEG_INF:
        marg[:, :] = 0.0
        return log_z
    if semiring == MAX or is_sampling(semiring):
        # the best segmentation's indicators, or the average indicators of `samples` drawn ones
        starts = np.empty(n, np.int64)
        draws = sample_count(semiring) if is_sampling(semiring) else 1
        share = 1.0 / draws
        marg[:, :] = 0.0
        for _ in range(draws):
            if semiring == MAX:
                backtrack(space, scores, alpha, inv_scale, starts)
            else:
                sample_starts(space, scores, alpha, inv_scale, starts)
            for i in range(n):
                if starts[i] > 0:
                    marg[i, starts[i] - 1] += share
        return log_z
    backward(space, scores, alpha, inv_scale, marg)
    return log_z


@njit(inline="always")
def _read_starts(semiring, seg, starts):
    """One segmentation into `starts`, read back from the forward pass under `semiring`: the best
    (MAX) or one drawn from the posterior (SUM); returns its log score or log Z (-inf, starts all
    0, when every segmentation scores 0)."""
    n, L = seg.shape
    alpha = np.empty(n + 1)
    inv_scale = np.empty(n + 1)
    # np.int64, as the E-step passes it: a literal compiles _run_forward once more
    log_z, space, scores = _run_forward(np.int64(semiring), seg, alpha, inv_scale)
    if not log_z > NEG_INF:
        starts[:] = 0
        return log_z
    if semiring == MAX:
        backtrack(space, scores, alpha, inv_scale, starts)
    else:
        sample_starts(space, scores, alpha, inv_scale, starts)
    return log_z


@njit(cache=True)
def viterbi(seg, starts):
    """The best segmentation: starts[i] = length of the word starting at i (0 inside a word).
    Returns its log score; -inf (and starts all 0) when every segmentation scores 0."""
    return _read_starts(MAX, seg, starts)


@njit(cache=True)
def sample(seg, starts):
    """A segmentation drawn from the posterior, encoded as viterbi's; returns log Z (-inf, starts
    all 0, when every segmentation scores 0)."""
    return _read_starts(SUM, seg, starts)


# What the glue calls: each compiled once, not linked into every entry point (emc/structures/pointers.py).
marginals_by_pointer = by_pointer(marginals)
