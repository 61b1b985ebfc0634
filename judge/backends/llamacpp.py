"""llama.cpp backend (the embedded default): full-vocabulary next-token log-probabilities.

Consecutive prompts that share a prefix reuse the KV cache, in whole batches only. A prompt is evaluated
in batches of ``n_batch`` tokens, starting anew where its template's instructions end
(``Prompt.instructions``) and where its family's shared part ends (``Prompt.shared``); the next prompt
reuses the previous one's KV cache up to the last batch boundary the two evaluations have in common
within their common prefix (``reused_prefix``, the one place that rule lives). A prompt's answer is then
bit-identical to evaluating it alone from an empty cache, whatever ran before it (see ``_eval``).

A judge that reasons first (``reason``) has the model write its rationale after the prompt, one token per
decode, then appends the answer cue to the KV state the generation left and reads the label distribution
there: the prompt is evaluated once (see "A rationale before the answer" below).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..accounting.rates import Rate, fit, rate_key, record_run
from ..core.config import GenerateConfig, default_cache_path
from ..core.errors import BackendError, InputError, MissingExtraError
from ..models.packaged import DEFAULT_MODEL, file_sha256, resolve_model_path
from .base import (
    Backend,
    Capabilities,
    Failure,
    HiddenState,
    LabelDist,
    Prompt,
    Reasoned,
    Reasoning,
    TokenLogprobs,
    too_long,
)
from .chat import chat_parts, chat_tokens
from .generation import Thought, choose, no_room, request_rng, think
from .llamacpp_cpu import extra_buffers_usable, without_extra_buffers
from .llamacpp_hidden import FINAL_NORM, FinalNormReader

#: llama.cpp settings judge sets itself, and where a user sets them (a backend option would clash).
_OWNED = {"n_ctx": "--n-ctx (TOML: generate.max_context)", "n_threads": "--threads (generate.threads)",
          "n_threads_batch": "--threads (generate.threads)", "seed": "generate.seed",
          "model_path": "--model", "logits_all": "nothing (judge reads the last position only)",
          "verbose": "nothing"}


def _import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise MissingExtraError("the llama.cpp backend", "llamacpp", "llama-cpp-python") from exc
    return llama_cpp


def load_vocabulary(llama_cpp: Any, path: Path) -> Any:
    """The model at ``path`` with its vocabulary only (``vocab_only``: no weights are read)."""
    try:
        return llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    except Exception as exc:
        raise BackendError(f"llama.cpp could not read the vocabulary of {path}: {exc}") from exc


def vocab_tokenizer(model: str | None) -> Callable[[str], list[int]]:
    """The model's tokenizer alone, for counting the tokens of prompts without loading a model (``judge run
    --check``). Text is tokenized as a prompt body, without BOS or chat template."""
    llm = load_vocabulary(_import_llama_cpp(), resolve_model_path(model))
    return lambda text: list(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))


def batch_starts(n: int, cuts: Iterable[int], n_batch: int) -> list[int]:
    """Where the batches of a from-scratch evaluation of ``n`` tokens begin: every ``n_batch`` tokens, counted
    anew from each cut (the token positions where a prompt's declared parts end; those outside (0, n) are
    ignored). Fixed by the prompt alone, so that its logits never depend on what ran before it."""
    bounds = sorted({0, n, *(c for c in cuts if 0 < c < n)})
    return [s for a, b in itertools.pairwise(bounds) for s in range(a, b, n_batch)]


def reused_prefix(prev: Sequence[int] | np.ndarray, prev_marks: Sequence[int], toks: Sequence[int], starts: Sequence[int]) -> int:
    """How many leading tokens of a prompt are served from the KV cache the previous evaluation left: the
    last of the prompt's batch starts (``starts``, from ``batch_starts``) that lies within the tokens the two
    share and that the previous evaluation also had, with the same batches before it (``prev_marks``: its
    batch starts, then its length; empty when nothing may be reused). The reuse rule of ``_eval``, callable
    without a model (to count the tokens a run will evaluate, prompt after prompt)."""
    if not prev_marks or not len(prev):
        return 0
    n = min(len(prev), len(toks))
    diff = np.nonzero(np.asarray(prev[:n]) != np.asarray(toks[:n]))[0]
    common = int(diff[0]) if len(diff) else n
    keep = 0
    for i, start in enumerate(starts):
        if start > common or list(prev_marks[: i + 1]) != list(starts[: i + 1]):
            break
        keep = start
    return keep


#: The calibration texts: plain prose, a few hundred tokens by any model, and its first sentence.
_CALIBRATION = ("A judge reads a conversation and the reply that follows it, then says how good the reply is. "
                "It weighs whether the reply follows from what was said, whether it is fluent, and whether it "
                "adds something worth reading. ") * 6
_CALIBRATION_SHORT = _CALIBRATION.split(". ", 1)[0] + "."
#: Tokens generated to measure the cost of a generated token (``calibrate``).
CALIBRATION_GENERATED = 32

#: How a reply is evaluated, for cache keys (``LlamaCppBackend.sequence_settings``).
REPLY_BATCHES = "batches of n_batch, every position an output"
#: How a rationale is generated and the answer read after it, for cache keys (``LlamaCppBackend.reason_settings``).
REASON_STEPS = "one token per decode; the rationale cut where an answer line begins; the cue as one batch"


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Log-probabilities from logits, shifted by the maximum so that exp never overflows."""
    top = logits.max()
    return logits - (top + np.log(np.exp(logits - top).sum()))


