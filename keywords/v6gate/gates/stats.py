"""Confidence intervals for the gates (pure logic, no I/O).

A paired gate works on per-pair log ratios ``d_i = ln(B_i / A_i)`` (B the
candidate: IPv6, offload on, with the extension header; A the baseline).
Three interval methods, all on ``d`` and exponentiated back to a ratio:

* ``wilcoxon`` (default): the Hodges-Lehmann estimate (median of the Walsh
  averages) with its distribution-free confidence interval from the exact
  Wilcoxon signed-rank distribution (normal approximation above 50 pairs).
  It assumes only that ``d`` is symmetric about its centre, and one wild
  pair (a 5x swing when the machine was stolen from) moves it by one rank,
  not by its size.  It needs at least 6 pairs to reach 95 %.
* ``t``: Student's t interval on the mean of ``d`` (the geometric mean ratio).
* ``bootstrap``: percentile bootstrap of the mean of ``d`` (seeded, so a run
  is reproducible from its samples).

A one-sample gate (a time against a stated target) uses the distribution-free
interval for a quantile from order statistics (binomial), default the median.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from functools import lru_cache

METHODS = ("wilcoxon", "t", "bootstrap")


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float
    n: int
    method: str
    confidence: float
    achieved: float | None = None  # the exact coverage where the method is discrete

    def as_dict(self) -> dict:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "n": self.n, "method": self.method,
                "confidence": self.confidence, "achieved_confidence": self.achieved}


# -- Wilcoxon signed rank ---------------------------------------------------------------
@lru_cache(maxsize=128)
def _signed_rank_cdf(n: int) -> tuple[float, ...]:
    """P(T+ <= t) for t = 0..n(n+1)/2 under H0 (exact, by counting)."""
    m = n * (n + 1) // 2
    counts = [0] * (m + 1)
    counts[0] = 1
    top = 0
    for k in range(1, n + 1):
        top += k
        for s in range(top, k - 1, -1):
            counts[s] += counts[s - k]
    total = 2 ** n
    cdf, acc = [], 0
    for c in counts:
        acc += c
        cdf.append(acc / total)
    return tuple(cdf)


def _signed_rank_k(n: int, alpha: float) -> tuple[int, float]:
    """k such that [W_(k), W_(M+1-k)] (1-based order statistics of the Walsh
    averages) covers the centre with probability >= 1 - alpha; k = 0 when
    n is too small.  Returns (k, achieved coverage)."""
    if n <= 50:
        cdf = _signed_rank_cdf(n)
        best = -1
        for t, p in enumerate(cdf):
            if p <= alpha / 2:
                best = t
            else:
                break
        if best < 0:
            return 0, 0.0
        return best + 1, 1 - 2 * cdf[best]
    m = n * (n + 1) / 2
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    z = normal_ppf(1 - alpha / 2)
    k = math.floor(m / 2 - z * sd - 0.5) + 1
    return max(k, 1), 1 - alpha


def walsh_averages(d: list[float]) -> list[float]:
    n = len(d)
    return sorted((d[i] + d[j]) / 2 for i in range(n) for j in range(i, n))


def wilcoxon_interval(d: list[float], confidence: float = 0.95) -> Interval:
    n = len(d)
    if n == 0:
        return Interval(math.nan, -math.inf, math.inf, 0, "wilcoxon", confidence, 0.0)
    w = walsh_averages(d)
    est = _median(w)
    k, achieved = _signed_rank_k(n, 1 - confidence)
    if k == 0:
        return Interval(est, -math.inf, math.inf, n, "wilcoxon", confidence, 0.0)
    return Interval(est, w[k - 1], w[len(w) - k], n, "wilcoxon", confidence, achieved)


# -- Student t --------------------------------------------------------------------------------
def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1 + aa * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + aa / c if abs(1 + aa / c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1 + aa * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + aa / c if abs(1 + aa / c) > tiny else tiny
        de = d * c
        h *= de
        if abs(de - 1) < 1e-14:
            break
    return h


def _betai(a: float, b: float, x: float) -> float:
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(lbeta) * _betacf(a, b, x) / a
    return 1 - math.exp(lbeta) * _betacf(b, a, 1 - x) / b


def t_cdf(t: float, df: float) -> float:
    x = df / (df + t * t)
    tail = 0.5 * _betai(df / 2, 0.5, x)
    return 1 - tail if t > 0 else tail


@lru_cache(maxsize=512)
def t_ppf(p: float, df: float) -> float:
    """Quantile of Student's t (bisection on the CDF; |error| < 1e-10)."""
    if not 0 < p < 1:
        raise ValueError("p must be in (0, 1)")
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-10:
            break
    return (lo + hi) / 2


