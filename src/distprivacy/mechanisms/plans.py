"""Plans: calibrate once, review, release later — without refitting.

A plan is one calibrated mechanism written to a JSON file with everything a later release needs
and everything a reviewer should see:

* the specification (protected property, n, values, pairs Ψ), the statistics (as query text) and
  the columns they read;
* the modelling choices and the fitted model's moments (per-θ means and covariances of F, the
  pairs), so that the ledger (:mod:`distprivacy.ledger`) can account for repeated releases
  exactly without the data;
* the mechanism and its noise (the calibration of :meth:`Calibration.to_dict`, with the exact
  noise factor), the verified guarantee and its assumptions;
* the SHA-256 fingerprint of the columns the model was fitted on (:func:`data_fingerprint`), the
  library version, the time, and a digest of the whole plan.

:meth:`Plan.load` recomputes the digest and refuses a plan that was modified after it was saved,
then rebuilds the calibration and checks that its guarantee is the one written in the plan.
:meth:`Plan.release` checks the target's columns and size n before evaluating the statistics on it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from distprivacy._json import dumps_json, jsonable
from distprivacy.checks import (
    check_bool,
    check_dataframe,
    check_instance,
    check_label,
    check_path,
)
from distprivacy.exceptions import (
    DistPrivacyError,
    DistPrivacyTypeError,
    Notice,
    UnrecordedWarning,
)
from distprivacy.fingerprint import (
    query_columns,
    source_fingerprint,
)
from distprivacy.guarantee import UNRECORDED, Guarantee, Release
from distprivacy.models import FModel, GaussianModel
from distprivacy.query import Query
from distprivacy.randomness import RandomState

#: The ``format`` field of a plan file and the version this library writes.
PLAN_FORMAT = "distprivacy-plan"
PLAN_VERSION = 1

#: Largest plan file read (bytes): a plan holds moments, not data.
MAX_PLAN_BYTES = 64 * 2**20

_KEYS = {
    "format",
    "format_version",
    "library_version",
    "created",
    "mechanism",
    "spec",
    "query",
    "statistics",
    "columns",
    "modelling",
    "model",
    "data_fingerprint",
    "calibration",
    "guarantee",
    "assumptions",
    "digest",
}
#: Keys a plan may hold beyond :data:`_KEYS`: the seal of a ledger (:meth:`Plan.seal`).
_OPTIONAL_KEYS = {"seal"}


class PlanError(DistPrivacyError):
    """A plan file is missing, malformed, modified after it was saved, or does not fit the
    data it is asked to release."""


class PlanTypeError(PlanError, DistPrivacyTypeError):
    """An argument of the wrong type given to a plan (a number for its path, an array for its
    target, ...): a :class:`PlanError` and a ``TypeError``."""


def query_text(query: Query) -> str | None:
    """The text :meth:`Query.parse` reads back into ``query`` (None when a statistic is a
    Python callable, which a file cannot hold)."""
    parts = [s.text() for s in query.statistics]
    if any(t is None for t in parts):
        return None
    return ",".join(parts)


def model_to_dict(model: FModel) -> dict[str, Any]:
    """The fitted moments of ``model`` in the model-file layout (thetas with mean and
    covariance, pairs, statistics, n); samples are not kept."""
    model._check_fitted()
    labels = [str(t) for t in model.thetas_]
    return jsonable(
        {
            "statistics": list(model.statistic_names_),
            "thetas": [
                {"label": lab, "mean": model.means_[t], "covariance": model.covariances_[t]}
                for t, lab in enumerate(labels)
            ],
            "pairs": [[labels[i], labels[j]] for i, j in model.pair_indices_],
            "record_sensitivities": model.record_sensitivities_,
            "n": model.n_,
            "method": model.method_,
        }
    )


def model_from_dict(raw: Mapping[str, Any]) -> GaussianModel:
    """Rebuild the moments written by :func:`model_to_dict` (validated as a user's model)."""
    try:
        thetas = raw["thetas"]
        model = GaussianModel(
            thetas=[t["label"] for t in thetas],
            means=[t["mean"] for t in thetas],
            covariances=[t["covariance"] for t in thetas],
            pairs=[tuple(p) for p in raw["pairs"]],
            statistic_names=raw["statistics"],
            record_sensitivities=raw.get("record_sensitivities"),
            n=raw.get("n"),
            source="the plan's model",
        )
    except DistPrivacyError:
        raise
    except (KeyError, TypeError) as e:
        raise PlanError(f"the plan's model is malformed ({type(e).__name__}: {e})") from None
    model.method_ = str(raw.get("method") or "plan")
    return model


def _digest(body: Mapping[str, Any]) -> str:
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, repr=False)
class Plan:
    """A calibrated mechanism kept for a later release (see the module docstring).

    Build one with :meth:`from_calibration`; :meth:`save` writes it, :meth:`load` reads it back
    (digest checked) and :meth:`release` releases a target dataset with it.

    Attributes
    ----------
    calibration : Calibration
        The calibrated mechanism: its noise and its verified guarantee.
    model : FModel
        The fitted model of f_θ the calibration was made on (its moments are kept).
    spec : dict, optional
        The protection specification (property, n, values, pairs), as a mapping.
    query : str, optional
        The statistics as query text.
    columns : tuple of str
        The columns the statistics read.
    modelling : dict
        The modelling choices (method, samples, seed, engine, rule, covariances, utility).
    data_fingerprint : str, optional
        The fingerprint of the data the model was fitted on.
    library_version : str
        The distprivacy version that made the plan.
    created : str
        When the plan was made (UTC, ISO 8601).
    seal_mac : str, optional
        A schema-2 seal, kept to refuse it with a clear message.
    """

    calibration: Any
    model: FModel
    spec: dict[str, Any] | None = None
    query: str | None = None
    columns: tuple[str, ...] = ()
    modelling: dict[str, Any] = field(default_factory=dict)
    data_fingerprint: str | None = None
    library_version: str = ""
    created: str = ""
    seal_mac: str | None = None

    @classmethod
    def from_calibration(
        cls,
        calibration: Any,
        model: FModel | None = None,
        *,
        data: pd.DataFrame | None = None,
        modelling: Mapping[str, Any] | None = None,
    ) -> Plan:
        """A plan of ``calibration`` on the model it was calibrated on.

        Parameters
        ----------
        calibration : Calibration
        model : FModel, optional
            Defaults to the model the calibration remembers (``calibration.model_``).
        data : DataFrame or engine, optional
            The data the model was fitted on, for the fingerprint (:func:`source_fingerprint`).
        modelling : mapping, optional
            The modelling choices (method, samples, seed, engine) to record.
        """
        from distprivacy._version import __version__
        from distprivacy.engines import Engine
        from distprivacy.guarantee import Calibrated

        check_instance(calibration, "calibration", Calibrated, "a calibration (Mechanism."
                       "calibrate)", error=PlanTypeError)  # fmt: skip
        check_instance(model, "model", FModel, "a fitted model (FModel)", optional=True,
                       error=PlanTypeError)  # fmt: skip
        check_instance(data, "data", (pd.DataFrame, str, Path, Engine),
                       "the data (a DataFrame, a path or an engine)", optional=True,
                       error=PlanTypeError)  # fmt: skip
        check_instance(modelling, "modelling", Mapping, "a mapping of the modelling choices",
                       optional=True, error=PlanTypeError)  # fmt: skip
        model = model if model is not None else getattr(calibration, "model_", None)
        if model is None:
            raise PlanError("a plan needs the model the calibration was made on; pass model=")
        q = getattr(model, "query_", None)
        spec = getattr(model, "spec_", None)
        text = None if q is None else query_text(q)
        columns = () if q is None else query_columns(q, spec)
        fp = getattr(model, "data_fingerprint_", None)
        if isinstance(data, str | Path):
            fp = source_fingerprint(data, columns)
        elif data is not None and columns:
            fp = source_fingerprint(data, columns)
        return cls(
            calibration=calibration,
            model=model,
            spec=None if spec is None else spec.to_dict(),
            query=text,
            columns=tuple(columns),
            modelling={"method": model.method_, **dict(modelling or {})},
            data_fingerprint=fp,
            library_version=__version__,
            created=datetime.now(UTC).isoformat(timespec="seconds"),
        )

    @property
    def guarantee(self) -> Guarantee:
        return self.calibration.guarantee

    @property
    def n(self) -> int | None:
        return None if self.spec is None else int(self.spec["n"])

    @property
    def protected_property(self) -> str | None:
        return None if self.spec is None else str(self.spec["property"])

    def body(self) -> dict[str, Any]:
        """Everything but the digest, as plain data."""
        return jsonable(
            {
                "format": PLAN_FORMAT,
                "format_version": PLAN_VERSION,
                "library_version": self.library_version,
                "created": self.created,
                "mechanism": self.calibration.mechanism,
                "spec": self.spec,
                "query": self.query,
                "statistics": list(self.calibration.statistic_names),
                "columns": list(self.columns),
                "modelling": self.modelling,
                "model": model_to_dict(self.model),
                "data_fingerprint": self.data_fingerprint,
                "calibration": self.calibration.to_dict(),
                "guarantee": self.guarantee.to_dict(),
                "assumptions": list(self.guarantee.assumptions),
            }
        )

    def model_digest(self) -> str:
        """SHA-256 of the fitted model's moments alone (keys the ledger's releases of a
        user's model, which names no protected property)."""
        return _digest(model_to_dict(self.model))

    @property
    def digest(self) -> str:
        """SHA-256 of the plan's canonical JSON (sorted keys, no spaces), digest excluded."""
        return _digest(self.body())

    def to_dict(self) -> dict[str, Any]:
        body = self.body()
        out = {**body, "digest": _digest(body)}
        if self.seal_mac is not None:
            out["seal"] = self.seal_mac
        return out

    # -- sealing ----------------------------------------------------------------------------

    def _mac(self, key: bytes) -> str:
        check_instance(key, "key", bytes | bytearray, "a ledger key (bytes)", error=PlanTypeError)
        if len(key) < 16:
            raise PlanError("a plan is sealed with a ledger key of at least 16 bytes")
        body = self.body()
        text = json.dumps(
            {**body, "digest": _digest(body)},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=True,
        )
        mac = hmac.new(bytes(key), b"distprivacy-plan-seal|" + text.encode(), hashlib.sha256)
        return "hmac-sha256:" + mac.hexdigest()

    def seal(self, key: bytes) -> Plan:
        """This plan sealed with a ledger's key (an HMAC-SHA256 over its whole content): a
        steward's approval that :meth:`verify_seal` checks before a release spends budget.
        Unlike the digest, which anyone can recompute after an edit, the seal can be remade
        only by someone holding the key."""
        return dataclasses.replace(self, seal_mac=self._mac(key))

    @property
    def sealed(self) -> bool:
        """Whether the plan carries a seal (checked only by :meth:`verify_seal`)."""
        return self.seal_mac is not None

    def verify_seal(self, key: bytes) -> None:
        """Refuse (PlanError, one line) a plan that is not sealed, or whose seal was not made
        with ``key`` over exactly this content."""
        if self.seal_mac is None:
            raise PlanError(
                "the plan is not sealed; a steward seals it with `distprivacy ledger seal "
                "LEDGER.db PLAN.json` after reviewing it"
            )
        if not hmac.compare_digest(self.seal_mac, self._mac(key)):
            raise PlanError(
                "the plan's seal does not match this ledger's key: it was modified after it "
                "was sealed, or sealed by another ledger"
            )

    def __repr__(self) -> str:
        return (
            f"Plan({self.calibration.mechanism}, {self.guarantee.describe()}, "
            f"digest={self.digest[:19]}…)"
        )

    def save(self, path: str | Path) -> Path:
        """Write the plan (atomically) as JSON; returns the path."""
        from distprivacy.outputs import check_output_file, write_text

        p = check_path(path, "a plan's path", error=PlanTypeError)
        check_output_file(p)
        # 0600: a plan holds the fitted moments, exact statistics of the population.
        return write_text(p, dumps_json(self.to_dict()) + "\n", mode=0o600)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], source: str = "the plan") -> Plan:
        """Rebuild a plan, refusing a modified one (digest) or an inconsistent one."""
        from distprivacy.mechanisms._swamped import flag_swamped
        from distprivacy.mechanisms.calibration import Calibration

        source = check_label(source, "source", "the plan")
        if not isinstance(raw, Mapping) or raw.get("format") != PLAN_FORMAT:
            raise PlanError(f'{source} is not a distprivacy plan (no "format": {PLAN_FORMAT!r})')
        extra = sorted(set(raw) - _KEYS - _OPTIONAL_KEYS)
        missing = sorted(_KEYS - set(raw))
        if extra or missing:
            what = "unknown keys " + ", ".join(extra) if extra else "missing " + ", ".join(missing)
            raise PlanError(f"{source}: {what}; calibrate again and save a new plan (`save`)")
        if raw["format_version"] != PLAN_VERSION:
            raise PlanError(
                f"{source} has format version {raw['format_version']!r}; this library reads "
                f"{PLAN_VERSION}: calibrate again and save a new plan (`save`)"
            )
        from distprivacy.files import InvalidFileError
        from distprivacy.mechanisms._plan_schema import check_plan_schema, plan_schema_error

        try:
            check_plan_schema(raw, source)
        except InvalidFileError as e:
            raise PlanError(plan_schema_error(e)) from None
        body = {k: v for k, v in raw.items() if k not in ("digest", "seal")}
        seal_mac = raw.get("seal")
        if seal_mac is not None and not (
            isinstance(seal_mac, str) and seal_mac.startswith("hmac-sha256:")
        ):
            raise PlanError(f"{source}: its seal is not an HMAC-SHA256 (got {seal_mac!r})")
        if _digest(body) != raw["digest"]:
            raise PlanError(
                f"{source} was modified after it was saved (its digest does not match its "
                "content); calibrate again and save a new plan (`save`)"
            )
        spec = raw["spec"]
        query = Query.parse(raw["query"]) if raw["query"] else None
        n = int(spec["n"]) if isinstance(spec, Mapping) and "n" in spec else None
        try:
            # The swamped caveat recomputed by today's rule (a plan may predate it).
            cal = flag_swamped(Calibration.from_dict(raw["calibration"], query=query, n=n))
        except PlanError:
            raise
        except DistPrivacyError as e:
            raise PlanError(f"{source}: calibration: {e}") from None
        stated = Guarantee.from_dict(raw["guarantee"])
        if cal.guarantee != stated:
            raise PlanError(f"{source}: its calibration does not give the guarantee it states")
        model = model_from_dict(raw["model"])
        if tuple(model.statistic_names_) != tuple(cal.statistic_names):
            raise PlanError(f"{source}: the model's statistics differ from the calibration's")
        cal = dataclasses.replace(cal, model_=model)
        _self_check(cal, model, stated, source)
        return cls(
            calibration=cal,
            model=model,
            spec=raw["spec"],
            query=raw["query"],
            columns=tuple(raw["columns"]),
            modelling=dict(raw["modelling"]),
            data_fingerprint=raw["data_fingerprint"],
            library_version=raw["library_version"],
            created=raw["created"],
            seal_mac=seal_mac,
        )

    @classmethod
    def load(cls, path: str | Path) -> Plan:
        """Read a plan file written by :meth:`save` (digest checked)."""
        p = check_path(path, "a plan's path", error=PlanTypeError)
        if not p.is_file():
            raise PlanError(f"plan file {str(p)!r} does not exist")
        if p.stat().st_size > MAX_PLAN_BYTES:
            raise PlanError(f"plan file {p.name!r} is larger than {MAX_PLAN_BYTES // 2**20} MiB")
        from distprivacy.files import MAX_DEPTH, nesting_depth

        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise PlanError(f"plan file {p.name!r} is not UTF-8 text ({e.reason})") from None
        depth = nesting_depth(text)
        if depth > MAX_DEPTH:
            raise PlanError(
                f"plan file {p.name!r} is nested {depth} levels deep; at most {MAX_DEPTH} are "
                "accepted (a plan is never that deep)"
            )
        try:
            raw = json.loads(text, parse_constant=_no_constant)
        except RecursionError:
            raise PlanError(f"plan file {p.name!r} is nested too deeply") from None
        except (ValueError, UnicodeDecodeError) as e:
            raise PlanError(f"plan file {p.name!r} is not valid JSON ({e})") from None
        return cls.from_dict(raw, f"plan file {p.name!r}")

    # -- releasing --------------------------------------------------------------------------

    def statistic_columns(self) -> tuple[str, ...]:
        """The columns the plan's statistics read (not the protected property's column)."""
        if self.query is None:
            return ()
        return tuple(query_columns(Query.parse(self.query), None))

    def target_values(self, target: pd.DataFrame, *, require_property: bool = False) -> np.ndarray:
        """F(target): checks the target has the columns the statistics read (and the protected
        property's column with ``require_property``, as a ledger needs) and exactly n records."""
        if self.query is None:
            raise PlanError(
                "this plan has no query (a user's model or Python statistics): give the "
                "statistics' values instead (`values=[a, b, …]`)"
            )
        check_dataframe(target, "target", error=PlanTypeError)
        check_bool(require_property, "require_property")
        query = Query.parse(self.query)
        needed = list(query_columns(query, None))
        missing = [c for c in dict.fromkeys(needed) if c not in target.columns]
        if missing:
            raise PlanError(
                f"the target lacks column{'s' if len(missing) > 1 else ''} "
                f"{', '.join(missing)} that the plan's statistics read"
            )
        if require_property and self.spec is not None:
            from distprivacy.spec import Predicate

            column = Predicate.parse(str(self.spec["property"])).column
            if column not in target.columns:
                raise PlanError(
                    f"the target lacks column {column}, the protected property's: no statistic "
                    "reads it, but a ledger needs it to identify the dataset (a release without "
                    "a `ledger` needs only the statistics' columns)"
                )
        if self.n is not None and len(target) != self.n:
            raise PlanError(
                f"the target has {len(target)} records but the plan was calibrated for n = "
                f"{self.n}; release a dataset of exactly {self.n} records"
            )
        query.validate(target)
        return np.asarray(query.evaluate(target), dtype=float)

    def release(
        self,
        target: pd.DataFrame | None = None,
        *,
        values: Sequence[float] | None = None,
        random_state: RandomState = None,
        allow_exact: bool = False,
    ) -> Release:
        """Release ``target`` (a table of n records) or the statistics' ``values`` with the
        plan's calibration, without refitting anything."""
        if (target is None) == (values is None):
            raise PlanError("give the target dataset or the statistics' values, not both")
        v = self.target_values(target) if target is not None else values
        rel = self.calibration.release(v, random_state=random_state, allow_exact=allow_exact)
        if self.sealed:  # a steward's plan, released where no ledger records it
            notice = Notice(UNRECORDED, UnrecordedWarning)
            notice.emit(stacklevel=2)
            rel = rel.with_notices(notice)
        return rel


