"""Scale: ``kassa serve --processes N`` on PostgreSQL. With several processes the measured server is the
group: the supervising parent and its forked children, CPU summed, resident memory per process."""

from __future__ import annotations

from pathlib import Path

from bench.probe import processes_cpu_seconds
from bench.server import API_ONLY, KASSA, NO_SHEDDING, PREFIX, KassaDeployment, Server, free_port


def children_of(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def rss_of(pid: int) -> int:
    """VmRSS of one process, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS line")


class ProcessGroup(Server):
    """``kassa serve --processes N``; its server processes are the children (or the process itself for N = 1)."""

    def server_pids(self) -> list[int]:
        return children_of(self.pid) or [self.pid]

    def cpu_seconds(self) -> float:
        return processes_cpu_seconds([self.pid, *children_of(self.pid)])

    def rss_each_kib(self) -> list[int]:
        return [rss_of(pid) for pid in self.server_pids()]

    def rss_kib(self) -> int:
        return max(self.rss_each_kib())


def process_group(deployment: KassaDeployment, processes: int, cores: str | None) -> ProcessGroup:
    """``cores``: a taskset list such as "0,1" for every server process, or None for no pinning."""
    port = free_port()
    argv = [KASSA, "serve", "--port", str(port), "--processes", str(processes), *API_ONLY]
    if cores is not None:
        argv = ["taskset", "-c", cores, *argv]
    log = deployment.data_dir / f"scale-{processes}.log"
    return ProcessGroup(argv, {**deployment.env, **NO_SHEDDING}, log, f"{PREFIX}/openapi.json", port)
