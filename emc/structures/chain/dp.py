"""The chain DPs: forward-backward for order 1 and 2, each written once for the sum and max
semirings, in linear space with per-position rescaling.

Conventions (order 1; order 2 replaces the state k by the pair (j, k) of previous and current):
    alpha[t, k] = node[t, k] * (+)_j alpha[t-1, j] trans[j, k] / c_t,  alpha[0, k] = initial[k] node[0, k] / c_0
    c_end       = (+)_k alpha[n-1, k] final[k]
    log Z       = sum_t log c_t + log c_end          (log of the best score under max)
    beta[n-1,k] = final[k] / c_end,  beta[t-1, j] = (+)_k trans[j, k] node[t, k] beta[t, k] / c_t
so that under sum P(z_t = k) = alpha[t, k] beta[t, k]. `final` is the STOP transition (ones for
stop=no). Order 1's edge marginals are outcome-major, as the tables are (emc/codegen/abi.py):
edge_marg[k, j] is the expected number of j -> k transitions, so the glue adds each next state's
column of them to its table entries in one unit-stride loop. An impossible example (every path
has score 0) returns -inf and leaves the marginals at zero; the runtime reports it with its line.

A tag dictionary or a labeled example restricts each position to a list of allowed states
(`lo[t]:hi[t]` into `states`); the pruned instances loop over those lists only, so constrained
positions cost |allowed(t-1)| x |allowed(t)| instead of K^2. The dense instances keep unit-stride
inner loops that LLVM vectorises; an index list there costs 6x.

Sampling (emc/structures/sampling.py) is forward-filtering backward-sampling: the sum forward pass,
then z_{n-1} ~ alpha[n-1, k] final[k] and z_{t-1} ~ alpha[t-1, j] trans[j, z_t] (order 2: the pair
(z_{n-2}, z_{n-1}), then z_{t-2} ~ alpha[t-1, i, z_{t-1}] trans[i, z_{t-1}, z_t]). The forward
passes leave alpha at 0 for disallowed states, so constrained examples need no special case.
"""
import numpy as np
from numba import njit

from emc.structures.buffers import copy_into
from emc.structures.chain import products, vectors
from emc.structures.pointers import by_pointer
from emc.structures.sampling import draw, is_sampling, sample_count
from emc.structures.semiring import MAX, SUM, plus

# No reassoc: a reassociated (vectorised) reduction sums in an order that depends on where its
# arrays happen to lie in memory, so two runs of the same fit differed in the last bits (and a
# resumed fit was not bit-identical to an uninterrupted one); the batched E-step's speed did not
# change without it (bench/hmm_vs_hmmlearn.py, 11.1x -> 11.3x hmmlearn). No nnan/ninf either:
# -inf is a real answer.
FASTMATH = {"contract", "nsz", "arcp"}
NEG_INF = -np.inf


# --- order 1, all states ---------------------------------------------------------------------

@njit(inline="always")
def _log_z(scale, n, c_end):
    """log Z = sum_t log c_t + log c_end, the forward passes' last step (c_end into scale[n]);
    -inf when no path reaches the end."""
    if not c_end > 0.0:
        return NEG_INF
    scale[n] = c_end
    log_z = 0.0
    for t in range(n + 1):
        log_z += np.log(scale[t])
    return log_z


@njit(cache=True, fastmath=FASTMATH)
def forward(semiring, node, trans, initial, final, alpha, scale):
    """alpha and the scales (see the module's docstring); returns log Z (the log best score under
    max), -inf when no path has a positive score. From WIDE_FROM states on, through
    _forward_wide."""
    if node.shape[1] >= WIDE_FROM:
        return _forward_wide(semiring, node, trans, initial, final, alpha, scale)
    return _forward_narrow(semiring, node, trans, initial, final, alpha, scale)


# _forward_wide and _backward_wide sum the same products in the same order as the narrow passes
# (bit-identical), eight states a sweep, over a copy of trans (trans_t) whose rows are zero-padded
# to whole vectors (K = 45: 48), written with emc/structures/chain/vectors.py's vector values:
# LLVM's own vectorised sweeps checked before each sweep that acc and the rows it read did not
# overlap, a third of the forward pass's samples (the forward pass over CoNLL-2000's sentences one
# by one: 0.043 -> 0.038 CPU s). Below 32 states no faster or slower (12 states: the forward pass
# 8% slower, the copy and the padding; 24: the backward pass 7% slower).
WIDE_FROM = 32


@njit(inline="always")
def _first_column(semiring, node, initial, alpha, scale):
    """alpha[0] and its scale c_0; False when no state can start the sequence."""
    K = node.shape[1]
    c = 0.0
    for k in range(K):
        alpha[0, k] = initial[k] * node[0, k]
        c = plus(semiring, c, alpha[0, k])
    if not c > 0.0:
        return False
    scale[0] = c
    inv = 1.0 / c
    for k in range(K):
        alpha[0, k] *= inv
    return True


@njit(inline="always")
def _close_column(semiring, acc, node, alpha, scale, t):
    """alpha[t] = acc (the previous states' sums) times the node scores, scaled by their (+) c_t;
    False when it is zero. The scale in four partial sums: one running sum is a chain of K
    dependent additions."""
    K = node.shape[1]
    c0, c1, c2, c3 = 0.0, 0.0, 0.0, 0.0
    k = 0
    while k + 4 <= K:
        alpha[t, k], alpha[t, k + 1] = acc[k] * node[t, k], acc[k + 1] * node[t, k + 1]
        alpha[t, k + 2], alpha[t, k + 3] = acc[k + 2] * node[t, k + 2], acc[k + 3] * node[t, k + 3]
        c0, c1 = plus(semiring, c0, alpha[t, k]), plus(semiring, c1, alpha[t, k + 1])
        c2, c3 = plus(semiring, c2, alpha[t, k + 2]), plus(semiring, c3, alpha[t, k + 3])
        k += 4
    while k < K:
        alpha[t, k] = acc[k] * node[t, k]
        c0 = plus(semiring, c0, alpha[t, k])
        k += 1
    c = plus(semiring, plus(semiring, c0, c1), plus(semiring, c2, c3))
    if not c > 0.0:
        return False
    scale[t] = c
    inv = 1.0 / c
    for k in range(K):
        alpha[t, k] *= inv
    return True


