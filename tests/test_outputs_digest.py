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
