"""Pure array kernels (assignment, ranking, ring prefix sums), with no simulator knowledge.

The folder kernels/ installs as `jaxsched.kernels` (pyproject.toml maps it). The engines
import these kernels; the kernels import nothing else of jaxsched. Every kernel is jittable and
vmappable and works on fixed shapes with validity masks.
"""

from .future_peak import admit_check, completion_peaks, completion_peaks_binned, lex_argmin
from .level_fill import level_fill, subset_masks
from .local_search import BFIO_VARIANTS, local_search, multi_start, multi_start_level, objective
from .order import all_computed, written_after
from .ranking import count_bits, free_slot_rank, pack_bits, select_bit
from .reduce import fused_sums, ordered_mean, ordered_sum
from .ring import group_rank, prefix_by_id, prefix_max_by_id, suffix_sums
from .round_lpt import round_lpt
from .valley_fill import lookahead_valley_fill, packable, valley_fill, valley_fill_unpacked, window_weights
from .window_fill import window_fill

__all__ = [
    "all_computed",
    "written_after",
    "fused_sums",
    "ordered_mean",
    "ordered_sum",
    "admit_check",
    "completion_peaks",
    "completion_peaks_binned",
    "lex_argmin",
    "group_rank",
    "prefix_by_id",
    "prefix_max_by_id",
    "suffix_sums",
    "BFIO_VARIANTS",
    "level_fill",
    "local_search",
    "multi_start",
    "multi_start_level",
    "objective",
    "subset_masks",
    "count_bits",
    "free_slot_rank",
    "pack_bits",
    "select_bit",
    "round_lpt",
    "packable",
    "valley_fill",
    "valley_fill_unpacked",
    "lookahead_valley_fill",
    "window_weights",
    "window_fill",
]
