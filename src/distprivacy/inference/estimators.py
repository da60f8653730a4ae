"""The estimators of ``models audit`` and ``models defend``, from their names (issue 31).

An estimator is named by ``--estimator``:

* ``logistic``, ``mlp``, ``tree`` — scikit-learn's ``LogisticRegression(max_iter=1000)``,
  ``MLPClassifier`` (32-16 hidden units, 100 epochs of Adam) and
  ``DecisionTreeClassifier(max_depth=5)``;
* ``sklearn:MODULE:CLASS`` — a *class* of a scikit-learn classifier: ``MODULE`` a dotted module
  path and ``CLASS`` a name, both Python identifiers. The module is imported (running its code,
  as any import does), then the object is checked *before anything is called*: it must be a class
  with ``fit``, ``predict_proba`` and scikit-learn's ``get_params``/``set_params`` (what
  :class:`sklearn.base.BaseEstimator` gives; the shadow models are ``clone``\\ s of it). A
  function, a module or any other object is refused, so ``sklearn:os:system`` never runs
  ``os.system``. The class is then made with no arguments;
* ``torch:FILE.py:FACTORY`` — a :class:`~distprivacy.inference.torch_estimator.TorchEstimator`
  around ``FACTORY(n_features, n_classes)`` of the Python file ``FILE.py`` (imported when named,
  so a missing file or function is refused before any data is read); what the factory returns
  is checked to be a ``torch.nn.Module`` after each call.

Everything the user's code raises — a constructor, ``fit``, ``predict_proba``, a factory, a
network's forward pass — becomes one :class:`EstimatorError` line naming the estimator:
``the estimator torch:net.py:make raised ValueError: … (in training)`` (:func:`user_code`).
The library's own refusals (:class:`~distprivacy.exceptions.DistPrivacyError`) pass unchanged.
"""

from __future__ import annotations

import inspect
from typing import Any

from distprivacy.exceptions import DistPrivacyError, require_extra
from distprivacy.inference._user_code import (
    EstimatorError,
    estimator_label,
    one_line,
    user_code,
)

__all__ = [
    "BUILTIN_ESTIMATORS",
    "ESTIMATOR_HELP",
    "EstimatorError",
    "estimator_label",
    "make_estimator",
    "parse_estimator_spec",
    "user_code",
]

#: The estimators named by one word.
BUILTIN_ESTIMATORS = ("logistic", "mlp", "tree")
#: What ``--estimator`` takes, in words (every refusal of a spec ends with it).
ESTIMATOR_HELP = "logistic, mlp, tree, sklearn:MODULE:CLASS or torch:FILE.py:FACTORY"
#: Methods a ``sklearn:MODULE:CLASS`` class must have (fit/predict_proba: the game's models;
#: get_params/set_params: scikit-learn's ``clone`` makes every shadow model from it).
_SKLEARN_METHODS = ("fit", "predict_proba", "get_params", "set_params")


def parse_estimator_spec(spec: str) -> tuple[str, ...]:
    """Split a spec without importing anything: ``("logistic",)``, ``("sklearn", MODULE,
    CLASS)`` or ``("torch", FILE, FACTORY)``; a malformed one is refused in one line."""
    if not isinstance(spec, str):
        raise DistPrivacyError(
            f"the estimator must be a name ({ESTIMATOR_HELP}), got {type(spec).__name__}"
        )
    text = spec.strip()
    if text in BUILTIN_ESTIMATORS:
        return (text,)
    kind, sep, rest = text.partition(":")
    if sep and kind == "sklearn":
        module, sep2, name = rest.partition(":")
        parts = module.split(".")
        if not sep2 or not all(p.isidentifier() for p in parts) or not name.isidentifier():
            raise DistPrivacyError(
                f"bad estimator {spec!r}: write sklearn:MODULE:CLASS with a module path and a "
                "class name (Python identifiers), e.g. "
                "sklearn:sklearn.ensemble:RandomForestClassifier"
            )
        return ("sklearn", module, name)
    if sep and kind == "torch":
        from distprivacy.inference.torch_estimator import parse_factory_spec

        path, name = parse_factory_spec(text)
        return ("torch", str(path), name)
    raise DistPrivacyError(f"unknown estimator {spec!r}; give {ESTIMATOR_HELP}")


def _sklearn_class(spec: str, module: str, name: str) -> type:
    """The class ``name`` of ``module``, checked before it is called."""
    import importlib

    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise DistPrivacyError(
            f"estimator {spec}: cannot import module {module!r} ({one_line(exc)}); give an "
            "installed module"
        ) from None
    except Exception as exc:  # the module's own code failed on import
        raise EstimatorError(
            f"the estimator {spec}: importing {module} raised {one_line(exc)}; fix the module"
        ) from exc
    try:
        obj = getattr(mod, name)
    except AttributeError:
        raise DistPrivacyError(f"estimator {spec}: module {module} has no {name!r}") from None
    except Exception as exc:  # a module-level __getattr__ of the user's
        raise EstimatorError(
            f"the estimator {spec}: reading {name} from {module} raised {one_line(exc)}"
        ) from exc
    if not inspect.isclass(obj):
        raise DistPrivacyError(
            f"estimator {spec}: {module}.{name} is a {type(obj).__name__}, not a class; give a "
            "scikit-learn classifier class (sklearn:MODULE:CLASS, e.g. "
            "sklearn:sklearn.ensemble:RandomForestClassifier)"
        )
    missing = [m for m in _SKLEARN_METHODS if not callable(getattr(obj, m, None))]
    if missing:
        raise DistPrivacyError(
            f"estimator {spec}: class {module}.{name} has no {'/'.join(missing)}; give a "
            "probabilistic classifier (a sklearn.base.BaseEstimator with fit and predict_proba)"
        )
    return obj


def make_estimator(spec: str) -> Any:
    """An unfitted classifier from ``spec`` (see the module docstring).

    Raises
    ------
    DistPrivacyError
        A malformed or unknown spec, a module that cannot be imported, an object that is not
        a classifier class, a missing PyTorch file or factory, a missing optional extra.
    EstimatorError
        The user's constructor (or module, or file) raised.
    """
    kind, *parts = parse_estimator_spec(spec)
    if kind == "logistic":
        require_extra("sklearn", "the logistic estimator")
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(max_iter=1000)
    if kind == "mlp":
        require_extra("sklearn", "the mlp estimator")
        from sklearn.neural_network import MLPClassifier

        return MLPClassifier(hidden_layer_sizes=(32, 16), max_iter=100)
    if kind == "tree":
        require_extra("sklearn", "the tree estimator")
        from sklearn.tree import DecisionTreeClassifier

        return DecisionTreeClassifier(max_depth=5)
    if kind == "torch":
        from distprivacy.inference.torch_estimator import (
            TorchEstimator,
            load_torch_factory,
            require_torch,
        )

        require_torch()
        require_extra("sklearn", "torch estimators")  # TorchEstimator is a scikit-learn one
        load_torch_factory(spec.strip())  # the file and its function exist (one line if not)
        return TorchEstimator(spec.strip())
    require_extra("sklearn", "sklearn:MODULE:CLASS estimators")
    module, name = parts
    label = f"sklearn:{module}:{name}"
    cls = _sklearn_class(label, module, name)
    with user_code(label, "its constructor"):
        est = cls()
    if not hasattr(est, "predict_proba"):  # e.g. SVC(probability=False): the method is hidden
        raise DistPrivacyError(
            f"estimator {label}: {name}() has no predict_proba with its default parameters; "
            "give a probabilistic classifier"
        )
    return est
