"""Element numbering and the documented truncation strategy."""

from __future__ import annotations

from condambig_tasks.conditionalqa.document_view import fit_document, is_heading
from condambig_tasks.conditionalqa.records import PolicyDocument

DOCUMENT = PolicyDocument(
    url="u",
    title="Test",
    contents=(
        "<h1>Overview</h1>",  # 1 word
        "<p>one two three four</p>",  # 4 words
        "<h2>Eligibility</h2>",  # 1
        "<p>five six seven</p>",  # 3
        "<li>eight nine</li>",  # 2
        "<h2>Costs</h2>",  # 1
        "<p>ten</p>",  # 1
    ),
)


def test_whole_document_when_within_budget_or_unlimited():
    for budget in (None, 0, 13, 100):
        view = fit_document(DOCUMENT, budget)
        assert not view.truncated
        assert view.shown == tuple((i + 1, e) for i, e in enumerate(DOCUMENT.contents))


def test_headings_first_then_other_elements_in_order_until_the_budget():
    # headings: 3 words; then <p>one..four</p> (4) -> 7; <p>five six seven</p> (3) -> 10;
    # <li>eight nine</li> (2) would make 12 > 11: stop there (a prefix, no skipping ahead).
    view = fit_document(DOCUMENT, 11)
    assert [number for number, _ in view.shown] == [1, 2, 3, 4, 6]
    assert view.omitted_elements == 2 and view.truncated
    assert view.element_map()[4] == "<p>five six seven</p>"


def test_numbers_are_positions_in_the_full_document_whatever_the_budget():
    full = fit_document(DOCUMENT, None).element_map()
    for budget in range(1, 14):
        for number, element in fit_document(DOCUMENT, budget).shown:
            assert full[number] == element


def test_render_marks_each_omitted_run():
    rendered = fit_document(DOCUMENT, 5).render().splitlines()
    # headings (3 words) + <p>one..four</p> would be 7 > 5: only the headings are shown
    assert rendered == [
        "[1] <h1>Overview</h1>",
        "[... 1 element omitted to fit the length limit ...]",
        "[3] <h2>Eligibility</h2>",
        "[... 2 elements omitted to fit the length limit ...]",
        "[6] <h2>Costs</h2>",
        "[... 1 element omitted to fit the length limit ...]",
    ]


def test_headings_alone_over_budget_keep_a_prefix_of_headings():
    view = fit_document(DOCUMENT, 2)
    assert [number for number, _ in view.shown] == [1, 3]


def test_heading_detection():
    assert is_heading("<h3>Title</h3>") and is_heading(" <H1 class='x'>T</H1>")
    assert not is_heading("<p>h1</p>") and not is_heading("<hr>")
