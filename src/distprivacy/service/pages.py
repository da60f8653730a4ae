"""The web pages of ``distprivacy serve``: server-rendered Jinja2 templates (autoescaped), no
script, no external asset, one stylesheet; a session cookie (HttpOnly, SameSite=Strict) and a
CSRF token in every form, the login form included (docs/serve.md)."""

from __future__ import annotations

import secrets as _secrets
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from distprivacy.service import tokens as tk
from distprivacy.service.core import Principal, Service, ServiceError

COOKIE = "dps_session"
LOGIN_COOKIE = "dps_login"

_env = Environment(
    loader=PackageLoader("distprivacy.service", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)


def _fmt(x: Any, digits: int = 4) -> str:
    if isinstance(x, bool) or x is None:
        return "—" if x is None else str(x)
    if isinstance(x, int | float):
        return f"{x:.{digits}g}"
    return str(x)


_env.filters["num"] = _fmt


def _svc(request: Request) -> Service:
    return request.app.state.service


def _render(template: str, code: int = 200, **ctx: Any) -> HTMLResponse:
    return HTMLResponse(_env.get_template(template).render(**ctx), status_code=code)


def _cookie(resp: Response, request: Request, name: str, value: str, max_age: int) -> None:
    resp.set_cookie(
        name,
        value,
        max_age=max_age,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


async def error_page(request: Request, status: int, message: str) -> Response:
    p = None
    sid = request.cookies.get(COOKIE)
    if sid:
        try:
            p = await run_in_threadpool(_svc(request).from_session, sid)
        except ServiceError:
            p = None
    if status == 401 and request.method == "GET":
        return RedirectResponse("/login", status_code=303)
    return _render("error.html", status, user=p, status=status, message=message)


async def _who(request: Request) -> Principal:
    sid = request.cookies.get(COOKIE)
    if not sid:
        raise ServiceError(401, "log in first")
    return await run_in_threadpool(_svc(request).from_session, sid)


async def _form(request: Request, p: Principal) -> Any:
    form = await request.form()
    given = form.get("csrf")
    if not isinstance(given, str) or not p.csrf or not tk.same(given, p.csrf):
        raise ServiceError(403, "this form is stale or was not sent by this site (CSRF check)")
    return form


def _text(form: Any, key: str) -> str:
    v = form.get(key)
    return v.strip() if isinstance(v, str) else ""


async def _file(form: Any, key: str) -> tuple[str, bytes] | None:
    f = form.get(key)
    if f is None or isinstance(f, str) or not getattr(f, "filename", None):
        return None
    return f.filename, await f.read()


# -- pages -------------------------------------------------------------------------------------


async def home(request: Request) -> Response:
    try:
        p = await _who(request)
    except ServiceError:
        return RedirectResponse("/login", status_code=303)
    return RedirectResponse(f"/{p.role}", status_code=303)


async def login_page(request: Request) -> Response:
    nonce = _secrets.token_urlsafe(32)
    resp = _render("login.html", csrf=nonce, user=None)
    _cookie(resp, request, LOGIN_COOKIE, nonce, 600)
    return resp


async def login(request: Request) -> Response:
    form = await request.form()
    nonce = request.cookies.get(LOGIN_COOKIE, "")
    given = form.get("csrf")
    if not nonce or not isinstance(given, str) or not tk.same(given, nonce):
        raise ServiceError(403, "this form is stale or was not sent by this site (CSRF check)")
    token = _text(form, "token")
    try:
        sid, p = await run_in_threadpool(_svc(request).login, token)
    except ServiceError as e:
        new = _secrets.token_urlsafe(32)
        resp = _render("login.html", 401, csrf=new, user=None, error=e.message)
        _cookie(resp, request, LOGIN_COOKIE, new, 600)
        return resp
    resp = RedirectResponse(f"/{p.role}", status_code=303)
    _cookie(resp, request, COOKIE, sid, 8 * 3600)
    resp.delete_cookie(LOGIN_COOKIE, path="/", httponly=True, samesite="strict")
    return resp


async def logout(request: Request) -> Response:
    p = await _who(request)
    await _form(request, p)
    await run_in_threadpool(_svc(request).logout, request.cookies.get(COOKIE, ""))
    resp = RedirectResponse("/login", status_code=303)
    resp.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return resp


def _steward_context(s: Service, p: Principal) -> dict[str, Any]:
    return {
        "user": p,
        "overview": s.overview(p),
        "pending": s.pending(p),
        "events": s.events(p),
        "audit": s.audit_state(p),
        "users": s.users(p),
        "releases": s.releases(p),
    }


async def steward(
    request: Request, notice: str = "", error: str = "", status: int = 200, token: str = ""
) -> Response:
    p = await _who(request)
    s = _svc(request)
    s.require(p, "steward")
    ctx = await run_in_threadpool(_steward_context, s, p)
    return _render("steward.html", status, notice=notice, error=error, new_token=token, **ctx)


async def _steward_action(request: Request, act: Any) -> Response:
    """Run a steward form's action; the dashboard again, with what happened."""
    p = await _who(request)
    s = _svc(request)
    s.require(p, "steward")
    form = await _form(request, p)
    try:
        notice, token = await act(s, p, form)
    except ServiceError as e:
        return await steward(request, error=e.message, status=e.status)
    return await steward(request, notice=notice, token=token)


def _budget(form: Any) -> dict[str, Any]:
    kind = _text(form, "budget_kind")
    value = _text(form, "budget_value")
    if kind == "mu":
        return {"mu": value}
    if kind == "epsilon-delta":
        return {"epsilon": value, "delta": _text(form, "budget_delta")}
    if kind == "accuracy":
        return {"accuracy": value}
    raise ServiceError(400, "choose the budget's kind: μ, (ε, δ) or an attack accuracy")


async def _data_path(s: Service, form: Any, key: str) -> str:
    up = await _file(form, key)
    if up is not None:
        return await run_in_threadpool(s.save_upload, *up)
    return _text(form, key + "_path")


async def add_secret(request: Request) -> Response:
    async def act(s: Service, p: Principal, form: Any) -> tuple[str, str]:
        pop = await _data_path(s, form, "population")
        out = await run_in_threadpool(
            s.add_secret, p, _text(form, "name"), _text(form, "protect"), pop, _budget(form)
        )
        return f"declared secret {out['secret']} ({out['protect']}), budget {out['budget']}", ""

    return await _steward_action(request, act)


async def add_dataset(request: Request) -> Response:
    async def act(s: Service, p: Principal, form: Any) -> tuple[str, str]:
        path = await _data_path(s, form, "file")
        out = await run_in_threadpool(
            lambda: s.register(
                p,
                _text(form, "name"),
                _text(form, "secret"),
                path,
                same_records_as=_text(form, "same_records_as") or None,
                independent=_text(form, "independent") == "yes",
                confirm_overlap=_text(form, "confirm_overlap") or None,
            )
        )
        extra = "; ".join(out["notices"])
        return (
            f"registered {out['dataset']} version {out['version']} under secret "
            f"{out['secret']}: {out['rows']} records" + (f" ({extra})" if extra else "")
        ), ""

    return await _steward_action(request, act)


async def add_plan(request: Request) -> Response:
    async def act(s: Service, p: Principal, form: Any) -> tuple[str, str]:
        up = await _file(form, "plan")
        if up is None:
            raise ServiceError(400, "choose a plan file (made by `distprivacy calibrate --save`)")
        out = await run_in_threadpool(s.upload_plan, p, _text(form, "secret"), up[1])
        return f"plan {out['pending']} awaits your review (below)", ""

    return await _steward_action(request, act)


async def set_budget(request: Request) -> Response:
    async def act(s: Service, p: Principal, form: Any) -> tuple[str, str]:
        out = await run_in_threadpool(
            s.set_budget, p, _text(form, "secret"), _budget(form), _text(form, "reason")
        )
        return f"secret {out['secret']}: budget now {out['budget']} ({out['reason']})", ""

    return await _steward_action(request, act)


async def add_user(request: Request) -> Response:
    async def act(s: Service, p: Principal, form: Any) -> tuple[str, str]:
        secrets = [str(v) for v in form.getlist("secrets")]
        out = await run_in_threadpool(
            s.add_user, p, _text(form, "name"), _text(form, "role"), secrets
        )
        return f"made a token for {out['role']} {out['user']}: copy it now, it is shown once", out[
            "token"
        ]

    return await _steward_action(request, act)


async def revoke(request: Request) -> Response:
    async def act(s: Service, p: Principal, form: Any) -> tuple[str, str]:
        out = await run_in_threadpool(s.revoke, p, request.path_params["tid"])
        return f"revoked token {out['token_id']} of {out['user']}", ""

    return await _steward_action(request, act)


async def review(request: Request, error: str = "", status: int = 200) -> Response:
    p = await _who(request)
    s = _svc(request)
    r = await run_in_threadpool(s.review, p, request.path_params["pid"])
    return _render("review.html", status, user=p, r=r, error=error)


async def approve(request: Request) -> Response:
    p = await _who(request)
    s = _svc(request)
    s.require(p, "steward")
    form = await _form(request, p)
    try:
        out = await run_in_threadpool(s.approve, p, request.path_params["pid"], _text(form, "name"))
    except ServiceError as e:
        if e.status == 404:
            raise
        return await review(request, error=e.message, status=e.status)
    return await steward(request, notice=f"approved plan {out['plan']} for secret {out['secret']}")


async def analyst(
    request: Request, notice: str = "", error: str = "", status: int = 200, result: Any = None
) -> Response:
    p = await _who(request)
    s = _svc(request)
    s.require(p, "analyst")
    ov = await run_in_threadpool(s.overview, p)
    mine = await run_in_threadpool(s.releases, p)
    return _render(
        "analyst.html",
        status,
        user=p,
        overview=ov,
        releases=mine,
        notice=notice,
        error=error,
        result=result,
    )


async def release(request: Request) -> Response:
    p = await _who(request)
    s = _svc(request)
    s.require(p, "analyst")
    form = await _form(request, p)
    try:
        out = await run_in_threadpool(s.release, p, _text(form, "dataset"), _text(form, "plan"))
    except ServiceError as e:
        return await analyst(request, error=e.message, status=e.status)
    return await analyst(
        request,
        notice=f"released {out['dataset']} with plan {out['plan']} (release {out['release_id']})",
        result=out,
    )


async def release_page(request: Request) -> Response:
    p = await _who(request)
    r = await run_in_threadpool(_svc(request).one_release, p, request.path_params["rid"])
    return _render("release.html", user=p, r=r)


_CSS = resources.files("distprivacy.service").joinpath("static", "style.css")


async def stylesheet(request: Request) -> Response:
    return Response(
        _CSS.read_bytes(), media_type="text/css", headers={"cache-control": "public, max-age=3600"}
    )


ROUTES = [
    Route("/", home, methods=["GET"]),
    Route("/login", login_page, methods=["GET"]),
    Route("/login", login, methods=["POST"]),
    Route("/logout", logout, methods=["POST"]),
    Route("/steward", steward, methods=["GET"]),
    Route("/steward/secrets", add_secret, methods=["POST"]),
    Route("/steward/datasets", add_dataset, methods=["POST"]),
    Route("/steward/plans", add_plan, methods=["POST"]),
    Route("/steward/plans/{pid}", review, methods=["GET"]),
    Route("/steward/plans/{pid}/approve", approve, methods=["POST"]),
    Route("/steward/budget", set_budget, methods=["POST"]),
    Route("/steward/users", add_user, methods=["POST"]),
    Route("/steward/tokens/{tid}/revoke", revoke, methods=["POST"]),
    Route("/analyst", analyst, methods=["GET"]),
    Route("/analyst/releases", release, methods=["POST"]),
    Route("/analyst/releases/{rid}", release_page, methods=["GET"]),
    Route("/static/style.css", stylesheet, methods=["GET"]),
]
