"""lm-eval loads this file by path: it only re-exports the real module's functions."""

from condambig_tasks.conditionalqa.lm_eval_glue import (  # noqa: F401
    agg_subset_mean,
    agg_sum,
    doc_to_target,
    doc_to_text,
    load_docs,
    process_results,
)
