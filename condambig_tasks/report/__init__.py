"""``condambig-report``: one Markdown report and PNG figures from lm-eval results and Inspect
logs of several models and benchmarks, beside the papers' published numbers.

``condambig_tasks.run_logs`` reads the runs and their per-sample scores, ``paper`` the
papers' numbers (each benchmark's ``paper_numbers.yaml``), ``sections`` groups runs by
variant, ``stats`` gives their standard errors and paired comparisons, ``scales`` and
``figures`` take what they show from the metric spec, ``tables`` writes the Markdown,
``cli`` ties them together.
"""
