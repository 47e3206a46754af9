"""CondAmbigQA (Li et al.): condition-answer-citation triples for ambiguous questions.

Modules: ``records`` (typed records), ``loader`` (local files / Hugging Face, schema
normalisation), ``prompts`` (the five settings), ``parser`` (total parsing of model output),
``scoring`` (judge planning, matching, per-question and corpus scores), ``lm_eval_glue``
and ``score_cli`` (the two non-Inspect front ends).
"""
