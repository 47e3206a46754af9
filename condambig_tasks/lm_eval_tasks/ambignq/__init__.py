"""lm-eval task folder `ambignq` (lm-eval itself loads utils.py here by path)."""
