"""Pure metric functions (no framework imports) and the LLM-judge engine."""
