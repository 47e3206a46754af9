"""lm-eval task folder `condambig` (lm-eval itself loads utils.py here by path)."""
