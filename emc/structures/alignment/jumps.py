"""The HMM aligner's jump buckets, one rule for every DP that reads or counts jumps (the chain DP
of dp.py and the position DP of hmm_sum.py): jumps of -maxjump .. maxjump, the longer ones in
the end buckets."""
from numba import njit


@njit(cache=True)
def jump_bucket(jump, maxjump):
    return min(max(jump, -maxjump), maxjump) + maxjump
