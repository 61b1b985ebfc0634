"""transformers backend: causal LMs and encoder-decoder models (Flan-T5, InstructDial) in-process.

* Causal models: prompts are left-padded and batched by length; the answer distribution is the
  next-token distribution after the last prompt token. Position ids are computed from the attention
  mask so that padding never shifts a prompt's positions: an item's score does not depend on its
  batch (up to float rounding, ~1e-6 in fp32).
* Encoder-decoder models: the prompt is the encoder input; the answer distribution is the decoder's
  first step after its start token.
* GGUF files load through transformers (dequantised to fp32, slow); ``gguf_cache`` re-saves the
  result as safetensors once so later loads are fast.
* No KV reuse across prompts: batching is this backend's speed-up (llama.cpp reuses prefixes).
* A judge that reasons first (``reason``, causal models): the prompt is run once with its KV cache kept,
  the rationale generated one token per forward pass on that cache, the cache cropped where the rationale
  ends, and the answer cue run on it; the label distribution is read at the cue's last token. One prompt
  at a time (no padding). Encoder-decoder models do not reason (``capabilities.reason`` False).
"""

from __future__ import annotations

import inspect
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.config import GenerateConfig
from ..core.errors import BackendError, MissingExtraError
from ..models.packaged import DEFAULT_MODEL, PACKAGED, resolve_model_path, sha256_file
from .base import Backend, Capabilities, Failure, HiddenState, LabelDist, Prompt, Reasoned, Reasoning
from .generation import choose, no_room, request_rng, think
from .hf_tokens import HFPromptTokenizer, HFTokenCounting

_DTYPES = ("auto", "float32", "float16", "bfloat16")


def _import_transformers() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise MissingExtraError("the transformers backend", "hf", exc.name or "transformers") from exc
    return torch, transformers


def default_gguf_cache() -> Path:
    """Where re-saved GGUF models live unless told otherwise: $JUDGE_HOME/transformers-gguf."""
    return Path(os.environ.get("JUDGE_HOME", Path.home() / ".cache" / "judge")) / "transformers-gguf"


def split_gguf(model: str | None) -> tuple[str, str | None, str | None]:
    """(directory or hub id, GGUF file name or None, expected sha256 or None) for a model argument.

    ``None`` and packaged names resolve to the packaged GGUF (sha256-checked); a path ending in
    ``.gguf`` is split into its folder and file name; anything else is a local dir or hub id.
    """
    if model is None or model in PACKAGED:
        path = resolve_model_path(model)
        return str(path.parent), path.name, PACKAGED[model or DEFAULT_MODEL].sha256
    if model.lower().endswith(".gguf"):
        path = Path(model).expanduser()
        if not path.is_file():
            raise BackendError(f"GGUF file not found: {model}")
        return str(path.parent), path.name, None
    return model, None, None


