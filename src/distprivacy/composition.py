"""Composition: the guarantee of several releases of the same dataset, taken together.

Two releases about one dataset D are correlated through D, so distribution privacy does not
compose for free (docs/ledger.md). Two ways are offered:

* :func:`compose_gaussian` — exact joint accounting of Gaussian releases. Release r publishes
  F_r(D) + Z_r with Z_r ~ N(0, N_r) independent, F_r a sub-vector (an index list) of one joint
  statistic vector F whose law under θ is N(m_θ, S_θ), the fitted model of the *union* of the
  released statistics on the same data (a statistic released twice appears twice). The stacked
  release is Gaussian with mean (m_θ[I_1], …, m_θ[I_R]) and covariance blocks
  S_θ[I_r, I_s] + [r = s] N_r (:class:`JointGaussianModel`); its μ, its exact privacy profile
  with the fitted unequal covariances and its attack bound are computed by the machinery of a
  single Gaussian calibration (:func:`distprivacy.mechanisms.gaussian.fitted_profile`,
  :func:`~distprivacy.mechanisms.gaussian.mahalanobis_all`), so one release composed alone
  gives exactly the single calibration's μ, δ(ε) and attack bound.
* :func:`compose_guarantees` — for guarantees that hold for every pair of datasets (group DP,
  local DP): basic composition (ε and δ add), or μ-GDP composition (μ = √Σ μᵢ²) when every
  guarantee is μ-GDP. Anything else is refused (:class:`CompositionError`): a distribution-
  privacy guarantee that rests on the model of f_θ says nothing about a second release.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from distprivacy._json import jsonable
from distprivacy.exceptions import DistPrivacyError
from distprivacy.guarantee import Guarantee
from distprivacy.mechanisms.gaussian import fitted_profile, mahalanobis_all, pair_covariances
from distprivacy.models import FModel
from distprivacy.profiles import gdp_accuracy, gdp_delta, gdp_epsilon

#: What a joint guarantee rests on.
BASIS_JOINT = (
    "exact profile of the joint fitted Gaussian model of every release (unequal covariances "
    "included)"
)
#: The theorem of a joint Gaussian guarantee.
THEOREM_JOINT = (
    "joint exact accounting of repeated Gaussian releases: the stacked release is Gaussian under "
    "each θ (fitted means, joint covariance, independent noises); μ from each pair's Mahalanobis "
    "distance, δ(ε) from the exact privacy profile (Dong, Roth & Su 2022; docs/ledger.md)"
)
#: The theorem of μ-GDP composition of guarantees that hold for every pair of datasets.
THEOREM_GDP_COMPOSITION = (
    "μ-GDP composition (Dong, Roth & Su 2022, Cor. 3.3) of guarantees that hold for every pair "
    "of datasets, then the distribution-privacy coupling argument (docs/ledger.md)"
)
#: The theorem of basic composition of guarantees that hold for every pair of datasets.
THEOREM_BASIC_COMPOSITION = (
    "basic composition (Dwork & Roth 2014, Thm 3.16) of guarantees that hold for every pair of "
    "datasets, then the distribution-privacy coupling argument (docs/ledger.md)"
)
#: What a composed every-dataset guarantee rests on.
BASIS_EVERY_DATASET = "every dataset (composition of guarantees that hold for every dataset pair)"

_ASSUMPTIONS_JOINT = (
    "under each θ the statistics of every release are jointly Gaussian with the fitted means "
    "and joint covariance (one model of the union of the released statistics)",
    "every release is of the same dataset of n records drawn from θ",
    "the releases' noises are independent of each other and of the data",
)

_ASSUMPTIONS_DATASETS = (
    "under each θ the statistics of every release are jointly Gaussian with the fitted means "
    "and covariance; two datasets' statistics covary by their share of shared records times "
    "the fitted covariance (sums and means of the records)",
    "every dataset holds n records drawn from the same θ; the records two datasets do not "
    "share are independent draws, and the shares of shared records are those measured from "
    "the registered files",
    "the releases' noises are independent of each other and of the data",
)

#: Conventions for the pairs' covariances in μ (as single calibrations: ``average`` for the
#: exact rule, ``own`` for the classic rule).
CONVENTIONS = ("average", "own")


class CompositionError(DistPrivacyError):
    """Releases whose guarantees cannot be composed (naming why)."""


def _overlap_matrix(
    datasets: Sequence[int] | None, overlap: Any, sizes: Sequence[int]
) -> np.ndarray | None:
    """R, the K×K share of records behind each pair of stacked coordinates (None: one dataset),
    after checking ``datasets`` and ``overlap`` (:meth:`JointGaussianModel.from_model`)."""
    if datasets is None and overlap is None:
        return None
    if datasets is None or overlap is None:
        raise DistPrivacyError("give both datasets (one per release) and their overlap matrix")
    try:
        share = np.asarray(overlap, dtype=float)
    except (TypeError, ValueError):
        raise DistPrivacyError("the overlap of the datasets is not a matrix of numbers") from None
    D = share.shape[0] if share.ndim == 2 else -1
    if share.ndim != 2 or share.shape != (D, D) or D < 1:
        raise DistPrivacyError(f"the overlap of the datasets must be square, got {share.shape}")
    if not np.isfinite(share).all() or (share < 0).any() or (share > 1).any():
        raise DistPrivacyError("the overlap of the datasets must hold shares in [0, 1]")
    if not np.array_equal(share, share.T) or not (np.diagonal(share) == 1).all():
        raise DistPrivacyError(
            "the overlap of the datasets must be symmetric with 1 on its diagonal"
        )
    if np.linalg.eigvalsh(share)[0] < -1e-12:
        raise DistPrivacyError(
            "the overlap of the datasets is not positive semidefinite: no datasets of n "
            "records share records in these proportions"
        )
    ds = list(datasets)
    if len(ds) != len(sizes):
        raise DistPrivacyError(f"{len(sizes)} releases but {len(ds)} dataset indices")
    for r, d in enumerate(ds):
        if isinstance(d, bool) or not isinstance(d, int | np.integer) or not 0 <= d < D:
            raise DistPrivacyError(f"release {r + 1}: dataset index {d!r} is not in 0..{D - 1}")
    per = np.repeat(np.asarray(ds, dtype=int), sizes)
    return share[np.ix_(per, per)]


def _noise_matrix(noise: Any, k: int, r: int) -> np.ndarray:
    cov = getattr(noise, "covariance", noise)
    try:
        N = np.asarray(cov, dtype=float)
    except (TypeError, ValueError):
        raise DistPrivacyError(f"release {r + 1}: the noise covariance is not a matrix") from None
    if N.ndim == 0 and k == 1:
        N = N.reshape(1, 1)
    if N.shape != (k, k):
        raise DistPrivacyError(
            f"release {r + 1}: the noise covariance must be {k}×{k} (one row per released "
            f"statistic), got shape {N.shape}"
        )
    if not np.isfinite(N).all():
        raise DistPrivacyError(f"release {r + 1}: the noise covariance is not finite")
    tol = 1e-9 * max(1.0, float(np.abs(N).max(initial=0.0)))
    if not np.allclose(N, N.T, rtol=0, atol=tol):
        raise DistPrivacyError(f"release {r + 1}: the noise covariance is not symmetric")
    if k and np.linalg.eigvalsh((N + N.T) / 2)[0] < -tol:
        raise DistPrivacyError(
            f"release {r + 1}: the noise covariance is not positive semidefinite"
        )
    return N


class JointGaussianModel(FModel):
    """The stacked model of several releases of one dataset (module docstring).

    Build it with :meth:`from_model`. It is an :class:`~distprivacy.models.FModel` (per-θ
    ``means_`` and ``covariances_`` of the stacked statistics, without noise; the base model's
    θ and pairs), so every single-release tool applies to it; ``noise_covariance_`` is the
    block-diagonal covariance of the stacked noise.

    Attributes
    ----------
    base_ : FModel
        The model of the union of the released statistics.
    index_lists_ : tuple of tuple of int
        Each release's statistics, as indices into ``base_``'s statistics.
    noise_covariances_ : tuple of ndarray
        Each release's noise covariance N_r.
    noise_covariance_ : ndarray (K, K)
        Block-diagonal: N_1, …, N_R.
    blocks_ : tuple of slice
        Each release's coordinates in the stacked vector.
    """

    @classmethod
    def from_model(
        cls,
        model: FModel,
        index_lists: Sequence[Sequence[int]],
        noise_covariances: Sequence[Any],
        *,
        datasets: Sequence[int] | None = None,
        overlap: Any = None,
    ) -> JointGaussianModel:
        """Stack the releases ``index_lists`` (indices into ``model``'s statistics) with their
        noise covariances (arrays, or objects with a ``covariance`` attribute such as a
        :class:`~distprivacy.noise.NoiseDistribution`).

        ``datasets`` (one index per release, default all 0) and ``overlap`` (a D×D matrix,
        default the identity) stack releases of *several* datasets of n records each drawn
        from the same θ: ``overlap[a, b]`` is the share k_ab / n of records datasets a and b
        hold in common (1 on the diagonal). For statistics that are sums or means of the
        records (every statistic kind of :mod:`distprivacy.query`), F(D_a) and F(D_b) then
        covary by ``overlap[a, b]`` · S_θ: the shared records' contribution, the others drawn
        independently (exact when the records are i.i.d. under θ; docs/ledger.md). So the
        stacked covariance is S_θ[I, I] ∘ R, R[i, j] = overlap of the datasets of
        coordinates i and j — positive semidefinite whenever ``overlap`` is, as any matrix of
        shared-record shares k_ab / n is (a Gram matrix of record memberships).

        Raises
        ------
        DistPrivacyError
            No release, an index out of range, a noise covariance of the wrong shape, not
            finite, not symmetric or not positive semidefinite; a dataset index out of range;
            an overlap matrix that is not symmetric, not 1 on its diagonal, outside [0, 1] or
            not positive semidefinite.
        """
        model._check_fitted()
        lists = [tuple(x) for x in index_lists]
        noises = list(noise_covariances)
        if not lists:
            raise DistPrivacyError("nothing to compose: give at least one release")
        if len(noises) != len(lists):
            raise DistPrivacyError(
                f"{len(lists)} releases but {len(noises)} noise covariances; give one per release"
            )
        m = model.dim
        out = cls()
        idx: list[int] = []
        blocks = []
        for r, lst in enumerate(lists):
            if not lst:
                raise DistPrivacyError(f"release {r + 1} releases no statistic")
            for i in lst:
                if isinstance(i, bool) or not isinstance(i, int | np.integer) or not 0 <= i < m:
                    raise DistPrivacyError(
                        f"release {r + 1}: statistic index {i!r} is not in 0..{m - 1}"
                    )
            blocks.append(slice(len(idx), len(idx) + len(lst)))
            idx.extend(int(i) for i in lst)
        pairs = enumerate(zip(noises, lists, strict=True))
        Ns = [_noise_matrix(n, len(lst), r) for r, (n, lst) in pairs]
        K = len(idx)
        Z = np.zeros((K, K))
        for b, N in zip(blocks, Ns, strict=True):
            Z[b, b] = N
        ix = np.array(idx)
        R = _overlap_matrix(datasets, overlap, [len(lst) for lst in lists])
        out.base_ = model
        out.index_lists_ = tuple(tuple(int(i) for i in lst) for lst in lists)
        out.noise_covariances_ = tuple(Ns)
        out.noise_covariance_ = Z
        out.blocks_ = tuple(blocks)
        out.thetas_ = tuple(model.thetas_)
        out.means_ = np.ascontiguousarray(model.means_[:, ix])
        cov = model.covariances_[:, ix][:, :, ix]
        out.covariances_ = np.ascontiguousarray(cov if R is None else cov * R)
        out.datasets_ = (0,) * len(lists) if datasets is None else tuple(int(d) for d in datasets)
        out.overlap_ = None if overlap is None else np.asarray(overlap, dtype=float)
        out.pair_indices_ = tuple(model.pair_indices_)
        names = model.statistic_names_
        out.statistic_names_ = tuple(
            f"{r + 1}:{names[i]}" for r, lst in enumerate(lists) for i in lst
        )
        out.samples_ = None
        out.record_sensitivities_ = None
        out.n_ = model.n_
        out.method_ = f"joint of {len(lists)} release(s) on {model.method_ or 'a model'}"
        return out

    def theta_label(self, t: int) -> str:
        return self.base_.theta_label(t)

    @property
    def n_releases(self) -> int:
        return len(self.index_lists_)

    def release(self, r: int) -> JointGaussianModel:
        """The joint model of release ``r`` alone."""
        return JointGaussianModel.from_model(
            self.base_, [self.index_lists_[r]], [self.noise_covariances_[r]]
        )

    @property
    def n_datasets(self) -> int:
        """How many datasets the releases were made from."""
        return len(set(self.datasets_))

    def equal_covariances(self) -> bool:
        """Whether both members of every pair have exactly the same stacked covariance (then
        the exact profile is the μ-GDP curve)."""
        return all(
            np.array_equal(self.covariances_[i], self.covariances_[j])
            for i, j in self.pair_indices_
        )

    def mu(self, convention: str = "average") -> float:
        """μ of the stacked release: max over the pairs of the Mahalanobis distance of the mean
        difference under the pair's covariance (``average``: the two members' average, as the
        exact rule; ``own``: each member's, as the classic rule) plus the stacked noise. ∞ when
        a mean difference is not covered (fail closed)."""
        if convention not in CONVENTIONS:
            raise DistPrivacyError(
                f"unknown convention {convention!r}; use one of {', '.join(CONVENTIONS)}"
            )
        d = mahalanobis_all(pair_covariances(self, convention), self.noise_covariance_)
        return float(np.max(d, initial=0.0))


@dataclass(frozen=True)
class JointAccounting:
    """The joint guarantee of Gaussian releases and how it was reached.

    Attributes
    ----------
    guarantee : Guarantee
        The cumulative guarantee (at the ε or δ asked for).
    mu : float
        μ of the stacked release.
    release_mus : tuple of float
        μ of each release alone (same model, same convention).
    naive_mu : float
        √(Σ μ_r²): what μ-GDP composition of independent releases would claim (not valid here:
        the releases share F(D)).
    epsilon, delta : float
        The point of the profile: δ = max(δ_μ(ε), the exact profile's δ(ε)).
    max_attack_accuracy : float
        max(Φ(μ/2), (1 + TV)/2 of the fitted Gaussians).
    profile : dict
        :func:`~distprivacy.mechanisms.gaussian.fitted_profile` at ε (empty if it failed).
    failure : str or None
        Why the computation failed closed (δ = 1), if it did.
    """

    guarantee: Guarantee
    mu: float
    release_mus: tuple[float, ...]
    naive_mu: float
    epsilon: float
    delta: float
    max_attack_accuracy: float
    profile: dict[str, Any] = field(default_factory=dict)
    failure: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return jsonable(
            {
                "guarantee": self.guarantee.to_dict(),
                "mu": self.mu,
                "release_mus": list(self.release_mus),
                "naive_mu": self.naive_mu,
                "epsilon": self.epsilon,
                "delta": self.delta,
                "max_attack_accuracy": self.max_attack_accuracy,
                "profile": self.profile,
                "failure": self.failure,
            }
        )


_FAILURES = (DistPrivacyError, np.linalg.LinAlgError, ArithmeticError, ValueError)


def _profile(joint: JointGaussianModel, eps: float, **kw: Any) -> tuple[dict[str, Any], str | None]:
    """fitted_profile, failing closed: any failure gives δ = 1 and accuracy 1."""
    try:
        with np.errstate(all="ignore"):
            p = fitted_profile(joint, joint.noise_covariance_, eps, **kw).to_dict()
    except _FAILURES as exc:
        return {
            "delta_at_epsilon": 1.0,
            "max_attack_accuracy": 1.0,
            "violated": True,
        }, f"{type(exc).__name__}: {exc}"
    for key in ("delta_at_epsilon", "max_attack_accuracy"):
        v = p.get(key)
        if v is not None and not (math.isfinite(v) and v >= 0):
            p[key] = 1.0
            return p, f"the profile's {key} is not a number"
    return p, None


def _gdp_delta(eps: float, mu: float) -> float:
    if not math.isfinite(mu):
        return 1.0
    if math.isinf(eps):
        return 0.0
    return float(min(1.0, gdp_delta(eps, mu)))


def _epsilon_at(joint: JointGaussianModel, mu: float, delta: float) -> float:
    """Smallest ε (within 1e-6 relative, rounded up) with max(δ_μ(ε), δ_fitted(ε)) ≤ δ."""
    if not math.isfinite(mu):
        return math.inf

    def ok(eps: float) -> bool:
        if _gdp_delta(eps, mu) > delta:
            return False
        p, fail = _profile(joint, eps, delta_target=delta, accuracy=False)
        return fail is None and not p.get("violated") and p["delta_at_epsilon"] <= delta

    from distprivacy.mechanisms._calibrator import bisect, expand

    def feasible(eps: float) -> tuple[bool, None]:
        return ok(eps), None

    lo = float(gdp_epsilon(delta, mu)) if mu > 0 else 0.0
    if ok(lo):
        return lo
    start = max(2.0 * lo, 1e-3)
    found = expand(feasible, start, 1e6, factor=2.0)  # the calibrations' own bracket
    if found is None:
        return math.inf
    hi = found[0]
    lo = hi / 2 if hi > start else lo

    def done(a: float, b: float) -> bool:
        return b - a <= 1e-6 * b

    if done(lo, hi):
        return hi
    return bisect(feasible, lo, hi, feasible_high=True, done=done, max_iter=80)[1]


def _as_releases(releases: Sequence[Any]) -> tuple[list[Sequence[int]], list[Any]]:
    lists, noises = [], []
    for r, rel in enumerate(releases):
        if isinstance(rel, GaussianRelease):
            lists.append(rel.indices)
            noises.append(rel.noise_covariance)
            continue
        try:
            indices, noise = rel
        except (TypeError, ValueError):
            raise DistPrivacyError(
                f"release {r + 1} must be (indices, noise covariance) or a GaussianRelease"
            ) from None
        lists.append(indices)
        noises.append(noise)
    return lists, noises


@dataclass(frozen=True)
class GaussianRelease:
    """One Gaussian release for :func:`compose_gaussian`: which statistics of the joint model
    (indices) and the covariance of its noise."""

    indices: tuple[int, ...]
    noise_covariance: np.ndarray


def joint_accounting(
    model: FModel,
    releases: Sequence[Any],
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    convention: str = "average",
    datasets: Sequence[int] | None = None,
    overlap: Any = None,
) -> JointAccounting:
    """Exact joint accounting of Gaussian releases of one dataset (module docstring).

    Parameters
    ----------
    model : FModel
        The fitted model of the union of the released statistics (per-θ means and covariances,
        the pairs Ψ), or a :class:`JointGaussianModel` (then ``releases`` must be None).
    releases : sequence of (indices, noise covariance) or GaussianRelease, or None
        Each release: the indices of its statistics in ``model`` and its noise covariance.
    epsilon, delta : float
        Exactly one: report δ at this ε, or the smallest ε whose δ is at most this.
    convention : {"average", "own"}
        The pairs' covariances in μ, as the calibration rule (``average``: exact rule).
    datasets, overlap : optional
        Releases of several datasets drawn from the same θ: the dataset of each release and
        the datasets' shares of shared records (:meth:`JointGaussianModel.from_model`).
        Default: every release is of one dataset.

    Returns
    -------
    JointAccounting
        Failures of the exact profile fail closed (δ = 1, accuracy 1, ``failure`` set).
    """
    if isinstance(model, JointGaussianModel):
        if releases is not None or datasets is not None or overlap is not None:
            raise DistPrivacyError("give a JointGaussianModel alone, or a model and releases")
        joint = model
    else:
        joint = JointGaussianModel.from_model(
            model, *_as_releases(releases), datasets=datasets, overlap=overlap
        )
    if (epsilon is None) == (delta is None):
        raise DistPrivacyError("give exactly one of epsilon (report δ) and delta (report ε)")
    mu = joint.mu(convention)
    release_mus = tuple(joint.release(r).mu(convention) for r in range(joint.n_releases))
    naive = float(math.sqrt(sum(x * x for x in release_mus)))
    if epsilon is None:
        from distprivacy.checks import check_delta

        eps = _epsilon_at(joint, mu, check_delta(delta))
    else:
        from distprivacy.checks import check_number

        eps = float(check_number(epsilon, "epsilon", low=0))
    failure = None
    if math.isfinite(mu) and math.isfinite(eps):
        profile, failure = _profile(joint, eps)
    elif math.isfinite(mu):  # ε = ∞: nothing to bound at ε, but the attack bound still holds
        profile, failure = _profile(joint, 0.0, delta_target=None, tv_target=None)
        profile["delta_at_epsilon"] = 0.0
    else:
        profile, failure = {}, "a mean difference is not covered by the noise (μ = ∞)"
    if math.isfinite(mu):
        dlt = max(_gdp_delta(eps, mu), float(profile["delta_at_epsilon"]))
        acc = max(float(gdp_accuracy(mu)), float(profile["max_attack_accuracy"]))
    else:
        dlt, acc = 1.0, 1.0
    if failure is not None:
        dlt, acc = 1.0, 1.0
    dlt, acc = min(1.0, dlt), min(1.0, acc)
    gdp_curve = failure is None and math.isfinite(mu) and joint.equal_covariances()

    def exact_profile(e: float) -> float:
        """δ(ε′) of the whole history by the same exact profile (fail closed: 1)."""
        p, bad = _profile(joint, e, accuracy=False)
        return 1.0 if bad is not None else max(_gdp_delta(e, mu), float(p["delta_at_epsilon"]))

    g = Guarantee(
        epsilon=eps,
        delta=dlt,
        theorem=THEOREM_JOINT,
        notion="distribution privacy",
        mu=mu,
        curve="gdp" if gdp_curve else "point",
        max_attack_accuracy=acc,
        basis=BASIS_JOINT,
        verified=failure is None,
        assumptions=_ASSUMPTIONS_JOINT if joint.n_datasets == 1 else _ASSUMPTIONS_DATASETS,
        holds_for_every_input=False,
        profile=exact_profile if (not gdp_curve and failure is None) else None,
    )
    return JointAccounting(
        guarantee=g,
        mu=mu,
        release_mus=release_mus,
        naive_mu=naive,
        epsilon=eps,
        delta=dlt,
        max_attack_accuracy=acc,
        profile=dict(profile),
        failure=failure,
    )


def compose_gaussian(
    model: FModel,
    releases: Sequence[Any] | None,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    convention: str = "average",
    datasets: Sequence[int] | None = None,
    overlap: Any = None,
) -> Guarantee:
    """The joint guarantee of Gaussian releases of one dataset, or of several datasets drawn
    from the same θ with the shares of records they hold in common (:func:`joint_accounting`)."""
    return joint_accounting(
        model,
        releases,
        epsilon=epsilon,
        delta=delta,
        convention=convention,
        datasets=datasets,
        overlap=overlap,
    ).guarantee


def compose_guarantees(guarantees: Sequence[Guarantee]) -> Guarantee:
    """Compose guarantees that each hold for every pair of datasets (group DP, local DP).

    μ-GDP guarantees compose to μ = √Σ μᵢ² (stated at ε = Σ εᵢ); otherwise ε and δ add (basic
    composition). Either holds for every pair of datasets of the common neighbouring relation,
    and distribution privacy of the composed release follows by the coupling argument of
    docs/ledger.md.

    Raises
    ------
    CompositionError
        When a guarantee holds only for the protected pairs' distributions (it rests on the
        model of f_θ: two releases of one dataset are correlated through it and no bound follows
        from the two guarantees alone — use :func:`compose_gaussian` with the joint model), or
        when the guarantees are of different notions.
    """
    gs = list(guarantees)
    if not gs:
        raise CompositionError("nothing to compose: no guarantee given")
    for k, g in enumerate(gs):
        if not isinstance(g, Guarantee):
            raise CompositionError(f"item {k + 1} is a {type(g).__name__}, not a Guarantee")
        if not g.holds_for_every_input:
            raise CompositionError(
                f"cannot compose release {k + 1} ({g.theorem}): its guarantee holds for the "
                "protected pairs of distributions only, not for every pair of datasets, and two "
                "releases of one dataset are correlated through it — adding ε and δ would be "
                "unsound; compose Gaussian releases exactly with their joint model "
                "(compose_gaussian), or refuse the release"
            )
    notions = sorted({g.notion for g in gs})
    if len(notions) > 1:
        raise CompositionError(
            f"cannot compose guarantees of different notions ({', '.join(notions)})"
        )
    eps = float(sum(g.epsilon for g in gs))
    assumptions = tuple(dict.fromkeys(a for g in gs for a in g.assumptions))
    verified = all(g.verified for g in gs)
    if all(g.curve == "gdp" and g.mu is not None for g in gs):
        mu = float(math.sqrt(sum(float(g.mu) ** 2 for g in gs)))  # type: ignore[arg-type]
        return Guarantee(
            epsilon=eps,
            delta=_gdp_delta(eps, mu),
            theorem=THEOREM_GDP_COMPOSITION,
            notion=notions[0],
            mu=mu,
            curve="gdp",
            basis=BASIS_EVERY_DATASET,
            verified=verified,
            assumptions=assumptions,
            holds_for_every_input=True,
        )
    return Guarantee(
        epsilon=eps,
        delta=float(min(1.0, sum(g.delta for g in gs))),
        theorem=THEOREM_BASIC_COMPOSITION,
        notion=notions[0],
        mu=None,
        curve="point",
        basis=BASIS_EVERY_DATASET,
        verified=verified,
        assumptions=assumptions,
        holds_for_every_input=True,
    )
