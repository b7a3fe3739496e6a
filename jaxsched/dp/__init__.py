"""Data-parallel decode behind a barrier (the BF-IO paper): engine, policies, metrics, runs."""
from .engine import init, step, projected_loads
from .metrics import METRICS, finalize
from .policies import POLICIES, Observation
from .run import DPResult, simulate
from .state import DPState, Pool, Slots

__all__ = ["init", "step", "projected_loads", "METRICS", "finalize", "POLICIES", "Observation",
           "DPResult", "simulate", "DPState", "Pool", "Slots"]