def normal_ppf(p: float) -> float:
    """Acklam's rational approximation (|relative error| < 1.2e-9)."""
    a = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02, 1.383577518672690e02,
         -3.066479806614716e01, 2.506628277459239e00)
    b = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02, 6.680131188771972e01,
         -1.328068155288572e01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00, -2.549732539343734e00,
         4.374664141464968e00, 2.938163982698783e00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
    if p < 0.02425:
        q = math.sqrt(-2 * math.log(p))
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / \
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    if p > 1 - 0.02425:
        return -normal_ppf(1 - p)
    q = p - 0.5
    r = q * q
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / \
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)


def t_interval(d: list[float], confidence: float = 0.95) -> Interval:
    n = len(d)
    if n < 2:
        est = d[0] if d else math.nan
        return Interval(est, -math.inf, math.inf, n, "t", confidence, 0.0)
    mean = sum(d) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    half = t_ppf(1 - (1 - confidence) / 2, n - 1) * sd / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n, "t", confidence, confidence)


# -- bootstrap ----------------------------------------------------------------------------------
def bootstrap_interval(d: list[float], confidence: float = 0.95, resamples: int = 2000, seed: int = 6) -> Interval:
    n = len(d)
    if n < 2:
        est = d[0] if d else math.nan
        return Interval(est, -math.inf, math.inf, n, "bootstrap", confidence, 0.0)
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(d) for _ in range(n)) / n for _ in range(resamples))
    a = (1 - confidence) / 2
    lo = means[max(0, math.floor(a * resamples))]
    hi = means[min(resamples - 1, math.ceil((1 - a) * resamples) - 1)]
    return Interval(sum(d) / n, lo, hi, n, "bootstrap", confidence, confidence)


def log_ratio_interval(d: list[float], method: str = "wilcoxon", confidence: float = 0.95) -> Interval:
    """The interval of the centre of ``d`` (log ratios), by ``method``."""
    if method == "wilcoxon":
        return wilcoxon_interval(d, confidence)
    if method == "t":
        return t_interval(d, confidence)
    if method == "bootstrap":
        return bootstrap_interval(d, confidence)
    raise ValueError(f"unknown interval method {method!r}; use one of {METHODS}")


def ratio_interval(d: list[float], method: str = "wilcoxon", confidence: float = 0.95) -> Interval:
    """Like log_ratio_interval, exponentiated: an interval on the ratio B/A."""
    iv = log_ratio_interval(d, method, confidence)
    return Interval(_exp(iv.estimate), _exp(iv.low), _exp(iv.high), iv.n, iv.method, iv.confidence, iv.achieved)


def _exp(x: float) -> float:
    if math.isnan(x):
        return math.nan
    if x == math.inf:
        return math.inf
    if x == -math.inf:
        return 0.0
    return math.exp(x)


# -- one sample: a quantile against a target ---------------------------------------------------
def _binom_cdf(k: int, n: int, p: float) -> float:
    return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k + 1))


