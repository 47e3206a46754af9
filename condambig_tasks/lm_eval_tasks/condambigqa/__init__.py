"""lm-eval task folder `condambigqa` (lm-eval itself loads utils.py here by path)."""
