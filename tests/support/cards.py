"""Card numbers for tests."""

from __future__ import annotations


def pan_ending(last_three: str) -> str:
    """A Luhn-valid Visa number whose last three digits are ``last_three`` (a sandbox trigger for operations
    without a CVV2: rebills and recurring charges, CONTRACT §9)."""
    for middle in range(10):
        pan = f"411111111111{middle}{last_three}"
        total = sum(d if i % 2 == 0 else (2 * d - 9 if d > 4 else 2 * d) for i, d in enumerate(map(int, pan[::-1])))
        if total % 10 == 0:
            return pan
    raise AssertionError("no Luhn-valid number ends in " + last_three)
