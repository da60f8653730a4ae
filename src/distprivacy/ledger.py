"""A privacy ledger: every release of a dataset, recorded before it is revealed.

The ledger is one SQLite file (the standard library's :mod:`sqlite3`, WAL mode) holding a budget
— μ, or (ε, δ) — and one row per release: when, the dataset's fingerprint, the protected
property, the plan (its digest and JSON: specification, statistics, fitted moments), the
mechanism, the statistics' names, the guarantee, the noise covariance, the released values and
the cumulative guarantee after it.

:meth:`Ledger.record` is the one way in. Inside a single ``BEGIN IMMEDIATE`` transaction (two
processes serialise on it) it reads every earlier release of the same fingerprint and property,
computes the guarantee of all of them together with the new one (a ``compose`` callable, e.g.
:func:`plan_composer`), and either refuses — :class:`BudgetExceededError`, the transaction rolled
back, the file byte-for-byte unchanged — or inserts the row and commits (``synchronous=FULL``:
durable before it returns). The caller prints the release only after :meth:`record` returned:
record, then reveal — a crash between the two can lose an output, never a ledger entry.

The dataset fingerprint is :func:`data_fingerprint` (SHA-256 of the columns used, see
:func:`distprivacy.plans.data_fingerprint`).

Importing this module is light (NumPy and the standard library): plans, models and the joint
accounting are imported when they are used.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from distprivacy._json import jsonable, number
from distprivacy.exceptions import DistPrivacyError
from distprivacy.guarantee import Guarantee

__all__ = [
    "DEFAULT_REPORT_DELTA",
    "LEDGER_FORMAT",
    "SCHEMA_VERSION",
    "Budget",
    "BudgetExceededError",
    "Ledger",
    "LedgerEntry",
    "LedgerError",
    "data_fingerprint",
    "plan_composer",
]

#: The marker in the ``ledger_meta`` table of every distprivacy ledger.
LEDGER_FORMAT = "distprivacy-ledger"
#: The schema version this library writes and reads.
SCHEMA_VERSION = 1
#: The δ at which a μ budget's cumulative ε is reported (the library's default δ).
DEFAULT_REPORT_DELTA = 1e-3
#: How long a release waits for another process's transaction (seconds).
BUSY_TIMEOUT = 60.0

_SQLITE_HEADER = b"SQLite format 3\x00"

_SCHEMA = (
    "CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE schema_version (version INTEGER NOT NULL)",
    "CREATE TABLE budget (kind TEXT NOT NULL CHECK (kind IN ('mu', 'epsilon-delta')), "
    "mu REAL, epsilon REAL, delta REAL)",
    "CREATE TABLE releases ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " time TEXT NOT NULL,"
    " fingerprint TEXT NOT NULL,"
    " property TEXT NOT NULL,"
    " plan_digest TEXT,"
    " mechanism TEXT NOT NULL,"
    " statistics TEXT NOT NULL,"
    " guarantee TEXT NOT NULL,"
    " noise_family TEXT,"
    " noise_covariance TEXT,"
    " release_values TEXT NOT NULL,"
    " plan TEXT,"
    " statistic_indices TEXT,"
    " cumulative TEXT NOT NULL)",
    "CREATE INDEX releases_by_dataset ON releases (fingerprint, property, id)",
)

_COLUMNS = (
    "id, time, fingerprint, property, plan_digest, mechanism, statistics, guarantee, "
    "noise_family, noise_covariance, release_values, plan, statistic_indices, cumulative"
)


class LedgerError(DistPrivacyError):
    """A ledger file is missing, not a ledger, of another version, or misused."""


class BudgetExceededError(DistPrivacyError):
    """A release would take the cumulative guarantee past the ledger's budget (nothing was
    recorded)."""


def _dumps(x: Any) -> str:
    return json.dumps(jsonable(x), sort_keys=True, separators=(",", ":"), allow_nan=False)


@dataclass(frozen=True)
class Budget:
    """A ledger's budget: μ (``kind="mu"``) or (ε, δ) (``kind="epsilon-delta"``)."""

    kind: str
    mu: float | None = None
    epsilon: float | None = None
    delta: float | None = None

    @property
    def report_delta(self) -> float:
        """The δ at which cumulative ε is reported: the budget's δ, or
        :data:`DEFAULT_REPORT_DELTA` for a μ budget."""
        return float(self.delta) if self.kind == "epsilon-delta" else DEFAULT_REPORT_DELTA

    def describe(self) -> str:
        if self.kind == "mu":
            return f"μ = {self.mu:.4g}"
        return f"(ε, δ) = ({self.epsilon:.4g}, {self.delta:.3g})"

    def exceeded_by(self, g: Guarantee) -> str | None:
        """None if ``g`` is within the budget, else the refusal message (naming the budget
        and the figure)."""
        if self.kind == "mu":
            if g.mu is None:
                return (
                    f"the cumulative guarantee has no μ ({g.theorem}); the budget is "
                    f"{self.describe()}"
                )
            if not g.mu <= self.mu * (1 + 1e-12):  # type: ignore[operator]
                return f"cumulative μ = {g.mu:.4g} would exceed the budget μ = {self.mu:.4g}"
            return None
        d = g.delta_at(self.epsilon)  # type: ignore[arg-type]
        if not d <= self.delta * (1 + 1e-9):  # type: ignore[operator]
            eps = g.epsilon_at(self.delta)  # type: ignore[arg-type]
            return (
                f"cumulative δ = {d:.3g} at ε = {self.epsilon:.4g} (ε = {eps:.4g} at δ = "
                f"{self.delta:.3g}) would exceed the budget {self.describe()}"
            )
        return None

    def to_dict(self) -> dict[str, Any]:
        return jsonable(
            {"kind": self.kind, "mu": self.mu, "epsilon": self.epsilon, "delta": self.delta}
        )


