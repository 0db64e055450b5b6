"""examples/module/: a workflow in another folder imports the pipeline as a Snakemake module
(``module tieaudit: ...`` then ``use rule * from tieaudit``) with the demo config, and Snakemake
plans every rule of the pipeline there (a dry run: nothing is computed). That it computes the
demo's tables, byte for byte, is checked beside the session's demo run
(``tests/test_workflow.py``)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "module" / "Snakefile"


def pipeline_rules() -> set[str]:
    """The rules the pipeline defines (workflow/rules/*.smk and the root Snakefile)."""
    files = [ROOT / "Snakefile", *sorted((ROOT / "workflow" / "rules").glob("*.smk"))]
    return {name for f in files for name in re.findall(r"(?m)^rule (\w+):", f.read_text())}


def own_workflow(folder: Path) -> Path:
    """``folder`` (made) with the example's Snakefile, the module's path made absolute: a
    workflow of one's own in another folder."""
    text = EXAMPLE.read_text(encoding="utf-8")
    assert '"../../Snakefile"' in text and "use rule * from tieaudit" in text
    folder.mkdir()
    (folder / "Snakefile").write_text(text.replace('"../../Snakefile"', f'"{ROOT / "Snakefile"}"'))
    return folder


@pytest.mark.workflow
@pytest.mark.skipif(not (Path(sys.executable).parent / "snakemake").exists(),
                    reason="snakemake is not installed: pip install -e '.[pipeline]'")  # fmt: skip
def test_the_module_example_plans_the_whole_pipeline(tmp_path: Path) -> None:
    own = own_workflow(tmp_path / "my_study")
    res = subprocess.run(
        [str(Path(sys.executable).parent / "snakemake"), "-n", "--quiet", "rules", "--cores", "1",
         "--configfile", str(ROOT / "config" / "demo.yaml")],
        cwd=own, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    planned = set(re.findall(r"(?m)^(\w+)\s+\d+$", res.stdout + res.stderr)) - {"total"}
    assert planned == pipeline_rules(), planned ^ pipeline_rules()
    assert not (own / "results").exists()  # a dry run writes nothing


def test_the_catalogue_file_is_there() -> None:
    cat = yaml.safe_load((ROOT / ".snakemake-workflow-catalog.yml").read_text(encoding="utf-8"))
    assert cat["usage"]["software-stack-deployment"]["conda"] is True
    assert {"mandatory-flags", "report"} <= set(cat["usage"])