def _self_check(cal: Any, model: FModel, stated: Guarantee, source: str) -> None:
    """Recompute a Gaussian plan's guarantee from its own stored model and noise, by the same
    exact accounting as a calibration, and refuse a plan that states another guarantee than
    that (beyond float rounding, either way).

    Catches a plan whose noise was reduced (or whose stated μ, δ or attack bound was
    improved) and then re-digested, and one whose θ means were moved closer (its numbers then
    give a *smaller* μ than stated: the release would be accounted on a model that is not the
    one calibrated). It cannot catch an edit that keeps the plan consistent
    with itself — noise moved into the stored model's covariances, or θ means set equal —
    since the model is then what is checked against: only a seal (a ledger's key) or a refit on
    the data catches those (docs/ledger.md)."""
    from distprivacy.mechanisms._fitted import fitted_profile
    from distprivacy.mechanisms._mahalanobis import max_mahalanobis, pair_covariances
    from distprivacy.mechanisms.calibration import BASIS_UNCONDITIONAL
    from distprivacy.profiles import gdp_accuracy, gdp_delta

    noise = getattr(cal, "noise", None)
    if cal.basis == BASIS_UNCONDITIONAL:
        _check_group_dp(cal, model, stated, source)  # every input: its own theorem, below
        return
    if noise is None or noise.family not in ("gaussian", "none"):
        return  # Laplace noise: the guarantee rests on an assumption, not on the model
    if stated.mu is None:
        return
    Z = np.asarray(cal.noise_covariance, dtype=float)
    conv = "own" if getattr(cal, "rule", None) == "classic" else "average"
    pairs = pair_covariances(model, conv)
    mu = max_mahalanobis(pairs, Z)
    # ExpM-G and DirM-G plans saved before issue 33 state their theorem's μ* = sup ‖Δ‖ under
    # the noise alone, which is at least the model's μ (the sampling spread of F only adds to
    # the noise): such a stated μ is that one, recomputed the same way. Newer plans state the
    # model's μ, as every other Gaussian mechanism.
    alone = max_mahalanobis([(d, [np.zeros_like(c) for c in cs]) for d, cs in pairs], Z)
    if math.isfinite(alone) and alone >= mu and _agrees(alone, float(stated.mu)):
        mu = alone
    eps = float(stated.epsilon)
    delta = float(gdp_delta(eps, mu)) if math.isfinite(mu) else 1.0
    acc = float(gdp_accuracy(mu)) if math.isfinite(mu) else 1.0
    if getattr(cal, "accounting", None) is not None and cal.accounting.unequal is not None:
        prof = fitted_profile(model, Z, eps)
        delta = max(delta, float(prof.delta_at_epsilon))
        acc = max(acc, float(prof.max_attack_accuracy))  # type: ignore[arg-type]
    bad = []
    if not _agrees(mu, float(stated.mu)):
        bad.append(f"μ = {mu:.6g} (states μ = {stated.mu:.6g})")
    if not _agrees(delta, float(stated.delta), floor=_DELTA_FLOOR):
        bad.append(f"δ = {delta:.3g} at ε = {eps:.4g} (states δ = {stated.delta:.3g})")
    if stated.max_attack_accuracy is not None and not _agrees(acc, stated.max_attack_accuracy):
        bad.append(f"attack bound {acc:.2%} (states {stated.max_attack_accuracy:.2%})")
    if bad:
        raise PlanError(
            f"{source}: its own model and noise give {'; '.join(bad)} — not the guarantee it "
            "states; it was edited after calibration: calibrate again and save a new plan "
            "(`save`)"
        )


