"""lm-eval task folder `hotpot_flm` (lm-eval itself loads utils.py here by path)."""
