"""Reference pages made at every build from what they describe, never typed twice: the API page
from ``tieaudit.__all__`` (the docstrings by autodoc), the command line from its argument
parser, the configuration from ``workflow/schemas/config.schema.yaml``, the evaluator census
from its published run, ``docs/census/evaluators.csv`` (``make census`` writes it). They are
written to ``docs/reference/_generated/`` (not tracked) before Sphinx reads the sources; a page
left there by an earlier version is removed. The tie-rule table, ``docs/reference/tie-rules.md``,
is tracked so that it reads offline, and ``tests/test_docs.py`` checks it against the registry."""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Any

import yaml

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
OUT = DOCS / "reference" / "_generated"

#: The extension points' protocols, documented beside the package's public names.
PROTOCOLS = {
    "Tie rules": ["tieaudit.ties.rules.base.RuleKind"],
    "Scorers": ["tieaudit.scorers.base.Scorer"],
    "Dataset sources": ["tieaudit.sources.base.Source", "tieaudit.sources.base.DatasetSource"],
}


def _directive(name: str, obj: Any) -> str:
    """The autodoc directive of ``obj``, documented under its dotted ``name``."""
    if inspect.isclass(obj):
        return f"```{{eval-rst}}\n.. autoclass:: {name}\n   :members:\n```\n"
    if callable(obj):
        return f"```{{eval-rst}}\n.. autofunction:: {name}\n```\n"
    return f"```{{eval-rst}}\n.. autodata:: {name}\n   :no-value:\n```\n"