def _budget(mu: float | None, epsilon: float | None, delta: float | None) -> Budget:
    from distprivacy.accounting import check_delta, check_number

    if mu is not None and (epsilon is not None or delta is not None):
        raise LedgerError("give one budget: μ, or ε and δ — not both kinds")
    if mu is not None:
        return Budget("mu", mu=float(check_number(mu, "the budget μ", low=0, low_open=True)))
    if epsilon is None or delta is None:
        raise LedgerError("give a budget: --budget-mu MU, or --budget-epsilon E --budget-delta D")
    eps = float(check_number(epsilon, "the budget ε", low=0, low_open=True))
    if math.isinf(eps):
        raise LedgerError("the budget ε must be finite")
    return Budget("epsilon-delta", epsilon=eps, delta=float(check_delta(delta)))


@dataclass(frozen=True)
class LedgerEntry:
    """One release, as recorded.

    Attributes
    ----------
    fingerprint : str
        The dataset's fingerprint (:func:`data_fingerprint`).
    property : str
        The protected property (e.g. ``income==>50K``).
    mechanism : str
    statistics : tuple of str
        The released statistics' names.
    guarantee : Guarantee
        The release's own guarantee.
    values : tuple of float
        The released values.
    noise_family : str or None
        ``gaussian``, ``laplace`` or ``none``.
    noise_covariance : ndarray or None
        Cov(Z) of the release.
    plan : mapping or None
        The plan's JSON (spec, query, fitted moments ``model``, calibration, ...).
    plan_digest : str or None
    statistic_indices : tuple of int or None
        Indices of the statistics in the plan's model (default: all, in order).
    id, time : int, str
        Set by the ledger.
    cumulative : Guarantee or None
        The cumulative guarantee after this release (set by the ledger).
    """

    fingerprint: str
    property: str
    mechanism: str
    statistics: tuple[str, ...]
    guarantee: Guarantee
    values: tuple[float, ...] = ()
    noise_family: str | None = None
    noise_covariance: np.ndarray | None = field(default=None, compare=False)
    plan: Mapping[str, Any] | None = field(default=None, compare=False)
    plan_digest: str | None = None
    statistic_indices: tuple[int, ...] | None = None
    id: int | None = None
    time: str | None = None
    cumulative: Guarantee | None = None

    def __post_init__(self) -> None:
        for name in ("fingerprint", "property", "mechanism"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v:
                raise LedgerError(f"a ledger entry needs a non-empty {name}, got {v!r}")
        if not isinstance(self.guarantee, Guarantee):
            raise LedgerError("a ledger entry's guarantee must be a Guarantee")
        object.__setattr__(self, "statistics", tuple(str(s) for s in self.statistics))
        vals = np.asarray(self.values, dtype=float).reshape(-1)
        object.__setattr__(self, "values", tuple(float(v) for v in vals))
        if self.noise_covariance is not None:
            object.__setattr__(
                self, "noise_covariance", np.asarray(self.noise_covariance, dtype=float)
            )
        if self.statistic_indices is not None:
            object.__setattr__(
                self, "statistic_indices", tuple(int(i) for i in self.statistic_indices)
            )

    @classmethod
    def from_plan(
        cls,
        plan: Any,
        values: Sequence[float] | np.ndarray,
        *,
        fingerprint: str | None = None,
        property: str | None = None,
    ) -> LedgerEntry:
        """The entry of releasing ``values`` with a :class:`distprivacy.plans.Plan`.

        ``fingerprint`` defaults to the plan's data fingerprint and ``property`` to its
        protected property."""
        raw = plan.to_dict()
        cal = plan.calibration
        fp = fingerprint if fingerprint is not None else plan.data_fingerprint
        prop = property if property is not None else plan.protected_property
        if not fp or not prop:
            raise LedgerError(
                "a ledger entry needs the dataset's fingerprint and the protected property; "
                "this plan has "
                + ("no fingerprint" if not fp else "no protected property (a user's model)")
            )
        return cls(
            fingerprint=fp,
            property=prop,
            mechanism=cal.mechanism,
            statistics=tuple(cal.statistic_names),
            guarantee=plan.guarantee,
            values=np.asarray(values, dtype=float),
            noise_family=getattr(getattr(cal, "noise", None), "family", None),
            noise_covariance=getattr(cal, "noise_covariance", None),
            plan=raw,
            plan_digest=raw.get("digest"),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data (``ledger show --json``; the plan itself is left out, its digest kept)."""
        return jsonable(
            {
                "id": self.id,
                "time": self.time,
                "fingerprint": self.fingerprint,
                "property": self.property,
                "plan_digest": self.plan_digest,
                "mechanism": self.mechanism,
                "statistics": list(self.statistics),
                "values": list(self.values),
                "guarantee": self.guarantee.to_dict(),
                "noise_family": self.noise_family,
                "noise_covariance": self.noise_covariance,
                "cumulative": None if self.cumulative is None else self.cumulative.to_dict(),
            }
        )

    def _row(self, time: str, cumulative: Guarantee) -> tuple[Any, ...]:
        return (
            time,
            self.fingerprint,
            self.property,
            self.plan_digest,
            self.mechanism,
            _dumps(list(self.statistics)),
            _dumps(self.guarantee.to_dict()),
            self.noise_family,
            None if self.noise_covariance is None else _dumps(self.noise_covariance),
            _dumps(list(self.values)),
            None if self.plan is None else _dumps(self.plan),
            None if self.statistic_indices is None else _dumps(list(self.statistic_indices)),
            _dumps(cumulative.to_dict()),
        )

    @classmethod
    def _from_row(cls, row: Sequence[Any]) -> LedgerEntry:
        (rid, time, fp, prop, digest, mech, stats, g, fam, cov, vals, plan, idx, cum) = row
        cov_v = None if cov is None else np.array(json.loads(cov), dtype=float)
        return cls(
            fingerprint=fp,
            property=prop,
            mechanism=mech,
            statistics=tuple(json.loads(stats)),
            guarantee=Guarantee.from_dict(json.loads(g)),
            values=tuple(number(v) for v in json.loads(vals)),
            noise_family=fam,
            noise_covariance=cov_v,
            plan=None if plan is None else json.loads(plan),
            plan_digest=digest,
            statistic_indices=None if idx is None else tuple(json.loads(idx)),
            id=int(rid),
            time=time,
            cumulative=Guarantee.from_dict(json.loads(cum)),
        )


Composer = Callable[[list[LedgerEntry]], Guarantee]


def data_fingerprint(data: Any, columns: Sequence[str]) -> str:
    """SHA-256 of the columns ``columns`` of the table ``data``, canonical: for each column
    (sorted by name, each once) its name, dtype and length, then its values in row order —
    numbers (bool, int, float) as little-endian float64 bytes, anything else as the ``repr``
    of each value, NaN as ``nan``. Reordering rows or changing one value changes it; columns
    not named do not. Returns ``"sha256:<64 hex digits>"`` (the plans' fingerprint:
    :func:`distprivacy.plans.data_fingerprint`)."""
    from distprivacy.plans import data_fingerprint as fingerprint

    return fingerprint(data, columns)


class Ledger:
    """An open privacy ledger (module docstring). Use :meth:`init` to create one.

    Parameters
    ----------
    path : str or Path
        An existing ledger file.

    Raises
    ------
    LedgerError
        (one line) The file does not exist, is not an SQLite database, is not a distprivacy
        ledger, or was written by another schema version.
    """

    def __init__(self, path: str | Path) -> None:
        p = Path(path)
        self.path = p
        self.last_id: int | None = None
        if not p.is_file():
            raise LedgerError(
                f"no ledger at {str(p)!r}; create one with `distprivacy ledger init {p}`"
            )
        with open(p, "rb") as fh:
            head = fh.read(len(_SQLITE_HEADER))
        if head != _SQLITE_HEADER:
            raise LedgerError(f"{str(p)!r} is not a distprivacy ledger (not an SQLite database)")
        self._con = self._connect(p, "rw")
        try:
            self._check()
        except BaseException:
            self._con.close()
            raise
        self._con.execute("PRAGMA synchronous=FULL")
        self.budget = self._read_budget()

    @staticmethod
    def _connect(p: Path, mode: str) -> sqlite3.Connection:
        uri = p.resolve().as_uri() + f"?mode={mode}"
        con = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT, isolation_level=None)
        con.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")
        return con

    def _check(self) -> None:
        name = repr(str(self.path))
        try:
            tables = {r[0] for r in self._con.execute("SELECT name FROM sqlite_master")}
            fmt = None
            if "ledger_meta" in tables:
                fmt = self._con.execute(
                    "SELECT value FROM ledger_meta WHERE key = 'format'"
                ).fetchone()
        except sqlite3.DatabaseError as e:
            raise LedgerError(f"{name} is not a distprivacy ledger ({e})") from None
        if fmt is None or fmt[0] != LEDGER_FORMAT or not {"releases", "budget"} <= tables:
            raise LedgerError(f"{name} is an SQLite database but not a distprivacy ledger")
        v = self._con.execute("SELECT version FROM schema_version").fetchall()
        if [r[0] for r in v] != [SCHEMA_VERSION]:
            raise LedgerError(
                f"{name} has ledger schema version {v[0][0] if v else None!r}; this library "
                f"reads version {SCHEMA_VERSION}"
            )
        mode = self._con.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "wal":
            raise LedgerError(f"{name} is not in WAL mode (journal mode {mode!r})")

    def _read_budget(self) -> Budget:
        rows = self._con.execute("SELECT kind, mu, epsilon, delta FROM budget").fetchall()
        if len(rows) != 1:
            raise LedgerError(f"{str(self.path)!r} has {len(rows)} budgets; a ledger has one")
        kind, mu, eps, dlt = rows[0]
        return Budget(kind, mu, eps, dlt)

    @classmethod
    def init(
        cls,
        path: str | Path,
        *,
        budget_mu: float | None = None,
        budget_epsilon: float | None = None,
        budget_delta: float | None = None,
    ) -> Ledger:
        """Create a ledger with one budget: ``budget_mu``, or ``budget_epsilon`` and
        ``budget_delta``. Refuses an existing file."""
        from distprivacy import __version__

        budget = _budget(budget_mu, budget_epsilon, budget_delta)
        p = Path(path)
        if not p.parent.is_dir():
            raise LedgerError(f"the directory of {str(p)!r} does not exist")
        try:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise LedgerError(f"{str(p)!r} already exists; a new ledger needs a new file") from None
        os.close(fd)
        try:
            con = cls._connect(p, "rw")
            try:
                if con.execute("PRAGMA journal_mode=WAL").fetchone()[0].lower() != "wal":
                    raise LedgerError(f"cannot put {str(p)!r} in WAL mode")
                con.execute("BEGIN IMMEDIATE")
                for stmt in _SCHEMA:
                    con.execute(stmt)
                con.executemany(
                    "INSERT INTO ledger_meta (key, value) VALUES (?, ?)",
                    [
                        ("format", LEDGER_FORMAT),
                        ("library_version", __version__),
                        ("created", datetime.now(UTC).isoformat(timespec="seconds")),
                    ],
                )
                con.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
                con.execute(
                    "INSERT INTO budget (kind, mu, epsilon, delta) VALUES (?, ?, ?, ?)",
                    (budget.kind, budget.mu, budget.epsilon, budget.delta),
                )
                con.execute("COMMIT")
            finally:
                con.close()
        except BaseException:
            for suffix in ("", "-wal", "-shm"):
                Path(str(p) + suffix).unlink(missing_ok=True)
            raise
        return cls(p)

    # -- reading ----------------------------------------------------------------------------

    def _select(
        self, fingerprint: str | None, property: str | None, con: sqlite3.Connection
    ) -> list[LedgerEntry]:
        where, args = [], []
        if fingerprint is not None:
            where.append("fingerprint = ?")
            args.append(fingerprint)
        if property is not None:
            where.append("property = ?")
            args.append(property)
        sql = f"SELECT {_COLUMNS} FROM releases"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [LedgerEntry._from_row(r) for r in con.execute(sql + " ORDER BY id", args)]

    def releases(
        self, fingerprint: str | None = None, property: str | None = None
    ) -> list[LedgerEntry]:
        """The recorded releases (oldest first), optionally of one fingerprint / property."""
        return self._select(fingerprint, property, self._con)

    def cumulative(self, fingerprint: str, property: str, compose: Composer) -> Guarantee:
        """The guarantee of every recorded release of (``fingerprint``, ``property``) together
        (nothing is written)."""
        entries = self.releases(fingerprint, property)
        if not entries:
            raise LedgerError(f"no release of {fingerprint} about {property} is recorded")
        return compose(entries)

    def show(self, compose: Composer | None = None) -> dict[str, Any]:
        """Plain data: ``budget``, ``releases`` (a list) and ``cumulative`` (a list, one per
        fingerprint and property: ``mu``, ``epsilon`` at the budget's δ, ``delta``,
        ``max_attack_accuracy``, the theorem and the number of releases). The cumulative
        guarantee is the one stored at the last release, or recomputed with ``compose``."""
        entries = self.releases()
        last: dict[tuple[str, str], LedgerEntry] = {}
        count: dict[tuple[str, str], int] = {}
        for e in entries:
            key = (e.fingerprint, e.property)
            last[key] = e
            count[key] = count.get(key, 0) + 1
        d = self.budget.report_delta
        cumulative = []
        for key, e in last.items():
            g = compose(self.releases(*key)) if compose is not None else e.cumulative
            assert g is not None
            eps = g.epsilon_at(d)
            cumulative.append(
                {
                    "fingerprint": key[0],
                    "property": key[1],
                    "releases": count[key],
                    "mu": g.mu,
                    "epsilon": eps,
                    "delta": g.delta_at(eps) if math.isfinite(eps) else 1.0,
                    "at_delta": d,
                    "max_attack_accuracy": g.max_attack_accuracy,
                    "within_budget": self.budget.exceeded_by(g) is None,
                    "theorem": g.theorem,
                }
            )
        return jsonable(
            {
                "ledger": str(self.path),
                "budget": self.budget.to_dict(),
                "releases": [e.to_dict() for e in entries],
                "cumulative": cumulative,
            }
        )

    # -- writing ----------------------------------------------------------------------------

    @contextmanager
    def _immediate(self) -> Iterator[sqlite3.Connection]:
        self._con.execute("BEGIN IMMEDIATE")
        try:
            yield self._con
        except BaseException:
            self._con.execute("ROLLBACK")
            raise
        self._con.execute("COMMIT")

    def record(self, entry: LedgerEntry, compose: Composer) -> Guarantee:
        """Record ``entry`` if the cumulative guarantee stays within the budget.

        In one ``BEGIN IMMEDIATE`` transaction: read the earlier releases of the same
        fingerprint and property, ``compose(earlier + [entry])``, then refuse or insert and
        commit. Reveal the release only after this returns.

        Returns
        -------
        Guarantee
            The cumulative guarantee, now recorded.

        Raises
        ------
        BudgetExceededError
            The budget would be exceeded (the ledger is unchanged).
        DistPrivacyError
            ``compose`` refused (e.g. releases that cannot be composed); the ledger is
            unchanged.
        """
        if not isinstance(entry, LedgerEntry):
            raise LedgerError(f"record takes a LedgerEntry, got {type(entry).__name__}")
        fresh = replace(entry, id=None, time=None, cumulative=None)
        with self._immediate() as con:
            prior = self._select(entry.fingerprint, entry.property, con)
            g = compose([*prior, fresh])
            if not isinstance(g, Guarantee):
                raise LedgerError(f"compose returned a {type(g).__name__}, not a Guarantee")
            why = self.budget.exceeded_by(g)
            if why is not None:
                raise BudgetExceededError(
                    f"release refused: {why} ({len(prior)} earlier release"
                    f"{'' if len(prior) == 1 else 's'} of this dataset); nothing was recorded"
                )
            now = datetime.now(UTC).isoformat(timespec="microseconds")
            cur = con.execute(
                "INSERT INTO releases (time, fingerprint, property, plan_digest, mechanism, "
                "statistics, guarantee, noise_family, noise_covariance, release_values, plan, "
                "statistic_indices, cumulative) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                fresh._row(now, g),
            )
            rid = cur.lastrowid
        self.last_id = rid
        return g

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check`` (``"ok"`` when the file is sound)."""
        return "; ".join(r[0] for r in self._con.execute("PRAGMA integrity_check"))

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        n = self._con.execute("SELECT COUNT(*) FROM releases").fetchone()[0]
        return f"Ledger({str(self.path)!r}, budget {self.budget.describe()}, {n} releases)"


# -- composing recorded releases ----------------------------------------------------------------


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
    from distprivacy.composition import CompositionError
    from distprivacy.plans import model_from_dict

    specs = {_dumps(e.plan.get("spec")) for e in entries}  # type: ignore[union-attr]
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
    queries = [e.plan.get("query") for e in entries]  # type: ignore[union-attr]
    if fit is None or any(not q for q in queries):
        raise CompositionError(
            "the releases recorded for this dataset use different statistics ("
            + "; ".join(sorted({", ".join(m.statistic_names_) for m in models}))
            + "); their joint model needs the data they were fitted on (give it to refit the "
            "union of the statistics)"
        )
    parts = [p.strip() for q in queries for p in str(q).split(",") if p.strip()]
    return fit(",".join(dict.fromkeys(parts)))


def plan_composer(
    *,
    delta: float,
    fit: Callable[[str], Any] | None = None,
    convention: str = "average",
) -> Composer:
    """The ``compose`` of :meth:`Ledger.record` for releases made from plans.

    * Every release Gaussian (or noiseless) with the plan's fitted moments: the exact joint
      accounting of :func:`distprivacy.composition.compose_gaussian` on one model of every
      released statistic, at ``delta`` (the ledger's :attr:`Budget.report_delta`). The model
      is a plan's own when it covers every statistic and agrees with the others' moments (the
      same plan released again, or subsets of one plan's statistics); otherwise
      ``fit(query_text)`` refits the union of the statistics on the data (refused without it).
    * Else, when every guarantee holds for every pair of datasets (group DP):
      :func:`distprivacy.composition.compose_guarantees`.
    * Else a single release keeps its own guarantee, and several are refused
      (:class:`~distprivacy.composition.CompositionError`): no ε is ever added silently.
    """
    from distprivacy.accounting import check_delta

    d = check_delta(delta)

    def compose(entries: list[LedgerEntry]) -> Guarantee:
        from distprivacy.composition import (
            CompositionError,
            compose_gaussian,
            compose_guarantees,
        )

        if not entries:
            raise CompositionError("nothing to compose")
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
            return compose_gaussian(model, releases, delta=d, convention=convention)
        if len(entries) == 1:
            return entries[0].guarantee
        if all(e.guarantee.holds_for_every_input for e in entries):
            return compose_guarantees([e.guarantee for e in entries])
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