class LlamaCppBackend(Backend):
    """A GGUF model run in-process by llama-cpp-python."""

    name = "llamacpp"
    #: A run's tokens and decodes are counted exactly by a twin that reads the vocabulary only
    #: (:mod:`judge.backends.llamacpp_replay`).
    cost = "replay"
    #: The eval callback's reader; the context gets it the first time hidden states are asked for.
    _reader: FinalNormReader | None = None

    def __init__(
        self,
        model: str | None,
        config: GenerateConfig,
        *,
        reuse_prefix: bool = True,
        n_batch: int = 512,
        **llama_kwargs: Any,
    ) -> None:
        llama_cpp = self._identify(model, config, reuse_prefix, n_batch, llama_kwargs)
        load = contextlib.nullcontext() if self.extra_buffers else without_extra_buffers(llama_cpp)
        try:
            with load:
                self.llm = llama_cpp.Llama(
                    model_path=str(self.path),
                    n_ctx=config.max_context or 0,  # 0 = the model's training context
                    n_threads=self.threads,
                    n_threads_batch=self.threads,
                    n_batch=n_batch,
                    logits_all=False,
                    verbose=False,
                    seed=config.seed,
                    **llama_kwargs,
                )
        except Exception as exc:  # llama.cpp raises ValueError/RuntimeError with little detail
            raise BackendError(f"llama.cpp could not load {self.path}: {exc}") from exc
        self._ready()

    def _identify(self, model: str | None, config: GenerateConfig, reuse_prefix: bool, n_batch: int,
                  llama_kwargs: dict[str, Any]) -> Any:
        """Everything known before the model loads: its file and hash, the settings. Returns the module.
        Shared with the backend's replay (``llamacpp_replay``), which loads the vocabulary only, so that
        both see the same model and settings."""
        self._llama_cpp = llama_cpp = _import_llama_cpp()
        path = resolve_model_path(model)
        self.model_id = model or DEFAULT_MODEL
        self.path = Path(path)
        # Hashed before loading (memoised per size+mtime): the identity of the bytes llama.cpp reads.
        self.sha256 = file_sha256(self.path)
        self.config = config
        self.reuse_prefix = reuse_prefix
        self.n_batch = n_batch
        #: llama.cpp settings given as backend options (flash_attn, type_k, ...): they can move answers.
        self.llama_options = dict(sorted(llama_kwargs.items()))
        self.threads = config.threads or os.cpu_count() or 1
        owned = {k: v for k, v in _OWNED.items() if k in llama_kwargs}
        if owned:
            key = next(iter(owned))
            raise InputError(f"'{key}' is set by judge; use {owned[key]} instead", field="backend-option")
        # Where AMX is advertised but trapped, llama.cpp's extra buffers are turned off (llamacpp_cpu.py);
        # the setting then joins the cache key, since other kernels may move a probability slightly.
        self.extra_buffers = extra_buffers_usable(llama_cpp, resolve_model_path(None), default_cache_path().parent)
        #: Model time and tokens of real evaluations, recorded as this machine's rate on close (judge.accounting.rates).
        self.eval_seconds = 0.0
        self.record_rate = True
        return llama_cpp

    def _ready(self) -> None:
        """Set up what depends on the loaded model (or vocabulary): the chat template's parts, capabilities."""
        self.n_vocab = self.llm.n_vocab()
        self._cand_cache: dict[str, int | None] = {}
        self._tok_cache: dict[int, str] = {}
        self.tokens_evaluated = 0
        #: llama.cpp decodes run for them: each has a fixed cost whatever its batch holds (judge.accounting.rates).
        self.decodes = 0
        #: Tokens of rationales generated (each but a rationale's last a decode of its own) and the model time
        #: their decodes took (judge.accounting.rates).
        self.tokens_generated = 0
        self.generate_seconds = 0.0
        self._token_text: dict[int, bytes] = {}
        #: Where the batches that filled the KV cache began, and where the last one ended.
        self._marks: list[int] = []
        template = self.llm.metadata.get("tokenizer.chat_template")
        self._chat: tuple[list[int], list[int]] | None = None
        #: The chat template's parts as text, for ``wrapping``.
        self._chat_text: tuple[str, str] | None = None
        if template:
            bos = self._piece(self.llm.token_bos())
            eos = self._piece(self.llm.token_eos())
            before, after = chat_parts(template, bos, eos, name=f"chat template of {self.path.name}")
            self._chat = (self._tok(before, special=True), self._tok(after, special=True))
            self._chat_text = (before, after)
        self.capabilities = Capabilities(
            full_vocab=True,
            top_n=None,
            chat_template=self._chat is not None,
            max_context=self._window(),
            batching=False,
            prefix_reuse=self.reuse_prefix,
            split_shared=True,
            sequence_logprobs=True,
            hidden_states=True,
            reason=True,
        )

    def calibrate(self, repeats: int) -> Rate:
        """Measure the model's rate here: evaluate a warm-up, then a short and a long text, each as one decode
        from an empty KV cache, ``repeats`` times, keeping the fastest of each; the two points fit the cost
        per decode and per token (:func:`judge.accounting.rates.fit`). Other work on the cores only ever slows a
        measurement, so the fastest of a few is the machine's rate; a single one taken while something else
        ran gave half of it (benchmarks/README.md, leaderboard_schedule). Nothing is recorded as a run."""
        record, self.record_rate = self.record_rate, False
        try:
            self.label_logprobs([Prompt("Warm up.", chat=False)], ["A"], 1)
            points = [self._fastest(text, repeats) for text in (_CALIBRATION_SHORT, _CALIBRATION)]
            return fit(self.model_id, self.threads, points[0], points[1], self._generation_point(repeats))
        finally:
            self.record_rate = record

    def _generation_point(self, repeats: int) -> tuple[int, float]:
        """(tokens, seconds) of the fastest of ``repeats`` greedy generations of CALIBRATION_GENERATED tokens
        after the calibration text (the cue never met: the budget ends each)."""
        how = Reasoning(CALIBRATION_GENERATED, "\x00")
        points = self._points(lambda: self.reason([Prompt(_CALIBRATION_SHORT, chat=False)], ["A"], 1, how),
                              lambda: (self.tokens_generated, self.generate_seconds), repeats)
        return min((p for p in points if p[0]), key=lambda p: p[1] / p[0], default=(0, 0.0))

    def _fastest(self, text: str, repeats: int) -> tuple[int, float]:
        """(tokens, seconds) of the fastest of ``repeats`` evaluations of ``text`` from an empty KV cache."""
        points = self._points(lambda: self.label_logprobs([Prompt(text, chat=False)], ["A"], 1),
                              lambda: (self.tokens_evaluated, self.eval_seconds), repeats)
        return min(points, key=lambda p: p[1])

    def _points(self, work: Callable[[], object], counted: Callable[[], tuple[int, float]],
                repeats: int) -> list[tuple[int, float]]:
        """What ``counted`` (tokens, seconds) moved in each of ``repeats`` runs of ``work`` from an empty KV cache."""
        out = []
        for _ in range(max(1, repeats)):
            self.reset()
            tokens0, seconds0 = counted()
            work()
            tokens1, seconds1 = counted()
            out.append((tokens1 - tokens0, seconds1 - seconds0))
        return out

    def rate_identity(self) -> dict[str, object]:
        """What moves this backend's speed on one machine, as the key of its measured rate (judge.accounting.rates)."""
        return {"backend": self.name, "sha256": self.sha256, "threads": self.threads, "n_batch": self.n_batch,
                "llama": self.llama_options, "extra_buffers": self.extra_buffers}

    def _window(self) -> int:
        """Tokens a prompt may hold. llama.cpp rounds its context up (``n_ctx=300`` gives 512 KV slots), but
        llama-cpp-python keeps its token buffer at the size asked for: the smaller of the two is the limit,
        so a prompt between them fails as too long instead of crashing the evaluation."""
        return min(self.llm.n_ctx(), len(self.llm.input_ids))

    # -- tokenization -------------------------------------------------------------------------
    def _tok(self, text: str, special: bool = False, bos: bool = False) -> list[int]:
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=bos, special=special))

    def _piece(self, token: int) -> str:
        if token < 0:
            return ""
        if token not in self._tok_cache:
            self._tok_cache[token] = self.llm.detokenize([token], special=True).decode("utf-8", "replace")
        return self._tok_cache[token]

    def tokens(self, prompt: Prompt) -> list[int]:
        """Token ids of a prompt as the model sees it (BOS and chat template included)."""
        if prompt.chat:
            bos = [self.llm.token_bos()] if self._adds_bos() else []
            return chat_tokens(self.model_id, self._chat, lambda: self._tok(prompt.text), bos)
        return self._tok(prompt.text, bos=True)

    def _adds_bos(self) -> bool:
        return bool(self._tok("", bos=True))

    def wrapping(self, chat: bool) -> tuple[str, str] | None:
        """The text around a prompt's own as ``tokens`` puts it: the chat template's parts (chat) and the
        BOS token, when the model adds one that the parts do not already start with."""
        before, after, first = "", "", []
        if chat:
            if self._chat_text is None or self._chat is None:
                return None  # a chat prompt fails on this model: nothing was read
            (before, after), first = self._chat_text, self._chat[0][:1]
        bos = self.llm.token_bos()
        if self._adds_bos() and first != [bos]:
            before = self._piece(bos) + before
        return before, after

    def count_tokens(self, prompt: Prompt) -> int:
        return len(self.tokens(prompt))

    def single_token(self, text: str) -> bool | None:
        """Whether ``text`` is exactly one token of this model (answer labels must be; see answers.check_labels)."""
        return self._candidate_id(text) is not None

    def _candidate_id(self, cand: str) -> int | None:
        if cand not in self._cand_cache:
            ids = self._tok(cand)
            self._cand_cache[cand] = ids[0] if len(ids) == 1 else None
        return self._cand_cache[cand]

    # -- scoring --------------------------------------------------------------------------------
    def shared_tokens(self, prompt: Prompt, toks: list[int]) -> int:
        """The token position where the prompt's shared part ends (0: none declared, or not a token prefix)."""
        return self._prefix_tokens(prompt, prompt.shared, toks)

    def instructions_tokens(self, prompt: Prompt, toks: list[int]) -> int:
        """The token position where the prompt's item-independent text ends: the chat template's system part
        and the template's instructions (0: none declared, or not a token prefix)."""
        return self._prefix_tokens(prompt, prompt.instructions, toks)

    def _prefix_tokens(self, prompt: Prompt, chars: int, toks: list[int]) -> int:
        """The token position where the first ``chars`` characters of the prompt's text end (0: none). A
        tokenization that merges tokens across that point gives none, so the prompt's tokens never depend
        on a split."""
        if not chars:
            return 0
        head = self.tokens(Prompt(prompt.text[:chars], chat=prompt.chat))
        if prompt.chat and self._chat is not None and self._chat[1]:
            head = head[: -len(self._chat[1])]
        return len(head) if 0 < len(head) < len(toks) and toks[: len(head)] == head else 0

    def prompt_starts(self, prompt: Prompt, toks: list[int]) -> list[int]:
        """Where the batches of the prompt's evaluation begin (``batch_starts``), cut where its instructions
        and its family's shared part end. With ``reused_prefix`` this says how many of its tokens a
        prompt evaluates after the one before it."""
        return batch_starts(len(toks), (self.instructions_tokens(prompt, toks), self.shared_tokens(prompt, toks)),
                            self.n_batch)

    def _eval(self, toks: list[int], starts: list[int] | None = None) -> tuple[np.ndarray, int]:
        """Evaluate ``toks`` in batches beginning at ``starts`` (default: every ``n_batch`` tokens) and return
        (next-token logits, number of tokens actually evaluated).

        llama.cpp's CPU kernels compute a row differently depending on the batch it is in (a one-token
        batch goes through other kernels, up to 0.9 in a logit; the repacked 4-bit matmuls take rows four at
        a time and the batch's tail row by row). Reusing an arbitrary prefix therefore made a prompt's answer
        depend on the prompt before it (the same item scored differently alone and after another set's
        items; docs/journal.md, "Reproducing the figures"). So a prompt's batches are fixed by the prompt
        alone (``prompt_starts``), and the KV cache is kept only up to a batch start that the previous
        evaluation also had, with the same batches before it, within the tokens the two share
        (``reused_prefix``). The last token always runs, to produce logits.
        """
        llm = self.llm
        starts = batch_starts(len(toks), (), self.n_batch) if starts is None else starts
        keep = reused_prefix(llm.input_ids[: llm.n_tokens], self._marks, toks, starts) if self.reuse_prefix else 0
        # llama-cpp-python's eval() drops the KV cache beyond n_tokens before decoding, and decodes what it is
        # given in batches of n_batch from its first token: one call per batch, so each is exactly a batch.
        llm.n_tokens = keep
        self._marks = []
        bounds = [*starts, len(toks)]
        for begin, end in itertools.pairwise(bounds):
            if begin >= keep:
                llm.eval(toks[begin:end])
                self.decodes += 1
        self._marks = bounds
        return self._last_logits(), len(toks) - keep

    def _extend_all(self, tokens: list[int]) -> np.ndarray:
        """Append ``tokens`` to what ``_eval`` left in the KV cache, in batches of ``n_batch`` counted from
        their first token, and return the next-token logits of every position (one row per token).

        Each batch start joins ``_marks``, so the next ``_eval`` keeps the KV cache only up to a batch start
        its own from-scratch evaluation also has: a prompt's answer after a likelihood call stays equal to
        its answer alone. ``logits_all`` stays off (its buffer would hold the whole context's logits); each
        batch flags its own positions as outputs instead."""
        llm = self.llm
        marks = self._marks[:-1]  # [:-1]: drop the length entry
        self._marks = []  # a failed decode leaves nothing to reuse
        llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)
        rows: list[np.ndarray] = []
        for i in range(0, len(tokens), self.n_batch):
            chunk, n_past = tokens[i:i + self.n_batch], llm.n_tokens
            llm._batch.set_batch(batch=chunk, n_past=n_past, logits_all=True)
            llm._ctx.decode(llm._batch)
            self.decodes += 1
            llm.input_ids[n_past:n_past + len(chunk)] = chunk
            llm.n_tokens += len(chunk)
            marks.append(n_past)
            rows.extend(self._logits_at(k) for k in range(len(chunk)))  # copied before the next decode
        self._marks = [*marks, llm.n_tokens]
        return np.stack(rows)

    def _last_logits(self) -> np.ndarray:
        """The logits of the last position decoded (the only one llama.cpp keeps: ``logits_all`` is off)."""
        return self._logits_at(-1)

    def _logits_at(self, i: int) -> np.ndarray:
        """A copy of the logits of the ``i``-th output of the last decode (-1: its last)."""
        ptr = self._llama_cpp.llama_get_logits_ith(self.llm.ctx, i)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).astype(np.float64)

    def label_logprobs(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int = 20
    ) -> list[LabelDist | Failure]:
        out: list[LabelDist | Failure] = []
        ctx = self.capabilities.max_context
        for prompt in prompts:
            toks = self.tokens(prompt)
            if len(toks) >= ctx:
                out.append(too_long(len(toks), ctx))
                continue
            t0 = time.perf_counter()
            try:
                logits, n_eval = self._eval(toks, self.prompt_starts(prompt, toks))
            except (RuntimeError, ValueError) as exc:  # "llama_decode returned N", or its token bookkeeping
                out.append(self._decode_failure(len(toks), exc))
                continue
            self.eval_seconds += time.perf_counter() - t0
            self.tokens_evaluated += n_eval
            out.append(self._dist(log_softmax(logits), candidates, top_n, len(toks), n_eval))
        return out

    def _dist(self, lp: np.ndarray, candidates: Sequence[str], top_n: int, n_prompt: int, n_eval: int) -> LabelDist:
        """The label answer from the log-probabilities ``lp`` of the next token."""
        cands = {c: float(lp[i]) for c in candidates if (i := self._candidate_id(c)) is not None}
        top_idx = np.argpartition(-lp, top_n)[:top_n] if top_n < len(lp) else np.arange(len(lp))
        top_idx = top_idx[np.argsort(-lp[top_idx], kind="stable")]
        top = [(self._piece(int(i)), float(lp[i])) for i in top_idx]
        return LabelDist(cands, top, n_prompt_tokens=n_prompt, n_evaluated_tokens=n_eval)

    def hidden_states(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int = 20
    ) -> list[HiddenState | Failure]:
        """The final hidden state at the answer position (the last prompt token) with the label answer, from
        the same decode (``llamacpp_hidden``): the answer equals ``label_logprobs``' bit for bit."""
        reader = self._hidden_reader()
        out: list[HiddenState | Failure] = []
        for prompt in prompts:
            reader.vector, reader.active = None, True
            try:
                (dist,) = self.label_logprobs([prompt], candidates, top_n)
            finally:
                reader.active = False
            if isinstance(dist, Failure) or reader.vector is None:
                out.append(dist if isinstance(dist, Failure) else Failure(
                    f"llama.cpp's graph of {self.path.name} has no {FINAL_NORM.decode()} node to read"))
                continue
            out.append(HiddenState(reader.vector, dist))
        return out

    def _hidden_reader(self) -> FinalNormReader:
        """The context is created again with the eval callback the first time hidden states are asked for
        (with the same parameters; the KV cache starts empty), so a run that asks for none keeps the context
        it had: no callback, the same decodes at the same speed."""
        if self._reader is None:
            reader = FinalNormReader(self._llama_cpp, self.llm.n_embd())
            params = self.llm.context_params
            params.cb_eval = reader.callback
            self.llm._ctx.close()
            try:
                # llama-cpp-python's own wrapper, as Llama() builds it (it frees the context before the model)
                context = self._llama_cpp._internals.LlamaContext
                self.llm._ctx = context(model=self.llm._model, params=params, verbose=False)
            except ValueError as exc:
                raise BackendError(f"llama.cpp could not create a context that reads hidden states: {exc}") from exc
            self.reset()
            self._reader = reader
        return self._reader

    # -- a rationale before the answer (a judge that reasons first) ------------------------------------
    # The prompt is evaluated as a label prompt is (``_eval``: its batches fixed by the prompt alone). The
    # rationale is then generated one token per decode, each token chosen from the logits the previous decode
    # left (greedy, or sampled from an RNG seeded by the request alone), until the model ends its turn, writes
    # the answer line (a line that begins with the cue, outside thinking: the rationale is cut where that
    # line begins, and the KV state beyond it dropped), or the budget is spent. The answer cue is appended to
    # the KV state the generation left as one batch (with the rationale's last token, which no decode has run
    # yet when the budget ends it) and the label distribution is read at its last position: the prompt is
    # never evaluated twice, and the read costs one decode of a few tokens. Every step depends on the prompt
    # and the settings only, so an answer is the same whatever ran before it; the batches are recorded as
    # ``_marks`` like a prompt's, so the next prompt reuses only the prompt's own batches, never a decode of
    # the rationale (whose one-token batches a from-scratch evaluation of that prompt would not have).

    def reason(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int, how: Reasoning
    ) -> list[Reasoned | Failure]:
        """The rationale of each prompt and the label distribution read after it, one result per prompt in
        order; a prompt that cannot hold its rationale's budget in the window, or whose decode fails, fails
        alone."""
        out: list[Reasoned | Failure] = []
        window = self.capabilities.max_context
        for prompt in prompts:
            toks = self.tokens(prompt)
            n_cue = len(self._cue_tokens(how.cue, b"x"))
            full = no_room(len(toks), how, n_cue, window)
            if full is not None:
                out.append(full)
                continue
            try:
                out.append(self._reason_one(prompt, toks, candidates, top_n, how))
            except (RuntimeError, ValueError) as exc:  # llama_decode failures: this prompt only
                out.append(self._decode_failure(len(toks) + how.tokens + n_cue, exc))
        return out

    def _reason_one(self, prompt: Prompt, toks: list[int], candidates: Sequence[str], top_n: int,
                    how: Reasoning) -> Reasoned:
        marks, n_eval, thought = self.rationale(prompt, toks, how)
        t0 = time.perf_counter()
        # The KV state holds the prompt and the first ``ran`` tokens; the answer is read after the kept ones.
        self.llm.n_tokens = len(toks) + min(thought.keep, thought.ran)
        batch = thought.chosen[thought.ran:thought.keep] + self._cue_tokens(how.cue, thought.text)
        start = self.llm.n_tokens
        self.llm.eval(batch)  # one decode (a few tokens); llama-cpp-python drops the KV state beyond ``start``
        self.decodes += 1
        self._marks = [*marks, *range(len(toks), start), start, start + len(batch)]
        dist = self._dist(log_softmax(self._last_logits()), candidates, top_n, len(toks), n_eval + len(batch))
        self.eval_seconds += time.perf_counter() - t0
        self.tokens_evaluated += len(batch)
        return Reasoned(dist, thought.text.decode("utf-8", "replace").strip(), n_generated=len(thought.chosen))

    def rationale(self, prompt: Prompt, toks: list[int], how: Reasoning) -> tuple[list[int], int, Thought[bytes]]:
        """The prompt evaluated and its rationale generated, as ``reason`` does before it reads the answer: (the
        prompt's batch starts, the prompt tokens evaluated, the rationale). The rationale's generation alone,
        which ``benchmarks/reason_read.py`` times the whole of ``reason`` against."""
        t0 = time.perf_counter()
        logits, n_eval = self._eval(toks, self.prompt_starts(prompt, toks))
        marks = self._marks[:-1]  # the prompt's batch starts (its length comes back as the first token's)
        self._marks = []  # a failed decode leaves nothing to reuse
        t1 = time.perf_counter()
        rng = request_rng(prompt, how)
        thought = think(logits, how, pick=lambda lg: self._choose(lg, how, rng), step=self._step,
                        ends_turn=self._ends_turn, text=lambda ids: b"".join(map(self._token_bytes, ids)))
        self.eval_seconds += t1 - t0
        self.generate_seconds += time.perf_counter() - t1
        self.tokens_evaluated += n_eval
        self.tokens_generated += len(thought.chosen)
        return marks, n_eval, thought

    def _choose(self, logits: np.ndarray, how: Reasoning, rng: np.random.Generator) -> int:
        """The next token of a rationale (:func:`judge.backends.generation.choose`)."""
        return choose(logits, how, rng)

    def _step(self, token: int) -> np.ndarray:
        """Run one generated token (a decode of its own) and return the next token's logits."""
        self.llm.eval([token])
        return self._logits_view()

    def _ends_turn(self, token: int) -> bool:
        """Whether ``token`` ends the model's turn (end of text, end of a chat turn)."""
        return bool(self._llama_cpp.llama_vocab_is_eog(self._llama_cpp.llama_model_get_vocab(self.llm.model), token))

    def _token_bytes(self, token: int) -> bytes:
        """A token's text as bytes (a character may span tokens; special tokens such as ``<think>`` spelled)."""
        if token not in self._token_text:
            self._token_text[token] = bytes(self.llm.detokenize([token], special=True))
        return self._token_text[token]

    def _cue_tokens(self, cue: str, before: bytes) -> list[int]:
        """The answer line's tokens after a rationale whose text is ``before``: the cue on a line of its own."""
        return self._tok(cue if not before or before.endswith(b"\n") else "\n" + cue)

    def _logits_view(self) -> np.ndarray:
        """The last decode's logits as llama.cpp holds them (float32, not copied): enough to choose a token."""
        ptr = self._llama_cpp.llama_get_logits_ith(self.llm.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))

    def reason_settings(self) -> dict[str, object]:
        """How a rationale is generated and the answer read after it (``REASON_STEPS``)."""
        return {"steps": REASON_STEPS}

    def counters(self) -> dict[str, int]:
        """Tokens run through the model so far (after prefix reuse) and the decodes they took, when any were:
        what a run cost, for reports, benchmarks and ``--check`` (absent when every answer came from the
        cache)."""
        if not self.tokens_evaluated:
            return {}
        generated = {"tokens_generated": self.tokens_generated} if self.tokens_generated else {}
        return {"tokens_evaluated": self.tokens_evaluated, "decodes": self.decodes, **generated}

    # -- per-token log-probabilities of a given reply (likelihood methods) --------------------------
    # The label methods read one position (the next token after the prompt); likelihood methods need a
    # position per token of the reply. The prompt is evaluated as a label prompt is (``_eval``: its batches
    # fixed by the prompt alone, so its KV prefix reuse follows the same rule), then the reply's tokens but
    # the last are appended in batches of their own, every position an output (``_extend_all``). The answer
    # depends on the prompt and the reply only, never on what ran before.
    #
    # Until this engine appended them one token per decode: a reply of n tokens cost n - 1 decodes at the
    # speed of generation, most of a likelihood method's time. A one-token batch goes through other CPU
    # kernels than a longer one, so the two ways give slightly different log-probabilities, and the cache
    # keys say which one an answer came from (``REPLY_BATCHES``).

    def sequence_logprobs(self, requests: Sequence[tuple[Prompt, str]]) -> list[TokenLogprobs | Failure]:
        """Per-token log-probabilities of each continuation after its prompt, one result per request in
        order; a too-long or failed request fails alone."""
        out: list[TokenLogprobs | Failure] = []
        window = self.capabilities.max_context
        for prompt, text in requests:
            prefix = self.tokens(prompt)
            cont = self._tok(text)
            if not cont:  # nothing to score: an empty continuation has log-probability 0 and no tokens
                out.append(TokenLogprobs([], n_prompt_tokens=len(prefix)))
                continue
            n = len(prefix) + len(cont)
            if n >= window:
                out.append(too_long(n, window))
                continue
            t0 = time.perf_counter()
            try:
                lps, n_eval = self._evaluate_reply(prefix, cont, self.prompt_starts(prompt, prefix))
            except (RuntimeError, ValueError) as exc:  # llama_decode failures: this request only
                out.append(self._decode_failure(n, exc))
                continue
            self.eval_seconds += time.perf_counter() - t0
            self.tokens_evaluated += n_eval
            out.append(TokenLogprobs(lps, n_prompt_tokens=len(prefix), n_evaluated_tokens=n_eval))
        return out

    def _evaluate_reply(self, prefix: list[int], cont: list[int], starts: list[int]) -> tuple[list[float], int]:
        """The prompt's last position gives the first reply token's log-probability; one pass over the reply
        but its last token gives the others. The prompt is evaluated in the batches a label prompt would be
        (``starts``: a declared shared part as batches of its own), so the continuations asked after one
        prompt (the follow-ups of a reply) reuse it."""
        logits, evaluated = self._eval(prefix, starts)
        lps = [float(log_softmax(logits)[cont[0]])]
        if len(cont) > 1:
            rows = self._extend_all(cont[:-1])
            evaluated += len(cont) - 1
            lps.extend(float(log_softmax(row)[target]) for row, target in zip(rows, cont[1:], strict=True))
        return lps, evaluated

    def token_by_token(self, prompt: Prompt, text: str) -> list[float]:
        """The continuation's log-probabilities as the engine computed them before it evaluated a reply in
        batches: each token but the last appended as a decode of its own. Kept as the reference the batched
        evaluation is checked and timed against (``tests/test_likelihood.py``, ``benchmarks/likelihood_speed.py``);
        it leaves the KV cache empty, so it never feeds prefix reuse, nor the counters (it is not a run)."""
        cont = self._tok(text)
        self.reset()
        decodes = self.decodes
        logits, _ = self._eval(self.tokens(prompt))
        self.decodes = decodes
        out = [float(log_softmax(logits)[cont[0]])] if cont else []
        for prev, target in itertools.pairwise(cont):
            self.llm.eval([prev])
            out.append(float(log_softmax(self._last_logits())[target]))
        self.reset()
        return out

    def sequence_settings(self) -> dict[str, object]:
        """How a reply's tokens are evaluated (``REPLY_BATCHES``): answers of the engine that decoded them
        one at a time have other keys, and are never served as this engine's."""
        return {"reply": REPLY_BATCHES}

    def _decode_failure(self, n_tokens: int, exc: Exception) -> Failure:
        """A failed ``llama_decode`` fails only this prompt. The KV cache may hold part of it, so it is
        dropped: the next prompt must not reuse a prefix that was never fully evaluated."""
        self.reset()
        return Failure(f"llama.cpp could not evaluate the prompt ({n_tokens} tokens): {exc}")

    def reset(self) -> None:
        """Empty the KV cache: the next prompt is evaluated from scratch and reuses nothing."""
        self.llm.reset()
        self._marks = []

    def settings(self) -> dict[str, object]:
        # The file's content hash, not only its name, goes into cache keys: a GGUF replaced in place
        # must not be served the old file's cached answers. llama.cpp options given by the user
        # (flash attention changes a probability by up to .03) join them only when there are some, so
        # the keys of the default settings stay what they were.
        # "reuse" names how the KV prefix is reused: answers cached before prefix reuse kept to whole batches
        # depended on the prompt evaluated before them, and must not be served as this engine's answers.
        out: dict[str, object] = {"n_ctx": self.capabilities.max_context, "file": self.path.name, "sha256": self.sha256,
                                  "reuse": f"whole batches of {self.n_batch}"}
        if self.llama_options:
            out["llama"] = self.llama_options
        if not self.extra_buffers:
            out["extra_buffers"] = False
        return out

    def close(self) -> None:
        if getattr(self, "record_rate", False) and getattr(self, "tokens_evaluated", 0):
            # What this run achieved becomes the machine's rate for the model (``judge run --check``).
            record_run(rate_key(self.rate_identity()), self.model_id, self.threads, self.tokens_evaluated,
                       self.decodes, self.eval_seconds, self.tokens_generated, self.generate_seconds)
        llm = getattr(self, "llm", None)
        if llm is not None:
            llm.close()
            del self.llm
