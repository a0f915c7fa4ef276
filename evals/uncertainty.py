"""How far a set's figure could move by the luck of which questions the set holds.

The sets are samples of questions, and a figure over 77 or 83 answerable questions is an
estimate: another 83 questions written the same way would score differently. The percentile
bootstrap over tasks (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 13)
resamples the tasks with replacement and reads the interval off the resampled means; for two
runs of the same tasks (a change measured against the code without it) the paired bootstrap
resamples the per-task differences, which removes what the tasks share and is the usual test
for comparing two systems on one test collection (Sakai, "Evaluating evaluation metrics based
on the bootstrap", SIGIR 2006). Beside it, the paired randomization test (Fisher's; the one
Smucker, Allan & Carterette recommend for IR, "A comparison of statistical significance tests
for information retrieval evaluation", CIKM 2007) asks how often a mean difference as large
would arise if each task's two scores were as likely the other way round: when only one or two
tasks changed, the bootstrap interval collapses to zero on one side, while the test still says
plainly that such a change is what chance gives.

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


def randomization_p(differences: Sequence[float]) -> float | None:
    """Two-sided p-value of the paired randomization (sign-flip) test that the mean of
    ``differences`` is zero, over ``RESAMPLES`` random sign assignments (the observed one
    counted, so it is never 0); None without a difference."""
    if not differences:
        return None
    observed = abs(sum(differences))
    if observed == 0:
        return 1.0
    rng = random.Random(SEED)
    # A tolerance for float sums: a flipped assignment equal to the observed one counts.
    at_least = sum(
        abs(sum(d if rng.random() < 0.5 else -d for d in differences)) >= observed - 1e-12
        for _ in range(RESAMPLES)
    )
    return round((at_least + 1) / (RESAMPLES + 1), 4)


def paired_difference(
    before: Mapping[str, float], after: Mapping[str, float]
) -> tuple[float, tuple[float, float] | None, float | None, int]:
    """The mean of ``after - before`` over the tasks both hold, its bootstrap interval, the
    randomization test's p-value and the number of tasks it is over."""
    shared = sorted(set(before) & set(after))
    differences = [after[task] - before[task] for task in shared]
    mean = round(sum(differences) / len(differences), 4) if differences else 0.0
    return mean, bootstrap_interval(differences), randomization_p(differences), len(shared)
