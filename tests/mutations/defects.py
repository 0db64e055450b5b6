"""The deliberate defects of the mutation check: each one small textual edit of one tracked file.

A defect names the file, the exact text it replaces (which must occur exactly once in that file,
else the defect has rotted and is refused), the text put in its place, what the defect means,
and the tests that should catch it quickly (``first``: pytest node ids or files, all selected by
``make test``; when they pass, the whole suite is run).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Defect:
    name: str
    path: str  # relative to the repository root, a file git tracks
    old: str  # occurs exactly once in ``path``
    new: str
    means: str
    first: tuple[str, ...] = ()


DEFECTS: tuple[Defect, ...] = (
    Defect(
        name="id-order-reversed",
        path="src/tieaudit/ties/rules/ids.py",
        old="return -ties.table.item if self.descending else ties.table.item",
        new="return ties.table.item if self.descending else -ties.table.item",
        means="item_id and docno_desc break ties the wrong way on a stored table",
        first=("tests/test_rule_conformance.py::test_every_registered_rule_conforms[item_id]",),
    ),
    Defect(
        name="expected-off-by-one-place",
        path="src/tieaudit/ties/rules/expected.py",
        old="    c1 = np.cumsum(table)\n",
        new="    c1 = np.cumsum(np.append(table[1:], 0.0))\n",
        means="expected takes each place's gain from the place after it",
        first=("tests/test_rule_conformance.py::test_every_registered_rule_conforms[expected]",),
    ),
    Defect(
        name="hash-seed-ignored",
        path="src/tieaudit/common/hashing.py",
        old="salt = np.uint64(_salt(seed))",
        new="salt = np.uint64(_salt(0))",
        means="the vectorised hash keys ignore the seed: every hash:S is hash:0",
        first=("tests/test_hashing.py",),
    ),
    Defect(
        name="dependency-package-init-dropped",
        path="src/tieaudit/pipeline/dependencies.py",
        old="return {p for m in seen if (p := self.module_file(m)) is not None}",
        new='return {p for m in seen if (p := self.module_file(m)) is not None and p.stem != "__init__"}',
        means="package __init__ modules a step imports are left out of the derived step inputs",
        first=("tests/test_dependencies.py",),
    ),
    Defect(
        name="scorer-file-untracked",
        path="workflow/rules/common.smk",
        old="files = [path, *library_files(path, package_dir=LIB)]",
        new="files = [*library_files(path, package_dir=LIB)]",
        means="a user scorer's own file is not an input of the steps that run it",
        first=(
            "tests/test_config_validation.py"
            "::test_valid_config_dry_runs_with_the_spellings_the_library_accepts",
        ),
    ),
    Defect(
        name="parquet-write-not-deterministic",
        path="src/tieaudit/common/parquet.py",
        old="self.add_key_value_metadata({FOOTER_KEY: _PLACEHOLDER})",
        new='self.add_key_value_metadata({FOOTER_KEY: _PLACEHOLDER, b"write_id": os.urandom(8).hex().encode()})',
        means="every Parquet table written carries a random id: same inputs, different bytes",
        first=("tests/test_parquet.py",),
    ),
    Defect(
        name="schema-seed-minimum-dropped",
        path="workflow/schemas/config.schema.yaml",
        old="        minimum: 0\n        description: Seed of row sampling",
        new="        description: Seed of row sampling",
        means="the schema no longer refuses a negative evaluation.seed",
        first=("tests/test_config_validation.py::test_schema_mistakes_name_their_key",),
    ),
    Defect(
        name="config-reported-rule-unchecked",
        path="workflow/rules/common.smk",
        old="if rules and reported not in rules:",
        new="if not rules and reported not in rules:",
        means="evaluation.reported_rule need no longer be one of evaluation.rules",
        first=("tests/test_config_validation.py::test_membership_and_empty_lists",),
    ),
    Defect(
        name="slurm-rule-list-drops-underscored-rules",
        path="tests/slurm/run_slurm_test.sh",
        old="/^ *rule [a-z_]+:/",
        new="/^ *rule [a-z]+:/",
        means="the Slurm test's list of rules sent to Slurm misses every rule named with a '_'",
        first=("tests/test_slurm_rules.py",),
    ),
    Defect(
        name="page-cell-not-escaped",
        path="src/tieaudit/outputs/page.py",
        old="return f\"<td{_LEFT if left else ''}>{html.escape(text)}</td>\"",
        new="return f\"<td{_LEFT if left else ''}>{text}</td>\"",
        means="a results-page table cell is written as raw HTML",
        first=("tests/test_page.py::test_table_cells_show_their_text_not_markup",),
    ),
    Defect(
        name="download-pinned-before-checked",
        path="src/tieaudit/data/download.py",
        old="        mismatch = expect.mismatch(actual)\n",
        new=(
            "        if lock is not None:\n"
            "            _record(lock, url, actual, fail)\n"
            "        mismatch = expect.mismatch(actual)\n"
        ),
        means="a download is pinned in the lock file before its checksum and format are checked",
        first=(
            "tests/data/test_download.py::test_html_page_served_with_200_is_refused_and_not_pinned",
            "tests/data/test_download.py::test_close_delimited_plain_file_is_refused_and_not_pinned",
        ),
    ),
    Defect(
        name="measure-cutoff-excludes-k",
        path="src/tieaudit/ties/measures.py",
        old="hit = r <= self.k",
        new="hit = r < self.k",
        means="a relevant item at rank k counts as outside the top k",
        first=("tests/test_measures.py",),
    ),
    Defect(
        name="audit-reversed-is-identity",
        path="src/tieaudit/ties/structure.py",
        old="order = np.lexsort((-idx, table.row))",
        new="order = np.lexsort((idx, table.row))",
        means="the audit's 'reversed' permutation leaves every row as stored",
        first=("tests/test_audit.py::test_reversed_reverses_every_row",),
    ),
    Defect(
        name="audit-shuffles-one-draw",
        path="src/tieaudit/ties/structure.py",
        old='rng = make_rng(seed, "audit-shuffle", p)\n        rng.bit_generator.advance(offset)',
        new='rng = make_rng(seed, "audit-shuffle", 0)\n        rng.bit_generator.advance(offset)',
        means="every audit shuffle of a stored table is the same draw",
        first=(
            "tests/test_audit.py"
            "::test_shuffles_are_deterministic_per_seed_and_differ_between_seeds_and_draws",
        ),
    ),
    Defect(
        name="full-catalogue-history-tied",
        path="src/tieaudit/analyses/fullcatalog.py",
        old="    tied[h_row, h_item] = False\n",
        new="",
        means="the full-catalogue reducer counts a user's history items in the tie group",
        first=("tests/test_fullcatalog_reducer.py",),
    ),
    Defect(
        name="reader-csv-line-off-by-one",
        path="src/tieaudit/tables/read.py",
        old="numbers = [int(p) + (2 if csv_lines else 1) for p in shown_pos]",
        new="numbers = [int(p) + (1 if csv_lines else 1) for p in shown_pos]",
        means="a bad candidates CSV line is named one line too early",
        first=("tests/test_candidates.py",),
    ),
    Defect(
        name="reader-nan-score-accepted",
        path="src/tieaudit/tables/read.py",
        old='    bad(np.isnan(score), f"missing or NaN {say(\'score\')}")\n',
        new="",
        means="a candidate with a missing or NaN score is read without an error",
        first=("tests/test_candidates.py",),
    ),
    Defect(
        name="audit-parts-gap-summed-per-part",
        path="src/tieaudit/analyses/audit.py",
        old="replace(self.diagnostics, gap=_gaps(low, high, v.measures)))",
        new="self.diagnostics)",
        means="the audit's parts add their optimistic - pessimistic sums instead of the rows' "
        "values (the merged diagnostics differ from one audit's in the last bits)",
        first=("tests/test_audit_parts.py::test_the_diagnostics_that_are_not_sums_merge_exactly",),
    ),
    Defect(
        name="parquet-page-checksums-off",
        path="src/tieaudit/common/parquet.py",
        old="write_page_checksum=True, **options",
        new="write_page_checksum=False, **options",
        means="Parquet pages are written without their CRC-32",
        first=("tests/test_parquet.py",),
    ),
    Defect(
        name="cli-error-exit-1",
        path="src/tieaudit/cli.py",
        old="        print(f\"tieaudit: error: {exc}\", file=sys.stderr)\n        return 2\n",
        new="        print(f\"tieaudit: error: {exc}\", file=sys.stderr)\n        return 1\n",
        means="bad input makes the CLI exit 1 instead of the documented 2",
        first=("tests/test_cli.py::test_bad_input_evaluate_exits_2_and_writes_nothing",),
    ),
)
