"""Online EM passes (Liang & Klein 2009), compiled once against the E-step ABI.

Both keep the sufficient statistics mu in the lazy parameter form of emc/codegen/abi.py:
    mu = scale * theta,   row_total[r] = sum of theta over row r,
and the E-step reads the smoothed, normalised mu directly, so no M-step ever touches the whole
table. A mini-batch's E-step marks the entries it writes (`touched`; generated code writes counts of
learned tables only); the update visits only those.

stepwise (Sato & Ishii 2000; Cappe & Moulines 2009): mu <- (1 - eta_k) mu + eta_k s, with
eta_k = (k + 2)^(-alpha). Scaling every entry by (1 - eta_k) is a change of `scale`, and adding
eta_k s is theta += eta_k s / scale on the touched entries (section 3.2): an update costs time in
proportion to what the mini-batch touched. When `scale` drifts far from 1, theta and the row totals
are rescaled (once in many updates) so nothing under- or overflows.

incremental (Neal & Hinton 1998): each example's statistics s_i are kept (sparse: the entries it
touched, in a pool), and mu <- mu + s_i' - s_i after each example.
"""
import numpy as np
from numba import njit, types

from emc.codegen.abi import ESTEP_FUNCTION, INTS, LAYOUT, META, PARAMS, PREPARE_FUNCTION
from emc.runtime.kernels import grow
from emc.structures.semiring import SUM

I64 = types.int64[::1]
I32 = types.int32[::1]
F64 = types.float64[::1]
U8 = types.uint8[::1]
COUNT_BUFFER = types.Tuple((F64, U8, I64))

# Rescale theta when the global scale leaves [RESCALE_BELOW, 1 / RESCALE_BELOW].
RESCALE_BELOW = 1e-100


@njit(cache=True)
def _rescale(theta, row_total, scale):
    s = scale[0]
    for i in range(theta.shape[0]):
        theta[i] *= s
    for r in range(row_total.shape[0]):
        row_total[r] *= s
    scale[0] = 1.0


@njit(types.Tuple((types.float64, types.int64))(
    PREPARE_FUNCTION, ESTEP_FUNCTION, I64, types.int64, types.int64, types.float64, F64, INTS, LAYOUT, META,
    PARAMS, I64, COUNT_BUFFER, F64), cache=True)
def stepwise_pass(prepare, estep, order, batch_size, k, alpha, weights, ints, layout, meta, params, row_of,
                  buffer, log_z):
    """One pass over `order` in mini-batches; returns (sum of weighted log Z, updates done so far)."""
    theta, row_total, _, _, scale = params
    counts, mark, touched = buffer
    total = 0.0
    n = order.shape[0]
    for start in range(0, n, batch_size):
        derived = prepare(meta, params)
        touched[0] = 0
        for q in range(start, min(start + batch_size, n)):
            ex = order[q]
            log_z[q] = estep(ex, ints, layout, meta, params, derived, SUM, weights[ex], buffer)
            total += weights[ex] * log_z[q]
        eta = (k + 2.0) ** (-alpha)
        scale[0] *= 1.0 - eta
        step = eta / scale[0]
        for t in range(1, touched[0] + 1):
            i = touched[t]
            add = step * counts[i]
            theta[i] += add
            row_total[row_of[i]] += add
            counts[i] = 0.0
            mark[i] = 0
        k += 1
        if scale[0] < RESCALE_BELOW or scale[0] > 1.0 / RESCALE_BELOW:
            _rescale(theta, row_total, scale)
    return total, k


@njit(cache=True)
def _same_entries(pool_index, base, length, touched, m):
    """Whether an example wrote the same entries, in the same order, as last time."""
    if length != m:
        return False
    for t in range(m):
        if pool_index[base + t] != touched[t + 1]:
            return False
    return True


@njit(types.Tuple((types.float64, I32, F64))(
    PREPARE_FUNCTION, ESTEP_FUNCTION, I64, F64, INTS, LAYOUT, META, PARAMS, I64, COUNT_BUFFER, F64,
    I32, F64, I64, I64, I64), cache=True)
def incremental_pass(prepare, estep, order, weights, ints, layout, meta, params, row_of, buffer, log_z,
                     pool_index, pool_value, slot_start, slot_length, slot_capacity):
    """One pass, one example at a time: mu <- mu - s_e + s_e'. Example e's statistics are
    pool_index/pool_value[slot_start[e]:][:slot_length[e]], with room for slot_capacity[e];
    slot_start[-1] is the pool's used length. Returns (sum of weighted log Z, the pool arrays,
    which may have grown)."""
    theta, row_total, _, _, _ = params
    counts, mark, touched = buffer
    total = 0.0
    used = slot_start[slot_start.shape[0] - 1]
    for q in range(order.shape[0]):
        ex = order[q]
        derived = prepare(meta, params)
        touched[0] = 0
        log_z[q] = estep(ex, ints, layout, meta, params, derived, SUM, weights[ex], buffer)
        total += weights[ex] * log_z[q]
        base = slot_start[ex]
        m = touched[0]
        if _same_entries(pool_index, base, slot_length[ex], touched, m):
            # the usual case after the first pass: one sweep replaces old counts by new
            for t in range(m):
                i = touched[t + 1]
                change = counts[i] - pool_value[base + t]
                theta[i] = max(theta[i] + change, 0.0)  # cancellation can leave -1e-17: clamp
                row_total[row_of[i]] = max(row_total[row_of[i]] + change, 0.0)
                pool_value[base + t] = counts[i]
                counts[i] = 0.0
                mark[i] = 0
            continue
        for t in range(slot_length[ex]):
            i = pool_index[base + t]
            theta[i] = max(theta[i] - pool_value[base + t], 0.0)
            row_total[row_of[i]] = max(row_total[row_of[i]] - pool_value[base + t], 0.0)
        if m > slot_capacity[ex]:
            if used + m > pool_index.shape[0]:
                pool_index = grow(pool_index, used + m)
                pool_value = grow(pool_value, used + m)
            slot_start[ex] = used
            slot_capacity[ex] = m
            used += m
        base = slot_start[ex]
        for t in range(m):
            i = touched[t + 1]
            pool_index[base + t] = i
            pool_value[base + t] = counts[i]
            theta[i] += counts[i]
            row_total[row_of[i]] += counts[i]
            counts[i] = 0.0
            mark[i] = 0
        slot_length[ex] = m
    slot_start[slot_start.shape[0] - 1] = used
    return total, pool_index, pool_value
