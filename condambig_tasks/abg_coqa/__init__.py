"""Abg-CoQA (Guo et al., 2021): ambiguity detection, clarification question generation and
clarification-based question answering in conversational QA."""
