"""The ASGI application of ``distprivacy serve`` (Starlette): the JSON API under ``/api``, the
web pages (:mod:`.pages`), request size limits, security headers and one-line errors.

Every refusal is ``{"error": "…"}`` with its HTTP status on the API, a page with the message on
the web pages; an unexpected failure is a 500 with a fixed line (the traceback goes to the
server's log only). Starlette, uvicorn, Jinja2 and python-multipart come with the ``serve``
extra: ``pip install 'distprivacy[serve]'``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from distprivacy.exceptions import MissingExtraError

try:
    import jinja2  # noqa: F401  (the pages' templates)
    import multipart  # noqa: F401  (forms and uploads)
    import starlette  # noqa: F401
except ModuleNotFoundError as _e:  # pragma: no cover - the serve extra installs them
    raise MissingExtraError("distprivacy serve", _e.name or "starlette") from None

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from distprivacy.service.chain import ChainError
from distprivacy.service.core import MAX_JSON, Principal, Service, ServiceError
from distprivacy.service.openapi import OPENAPI

log = logging.getLogger("distprivacy.serve")

#: The Content-Security-Policy of every response: nothing inline, nothing from elsewhere.
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
#: Paths whose bodies may be uploads (files), up to ``--max-upload`` bytes.
UPLOAD_PATHS = (
    "/api/uploads",
    "/api/plans",
    "/steward/datasets",
    "/steward/plans",
    "/steward/secrets",
)


class BodyTooLargeError(Exception):
    """A request body over its limit (raised while it is read)."""


class BodyTimeoutError(Exception):
    """A request body that did not arrive within the limit (raised while it is read)."""


#: The longest a request's body may take to arrive, in seconds (``serve --body-timeout``): a
#: client that opens a request and then trickles its body (or none) holds a connection and a
#: worker for at most this long.
BODY_TIMEOUT = 60.0


class Guard:
    """ASGI middleware: size limits (413 before reading when Content-Length says so, else as
    soon as the body passes the limit), a time limit on the body (408 when it has not all
    arrived ``body_timeout`` seconds after the first read) and the security headers on every
    response."""

    def __init__(self, app: Any, max_upload: int, body_timeout: float = BODY_TIMEOUT) -> None:
        self.app = app
        self.max_upload = max_upload
        self.body_timeout = float(body_timeout)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        limit = self.max_upload if path.startswith(UPLOAD_PATHS) else MAX_JSON
        length = None
        for k, v in scope.get("headers", []):
            if k == b"content-length":
                try:
                    length = int(v)
                except ValueError:
                    length = -1

        async def send_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in _HEADERS if k not in names]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        if length is not None and (length < 0 or length > limit):
            status = 400 if length < 0 else 413
            why = "a bad Content-Length" if length < 0 else f"the body is larger than {limit} bytes"
            await _raw_error(send_headers, status, why)
            return
        seen, done, deadline = 0, False, None

        async def counted() -> dict[str, Any]:
            nonlocal seen, done, deadline
            if done:  # after the body: waiting for a disconnect is not bounded here
                return await receive()
            loop = asyncio.get_running_loop()
            deadline = deadline or loop.time() + self.body_timeout
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                raise BodyTimeoutError(
                    f"the request body did not arrive within {self.body_timeout:g} s"
                ) from None
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLargeError(f"the body is larger than {limit} bytes")
                done = not message.get("more_body", False)
            return message

        await self.app(scope, counted, send_headers)


async def _raw_error(send: Any, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": " ".join(str(message).split())}, status_code=status)


def _is_api(request: Request) -> bool:
    return request.url.path.startswith("/api")


def _svc(request: Request) -> Service:
    return request.app.state.service


async def _principal(request: Request) -> Principal:
    auth = request.headers.get("authorization", "")
    scheme, _, token = auth.partition(" ")
    if not auth or scheme.lower() != "bearer" or not token.strip():
        raise ServiceError(401, "a token is required: Authorization: Bearer TOKEN")
    return await run_in_threadpool(_svc(request).from_token, token.strip())


async def _json(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        raise ServiceError(400, "the request needs a JSON object body")
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise ServiceError(400, "the body is not valid JSON") from None
    except RecursionError:
        raise ServiceError(400, "the body's JSON is nested too deeply") from None
    if not isinstance(body, dict):
        raise ServiceError(400, "the body must be a JSON object")
    return body


def _fields(
    body: dict[str, Any], required: tuple[str, ...], optional: tuple[str, ...] = ()
) -> None:
    unknown = sorted(set(body) - set(required) - set(optional))
    if unknown:
        raise ServiceError(
            400,
            f"unknown field(s) {', '.join(map(repr, unknown))[:200]}; "
            f"known: {', '.join(required + optional)}",
        )
    missing = [k for k in required if k not in body]
    if missing:
        raise ServiceError(400, f"missing field(s): {', '.join(missing)}")


def _api(handler: Any, *, body: bool = False) -> Any:
    """An API endpoint: authenticate, parse, run the service's (blocking) call in a thread."""

    async def endpoint(request: Request) -> Response:
        p = await _principal(request)
        args = dict(request.path_params)
        if body:
            args["body"] = await _json(request)
        status, out = await run_in_threadpool(handler, _svc(request), p, **args)
        return JSONResponse(out, status_code=status)

    return endpoint


