"""Statistical quality and determinism of the counter-based generator (jaxsched/rng.py).

Every tolerance is Z = 6 standard errors of the statistic at the sample size used (a false
alarm has probability ~1e-9 per check, and the inputs are fixed, so nothing can flake), yet
the checks are sharp enough to reject a broken mixer: `test_checks_reject_weak_mixers` swaps
`mix32` for the identity and for single-round mixers and asserts that the same checks fail.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsched import rng

Z = 6.0  # standard errors allowed for every statistic
N = 1 << 20  # ~1e6 draws per check
IDS = np.arange(N, dtype=np.int32)


def _u(seed, ids, stream=rng.STREAM_PROMPT, sub=0) -> np.ndarray:
    return np.asarray(rng.uniform(seed, ids, stream, sub), np.float64)


def _corr(a, b) -> float:
    return float(np.corrcoef(a, b)[0, 1])


# ---------------------------------------------------------------------------------------------
# Statistic checks (return a list of violations; [] means the sample looks like i.i.d. U[0, 1))
# ---------------------------------------------------------------------------------------------
def uniform_violations(u: np.ndarray, bins: int = 1000) -> list[str]:
    """Mean, variance, chi-square over `bins` equal bins, and the KS distance of a U[0,1) sample."""
    n = u.size
    out = []
    # mean: sd = sqrt(1/12 / n)
    if abs(u.mean() - 0.5) > Z * math.sqrt(1 / 12 / n):
        out.append(f"mean {u.mean():.6f}")
    # variance: Var((U - 1/2)^2) = 1/80 - 1/144
    if abs(u.var() - 1 / 12) > Z * math.sqrt((1 / 80 - 1 / 144) / n):
        out.append(f"variance {u.var():.6f}")
    # chi-square with bins - 1 dof: mean k, sd sqrt(2k)
    counts = np.bincount(np.minimum((u * bins).astype(np.int64), bins - 1), minlength=bins)
    expected = n / bins
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    if abs(chi2 - (bins - 1)) > Z * math.sqrt(2 * (bins - 1)):
        out.append(f"chi2 {chi2:.1f} on {bins - 1} dof")
    # Kolmogorov-Smirnov: P(sqrt(n) D > t) <= 2 exp(-2 t^2); t = 3.5 gives 1e-10
    s = np.sort(u)
    grid = np.arange(1, n + 1) / n
    d = max(float(np.max(grid - s)), float(np.max(s - (grid - 1 / n))))
    if d > 3.5 / math.sqrt(n):
        out.append(f"KS distance {d:.5f}")
    return out


def corr_violations(a: np.ndarray, b: np.ndarray, what: str) -> list[str]:
    """Pearson correlation of independent samples: sd ~ 1 / sqrt(n)."""
    r = _corr(a, b)
    return [f"{what}: corr {r:.5f}"] if abs(r) > Z / math.sqrt(a.size) else []


def joint_violations(a: np.ndarray, b: np.ndarray, what: str, bins: int = 32) -> list[str]:
    """Chi-square of the 2-d histogram of (a, b) on a bins x bins grid against independence.

    Catches non-linear dependence that a correlation misses. Under H0 the statistic has
    bins^2 - 1 dof (the marginals are known, uniform).
    """
    ia = np.minimum((a * bins).astype(np.int64), bins - 1)
    ib = np.minimum((b * bins).astype(np.int64), bins - 1)
    counts = np.bincount(ia * bins + ib, minlength=bins * bins)
    expected = a.size / bins**2
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    k = bins * bins - 1
    return [f"{what}: joint chi2 {chi2:.0f} on {k} dof"] if abs(chi2 - k) > Z * math.sqrt(2 * k) else []


def all_violations(n: int = N) -> list[str]:
    """Every uniformity and independence check, on `n` draws each."""
    ids = np.arange(n, dtype=np.int32)
    u = _u(7, ids)
    v = []
    v += uniform_violations(u)
    # consecutive ids of one run
    v += corr_violations(u[:-1], u[1:], "ids i, i+1")
    v += joint_violations(u[:-1], u[1:], "ids i, i+1")
    # neighbouring seeds, same ids
    u8 = _u(8, ids)
    v += corr_violations(u, u8, "seeds 7, 8")
    v += joint_violations(u, u8, "seeds 7, 8")
    # request 0 across consecutive seeds (the first request of every run)
    across = _u(np.arange(n, dtype=np.uint32), 0)
    v += uniform_violations(across)
    v += corr_violations(across[:-1], across[1:], "request 0 of seeds s, s+1")
    # streams and sub-draws of the same request
    v += corr_violations(u, _u(7, ids, rng.STREAM_OUTPUT), "streams prompt, output")
    v += joint_violations(u, _u(7, ids, rng.STREAM_OUTPUT), "streams prompt, output")
    v += corr_violations(u, _u(7, ids, rng.STREAM_PROMPT, 1), "sub 0, 1")
    v += joint_violations(u, _u(7, ids, rng.STREAM_PROMPT, 1), "sub 0, 1")
    return v


# ---------------------------------------------------------------------------------------------
# uniform()
# ---------------------------------------------------------------------------------------------
def test_uniform_dtype_range_and_24_bit_grid() -> None:
    u = rng.uniform(3, IDS, rng.STREAM_PROMPT)
    assert u.dtype == jnp.float32 and u.shape == (N,)
    u = np.asarray(u, np.float64)
    assert u.min() >= 0.0 and u.max() < 1.0
    k = u * 2.0**24
    assert np.array_equal(k, np.round(k)), "uniform() must be a multiple of 2^-24"
    # 2^20 draws from 2^24 values: the birthday bound gives ~2^15 repeats; a weak hash repeats far more
    distinct = np.unique(k).size
    lam, m = N / 2**24, 2**24
    expected = m * (1 - math.exp(-lam))
    sd = math.sqrt(m * (math.exp(-lam) - (1 + lam) * math.exp(-2 * lam)))  # occupancy variance
    assert abs(distinct - expected) < Z * sd, (distinct, expected)


@pytest.mark.parametrize("seed", [0, 1, 2**32 - 1])
def test_uniform_marginal_mean_variance_bins_ks(seed: int) -> None:
    assert uniform_violations(_u(seed, IDS)) == []


@pytest.mark.parametrize("stream,sub", [(rng.STREAM_OUTPUT, 0), (rng.STREAM_INDEX, 0), (rng.STREAM_PROMPT, 5)])
def test_uniform_marginal_other_streams(stream: int, sub: int) -> None:
    assert uniform_violations(_u(11, IDS, stream, sub)) == []


def test_hash_bits_are_balanced() -> None:
    h = np.asarray(rng.hash3(5, IDS, rng.STREAM_PROMPT), np.uint32)
    bits = (h[:, None] >> np.arange(32, dtype=np.uint32)) & 1
    freq = bits.mean(0)
    tol = Z * 0.5 / math.sqrt(N)
    assert np.all(np.abs(freq - 0.5) < tol), freq


def test_hash_avalanche_on_index_and_seed_bits() -> None:
    # Flipping any one input bit must flip each output bit with probability ~1/2, so the
    # number of flipped bits averages 16 (sd per pair sqrt(32 / 4)).
    n = 1 << 16
    ids = np.arange(n, dtype=np.uint32) * np.uint32(2654435761)  # spread over all 32 bits
    base = np.asarray(rng.hash3(9, ids, rng.STREAM_PROMPT), np.uint32)
    tol = Z * math.sqrt(8 / n)
    for b in range(32):
        flipped = np.asarray(rng.hash3(9, ids ^ np.uint32(1 << b), rng.STREAM_PROMPT), np.uint32)
        mean_flips = np.unpackbits((base ^ flipped).view(np.uint8)).sum() / n
        assert abs(mean_flips - 16) < tol, f"index bit {b}: {mean_flips}"
    seeds = np.arange(n, dtype=np.uint32) * np.uint32(2246822519)
    base = np.asarray(rng.hash3(seeds, 17, rng.STREAM_PROMPT), np.uint32)
    for b in range(32):
        flipped = np.asarray(rng.hash3(seeds ^ np.uint32(1 << b), 17, rng.STREAM_PROMPT), np.uint32)
        mean_flips = np.unpackbits((base ^ flipped).view(np.uint8)).sum() / n
        assert abs(mean_flips - 16) < tol, f"seed bit {b}: {mean_flips}"


# ---------------------------------------------------------------------------------------------
# Independence
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 12345])
def test_independent_across_neighbouring_seeds(seed: int) -> None:
    u = _u(seed, IDS)
    v = []
    for d in (1, 2, 64):
        w = _u(seed + d, IDS)
        v += corr_violations(u, w, f"seed +{d}") + joint_violations(u, w, f"seed +{d}")
    assert v == []


def test_first_requests_of_consecutive_seeds_are_uniform_and_independent() -> None:
    seeds = np.arange(N, dtype=np.uint32)
    for i in (0, 1):
        across = _u(seeds, i)
        assert uniform_violations(across) == []
        assert corr_violations(across[:-1], across[1:], f"request {i}, seeds s, s+1") == []
        assert joint_violations(across[:-1], across[1:], f"request {i}, seeds s, s+1") == []


def test_independent_across_consecutive_ids() -> None:
    u = _u(3, IDS)
    v = []
    for lag in (1, 2, 256, 1 << 16):
        v += corr_violations(u[:-lag], u[lag:], f"lag {lag}")
        v += joint_violations(u[:-lag], u[lag:], f"lag {lag}")
    assert v == []


def test_independent_across_streams_and_subs() -> None:
    streams = (
        rng.STREAM_PROMPT,
        rng.STREAM_OUTPUT,
        rng.STREAM_MIX,
        rng.STREAM_PRED,
        rng.STREAM_CLASSIFIER,
        rng.STREAM_INDEX,
    )
    draws = {(s, 0): _u(4, IDS, s) for s in streams}
    draws[(rng.STREAM_PROMPT, 1)] = _u(4, IDS, rng.STREAM_PROMPT, 1)
    draws[(rng.STREAM_PROMPT, 63)] = _u(4, IDS, rng.STREAM_PROMPT, 63)
    keys = list(draws)
    v = []
    for a in range(len(keys)):
        for b in range(a + 1, len(keys)):
            ka, kb = keys[a], keys[b]
            v += corr_violations(draws[ka], draws[kb], f"{ka} vs {kb}")
    # sub-draw stream tags are stream * 64 + sub: sub 63 of one stream must not track sub 0 of the next
    v += joint_violations(draws[(rng.STREAM_PROMPT, 63)], draws[(rng.STREAM_OUTPUT, 0)], "prompt/63 vs output/0")
    v += joint_violations(draws[(rng.STREAM_PROMPT, 0)], draws[(rng.STREAM_PROMPT, 1)], "prompt sub 0 vs 1")
    assert v == []


def test_checks_pass_on_the_real_generator() -> None:
    assert all_violations() == []


@pytest.mark.parametrize("mixer", ["identity", "one_multiply", "xorshift_only", "one_round"])
def test_checks_reject_weak_mixers(monkeypatch: pytest.MonkeyPatch, mixer: str) -> None:
    # The same battery must fail when mix32 is replaced by a broken mixer, so the tolerances
    # above are not vacuous.
    def identity(x):
        return jnp.asarray(x).astype(jnp.uint32)

    def one_multiply(x):
        return jnp.asarray(x).astype(jnp.uint32) * np.uint32(0x7FEB352D)

    def xorshift_only(x):
        x = jnp.asarray(x).astype(jnp.uint32)
        return x ^ (x >> 16)

    def one_round(x):  # half of lowbias32
        x = jnp.asarray(x).astype(jnp.uint32)
        return (x ^ (x >> 16)) * np.uint32(0x7FEB352D)

    monkeypatch.setattr(
        rng,
        "mix32",
        {"identity": identity, "one_multiply": one_multiply, "xorshift_only": xorshift_only, "one_round": one_round}[
            mixer
        ],
    )
    assert all_violations(1 << 18) != []


# ---------------------------------------------------------------------------------------------
# normal_pair()
# ---------------------------------------------------------------------------------------------
def test_normal_pair_moments_and_tails() -> None:
    z1, z2 = rng.normal_pair(21, IDS, rng.STREAM_PROMPT)
    assert z1.dtype == jnp.float32 and z2.dtype == jnp.float32
    z1, z2 = np.asarray(z1, np.float64), np.asarray(z2, np.float64)
    assert np.all(np.isfinite(z1)) and np.all(np.isfinite(z2))
    n = N
    for z in (z1, z2):
        assert abs(z.mean()) < Z / math.sqrt(n)  # sd 1/sqrt(n)
        assert abs(z.var() - 1) < Z * math.sqrt(2 / n)  # Var(z^2) = 2
        skew = float(np.mean(z**3))
        assert abs(skew) < Z * math.sqrt(15 / n)  # Var(z^3) = 15
        kurt = float(np.mean(z**4) / np.mean(z**2) ** 2)
        assert abs(kurt - 3) < Z * math.sqrt(24 / n)  # sample kurtosis: sd sqrt(24/n)
        for t, p in ((1.0, 0.31731050786291415), (2.0, 0.04550026389635842), (3.0, 0.0026997960632601866)):
            frac = float(np.mean(np.abs(z) > t))
            assert abs(frac - p) < Z * math.sqrt(p * (1 - p) / n), (t, frac)
    assert abs(_corr(z1, z2)) < Z / math.sqrt(n)
    # independence beyond correlation: z1^2 and z2^2 uncorrelated (a shared radius would not be)
    assert abs(_corr(z1**2, z2**2)) < Z / math.sqrt(n)
    # the pair is rotation invariant: the angle is uniform
    angle = (np.arctan2(z2, z1) / (2 * np.pi)) % 1.0
    assert uniform_violations(angle, bins=360) == []


def test_normal_pairs_of_different_subs_and_seeds_are_independent() -> None:
    a1, a2 = (np.asarray(x, np.float64) for x in rng.normal_pair(21, IDS, rng.STREAM_PROMPT, 0))
    b1, b2 = (np.asarray(x, np.float64) for x in rng.normal_pair(21, IDS, rng.STREAM_PROMPT, 1))
    c1, _ = (np.asarray(x, np.float64) for x in rng.normal_pair(22, IDS, rng.STREAM_PROMPT, 0))
    tol = Z / math.sqrt(N)
    for x, y in ((a1, b1), (a1, b2), (a2, b1), (a2, b2), (a1, c1), (a1**2, b1**2)):
        assert abs(_corr(x, y)) < tol


# ---------------------------------------------------------------------------------------------
# Determinism
# ---------------------------------------------------------------------------------------------
def _lowbias32_np(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.uint32)
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    x = x ^ (x >> np.uint32(16))
    return x


def _hash3_np(seed, index, stream) -> np.ndarray:
    g = np.uint32(0x9E3779B9)
    with np.errstate(over="ignore"):
        h = _lowbias32_np(np.asarray(seed, np.uint32) * g + np.uint32(stream))
        h = _lowbias32_np(h ^ np.asarray(index).astype(np.uint32))
        return _lowbias32_np(h + _lowbias32_np(np.asarray(seed, np.uint32) ^ np.uint32(0x5BD1E995)))


def test_hash_matches_documented_lowbias32_chain() -> None:
    # Pins the exact bits: results of saved runs depend on them.
    seeds = np.array([0, 1, 42, 2**31, 2**32 - 1], np.uint32)
    for s in seeds:
        got = np.asarray(rng.hash3(s, IDS, rng.STREAM_OUTPUT * 64 + 3), np.uint32)
        assert np.array_equal(got, _hash3_np(s, IDS, rng.STREAM_OUTPUT * 64 + 3))
    u = np.asarray(rng.uniform(42, IDS[:1000], rng.STREAM_MIX, 2))
    want = (_hash3_np(42, IDS[:1000], rng.STREAM_MIX * 64 + 2) >> np.uint32(8)).astype(np.float32) * np.float32(
        2.0**-24
    )
    assert np.array_equal(u, want)
    assert np.array_equal(
        np.asarray(rng.mix32(jnp.arange(1000, dtype=jnp.uint32))), _lowbias32_np(np.arange(1000, dtype=np.uint32))
    )


def test_same_inputs_give_same_bits_eager_jit_vmap_and_scalar() -> None:
    ids = jnp.arange(4096, dtype=jnp.int32)
    a = np.asarray(rng.uniform(5, ids, rng.STREAM_PROMPT, 1))
    b = np.asarray(rng.uniform(5, ids, rng.STREAM_PROMPT, 1))
    assert a.tobytes() == b.tobytes()
    c = np.asarray(jax.jit(lambda s, i: rng.uniform(s, i, rng.STREAM_PROMPT, 1))(jnp.uint32(5), ids))
    assert a.tobytes() == c.tobytes()
    seeds = jnp.array([4, 5, 6], jnp.uint32)
    d = np.asarray(jax.vmap(lambda s: rng.uniform(s, ids, rng.STREAM_PROMPT, 1))(seeds))
    assert d[1].tobytes() == a.tobytes()
    assert not np.array_equal(d[0], d[1]) and not np.array_equal(d[1], d[2])
    e = np.array([float(rng.uniform(5, i, rng.STREAM_PROMPT, 1)) for i in (0, 1, 4095)], np.float32)
    assert np.array_equal(e, a[[0, 1, 4095]])
    # int32, uint32 and Python int seeds/ids are the same counter
    f = np.asarray(rng.uniform(jnp.int32(5), ids.astype(jnp.uint32), rng.STREAM_PROMPT, 1))
    assert a.tobytes() == f.tobytes()
    # broadcasting seeds against ids
    g = np.asarray(rng.uniform(seeds[:, None], ids[None, :], rng.STREAM_PROMPT, 1))
    assert np.array_equal(g, d)

    p1 = [np.asarray(x) for x in rng.normal_pair(5, ids, rng.STREAM_PROMPT, 2)]
    p2 = [np.asarray(x) for x in jax.jit(lambda i: rng.normal_pair(5, i, rng.STREAM_PROMPT, 2))(ids)]
    assert all(x.tobytes() == y.tobytes() for x, y in zip(p1, p2))


def test_different_inputs_give_different_draws() -> None:
    ids = jnp.arange(4096, dtype=jnp.int32)
    base = np.asarray(rng.uniform(5, ids, rng.STREAM_PROMPT))
    for other in (
        rng.uniform(6, ids, rng.STREAM_PROMPT),
        rng.uniform(5, ids + 1, rng.STREAM_PROMPT),
        rng.uniform(5, ids, rng.STREAM_OUTPUT),
        rng.uniform(5, ids, rng.STREAM_PROMPT, 1),
    ):
        # two independent 24-bit streams agree on ~4096 / 2^24 positions
        assert np.mean(np.asarray(other) == base) < 0.01


def test_seeds_whose_mixed_values_differ_by_a_small_xor_do_not_share_streams() -> None:
    # Seeds 2182 and 2686 differ by XOR 336 after the first mixing round: without the second
    # entry of the seed, request i of one equalled request i ^ 336 of the other, for every i.
    i = jnp.arange(100_000, dtype=jnp.int32)
    a = np.asarray(rng.uniform(2182, i, rng.STREAM_PROMPT))
    b = np.asarray(rng.uniform(2686, i ^ 336, rng.STREAM_PROMPT))
    assert np.mean(a == b) < 1e-3
