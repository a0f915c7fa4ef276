"""How far a set's figure could move by the luck of which questions the set holds.

The sets are samples of questions, and a figure over 77 or 83 answerable questions is an
estimate: another 83 questions written the same way would score differently. The percentile
bootstrap over tasks (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 13)
resamples the tasks with replacement and reads the interval off the resampled means; for two
runs of the same tasks (a change measured against the code without it) the paired bootstrap
resamples the per-task differences, which removes what the tasks share and is the usual test
for comparing two systems on one test collection (Sakai, "Evaluating evaluation metrics based
on the bootstrap", SIGIR 2006; Smucker, Allan & Carterette, CIKM 2007).

Deterministic: a fixed seed, so the same scores always give the same interval.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

# Resamples per interval: Efron & Tibshirani (1993, §13.3) ask for 1,000 or more for a
# percentile interval's tails; 2,000 keeps the 2.5% tail at 50 resamples, and a set of 91
# tasks takes a few milliseconds.
RESAMPLES = 2000
# The coverage of the interval: the conventional 95%.
LEVEL = 0.95
SEED = 14


def bootstrap_interval(values: Sequence[float]) -> tuple[float, float] | None:
    """The ``LEVEL`` percentile-bootstrap interval of the mean of ``values``; None when there
    are fewer than two."""
    if len(values) < 2:
        return None
    rng = random.Random(SEED)
    size = len(values)
    means = sorted(
        sum(values[rng.randrange(size)] for _ in range(size)) / size for _ in range(RESAMPLES)
    )
    tail = (1 - LEVEL) / 2
    low = means[int(tail * RESAMPLES)]
    high = means[min(RESAMPLES - 1, int((1 - tail) * RESAMPLES))]
    return round(low, 4), round(high, 4)


def paired_difference(
    before: Mapping[str, float], after: Mapping[str, float]
) -> tuple[float, tuple[float, float] | None, int]:
    """The mean of ``after - before`` over the tasks both hold, its bootstrap interval and
    the number of tasks it is over."""
    shared = sorted(set(before) & set(after))
    differences = [after[task] - before[task] for task in shared]
    mean = round(sum(differences) / len(differences), 4) if differences else 0.0
    return mean, bootstrap_interval(differences), len(shared)
