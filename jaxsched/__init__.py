"""jaxsched: batched JAX simulators of LLM-serving schedulers."""
from .dp.config import DPConfig, DPParams, make_params
from .errors import ConfigError
from . import workload
from .workload import BivariateNormal, BurstGPTLike, Constant, Geometric, Independent, Trace, UniformInt, read_trace

__version__ = "0.1.0"
__all__ = ["DPConfig", "DPParams", "make_params", "ConfigError", "workload", "BivariateNormal",
           "BurstGPTLike", "Constant", "Geometric", "Independent", "Trace", "UniformInt", "read_trace"]
