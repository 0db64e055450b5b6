"""Step: the paper's tables (CSV, Markdown, LaTeX), compare.md and the combined checklist."""

from tieaudit.common.io import atomic_write_text, frame_to_markdown, write_table
from tieaudit.outputs.report import (
    collect,
    combined_checklist,
    compare_markdown,
    dataset_table,
    frame_to_latex,
    load_reference,
    ties_invariance_table,
)
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
inp = snakemake.input  # noqa: F821
# each file's (dataset, setting, scorer) comes from the rule, in the order of its inputs
metrics = collect(inp.metrics, p.results)
diagnostics = collect(inp.diagnostics, p.results)
invariance = collect(inp.invariance, p.results)


def write_all(frame, stem, caption):
    write_table(frame, f"results/paper/{stem}.csv")
    atomic_write_text(f"results/paper/{stem}.md", frame_to_markdown(frame))
    atomic_write_text(f"results/paper/{stem}.tex", frame_to_latex(frame, caption, f"tab:{stem}"))


for d in p.datasets:
    table = dataset_table(metrics, d, p.scorers, p.rules, p.headline)
    write_all(table, f"table_{d}", f"{d}: headline measures by scorer and tie rule")
ties = ties_invariance_table(diagnostics, invariance, p.datasets, p.scorers, p.rules, p.headline)
write_all(ties, "ties_invariance", "Ties at the relevant item and row-order invariance by rule")
text = compare_markdown(
    metrics,
    load_reference(inp.reference),
    datasets=p.datasets,
    scorers=p.scorers,
    headline=p.headline,
    dataset_map=p.reference_dataset,
    generated=p.generated,
)
atomic_write_text(snakemake.output.compare, text)  # noqa: F821
atomic_write_text(snakemake.output.checklist, combined_checklist(inp.checklists, p.results))  # noqa: F821
log.info("wrote %d tables", len(p.datasets) + 1)
