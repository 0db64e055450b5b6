"""Reference pages made at every build from what they describe, never typed twice: the API page
from ``tieaudit.__all__`` (the docstrings by autodoc), the command line from its argument
parser, the configuration from ``workflow/schemas/config.schema.yaml``, the tie rules from their
registry. They are written to ``docs/reference/_generated/`` (not tracked) before Sphinx reads the
sources."""

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
    "Tie rules": ["tieaudit.rules.base.RuleKind"],
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


def api_page() -> str:
    import tieaudit

    out = ["# API reference", "",
           "The public names of `tieaudit` (its `__all__`; each is imported on first use), then "
           "the protocols an extension implements. Everything here is the docstrings.", ""]  # fmt: skip
    for name in sorted(n for n in tieaudit.__all__ if not n.startswith("__")):
        obj = getattr(tieaudit, name)
        module = getattr(obj, "__module__", None) if inspect.isclass(obj) or callable(obj) else None
        target = f"{module}.{name}" if module else f"tieaudit.{tieaudit._SOURCE[name]}.{name}"
        out += [f"## `tieaudit.{name}`", "", _directive(target, obj)]
    out += ["## Extension protocols", ""]
    for heading, names in PROTOCOLS.items():
        out += [f"### {heading}", ""]
        out += [_directive(n, type) for n in names]  # each a class
    return "\n".join(out)


def cli_page() -> str:
    from tieaudit.cli import _parser

    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: a fixed width, the same page
    parser = _parser()
    out = ["# Command line", "",
           "`tieaudit --help` and each command's `--help`, as the argument parser prints them.",
           "", "```text", parser.format_help().rstrip(), "```", ""]  # fmt: skip
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, command in sub.choices.items():
        out += [f"## `tieaudit {name}`", "", "```text", command.format_help().rstrip(), "```", ""]
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


def rules_page() -> str:
    from tieaudit.probe.behaviours import markdown_table as behaviours_table
    from tieaudit.rules import markdown_table

    return "\n".join([
        "# Tie rules", "",
        "Every registered tie rule (`tieaudit.rules.markdown_table()`; the formulas of "
        "`expected` are on [Formulas](../formulas.md)).", "", markdown_table(),
        "## Behaviours the probe names that are no tie rule", "",
        "`tieaudit probe` also names these (`tieaudit.probe.behaviours.markdown_table()`): they "
        "depend on an evaluator's internals, so they cannot be evaluated on a table.", "",
        behaviours_table(),
    ])  # fmt: skip


PAGES = {"api.md": api_page, "cli.md": cli_page, "config.md": config_page,
         "tie-rules.md": rules_page}  # fmt: skip


def write_pages(app: Any = None) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, make in PAGES.items():
        text = make()
        path = OUT / name
        if not path.is_file() or path.read_text("utf-8") != text:  # unchanged: no rebuild
            path.write_text(text, encoding="utf-8")


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", write_pages)
    return {"parallel_read_safe": True}