def quantile_interval(x: list[float], q: float = 0.5, confidence: float = 0.95) -> Interval:
    """Distribution-free interval for the q-quantile from order statistics:
    [x_(l), x_(u)] with P(l <= B < u) >= confidence, B ~ Binomial(n, q)."""
    n = len(x)
    xs = sorted(x)
    if n == 0:
        return Interval(math.nan, -math.inf, math.inf, 0, "order-statistics", confidence, 0.0)
    est = _quantile(xs, q)
    a = (1 - confidence) / 2
    # largest l with P(B < l) <= a  ->  lower bound x_(l) (1-based); l = 0: -inf
    lo_idx = 0
    for l_ in range(1, n + 1):
        if _binom_cdf(l_ - 1, n, q) <= a:
            lo_idx = l_
        else:
            break
    # smallest u with P(B >= u) <= a  ->  upper bound x_(u); none: +inf
    hi_idx = n + 1
    for u in range(n, 0, -1):
        if 1 - _binom_cdf(u - 1, n, q) <= a:
            hi_idx = u
        else:
            break
    low = xs[lo_idx - 1] if lo_idx >= 1 else -math.inf
    high = xs[hi_idx - 1] if hi_idx <= n else math.inf
    achieved = _binom_cdf(hi_idx - 1, n, q) - (_binom_cdf(lo_idx - 1, n, q) if lo_idx >= 1 else 0.0) \
        if hi_idx <= n and lo_idx >= 1 else 0.0
    return Interval(est, low, high, n, f"order-statistics q={q:g}", confidence, achieved)


# -- helpers ----------------------------------------------------------------------------------------
def _median(xs: list[float]) -> float:
    return _quantile(sorted(xs), 0.5)


def _quantile(xs: list[float], q: float) -> float:
    """Linear-interpolation quantile of sorted ``xs``."""
    if not xs:
        return math.nan
    pos = q * (len(xs) - 1)
    i = math.floor(pos)
    frac = pos - i
    return xs[i] if i + 1 >= len(xs) else xs[i] * (1 - frac) + xs[i + 1] * frac


def median(xs) -> float:
    return _median(list(xs))


def decide(low: float, high: float, threshold: float, higher_is_better: bool) -> str | None:
    """Non-inferiority against ``threshold`` on an interval [low, high]:
    higher is better -> PASS when low >= threshold, FAIL when high < threshold;
    lower is better  -> PASS when high <= threshold, FAIL when low > threshold.
    None: undecided (the interval straddles the threshold)."""
    if higher_is_better:
        if low >= threshold:
            return "PASS"
        if high < threshold:
            return "FAIL"
        return None
    if high <= threshold:
        return "PASS"
    if low > threshold:
        return "FAIL"
    return None


# -- sequential looks -----------------------------------------------------------------------------
#: Pocock's constant boundary for K equally spaced looks at an overall two-sided 5 % (Pocock 1977,
#: Table 1; Jennison & Turnbull 2000, Table 2.1): the critical |z| at every look.
POCOCK_05 = {1: 1.960, 2: 2.178, 3: 2.289, 4: 2.361, 5: 2.413, 6: 2.453, 7: 2.485, 8: 2.512, 9: 2.535,
             10: 2.555, 11: 2.572, 12: 2.588, 15: 2.626, 20: 2.672}


def normal_cdf(z: float) -> float:
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


def per_look_confidence(confidence: float, looks: int) -> float:
    """The confidence of the interval used at each of ``looks`` planned looks
    so that the whole sequential test keeps about ``confidence`` (Pocock's
    constant boundary; its 5 % constants scaled to other levels by the ratio
    of their normal quantiles, an approximation that ``v6gate calibrate``
    checks on the bench).  One look: ``confidence`` itself."""
    if looks <= 1:
        return confidence
    k = max(x for x in POCOCK_05 if x <= looks)
    z = normal_ppf(1 - (1 - confidence) / 2) * POCOCK_05[k] / 1.960
    return 2 * normal_cdf(z) - 1


# -- a share of pairs: Clopper-Pearson ------------------------------------------------------------------------------
def binomial_bounds(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson's exact two-sided interval for a share ``k`` of ``n`` (bisection on the binomial tails):
    the low end p with P(X >= k | p) = alpha/2 (0 when k = 0), the high end p with P(X <= k | p) = alpha/2
    (1 when k = n)."""
    if n <= 0:
        return 0.0, 1.0
    a = (1 - confidence) / 2

    def solve(f, want: float) -> float:  # f increasing in p on [0, 1]
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            if f(mid) < want:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    low = 0.0 if k <= 0 else solve(lambda p: 1 - _binom_cdf(k - 1, n, p), a)
    high = 1.0 if k >= n else solve(lambda p: 1 - _binom_cdf(k, n, p), 1 - a)
    return low, high
