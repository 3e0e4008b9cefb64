"""The OpenAPI 3.1 document, generated from the operation table."""

from __future__ import annotations

from typing import Any

from kassa.api.fields import Field, schema_of
from kassa.api.operations import OPERATIONS, OAuth, Operation, Response

_ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "type": {"type": "string"},
        "serial-number": {"type": "string", "format": "uuid"},
        "merchant-order-id": {"type": "string"},
        "error-message": {"type": "string"},
        "error-code": {"type": "string"},
    },
    "required": ["type", "serial-number", "error-message", "error-code"],
}


def document(prefix: str) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {
        "ValidationErrorResponse": _ERROR_SCHEMA,
        "ServerErrorResponse": _ERROR_SCHEMA,
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
            "securitySchemes": {"oauth1": {"type": "http", "scheme": "OAuth"}},
        },
    }


def _operation(op: Operation, id_name: str) -> dict[str, Any]:
    def ref(name: str) -> dict[str, Any]:
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
    if isinstance(op.signing, OAuth):
        responses["401"] = {
            "description": "OAuth signature missing or wrong (error-code 2), or timestamp or nonce refused (10)",
            **ref("ValidationErrorResponse"),
        }
    if op.handler is None:
        responses["501"] = {"description": "the operation is not implemented yet", **ref("ServerErrorResponse")}
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
            {
                "name": "Accept",
                "in": "header",
                "required": True,
                "schema": {"const": "application/vnd.pay+json"},
            },
        ],
        "requestBody": {
            "required": True,
            "content": {
                "application/x-www-form-urlencoded": {"schema": {"$ref": f"#/components/schemas/{op.request_schema}"}}
            },
        },
        "responses": responses,
        "x-operation-code": op.code,
    }


def _signing_text(op: Operation) -> str:
    if isinstance(op.signing, OAuth):
        return f"Signed with OAuth 1.0a {op.signing.value} in the Authorization header."
    return f"Signed with the control field: {op.signing.describe()}."


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
    return {
        "type": "object",
        "description": f"type = {response.type}; every value is a string",
        "properties": {
            "type": {"const": response.type},
            "serial-number": {"type": "string"},
            **{name: {"type": "string"} for name in response.fields},
        },
        "additionalProperties": {"type": "string"},
    }
