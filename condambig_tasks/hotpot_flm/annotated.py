"""The paper's human-annotated test set (mtoles/qq ``gt_data/3/gt_dataset_v3_400_of_600.tsv``).

Columns: id, q1 (task), a1 (gold answer), fc_masked (incomplete context, rendered as
``Title: s1 s2 Title: s3``), masked_sentence, masked_sentence_title, q2_gt (the human
clarifying question; empty on 200 rows). The file is tab-separated with CRLF line ends and
NO quoting: a field may start with a literal ``"`` (a song title, say). Read with the csv
module's default quoting, four such fields swallow the following rows up to the next quote
(596 rows, 396 annotated); read as written it has 600 rows, 400 with a human question —
the paper's n = 400. The test split is those 400 rows.
"""

from __future__ import annotations

import csv
import io
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from condambig_tasks.assets import DIRECT_URL, AssetFile, ExternalAsset
from condambig_tasks.data import CorruptDataError, fetch_pinned, local_files, read_text
from condambig_tasks.hotpot_flm.masking import candidate_facts, supporting_keys
from condambig_tasks.hotpot_flm.records import FlmExample, HotpotExample, render_context

logger = logging.getLogger(__name__)

BENCHMARK = "HotpotQA-FLM"
FOLDER = "hotpot_flm"
FILE_NAME = "gt_dataset_v3_400_of_600.tsv"
UPSTREAM_URL = (
    "https://raw.githubusercontent.com/mtoles/qq/07e3e03bddd81795aeb3afc630d6fbe3fa498c3c/"
    "gt_data/3/gt_dataset_v3_400_of_600.tsv"
)
# Computed from a byte-identical copy of the upstream file.
UPSTREAM_SHA256 = "7c1023ed1371dae4d4bc5a79f57547e2581347843a4fe26bb58cc2f98c3a982e"
ASSET = ExternalAsset(
    DIRECT_URL, UPSTREAM_URL, "download_and_verify",
    "The authors' human-annotated test set (600 rows, 400 with a human question).",
    files=(AssetFile(FOLDER, FILE_NAME, UPSTREAM_SHA256),))
COLUMNS = ("id", "q1", "a1", "fc_masked", "masked_sentence", "masked_sentence_title", "q2_gt")


@dataclass(frozen=True)
class AnnotatedRow:
    """One TSV row; ``human_question`` is None where q2_gt is empty."""

    id: str
    question: str
    answer: str
    incomplete_context: str
    masked_sentence: str
    masked_title: str
    human_question: str | None


def annotated_file_path() -> Path:
    """The local TSV if ``$CONDAMBIG_DATA_DIR/hotpot_flm/`` has it, else the pinned download."""
    files = local_files(FOLDER, [FILE_NAME])
    if files:
        return files[0]
    return fetch_pinned(UPSTREAM_URL, UPSTREAM_SHA256, BENCHMARK, FOLDER, FILE_NAME)


def parse_rows(text: str, source: str = FILE_NAME) -> list[AnnotatedRow]:
    """All rows of the TSV text (quotes are literal text, never field delimiters).

    The csv module's field size limit (128 KiB) stays: the upstream file's longest field
    has under 1,000 characters, so a longer one means another file, reported by line."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE)
    try:
        return _rows(reader, source)
    except csv.Error as error:
        raise CorruptDataError(
            f"{source}, line {reader.line_num}: not a row of the upstream TSV ({error}). "
            f"Replace it with the upstream {FILE_NAME}."
        ) from None


def _rows(reader: Iterator[list[str]], source: str) -> list[AnnotatedRow]:
    header = next(reader, None)
    if header is None or tuple(column.strip() for column in header) != COLUMNS:
        raise CorruptDataError(
            f"{source}: expected the columns {', '.join(COLUMNS)}, found {header!r}. "
            f"Replace it with the upstream {FILE_NAME}."
        )
    rows = []
    for line_number, fields in enumerate(reader, start=2):
        if not fields or fields == [""]:
            continue
        if len(fields) != len(COLUMNS):
            raise CorruptDataError(
                f"{source}, line {line_number}: {len(fields)} tab-separated fields instead of "
                f"{len(COLUMNS)}. Replace it with the upstream {FILE_NAME}."
            )
        values = dict(zip(COLUMNS, fields, strict=True))
        human = values["q2_gt"].strip()
        rows.append(AnnotatedRow(
            id=values["id"].strip(), question=values["q1"], answer=values["a1"],
            incomplete_context=values["fc_masked"], masked_sentence=values["masked_sentence"],
            masked_title=values["masked_sentence_title"], human_question=human or None,
        ))
    return rows


def load_rows() -> list[AnnotatedRow]:
    path = annotated_file_path()
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError) as error:
        raise CorruptDataError(f"{path}: cannot be read as UTF-8 text ({error}).") from error
    return parse_rows(text, str(path))


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def build_test_example(row: AnnotatedRow, example: HotpotExample) -> FlmExample | None:
    """The FLM example of an annotated row, using the row's own masked fact and context.

    Candidates and the complete context come from the matching HotpotQA example; the masked
    fact is found among its supporting facts (whitespace-insensitively: the TSV collapses
    runs of spaces). None when the masked fact is not a sentence of the example.
    """
    candidates, keys = candidate_facts(example)
    wanted = (row.masked_title, _squeeze(row.masked_sentence))
    support = set(supporting_keys(example))
    matches = [
        index for index, fact in enumerate(candidates)
        if (fact.title, _squeeze(fact.sentence)) == wanted
    ]
    matches.sort(key=lambda index: keys[index] not in support)  # a supporting match first
    if not matches:
        return None
    masked_index = matches[0]
    complete = [fact for fact, key in zip(candidates, keys, strict=True) if key in support]
    if keys[masked_index] not in support:
        complete = [fact for fact, key in zip(candidates, keys, strict=True)
                    if key in support or key == keys[masked_index]]
    return FlmExample(
        id=row.id, split="test", question=row.question, answer=row.answer,
        incomplete_context=row.incomplete_context, complete_context=render_context(complete),
        masked_fact=candidates[masked_index], masked_index=masked_index,
        candidates=tuple(candidates), supporting_count=len(support | {keys[masked_index]}),
        human_question=row.human_question,
        supporting_indices=tuple(index for index, key in enumerate(keys)
                                 if key in support or index == masked_index),
    )


def build_test_examples(
    rows: Sequence[AnnotatedRow], hotpot: Mapping[str, HotpotExample]
) -> tuple[list[FlmExample], list[str]]:
    """Examples for the annotated rows, and the ids that could not be built (with why, logged)."""
    examples, missing = [], []
    for row in rows:
        source = hotpot.get(row.id)
        built = build_test_example(row, source) if source is not None else None
        if built is None:
            missing.append(row.id)
        else:
            examples.append(built)
    if missing:
        logger.warning(
            "%s test split: %d of %d annotated rows skipped because their HotpotQA example "
            "(or its masked sentence) is not in the HotpotQA data loaded; the full "
            "hotpot_dev_distractor_v1.json (or hub access) provides all of them.",
            BENCHMARK, len(missing), len(rows),
        )
    return examples, missing