def _public_modules(package: str) -> list[Any]:
    """The modules of the folder ``package`` that name public things (a non-empty ``__all__``),
    by name: a subpackage's face, then its own modules (``tieaudit.ties.rules``, then
    ``tieaudit.ties.rules.base``, where ``TieRule`` is defined)."""
    import importlib
    import pkgutil

    face = importlib.import_module(package)
    out = []
    for info in sorted(pkgutil.iter_modules(face.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        if getattr(module, "__all__", None):
            out.append(module)
        if info.ispkg:
            out += _public_modules(module.__name__)
    return out


def _defined(module: Any) -> list[str]:
    """The names of ``module.__all__`` that the module defines itself (not those it hands on
    from another module, documented there)."""
    import ast

    tree = ast.parse(inspect.getsource(module))
    assigned = {t.id for node in tree.body if isinstance(node, ast.Assign | ast.AnnAssign)
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                if isinstance(t, ast.Name)}  # fmt: skip
    out = []
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            if obj.__module__ == module.__name__:
                out.append(name)
        elif name in assigned and not inspect.ismodule(obj):
            out.append(name)
    return out


def _module_section(module: Any, heading: str) -> list[str]:
    """A module's section of the API page: its docstring's first paragraph, then its names."""
    names = _defined(module)
    if not names:
        return []
    first = (inspect.getdoc(module) or "").split("\n\n")[0].replace("\n", " ")
    out = [f"{heading} `{module.__name__}`", "", f"```{{eval-rst}}\n{first}\n```\n"]
    return out + [_directive(f"{module.__name__}.{name}", getattr(module, name)) for name in names]


def api_page() -> str:
    import importlib

    import tieaudit
    from tieaudit.layers import LAYERS

    out = ["# API reference", "",
           "The names of `tieaudit` itself (imported on first use), then every folder of the "
           "package in the order of its layers (`tieaudit.layers`: the data's way, file to "
           "table to ties to values to summary), each with its modules' public names (their "
           "`__all__`), then the protocols an extension implements. Everything here is the "
           "docstrings.", "", "## `tieaudit`", ""]  # fmt: skip
    sections = []  # (package, its summary, [(module, the names it documents)])
    for layer in LAYERS:
        for folder in (p[:-2] for p in layer.patterns if p.endswith("/*")):
            package = f"tieaudit.{folder}"
            face = importlib.import_module(package)
            summary = (inspect.getdoc(face) or "").split("\n\n")[0].replace("\n", " ")
            modules = [(m, _defined(m)) for m in _public_modules(package)]
            sections.append((package, summary, [(m, names) for m, names in modules if names]))
        if not any(p.endswith("/*") for p in layer.patterns):  # single modules (integrations)
            for pattern in layer.patterns:
                module = importlib.import_module(f"tieaudit.{pattern.removesuffix('.py')}")
                sections.append((None, "", [(module, _defined(module))]))
    # where each documented object is (a name of the package root links to its entry there)
    home = {(n, id(getattr(m, n))): f"{m.__name__}.{n}" for *_, modules in sections
            for m, names in modules for n in names}  # fmt: skip
    for name in sorted(n for n in tieaudit.__all__ if not n.startswith("__")):
        obj = getattr(tieaudit, name)
        target = home.get((name, id(obj)), f"tieaudit.{tieaudit._SOURCE[name]}.{name}")
        role = "class" if inspect.isclass(obj) else "func" if callable(obj) else "data"
        out.append(f"- `tieaudit.{name}`: {{py:{role}}}`{target}`")
    out.append("")
    for package, summary, modules in sections:
        if package is not None:
            out += [f"## `{package}`", "", summary, ""]
        for module, _ in modules:
            out += _module_section(module, "###" if package is not None else "##")
    out += ["## Extension protocols", "",
            "What an extension implements, documented with its folder above:", ""]  # fmt: skip
    for heading, names in PROTOCOLS.items():
        out.append(f"- {heading}: " + ", ".join(f"{{py:class}}`{n}`" for n in names))
    return "\n".join(out) + "\n"


def _argument_rows(command: Any) -> list[str]:
    """A command's arguments as Markdown table rows: the argument as typed, its default, what it
    does (the parser's help)."""
    import argparse

    rows = []
    for action in command._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        meta = action.metavar or action.dest.upper()
        if action.option_strings:
            takes = "" if action.nargs == 0 else f" {meta}" + (" ..." if action.nargs in ("+", "*")
                                                                else "")  # fmt: skip
            typed = ", ".join(f"`{o}{takes}`" for o in action.option_strings)
        else:
            typed = f"`{meta}" + (" ..." if action.nargs in ("+", "*") else "") + "`"
        default = action.default
        shown = "" if default in (None, False, argparse.SUPPRESS) else f"`{_plain(default)}`"
        text = " ".join(str(action.help or "").split()).replace("|", "\\|")
        rows.append(f"| {typed} | {shown} | {text} |")
    return rows


def _plain(value: Any) -> str:
    return " ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)


def cli_page() -> str:
    """The command line, a section per command: what it does, examples (``tieaudit.cli.EXAMPLES``,
    which the tests run), its arguments as a table, and its whole ``--help``."""
    from tieaudit.cli import EXAMPLES, _parser

    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: a fixed width, the same page
    parser = _parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    helps = {c.dest: c.help for c in sub._choices_actions}
    out = ["# Command line", "",
           f"{parser.description} `tieaudit COMMAND --help` prints what a section below says; "
           "`tieaudit --version` the version. Bad input exits with status 2 and one line naming "
           "the file, line or row. The examples run from the root of a checkout, on the files "
           "of `examples/` (the tests run every one).", "",
           "| command | what it does |", "|---|---|"]  # fmt: skip
    out += [f"| [`tieaudit {name}`](#tieaudit-{name}) | {helps[name]} |" for name in sub.choices]
    out.append("")
    for name, command in sub.choices.items():
        description = (command.description or "").split("\n\n")[0]
        out += [f"## `tieaudit {name}`", "", " ".join(description.split()), "",
                "**Examples**", "", "```console"]  # fmt: skip
        for line, what in EXAMPLES[name]:
            out += [f"$ {line}", f"# {what}"]
        out += ["```", "", "**Arguments**", "", "| argument | default | what it does |",
                "|---|---|---|", *_argument_rows(command), "",
                "<details><summary>the whole <code>--help</code></summary>", "", "```text",
                command.format_help().rstrip(), "```", "", "</details>", ""]  # fmt: skip
    return "\n".join(out)


def _schema_rows(node: dict, defs: dict, path: str, rows: list[list[str]]) -> None:
    if "$ref" in node:
        node = {**defs[node["$ref"].rsplit("/", 1)[1]], **{k: v for k, v in node.items()
                                                         if k != "$ref"}}  # fmt: skip
    if path:
        kind = node.get("type", "")
        if "enum" in node:
            kind = " \\| ".join(f"`{v}`" for v in node["enum"])
        default = f"`{json.dumps(node['default'])}`" if "default" in node else ""
        text = " ".join(str(node.get("description", "")).split()).replace("|", "\\|")
        rows.append([f"`{path}`", str(kind), default, text])
    for key, child in (node.get("properties") or {}).items():
        _schema_rows(child, defs, f"{path}.{key}" if path else key, rows)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        _schema_rows(extra, defs, f"{path}.<name>", rows)


def config_page() -> str:
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text("utf-8"))
    rows: list[list[str]] = []
    _schema_rows(schema, schema.get("$defs", {}), "", rows)
    out = ["# Configuration", "",
           " ".join(schema["description"].split()), "",
           "Every key of `workflow/schemas/config.schema.yaml`, which the workflow validates the "
           "config against before any job runs (`<name>`: a name you choose). "
           "`config/README.md` explains them in prose.", "",
           "| key | type | default | description |", "|---|---|---|---|"]  # fmt: skip
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out) + "\n"


#: The census published with the site: ``make census`` writes it (``--publish docs/census``),
#: the commit keeps it, the build reads it (never running the census).
CENSUS = DOCS / "census" / "evaluators.csv"
#: Beside it: the run's date, duration, adapters and environments (``census.json``).
CENSUS_RUN = CENSUS.with_name("census.json")
#: What the pipeline writes (``make demo``, ``make paper``): the same probe, for the libraries of
#: this checkout's environment.
PIPELINE_TABLE = ROOT / "results" / "paper" / "evaluators.md"