@njit(inline="always")
def _sweep_fours(semiring, alpha, trans, acc, t, j, K, width):
    """acc[:width] (+)= alpha[t - 1, j'] trans[j', :width] for the previous states j' from j on,
    four a sweep (a quarter of the loads and stores of acc), then one by one."""
    while j + 4 <= K:
        a0, a1, a2, a3 = alpha[t - 1, j], alpha[t - 1, j + 1], alpha[t - 1, j + 2], alpha[t - 1, j + 3]
        for k in range(width):
            pair0 = plus(semiring, a0 * trans[j, k], a1 * trans[j + 1, k])
            pair1 = plus(semiring, a2 * trans[j + 2, k], a3 * trans[j + 3, k])
            acc[k] = plus(semiring, acc[k], plus(semiring, pair0, pair1))
        j += 4
    while j < K:
        a = alpha[t - 1, j]
        for k in range(width):
            acc[k] = plus(semiring, acc[k], a * trans[j, k])
        j += 1


@njit(inline="always")
def _ended(semiring, alpha, final, scale, n, K):
    """log Z from the last column: c_end = (+)_k alpha[n-1, k] final[k] (see _log_z)."""
    c_end = 0.0
    for k in range(K):
        c_end = plus(semiring, c_end, alpha[n - 1, k] * final[k])
    return _log_z(scale, n, c_end)


@njit(cache=True, fastmath=FASTMATH)
def _forward_narrow(semiring, node, trans, initial, final, alpha, scale):
    n, K = node.shape
    if not _first_column(semiring, node, initial, alpha, scale):
        return NEG_INF
    # alpha[t] before the node scores is summed in an array of its own, which LLVM then knows
    # overlaps neither alpha[t - 1] nor trans (the forward pass 8% faster on CoNLL-2000). Rows are
    # indexed in place, not taken as views: a view costs a reference count taken and dropped,
    # calls numba leaves in the loop (5% of the pass).
    acc = np.empty(K)
    for t in range(1, n):
        for k in range(K):
            acc[k] = 0.0
        _sweep_fours(semiring, alpha, trans, acc, t, 0, K, K)
        if not _close_column(semiring, acc, node, alpha, scale, t):
            return NEG_INF
    return _ended(semiring, alpha, final, scale, n, K)


@njit(cache=True, fastmath=FASTMATH)
def _forward_wide(semiring, node, trans, initial, final, alpha, scale):
    n, K = node.shape
    if not _first_column(semiring, node, initial, alpha, scale):
        return NEG_INF
    padded = _padded_rows(trans)
    acc = np.empty((1, padded.shape[1]))
    before = acc[0]  # alpha[t] before the node scores, in a row of its own (see _forward_narrow)
    for t in range(1, n):
        _sweeps(semiring, alpha, t - 1, padded, acc, K)
        if not _close_column(semiring, before, node, alpha, scale, t):
            return NEG_INF
    return _ended(semiring, alpha, final, scale, n, K)


@njit(inline="always")
def _padded_rows(matrix):
    """A copy of the K x K matrix, its rows zero-padded to whole vectors (their sums are never read)."""
    K = matrix.shape[0]
    padded = np.zeros((K, vectors.whole(K)))
    for j in range(K):
        for k in range(K):
            padded[j, k] = matrix[j, k]
    return padded


@njit(inline="always")
def _sweeps(semiring, A, t, M, acc, K):
    """acc[0] = (+)_j A[t, j] M[j] (M's padded rows): eight j a sweep in two groups of four, added
    to acc[0] in the order one sweep per group adds them (as _sweep_fours), then fours, then ones."""
    width = M.shape[1]
    for k in range(0, width, vectors.LANES):
        vectors.store(acc, 0, k, vectors.zero())
    j = 0
    while j + 8 <= K:
        a0, a1, a2, a3 = A[t, j], A[t, j + 1], A[t, j + 2], A[t, j + 3]
        a4, a5, a6, a7 = A[t, j + 4], A[t, j + 5], A[t, j + 6], A[t, j + 7]
        for k in range(0, width, vectors.LANES):
            first = _four(semiring, a0, a1, a2, a3, M, j, k)
            second = _four(semiring, a4, a5, a6, a7, M, j + 4, k)
            sum_ = vectors.plus(semiring, vectors.plus(semiring, vectors.load(acc, 0, k), first), second)
            vectors.store(acc, 0, k, sum_)
        j += 8
    while j + 4 <= K:
        a0, a1, a2, a3 = A[t, j], A[t, j + 1], A[t, j + 2], A[t, j + 3]
        for k in range(0, width, vectors.LANES):
            sum_ = vectors.plus(semiring, vectors.load(acc, 0, k), _four(semiring, a0, a1, a2, a3, M, j, k))
            vectors.store(acc, 0, k, sum_)
        j += 4
    while j < K:
        a = A[t, j]
        for k in range(0, width, vectors.LANES):
            vectors.store(acc, 0, k, vectors.plus_times(semiring, a, vectors.load(M, j, k), vectors.load(acc, 0, k)))
        j += 1


