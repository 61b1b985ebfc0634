"""The method spec: everything that defines one method, whatever entry point it came from.

CLI flags (``judge score/bench/serve``), a TOML ``[[methods]]`` table (``judge run``) and
``make_judge(...)`` keyword arguments all map onto :class:`MethodSpec`; :mod:`judge.engine.build`
turns a spec into a ready scorer. A spec holds names and numbers only (no loaded objects), so it can
be validated cheaply, compared, and written into results files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from ..config import GenerateConfig
from ..errors import InputError

MethodType = Literal["llm", "classic", "ensemble"]

#: How an ensemble combines its members' scores (:mod:`judge.scorers.ensemble`).
COMBINE_RULES = ("rank-mean", "mean")
#: Where an ensemble's weights come from: given (``fixed``), learned by grouped cross-validation on the
#: set being scored (``cv``), or learned on the other sets of a ``judge run`` experiment (``lodo``:
#: leave one dataset out).
FIT_RULES = ("fixed", "cv", "lodo")

#: Option names that would carry a secret; keys come only from environment variables.
SECRET_OPTIONS = frozenset({"api_key", "apikey", "key", "token", "secret", "password", "authorization"})


@dataclass(frozen=True)
class MethodSpec:
    """One method: an LLM judge (prompt + selector + backend + rule), a classic scorer, or an ensemble
    whose score combines its ``members``' scores (see :mod:`judge.scorers.ensemble`).

    ``prompt`` is a built-in name, ``"fed"`` (the FED rating prompt of the quality being scored) or a
    path to a ``.j2`` template. ``pool`` names a labelled file to draw examples from; None means the
    rated items of the data being scored (each item's own conversation kept out by the guard).
    ``seeds`` are selection seeds: random selection runs each, other selectors the first only.
    """

    name: str = ""
    type: MethodType = "llm"
    prompt: str = "yesno"
    selector: str = "none"
    k: int = 0
    seeds: tuple[int, ...] = (0,)
    group_guard: bool = True
    order: str = "ascending"
    manual_set: str | None = None
    pool: str | None = None
    backend: str = "llamacpp"
    model: str | None = None
    #: Backend options (LLM methods) or scorer options (classic methods).
    options: Mapping[str, Any] = field(default_factory=dict)
    generate: GenerateConfig = field(default_factory=GenerateConfig)
    top_k: int = 3
    rule: str = "topk"
    scorer: str | None = None
    #: Ensemble members (each a full spec), their weights (empty: equal) and how they combine.
    members: tuple[MethodSpec, ...] = ()
    weights: tuple[float, ...] = ()
    combine: str = "rank-mean"
    #: ``cv``: weights learned from the scored set's human ratings by grouped cross-validation.
    fit: str = "fixed"
    #: Members (by name) that the ensemble leaves out on a set lacking an input they need (a reference,
    #: a next user turn), decided from the data before anything is computed and recorded in the results.
    optional: tuple[str, ...] = ()
    #: The paper's row shown beside this method in leaderboards (labels only; never changes scores).
    paper: str | None = None
    #: Opt in to a method (or member) that reads the user's turn after the rated response on turn-level
    #: items (``next_user``): refused otherwise, as a live judge never has it (see engine.kinds).
    allow_future: bool = False
    #: Position of the config entry it came from (for error messages); 0 elsewhere.
    index: int = 0

    def __post_init__(self) -> None:
        check_no_secrets(self.options, "options" if self.type == "classic" else "backend-option")
        if self.k < 0:
            raise InputError(f"must be >= 0, got {self.k}", field="k")
        if self.top_k < 1:
            raise InputError(f"must be >= 1, got {self.top_k}", field="top_k")
        if not self.seeds:
            raise InputError("at least one seed is needed", field="seeds")
        if self.type == "llm" and self.k > 0 and self.selector in ("none", "zero-shot"):
            raise InputError(f"k = {self.k} needs an example selector (e.g. 'random' or 'bm25-context')",
                             field="selector")
        if self.type == "classic" and not self.scorer:
            raise InputError("a classic method needs a scorer name (e.g. 'length')", field="scorer")
        if self.type == "ensemble":
            self._check_ensemble()
        elif self.members or self.weights or self.fit != "fixed" or self.optional:
            raise InputError(f"members, weights, fit and optional belong to ensembles, not to a {self.type} method",
                             field="members")
        if not self.name:
            object.__setattr__(self, "name", self.default_name())

    def _check_ensemble(self) -> None:
        if len(self.members) < 2:
            raise InputError(f"an ensemble needs at least two members, got {len(self.members)}", field="members")
        if any(m.type == "ensemble" for m in self.members):
            raise InputError("an ensemble member cannot itself be an ensemble; list its members", field="members")
        names = [m.name for m in self.members]
        if len(set(names)) < len(names):
            raise InputError(f"members are listed twice: {', '.join(names)}", field="members")
        if self.combine not in COMBINE_RULES:
            raise InputError(f"must be one of {', '.join(COMBINE_RULES)}, got {self.combine!r}", field="combine")
        if self.weights and len(self.weights) != len(self.members):
            raise InputError(f"{len(self.weights)} weights for {len(self.members)} members", field="weights")
        if any(w < 0 for w in self.weights) or (self.weights and sum(self.weights) <= 0):
            raise InputError("weights must be >= 0 with a positive sum", field="weights")
        if self.fit not in FIT_RULES:
            raise InputError(f"must be one of {', '.join(FIT_RULES)}, got {self.fit!r}", field="fit")
        if self.fit != "fixed" and self.weights:
            raise InputError(f"fit = '{self.fit}' learns the weights: give weights or fit, not both", field="weights")
        unknown = [n for n in self.optional if n not in names]
        if unknown:
            raise InputError(f"{', '.join(unknown)} is not a member (members: {', '.join(names)})", field="optional")
        if self.optional and self.fit == "lodo":
            raise InputError("fit = 'lodo' learns one weight per member across sets, so every member must score "
                             "every set: drop optional or use fit = 'cv' / given weights", field="optional")

    def default_name(self) -> str:
        """The name a method gets when none is given: ``<prompt>-<selector>-k<k>``, the scorer's, or
        ``ensemble(<member>+<member>...)``."""
        if self.type == "classic":
            return str(self.scorer)
        if self.type == "ensemble":
            return f"ensemble({'+'.join(m.name for m in self.members)})"
        return f"{self.prompt}-{self.selector}-k{self.k}"

    @property
    def seeded(self) -> bool:
        """Whether seeds change the result (random selection); other methods run their first seed only."""
        return self.type == "llm" and self.selector == "random" and self.k > 0

    def run_seeds(self) -> tuple[int, ...]:
        return self.seeds if self.seeded else self.seeds[:1]

    def with_changes(self, **changes: Any) -> MethodSpec:
        """A copy with fields replaced (validated again)."""
        return replace(self, **changes)

    def describe(self) -> dict[str, Any]:
        """JSON-ready settings for provenance (results files, ``/v1/info``); holds no secret."""
        if self.type == "classic":
            return {"type": "classic", "scorer": self.scorer, "options": dict(self.options), "paper": self.paper}
        if self.type == "ensemble":
            weights: Any = "learned" if self.fit == "cv" else list(self.weights) or [1.0] * len(self.members)
            return {"type": "ensemble", "combine": self.combine, "weights": weights,
                    **({"fit": self.fit} if self.fit != "fixed" else {}),
                    **({"optional": list(self.optional)} if self.optional else {}),
                    "members": {m.name: {k: v for k, v in m.describe().items() if k != "paper"}
                                for m in self.members}, "paper": self.paper}
        gen = asdict(self.generate)
        return {
            "type": "llm", "prompt": self.prompt, "selector": self.selector, "k": self.k,
            "seeds": list(self.run_seeds()), "group_guard": self.group_guard, "order": self.order,
            "manual_set": self.manual_set, "pool": self.pool, "backend": self.backend, "model": self.model,
            "options": dict(self.options), "generate": gen, "top_k": self.top_k, "rule": self.rule,
            "paper": self.paper,
        }


def check_no_secrets(options: Mapping[str, Any], flag: str) -> None:
    """Refuse an option that carries a key: secrets come from the environment, never flags or files."""
    for key in options:
        if key.lower().replace("-", "_") in SECRET_OPTIONS:
            raise InputError(
                f"'{key}' would put a secret on the command line or in a file; keys are read only from "
                "environment variables: name the variable with --api-key-env NAME (TOML: "
                "options.api_key_env = \"NAME\")", field=flag)
