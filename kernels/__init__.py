"""Pure array kernels (assignment, ranking), with no simulator knowledge.

jaxsched imports kernels; kernels never import jaxsched. Every kernel is jittable and
vmappable and works on fixed shapes with validity masks.
"""
from .ranking import masked_rank, free_slot_rank
from .valley_fill import lookahead_valley_fill, valley_fill, window_weights

__all__ = ["masked_rank", "free_slot_rank", "valley_fill", "lookahead_valley_fill", "window_weights"]
