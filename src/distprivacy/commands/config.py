"""``--config FILE.toml``: every option of a command from a TOML file, validated strictly.

The file's keys are the command's option names (``epsilon``, ``subset-size`` or ``subset_size``,
``protect``, ``mechanism``, …); a table named after the command (``[release]``) may hold them
instead. Unknown keys are refused with the list of known ones; each value goes through the
option's own type (so ``epsilon = -1`` is refused exactly as ``--epsilon -1``). Options given on
the command line win over the file. Example (``release.toml``)::

    [release]
    protect = "income==>50K"
    values = "0.45,0.55"
    subset-size = 100
    mechanism = "DauM-G"
    epsilon = 0.5
    plan = "plan.json"
    target = "records.csv"
    ledger = "ledger.db"
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from distprivacy.commands._files import CONFIG_KEY
from distprivacy.exceptions import DistPrivacyError

#: Largest configuration file read (bytes).
MAX_CONFIG_BYTES = 1 * 2**20
#: Deepest nesting of brackets/tables read (checked on the text before parsing).
MAX_CONFIG_DEPTH = 16
#: Options that are command-line flags only: a file never turns them on (each shows exact
#: statistics: a release without noise, the fitted model's moments).
FLAG_ONLY = frozenset({"allow_exact", "include_model"})


def _depth(text: str) -> int:
    """The deepest nesting of [ and { in ``text`` (an over-estimate: strings included)."""
    depth = best = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            best = max(best, depth)
        elif ch in "]}":
            depth = max(depth - 1, 0)
    return best


def _check_type(param: click.Parameter, key: str, value: Any, name: str) -> None:
    """TOML values are typed strictly: a flag takes a boolean, a number option a number."""
    if isinstance(param, click.Option) and param.is_flag:
        if not isinstance(value, bool):
            raise DistPrivacyError(
                f"--config: {key} in {name!r} is a flag: write true or false, not {value!r}"
            )
        return
    if param.multiple and isinstance(value, list):  # each item as one occurrence
        for item in value:
            if isinstance(item, list | dict):
                raise DistPrivacyError(f"--config: {key} in {name!r} must be a flat list")
            _check_one(param, key, item, name)
        return
    _check_one(param, key, value, name)


def _check_one(param: click.Parameter, key: str, value: Any, name: str) -> None:
    kind = getattr(param.type, "name", "")
    if isinstance(value, bool) and kind != "boolean":
        raise DistPrivacyError(f"--config: {key} in {name!r} takes a value, not {value!r}")
    if kind in ("integer", "float") and not isinstance(value, int | float):
        raise DistPrivacyError(
            f"--config: {key} in {name!r} takes a number, not the text {value!r}"
        )
    # A path or a text option takes TOML text (in quotes): click would hand a number to
    # os.fspath or a parser as it is (`report = 5` was a TypeError inside click).
    if kind in ("path", "file", "text", "choice") and not isinstance(value, str):
        what = "a path" if kind in ("path", "file") else "text"
        raise DistPrivacyError(
            f'--config: {key} in {name!r} takes {what} in quotes ({key} = "…"), not '
            f"{type(value).__name__} {value!r}"
        )


def _names(command: click.Command) -> dict[str, click.Parameter]:
    """Every spelling a file may use for each option → the parameter."""
    out: dict[str, click.Parameter] = {}
    for p in command.params:
        if p.name in (None, "config") or not isinstance(p, click.Option):
            continue
        spellings = {p.name, p.name.replace("_", "-").rstrip("-")}
        for o in p.opts:
            if o.startswith("--"):
                spellings.add(o[2:])
                spellings.add(o[2:].replace("-", "_"))
        for s in spellings:
            out[s] = p
    return out


def read_config(path: str | Path, command: click.Command) -> dict[str, Any]:
    """The file's settings as ``{parameter name: value}`` for ``command`` (strict)."""
    if not isinstance(path, str | Path):
        raise DistPrivacyError(f"--config takes a file path, got {type(path).__name__}")
    p = Path(path)
    if not isinstance(command, click.Command):
        raise DistPrivacyError(f"read_config takes a click command, got {type(command).__name__}")
    name = command.name or ""
    raw = _section(_load(p), name, p)
    known = _names(command)
    unknown = sorted(k for k in raw if k not in known)
    if unknown:
        listed = sorted({o[2:] for q in set(known.values()) for o in q.opts if o.startswith("--")})
        raise DistPrivacyError(
            f"--config: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} in "
            f"{p.name!r} for `{name}`; known: {', '.join(listed)}"
        )
    settings: dict[str, Any] = {}
    for key, value in raw.items():
        param = known[key]
        _allowed(param, key, value, p)
        if param.name in settings:
            raise DistPrivacyError(f"--config: {p.name!r} sets {key} twice (two spellings)")
        settings[param.name] = _setting(param, key, value, p)  # type: ignore[index]
    return settings


def _load(p: Path) -> dict[str, Any]:
    """The TOML of ``p``: a regular file of at most 1 MiB, nested no deeper than a release
    file's, valid TOML."""
    if not p.is_file():
        raise DistPrivacyError(f"--config: {str(p)!r} does not exist or is not a regular file")
    if p.stat().st_size > MAX_CONFIG_BYTES:
        raise DistPrivacyError(f"--config: {p.name!r} is larger than 1 MiB")
    try:
        text = p.read_text(encoding="utf-8")
        if _depth(text) > MAX_CONFIG_DEPTH:
            raise DistPrivacyError(
                f"--config: {p.name!r} nests deeper than {MAX_CONFIG_DEPTH} levels; a release "
                "file is a flat list of options"
            )
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise DistPrivacyError(f"--config: {p.name!r} is not valid TOML ({e})") from None


def _section(raw: dict[str, Any], name: str, p: Path) -> dict[str, Any]:
    """The command's settings: the ``[name]`` table, alone, or the whole file."""
    if name in raw and isinstance(raw[name], dict):
        others = sorted(k for k in raw if k != name)
        if others:
            raise DistPrivacyError(
                f"--config: {p.name!r} has a [{name}] table and other keys ({', '.join(others)});"
                f" put every setting in [{name}]"
            )
        return raw[name]
    return raw


def _allowed(param: click.Parameter, key: str, value: Any, p: Path) -> None:
    """Refuse a flag-only option, and a table where a value belongs."""
    if param.name in FLAG_ONLY:
        raise DistPrivacyError(
            f"--config: {key} cannot come from a file: showing exact statistics is a "
            f"command-line flag only (--{key.replace('_', '-')}), typed each time"
        )
    if isinstance(value, dict):
        raise DistPrivacyError(f"--config: {key} in {p.name!r} must be a value, not a table")


def _setting(param: click.Parameter, key: str, value: Any, p: Path) -> Any:
    """One setting's value for ``param``, checked (a list of a single-valued option joined
    with commas, as typed on the command line)."""
    items = value if isinstance(value, list) else [value]
    if any(isinstance(v, str) and "\0" in v for v in items):  # no path or name holds one
        raise DistPrivacyError(f"--config: {key} in {p.name!r} holds a NUL character")
    if isinstance(value, list) and not param.multiple:
        if any(isinstance(v, list | dict) for v in value):
            raise DistPrivacyError(f"--config: {key} in {p.name!r} must be a flat list")
        return ",".join(str(v) for v in value)
    _check_type(param, key, value, p.name)
    return value


def _apply(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None or ctx.resilient_parsing:
        return value
    settings = read_config(value, ctx.command)
    ctx.meta[CONFIG_KEY] = value  # an input: no output may write over it (._files)
    # Through click's own machinery: a value in default_map is converted and validated by the
    # option's type exactly as if it had been typed, and the command line still wins.
    ctx.default_map = {**(ctx.default_map or {}), **settings}
    return value


def config_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """The ``--config FILE.toml`` option (eager: read before the other options)."""
    return click.option(
        "--config",
        type=click.Path(dir_okay=False),
        default=None,
        is_eager=True,
        expose_value=False,
        callback=_apply,
        help="Take the options from a TOML file (keys: the option names; unknown keys refused). "
        "Options on the command line win.",
    )(f)
