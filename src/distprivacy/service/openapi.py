"""The OpenAPI 3.1 document of the service's JSON API (``GET /api/openapi.json``), written out
so that it needs no framework and says exactly what each role may do."""

from __future__ import annotations

from typing import Any

_ERR = {
    "description": "refused: one line",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}


def _op(
    summary: str,
    role: str,
    ok: int = 200,
    body: str | None = None,
    params: tuple[str, ...] = (),
    errors: tuple[int, ...] = (400, 401, 403),
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": summary,
        "description": f"Role: {role}.",
        "security": [{"bearer": []}],
        "responses": {
            str(ok): {"description": "done", "content": {"application/json": {}}},
            **{str(c): _ERR for c in errors},
        },
    }
    if body:
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{body}"}}},
        }
    if params:
        op["parameters"] = [
            {"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
            for n in params
        ]
    return op


_BUDGET = {
    "oneOf": [
        {"type": "object", "required": ["mu"], "properties": {"mu": {"type": "number"}}},
        {
            "type": "object",
            "required": ["epsilon", "delta"],
            "properties": {"epsilon": {"type": "number"}, "delta": {"type": "number"}},
        },
        {
            "type": "object",
            "required": ["accuracy"],
            "properties": {"accuracy": {"type": "number"}},
        },
    ]
}


def _obj(required: list[str], **props: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "required": required,
        "additionalProperties": False,
        "properties": props,
    }


_S = {"type": "string"}

OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {
        "title": "distprivacy serve",
        "version": "1",
        "description": "Releases of registered datasets with steward-approved plans, each "
        "recorded in the ledger of secrets before it is answered. Errors are "
        '{"error": "one line"} with the HTTP status; 409 is a refusal by the ledger (a '
        "budget, with its exact figures).",
    },
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "schemas": {
            "Error": _obj(["error"], error=_S),
            "Budget": _BUDGET,
            "Release": _obj(["dataset", "plan"], dataset=_S, plan=_S),
            "Secret": _obj(
                ["name", "protect", "population", "budget"],
                name=_S,
                protect=_S,
                population={**_S, "description": "relative to the data root"},
                budget={"$ref": "#/components/schemas/Budget"},
            ),
            "Dataset": _obj(
                ["name", "secret", "path"],
                name=_S,
                secret=_S,
                path=_S,
                same_records_as=_S,
                independent={"type": "boolean"},
                confirm_overlap=_S,
            ),
            "Plan": _obj(
                ["secret", "plan"],
                secret=_S,
                plan={"type": "object", "description": "a `calibrate --save` file"},
            ),
            "Approve": _obj(["name"], name=_S),
            "BudgetChange": _obj(
                ["budget", "reason"], budget={"$ref": "#/components/schemas/Budget"}, reason=_S
            ),
            "User": _obj(
                ["name", "role"],
                name=_S,
                role={"enum": ["steward", "analyst"]},
                secrets={"type": "array", "items": _S},
            ),
        },
    },
    "paths": {
        "/api/me": {"get": _op("who the token is", "any")},
        "/api/overview": {"get": _op("secrets, datasets and approved plans you may see", "any")},
        "/api/secrets": {
            "get": _op("secrets with their budgets and spending", "any (an analyst: theirs)"),
            "post": _op("declare a secret", "steward", 201, "Secret", errors=(400, 401, 403, 409)),
        },
        "/api/secrets/{name}/ledger": {
            "get": _op(
                "a secret's ledger",
                "steward; an analyst of that secret (no values)",
                params=("name",),
                errors=(401, 404),
            ),
        },
        "/api/secrets/{name}/budget": {
            "post": _op(
                "set a secret's budget, with a reason",
                "steward",
                body="BudgetChange",
                params=("name",),
            ),
        },
        "/api/datasets": {
            "get": _op("registered datasets", "any (an analyst: of their secrets, no path)"),
            "post": _op(
                "register a dataset (a file under the data root)", "steward", 201, "Dataset"
            ),
        },
        "/api/uploads": {
            "post": {
                **_op(
                    "upload a data file (raw body; ?name=FILE.csv)",
                    "steward",
                    201,
                    errors=(400, 401, 403, 413),
                ),
                "requestBody": {"content": {"application/octet-stream": {}}},
            },
        },
        "/api/plans": {
            "get": _op("approved plans (the steward: also those awaiting review)", "any"),
            "post": _op("submit a plan for review", "steward", 201, "Plan"),
        },
        "/api/plans/pending/{pid}": {
            "get": _op("a plan's calibration report", "steward", params=("pid",)),
        },
        "/api/plans/pending/{pid}/approve": {
            "post": _op(
                "approve a reviewed plan under a name",
                "steward",
                body="Approve",
                params=("pid",),
                errors=(400, 401, 403, 404, 409),
            ),
        },
        "/api/releases": {
            "post": _op(
                "release a registered dataset with an approved plan",
                "analyst",
                201,
                "Release",
                errors=(400, 401, 403, 404, 409),
            ),
            "get": _op("releases (an analyst: their own)", "any"),
        },
        "/api/releases/{rid}": {
            "get": _op(
                "one release", "any (an analyst: their own)", params=("rid",), errors=(401, 404)
            )
        },
        "/api/users": {
            "get": _op("users and their tokens", "steward"),
            "post": _op("make a user's token (shown once)", "steward", 201, "User"),
        },
        "/api/tokens/{tid}/revoke": {"post": _op("revoke a token", "steward", params=("tid",))},
        "/api/events": {
            "get": _op("the audit log: every decision, release and refusal", "steward")
        },
        "/api/audit/verify": {
            "get": _op(
                "verify the whole audit log and releases now (their keyed chains and this "
                "host's anchor): ok and the counts, else 503 naming the first row that fails",
                "steward",
            )
        },
    },
}
