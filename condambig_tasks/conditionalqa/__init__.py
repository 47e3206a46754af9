"""ConditionalQA (Sun et al., 2022): answers with the document elements that condition them.

Modules: ``benchmark`` (the options and the :class:`~condambig_tasks.benchmark.Benchmark`
every front end uses), ``records`` (typed records), ``loader`` (local files / pinned
upstream files, questions joined to documents by url), ``document_view`` (element
numbering and the length budget), ``prompts``, ``parser`` (total parsing of model output)
and ``scoring`` (one output's metric values). The metrics themselves are in
``condambig_metrics.conditionalqa``.
"""
