import subprocess
import sys

_PROBE = """
import gc
from kassa.runtime import settle_garbage_collector
before = gc.get_freeze_count()
settle_garbage_collector()
print(before, gc.get_freeze_count(), *gc.get_threshold())
"""


def test_settling_the_collector_freezes_what_start_up_built_and_collects_young_objects_less_often() -> None:
    # In a process of its own: freezing is for the rest of the process's life.
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True).stdout
    before, frozen, young, *_ = (int(n) for n in out.split())
    assert before == 0
    assert frozen > 10_000  # the modules, SQLAlchemy's and the gateway's own objects
    assert young == 10_000