# -- the API's handlers (service, principal, path parameters, body) -> (status, JSON) ----------


def me(s: Service, p: Principal) -> tuple[int, Any]:
    return 200, {
        "user": p.name,
        "role": p.role,
        "secrets": list(p.secrets),
        "steward_key": s.steward_fingerprint,
    }


def overview(s: Service, p: Principal) -> tuple[int, Any]:
    return 200, s.overview(p)


def secrets_list(s: Service, p: Principal) -> tuple[int, Any]:
    return 200, s.overview(p)["secrets"]


def secret_add(s: Service, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
    s.require(p, "steward")
    _fields(body, ("name", "protect", "population", "budget"))
    return 201, s.add_secret(p, body["name"], body["protect"], body["population"], body["budget"])


def secret_ledger(s: Service, p: Principal, name: str) -> tuple[int, Any]:
    return 200, s.secret_ledger(p, name)


def secret_budget(s: Service, p: Principal, name: str, body: dict[str, Any]) -> tuple[int, Any]:
    s.require(p, "steward")
    _fields(body, ("budget", "reason"))
    return 200, s.set_budget(p, name, body["budget"], body["reason"])


def datasets_list(s: Service, p: Principal) -> tuple[int, Any]:
    return 200, s.overview(p)["datasets"]


def dataset_add(s: Service, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
    s.require(p, "steward")
    _fields(body, ("name", "secret", "path"), ("same_records_as", "independent", "confirm_overlap"))
    return 201, s.register(
        p,
        body["name"],
        body["secret"],
        body["path"],
        same_records_as=body.get("same_records_as"),
        independent=body.get("independent", False),
        confirm_overlap=body.get("confirm_overlap"),
    )


def plans_list(s: Service, p: Principal) -> tuple[int, Any]:
    out: dict[str, Any] = {"approved": s.overview(p)["plans"]}
    if p.role == "steward":
        out["pending"] = s.pending(p)
    return 200, out


def plan_upload(s: Service, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
    s.require(p, "steward")
    _fields(body, ("secret", "plan"))
    return 201, s.upload_plan(p, body["secret"], body["plan"])


def plan_review(s: Service, p: Principal, pid: str) -> tuple[int, Any]:
    return 200, s.review(p, pid)


def plan_approve(s: Service, p: Principal, pid: str, body: dict[str, Any]) -> tuple[int, Any]:
    s.require(p, "steward")
    _fields(body, ("name",))
    return 200, s.approve(p, pid, body["name"])


def release_make(s: Service, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
    _fields(body, ("dataset", "plan"))
    return 201, s.release(p, body["dataset"], body["plan"])


def releases_list(s: Service, p: Principal) -> tuple[int, Any]:
    return 200, s.releases(p)


def release_one(s: Service, p: Principal, rid: str) -> tuple[int, Any]:
    return 200, s.one_release(p, rid)


def users_list(s: Service, p: Principal) -> tuple[int, Any]:
    return 200, s.users(p)


def user_add(s: Service, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
    s.require(p, "steward")
    _fields(body, ("name", "role"), ("secrets",))
    return 201, s.add_user(p, body["name"], body["role"], body.get("secrets", []))


def token_revoke(s: Service, p: Principal, tid: str) -> tuple[int, Any]:
    return 200, s.revoke(p, tid)


def events_list(s: Service, p: Principal) -> tuple[int, Any]:
    return 200, s.events(p)


def audit_verify(s: Service, p: Principal) -> tuple[int, Any]:
    return 200, s.verify_audit(p)


async def upload(request: Request) -> Response:
    """``POST /api/uploads?name=FILE.csv`` with the file as the raw body (steward)."""
    p = await _principal(request)
    _svc(request).require(p, "steward")
    data = await request.body()
    name = request.query_params.get("name", "")
    rel = await run_in_threadpool(_svc(request).save_upload, name, data)
    await run_in_threadpool(_svc(request).store.audit, p.name, p.role, "upload", rel, "done", {})
    return JSONResponse({"path": rel}, status_code=201)


async def openapi(request: Request) -> Response:
    return JSONResponse(OPENAPI)


API_ROUTES = [
    Route("/openapi.json", openapi, methods=["GET"]),
    Route("/me", _api(me), methods=["GET"]),
    Route("/overview", _api(overview), methods=["GET"]),
    Route("/secrets", _api(secrets_list), methods=["GET"]),
    Route("/secrets", _api(secret_add, body=True), methods=["POST"]),
    Route("/secrets/{name}/ledger", _api(secret_ledger), methods=["GET"]),
    Route("/secrets/{name}/budget", _api(secret_budget, body=True), methods=["POST"]),
    Route("/datasets", _api(datasets_list), methods=["GET"]),
    Route("/datasets", _api(dataset_add, body=True), methods=["POST"]),
    Route("/uploads", upload, methods=["POST"]),
    Route("/plans", _api(plans_list), methods=["GET"]),
    Route("/plans", _api(plan_upload, body=True), methods=["POST"]),
    Route("/plans/pending/{pid}", _api(plan_review), methods=["GET"]),
    Route("/plans/pending/{pid}/approve", _api(plan_approve, body=True), methods=["POST"]),
    Route("/releases", _api(release_make, body=True), methods=["POST"]),
    Route("/releases", _api(releases_list), methods=["GET"]),
    Route("/releases/{rid}", _api(release_one), methods=["GET"]),
    Route("/users", _api(users_list), methods=["GET"]),
    Route("/users", _api(user_add, body=True), methods=["POST"]),
    Route("/tokens/{tid}/revoke", _api(token_revoke), methods=["POST"]),
    Route("/events", _api(events_list), methods=["GET"]),
    Route("/audit/verify", _api(audit_verify), methods=["GET"]),
]


def create_app(service: Service, body_timeout: float = BODY_TIMEOUT) -> Any:
    """The ASGI application serving ``service`` (wrapped in :class:`Guard`; ``body_timeout``:
    the longest a request's body may take to arrive, in seconds)."""
    from distprivacy.service import pages

    async def on_service_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ServiceError)
        if _is_api(request):
            resp = error(exc.status, exc.message)
            if exc.status == 401:
                resp.headers["www-authenticate"] = "Bearer"
            return resp
        return await pages.error_page(request, exc.status, exc.message)

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        words = {404: "not found", 405: "method not allowed"}
        message = words.get(exc.status_code, str(exc.detail))
        if _is_api(request) or exc.status_code == 405:
            return error(exc.status_code, message)
        return await pages.error_page(request, exc.status_code, message)

    async def on_chain(request: Request, exc: Exception) -> Response:
        # the audit log failed verification during an operation: refused, as every request
        return await on_service_error(request, ServiceError(503, str(exc)))

    async def on_too_large(request: Request, exc: Exception) -> Response:
        resp = error(413, str(exc))
        resp.headers["connection"] = "close"
        return resp

    async def on_slow_body(request: Request, exc: Exception) -> Response:
        resp = error(408, str(exc))
        resp.headers["connection"] = "close"
        return resp

    async def on_bad_request(request: Request, exc: Exception) -> Response:
        # a malformed multipart or form body, an unreadable request
        return error(400, "the request body could not be read")

    async def on_crash(request: Request, exc: Exception) -> Response:
        log.exception("unexpected failure on %s %s", request.method, request.url.path)
        return error(500, "internal error: the service logged it; nothing was released")

    from starlette.formparsers import MultiPartException

    app = Starlette(
        routes=[Mount("/api", routes=API_ROUTES), *pages.ROUTES],
        exception_handlers={
            ServiceError: on_service_error,
            ChainError: on_chain,
            HTTPException: on_http,
            BodyTooLargeError: on_too_large,
            BodyTimeoutError: on_slow_body,
            MultiPartException: on_bad_request,
            UnicodeDecodeError: on_bad_request,
            Exception: on_crash,
        },
    )
    app.state.service = service
    return Guard(app, service.max_upload, body_timeout)
