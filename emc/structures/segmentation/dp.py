"""The segmentation DPs: semi-Markov forward-backward and Viterbi over segment ends, written once for
the sum and max semirings and, for the rare example whose dynamic range a double cannot hold in
linear space, once more in log space by the same code (a run-time constant `space`).

Input: seg[i, l - 1], the score of the segment x[i:i+l] (0 when it is ruled out; rows past the end
of the example are never read). With a[j] the (semiring) sum over segmentations of x[:j]:

    a[0] = 1,  a[j] = (+)_{l=1..min(L, j)} a[j-l] seg[j-l, l-1],  Z = a[n].

Rescaling. Position j gets a scale c_j and a flag alpha[j] = a[j] / (c_1 ... c_j), which is 1 when
x[:j] can end a word and 0 when it cannot: c_j = a[j] / a[j-1] when a[j] > 0 (1 otherwise), computed
from the earlier flags as c_j = (+)_l alpha[j-l] seg[j-l, l-1] / (c_{j-l+1} ... c_{j-1}). The
ratios span up to L positions, so in linear space they are kept within [1/RANGE, RANGE]; an example
that leaves that range (some prefix improbable beyond 1e-150 relative to its neighbours, which
long EM runs can produce) is redone in log space, where it cannot overflow. log Z = sum_j log c_j.

Backward (sum only): with beta[n] = 1 and
    beta[i] = sum_l seg[i, l-1] beta[i+l] / (c_{i+1} ... c_{i+l})    (0 where alpha[i] = 0)
beta[i] is the posterior probability that a word starts at i, and each term of the sum is the
posterior marginal of its segment (i, l). Under max the best segmentation is backtracked from the
flags and scales (no back-pointers stored) and its segments get marginal 1.
"""
import numpy as np
from numba import njit

from emc.structures.semiring import MAX, SUM, plus

# Reassociation lets LLVM vectorise; no nnan/ninf, since -inf and the range checks are real answers.
FASTMATH = {"reassoc", "contract", "nsz", "arcp"}
NEG_INF = -np.inf
LINEAR, LOG = 0, 1
# Linear-space scales and ratios stay within [1/RANGE, RANGE], so a backward ratio (a forward ratio
# times one scale) stays within 1e+-300 and never overflows.
RANGE = 1e150


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
    return space == LINEAR and not (value < RANGE and value > 1.0 / RANGE)


@njit(cache=True, fastmath=FASTMATH)
def forward(semiring, space, seg, alpha, inv_scale):
    """Flags alpha[0..n] and reciprocal scales inv_scale[j] = 1 / c_j (see the module docstring;
    in log space -log c_j). Returns log Z (the log best score under max), -inf when no segmentation
    has a non-zero score, or NaN when linear space cannot hold the example (the caller retries in
    log space)."""
    n, L = seg.shape
    zero, one = _zero(space), _one(space)
    alpha[0] = one
    inv_scale[0] = one
    for j in range(1, n + 1):
        raw = zero
        ratio = one  # (c_{j-l+1} ... c_{j-1})^-1: the scale of a[j-l] relative to a[j-1]
        for l in range(1, min(L, j) + 1):
            i = j - l
            if l > 1:
                ratio = _times(space, ratio, inv_scale[i + 1])
                if _out_of_range(space, ratio):
                    return np.nan
            s = seg[i, l - 1]
            if alpha[i] != zero and s != zero:
                raw = _add(semiring, space, raw, _times(space, s, ratio))
        if raw != zero:
            if _out_of_range(space, raw):
                return np.nan
            inv_scale[j] = _over(space, one, raw)
            alpha[j] = one
        else:
            inv_scale[j] = one
            alpha[j] = zero
    if alpha[n] == zero:
        return NEG_INF
    log_z = 0.0
    for j in range(1, n + 1):
        log_z -= np.log(inv_scale[j]) if space == LINEAR else inv_scale[j]
    return log_z


@njit(cache=True, fastmath=FASTMATH)
def backward(space, seg, alpha, inv_scale, marg):
    """Sum semiring: marg[i, l-1] = P(segment x[i:i+l]) (linear probabilities, 0 past the end)."""
    n, L = seg.shape
    zero, one = _zero(space), _one(space)
    beta = np.empty(n + 1)
    beta[n] = one
    marg[:, :] = 0.0
    for i in range(n - 1, -1, -1):
        acc = zero
        if alpha[i] != zero:
            inv = one  # (c_{i+1} ... c_{i+l})^-1
            for l in range(1, min(L, n - i) + 1):
                inv = _times(space, inv, inv_scale[i + l])
                s = seg[i, l - 1]
                if s != zero and beta[i + l] != zero:
                    term = _times(space, _times(space, s, beta[i + l]), inv)
                    acc = _add(SUM, space, acc, term)
                    marg[i, l - 1] = term if space == LINEAR else np.exp(term)
        beta[i] = acc


@njit(cache=True)
def backtrack(space, seg, alpha, inv_scale, starts):
    """The best segmentation from max-semiring flags and scales: starts[i] = the length of the word
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
                v = _times(space, s, ratio)
                if not found or v > best:
                    best, best_l, found = v, l, True
        starts[j - best_l] = best_l
        j -= best_l


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
    log_z, space, scores = _run_forward(semiring, seg, alpha, inv_scale)
    if not log_z > NEG_INF:
        marg[:, :] = 0.0
        return log_z
    if semiring == MAX:
        starts = np.empty(n, np.int64)
        backtrack(space, scores, alpha, inv_scale, starts)
        marg[:, :] = 0.0
        for i in range(n):
            if starts[i] > 0:
                marg[i, starts[i] - 1] = 1.0
        return log_z
    backward(space, scores, alpha, inv_scale, marg)
    return log_z


@njit(cache=True)
def viterbi(seg, starts):
    """The best segmentation: starts[i] = length of the word starting at i (0 inside a word).
    Returns its log score; -inf (and starts all 0) when every segmentation scores 0."""
    n, L = seg.shape
    alpha = np.empty(n + 1)
    inv_scale = np.empty(n + 1)
    log_z, space, scores = _run_forward(MAX, seg, alpha, inv_scale)
    if not log_z > NEG_INF:
        starts[:] = 0
        return log_z
    backtrack(space, scores, alpha, inv_scale, starts)
    return log_z
