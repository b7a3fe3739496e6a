"""jaxsched.rng.uniform in the standard library, shared by the plain-Python reference simulators."""

from __future__ import annotations

_MASK32 = 0xFFFFFFFF


def _mix32(x: int) -> int:
    """lowbias32 mixer on a 32-bit unsigned int (jaxsched.rng.mix32)."""
    x &= _MASK32
    x ^= x >> 16
    x = (x * 0x7FEB352D) & _MASK32
    x ^= x >> 15
    x = (x * 0x846CA68B) & _MASK32
    x ^= x >> 16
    return x


def hash3(seed: int, index: int, tag: int) -> int:
    """jaxsched.rng.hash3(seed, index, tag): mix(mix(mix(seed * golden + tag) ^ index) +
    mix(seed ^ salt)), mod 2^32."""
    seed &= _MASK32
    h = _mix32(seed * 0x9E3779B9 + tag)
    h = _mix32(h ^ (index & _MASK32))
    return _mix32(h + _mix32(seed ^ 0x5BD1E995))


def uniform(seed: int, index: int, stream: int) -> float:
    """jaxsched.rng.uniform(seed, index, stream): (hash3(seed, index, stream * 64) >> 8) / 2^24.

    hash3(seed, i, tag) = mix(mix(mix(seed * golden + tag) ^ i) + mix(seed ^ salt)), mod 2^32,
    with tag = stream * 64 (sub-draw 0). The result is a multiple of 2^-24 in [0, 1), exact in
    float32.
    """
    return (hash3(seed, index, stream * 64) >> 8) / 2.0**24
