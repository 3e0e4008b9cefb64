"""The OpenAPI 3.1 document, generated from the operation table."""

from __future__ import annotations

from typing import Any

from kassa.api import answers
from kassa.api.answers import Field as AnswerField
from kassa.api.answers import field_names
from kassa.api.fields import Field, schema_of
from kassa.api.operations import OPERATIONS, OAuth, Operation, Response


def _error_schema(code_type: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "type": {"type": "string"},
            "serial-number": {"type": "string", "format": "uuid"},
            "merchant-order-id": {"type": "string"},
            "error-message": {"type": "string"},
            "error-code": {"type": code_type},
        },
        "required": ["type", "serial-number", "error-message", "error-code"],
    }


_ERROR_SCHEMA = _error_schema("string")
# The refusals of an operation whose error-code is a JSON number (``Response.numbers``: the v4 sale).
_NUMERIC_ERROR_SCHEMA = _error_schema("integer")


def document(prefix: str, oauth_window: int) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {
        "ValidationErrorResponse": _ERROR_SCHEMA,
        "ServerErrorResponse": _ERROR_SCHEMA,
        "ValidationErrorNumericResponse": _NUMERIC_ERROR_SCHEMA,
    }
    for op in OPERATIONS:
        paths[f"{op.path}/{{endpointId}}"] = {"post": _operation(op, "endpointId")}
        paths[f"{op.path}/group/{{endpointGroupId}}"] = {"post": _operation(op, "endpointGroupId")}
        schemas[op.request_schema] = _request_schema(op)
        schemas.setdefault(op.response.schema, _response_schema(op.response))
    return {
        "openapi": "3.1.0",
        "info": {"title": "Kassa server-to-server API", "version": "dev"},
        "servers": [{"url": prefix or "/"}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {_scheme_name(method): _oauth_scheme(method, oauth_window) for method in OAuth},
        },
    }


# OpenAPI has no OAuth 1.0a type; ``http`` with the scheme registered for it (RFC 5849 §3.5.1) and a
# description is the closest. ``control`` has no scheme at all: a security scheme is a header, query or
# cookie credential, and ``control`` is a field of the body (each control row's request schema requires it
# and its description gives the formula); those rows declare ``security: []`` and ``x-signing``.
_OAUTH_KEYS = {
    OAuth.HMAC_SHA1: "the key is the merchant's control key followed by `&` (no token secret)",
    OAuth.RSA_SHA256: "RSASSA-PKCS1-v1_5 with SHA-256, verified with the merchant's public keys registered for the "
    "endpoint's mode (`kassa key add`; sandbox and live keys differ)",
}


def _scheme_name(method: OAuth) -> str:
    return f"oauth1-{method.value.lower()}"


def _oauth_scheme(method: OAuth, window: int) -> dict[str, Any]:
    description = (
        f"OAuth 1.0a (RFC 5849) signed with {method.value}: {_OAUTH_KEYS[method]}. `oauth_consumer_key` is the "
        "merchant login; the `oauth_*` parameters stand in the `Authorization: OAuth ...` header, in the form body, "
        "or in both (then equal). The base string is `POST`, the URL the client addressed (lower-case scheme and "
        "host, no default port, the path as sent, no query) and every body pair as sent plus the `oauth_*` "
        f"parameters but `oauth_signature`. `oauth_timestamp` within {window} s of the gateway's clock; a "
        "(consumer key, timestamp, nonce) is accepted once. Refused: 401 with "
        "`WWW-Authenticate`, error-code 2 (signature) or 10 (time, replay)."
    )
    return {"type": "http", "scheme": "OAuth", "description": description}


