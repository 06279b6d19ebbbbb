"""seqeval, the reference scorer of the named-entity metrics (tests/test_ner_metrics.py, bench/ner_quality.py).

seqeval is installed without scikit-learn (requirements-dev-nodeps.txt): Keras
imports scikit-learn whenever it is installed, and seqeval's conlleval scorer
takes one warning class from it. A stand-in is there while seqeval imports,
and gone after (Keras, imported later, must not find a scikit-learn).
"""

import sys
import types


def import_seqeval():
    """(seqeval.metrics, seqeval.metrics.sequence_labeling.get_entities)."""
    try:
        import sklearn.exceptions  # noqa: F401  pylint: disable=g-import-not-at-top
        stubs = {}
    except ImportError:
        exceptions = types.ModuleType("sklearn.exceptions")
        exceptions.UndefinedMetricWarning = type("UndefinedMetricWarning", (UserWarning,), {})
        stubs = {"sklearn": types.ModuleType("sklearn"), "sklearn.exceptions": exceptions}
    sys.modules.update(stubs)
    try:
        from seqeval import metrics  # pylint: disable=g-import-not-at-top
        from seqeval.metrics import sequence_labeling  # pylint: disable=g-import-not-at-top
    finally:
        for name in stubs:
            del sys.modules[name]
    return metrics, sequence_labeling.get_entities
