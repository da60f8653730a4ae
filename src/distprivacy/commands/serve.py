"""``distprivacy serve`` (the release service, docs/serve.md) and ``distprivacy release
--server URL`` (a release through it)."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from distprivacy.exceptions import DistPrivacyError


@click.command()
@click.option(
    "--state",
    "state",
    required=True,
    type=click.Path(file_okay=False),
    help="The service's directory (made 0700): the ledger, its key, the users and "
    "tokens, the uploaded data.",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address to listen on (beyond 127.0.0.1, put a TLS proxy in front).",
)
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--data-root",
    "data_root",
    default=None,
    type=click.Path(file_okay=False),
    help="Where registered files live (default STATE/data); a registered path is relative to it.",
)
@click.option(
    "--max-upload",
    "max_upload",
    default=64 * 1024 * 1024,
    show_default=True,
    type=click.IntRange(1024),
    help="The largest upload in bytes.",
)
@click.option(
    "--header-timeout",
    "header_timeout",
    default=10.0,
    show_default=True,
    type=click.FloatRange(0.1, 3600),
    help="The longest a request's line and headers may take to arrive, in seconds (then 408 "
    "and the connection closed).",
)
@click.option(
    "--body-timeout",
    "body_timeout",
    default=60.0,
    show_default=True,
    type=click.FloatRange(0.1, 3600),
    help="The longest a request's body may take to arrive, in seconds (then 408).",
)
@click.option(
    "--max-connections",
    "max_connections",
    default=200,
    show_default=True,
    type=click.IntRange(1),
    help="Connections served at once; beyond, 503 at once (uvicorn's limit_concurrency).",
)
@click.option(
    "--database",
    "database",
    default=None,
    envvar="DISTPRIVACY_DATABASE",
    metavar="URL",
    help="Keep the ledger and the service's tables in PostgreSQL (a URL such as "
    "postgresql://dp@HOST/NAME; the [postgres] extra), so several service processes share "
    "one budget and one set of users; the password from ~/.pgpass or PGPASSWORD, never the "
    "command line. Also $DISTPRIVACY_DATABASE.",
)
def serve(
    state: str,
    host: str,
    port: int,
    data_root: str | None,
    max_upload: int,
    header_timeout: float,
    body_timeout: float,
    max_connections: int,
    database: str | None,
) -> None:
    """Run the release service: it alone holds the ledger, its keys and the registered data;
    stewards and analysts log in with tokens (the steward's first one is printed once)."""
    from distprivacy.exceptions import MissingExtraError

    try:
        import uvicorn
    except ModuleNotFoundError:
        raise MissingExtraError("distprivacy serve", "uvicorn") from None
    import socket

    from distprivacy.service.app import create_app
    from distprivacy.service.core import Service, ServiceError
    from distprivacy.service.transport import protocol_class

    try:  # a port in use is one line, before anything is created
        with socket.create_server((host, port)):
            pass
    except OSError as e:
        why = os.strerror(e.errno) if e.errno else str(e)
        raise DistPrivacyError(f"cannot listen on {host}:{port}: {why}") from None
    try:
        svc, first = Service.open(state, data_root, max_upload, _database(database))
    except ServiceError as e:
        raise DistPrivacyError(e.message) from None
    url = f"http://{host}:{port}"
    if first is not None:
        click.echo(f"the steward's first login token (shown once; keep it secret): {first}")
        click.echo(f"steward key fingerprint {svc.steward_fingerprint}: keep it elsewhere")
    click.echo(f"serving {svc.state} at {url} (log in at {url}/login; API at {url}/api)", err=True)
    uvicorn.run(
        create_app(svc, body_timeout),
        host=host,
        port=port,
        log_level="warning",
        timeout_keep_alive=5,
        limit_concurrency=max_connections,
        http=protocol_class(header_timeout),
        server_header=False,
        date_header=False,
    )


def _database(url: str | None) -> str | None:
    """``--database``: a PostgreSQL URL, checked before anything is created."""
    if url is None:
        return None
    from distprivacy.postgres import is_postgres_url

    if not is_postgres_url(url):
        raise DistPrivacyError(
            f"--database must be a PostgreSQL URL such as postgresql://dp@127.0.0.1:5432/ledger, "
            f"got {url!r:.80}"
        )
    return url


def release_through_server(
    server: str, dataset: str | None, plan: str | None, token_file: str | None, as_json: bool
) -> None:
    """``distprivacy release --server URL --dataset NAME --plan NAME``: the token from
    ``--token-file`` (0600) or ``$DISTPRIVACY_TOKEN``; prints the release, or fails in one line
    with the service's refusal (exit 2)."""
    from distprivacy.service.client import Client, read_token

    if not dataset or not plan:
        raise DistPrivacyError(
            "a release through a service names both: --server URL --dataset NAME --plan NAME"
        )
    out = Client(server, read_token(token_file)).release(dataset=dataset, plan=plan)
    if as_json:
        click.echo(json.dumps(out, indent=2, sort_keys=True))
        return
    click.echo(_describe(out))


def _describe(out: dict[str, Any]) -> str:
    lines = [
        f"Release {out['release_id']} of {out['dataset']} (version {out['dataset_version']}) "
        f"with approved plan {out['plan']} ({out['mechanism']}), recorded by the service:"
    ]
    width = max((len(k) for k in out["statistics"]), default=0)
    lines += [f"  {k:<{width}}  {v:.6g}" for k, v in out["statistics"].items()]
    lines.append(f"This release: {out['guarantee_text']}")
    lines.append(
        f"Secret {out['secret']} (budget {out['budget']}) now has "
        f"{out['releases_of_secret']} release(s): {out['cumulative_text']}"
    )
    return "\n".join(lines)
