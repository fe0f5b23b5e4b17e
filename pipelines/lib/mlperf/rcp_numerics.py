"""numpy and scipy as MLCommons' RCP checker uses them, in plain Python (the checker: `rcp.py`).

numpy and scipy are not installed: the olympic mean and population stdev follow numpy's pairwise summation,
`np.interp` its two-point formula, and the one-sided p-value of `scipy.stats.ttest_ind_from_stats(equal_var=True)`
comes from Student's t CDF computed with a regularized incomplete beta function (continued fraction; a series of
positive terms where the fraction loses digits), within about 1e-14 relative for the checker's degrees of freedom
(below 200; 1e-12 up to 10⁴): the binary search for the minimum acceptable mean (`min_acceptable_mean`) takes the
same branches as the original unless a p-value lies within that distance of alpha.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence


def fdiv(a: float, b: float) -> float:
    """a / b with numpy's float64 semantics: division by zero gives ±inf or nan, not an exception."""
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _sqrt(x: float) -> float:
    return math.sqrt(x) if x >= 0 else math.nan


def _pairwise_sum(values: Sequence[float], start: int, n: int) -> float:
    """numpy's `pairwise_sum_DOUBLE`: the order of additions decides the last bit of every mean."""
    if n < 8:
        total = 0.0
        for i in range(start, start + n):
            total += values[i]
        return total
    if n <= 128:
        r = list(values[start:start + 8])
        i = 8
        while i < n - (n % 8):
            for j in range(8):
                r[j] += values[start + i + j]
            i += 8
        total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for k in range(i, n):
            total += values[start + k]
        return total
    half = n // 2
    half -= half % 8
    return _pairwise_sum(values, start, half) + _pairwise_sum(values, start + half, n - half)


def np_sum(values: Iterable[float]) -> float:
    """`np.sum` of a short list as float64 (ints converted first, as numpy's reduction casts them)."""
    floats = [float(v) for v in values]
    return 0.0 + _pairwise_sum(floats, 0, len(floats))


def np_mean(values: Sequence[float]) -> float:
    """`np.mean`: nan for an empty list."""
    return fdiv(np_sum(values), float(len(values)))


def np_std(values: Sequence[float]) -> float:
    """`np.std` with ddof=0: the mean, then the mean of the squared deviations, then the root."""
    mean = np_mean(values)
    squares = [(float(v) - mean) * (float(v) - mean) for v in values]
    return _sqrt(fdiv(np_sum(squares), float(len(values))))


def np_interp(x: float, x0: float, x1: float, y0: float, y1: float) -> float:
    """`np.interp(x, [x0, x1], [y0, y1])`, numpy's two-point branch included (ends, equal abscissae)."""
    x, x0, x1, y0, y1 = float(x), float(x0), float(x1), float(y0), float(y1)
    if math.isnan(x):
        return math.nan
    if x > x1:
        return y1
    if x < x0:
        return y0
    if x >= x1:
        return y1
    if x == x0:
        return y0
    slope = fdiv(y1 - y0, x1 - x0)
    result = slope * (x - x0) + y0
    if math.isnan(result):
        result = slope * (x - x1) + y1
        if math.isnan(result) and y0 == y1:
            result = y0
    return result


_BETA_EPS = 1e-16
_BETA_TINY = 1e-300
_BETA_MAX_ITERATIONS = 10_000


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (modified Lentz), converging fast for x < (a+1)/(a+b+2)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _BETA_TINY else _BETA_TINY)
    h = d
    for m in range(1, _BETA_MAX_ITERATIONS):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _BETA_TINY else _BETA_TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _BETA_TINY else _BETA_TINY
            delta = d * c
            h *= delta
        if abs(delta - 1.0) < _BETA_EPS:
            break
    return h


def _stirling_remainder(x: float) -> float:
    """log Γ(x) - ((x - ½) log x - x + ½ log 2π), for x >= 30 (the next term is below 1e-19)."""
    x2 = 1.0 / (x * x)
    return (1 / 12 - x2 * (1 / 360 - x2 * (1 / 1260 - x2 * (1 / 1680 - x2 / 1188)))) / x


def _log_gamma_ratio(a: float, b: float) -> float:
    """log Γ(a) - log Γ(a + b) without the cancellation of two large `lgamma`s: shift `a` to 30 or more
    (Γ(a+1) = aΓ(a)), then Stirling's series, whose leading terms cancel analytically."""
    shift = 0.0
    while a < 30:
        shift += math.log1p(b / a)
        a += 1.0
    return (shift - (a - 0.5) * math.log1p(b / a) - b * math.log(a + b) + b
            + _stirling_remainder(a) - _stirling_remainder(a + b))


