"""lm-eval loads this file by path; the functions live in a real package (picklable)."""

from condambig_tasks.condambigqa.lm_eval_glue import (  # noqa: F401
    agg_answer_score,
    agg_citation_score,
    agg_combined_score,
    agg_condition_score,
    agg_judge_failed,
    agg_sum,
    doc_to_target,
    doc_to_text,
    load_closed_book_conditions_docs,
    load_closed_book_docs,
    load_gold_conditions_docs,
    load_main_docs,
    load_no_conditions_docs,
    process_results,
)
