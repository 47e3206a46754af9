"""lm-eval task folder `condambigqa`: task files generated from the spec (`generate.py` beside this folder) and the task card."""
