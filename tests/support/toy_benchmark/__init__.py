"""A toy benchmark ("name the capital") built only on the benchmark contract.

It lives outside the package and is registered with
``CONDAMBIG_EXTRA_BENCHMARKS=toy=tests.support.toy_benchmark.benchmark:Toy``; it is the
worked example of docs/adding-a-benchmark.md.
"""
