"""Verifying, backing up and identifying releases for a ledger (methods of
:class:`distprivacy.ledger.Ledger`, kept apart to keep that module small)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from distprivacy._json import jsonable, number
from distprivacy.guarantee import Guarantee
from distprivacy.ledger._anchor import anchor_path
from distprivacy.ledger._budget import (
    budget_refusal,
    budget_text,
    budget_to_dict,
    composer_delta,
    report_delta,
)
from distprivacy.ledger._chain import (
    FIELDS,
    VerifyReport,
    private_umask,
    same_guarantee,
    sql_error,
    unbounded_guarantee,
)
from distprivacy.ledger._compose import plan_composer
from distprivacy.ledger._entry import (
    Composer,
    LedgerEntry,
    LedgerError,
    parse_sketch_field,
)
from distprivacy.ledger._identity import read_identity
from distprivacy.ledger._keys import decrypt, key_path, subkey
from distprivacy.targets import EpsDelta

#: Estimated Jaccard similarity of two targets' rows from which a release is flagged as a
#: near-duplicate of an earlier released dataset (the sketch's standard error is ≈ 0.044).
NEAR_DUPLICATE = 0.5

if TYPE_CHECKING:
    from collections.abc import Sequence

    from distprivacy.ledger import Ledger


def verify_ledger(ledger: Ledger, compose: Composer | None = None) -> VerifyReport:
    """Recompute the chain and the head, then every row's guarantee from its own plan and
    every running total from the rows before it (``compose``, default
    :func:`plan_composer`). Returns a :class:`VerifyReport` naming the first bad row."""
    report, rows = ledger._verified()
    if not report.ok:
        return report
    given = compose
    if compose is None and ledger.read_only:
        compose = plan_composer(at_delta=composer_delta(ledger.budget))
    seen: dict[tuple[str, str], list[LedgerEntry]] = {}
    for r in rows:
        rid = int(r[0])
        try:
            e = ledger._entry(r)
        except LedgerError as exc:
            return replace(report, ok=False, first_bad=rid, reason=str(exc))
        if e.plan is not None:
            from distprivacy.mechanisms.plans import Plan, PlanError  # (only with releases)

            try:
                plan = Plan.from_dict(e.plan, f"the plan of release {rid}")
            except PlanError as exc:
                return replace(report, ok=False, first_bad=rid, reason=str(exc))
            if plan.guarantee != e.guarantee:
                why = "its guarantee is not the one its own plan gives"
                return replace(report, ok=False, first_bad=rid, reason=why)
        if not ledger.read_only:
            events = int(r[len(ledger._fields) - 1])
            why = _registered(ledger, e, events)
            if why is not None:
                return replace(report, ok=False, first_bad=rid, reason=why)
            # The composer of the release: its secret's budget as the events then set it.
            compose = given or secret_composer(ledger, ledger.registry.events[:events])
        # Schema 3: every release under a secret composes (whatever its dataset).
        group_key = (e.property, "") if not ledger.read_only else (e.fingerprint, e.property)
        group = seen.setdefault(group_key, [])
        group.append(e)
        if e.unbounded or any(x.unbounded for x in group):
            continue
        try:
            g = compose(group)
        except Exception:
            continue
        c = e.cumulative
        if c is None or not same_guarantee(g, c):
            why = (
                f"its running total (μ = {getattr(c, 'mu', None)}) is not the composition "
                f"of the releases so far (μ = {g.mu:.6g})"
            )
            return replace(report, ok=False, first_bad=rid, reason=why)
    return report


def _registered(ledger: Ledger, e: LedgerEntry, events: int) -> str | None:
    """Why a schema-3 release is not one the steward's events allowed when it was recorded
    (its secret, dataset and approved plan), or None."""
    from distprivacy.ledger._registry import Registry

    reg = Registry.from_events(ledger.registry.events[:events])
    secret = e.property.removeprefix("secret:")
    if secret not in reg.secrets:
        return f"it names secret {secret!r}, which the steward had not declared"
    try:
        d = reg.version(e.fingerprint)
    except LedgerError:
        return f"it names dataset {e.fingerprint!r}, which the steward had not registered"
    ok = any(p.secret == secret and p.digest == e.plan_digest for p in reg.plans.values())
    if d.secret != secret or not ok:
        return "its dataset or plan was not approved for its secret when it was recorded"
    return None


def secret_composer(ledger: Ledger, events: Sequence[Any] | None = None) -> Composer:
    """The composer a schema-3 ledger's releases were recorded with: per secret, at its
    budget's δ (as ``events`` set it; default: all of them), with the datasets' measured
    shared records and a refit on the secret's population
    (:func:`distprivacy.ledger._release.release_registered`)."""
    from distprivacy.ledger._registry import Registry

    reg = ledger.registry if events is None else Registry.from_events(events)

    def compose(entries: list[LedgerEntry]) -> Guarantee:
        from distprivacy.ledger._release import population_refit
        from distprivacy.mechanisms.plans import Plan

        last = entries[-1]
        secret = reg.secret(last.property.removeprefix("secret:"))
        plan = Plan.from_dict(last.plan or {}, "a release's plan")
        n = int(plan.n or 1)

        def shared(a: str, b: str) -> float:
            return min(1.0, reg.shared(a, b) / n)

        inner = plan_composer(
            at_delta=composer_delta(secret.budget),
            fit=population_refit(plan, secret),
            shared=shared,
        )
        return inner(entries)

    return compose


def refuse_directory_name(path: str | Path, what: str, example: str) -> None:
    """A new ledger file (or backup) at a path naming a directory (``new/``, ``new/.``) is
    refused: :class:`~pathlib.Path` would drop the slash and create a file ``new``."""
    from distprivacy.outputs import names_a_directory

    if names_a_directory(path):
        raise LedgerError(
            f"{str(path)!r} names a directory (it ends with a path separator, . or ..); give "
            f"{what} a file path, e.g. {str(Path(path) / example)!r}"
        )


def backup_ledger(ledger: Ledger, out: str | Path, *, force: bool = False) -> Path:
    """A consistent copy of the live ledger (SQLite's online backup API, WAL content
    included) at ``out``, with its key at ``<out>.key`` and its anchor at ``<out>.anchor``
    (:mod:`._anchor`; read before the copy, so never newer than it), all 0600; refuses
    existing files. Copying the main file alone while the ledger is in use can miss releases
    that are still in its -wal file. Restoring the three together rolls the ledger back to
    the copy: the anchor protects against restoring the ledger alone.

    The ledger is verified first (:func:`verify_ledger`): one that fails is not copied (a
    backup passes for a good ledger), unless ``force`` asks for a copy of the broken ledger
    for forensics — then a :class:`~distprivacy.exceptions.DistPrivacyWarning` says so. A
    failed copy removes what it created (and only that), and says why in one line."""
    if not isinstance(out, str | Path):
        raise LedgerError(f"a backup is a file path, got {type(out).__name__}")
    if not isinstance(force, bool):
        raise LedgerError(f"force must be True or False, got {force!r}")
    refuse_directory_name(out, "the backup", "ledger-backup.db")
    o = Path(out)
    for target in (o, key_path(o), anchor_path(o)):
        if target.exists() or target.is_symlink():
            raise LedgerError(f"{str(target)!r} already exists; back up to a new file")
    if not o.parent.is_dir():
        raise LedgerError(f"the directory of {str(o)!r} does not exist")
    report = verify_ledger(ledger)
    if not report.ok:
        where = f"at release {report.first_bad}" if report.first_bad else "at its head"
        broken = f"{str(ledger.path)!r} fails verification {where} ({report.reason})"
        if not force:
            raise LedgerError(
                f"{broken}: it is not backed up (a backup must be a ledger that verifies); "
                "to copy it anyway for forensics, add `force=True`"
            )
        import warnings

        from distprivacy.exceptions import DistPrivacyWarning

        warnings.warn(
            f"BROKEN LEDGER COPIED (forced): {broken}; the copy {str(o)!r} is for forensics "
            "only: never restore it or release from it",
            DistPrivacyWarning,
            stacklevel=3,
        )
    created: list[Path] = []
    anchor: bytes | None = None
    try:
        with contextlib.suppress(FileNotFoundError):  # none: a ledger from before anchors
            anchor = anchor_path(ledger.path).read_bytes()
        fd = os.open(o, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        created.append(o)
        os.close(fd)
        with private_umask():
            dst = sqlite3.connect(str(o))
        created += [Path(str(o) + "-wal"), Path(str(o) + "-shm")]
        try:
            ledger._con.backup(dst)
        finally:
            dst.close()
        created.append(key_path(o))
        _copy_private(key_path(ledger.path).read_bytes(), key_path(o))
        if anchor is not None:
            created.append(anchor_path(o))
            _copy_private(anchor, anchor_path(o))
    except (OSError, sqlite3.Error) as exc:
        for t in created:  # only what this backup made; a read-only disk refuses this too
            with contextlib.suppress(OSError):
                t.unlink(missing_ok=True)
        raise sql_error(o, exc, "back up the ledger to", "no backup was made") from None
    return o


def _copy_private(data: bytes, dst: Path) -> None:
    """``data`` into a new file ``dst`` (0600, created exclusively, fsynced)."""
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def entry_for(
    ledger: Ledger,
    plan: Any,
    values: Sequence[float] | np.ndarray,
    target: Any,
    *,
    unbounded: bool = False,
) -> LedgerEntry:
    """The ledger entry of releasing ``values`` of ``target`` (a DataFrame) with ``plan``:
    the dataset's keyed identity and a keyed sketch of its rows, over the ledger's identity
    columns (declared at init, or fixed by its first release as all the columns of that
    release's target; a ledger written before they existed: the columns the release reads),
    and the canonical property key."""
    import pandas as pd

    from distprivacy.fingerprint import canonical_property, release_identity
    from distprivacy.spec import Predicate

    if not isinstance(target, pd.DataFrame):
        raise LedgerError(
            "a ledger keys each release on the dataset it is about: give the target "
            f"records (a table), got {type(target).__name__}"
        )
    if plan.protected_property is None:
        raise LedgerError(
            "this plan names no protected property (a user's model): the ledger cannot "
            "tell which property of which dataset its releases reveal"
        )
    pred = Predicate.parse(plan.protected_property)
    read = [*plan.columns, pred.column]
    missing = [c for c in dict.fromkeys(read) if c not in target.columns]
    if missing:
        raise LedgerError(
            f"the target lacks column {missing[0]!r}: with a ledger the target must hold "
            "the protected property's column too (it identifies the dataset)"
        )
    from distprivacy.ledger._identity import identity_columns

    identity, columns = identity_columns(ledger, target, read)
    k = subkey(ledger.key, "identity")
    prop = canonical_property(pred, target[pred.column], key=k)
    # Column identities of every column of the target, not only the identity columns and the
    # ones read: a later release that rewrites the identity columns (a declared record id)
    # and reads others is still linked to this dataset (._identity.linked_dataset).
    every = [c for c in target.columns if isinstance(c, str)]
    ids = release_identity(target, columns, [*read, *every], pred.column, key=k)
    return LedgerEntry.from_plan(
        plan,
        values,
        fingerprint=ids.identity,
        property=prop.key,
        property_text=prop.text,
        complemented=prop.complemented,
        sketch=ids.sketch,
        unbounded=unbounded,
        identity_columns=identity,
        column_fingerprints=ids.column_identities,
        column_marginals=ids.column_marginals,
        read_columns=tuple(dict.fromkeys(read)),
        read_distinct=max(
            (ids.column_distinct[c] for c in plan.columns if c != pred.column), default=0
        ),
    )


def row_entry(ledger: Ledger, row: Sequence[Any]) -> LedgerEntry:
    """A row as a :class:`LedgerEntry` (the plan decrypted); one line naming the row when
    it is malformed."""
    rid = row[0]
    try:
        (_, time, fp, prop, ptext, comp, digest, mech, stats, g, fam, cov, vals, plan,
         idx, cum, sketch, unb) = row[: len(FIELDS)]  # fmt: skip
        cov_v = None if cov is None else np.array(json.loads(cov), dtype=float)
        rows_sketch, column_fps, column_marg = parse_sketch_field(sketch)
        plan_v = None
        if plan is not None:
            text = decrypt(ledger.key, plan, f"the plan of release {rid}")
            plan_v = json.loads(text.decode("utf-8"))
        return LedgerEntry(
            fingerprint=fp,
            property=prop,
            mechanism=mech,
            statistics=tuple(json.loads(stats)),
            guarantee=Guarantee.from_dict(json.loads(g)),
            values=tuple(number(v) for v in json.loads(vals)),
            noise_family=fam,
            noise_covariance=cov_v,
            plan=plan_v,
            plan_digest=digest,
            statistic_indices=None if idx is None else tuple(json.loads(idx)),
            id=int(rid),
            time=time,
            cumulative=Guarantee.from_dict(json.loads(cum)),
            property_text=str(ptext),
            complemented=bool(comp),
            sketch=rows_sketch,
            column_fingerprints=column_fps,
            column_marginals=column_marg,
            unbounded=bool(unb),
        )
    except LedgerError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise LedgerError(
            f"release {rid} of {str(ledger.path)!r} is malformed ({type(e).__name__}: {e}); "
            "run `distprivacy ledger verify`"
        ) from None


def near_duplicates(entry: LedgerEntry, con: sqlite3.Connection) -> tuple[str, ...]:
    from distprivacy.fingerprint import sketch_similarity

    if not entry.sketch:
        return ()
    rows = con.execute(
        "SELECT id, fingerprint, sketch FROM releases WHERE property = ? AND fingerprint != ?",
        (entry.property, entry.fingerprint),
    ).fetchall()
    best: tuple[float, int] | None = None
    for rid, _, sk in rows:
        try:
            sim = sketch_similarity(entry.sketch, list(parse_sketch_field(sk)[0]))
        except (ValueError, TypeError):
            continue
        if best is None or sim > best[0]:
            best = (sim, int(rid))
    if best is None or best[0] < NEAR_DUPLICATE:
        return ()
    return (
        f"this target shares about {best[0]:.0%} of its records with the dataset of release "
        f"{best[1]} (same property): the ledger counts it as another dataset, but releasing "
        "near-copies of one dataset reveals it as repeated releases would; release the "
        "same records again to have them composed exactly",
    )


def show_ledger(ledger: Ledger, compose: Composer | None = None) -> dict[str, Any]:
    """Plain data: ``budget``, ``releases`` (a list) and ``cumulative`` (a list, one per
    dataset and property: ``mu``, ``epsilon`` at the budget's δ, ``delta``,
    ``max_attack_accuracy``, the theorem and the number of releases). The cumulative
    guarantee is recomputed with ``compose`` (default :func:`plan_composer` at the budget's
    δ: the exact profile, so ε(δ) and δ(ε) are the true figures), or, when that cannot be
    done without the data, the one stored at the last release (``recomputed`` false)."""
    if not ledger.read_only:
        return _show_secrets(ledger, compose)
    entries = ledger.releases()
    groups: dict[tuple[str, str], list[LedgerEntry]] = {}
    for e in entries:
        groups.setdefault((e.fingerprint, e.property), []).append(e)
    budget = ledger.budget
    if compose is None:
        compose = plan_composer(at_delta=composer_delta(budget))
    cumulative = []
    for key, group in groups.items():
        last = group[-1]
        d = report_delta(budget, group)
        recomputed = True
        if any(e.unbounded for e in group):
            g = unbounded_guarantee()
        else:
            try:
                g = compose(group)
            except Exception:
                g, recomputed = last.cumulative, False
        assert g is not None
        eps = g.epsilon_at(d)
        cumulative.append(
            {
                "fingerprint": key[0],
                "property": last.property_text or key[1],
                "releases": len(group),
                "mu": g.mu,
                "epsilon": eps,
                "delta": g.delta_at(eps) if math.isfinite(eps) else 1.0,
                "at_delta": d,
                "delta_at_budget_epsilon": _delta_at_budget(g, budget),
                "max_attack_accuracy": g.max_attack_accuracy,
                "within_budget": budget_refusal(budget, g) is None,
                "theorem": g.theorem,
                "recomputed": recomputed,
                "exhausted_by_exact_release": any(e.unbounded for e in group),
            }
        )
    return jsonable(
        {
            "ledger": str(ledger.path),
            "budget": budget_to_dict(budget),
            "identity_columns": (
                None if (ic := read_identity(ledger._con, ledger.path)) is None else list(ic)
            ),
            "releases": [e.to_dict() for e in entries],
            "cumulative": cumulative,
        }
    )


def _delta_at_budget(g: Guarantee, budget: Any) -> float | None:
    """The cumulative δ at an (ε, δ) budget's ε (None for another budget)."""
    return g.delta_at(budget.epsilon) if isinstance(budget, EpsDelta) else None


_CUMULATIVE_KEYS = (
    "releases", "mu", "epsilon", "delta", "at_delta", "delta_at_budget_epsilon",
    "max_attack_accuracy", "within_budget", "theorem", "recomputed",
)  # fmt: skip


def _dataset_dict(v: Any) -> dict[str, Any]:
    return {
        "name": v.name,
        "version": v.version,
        "rows": v.rows,
        "path": v.path,
        "shared": dict(v.shared),
    }


def _show_secrets(ledger: Ledger, compose: Composer | None) -> dict[str, Any]:
    """:func:`show_ledger` of a ledger of secrets: per secret, its budget, datasets, approved
    plans and the cumulative guarantee of all its releases (recomputed)."""
    entries = ledger.releases()
    reg = ledger.registry
    compose = compose or secret_composer(ledger)
    secrets = []
    for s in reg.secrets.values():
        group = [e for e in entries if e.property == s.key]
        g, recomputed = None, True
        if group:
            try:
                g = compose(group)
            except Exception:
                g, recomputed = group[-1].cumulative, False
        item: dict[str, Any] = {
            "secret": s.name,
            "property": s.property,
            "budget": budget_to_dict(s.budget),
            "budget_text": budget_text(s.budget),
            "population": dict(s.population),
            "datasets": [_dataset_dict(v) for v in reg.versions_of(s.name)],
            "plans": [
                {"name": p.name, **dict(p.summary)}
                for p in reg.plans.values()
                if p.secret == s.name
            ],
            "releases": len(group),
            "recomputed": recomputed,
        }
        if g is not None:
            d = report_delta(s.budget, group)
            eps = g.epsilon_at(d)
            item.update(
                {
                    "mu": g.mu,
                    "epsilon": eps,
                    "delta": g.delta_at(eps) if math.isfinite(eps) else 1.0,
                    "at_delta": d,
                    "delta_at_budget_epsilon": _delta_at_budget(g, s.budget),
                    "max_attack_accuracy": g.max_attack_accuracy,
                    "within_budget": budget_refusal(s.budget, g) is None,
                    "theorem": g.theorem,
                }
            )
        secrets.append(item)
    cumulative = [
        {
            "fingerprint": f"secret:{x['secret']}",
            "secret": x["secret"],
            "property": x["property"],
            "budget": x["budget_text"],
            **{k: x[k] for k in _CUMULATIVE_KEYS},
        }
        for x in secrets
        if "mu" in x
    ]
    return jsonable(
        {
            "ledger": str(ledger.path),
            "schema": ledger.version,
            "cumulative": cumulative,
            "steward": ledger.steward.fingerprint,
            "secrets": secrets,
            "events": [
                {"seq": e.seq, "time": e.time, "kind": e.kind, "subject": e.subject}
                for e in reg.events
            ],
            "releases": [e.to_dict() for e in entries],
        }
    )
