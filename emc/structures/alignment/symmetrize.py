"""Combining the links of two directional alignments of a sentence pair (Och & Ney 2003; Koehn,
Och & Marcu 2003), both given as (source position, target position) links:

    intersection         links in both (high precision)
    union                links in either (high recall)
    grow-diag            the intersection, grown with union links next to a link (diagonals
                         included) that align a word not aligned yet, until nothing changes
    grow-diag-final      grow-diag, then any union link aligning a word not aligned yet
    grow-diag-final-and  grow-diag, then any union link aligning two words not aligned yet
The final steps visit the forward links, then the reverse ones, source position by source
position (the order of Koehn's pseudo-code, as in Moses).
"""
from __future__ import annotations

Link = tuple[int, int]
NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))
HEURISTICS = ("intersection", "union", "grow-diag", "grow-diag-final", "grow-diag-final-and")


def symmetrize(forward: set[Link], reverse: set[Link], heuristic: str) -> set[Link]:
    if heuristic not in HEURISTICS:
        raise ValueError(f"unknown symmetrization '{heuristic}' (choose from {', '.join(HEURISTICS)})")
    forward, reverse = set(forward), set(reverse)
    union = forward | reverse
    if heuristic == "intersection":
        return forward & reverse
    if heuristic == "union":
        return union
    alignment = forward & reverse
    source_aligned = {i for i, _ in alignment}
    target_aligned = {j for _, j in alignment}

    def add(link: Link) -> None:
        alignment.add(link)
        source_aligned.add(link[0])
        target_aligned.add(link[1])

    grown = True
    while grown:
        grown = False
        for i, j in sorted(alignment):
            for di, dj in NEIGHBOURS:
                new = (i + di, j + dj)
                if new in union and new not in alignment and \
                        (new[0] not in source_aligned or new[1] not in target_aligned):
                    add(new)
                    grown = True
    if heuristic == "grow-diag":
        return alignment
    both = heuristic == "grow-diag-final-and"
    for links in (forward, reverse):
        for i, j in sorted(links):
            unaligned = (i not in source_aligned, j not in target_aligned)
            if (all(unaligned) if both else any(unaligned)) and (i, j) not in alignment:
                add((i, j))
    return alignment
