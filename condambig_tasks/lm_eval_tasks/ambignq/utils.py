"""lm-eval loads this file by path; the functions live in a real package (picklable)."""

from condambig_tasks.ambignq.lm_eval_glue import (  # noqa: F401
    doc_to_target,
    doc_to_text,
    load_docs,
    process_results,
)
