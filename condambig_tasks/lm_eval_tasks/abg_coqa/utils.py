"""lm-eval loads this file by path; the functions live in a real package (picklable)."""

from condambig_tasks.abg_coqa.lm_eval_glue import (  # noqa: F401
    agg_bleu1,
    agg_bleu2,
    agg_bleu3,
    agg_bleu4,
    agg_f1,
    agg_judge_failed,
    agg_judge_helpful_rate,
    agg_judge_helpfulness,
    agg_precision,
    agg_recall,
    doc_to_target,
    doc_to_text,
    load_clarification_docs,
    load_clarified_qa_docs,
    load_detection_docs,
    process_results,
)