@njit(inline="always")
def _four(semiring, a0, a1, a2, a3, M, j, k):
    """(a0 M[j] (+) a1 M[j + 1]) (+) (a2 M[j + 2] (+) a3 M[j + 3]) at columns k:k + LANES."""
    return vectors.plus(semiring, vectors.plus_pair(semiring, a0, vectors.load(M, j, k), a1, vectors.load(M, j + 1, k)),
                        vectors.plus_pair(semiring, a2, vectors.load(M, j + 2, k), a3, vectors.load(M, j + 3, k)))


@njit(cache=True, fastmath=FASTMATH)
def backward_edges(node, trans_t, final, scale, alpha, beta, edge_raw):
    """Sum-semiring backward pass, leaving the node marginals alpha[t, k] beta[t, k] in `beta`,
    and edge_raw[k, j] = sum_t w_t[k] alpha[t-1, j] with w_t[k] = node[t, k] beta[t, k] / c_t
    (times trans[j, k], the expected number of j -> k transitions; edge_raw is overwritten).
    beta[t-1] = trans @ w_t is summed as K rows of trans_t (trans transposed) scaled by w_t[k]
    (unit-stride and vectorised, in a fixed order): a dot product per state would be a serial
    reduction without reassoc (3x the time). The w_t are kept, so the edge sums over every
    position are one product, w[1:].T @ alpha[:-1] (a third of the per-sentence E-step as an
    outer product per position). `node` is overwritten: its rows 1.. hold the w_t."""
    if node.shape[1] >= WIDE_FROM:
        _backward_wide(node, trans_t, final, scale, alpha, beta, edge_raw)
    else:
        _backward_narrow(node, trans_t, final, scale, alpha, beta, edge_raw)


@njit(inline="always")
def _last_column(final, scale, beta, n, K):
    """beta[n - 1] = final / c_end: the backward passes' start."""
    inv_end = 1.0 / scale[n]
    for k in range(K):
        beta[n - 1, k] = final[k] * inv_end


@njit(inline="always")
def _weigh_column(node, scale, alpha, beta, w, t, K):
    """w_t = node[t] beta[t] / c_t (w may be node's memory: node[t] is read here for the last
    time), and beta[t] becomes the marginal alpha[t] beta[t] (it is read for the last time too)."""
    inv = 1.0 / scale[t]
    for k in range(K):
        w[t, k] = node[t, k] * beta[t, k] * inv
        beta[t, k] *= alpha[t, k]


@njit(inline="always")
def _close_backward(alpha, beta, w, n, K, edge_raw):
    """beta[0] becomes its marginal; edge_raw[k, j] = sum_t w_t[k] alpha[t-1, j], one product."""
    for k in range(K):
        beta[0, k] *= alpha[0, k]
    if n > 1:
        _edge_product(w, alpha, n, K, edge_raw)
    else:
        edge_raw[:, :] = 0.0


@njit(inline="always")
def _edge_product(w, alpha, n, K, edge_raw):
    """edge_raw = w[1:].T @ alpha[:n - 1], tiled (emc/structures/chain/products.py) over a copy of
    alpha's rows padded as the tiles read them: a stepwise pass (m = 1) on CoNLL-2000 spent 9% of
    its time in OpenBLAS's small product here."""
    width = products.padded_width(K)
    rows = np.zeros((n - 1, width))
    for t in range(n - 1):
        for j in range(K):
            rows[t, j] = alpha[t, j]
    raw = np.empty((K, width))
    products.multiply(w.reshape(w.size), K, np.int64(1), K, K, rows, np.int64(0), np.int64(0), n - 1, raw,
                      np.int64(0), np.int64(0))
    for k in range(K):
        for j in range(K):
            edge_raw[k, j] = raw[k, j]


@njit(cache=True, fastmath=FASTMATH)
def _backward_narrow(node, trans_t, final, scale, alpha, beta, edge_raw):
    n, K = node.shape
    _last_column(final, scale, beta, n, K)
    w = node  # node[t] is read for the last time when w_t is made from it: w_t takes its place
    for t in range(n - 1, 0, -1):
        _weigh_column(node, scale, alpha, beta, w, t, K)
        for j in range(K):
            beta[t - 1, j] = 0.0
        # four next states per sweep, as in `forward` (rows indexed in place, as there)
        k = 0
        while k + 4 <= K:
            w0, w1, w2, w3 = w[t, k], w[t, k + 1], w[t, k + 2], w[t, k + 3]
            for j in range(K):
                beta[t - 1, j] += (trans_t[k, j] * w0 + trans_t[k + 1, j] * w1) + \
                    (trans_t[k + 2, j] * w2 + trans_t[k + 3, j] * w3)
            k += 4
        while k < K:
            wk = w[t, k]
            for j in range(K):
                beta[t - 1, j] += trans_t[k, j] * wk
            k += 1
    _close_backward(alpha, beta, w, n, K, edge_raw)


@njit(cache=True, fastmath=FASTMATH)
def _backward_wide(node, trans_t, final, scale, alpha, beta, edge_raw):
    n, K = node.shape
    _last_column(final, scale, beta, n, K)
    rows = _padded_rows(trans_t)  # as _forward_wide
    acc = np.empty((1, rows.shape[1]))
    w = node  # node[t] is read for the last time when w_t is made from it: w_t takes its place
    if n > 1:
        _weigh_row(beta, n - 1, node, scale, alpha, beta, n - 1, K)
    for t in range(n - 1, 0, -1):
        _sweeps(np.int64(SUM), w, t, rows, acc, K)
        if t > 1:
            _weigh_row(acc, 0, node, scale, alpha, beta, t - 1, K)
        else:
            for j in range(K):
                beta[0, j] = acc[0, j]
    _close_backward(alpha, beta, w, n, K, edge_raw)