def _log_beta(a: float, b: float) -> float:
    """log B(a, b) = log Γ(small) + log Γ(big) - log Γ(big + small), accurate when `big` is large (the
    t distribution's df/2) where three `lgamma`s would lose digits."""
    small, big = (a, b) if a <= b else (b, a)
    return math.lgamma(small) + _log_gamma_ratio(big, small)


def _beta_series(a: float, b: float, x: float, y: float) -> float:
    """I_x(a, b) = x^a y^b / (a B(a, b)) · 2F1(a+b, 1; a+1; x), a series of positive terms (DLMF 8.17.8),
    for x small against 1/(a+b)."""
    total, term, n = 1.0, 1.0, 0
    while term > total * 1e-17 and n < 100_000:
        term *= (a + b + n) / (a + 1 + n) * x
        total += term
        n += 1
    log_x = math.log1p(-y) if y < 0.5 else math.log(x)
    log_y = math.log1p(-x) if x < 0.5 else math.log(y)
    return math.exp(a * log_x + b * log_y - _log_beta(a, b)) * total / a


def betainc(a: float, b: float, x: float, y: float | None = None) -> float:
    """The regularized incomplete beta function I_x(a, b); `y` is 1 - x when the caller has it more
    accurately than `1 - x` (x near 1)."""
    y = 1.0 - x if y is None else y
    if math.isnan(x) or math.isnan(y) or a <= 0 or b <= 0:
        return math.nan
    if x <= 0:
        return 0.0
    if y <= 0:
        return 1.0
    log_x = math.log1p(-y) if y < 0.5 else math.log(x)
    log_y = math.log1p(-x) if x < 0.5 else math.log(y)
    log_front = a * log_x + b * log_y - _log_beta(a, b)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, y) / b


def student_t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom (`scipy.special.stdtr(df, t)`)."""
    if math.isnan(t) or math.isnan(df) or df <= 0:
        return math.nan
    if math.isinf(t):
        return 0.0 if t < 0 else 1.0
    if t == 0:
        return 0.5
    if math.isinf(df):
        return 0.5 * math.erfc(-t / math.sqrt(2.0))
    t2 = t * t
    # I_x(df/2, 1/2) with x = df/(df+t²) is the two-sided tail; 1-x = t²/(df+t²) without cancellation
    a, x, y = 0.5 * df, df / (df + t2), t2 / (df + t2)
    tail = None
    if df > 100 and t2 < 50:
        # the continued fraction loses about log10(df/t²) digits when df is large; 1 - I_y(1/2, df/2) from
        # a series of positive terms loses log10(1/tail): take it when that is fewer digits
        complement = 1.0 - _beta_series(0.5, a, y, x)
        tail = complement if complement > t2 / df else None
    if tail is None:
        tail = betainc(a, 0.5, x, y)
    return 0.5 * tail if t < 0 else 1.0 - 0.5 * tail


def one_sided_p_value(mean1: float, std1: float, nobs1: int, mean2: float, std2: float, nobs2: int) -> float:
    """The checker's `_find_p_value`: `ttest_ind_from_stats(..., equal_var=True)`'s two-sided p-value
    turned one-sided (p/2 when t < 0, else 1 - p/2)."""
    v1 = 0.0 if nobs1 == 1 else std1 * std1  # scipy: a single observation has no variance to pool
    v2 = 0.0 if nobs2 == 1 else std2 * std2
    df = nobs1 + nobs2 - 2.0
    pooled = fdiv((nobs1 - 1) * v1 + (nobs2 - 1) * v2, df)
    denom = _sqrt(pooled * (fdiv(1.0, nobs1) + fdiv(1.0, nobs2)))
    t = fdiv(mean1 - mean2, denom)
    two_sided = 2.0 * student_t_cdf(-abs(t), df)
    return two_sided / 2.0 if t < 0 else 1.0 - two_sided / 2.0


def min_acceptable_mean(mean: float, stdev: float, num_samples_ref: int, submission_runs: int | Callable[[], int],
                        alpha: float = 0.05, tolerance: float = 0.0001) -> float:
    """The checker's `_find_min_acceptable_mean`: the binary search between 0 and `mean` for the lowest
    submission mean whose one-sided p-value against the reference still exceeds alpha. `submission_runs`
    may be a callable: old releases look it up only when the stdev is not zero (and fail there)."""
    if stdev == 0:
        return mean
    runs = submission_runs() if callable(submission_runs) else submission_runs
    num_samples_subm = runs - 2
    mean_max, mean_min = mean, 0.0
    mean_mid = (mean_min + mean_max) / 2
    while mean_max - mean_min > tolerance:
        # the reference's sample count goes with the submission's mean, as the checker calls it
        p_value = one_sided_p_value(mean_mid, stdev, num_samples_ref, mean, stdev, num_samples_subm)
        if p_value > alpha:
            mean_max = mean_mid
        else:
            mean_min = mean_mid
        mean_mid = (mean_min + mean_max) / 2
    return mean_mid
