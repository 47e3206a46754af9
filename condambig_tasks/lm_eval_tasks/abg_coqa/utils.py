"""lm-eval loads this file by path; every hook comes from the generic glue (picklable)."""

from condambig_tasks.lm_eval_glue import LmEvalTask

task = LmEvalTask("abg_coqa")
load_docs, doc_to_text, doc_to_target, process_results = (
    task.load_docs, task.doc_to_text, task.doc_to_target, task.process_results)


def __getattr__(name: str):  # agg_<metric>, named in the YAMLs' metric_list
    return getattr(task, name)
