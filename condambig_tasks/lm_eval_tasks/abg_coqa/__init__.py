"""lm-eval task folder `abg_coqa`: task files generated from the spec (`generate.py` beside this folder) and the task card."""