def _operation(op: Operation, id_name: str) -> dict[str, Any]:
    def ref(name: str) -> dict[str, Any]:
        if name == "ValidationErrorResponse" and "error-code" in op.response.numbers:
            name = "ValidationErrorNumericResponse"
        return {"content": {"application/vnd.pay+json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}}

    responses: dict[str, Any] = {
        "200": {"description": "accepted", **ref(op.response.schema)},
        "400": {"description": "validation error", **ref("ValidationErrorResponse")},
        "429": {
            "description": "too many requests (error-code 11)",
            "headers": {"Retry-After": {"description": "seconds to wait", "schema": {"type": "integer"}}},
            **ref("ValidationErrorResponse"),
        },
        "500": {"description": "server error", **ref("ServerErrorResponse")},
    }
    if op.opens_order:
        responses["503"] = {
            "description": "the gateway is overloaded: nothing was created, try again later (error-code 11)",
            "headers": {"Retry-After": {"description": "seconds to wait", "schema": {"type": "integer"}}},
            **ref("ValidationErrorResponse"),
        }
    if isinstance(op.signing, OAuth):
        responses["401"] = {
            "description": "OAuth signature missing or wrong (error-code 2), or timestamp or nonce refused (10)",
            "headers": {
                "WWW-Authenticate": {"description": "OAuth realm=...", "schema": {"type": "string"}},
            },
            **ref("ValidationErrorResponse"),
        }
    return {
        "operationId": f"{op.code}{'_GROUP' if id_name == 'endpointGroupId' else ''}",
        "summary": op.summary,
        "description": _signing_text(op),
        "parameters": [
            {
                "name": id_name,
                "in": "path",
                "required": True,
                "schema": {"type": "integer", "format": "int64"},
            },
            _accept(op),
        ],
        "requestBody": {
            "required": True,
            "content": {
                "application/x-www-form-urlencoded": {"schema": {"$ref": f"#/components/schemas/{op.request_schema}"}}
            },
        },
        "responses": responses,
        "security": [{_scheme_name(op.signing): []}] if isinstance(op.signing, OAuth) else [],
        "x-signing": _signing(op),
        "x-operation-code": op.code,
    }


def _accept(op: Operation) -> dict[str, Any]:
    if op.json_by_default:  # CONTRACT §1: v4 answers JSON without Accept, or to */*
        return {
            "name": "Accept",
            "in": "header",
            "required": False,
            "description": "JSON when absent or */*",
            "schema": {"enum": ["application/vnd.pay+json", "*/*"]},
        }
    return {"name": "Accept", "in": "header", "required": True, "schema": {"const": "application/vnd.pay+json"}}


def _signing(op: Operation) -> dict[str, str]:
    if isinstance(op.signing, OAuth):
        return {"scheme": "oauth1", "method": op.signing.value, "securityScheme": _scheme_name(op.signing)}
    return {"scheme": "control", "field": "control", "formula": op.signing.describe()}


def _signing_text(op: Operation) -> str:
    if isinstance(op.signing, OAuth):
        return f"Signed with OAuth 1.0a {op.signing.value} (security scheme {_scheme_name(op.signing)})."
    return f"Signed with the control field of the body: {op.signing.describe()}."


def _request_schema(op: Operation) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {f.name: _field_schema(f) for f in op.fields},
        "required": [f.name for f in op.fields if f.required],
    }


def _field_schema(field: Field) -> dict[str, Any]:
    """A required field sent empty counts as missing, hence its ``minLength``."""
    schema = {"type": "string", "description": field.description, **schema_of(field.check)}
    if field.required:
        schema["minLength"] = 1
    return schema


def _response_schema(response: Response) -> dict[str, Any]:
    """An answer's schema from its declared type: every field it may carry, with its kind and description;
    those every answer of the type carries required; no other."""
    numbers = sorted(response.numbers & set(field_names(response.answer)))
    values = f"{', '.join(numbers)} a number, every other value a string" if numbers else "every value is a string"
    properties: dict[str, Any] = {
        "type": {"const": response.type},
        **{field.name: _answer_field_schema(field, field.name in numbers) for field in response.answer.FIELDS},
    }
    required = ["type", *(field.name for field in response.answer.FIELDS if field.when is None)]
    return {
        "type": "object",
        "description": f"type = {response.type}; {values}",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _answer_field_schema(field: AnswerField, number: bool) -> dict[str, Any]:
    schema = {"type": "integer"} if number else answers.schema(field.kind)
    presence = "Always present." if field.when is None else f"Present {field.when}."
    return {**schema, "description": f"{field.description[:1].upper()}{field.description[1:]}. {presence}"}