@njit(inline="always")
def _weigh_row(source, s, node, scale, alpha, beta, t, K):
    """_weigh_column of position t with beta[t] = source[s] (acc, the sweeps' sums; or beta[t]
    itself), its whole vectors at a time: written as a loop, LLVM left it scalar (w is node's
    memory), a quarter of the backward pass. The same products: w = node beta / c_t, beta alpha."""
    inv = 1.0 / scale[t]
    k = 0
    while k + vectors.LANES <= K:
        b = vectors.load(source, s, k)
        vectors.store(node, t, k, vectors.scaled(inv, vectors.times(vectors.load(node, t, k), b)))
        vectors.store(beta, t, k, vectors.times(b, vectors.load(alpha, t, k)))
        k += vectors.LANES
    while k < K:
        b = source[s, k]
        node[t, k] = node[t, k] * b * inv
        beta[t, k] = b * alpha[t, k]
        k += 1


@njit(cache=True)
def backtrack(node, trans, final, alpha, path):
    """The best path from max-semiring alphas (no back-pointers stored)."""
    n, K = node.shape
    best, arg = -1.0, 0
    for k in range(K):
        v = alpha[n - 1, k] * final[k]
        if v > best:
            best, arg = v, k
    path[n - 1] = arg
    for t in range(n - 1, 0, -1):
        nxt = path[t]
        best, arg = -1.0, 0
        for j in range(K):
            v = alpha[t - 1, j] * trans[j, nxt]
            if v > best:
                best, arg = v, j
        path[t - 1] = arg


@njit(cache=True)
def sample_path(node, trans, final, alpha, path):
    """A path drawn from the posterior, given sum-semiring alphas (backward sampling)."""
    n, K = node.shape
    weights = np.empty(K)
    for k in range(K):
        weights[k] = alpha[n - 1, k] * final[k]
    path[n - 1] = draw(weights, K)
    for t in range(n - 1, 0, -1):
        nxt = path[t]
        for j in range(K):
            weights[j] = alpha[t - 1, j] * trans[j, nxt]
        path[t - 1] = draw(weights, K)


# --- order 1, all states, many sequences at once (sum only) -----------------------------------
# The same recursions as `forward`/`backward_edges`, run for a batch of sequences together so that
# each position costs one (sequences x K) @ (K x K) matrix product instead of one vector-matrix
# product per sequence. Sequences are sorted longest first and stored position-major: the rows of
# position t are start[t] .. start[t] + active[t], row start[t] + b belonging to sequence b, so the
# sequences still running at t are a prefix. The products are emc/structures/chain/products.py's,
# register-tiled: at K = 45 on CoNLL-2000 they ran at 115 GFLOP/s where BLAS's ran at 45.

@njit(cache=True)
def batch_layout(lengths):
    """active[t] = how many of the (longest-first, non-empty) sequences reach position t;
    start[t] = the first row of position t (start[T] = the number of rows)."""
    T = lengths[0]
    active = np.zeros(T + 1, np.int64)
    for b in range(lengths.shape[0]):  # loops, not slices: a slice's shape checks cost 2 s of compiling
        for t in range(lengths[b]):
            active[t] += 1
    start = np.zeros(T + 1, np.int64)
    for t in range(T):
        start[t + 1] = start[t] + active[t]
    return active, start


@njit(cache=True)
def lone_layout(n):
    """batch_layout's `start` for a lone sequence of length n: 0, 1, ..., n. The per-sequence
    glue passes it with b = np.int64(0), so the glue's functions compile once for both callers
    (np.arange and a literal 0 each cost a third of a second of compiling)."""
    start = np.empty(n + 1, np.int64)
    for t in range(n + 1):
        start[t] = t
    return start


@njit(cache=True)
def longest_first(lengths, count):
    """The indices q with lengths[q] > 0, longest first (ties in index order): a counting sort, as
    lengths are small; `count` is how many there are."""
    most = 0
    for q in range(lengths.shape[0]):
        most = max(most, lengths[q])
    at = np.zeros(most + 2, np.int64)  # at[most - n + 1]: where length n starts, longest first
    for q in range(lengths.shape[0]):
        if lengths[q] > 0:
            at[most - lengths[q] + 1] += 1
    for n in range(1, most + 2):
        at[n] += at[n - 1]
    order = np.empty(count, np.int64)
    for q in range(lengths.shape[0]):
        if lengths[q] > 0:
            slot = most - lengths[q]
            order[at[slot]] = q
            at[slot] += 1
    return order


@njit(cache=True, fastmath=FASTMATH)
def marginals_batch(lengths, node, trans, trans_t, initial, final, weights, marg, edge_marg, log_z):
    """Sum-semiring marginals of a batch: marg[row, k] = P(z_t = k) in the layout of batch_layout;
    edge_marg[k, j] += sum_b weights[b] E_b[#(j -> k)]; log_z[b] = log Z of sequence b (-inf when
    impossible: its marginals are then zero and it adds nothing). `node` is overwritten (it holds
    the backward messages' weights w afterwards)."""
    K = trans.shape[0]
    active, start = batch_layout(lengths)
    width = products.padded_width(K)
    # with whole vectors of states the alphas live in marg's memory and become the marginals in
    # place (a buffer the size of a batch's marginals taken for each batch cost 3% of an iteration
    # at 256 states: new zeroed pages); else in rows of their own, padded as the products need
    alpha = marg if width == K else np.empty((start[-1], width))
    inv = _forward_batch(lengths, active, start, node, products.panels(trans, width), initial, alpha, log_z)
    inv_end = _end_batch(lengths, start, alpha, final, log_z)
    raw = _backward_batch(lengths, active, start, node, products.panels(trans_t, width), final, weights, alpha, inv,
                          inv_end, marg, log_z)
    for k in range(K):
        for j in range(K):
            edge_marg[k, j] += raw[k, j] * trans_t[k, j]


