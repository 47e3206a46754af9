"""ConditionalQA (Sun et al., 2022): answers with the document elements that condition them.

Modules: ``records`` (typed records), ``loader`` (local files / pinned upstream files,
questions joined to documents by url), ``document_view`` (element numbering and the
length budget), ``prompt``, ``parser`` (total parsing of model output), ``scoring`` (one
model output -> official metrics), ``task_items`` (what both frameworks evaluate),
``lm_eval_glue`` and ``score_cli``. The metrics themselves are in
``condambig_metrics.conditionalqa``.
"""
