"""Experiments E1-E4 of the WAIT paper (Ao, Luo, Simchi-Levi, Wang 2025) and Theorem 1's scaling.

`setups`: what each experiment is (hardware constants, request types, loads, capacity rules,
steady-state plans, threshold rules);
`runner`: runs an experiment for every registered policy on the kv engine; `scaling`: Theorem
1's horizon sweep; `tables`: markdown tables of their rows. Reading guide: notes/001.md §4, §5,
§7; the experiments, operating points and measured results: docs/kv-experiments.md.
"""

from .runner import mean_half_width, registered_policies, run_experiment, run_point
from .scaling import SCALING_INSTANCES, SCALING_T, SCALING_T_QUICK, ScalingInstance, run_scaling, scaling_point
from .setups import (
    CAPACITY_RULES,
    EXPERIMENTS,
    HARDWARE,
    POLICY_LABELS,
    POLICY_ORDER,
    Hardware,
    KVExperiment,
    SteadyPlan,
    capacity_for,
    nested_rule,
    steady_plan,
    thresholds_for,
    wait_rule,
)
from .tables import experiment_table, scaling_tables

__all__ = [
    "CAPACITY_RULES",
    "EXPERIMENTS",
    "HARDWARE",
    "POLICY_LABELS",
    "POLICY_ORDER",
    "Hardware",
    "KVExperiment",
    "SteadyPlan",
    "capacity_for",
    "nested_rule",
    "steady_plan",
    "thresholds_for",
    "wait_rule",
    "mean_half_width",
    "registered_policies",
    "run_experiment",
    "run_point",
    "SCALING_INSTANCES",
    "SCALING_T",
    "SCALING_T_QUICK",
    "ScalingInstance",
    "run_scaling",
    "scaling_point",
    "experiment_table",
    "scaling_tables",
]
