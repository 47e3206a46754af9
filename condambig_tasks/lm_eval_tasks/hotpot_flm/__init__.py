"""lm-eval task folder `hotpot_flm`: task files generated from the spec (`generate.py` beside this folder) and the task card."""