def _census_run() -> str:
    """One sentence on the published run, from ``census.json``."""
    if not CENSUS_RUN.is_file():
        return "The run's date and duration were not recorded (no `census.json` beside it)."
    run = json.loads(CENSUS_RUN.read_text(encoding="utf-8"))
    which = ("every registered adapter" if run["adapters"] == "all" else
             f"a partial run of {len(run['adapters'])} adapters ("
             + ", ".join(f"`{a}`" for a in run["adapters"])
             + "; the next full `make census` replaces it)")  # fmt: skip
    where = ("each library in an environment of its own" if run["environments"] ==
             "own environments" else "in the interpreter of the checkout (`--here`)")  # fmt: skip
    return (f"This census was run on **{run['date']}** in {run['seconds'] / 60:.1f} min: "
            f"{which}, {where}; {run['lines']} lines.")


def _example(rows: list[list[str]]) -> str:
    """A citation of the census's first line that cites its source, as the page advises."""
    lines = [dict(zip(rows[0], row, strict=False)) for row in rows[1:]]
    line = next((x for x in lines if x.get("source") and not x["source"].startswith("error")),
                None)  # fmt: skip
    if line is None:
        return ""
    date = ""
    if CENSUS_RUN.is_file():
        date = f" of {json.loads(CENSUS_RUN.read_text(encoding='utf-8'))['date'][:10]}"
    return (f": for example *{line['library']} {line['version']}, `{line['function']}`, "
            f"{line['measure']}: `{line['behaviour']}` (tieaudit census{date}; "
            f"`{line['source']}`)*")


def census_page() -> str:
    """The published census (``docs/census/evaluators.csv``, with the run's ``census.json``):
    what its columns mean, how to reproduce and cite a line, and a table with one line per
    library and measure; in a checkout without it, where it comes from and the pipeline's
    evaluator table (``results/paper/evaluators.md``) when a run wrote one: the build never
    runs either."""
    import csv

    out = ["# Evaluator census", "",
           "Which tie rule each evaluation library uses, measured by `tieaudit probe` on every "
           "registered adapter, each library installed at a pinned version in an environment of "
           "its own, and the functions of the library's source that decide the order, so that "
           "every verdict can be checked against the code.", ""]  # fmt: skip
    if not CENSUS.is_file():
        out += ["This checkout has no published census: run `make census` (every library in "
                "an environment of its own, about 15 minutes), then `make docs`. The pipeline "
                "probes the libraries of this checkout's environment the same way and writes "
                "the table to `results/paper/evaluators.md` (`make demo`: the numpy and pandas "
                "idioms and the `probe` extra's libraries)."]  # fmt: skip
        if PIPELINE_TABLE.is_file():
            out += ["", "The table of this checkout's last pipeline run:", "",
                    PIPELINE_TABLE.read_text(encoding="utf-8").strip()]  # fmt: skip
        else:
            out += ["", "This checkout has none yet either."]
        return "\n".join([*out, ""])
    with CENSUS.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    out += [_census_run(), "", "## The columns", ""]
    from tieaudit.probe.census import CENSUS_COLUMN_TEXT

    out += [f"- `{c}`: {CENSUS_COLUMN_TEXT.get(c, '')}" for c in rows[0]]
    out += ["", "## Reproduce", "",
            "`make census` installs every adapter's library at its pin in an environment of "
            "its own under `.census/`, probes it there and writes `results/census/"
            "evaluators.{csv,md}` and this page's data, `docs/census/evaluators.csv` and "
            "`docs/census/census.json` (the date and duration of the run); `make docs` makes "
            "this page from them. `python -m tieaudit.probe.census --adapter NAME` probes one "
            "adapter (`--here`: in the current interpreter); the [probe guide]"
            "(../../guide/probe.md) says more.", "",
            "## Cite a line", "",
            "Give the library, its version, the function and measure, the behaviour and the "
            f"census's date, and the `source` cell{_example(rows)}. To check it, install that "
            "version (`pip download LIBRARY==VERSION --no-deps` and unpack the wheel) and read "
            "the file at that line.", "",
            "## The census", ""]  # fmt: skip

    def line(row: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in row) + " |"

    out += [line(rows[0]), "|" + "---|" * len(rows[0]), *(line(row) for row in rows[1:])]
    return "\n".join(out) + "\n"


PAGES = {"api.md": api_page, "cli.md": cli_page, "config.md": config_page,
         "census.md": census_page}  # fmt: skip


def write_pages(app: Any = None) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for stale in set(OUT.glob("*.md")) - {OUT / name for name in PAGES}:
        stale.unlink()  # else an orphan page, and a warning that fails the build
    for name, make in PAGES.items():
        text = make()
        path = OUT / name
        if not path.is_file() or path.read_text("utf-8") != text:  # unchanged: no rebuild
            path.write_text(text, encoding="utf-8")


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", write_pages)
    return {"parallel_read_safe": True}
