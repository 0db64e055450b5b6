"""What every layer shares, and nothing of the evaluator or the pipeline.

- :mod:`~tieaudit.common.seeds`: seeds for named random streams, derived with ``hashlib``;
- :mod:`~tieaudit.common.hashing`: the stable 64-bit hash behind ``hash:SEED``;
- :mod:`~tieaudit.common.io`: atomic, deterministic output files (:mod:`~tieaudit.common.atomic`
  below it);
- :mod:`~tieaudit.common.parquet`: Parquet with page checksums and a footer digest;
- :mod:`~tieaudit.common.numbers` and :mod:`~tieaudit.common.parsing`: the number grammar and
  the grammar of measure and rule names;
- :mod:`~tieaudit.common.files`, :mod:`~tieaudit.common.arrays`, :mod:`~tieaudit.common.memory`,
  :mod:`~tieaudit.common.loading`, :mod:`~tieaudit.common.lazy`: small helpers (input files,
  array kernels, memory sizes, loading a user's module, a folder's face).
"""
