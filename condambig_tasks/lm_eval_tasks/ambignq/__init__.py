"""lm-eval task folder `ambignq`: task files generated from the spec (`generate.py` beside this folder) and the task card."""
