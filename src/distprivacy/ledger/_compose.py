"""Composing the releases recorded in a ledger (see :mod:`distprivacy.ledger`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from distprivacy.guarantee import Guarantee
from distprivacy.ledger._budget import release_delta
from distprivacy.ledger._entry import Composer, LedgerEntry, dumps

if TYPE_CHECKING:
    import numpy as np


def _is_gaussian(e: LedgerEntry) -> bool:
    return (
        e.noise_family in ("gaussian", "none")
        and e.noise_covariance is not None
        and e.plan is not None
        and isinstance(e.plan.get("model"), Mapping)
    )


def _restricted(model: Any, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    ix = [list(model.statistic_names_).index(n) for n in names]
    return model.means_[:, ix], model.covariances_[:, ix][:, :, ix]


def _union_model(entries: Sequence[LedgerEntry], fit: Callable[[str], Any] | None) -> Any:
    """One model of every recorded statistic: a plan's model that covers them all and agrees
    with every other plan's model, or ``fit(union query text)``."""
    import numpy as np

    from distprivacy.composition import CompositionError
    from distprivacy.mechanisms.plans import model_from_dict

    specs = {dumps(e.plan.get("spec")) for e in entries}  # type: ignore[union-attr]
    if len(specs) > 1:
        raise CompositionError(
            "the releases recorded for this dataset were calibrated for different "
            "specifications (n, values or pairs); their joint guarantee is not computed"
        )
    models = [model_from_dict(e.plan["model"]) for e in entries]  # type: ignore[index]
    union = list(dict.fromkeys(n for m in models for n in m.statistic_names_))
    for cand in sorted(models, key=lambda m: -m.dim):
        if not set(union) <= set(cand.statistic_names_):
            break
        agree = True
        for m in models:
            same = [str(t) for t in m.thetas_] == [str(t) for t in cand.thetas_] and (
                m.pair_indices_ == cand.pair_indices_
            )
            if same:
                mu, cov = _restricted(cand, m.statistic_names_)
                same = np.allclose(mu, m.means_, rtol=1e-12, atol=0) and np.allclose(
                    cov, m.covariances_, rtol=1e-12, atol=1e-300
                )
            agree = agree and same
        if agree:
            return cand
    for reference in models:  # one statistic in two releases' models at different scales
        _check_units(entries, models, reference)
    queries = [e.plan.get("query") for e in entries]  # type: ignore[union-attr]
    if any(not q for q in queries):
        raise CompositionError(
            "the releases recorded for this dataset use different statistics ("
            + "; ".join(sorted({", ".join(m.statistic_names_) for m in models}))
            + "), and one was made from a user's model (no statistics to refit): their joint "
            "model cannot be computed"
        )
    if fit is None:
        raise CompositionError(
            "the releases recorded for this dataset use different statistics ("
            + "; ".join(sorted({", ".join(m.statistic_names_) for m in models}))
            + "); their joint model is refitted on the data the plans were calibrated on: "
            "give it (`data=DATA`)"
        )
    verify = getattr(fit, "verify_entries", None)
    if callable(verify):  # the refit's data is every composed plan's (PlanRefit)
        verify(entries)
    parts = [p.strip() for q in queries for p in str(q).split(",") if p.strip()]
    refit = fit(",".join(dict.fromkeys(parts)))
    _check_units(entries, models, refit)
    return refit


#: How far a statistic's variance in one release's model may be from another model's before
#: the release is taken to be in other units (Monte-Carlo estimates of one variance agree far
#: closer than 4×; a change of units moves it by its square: ×144 for years → months).
UNIT_RATIO = 4.0


def _check_units(entries: Sequence[LedgerEntry], models: Sequence[Any], joint: Any) -> None:
    """Refuse to compose on ``joint`` (the refitted model, or one release's) when some
    release's statistic has another scale in that release's own model: the release was made
    on the statistic in other units (the same records with a column rescaled, which the ledger
    links to one dataset), and its noise, read in the joint model's units, would be mis-sized
    and misstate what it revealed. A shift needs no check: it moves every θ's mean alike."""
    import numpy as np

    from distprivacy.composition import CompositionError

    in_joint = set(joint.statistic_names_)
    for e, m in zip(entries, models, strict=True):
        names = [n for n in m.statistic_names_ if n in in_joint]
        if not names:
            continue
        own = np.diagonal(_restricted(m, names)[1], axis1=1, axis2=2)
        other = np.diagonal(_restricted(joint, names)[1], axis1=1, axis2=2)
        both = (own > 0) & (other > 0)
        ratio = np.where(both, own / np.where(both, other, 1.0), 1.0)
        bad = (ratio > UNIT_RATIO) | (ratio < 1 / UNIT_RATIO)
        if bad.any():
            t, k = (int(i) for i in np.argwhere(bad)[0])
            raise CompositionError(
                f"release {e.id or 'new'} was made on {names[k]} in other units than the "
                f"releases it is composed with (its variance ×{float(ratio[t, k]):.3g} theirs); "
                "the joint guarantee is not computed: release it in the earlier releases' units"
            )


def merge_repeats(
    releases: Sequence[tuple[list[int], np.ndarray | None]],
    datasets: Sequence[int] | None = None,
) -> list[tuple[list[int], np.ndarray]]:
    """k releases of the same statistics with the same noise covariance N, as one release with
    noise N/k — exactly: Y_i = F + Z_i with Z_i ~ N(0, N) i.i.d. given F; their mean
    F + Z̄ (Z̄ ~ N(0, N/k)) is sufficient for θ, because the deviations Y_i − Ȳ depend on the
    noises alone and are independent of Ȳ (Gaussian), so their law is the same under every θ.
    The joint model's dimension then stays the number of *distinct* releases, and the cost of a
    release no longer grows with how often the same plan was released before.

    With ``datasets`` (one index per release), only repeats of one dataset merge; use
    :func:`merge_repeats_by_dataset` to get their datasets back."""
    return [(idx, c) for idx, c, _ in merge_repeats_by_dataset(releases, datasets)]


