"""lm-eval task folder `condambig`: task files generated from the spec (`generate.py` beside this folder) and the task card."""