def _check_group_dp(cal: Any, model: FModel, stated: Guarantee, source: str) -> None:
    """A plan whose guarantee claims to hold for every input (group DP: a ledger composes its
    releases as such, :mod:`distprivacy.ledger._compose`) must name a mechanism whose basis
    that is, and its noise must give the stated guarantee by that mechanism's theorem on the
    stored model's per-record sensitivities and group size: GroupDP-G, μ = k·Δ₂/σ (Dwork &
    Roth 2014, Thm A.1 with group sensitivity); GroupDP-L, ε = k·Δ₁/b (Thm 3.6). Refuses a plan
    relabelled as group DP, or whose noise, k or sensitivities were edited apart from one
    another (an edit of the stored model's sensitivities *with* the noise stays consistent:
    only a refit on the data catches it, as for every plan)."""
    from distprivacy.mechanisms import mechanism_class
    from distprivacy.mechanisms.calibration import BASIS_UNCONDITIONAL

    def refuse(why: str) -> PlanError:
        return PlanError(
            f"{source}: {why} — not the guarantee it states; it was edited after calibration: "
            "calibrate again and save a new plan (`save`)"
        )

    try:
        cls = mechanism_class(cal.mechanism)
    except DistPrivacyError:
        raise refuse(f"it names mechanism {cal.mechanism!r}, unknown here") from None
    if getattr(cls, "basis", None) != BASIS_UNCONDITIONAL:
        raise refuse(
            f"it claims a guarantee for every dataset (group differential privacy), but "
            f"{cal.mechanism}'s guarantee rests on the model of f_θ"
        )
    k = cal.details.get("group_size")
    sens = getattr(model, "record_sensitivities_", None)
    noise = getattr(cal, "noise", None)
    if not isinstance(k, int | np.integer) or isinstance(k, bool) or k < 1 or sens is None:
        raise refuse("its group size or the model's per-record sensitivities are missing")
    sens = np.asarray(sens, dtype=float)
    stored = cal.details.get("record_sensitivities")
    if stored is not None and not np.allclose(np.asarray(stored, float), sens, rtol=1e-12):
        raise refuse("its per-record sensitivities differ from its model's")
    if noise is None or noise.family not in ("gaussian", "laplace"):
        raise refuse(f"{cal.mechanism} draws Gaussian or Laplace noise, this plan has none")
    scale = _isotropic_scale(cal, noise, sens.size)
    if scale is None:
        raise refuse(f"{cal.mechanism}'s noise is isotropic, this plan's is not")
    if noise.family == "gaussian":
        mu = float(k) * float(np.linalg.norm(sens)) / scale
        if stated.mu is None or not _agrees(mu, float(stated.mu)):
            raise refuse(f"its noise gives μ = {mu:.6g} (states μ = {stated.mu})")
    else:
        eps = float(k) * float(sens.sum()) / scale
        if not _agrees(eps, float(stated.epsilon)):
            raise refuse(f"its noise gives ε = {eps:.6g} (states ε = {stated.epsilon:.6g})")


