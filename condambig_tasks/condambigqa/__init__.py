"""CondAmbigQA (Li et al.): condition-answer-citation triples for ambiguous questions.

Modules: ``benchmark`` (the contract class and its options), ``records`` (typed records),
``loader`` (local files / Hugging Face, schema normalisation), ``prompts`` (the five
settings), ``parser`` (total parsing of model output), ``scoring`` (judge planning,
matching, per-question scores).
"""
