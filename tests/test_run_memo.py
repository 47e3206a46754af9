"""The aggregation-step memo: one computation per run, bounded, keyed by what it depends on."""

from condambig_tasks.run_memo import RunMemo


def test_computes_once_per_dependency_and_evicts_the_oldest():
    calls = []
    memo: RunMemo[int] = RunMemo(size=2)

    def compute(value):
        calls.append(value)
        return value * 10

    assert memo.get_or_compute(["a", 1], lambda: compute(1)) == 10
    assert memo.get_or_compute(["a", 1], lambda: compute(99)) == 10  # reused
    memo.get_or_compute(["b"], lambda: compute(2))
    memo.get_or_compute(["c"], lambda: compute(3))  # evicts ["a", 1]
    assert memo.get_or_compute(["a", 1], lambda: compute(4)) == 40
    assert calls == [1, 2, 3, 4]
