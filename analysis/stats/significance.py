"""The tests and estimates behind a comparison's columns: win shares, the
median's bootstrap CI, the sign test, Wilcoxon, Brown–Forsythe and the marks."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
from scipy import stats

__all__ = ["win_shares", "bootstrap_median", "median_ranks", "prepare_ranks", "ranks_kept", "forget_ranks",
           "sign_test", "wilcoxon_signed_rank", "brown_forsythe", "marks"]


def win_shares(values: np.ndarray) -> np.ndarray:
    """Win share of each column of a (configurations × options) score matrix;
    per row the highest score wins, ties split equally.

    >>> win_shares(np.array([[0.9, 0.8], [0.7, 0.7], [0.1, 0.5]])).tolist()
    [0.5, 0.5]
    """
    if values.shape[0] == 0:
        return np.zeros(values.shape[1])
    top = values == values.max(axis=1, keepdims=True)
    return (top / top.sum(axis=1, keepdims=True)).sum(axis=0) / values.shape[0]


def bootstrap_median(values: np.ndarray, *, n_bootstrap: int = 1000, confidence: float = 0.95,
                     seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of the median of ``values`` (resampling with
    replacement, ``n_bootstrap`` resamples of the same size).

    The values are sorted once, so a resample's k-th smallest value is the
    value at its k-th smallest drawn index. Those indices depend only on
    ``(n, n_bootstrap, seed)``, not on the values (:func:`median_ranks`, kept
    for the last 32 sizes), so a dashboard redrawing a comparison whose
    paired configurations did not change in number pays only a sort.

    >>> lo, hi = bootstrap_median(np.array([1.0, 2.0, 3.0, 4.0]), seed=1)
    >>> 1.0 <= lo <= 2.5 <= hi <= 4.0
    True
    """
    values = np.sort(np.asarray(values, dtype=float))
    n = len(values)
    if n == 0:
        return (float("nan"), float("nan"))
    ranks = median_ranks(n, n_bootstrap, seed)
    medians = (values[ranks[:, 0]] + values[ranks[:, 1]]) / 2
    tail = (1 - confidence) / 2
    lo, hi = np.quantile(medians, [tail, 1 - tail])
    return (float(lo), float(hi))


_RANKS: OrderedDict[tuple[int, int, int], np.ndarray] = OrderedDict()
_RANKS_KEPT = 32
_RANKS_LOCK = threading.Lock()


def median_ranks(n: int, n_bootstrap: int = 1000, seed: int = 0) -> np.ndarray:
    """(n_bootstrap, 2) int array: per resample of ``n`` indices drawn with
    replacement from ``range(n)`` by ``default_rng(seed)``, its ``(n-1)//2``-th
    and ``n//2``-th smallest drawn index (both the middle one for odd n).

    The draws are those of one ``rng.integers(0, n, size=(n_bootstrap, n))``
    (numpy's stream does not depend on how the rows are split), made in
    chunks of 4,000,000 // n rows to bound memory; the numbers must not change
    from one release to the next. Each chunk is partially sorted in place at
    the upper middle rank only; for even n the lower middle index is then the
    largest one to its left. Threads asking for the same ranks at once draw
    them once (:func:`prepare_ranks` draws ahead of a caller).
    """
    key = (int(n), int(n_bootstrap), int(seed))
    while True:
        with _RANKS_LOCK:
            if key in _RANKS:
                _RANKS.move_to_end(key)
                return _RANKS[key]
            pending = _PENDING.get(key)
            mine = pending is None
            if mine:
                pending = _PENDING[key] = threading.Event()
        if not mine:            # another thread draws these ranks: wait for them (or, if it failed, draw them)
            pending.wait()
            continue
        try:
            ranks = _draw_ranks(*key)
            with _RANKS_LOCK:
                _RANKS[key] = ranks
                while len(_RANKS) > _RANKS_KEPT:
                    _RANKS.popitem(last=False)
            return ranks
        finally:
            with _RANKS_LOCK:
                _PENDING.pop(key, None)
            pending.set()


