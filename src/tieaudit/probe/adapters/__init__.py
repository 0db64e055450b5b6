"""Built-in adapters: library evaluators wrapped into the probe's contract.

An adapter is one :class:`Adapter` object in one module of this package (one module per library
or family of idioms), registered once with :func:`register`. It names its library, the module it
imports (:meth:`Adapter.available` looks for it without importing it) and the distribution its
version is read from, the pip extra that installs it, and a ``build`` function that imports the
library (only when called) and returns the evaluator for a measure: ``fn(candidates, k)`` giving
each row's value in order of first appearance (:mod:`tieaudit.probe.infer`). Everything that
lists adapters (the CLI, the evaluator table, the tests) reads :func:`adapters`.

Adding one: write a module with a ``build(measure)`` and ``register(Adapter(...))`` (from
:mod:`.base`), add it to
the import line below, and its tests run :func:`tieaudit.probe.probe` on it.
"""

from __future__ import annotations

from .base import Adapter, AdapterError, adapter_names, adapters, get_adapter, register

__all__ = ["Adapter", "AdapterError", "register", "get_adapter", "adapters", "adapter_names"]

# The built-in adapters, one module per library or family of idioms; importing registers them
# (none imports its library before it is asked for an evaluator).
from . import numpy_idioms, scikit_learn, ranx_eval, trec_eval, ir_measures_eval  # noqa: E402, F401
from . import rankereval_eval, trectools_eval, implicit_eval, rectools_eval  # noqa: E402, F401
from . import replay_eval, ogb_eval, keras_eval, lightfm_eval, beir_eval  # noqa: E402, F401
from . import recsys_metrics_eval, torcheval_eval, sentence_transformers_eval  # noqa: E402, F401
from . import torchmetrics_eval, recbole_eval, ignite_eval, pykeen_eval, mteb_eval  # noqa: E402, F401
from . import scipy_eval, cornac_eval  # noqa: E402, F401
from . import recpack_eval, lenskit_eval, recometrics_eval, recommenders_eval  # noqa: E402, F401
from . import libreco_eval  # noqa: E402, F401
from . import keras_rs_eval, tfranking_eval, tfrs_eval, gbdt_eval  # noqa: E402, F401
