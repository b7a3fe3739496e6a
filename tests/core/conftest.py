"""Fixtures shared by the tests of tests/core."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import pytest


def _kv_rates_rows(
    labels: Sequence[str],
    batch_limits: Sequence[str] = ("none",),
    capacity_rules: Sequence[str] = ("mstar",),
    rates: Sequence[float] = (50.0, 90.0),
    per_rate: Sequence[Mapping[str, Any]] | None = None,
) -> list[dict]:
    """Rows of a kv rate sweep as `jaxsched.kv.plots.plot_kv_rates` reads them: one per label,
    batch limit, capacity rule and rate (req/s), in that nesting; throughput 0.9 of a fluid 1.0,
    mean latency 1 + i s at the i-th rate, status "ok". per_rate: extra fields of the row at
    each rate (e.g. seeds, num_requests), one mapping per rate."""
    extra = [{} for _ in rates] if per_rate is None else list(per_rate)
    if len(extra) != len(rates):
        raise ValueError(f"per_rate needs one mapping per rate ({len(rates)}), got {len(extra)}")
    return [
        dict(
            label=label,
            batch_limit=b,
            capacity_rule=rule,
            rate_total_req_s=rate,
            throughput=0.9,
            throughput_ci=0.01,
            fluid_throughput=1.0,
            latency_mean=1.0 + i,
            latency_mean_ci=0.1,
            status="ok",
            **extra[i],
        )
        for label in labels
        for b in batch_limits
        for rule in capacity_rules
        for i, rate in enumerate(rates)
    ]


@pytest.fixture
def kv_rates_rows() -> Callable[..., list[dict]]:
    """The builder of kv rate-sweep rows for `plot_kv_rates` (`_kv_rates_rows`)."""
    return _kv_rates_rows
