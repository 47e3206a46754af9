"""lm-eval task folder `conditionalqa` (lm-eval itself loads utils.py here by path)."""