@njit(inline="always")
def _times(A, a, rows, M, K, C, c):
    """C[c:c + rows] = A[a:a + rows, :K] @ the K x K matrix M holds as products.panels."""
    columns = A.shape[1]
    products.multiply(A.reshape(A.size), a * columns, columns, np.int64(1), rows, M, np.int64(0), K, K, C, c,
                      np.int64(0))


@njit(inline="always")
def _add_edge_sums(W, w, rows, X, x, raw):
    """raw[:, :K] += W[w:w + rows].T @ X[x:x + rows, :K]: a position's edge sums."""
    columns = W.shape[1]
    products.multiply(W.reshape(W.size), w * columns, np.int64(1), columns, raw.shape[0], X, x, np.int64(0), rows,
                      raw, np.int64(0), np.int64(1))


@njit(inline="always")
def _forward_batch(lengths, active, start, node, trans, initial, alpha, log_z):
    """marginals_batch's forward pass: the scaled alphas into alpha (their K columns), log_z[b] =
    sum_t log c_t; returns 1 / c_t per row (0 from where a sequence is impossible)."""
    B, K, T = lengths.shape[0], node.shape[1], lengths[0]
    inv = np.empty(start[T])
    log_z[:] = 0.0
    for t in range(T):
        r = start[t]
        if t > 0:
            _times(alpha, start[t - 1], active[t], trans, K, alpha, r)
        else:
            for b in range(B):
                for k in range(K):
                    alpha[b, k] = initial[k]
        for b in range(active[t]):
            # alpha's row times the node scores and their sum c, whole vectors at a time (lane
            # sums added in a fixed tree), then the rest; written out here: inlined as a function
            # into this loop, numba takes and drops references to its arrays at every row
            row = r + b
            sums = vectors.zero()
            k = 0
            while k + vectors.LANES <= K:
                scored = vectors.times(vectors.load(alpha, row, k), vectors.load(node, row, k))
                vectors.store(alpha, row, k, scored)
                sums = vectors.add(sums, scored)
                k += vectors.LANES
            rest = 0.0
            while k < K:
                alpha[row, k] *= node[row, k]
                rest += alpha[row, k]
                k += 1
            c = vectors.total(sums) + rest
            # an impossible sequence keeps zeros from here on (as `forward` returns -inf)
            i = 0.0
            if c > 0.0:
                i = 1.0 / c
                log_z[b] += np.log(c)
            else:
                log_z[b] = NEG_INF
            inv[row] = i
            k = 0
            while k + vectors.LANES <= K:
                vectors.store(alpha, row, k, vectors.scaled(i, vectors.load(alpha, row, k)))
                k += vectors.LANES
            while k < K:
                alpha[row, k] *= i
                k += 1
    return inv


@njit(inline="always")
def _backward_batch(lengths, active, start, node, trans_t, final, weights, alpha, inv, inv_end, marg, log_z):
    """marginals_batch's backward pass: the marginals into marg (alpha may be marg's memory), the
    w_t into node; returns the raw edge sums raw[k, j] = sum_t,b w_t[b, k] weights[b] alpha_t-1[b, j]
    (trans[j, k] times that is the expected count)."""
    B, K, T = lengths.shape[0], node.shape[1], lengths[0]
    width = alpha.shape[1]
    beta = np.empty((B, width))
    raw = np.zeros((K, width))
    # batch EM weighs every sequence 1: the edge sums then take the alphas as they are, without
    # a weighted copy per position (3% of the batched E-step)
    unweighted = True
    for b in range(B):
        unweighted = unweighted and weights[b] == 1.0
    weighted = np.empty((0 if unweighted else B, width))
    for t in range(T - 1, -1, -1):
        r = start[t]
        going_on = active[t + 1]  # sequences that continue to t + 1 (the others end at t)
        if going_on > 0:
            r1 = start[t + 1]
            _times(node, r1, going_on, trans_t, K, beta, np.int64(0))
            if unweighted:
                _add_edge_sums(node, r1, going_on, alpha, r, raw)
            else:
                for b in range(going_on):
                    for k in range(width):
                        weighted[b, k] = alpha[r + b, k] * weights[b]
                _add_edge_sums(node, r1, going_on, weighted, np.int64(0), raw)
        for b in range(going_on, active[t]):
            for k in range(K):
                beta[b, k] = final[k] * inv_end[b]
        for b in range(active[t]):
            if log_z[b] == NEG_INF:  # zeros, even against infinite or NaN scores
                marg[r + b, :] = 0.0
                node[r + b, :] = 0.0
                continue
            row, i = r + b, inv[r + b]
            k = 0
            while k + vectors.LANES <= K:  # whole vectors, as in _forward_batch
                weighed = vectors.load(beta, b, k)
                vectors.store(marg, row, k, vectors.times(vectors.load(alpha, row, k), weighed))
                vectors.store(node, row, k, vectors.times(vectors.load(node, row, k), vectors.scaled(i, weighed)))
                k += vectors.LANES
            while k < K:
                marg[row, k] = alpha[row, k] * beta[b, k]
                node[row, k] *= beta[b, k] * i
                k += 1
    return raw


@njit(cache=True, fastmath=FASTMATH)
def _end_batch(lengths, start, alpha, final, log_z):
    """The end of each sequence of a batch (marginals_batch's forward pass done): log_z[b] takes
    its last factor, c_end = sum_k alpha[last, k] final[k] (-inf when zero); returns 1 / c_end per
    sequence (0 for an impossible one), the backward pass's start."""
    B, K = lengths.shape[0], final.shape[0]
    inv_end = np.empty(B)
    for b in range(B):
        row = start[lengths[b] - 1] + b
        c = 0.0
        for k in range(K):
            c += alpha[row, k] * final[k]
        inv_end[b] = 0.0
        if c > 0.0 and log_z[b] > NEG_INF:
            inv_end[b] = 1.0 / c
            log_z[b] += np.log(c)
        else:
            log_z[b] = NEG_INF
    return inv_end


