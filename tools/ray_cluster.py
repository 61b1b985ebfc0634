"""A two-node Ray cluster on 127.0.0.1 inside namespaces of its own, for tests and benchmarks.

On Linux Ray binds its services to the machine's network address, not 127.0.0.1, even when told
``--node-ip-address=127.0.0.1``; so the cluster runs in a network namespace of its own (``unshare -n``, then
``ip link set lo up``), where loopback is the only interface and no traffic can leave it. It also gets a PID
namespace (``-p -f --mount-proc``): ``ray stop`` and Ray's own process listing see only its processes, and
when the namespace's first process is killed, the kernel ends every process in it, so nothing outlives
:meth:`Cluster.stop`. Commands run inside with ``nsenter``.

Token authentication is on (``RAY_AUTH_MODE=token``, as Ray 2.59+ turns it on for local clusters; without it a
second node is refused, "Authentication token is missing or incorrect"), with a token made for this cluster
and handed to the head, the node and every driver through the environment only (``RAY_AUTH_TOKEN``), so
nothing is written to ``~/.ray``. Ray's session files go to a temporary folder of the cluster's own.

Needs root (namespaces) and the ``ray`` extra. Run it alone: ``python tools/ray_cluster.py`` starts a
cluster, prints its nodes and stops it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The head's address inside the namespace.
ADDRESS = "127.0.0.1:6379"
#: The object store of each node: a run ships prompts and answers, never large objects.
OBJECT_STORE_BYTES = 100 * 1024 * 1024


def why_not() -> str | None:
    """Why a cluster cannot start here (None: it can): Ray missing, not root, no ``unshare``/``nsenter``/``ip``."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return "the ray extra is not installed (pip install 'dialogue-judge[ray]')"
    if os.geteuid() != 0:
        return "network namespaces need root"
    missing = [t for t in ("unshare", "nsenter", "ip", "ray") if shutil.which(t) is None]
    return f"{', '.join(missing)} not found" if missing else None


#: Waits until the cluster has N live nodes (``ray start`` returns before a node has registered).
_WAIT_NODES = f"""
import sys, time, ray
ray.init(address="{ADDRESS}", log_to_driver=False)
for _ in range(600):
    if sum(n["Alive"] for n in ray.nodes()) >= int(sys.argv[1]):
        break
    time.sleep(0.1)
else:
    sys.exit("the nodes did not all join")
"""


class Cluster:
    """A Ray head and ``nodes - 1`` more nodes on 127.0.0.1, ``cpus`` CPUs each, in namespaces of their own.
    ``env`` is added to every process's environment (the head's, the nodes' and the drivers'); the actors
    inherit their node's."""

    def __init__(self, nodes: int = 2, cpus: int = 1, env: Mapping[str, str] | None = None) -> None:
        self.temp = Path(tempfile.mkdtemp(prefix="judge-ray-", dir="/tmp"))  # short: Ray's socket paths
        self.env = {**os.environ, **(env or {}), "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(16),
                    "RAY_USAGE_STATS_ENABLED": "0",
                    "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
        self.holder = subprocess.Popen(["unshare", "-n", "-p", "-f", "--mount-proc", "sh", "-c",
                                        "ip link set lo up && exec sleep infinity"], start_new_session=True)
        self.pid = self._inner_pid()
        try:
            start = ["ray", "start", "--node-ip-address=127.0.0.1", f"--num-cpus={cpus}", "--num-gpus=0",
                     f"--object-store-memory={OBJECT_STORE_BYTES}", "--disable-usage-stats"]
            self.check([*start, "--head", "--port=6379", "--include-dashboard=false", f"--temp-dir={self.temp}"])
            for _ in range(nodes - 1):
                self.check([*start, f"--address={ADDRESS}"])
            self.check([sys.executable, "-c", _WAIT_NODES, str(nodes)])
        except BaseException:
            self.stop()
            raise
        # Drivers started inside find the cluster as a user's do on a cluster's machine: ``--ray auto``.
        self.env["RAY_ADDRESS"] = ADDRESS

    def _inner_pid(self) -> int:
        """The namespace's first process (``unshare -f`` forks it), once ``lo`` is up."""
        children = Path(f"/proc/{self.holder.pid}/task/{self.holder.pid}/children")
        for _ in range(200):
            pids = children.read_text().split() if children.exists() else []
            if pids and Path(f"/proc/{pids[0]}/comm").read_text().strip() == "sleep":
                return int(pids[0])
            time.sleep(0.05)
        raise RuntimeError("the namespace did not start")

    def command(self, args: Sequence[str], cwd: Path = ROOT) -> list[str]:
        """``args`` run inside the namespaces, in ``cwd`` (entering a mount namespace starts at its root)."""
        return ["nsenter", "-t", str(self.pid), "-n", "-p", "-m", f"--wd={cwd}", "--", *args]

    def run(self, args: Sequence[str], timeout: float = 1800, **kw: object) -> subprocess.CompletedProcess[str]:
        """Run ``args`` inside (output captured as text); the completed process."""
        return subprocess.run(self.command(args), env=self.env, capture_output=True, text=True, timeout=timeout,
                              **kw)  # type: ignore[call-overload]

    def check(self, args: Sequence[str]) -> str:
        done = self.run(args, timeout=300)
        if done.returncode:
            raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def popen(self, args: Sequence[str], **kw: object) -> subprocess.Popen[str]:
        """Start ``args`` inside; stdout and stderr are pipes of text lines."""
        return subprocess.Popen(self.command(args), env=self.env, stdout=subprocess.PIPE,  # type: ignore[call-overload]
                                stderr=subprocess.PIPE, text=True, **kw)

    def judge(self, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
        """``python -m judge ARGS`` inside, as a user runs it on a machine of the cluster."""
        return self.run([sys.executable, "-m", "judge", *args], timeout=timeout)

    @staticmethod
    def started(proc: subprocess.Popen[str]) -> int:
        """The process ``nsenter`` started for :meth:`popen` (its pid as this machine numbers it), to end it by its
        id (killing ``nsenter`` leaves it running)."""
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
        for _ in range(200):
            pids = children.read_text().split() if children.exists() else []
            if pids:
                return int(pids[0])
            time.sleep(0.05)
        raise RuntimeError("nsenter started nothing")

    def kill(self, pid: int) -> None:
        """SIGKILL process ``pid`` of the namespace (a pid as the namespace numbers it)."""
        self.check(["kill", "-KILL", str(pid)])

    def stop(self) -> None:
        """End every process of the cluster (killing the namespace's first process ends them all) and remove
        its files."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except (ProcessLookupError, AttributeError):
            pass
        self.holder.wait(timeout=60)
        shutil.rmtree(self.temp, ignore_errors=True)


if __name__ == "__main__":
    reason = why_not()
    if reason:
        sys.exit(f"cannot start a cluster here: {reason}")
    t0 = time.perf_counter()
    cluster = Cluster()
    try:
        print(f"started in {time.perf_counter() - t0:.1f} s")
        print(cluster.check(["ray", "status"]))
    finally:
        cluster.stop()
