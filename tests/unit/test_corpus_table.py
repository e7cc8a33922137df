"""The bad-input table of docs/dev/reliability.md (moved there from the README, issue 43) ("cases tried" per entry point, and the total in its heading) is the
corpus of tests/reliability/test_bad_input_*.py: a case added or removed without the table fails here."""
import collections
import os
import re

from tests.reliability import test_bad_input_modules, test_bad_input_roles

TABLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs", "dev",
                     "reliability.md")


def _table():
    with open(TABLE) as handle:
        text = handle.read()
    heading = re.search(r"^### Bad input: (\d+) cases, (\d+) failing safely$", text, re.M)
    assert heading, "docs/dev/reliability.md has no '### Bad input: N cases, N failing safely' heading"
    rows = {}
    lines = text[heading.end():].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [c.strip().strip("*") for c in line.strip("|").split("|")]
        if len(cells) == 4 and cells[1].isdigit():
            rows[re.sub(r"( \(site\.yml\)|\.yml)$", "", cells[0])] = (int(cells[1]), int(cells[2]))
    return int(heading.group(1)), int(heading.group(2)), rows


def test_readme_table_counts_the_corpus():
    corpus = collections.Counter(case.entry for case in test_bad_input_modules.CASES + test_bad_input_roles.CASES)
    tried, safe, rows = _table()
    total = rows.pop("total")
    assert {entry: row[0] for entry, row in rows.items()} == dict(corpus)
    assert total[0] == tried == sum(corpus.values())
    # every case of the corpus is a test that must pass: the table cannot claim fewer (or more) safe failures
    assert all(row[0] == row[1] for row in rows.values()) and total[1] == safe == tried


def test_case_ids_are_unique():
    ids = [case.id for case in test_bad_input_modules.CASES + test_bad_input_roles.CASES]
    assert len(ids) == len(set(ids)), [i for i, n in collections.Counter(ids).items() if n > 1]