# --- order 1, allowed states per position -------------------------------------------------------

@njit(cache=True, fastmath=FASTMATH)
def forward_pruned(semiring, node, trans, initial, final, states, lo, hi, alpha, scale):
    n, K = node.shape
    for t in range(n):  # loops, not a slice: see batch_layout
        for k in range(K):
            alpha[t, k] = 0.0
    c = 0.0
    for kk in range(lo[0], hi[0]):
        k = states[kk]
        alpha[0, k] = initial[k] * node[0, k]
        c = plus(semiring, c, alpha[0, k])
    if not c > 0.0:
        return NEG_INF
    scale[0] = c
    for kk in range(lo[0], hi[0]):
        alpha[0, states[kk]] /= c
    for t in range(1, n):
        c = 0.0
        for kk in range(lo[t], hi[t]):
            k = states[kk]
            acc = 0.0
            for jj in range(lo[t - 1], hi[t - 1]):
                j = states[jj]
                acc = plus(semiring, acc, alpha[t - 1, j] * trans[j, k])
            alpha[t, k] = acc * node[t, k]
            c = plus(semiring, c, alpha[t, k])
        if not c > 0.0:
            return NEG_INF
        scale[t] = c
        for kk in range(lo[t], hi[t]):
            alpha[t, states[kk]] /= c
    c_end = 0.0
    for kk in range(lo[n - 1], hi[n - 1]):
        k = states[kk]
        c_end = plus(semiring, c_end, alpha[n - 1, k] * final[k])
    return _log_z(scale, n, c_end)


@njit(cache=True, fastmath=FASTMATH)
def backward_pruned(node, trans, final, states, lo, hi, alpha, scale, beta, edge_raw):
    n, K = node.shape
    beta[:n, :] = 0.0
    for kk in range(lo[n - 1], hi[n - 1]):
        k = states[kk]
        beta[n - 1, k] = final[k] / scale[n]
    for t in range(n - 1, 0, -1):
        inv = 1.0 / scale[t]
        for jj in range(lo[t - 1], hi[t - 1]):
            j = states[jj]
            acc = 0.0
            a = alpha[t - 1, j]
            for kk in range(lo[t], hi[t]):
                k = states[kk]
                w = node[t, k] * beta[t, k] * inv
                acc += trans[j, k] * w
                edge_raw[k, j] += a * w
            beta[t - 1, j] = acc


# --- order 1: marginals and the best path, whichever instance applies --------------------------

@njit(cache=True)
def marginals(semiring, node, trans, trans_t, initial, final, states, lo, hi, node_marg, edge_marg):
    """Part marginals of one sequence: node_marg[t, k] = P(z_t = k) and edge_marg[k, j] =
    E[#(j -> k)] under sum (both overwritten: a caller need not clear them); the 0/1 indicators
    of the best path under max. Returns log Z (or the log best score). `states` empty means
    every state is allowed everywhere. trans_t is trans transposed (C-contiguous), which the
    dense backward pass reads: a caller that scores many sequences with one trans makes it once.
    Under sum `node` is overwritten (as by marginals_batch)."""
    n, K = node.shape
    alpha = np.empty((n, K))
    scale = np.empty(n + 1)
    pruned = states.shape[0] > 0
    forward_semiring = SUM if is_sampling(semiring) else semiring
    if pruned:
        log_z = forward_pruned(forward_semiring, node, trans, initial, final, states, lo, hi, alpha, scale)
    else:
        log_z = forward(forward_semiring, node, trans, initial, final, alpha, scale)
    # the paths below add into the marginals; the sum instances' backward passes write them whole
    # (pruned: all but the edge sums)
    if log_z == NEG_INF or log_z != log_z or semiring == MAX or is_sampling(semiring):
        node_marg[:, :] = 0.0
    if log_z == NEG_INF or log_z != log_z or semiring == MAX or is_sampling(semiring) or pruned:
        edge_marg[:, :] = 0.0
    if log_z == NEG_INF or log_z != log_z:
        return log_z
    if semiring == MAX or is_sampling(semiring):
        # the best path's indicators, or the average indicators of `samples` drawn paths
        path = np.empty(n, np.int64)
        draws = sample_count(semiring) if is_sampling(semiring) else 1
        share = 1.0 / draws
        for _ in range(draws):
            if semiring == MAX:
                backtrack(node, trans, final, alpha, path)
            else:
                sample_path(node, trans, final, alpha, path)
            for t in range(n):
                node_marg[t, path[t]] += share
                if t > 0:
                    edge_marg[path[t], path[t - 1]] += share
        return log_z
    # beta lives in node_marg's memory and the raw edge sums in edge_marg's: both become the
    # marginals in place (fewer allocations and passes per sentence)
    beta = node_marg
    if pruned:
        backward_pruned(node, trans, final, states, lo, hi, alpha, scale, beta, edge_marg)
        for t in range(n):
            for k in range(K):
                node_marg[t, k] *= alpha[t, k]
    else:
        backward_edges(node, trans_t, final, scale, alpha, beta, edge_marg)
    for k in range(K):
        for j in range(K):
            edge_marg[k, j] *= trans_t[k, j]
    return log_z


