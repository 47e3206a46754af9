"""lm-eval loads this file by path; the functions live in a real package (picklable)."""

from condambig_tasks.hotpot_flm.lm_eval_glue import (  # noqa: F401
    agg_em_complete,
    agg_em_incomplete,
    agg_em_recovery,
    agg_em_response,
    agg_f1_complete,
    agg_f1_incomplete,
    agg_f1_recovery,
    agg_f1_response,
    agg_improved_rate,
    agg_mfrr,
    doc_to_target,
    doc_to_text,
    load_full_docs,
    load_test_docs,
    process_results,
)
