"""ir_measures: ``ir_measures.iter_calc([nDCG@k] | [Success@k], qrels, run)``, with the
provider ir_measures picks (the version line names the library only), and each provider on its
own: ``ir_measures.<provider>.evaluator([measure], qrels).iter_calc(run)``.

Each provider computes the probe's measures under its own names (:data:`PROVIDERS`). The qrels
hold the relevant items only, so with one subtopic per query ndeval's intent-aware ``P_IA@k`` is P@k and ``StRecall@k`` (the share
of subtopics found in the top k) is HR@k. gdeval's ``nDCG(dcg='exp-log2')`` gains ``2^rel - 1``,
which is 1 for binary labels; gdeval.pl reads numeric query ids only, so every provider gets the
queries numbered in order of first appearance. The providers ``judged`` (``Judged@k`` divides by
the documents retrieved when fewer than k), ``runtime`` (a measure the user defines), ``compat``
and ``accuracy`` compute none of the probe's measures.
"""

from __future__ import annotations

import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, AdapterError, register
from ._common import TREC_EVAL_CAVEAT, TREC_EVAL_DECIDES, trec_dicts

_NAMES = {"nDCG": "nDCG", "HR": "Success"}

#: provider -> (library, module, distribution, {probe measure: ir_measures measure}); ``{k}``
#: is the cutoff.
PROVIDERS = {
    "pytrec_eval": ("trec_eval (pytrec_eval)", "pytrec_eval", "pytrec-eval-terrier",
                    {"nDCG": "nDCG@{k}", "HR": "Success@{k}", "P": "P@{k}", "Recall": "R@{k}"}),
    "msmarco": ("MS MARCO eval (ir_measures)", "ir_measures", "ir-measures", {"MRR": "RR@{k}"}),
    "cwl_eval": ("cwl_eval", "cwl", "cwl-eval", {"P": "P@{k}"}),
    "pyndeval": ("ndeval (pyndeval)", "pyndeval", "pyndeval",
                 {"P": "P_IA@{k}", "HR": "StRecall@{k}"}),
    "trectools": ("trectools", "trectools", "trectools", {"nDCG": "nDCG@{k}", "P": "P@{k}"}),
    "gdeval": ("gdeval.pl (ir_measures)", "ir_measures", "ir-measures",
               {"nDCG": "nDCG(dcg='exp-log2')@{k}"}),
}  # fmt: skip

#: trectools' nDCG through ir_measures: NaN for a query none of whose top k is relevant
_NAN_CAVEAT = ("trectools' nDCG (TrecEval.get_ndcg, trectools/trec_eval.py) is NaN for a query "
               "with no relevant document in its top k (only the relevant ones of the top k are "
               "kept, so the query has no DCG to divide): counted 0 here, the value every other "
               "evaluator gives it")
#: the providers whose NaN for a query means no relevant document in its top k (counted 0)
_NAN_IS_ZERO = frozenset({"trectools"})
#: provider -> what its source does beyond the probe's rows (:attr:`Adapter.caveat`)
CAVEATS = {"pytrec_eval": TREC_EVAL_CAVEAT, "trectools": _NAN_CAVEAT}
_SORTED = "ir_measures.util:RunConverter.as_sorted_namedtuple_iter"
#: provider -> the functions that decide its order (:attr:`Adapter.decides`)
DECIDES = {
    "pytrec_eval": ("ir_measures.providers.pytrec_eval_provider:PytrecEvalInvoker.iter_calc",
                    *TREC_EVAL_DECIDES),
    "msmarco": ("ir_measures.providers.msmarco_provider:MsMarcoEvaluator._iter_calc",),
    "cwl_eval": (_SORTED, "ir_measures.providers.cwl_eval:CwlEvaluator._iter_calc"),
    "pyndeval": (_SORTED, "pyndeval:RelevanceEvaluator.evaluate_iter", "_pyndeval:eval"),
    "trectools": ("ir_measures.providers.trectools_provider:TrectoolsEvaluator._iter_calc",
                  "trectools:TrecEval.get_ndcg", "trectools:TrecEval.get_precision"),
    # the sort is gdeval.pl's (ir_measures/bin/gdeval.pl), which this runs
    "gdeval": ("ir_measures.providers.gdeval_provider:GdevalEvaluator._iter_calc",),
}  # fmt: skip


def build(measure: Measure):
    import ir_measures

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        qrels, run, queries = trec_dicts(frame)
        m = ir_measures.parse_measure(f"{_NAMES[measure.name]}@{k}")
        by_query = {x.query_id: float(x.value) for x in ir_measures.iter_calc([m], qrels, run)}
        return [by_query[q] for q in queries]

    return fn


def _provider(provider: str, names: dict[str, str]):
    def build_provider(measure: Measure):
        import ir_measures

        impl = ir_measures.providers.registry[provider]
        try:
            impl._check_available()
        except RuntimeError as exc:  # gdeval without perl, a missing library
            raise AdapterError(" ".join(str(exc).split())) from None

        def fn(frame: pd.DataFrame, k: int) -> list[float]:
            qrels, run, queries = trec_dicts(frame)
            number = {q: str(i) for i, q in enumerate(queries, start=1)}
            qrels = {number[q]: v for q, v in qrels.items()}
            run = {number[q]: v for q, v in run.items()}
            m = ir_measures.parse_measure(names[measure.name].format(k=k))
            got = {x.query_id: float(x.value) for x in impl.evaluator([m], qrels).iter_calc(run)}
            if provider in _NAN_IS_ZERO:
                got = {q: 0.0 if v != v else v for q, v in got.items()}
            return [got[number[q]] for q in queries]

        return fn

    return build_provider


register(
    Adapter(
        "ir_measures", "ir_measures", "ir_measures", "ir-measures",
        "ir_measures.iter_calc([nDCG@k], qrels, run)", ("nDCG", "HR"), build, extra="probe",
        caveat=TREC_EVAL_CAVEAT,  # its first provider for these measures is pytrec_eval
        decides=("ir_measures:iter_calc", *DECIDES["pytrec_eval"]),
    )
)  # fmt: skip
for _provider_name, (_library, _module, _dist, _names) in PROVIDERS.items():
    register(
        Adapter(
            f"ir_measures-{_provider_name}", _library, _module, _dist,
            f"ir_measures.{_provider_name}.evaluator([{', '.join(_names.values())}], qrels)"
            ".iter_calc(run)",
            tuple(_names), _provider(_provider_name, _names),
            extra="probe" if _dist in ("ir-measures", "pytrec-eval-terrier") else None,
            caveat=CAVEATS.get(_provider_name, ""),
            decides=DECIDES[_provider_name],
        )
    )  # fmt: skip