@njit(inline="always")
def read_path(semiring, node, trans, initial, final, states, lo, hi, path):
    """One path into `path`, read back from the forward pass under `semiring`: the best (MAX) or
    one drawn from the posterior (SUM); returns its log score or log Z (-inf: path all -1)."""
    n, K = node.shape
    alpha = np.empty((n, K))
    scale = np.empty(n + 1)
    if states.shape[0] > 0:
        log_z = forward_pruned(semiring, node, trans, initial, final, states, lo, hi, alpha, scale)
    else:
        log_z = forward(semiring, node, trans, initial, final, alpha, scale)
    if log_z == NEG_INF or log_z != log_z:
        path[:] = -1
        return log_z
    if semiring == MAX:
        backtrack(node, trans, final, alpha, path)
    else:
        sample_path(node, trans, final, alpha, path)
    return log_z


# Inlined into its callers (the decoders): as a compiled function of its own, each caller would
# link it and the DPs it calls again, half a second of a cold start's compiling.
@njit(inline="always")
def viterbi(node, trans, initial, final, states, lo, hi, path):
    return read_path(MAX, node, trans, initial, final, states, lo, hi, path)


@njit(cache=True)
def sample(node, trans, initial, final, states, lo, hi, path):
    """One path drawn from the posterior into `path`; returns log Z (-inf: path all -1)."""
    return read_path(SUM, node, trans, initial, final, states, lo, hi, path)


# --- order 2 ------------------------------------------------------------------------------------
# States 0..K-1, START = K. trans[i, j, k] = score of k after (i, j) = (z_{t-2}, z_{t-1});
# final[j, k] = score of STOP after (j, k). alpha[t, j, k] is over (z_{t-1}, z_t). Positions loop
# over allowed-state lists (dense: 0..K-1 everywhere), since the K^3 work per token dwarfs the
# cost of the index lists. `ext` is `states` with START appended, and position -1 (before the
# first token) allows only START: see _span.

@njit(inline="always")
def _span(lo, hi, n_states, t):
    """The index range into `ext` of the states allowed at position t (t = -1: START only)."""
    if t < 0:
        return n_states, n_states + 1
    return lo[t], hi[t]


@njit(cache=True)
def _with_start(states, K):
    ext = np.empty(states.shape[0] + 1, np.int64)
    copy_into(ext, states)  # not ext[:-1] = states: a slice assignment compiles a shape check (seconds)
    ext[-1] = K
    return ext


@njit(cache=True, fastmath=FASTMATH)
def forward2(semiring, node, trans, final, states, lo, hi, alpha, scale):
    n, K = node.shape
    m = states.shape[0]
    ext = _with_start(states, K)
    alpha[:n, :, :] = 0.0
    for t in range(n):
        c = 0.0
        jlo, jhi = _span(lo, hi, m, t - 1)
        ilo, ihi = _span(lo, hi, m, t - 2)
        for jj in range(jlo, jhi):
            j = ext[jj]
            for kk in range(lo[t], hi[t]):
                k = ext[kk]
                acc = 0.0
                if t == 0:
                    acc = trans[K, K, k]
                else:
                    for ii in range(ilo, ihi):
                        i = ext[ii]
                        acc = plus(semiring, acc, alpha[t - 1, i, j] * trans[i, j, k])
                v = acc * node[t, k]
                alpha[t, j, k] = v
                c = plus(semiring, c, v)
        if not c > 0.0:
            return NEG_INF
        scale[t] = c
        inv = 1.0 / c
        for jj in range(jlo, jhi):
            for kk in range(lo[t], hi[t]):
                alpha[t, ext[jj], ext[kk]] *= inv
    c_end = 0.0
    jlo, jhi = _span(lo, hi, m, n - 2)
    for jj in range(jlo, jhi):
        j = ext[jj]
        for kk in range(lo[n - 1], hi[n - 1]):
            k = ext[kk]
            c_end = plus(semiring, c_end, alpha[n - 1, j, k] * final[j, k])
    return _log_z(scale, n, c_end)


@njit(cache=True, fastmath=FASTMATH)
def marginals2(semiring, node, trans, final, states, lo, hi, node_marg, edge_marg):
    """Order-2 marginals: node_marg[t, k] = P(z_t = k); edge_marg[i, j, k] += E[#(i, j -> k)]
    (i, j may be START = K, k may be STOP = K). Max semiring: indicators of the best path.
    Returns log Z (or the best log score)."""
    if semiring == SUM:
        return marginals2_sum(node, trans, final, states, lo, hi, node_marg, edge_marg)
    n, K = node.shape
    alpha = np.empty((n, K + 1, K))
    scale = np.empty(n + 1)
    log_z = forward2(SUM if is_sampling(semiring) else semiring, node, trans, final, states, lo, hi, alpha, scale)
    node_marg[:, :] = 0.0
    if log_z == NEG_INF or log_z != log_z:
        return log_z
    # the best path's indicators, or the average indicators of `samples` drawn paths
    path = np.empty(n, np.int64)
    draws = sample_count(semiring) if is_sampling(semiring) else 1
    share = 1.0 / draws
    for _ in range(draws):
        if semiring == MAX:
            _backtrack2(node, trans, final, states, lo, hi, alpha, path)
        else:
            _sample_path2(trans, final, alpha, path)
        prev2, prev = K, K
        for t in range(n):
            node_marg[t, path[t]] += share
            edge_marg[prev2, prev, path[t]] += share
            prev2, prev = prev, path[t]
        edge_marg[prev2, prev, K] += share
    return log_z


