"""The benchmarks themselves, framework-free: loaders, prompts, parsers, lm-eval task folders.

Kept import-light on purpose: the lm-eval discovery hook (``_lm_eval_hook``) is imported
from a ``.pth`` file at every interpreter start-up.
"""
