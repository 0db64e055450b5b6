"""The Snakemake pipeline's own modules, beside :mod:`tieaudit.data`, :mod:`tieaudit.sources`
and :mod:`tieaudit.scorers`; none imports the evaluator.

- :mod:`~tieaudit.pipeline.split`: the held-out split;
- :mod:`~tieaudit.pipeline.sampling`: sampled negatives and where the held-out item is stored;
- :mod:`~tieaudit.pipeline.partition`: a dataset's rows in parts (``evaluation.row_chunks``);
- :mod:`~tieaudit.pipeline.workflow`: what every step does first (its log);
- :mod:`~tieaudit.pipeline.quiet`: ``make demo``'s quiet runner;
- :mod:`~tieaudit.pipeline.dependencies`: the library files a step runs, read from its imports.
"""