@njit(cache=True, fastmath=FASTMATH)
def marginals2_sum(node, trans, final, states, lo, hi, node_marg, edge_marg):
    """marginals2() under sum: what an E-step under sum calls, which then never compiles the
    back-tracking and sampling that the other semirings run (seconds of a cold start)."""
    n, K = node.shape
    m = states.shape[0]
    ext = _with_start(states, K)
    alpha = np.empty((n, K + 1, K))
    scale = np.empty(n + 1)
    log_z = forward2(np.int64(SUM), node, trans, final, states, lo, hi, alpha, scale)  # int64: one compile
    node_marg[:, :] = 0.0
    if log_z == NEG_INF or log_z != log_z:
        return log_z
    beta = np.zeros((n, K + 1, K))
    jlo, jhi = _span(lo, hi, m, n - 2)
    for jj in range(jlo, jhi):
        j = ext[jj]
        for kk in range(lo[n - 1], hi[n - 1]):
            k = ext[kk]
            beta[n - 1, j, k] = final[j, k] / scale[n]
            edge_marg[j, k, K] += alpha[n - 1, j, k] * beta[n - 1, j, k]
    for t in range(n - 1, 0, -1):
        inv = 1.0 / scale[t]
        jlo, jhi = _span(lo, hi, m, t - 1)
        ilo, ihi = _span(lo, hi, m, t - 2)
        for jj in range(jlo, jhi):
            j = ext[jj]
            for kk in range(lo[t], hi[t]):
                k = ext[kk]
                w = node[t, k] * beta[t, j, k] * inv
                for ii in range(ilo, ihi):
                    i = ext[ii]
                    beta[t - 1, i, j] += trans[i, j, k] * w
                    edge_marg[i, j, k] += alpha[t - 1, i, j] * trans[i, j, k] * w
    for t in range(n):
        jlo, jhi = _span(lo, hi, m, t - 1)
        for jj in range(jlo, jhi):
            j = ext[jj]
            for kk in range(lo[t], hi[t]):
                k = ext[kk]
                node_marg[t, k] += alpha[t, j, k] * beta[t, j, k]
    for kk in range(lo[0], hi[0]):
        k = ext[kk]
        edge_marg[K, K, k] += node_marg[0, k]
    return log_z


@njit(cache=True)
def _backtrack2(node, trans, final, states, lo, hi, alpha, path):
    n, K = node.shape
    m = states.shape[0]
    ext = _with_start(states, K)
    best, bj, bk = -1.0, K, 0
    jlo, jhi = _span(lo, hi, m, n - 2)
    for jj in range(jlo, jhi):
        j = ext[jj]
        for kk in range(lo[n - 1], hi[n - 1]):
            k = ext[kk]
            v = alpha[n - 1, j, k] * final[j, k]
            if v > best:
                best, bj, bk = v, j, k
    path[n - 1] = bk
    if n > 1:
        path[n - 2] = bj
    for t in range(n - 1, 1, -1):
        j, k = path[t - 1], path[t]
        best, bi = -1.0, 0
        ilo, ihi = _span(lo, hi, m, t - 2)
        for ii in range(ilo, ihi):
            i = ext[ii]
            v = alpha[t - 1, i, j] * trans[i, j, k]
            if v > best:
                best, bi = v, i
        path[t - 2] = bi


@njit(cache=True)
def _sample_path2(trans, final, alpha, path):
    """A path drawn from the posterior, given sum-semiring order-2 alphas; every (previous,
    current) pair is weighed (START included), disallowed ones have alpha 0."""
    n, K = alpha.shape[0], alpha.shape[2]
    pairs = np.empty((K + 1) * K)
    for j in range(K + 1):
        for k in range(K):
            pairs[j * K + k] = alpha[n - 1, j, k] * final[j, k]
    pair = draw(pairs, (K + 1) * K)
    path[n - 1] = pair % K
    if n > 1:
        path[n - 2] = pair // K
    weights = np.empty(K + 1)
    for t in range(n - 1, 1, -1):
        j, k = path[t - 1], path[t]
        for i in range(K + 1):
            weights[i] = alpha[t - 1, i, j] * trans[i, j, k]
        path[t - 2] = draw(weights, K + 1)


@njit(cache=True)
def sample2(node, trans, final, states, lo, hi, path):
    """One order-2 path drawn from the posterior into `path`; returns log Z (-inf: path all -1)."""
    n, K = node.shape
    alpha = np.empty((n, K + 1, K))
    scale = np.empty(n + 1)
    log_z = forward2(SUM, node, trans, final, states, lo, hi, alpha, scale)
    if log_z == NEG_INF or log_z != log_z:
        path[:] = -1
        return log_z
    _sample_path2(trans, final, alpha, path)
    return log_z


@njit(cache=True)
def viterbi2(node, trans, final, states, lo, hi, path):
    n, K = node.shape
    alpha = np.empty((n, K + 1, K))
    scale = np.empty(n + 1)
    log_z = forward2(MAX, node, trans, final, states, lo, hi, alpha, scale)
    if log_z == NEG_INF or log_z != log_z:
        path[:] = -1
        return log_z
    _backtrack2(node, trans, final, states, lo, hi, alpha, path)
    return log_z


@njit(cache=True)
def dense_states(n, K):
    """Allowed-state lists that allow every state at every position (for the order-2 DP)."""
    states = np.arange(K).astype(np.int32)
    lo = np.zeros(n, np.int64)
    hi = np.full(n, K, np.int64)
    return states, lo, hi


# What the glue calls: each compiled once, not linked into every entry point (emc/structures/pointers.py).
marginals_by_pointer = by_pointer(marginals)
marginals2_by_pointer = by_pointer(marginals2)
marginals2_sum_by_pointer = by_pointer(marginals2_sum)
viterbi_by_pointer = by_pointer(viterbi)
viterbi2_by_pointer = by_pointer(viterbi2)
sample_by_pointer = by_pointer(sample)
sample2_by_pointer = by_pointer(sample2)
marginals_batch_by_pointer = by_pointer(marginals_batch)
