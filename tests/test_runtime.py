import subprocess
import sys

_PROBE = """
import gc
from kassa import runtime

def scanned(obj):
    return any(found is obj for found in gc.get_objects())

before = scanned(runtime.build_services)
runtime.settle_garbage_collector()
after = scanned(runtime.build_services)
collections = [generation["collections"] for generation in gc.get_stats()]
young = [[n] for n in range(5_000)]
print(before, after, collections == [generation["collections"] for generation in gc.get_stats()])
"""


def test_settling_the_collector_takes_start_up_objects_out_of_its_scans_and_collects_young_objects_less_often() -> None:
    # In a process of its own: freezing is for the rest of the process's life. A function built at start-up
    # stands for the modules, SQLAlchemy's and the gateway's own objects; 5,000 new containers would have
    # set off seven young collections at Python's default threshold.
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False", "True"]
