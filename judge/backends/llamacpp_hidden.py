"""The final hidden state at the answer position, read from llama.cpp's own decode of a label prompt.

llama.cpp's embeddings mode is no way to it: with embeddings on, every token of a batch becomes an
output, so the last layer's feed-forward and the output layer run on all of the batch's rows instead
of the answer's one. That costs a vocabulary-wide matmul per token, and the CPU kernels compute a row
differently in a batch of rows than alone (``LlamaCppBackend._eval``), so the label answer would move.

Instead the context is given ggml's eval callback, which the graph scheduler asks about every node
before computing it. Only while hidden states are asked for does the callback want the node that holds
the model's final hidden states (``result_norm``: after the output norm, the rows the output layer
reads; with the answer position the only output, one row). The scheduler then computes the graph up to
that node, hands it over, and computes the rest: the same operations on the same rows, so the label
answer of the same decode is the one without hidden states, bit for bit. A callback that wants nothing
leaves the graph computed in one piece, as without it.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

#: The graph node of llama.cpp's causal language models that holds the final hidden states.
FINAL_NORM = b"result_norm"


class FinalNormReader:
    """The eval callback, and the last ``FINAL_NORM`` row it read while ``active``."""

    def __init__(self, llama_cpp: Any, width: int) -> None:
        from llama_cpp import _ggml  # llama-cpp-python's handle on libggml, where the tensor functions live

        lib = _ggml.libggml
        lib.ggml_get_name.argtypes, lib.ggml_get_name.restype = [ctypes.c_void_p], ctypes.c_char_p
        lib.ggml_nbytes.argtypes, lib.ggml_nbytes.restype = [ctypes.c_void_p], ctypes.c_size_t
        lib.ggml_backend_tensor_get.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
        lib.ggml_backend_tensor_get.restype = None
        self._lib = lib
        self.width = width
        #: Whether the decodes now running should hand over the final hidden states.
        self.active = False
        #: The last output row of the last decode that computed ``FINAL_NORM`` while active (None: none did).
        self.vector: list[float] | None = None
        #: Kept here: ctypes frees a callback object that nothing references, and llama.cpp would call freed memory.
        self.callback = llama_cpp.ggml_backend_sched_eval_callback(self._observe)

    def _observe(self, tensor: int | None, ask: bool, _user_data: int | None) -> bool:
        """Asked (``ask``): whether this node's data is wanted. Then, for a wanted node: its data, and True
        to go on computing (False would abort the decode)."""
        if ask:
            return self.active and self._lib.ggml_get_name(tensor) == FINAL_NORM
        nbytes = self._lib.ggml_nbytes(tensor)
        if nbytes % (4 * self.width):  # not rows of float32 of the model's width: nothing usable
            self.vector = None
            return True
        rows = np.empty(nbytes // 4, dtype=np.float32)
        self._lib.ggml_backend_tensor_get(tensor, rows.ctypes.data, 0, nbytes)
        self.vector = rows[-self.width:].astype(np.float64).tolist()
        return True
