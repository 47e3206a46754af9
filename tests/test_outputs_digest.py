"""The outputs digest of the provenance block: same generations, same digest, whatever the
order a front end scored them in; any changed output, id or added sample changes it."""

import hashlib

from condambig_tasks.provenance import outputs_sha256


def test_the_digest_is_the_sha256_of_the_sorted_canonical_lines():
    lines = sorted(['{"id":"a","output":"x"}', '{"id":"b","output":"é"}'])
    expected = hashlib.sha256("".join(line + "\n" for line in lines).encode()).hexdigest()
    assert outputs_sha256([("b", "é"), ("a", "x")]) == expected


def test_order_does_not_matter_but_every_output_and_id_does():
    base = outputs_sha256([("1", "yes"), ("2", "no"), ("3", "")])
    assert outputs_sha256([("3", ""), ("1", "yes"), ("2", "no")]) == base
    assert outputs_sha256([("1", "yes"), ("2", "no "), ("3", "")]) != base
    assert outputs_sha256([("1", "yes"), ("4", "no"), ("3", "")]) != base
    assert outputs_sha256([("1", "yes"), ("2", "no"), ("3", ""), ("3", "")]) != base


def test_non_text_outputs_hash_as_json_and_nan_as_null():
    assert outputs_sha256([(1, ["a", ["c"]])]) == outputs_sha256([("1", ("a", ("c",)))])
    assert outputs_sha256([("1", float("nan"))]) == outputs_sha256([("1", None)])


def test_a_lone_surrogate_hashes_as_the_replacement_character_it_is_scored_as():
    assert outputs_sha256([("1", "x\ud800y")]) == outputs_sha256([("1", "x\ufffdy")])


def test_lm_eval_aggregation_scores_an_output_with_a_lone_surrogate(use_fixture_data,
                                                                     monkeypatch):
    """lm-eval's aggregation step records the digest: a lone surrogate in one output used
    to end it with a UnicodeEncodeError (no results, no samples)."""
    from types import SimpleNamespace

    from condambig_tasks.lm_eval_glue import LmEvalTask

    task = SimpleNamespace(task_name="condambigqa_surrogate",
                           config=SimpleNamespace(metadata={}))
    hooks = LmEvalTask("condambigqa", task)
    docs = hooks.load_docs(version=1.0, pretrained="tiny", task_options={"setting": "main"})["test"]
    outputs = {doc["id"]: '{"conditions": [{"condition": "c\ud800", "answer": "a"}]}'
               for doc in docs}
    per_doc = [hooks.process_results(doc, [outputs[doc["id"]]]) for doc in docs]
    metric = next(name for name, value in per_doc[0].items() if isinstance(value, dict))
    value = hooks.aggregate(metric, [v[metric] for v in per_doc])
    assert value == value  # a number, not NaN
    assert task.config.metadata["provenance"]["outputs_sha256"] == outputs_sha256(
        (key, text.replace("\ud800", "\ufffd")) for key, text in outputs.items())