def _draw_ranks(n: int, n_bootstrap: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ranks = np.empty((n_bootstrap, 2), dtype=np.int64)
    chunk = max(1, min(n_bootstrap, 4_000_000 // n))
    lo_k, hi_k = (n - 1) // 2, n // 2
    for start in range(0, n_bootstrap, chunk):
        m = min(chunk, n_bootstrap - start)
        draws = rng.integers(0, n, size=(m, n))
        draws.partition(hi_k, axis=1)
        ranks[start:start + m, 1] = draws[:, hi_k]
        ranks[start:start + m, 0] = draws[:, hi_k] if lo_k == hi_k else draws[:, :hi_k].max(axis=1)
    ranks.setflags(write=False)
    return ranks


_PENDING: dict[tuple[int, int, int], threading.Event] = {}
_AHEAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="seedsweep-ranks")


def prepare_ranks(keys, delay_s: float = 0.0) -> Future:
    """Draw :func:`median_ranks` for each ``(n, n_bootstrap, seed)`` of
    ``keys`` in a background thread, after ``delay_s`` seconds, so that a
    later call finds them kept. The live dashboard asks for the next count of
    pairs while it waits: a running study's next pair then costs its redraw
    a sort, not a quarter of a million draws per thousand resamples."""
    keys = [tuple(int(v) for v in k) for k in keys]

    def draw() -> None:
        time.sleep(delay_s)
        for k in keys:
            median_ranks(*k)

    return _AHEAD.submit(draw)


def ranks_kept(n: int, n_bootstrap: int = 1000, seed: int = 0) -> bool:
    """Whether :func:`median_ranks` of these arguments is kept (no draws needed)."""
    with _RANKS_LOCK:
        return (int(n), int(n_bootstrap), int(seed)) in _RANKS


def forget_ranks() -> None:
    """Empty :func:`median_ranks`' cache (a benchmark's cold start)."""
    with _RANKS_LOCK:
        _RANKS.clear()


def sign_test(b: np.ndarray, o: np.ndarray) -> float:
    """Two-sided sign test p of paired scores ``b`` against ``o`` (ties dropped)."""
    wins = int((b > o).sum())
    losses = int((o > b).sum())
    if wins + losses == 0:
        return 1.0
    # two-sided binomial test at p = 1/2: the distribution is symmetric, so the
    # outcomes as extreme as observed are both tails (scipy's binomtest gives the same)
    n = wins + losses
    return float(min(1.0, 2.0 * stats.binom.cdf(min(wins, losses), n, 0.5)))


def wilcoxon_signed_rank(d: np.ndarray) -> float:
    """Wilcoxon signed-rank p of paired differences ``d`` (1 when all are zero).

    Two-sided, zeros dropped (Wilcoxon's rule), ties given their mean rank:
    what ``scipy.stats.wilcoxon(d)`` returns. For at most 13 differences with
    a tie or a zero, SciPy computes the exact p by enumerating all 2^n sign
    flips (about half a second each time); :func:`exact_signed_rank_p` gives
    the same number by counting the sums of signed ranks instead.
    """
    d = np.asarray(d, dtype=float)
    if len(d) == 0:
        return float("nan")
    nonzero = d[d != 0]
    if not len(nonzero):
        return 1.0
    ties = len(np.unique(np.abs(nonzero))) < len(nonzero)
    if len(d) <= 13 and (ties or len(nonzero) < len(d)):
        return exact_signed_rank_p(nonzero)
    return float(stats.wilcoxon(d).pvalue)


def exact_signed_rank_p(d: np.ndarray) -> float:
    """The exact two-sided p of the signed-rank statistic T+ (the sum of the
    ranks of the positive differences, ties at their mean rank) of nonzero
    differences ``d``: 2 min(P(T+ <= t), P(T+ >= t)) with every sign pattern
    equally likely, counted exactly (doubled ranks are integers).

    >>> exact_signed_rank_p(np.array([1.0, 2.0, 2.0, -0.5]))
    0.25
    """
    doubled = np.rint(2 * stats.rankdata(np.abs(d))).astype(np.int64)
    counts = np.zeros(int(doubled.sum()) + 1)
    counts[0] = 1.0
    for r in doubled:                         # the sums of a random subset of ranks, counted
        counts[r:] = counts[r:] + counts[:-r].copy()
    observed = int(doubled[d > 0].sum())
    total = counts.sum()
    low, high = counts[:observed + 1].sum() / total, counts[observed:].sum() / total
    return float(min(1.0, 2 * min(low, high)))


def brown_forsythe(a: np.ndarray, b: np.ndarray) -> float:
    """Brown–Forsythe p (Levene with median centring) of two samples' spreads."""
    if len(a) < 2 or len(b) < 2:
        return float("nan")
    if np.all(a == a[0]) and np.all(b == b[0]):
        return 1.0
    # Levene's test with median centring: one-way ANOVA of |x − median(group)|
    za, zb = np.abs(a - np.median(a)), np.abs(b - np.median(b))
    na, nb = len(za), len(zb)
    grand = (za.sum() + zb.sum()) / (na + nb)
    between = na * (za.mean() - grand) ** 2 + nb * (zb.mean() - grand) ** 2
    within = ((za - za.mean()) ** 2).sum() + ((zb - zb.mean()) ** 2).sum()
    if within == 0:                      # no spread of the deviations: the test is undefined
        return float("nan")
    f = between / (within / (na + nb - 2))
    return float(stats.f.sf(f, 1, na + nb - 2))


def marks(best: str | None, p: dict[str, float], alpha: float) -> set[str]:
    """The paper's marks: empty unless some option is significantly worse than
    ``best`` (p < ``alpha``); otherwise ``best`` and every option that is not.

    >>> sorted(marks("a", {"a": float("nan"), "b": 0.5, "c": 0.001}, 0.01))
    ['a', 'b']
    """
    if best is None:
        return set()
    worse = {o for o, v in p.items() if o != best and v < alpha}
    if not worse:
        return set()
    return {o for o in p if o not in worse}
