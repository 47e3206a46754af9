"""HotpotQA-FLM (Toles et al.): score a clarifying question by the information it recovers.

The model under evaluation sees a HotpotQA question whose context lacks one supporting
fact and asks one question; an answering agent answers it by choosing one fact of the
example; a downstream model answers the original question with and without that fact.
"""
