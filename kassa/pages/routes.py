"""Routes of the customer-facing pages, below the API prefix."""

from __future__ import annotations

from starlette.routing import Route

from kassa.pages.acs import AccessControlServer
from kassa.pages.checkout import Pages
from kassa.pages.hosted_fields import HostedFields
from kassa.runtime import Services


def page_routes(services: Services) -> list[Route]:
    prefix = services.settings.prefix
    pages, acs, fields = Pages(services), AccessControlServer(services), HostedFields(services)
    return [
        Route(f"{prefix}/form/{{token}}", pages.show_form, methods=["GET"]),
        Route(f"{prefix}/form/{{token}}", pages.submit_form, methods=["POST"]),
        Route(f"{prefix}/checkout/{{token}}", pages.checkout, methods=["GET"]),
        Route(f"{prefix}/checkout/{{token}}/method", pages.method_done, methods=["POST"]),
        Route(f"{prefix}/3ds/method-notification", pages.method_notification, methods=["POST"]),
        Route(f"{prefix}/3ds/complete", pages.challenge_return, methods=["POST"]),
        Route(f"{prefix}/acs/method", acs.method, methods=["POST"]),
        Route(f"{prefix}/acs/challenge", acs.challenge, methods=["POST"]),
        Route(f"{prefix}/acs/pareq", acs.pareq, methods=["POST"]),
        Route(f"{prefix}/acs/answer", acs.answer, methods=["POST"]),
        # Hosted Fields (CONTRACT §18): the SDK, its field page and the tokenization, versioned by path so
        # that a later SDK can change them while pages that load this one keep working.
        Route(f"{prefix}/hosted-fields/v1/field", fields.field, methods=["GET"]),
        Route(f"{prefix}/hosted-fields/v1/{{name:str}}", fields.script, methods=["GET"]),
        Route(f"{prefix}/hosted-fields/v1/tokenize", fields.tokenize, methods=["POST"]),
    ]
