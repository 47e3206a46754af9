"""The Inspect side of condambig: ``@task`` functions, solvers and scorers.

Installed under the import name ``condambig`` so tasks are addressed as
``inspect eval condambig/<task>``; ``_registry`` is the ``inspect_ai`` entry point.
"""
