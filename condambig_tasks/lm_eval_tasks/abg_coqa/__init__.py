"""lm-eval task folder `abg_coqa` (lm-eval itself loads utils.py here by path)."""
