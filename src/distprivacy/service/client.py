"""The client of ``distprivacy serve`` (standard library only: it needs no extra).

>>> import distprivacy as dp
>>> client = dp.Client("http://127.0.0.1:8765", token)            # doctest: +SKIP
>>> out = client.release(dataset="wave1", plan="means")           # doctest: +SKIP
>>> out["statistics"], out["cumulative"]["mu"]                    # doctest: +SKIP

A refusal — the budget (HTTP 409, with its exact figures), a token that is missing, revoked or
of the wrong role (401/403), an unknown name (404) — raises :class:`ServiceRefusedError` with the
service's one line and the status.
"""

from __future__ import annotations

import json
import os
import stat
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from distprivacy.exceptions import DistPrivacyError

#: The environment variable holding a token.
TOKEN_ENV = "DISTPRIVACY_TOKEN"


class ServiceRefusedError(DistPrivacyError):
    """The service refused a request: ``status`` is the HTTP status, the message its line."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def read_token(token_file: str | Path | None = None) -> str:
    """The token from ``token_file`` (a regular file readable by its owner only, mode 0600)
    or, without one, from the environment variable ``DISTPRIVACY_TOKEN``."""
    if token_file is not None:
        p = Path(token_file)
        try:
            st = os.stat(p)
        except OSError:
            raise DistPrivacyError(f"the token file {str(p)!r} does not exist") from None
        if not stat.S_ISREG(st.st_mode):
            raise DistPrivacyError(f"the token file {str(p)!r} is not a regular file")
        if st.st_mode & 0o077:
            raise DistPrivacyError(
                f"the token file {str(p)!r} is readable by others (mode "
                f"{stat.S_IMODE(st.st_mode):o}); make it private: chmod 600 {p}"
            )
        token = p.read_text(encoding="utf-8").strip()
    else:
        token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        where = f"the file {str(token_file)!r}" if token_file else f"${TOKEN_ENV}"
        raise DistPrivacyError(f"no token in {where}: the steward makes one for you")
    return token


class Client:
    """A client of one service.

    Parameters
    ----------
    url : str
        The service's address, e.g. ``http://127.0.0.1:8765``.
    token : str or None
        A login token; None reads ``$DISTPRIVACY_TOKEN``.
    timeout : float
        Seconds to wait for an answer.
    """

    def __init__(self, url: str, token: str | None = None, *, timeout: float = 120.0) -> None:
        if not isinstance(url, str) or urllib.parse.urlsplit(url).scheme not in ("http", "https"):
            raise DistPrivacyError(f"the service's URL must be http:// or https://, got {url!r}")
        self.url = url.rstrip("/")
        self.token = token if token is not None else read_token()
        self.timeout = timeout

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """One API call: the decoded JSON answer, or :class:`ServiceRefusedError`."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.url + "/api" + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as e:
            try:
                message = json.loads(e.read().decode("utf-8"))["error"]
            except (ValueError, KeyError, TypeError, UnicodeDecodeError):
                message = f"HTTP {e.code}"
            raise ServiceRefusedError(str(message), e.code) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise DistPrivacyError(f"cannot reach the service at {self.url}: {reason}") from None

    def release(self, dataset: str, plan: str) -> dict[str, Any]:
        """Release the registered ``dataset`` with the approved ``plan``: the noisy
        ``statistics``, this release's ``guarantee``, the secret's ``cumulative`` guarantee
        and ``budget``; recorded in the service's ledger before it was sent."""
        return self.request("POST", "/releases", {"dataset": dataset, "plan": plan})

    def releases(self) -> list[dict[str, Any]]:
        """Your releases (a steward: every release)."""
        return self.request("GET", "/releases")

    def plans(self) -> dict[str, Any]:
        """The approved plans you may use."""
        return self.request("GET", "/plans")

    def ledger(self, secret: str) -> dict[str, Any]:
        """A secret's ledger (budget, spending, releases)."""
        return self.request("GET", f"/secrets/{urllib.parse.quote(secret, safe='')}/ledger")

    def me(self) -> dict[str, Any]:
        return self.request("GET", "/me")
