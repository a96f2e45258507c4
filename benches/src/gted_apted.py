"""Times Python APTED (the algorithm class of the GTED paper's reference
implementation) on the miniF2F pairs with the paper's costs, for the gted
bench. Usage: gted_apted.py DIR REPS; prints `total_s median_s max_s equal`
(fastest pass total; median and max of per-pair fastest times; pairs
whose similarity equals the stored score to 1e-9)."""
import json
import statistics
import sys
import time

from apted import APTED, Config


class PaperCosts(Config):
    """Unit costs; rename free on equal labels, or both variables, or both
    hypotheses (the paper's freecost rule). Trees are the JSON dicts."""

    def rename(self, a, b):
        if a.get("variable_freecost") and b.get("variable_freecost"):
            return 0
        if a.get("hypothesis_freecost") and b.get("hypothesis_freecost"):
            return 0
        return 0 if a["content"] == b["content"] else 1

    def children(self, node):
        return node.get("children", [])


def size(t):
    return 1 + sum(size(c) for c in t.get("children", []))


def main():
    d, reps = sys.argv[1], int(sys.argv[2])
    items = json.load(open(f"{d}/gted_result.json"))
    pairs = []
    for n in range(1, len(items) + 1):
        a = json.load(open(f"{d}/label/ast/label_code_{n}.json"))
        b = json.load(open(f"{d}/predict/ast/predict_code_{n}.json"))
        pairs.append((a, b))
    equal = 0
    for (a, b), item in zip(pairs, items):
        dist = APTED(a, b, PaperCosts()).compute_edit_distance()
        sim = 1 - dist / max(size(a), size(b))
        equal += abs(sim - item["sub_questions"][0]["gted"]) <= 1e-9
    per = [[] for _ in pairs]
    totals = []
    for _ in range(reps):
        total = 0.0
        for i, (a, b) in enumerate(pairs):
            t = time.perf_counter()
            APTED(a, b, PaperCosts()).compute_edit_distance()
            e = time.perf_counter() - t
            per[i].append(e)
            total += e
        totals.append(total)
    best = [min(p) for p in per]
    print(min(totals), statistics.median_low(best), max(best), equal)


main()
