"""The benchmark's lm-eval hooks by module (lm-eval builds its tasks with
``condambig_tasks.lm_eval_task.CondambigTask``; the report's task index reads the name here)."""

from condambig_tasks.lm_eval_glue import LmEvalTask

task = LmEvalTask("conditionalqa")
load_docs, doc_to_text, doc_to_target, process_results = (
    task.load_docs, task.doc_to_text, task.doc_to_target, task.process_results)


def __getattr__(name: str):  # agg_<metric>: one metric's aggregation outside a task
    return getattr(task, name)