def gguf_cache_path(model: str | None, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder where the safetensors copy of a GGUF lives (its name carries the GGUF's sha256)."""
    where, gguf_file, sha = split_gguf(model)
    if gguf_file is None:
        raise BackendError(f"{model} is not a GGUF file or packaged model; nothing to convert")
    sha = sha or sha256_file(Path(where) / gguf_file)
    base = Path(cache_dir) if cache_dir else default_gguf_cache()
    return base / f"{Path(gguf_file).stem}-{sha[:16]}"


def save_safetensors(model: Any, tokenizer: Any, out: Path) -> Path:
    """Save a (GGUF-loaded) model and its tokenizer to ``out`` atomically, as plain safetensors."""
    # save_pretrained refuses a model still marked as GGUF-quantised; its weights are already dequantised.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=out.name + ".", dir=out.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        try:
            os.replace(tmp, out)
        except OSError:  # another process finished the same conversion first
            if not (out / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def gguf_to_safetensors(model: str | None, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Load a GGUF through transformers once and re-save it (fp32 safetensors + tokenizer).

    Returns the folder, reused on later calls. vLLM cannot read these GGUFs itself and loads this
    folder instead.
    """
    out = gguf_cache_path(model, cache_dir)
    if (out / "config.json").is_file():
        return out
    where, gguf_file, _ = split_gguf(model)
    torch, transformers = _import_transformers()
    tok = transformers.AutoTokenizer.from_pretrained(where, gguf_file=gguf_file)
    model_obj = transformers.AutoModelForCausalLM.from_pretrained(where, gguf_file=gguf_file, dtype=torch.float32)
    return save_safetensors(model_obj, tok, out)


class TransformersBackend(HFTokenCounting, Backend):
    """A Hugging Face model (causal or encoder-decoder) run in-process with PyTorch."""

    name = "transformers"

    def __init__(
        self,
        model: str | None,
        config: GenerateConfig,
        *,
        dtype: str | None = None,
        device: str | None = None,
        gguf_file: str | None = None,
        gguf_cache: bool | str | None = None,
        revision: str | None = None,
        trust_remote_code: bool = False,
        max_batch_tokens: int = 16384,
        **model_kwargs: Any,
    ) -> None:
        torch, transformers = _import_transformers()
        self._torch = torch
        self.config = config
        self.model_id = model or DEFAULT_MODEL
        self.max_batch_tokens = max_batch_tokens
        if dtype is not None and dtype not in _DTYPES:
            raise BackendError(f"dtype must be one of {', '.join(_DTYPES)}, got {dtype!r}")
        if config.threads:
            torch.set_num_threads(config.threads)

        where, gfile, _ = split_gguf(model)
        gfile = gguf_file or gfile
        self.gguf_file = gfile  # provenance: the re-saved copy holds the same weights
        save_to: Path | None = None
        self.loaded_from = where  # set again below when a saved copy replaces the GGUF
        if gfile and gguf_cache:
            if gguf_file:
                raise BackendError("gguf_cache works with a .gguf path or a packaged model, not with gguf_file=")
            cached = gguf_cache_path(model, None if gguf_cache is True else gguf_cache)
            if (cached / "config.json").is_file():
                where, gfile = str(cached), None
                self.loaded_from = where
            else:
                save_to = cached  # load the GGUF now, save the dequantised copy after loading
        self.revision = revision

        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        # fp16 matmuls are slow or missing on CPU; there fp32 is the default (GGUFs are dequantised to it).
        if dtype is None:
            dtype = "float32" if device == "cpu" else "auto"
        self.dtype_name = dtype
        #: Further from_pretrained options (attn_implementation, ...): they can move answers.
        self.model_options = {k: str(v) for k, v in sorted(model_kwargs.items())}
        load: dict[str, Any] = {"revision": revision, "trust_remote_code": trust_remote_code}
        if gfile:
            load["gguf_file"] = gfile
        try:
            hf_config = transformers.AutoConfig.from_pretrained(where, **load)
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(where, **load)
            self.is_seq2seq = bool(getattr(hf_config, "is_encoder_decoder", False))
            auto = transformers.AutoModelForSeq2SeqLM if self.is_seq2seq else transformers.AutoModelForCausalLM
            torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype)
            kw = dict(load, dtype=torch_dtype, **model_kwargs)
            if device == "auto":
                kw["device_map"] = "auto"  # spread over all visible GPUs (accelerate)
            self.model = auto.from_pretrained(where, **kw)
        except (OSError, ValueError, KeyError) as exc:
            raise BackendError(f"transformers could not load {self.model_id}: {exc}") from exc
        #: The safetensors copy of a GGUF, when ``gguf_cache`` made or found one.
        self.gguf_copy: Path | None = Path(where) if gguf_cache and gfile is None and self.gguf_file else None
        if save_to is not None and self.model.dtype == torch.float32:  # the cache holds fp32 copies only
            self.gguf_copy = save_safetensors(self.model, self.tokenizer, save_to)
        if device != "auto":
            self.model.to(device)
        self.model.eval()
        self._input_device = next(self.model.parameters()).device

        self.prompts = HFPromptTokenizer(self.tokenizer, self.model_id)
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = self.tokenizer.eos_token_id if self.tokenizer.eos_token_id is not None else 0
        self.pad_id = int(pad)  # never attended to (attention mask), so any id will do
        params = inspect.signature(self.model.forward).parameters
        self._takes_positions = "position_ids" in params
        self._keep_arg = next((a for a in ("logits_to_keep", "num_logits_to_keep") if a in params), None)
        # The KV cache's argument (and output field): ``cache`` since transformers 5.x, ``past_key_values`` before.
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        if self.is_seq2seq:
            start = self.model.config.decoder_start_token_id
            if start is None:
                start = self.model.generation_config.decoder_start_token_id
            if start is None:
                raise BackendError(f"{self.model_id}: encoder-decoder model without a decoder_start_token_id")
            self.decoder_start = int(start)

        self.capabilities = Capabilities(
            full_vocab=True,
            top_n=None,
            chat_template=self.prompts.has_chat_template,
            max_context=config.max_context or self._model_max_context(),
            batching=True,
            hidden_states=True,
            reason=not self.is_seq2seq,
        )
        ends = self.model.generation_config.eos_token_id if self.model.generation_config is not None else None
        ends = ends if ends is not None else self.tokenizer.eos_token_id
        #: Tokens that end the model's turn (its generation config's, else the tokenizer's end of text).
        self.turn_ends = frozenset(ends if isinstance(ends, list) else [ends] if ends is not None else [])

    def _model_max_context(self) -> int:
        cfg = self.model.config
        for attr in ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "n_ctx"):
            value = getattr(cfg, attr, None)
            if isinstance(value, int) and value > 0:
                return value
        # Relative-position models (T5) have no hard limit; the tokenizer knows what they were trained on.
        value = getattr(self.tokenizer, "model_max_length", None)
        if isinstance(value, int) and 0 < value < 1_000_000:
            return value
        return 2048

    # -- scoring --------------------------------------------------------------------------------
    def _batches(self, seqs: dict[int, list[int]]) -> list[list[int]]:
        """The indices of ``seqs`` grouped into batches of similar length."""
        size = max(1, self.config.batch_size)
        batches: list[list[int]] = []
        cur: list[int] = []
        for i in sorted(seqs, key=lambda i: len(seqs[i])):
            longest = max([len(seqs[j]) for j in cur] + [len(seqs[i])])
            if cur and (len(cur) >= size or longest * (len(cur) + 1) > self.max_batch_tokens):
                batches.append(cur)
                cur = []
            cur.append(i)
        if cur:
            batches.append(cur)
        return batches

    def _forward(self, seqs: list[list[int]], hidden: bool = False) -> tuple[Any, Any]:
        """Log-softmax over the full vocabulary at the answer position, one row per sequence; with
        ``hidden``, also the last layer's hidden state there (``output_hidden_states`` collects the states
        the pass computes anyway: the logits are the same), else None."""
        torch = self._torch
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for r, s in enumerate(seqs):
            if self.is_seq2seq:  # encoder input: right padding, the mask hides it
                ids[r, : len(s)] = torch.tensor(s)
                mask[r, : len(s)] = 1
            else:  # left padding: the last column is every prompt's last token
                ids[r, width - len(s) :] = torch.tensor(s)
                mask[r, width - len(s) :] = 1
        ids, mask = ids.to(self._input_device), mask.to(self._input_device)
        extra: dict[str, Any] = {"output_hidden_states": True} if hidden else {}
        with torch.inference_mode():
            if self.is_seq2seq:
                dec = torch.full((len(seqs), 1), self.decoder_start, dtype=torch.long, device=self._input_device)
                out = self.model(input_ids=ids, attention_mask=mask, decoder_input_ids=dec, use_cache=False, **extra)
                states = out.decoder_hidden_states if hidden else None
            else:
                kw: dict[str, Any] = {"use_cache": False, **extra}
                if self._takes_positions:
                    # Positions count real tokens only, as if the prompt had never been padded.
                    kw["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0)
                if self._keep_arg:
                    kw[self._keep_arg] = 1  # only the last position's logits (vocab x length is large)
                out = self.model(input_ids=ids, attention_mask=mask, **kw)
                states = out.hidden_states if hidden else None
            logits = out.logits[:, -1, :].float()
            last = states[-1][:, -1, :].float().cpu() if states is not None else None
            return torch.log_softmax(logits, dim=-1).cpu(), last

    def label_logprobs(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int = 20
    ) -> list[LabelDist | Failure]:
        return [r if isinstance(r, Failure) else r.dist for r in self._score(prompts, candidates, top_n, False)]

    def hidden_states(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int = 20
    ) -> list[HiddenState | Failure]:
        """The last layer's hidden state at the answer position (the prompt's last token; for an
        encoder-decoder model the decoder's first position) with the label answer, from one forward pass."""
        return self._score(prompts, candidates, top_n, True)

    def _score(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int, hidden: bool
    ) -> list[HiddenState | Failure]:
        failed, seqs = self.fitting(prompts, self.capabilities.max_context)
        out: list[HiddenState | Failure | None] = list(failed)
        cand_ids = self.prompts.candidate_ids(candidates)
        for batch in self._batches(seqs):
            try:
                lp, states = self._forward([seqs[i] for i in batch], hidden)
            except (RuntimeError, ValueError) as exc:  # e.g. out of memory: fail these items, keep the run
                for i in batch:
                    out[i] = Failure(f"forward pass failed: {exc}")
                continue
            for row, i in enumerate(batch):
                n = len(seqs[i])
                vector = states[row].tolist() if states is not None else []
                out[i] = HiddenState(vector, self._dist(lp[row], cand_ids, top_n, n, n))
        return [o if o is not None else Failure("internal error: prompt not scored") for o in out]

    def reason(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int, how: Reasoning
    ) -> list[Reasoned | Failure]:
        """Each prompt's rationale and the label distribution read after it (see the module docstring), one
        prompt at a time; a prompt that cannot hold its rationale's budget in the window fails alone."""
        out: list[Reasoned | Failure] = []
        window = self.capabilities.max_context
        for prompt in prompts:
            try:
                toks = self.tokens(prompt)
            except BackendError as exc:
                out.append(Failure(str(exc)))
                continue
            full = no_room(len(toks), how, len(self.prompts.text_tokens("\n" + how.cue)), window)
            if full is not None:
                out.append(full)
                continue
            try:
                out.append(self._reason_one(prompt, toks, candidates, top_n, how))
            except (RuntimeError, ValueError) as exc:  # e.g. out of memory: fail this item, keep the run
                out.append(Failure(f"forward pass failed: {exc}"))
        return out

    def _reason_one(self, prompt: Prompt, toks: list[int], candidates: Sequence[str], top_n: int,
                    how: Reasoning) -> Reasoned:
        torch = self._torch
        device = self._input_device
        with torch.inference_mode():
            first = self.model(input_ids=torch.tensor([toks], device=device), use_cache=True)
            cache = first[self._cache_arg]  # updated in place by every later forward pass that is handed it

            def step(token: int) -> Any:
                out = self.model(input_ids=torch.tensor([[token]], device=device), use_cache=True,
                                 **{self._cache_arg: cache})
                return out.logits[0, -1].float().cpu().numpy()

            rng = request_rng(prompt, how)
            thought = think(first.logits[0, -1].float().cpu().numpy(), how, pick=lambda lg: choose(lg, how, rng),
                            step=step, ends_turn=self.turn_ends.__contains__, text=self.prompts.text)
            drop = thought.ran - min(thought.keep, thought.ran)  # tokens run after where the rationale is cut
            if drop:
                cache.crop(-drop)  # negative: remove that many (positive lengths are refused since transformers 5)
            said = thought.text
            cue = self.prompts.text_tokens(how.cue if not said or said.endswith("\n") else "\n" + how.cue)
            batch = thought.chosen[thought.ran:thought.keep] + cue
            last = self.model(input_ids=torch.tensor([batch], device=device), use_cache=True, **{self._cache_arg: cache})
            lp = torch.log_softmax(last.logits[0, -1].float(), dim=-1).cpu()
        dist = self._dist(lp, self.prompts.candidate_ids(candidates), top_n, len(toks), len(toks) + len(batch))
        return Reasoned(dist, said.strip(), n_generated=len(thought.chosen))

    def _dist(self, lp: Any, cand_ids: dict[str, int], top_n: int, n_prompt: int, n_eval: int) -> LabelDist:
        """The label answer from one position's log-probabilities over the vocabulary (a tensor)."""
        top_vals, top_idx = self._torch.topk(lp, min(top_n, lp.shape[-1]))
        top = [(self.prompts.piece(int(t)), float(v)) for v, t in zip(top_vals, top_idx, strict=True)]
        return LabelDist({c: float(lp[t]) for c, t in cand_ids.items()}, top, n_prompt_tokens=n_prompt,
                         n_evaluated_tokens=n_eval)

    def settings(self) -> dict[str, object]:
        out: dict[str, object] = {
            "dtype": self.dtype_name,
            "gguf_file": self.gguf_file,
            "revision": self.revision,
            "max_context": self.capabilities.max_context,
        }
        if self.model_options:  # only when given: the keys of the default settings stay what they were
            out["model_options"] = self.model_options
        return out

    def close(self) -> None:
        self.model = None
