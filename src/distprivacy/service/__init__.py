"""``distprivacy serve``: a release service that alone holds the ledger of secrets, its keys
and the registered data; stewards and analysts reach it over HTTP with a token each
(docs/serve.md).

* :mod:`.client` — :class:`Client` (standard library only: importable without the ``serve``
  extra), the client the command line and the library use;
* :mod:`.core` — the operations and who may do them, on the public ledger API;
* :mod:`.store`, :mod:`.tokens` — the service's database, token hashes and the steward's
  signing key at rest;
* :mod:`.app`, :mod:`.pages`, :mod:`.openapi` — the ASGI application (Starlette, Jinja2:
  ``pip install 'distprivacy[serve]'``).
"""

from __future__ import annotations

from distprivacy.service.client import Client, ServiceRefusedError

__all__ = ["Client", "ServiceRefusedError"]
