"""Whether this machine can run llama.cpp's AMX kernels, decided once per llama.cpp build.

Some virtual machines advertise Intel AMX in ``/proc/cpuinfo`` (and the kernel grants the tile
permission) while the hypervisor traps the tile instructions. A llama.cpp compiled natively there
puts the weights in its AMX buffer and the process dies on the first prompt longer than a token:
SIGILL on some hypervisors, SIGSEGV (a general protection fault in libggml-cpu) on others. No error
can be caught in-process, so a child process evaluates a short prompt with the embedded model first;
if a signal kills it (``TRAPPED``), judge loads models without llama.cpp's extra buffer
types (AMX and weight repacking), which run everywhere. The answer is kept in a small JSON file next
to the cache, keyed by the llama.cpp library file, so the probe runs once per install.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..core.config import default_cache_path
from ..models.packaged import resolve_model_path

_PROBE = """
import llama_cpp, sys
m = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=64, n_threads=1, verbose=False)
m.eval(m.tokenize(b"A short probe of the matrix kernels, several tokens long."))
"""

_lock = threading.Lock()

#: How a trapped tile instruction ends the probe: "Illegal instruction", or a general protection fault
#: that the kernel delivers as a segmentation fault (seen on Xeon guests that list amx_tile).
TRAPPED = frozenset({signal.SIGILL, signal.SIGSEGV, signal.SIGBUS})


def cpu_advertises_amx(cpuinfo: str | None = None) -> bool:
    """Whether the CPU flags name AMX tiles (the only case the probe is needed for)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
    return any(line.startswith("flags") and "amx_tile" in line.split() for line in cpuinfo.splitlines())


def _library_identity(llama_cpp: Any) -> str:
    """A key for the compiled llama.cpp: the CPU library's path, size and mtime, and the package version."""
    libdir = Path(llama_cpp.__file__).parent / "lib"
    # "signals-2": answers stored before SIGSEGV counted as trapped are probed again.
    parts = ["signals-2", getattr(llama_cpp, "__version__", "?")]
    for lib in sorted(libdir.glob("libggml-cpu*")) or sorted(libdir.glob("*ggml*")):
        st = lib.stat()
        parts.append(f"{lib}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def extra_buffers_usable(llama_cpp: Any, probe_model: Path, cache_dir: Path) -> bool:
    """True unless the CPU advertises AMX and a child process evaluating a prompt was killed by ``TRAPPED``."""
    if not cpu_advertises_amx():
        return True
    key = _library_identity(llama_cpp)
    path = cache_dir / "llamacpp-cpu-probe.json"
    with _lock:
        try:
            known = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            known = {}
        if isinstance(known, dict) and isinstance(known.get(key), bool):
            return bool(known[key])
        try:
            proc = subprocess.run([sys.executable, "-c", _PROBE, str(probe_model)], capture_output=True, timeout=300)
            usable = -proc.returncode not in TRAPPED
        except subprocess.TimeoutExpired:
            usable = True  # a slow machine, not a trapped instruction: keep llama.cpp's defaults
        known = known if isinstance(known, dict) else {}
        known[key] = usable
        with contextlib.suppress(OSError):
            cache_dir.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(known, sort_keys=True), encoding="utf-8")
            tmp.replace(path)
        return usable


@contextlib.contextmanager
def without_extra_buffers(llama_cpp: Any) -> Iterator[None]:
    """Load models with ``use_extra_bufts = False`` while the block runs.

    llama-cpp-python builds its model parameters from ``llama_model_default_params`` and offers no
    argument for this field, so the default is wrapped for the duration of one load (under a lock:
    loads in other threads see the same setting and never a half-restored function)."""
    low = llama_cpp.llama_cpp
    original = low.llama_model_default_params

    def params() -> Any:
        p = original()
        p.use_extra_bufts = False
        return p

    with _lock:
        low.llama_model_default_params = params  # what Llama() reads when it builds a model's parameters
        try:
            yield
        finally:
            low.llama_model_default_params = original


_SERVER = """
import runpy, sys, llama_cpp
low = llama_cpp.llama_cpp
default = low.llama_model_default_params
def params():
    p = default()
    p.use_extra_bufts = False
    return p
low.llama_model_default_params = params
sys.argv = ["llama_cpp.server", *sys.argv[1:]]
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


def llama_server_command(args: Sequence[str]) -> list[str]:
    """The command that runs ``python -m llama_cpp.server`` with ``args`` on this machine: as it is, or,
    where the AMX probe failed, with llama.cpp's extra buffer types off for the server's whole life (the
    server has no option for it, and would die of SIGILL on its first prompt)."""
    import llama_cpp

    if extra_buffers_usable(llama_cpp, resolve_model_path(None), default_cache_path().parent):
        return [sys.executable, "-m", "llama_cpp.server", *args]
    return [sys.executable, "-c", _SERVER, *args]
