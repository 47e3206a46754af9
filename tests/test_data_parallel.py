"""lm-eval data parallelism: each rank runs process_results on its shard, lm-eval gathers
the items to rank 0 (pickled by torch.distributed.gather_object) and aggregates there, once.
The aggregation step must give the one-process numbers from gathered, pickled items."""

from __future__ import annotations

import pickle

import pytest

from condambig_tasks.lm_eval_glue import LmEvalTask
from tests.ambignq.scripted_outputs import RAW_OUTPUTS


def _items_per_metric(task: LmEvalTask, docs, outputs) -> dict[str, list]:
    per_doc = [task.process_results(doc, [outputs[doc["id"]]]) for doc in docs]
    return {name: [values[name] for values in per_doc] for name in per_doc[0]}


def test_sharded_ranks_aggregate_to_the_one_process_numbers(use_fixture_data):
    task = LmEvalTask("ambignq")
    docs = list(task.load_docs(version=1.0)["test"])
    single = _items_per_metric(task, docs, RAW_OUTPUTS)
    # rank r takes docs r, r + 2, ... (lm-eval's strided sharding), then rank 0 gathers
    shards = [_items_per_metric(task, docs[rank::2], RAW_OUTPUTS) for rank in range(2)]
    gathered = {name: pickle.loads(pickle.dumps([item for shard in shards for item in shard[name]]))
                for name in single}
    for name in single:
        expected = task.aggregation(name)(single[name])
        assert task.aggregation(name)(gathered[name]) == pytest.approx(expected, nan_ok=True), name


def test_aggregation_functions_survive_pickling(use_fixture_data):
    """lm-eval may pickle task configs across processes: the unpickled hooks still work."""
    task = LmEvalTask("ambignq")
    docs = list(task.load_docs(version=1.0)["test"])
    copied = pickle.loads(pickle.dumps(task))
    items = [copied.process_results(doc, [RAW_OUTPUTS[doc["id"]]])["f1_answer_all"]
             for doc in docs]
    aggregate = pickle.loads(pickle.dumps(task.aggregation("f1_answer_all")))
    assert aggregate(items) == pytest.approx(task.aggregation("f1_answer_all")(items))
    assert pickle.loads(pickle.dumps(task.load_docs))(version=1.0)["test"]["id"] == \
        [doc["id"] for doc in docs]
