"""Random bytes fetched in blocks: never repeated, in this process or a forked one."""

from __future__ import annotations

import os
import uuid

from kassa import randomness


def test_consecutive_draws_never_overlap() -> None:
    draws = [randomness.token_bytes(12) for _ in range(2000)]  # several blocks
    assert len(set(draws)) == len(draws)


def test_uuid4_is_a_version_4_rfc_4122_uuid_in_canonical_text() -> None:
    for _ in range(200):  # every random bit pattern of the version and variant bytes is fixed up
        text = randomness.uuid4()
        parsed = uuid.UUID(text)
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)
        assert str(parsed) == text


def test_forked_child_never_repeats_the_parents_bytes() -> None:
    randomness.token_bytes(1)  # the parent now holds a partly used block
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write_end, randomness.token_bytes(64))
        os._exit(0)
    os.close(write_end)
    child = os.read(read_end, 64)
    os.waitpid(pid, 0)
    assert child != randomness.token_bytes(64)