def merge_repeats_by_dataset(
    releases: Sequence[tuple[list[int], np.ndarray | None]],
    datasets: Sequence[int] | None = None,
) -> list[tuple[list[int], np.ndarray, int]]:
    """:func:`merge_repeats`, keeping each merged release's dataset index."""
    import numpy as np

    ds = [0] * len(releases) if datasets is None else [int(d) for d in datasets]
    groups: dict[tuple[int, tuple[int, ...], bytes], list] = {}
    for (idx, cov), d in zip(releases, ds, strict=True):
        c = np.zeros((len(idx), len(idx))) if cov is None else np.asarray(cov, dtype=float)
        key = (d, tuple(int(i) for i in idx), np.ascontiguousarray(c).tobytes())
        if key in groups:
            groups[key][3] += 1
        else:
            groups[key] = [list(idx), c, d, 1]
    return [(idx, c / k, d) for idx, c, d, k in groups.values()]


def plan_composer(
    *,
    at_delta: float | None = None,
    fit: Callable[[str], Any] | None = None,
    convention: str = "average",
    shared: Callable[[str, str], float] | None = None,
) -> Composer:
    """The ``compose`` of :meth:`Ledger.record` for releases made from plans.

    * When every guarantee holds for every pair of datasets (group DP):
      :func:`distprivacy.composition.compose_guarantees` of the guarantees as the releases
      state them (one release: its own), even when the noise is Gaussian with fitted moments.
    * Else, every release Gaussian (or noiseless) with the plan's fitted moments: the exact joint
      accounting of :func:`distprivacy.composition.compose_gaussian` on one model of every
      released statistic, stated at ``at_delta`` (an (ε, δ) budget's δ), or, when None, at
      the smallest δ the composed releases were calibrated for
      (:func:`distprivacy.ledger._budget.report_delta`). The model
      is a plan's own when it covers every statistic and agrees with the others' moments (the
      same plan released again, or subsets of one plan's statistics); otherwise
      ``fit(query_text)`` refits the union of the statistics on the data (refused without it).
    * Else a single release keeps its own guarantee, and several are refused
      (:class:`~distprivacy.composition.CompositionError`): no ε is ever added silently.

    With ``shared(a, b)`` — the share of records datasets a and b (entries' ``fingerprint``)
    hold in common, which a ledger of secrets measures at registration — entries of several
    datasets are composed with their statistics covarying by it
    (:meth:`~distprivacy.composition.JointGaussianModel.from_model`); without, every entry is
    taken to be of one dataset.
    """
    import numpy as np

    from distprivacy.checks import check_delta

    fixed = None if at_delta is None else check_delta(at_delta)

    def compose(entries: list[LedgerEntry]) -> Guarantee:
        from distprivacy.composition import (
            CompositionError,
            compose_gaussian,
            compose_guarantees,
        )

        if not entries:
            raise CompositionError("nothing to compose")
        d = fixed if fixed is not None else release_delta(entries)
        if all(e.guarantee.holds_for_every_input for e in entries):
            # As the releases state them (a theorem for every input: group DP). The joint
            # model's figure for the same noise is smaller but rests on the model; a release
            # and its ledger state one guarantee (issue 33), and this one is never below it.
            return compose_guarantees([e.guarantee for e in entries])
        if all(_is_gaussian(e) for e in entries):
            model = _union_model(entries, fit)
            names = list(model.statistic_names_)
            releases = []
            for e in entries:
                own = e.plan["model"]["statistics"]  # type: ignore[index]
                picked = (
                    [own[i] for i in e.statistic_indices]
                    if e.statistic_indices is not None
                    else list(e.statistics)
                )
                missing = [n for n in picked if n not in names]
                if missing:
                    raise CompositionError(
                        f"release {e.id or 'new'}: statistics {', '.join(missing)} are not in "
                        "the joint model"
                    )
                releases.append(([names.index(n) for n in picked], e.noise_covariance))
            keys = list(dict.fromkeys(e.fingerprint for e in entries))
            if len(keys) == 1 or shared is None:  # one dataset (a schema-2 ledger's linked
                # datasets are the same records: composed as one)
                return compose_gaussian(
                    model, merge_repeats(releases), delta=d, convention=convention
                )
            overlap = np.array([[1.0 if a == b else shared(a, b) for b in keys] for a in keys])
            index = [keys.index(e.fingerprint) for e in entries]
            merged = merge_repeats_by_dataset(releases, index)
            return compose_gaussian(
                model,
                [(idx, c) for idx, c, _ in merged],
                delta=d,
                convention=convention,
                datasets=[ds for _, _, ds in merged],
                overlap=overlap,
            )
        if len(entries) == 1:
            return entries[0].guarantee
        bad = next(
            e for e in entries if not _is_gaussian(e) and not e.guarantee.holds_for_every_input
        )
        raise CompositionError(
            f"cannot compose a {bad.mechanism} release ({bad.noise_family or 'unknown'} noise) "
            "with other releases of the same dataset: its guarantee rests on the model of f_θ "
            "and no exact joint computation exists for it; the release is refused rather than "
            "adding ε's"
        )

    return compose