def _isotropic_scale(cal: Any, noise: Any, d: int) -> float | None:
    """The one scale of isotropic noise in ``d`` coordinates (σ of a Gaussian, b of a
    Laplace), or None when the noise is not isotropic on the statistics' own axes."""
    scales = np.asarray(noise.scales, dtype=float)
    if scales.size != d or not (np.isfinite(scales).all() and scales[0] > 0):
        return None
    if not np.allclose(scales, scales[0], rtol=1e-12, atol=0.0):
        return None
    if noise.family == "gaussian":  # any orthonormal basis: the covariance says it all
        Z = np.asarray(cal.noise_covariance, dtype=float)
        var = float(scales[0]) ** 2
        if Z.shape != (d, d) or not np.allclose(Z, var * np.eye(d), rtol=1e-9, atol=1e-12 * var):
            return None
        return float(scales[0])
    basis = getattr(noise, "basis", None)  # Laplace: independent on the statistics' axes
    if getattr(noise, "factor", None) is not None:
        return None
    if basis is not None and not np.allclose(np.abs(np.asarray(basis, float)), np.eye(d)):
        return None
    return float(scales[0])


#: How far a plan's recomputed μ, δ or attack bound may be from the stated one (relative):
#: the same computation on the same stored numbers agrees to float rounding; an edit that moves
#: the noise or the means moves them by far more.
_SELF_CHECK_RTOL = 1e-6
#: Below this, two δ's are both "no δ" (an exact profile's own error bound is ~1e-11).
_DELTA_FLOOR = 1e-9


def _agrees(recomputed: float, stated: float, floor: float = 0.0) -> bool:
    """Whether a plan's recomputed figure is its stated one (two-sided: a plan that states a
    *worse* guarantee than its numbers give was edited too — the θ means moved closer, say)."""
    if not (math.isfinite(recomputed) and math.isfinite(stated)):
        return recomputed == stated
    if max(recomputed, stated) <= floor:
        return True
    return abs(recomputed - stated) <= _SELF_CHECK_RTOL * max(abs(recomputed), abs(stated))


def _no_constant(name: str) -> float:
    raise PlanError(f"a plan never holds {name}; the file was not written by distprivacy")
