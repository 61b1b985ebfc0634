"""``judge serve``: one judge, built from the options of ``judge score``, answering over HTTP (docs/serve.md)."""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import sys
from typing import Any

from ..core.config import GENERATE
from ..core.errors import InputError
from ..core.settings import Settings
from ..datasets import load_items
from ..engine import MethodSpec
from ..engine.spec import method_type
from ..methods.pairwise import check_not_spec_default
from ..serve import require_extra
from ..serve.service import JudgeService, check_servable
from . import EXIT_OK
from .options import (
    FLAGS,
    add_judge_options,
    add_type_options,
    backend_options,
    check_counts,
    parse_scales,
    resolve_quality,
    spec_from_args,
    spec_from_flags,
)
from .score import _registered_qualities

#: Default limit of a request body (bytes).
MAX_BODY_BYTES = 1 << 20


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("serve", help="score items over HTTP with one judge loaded once (docs/serve.md)")
    s = p.add_argument_group("service")
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; an address that is not "
                   "loopback needs --allow-remote)")
    s.add_argument("--port", type=int, default=8080, help="TCP port (default 8080; 0 picks a free one, printed)")
    s.add_argument("--allow-remote", action="store_true", help="allow binding an address other machines can reach "
                   "(put it behind TLS and set --token-env)")
    s.add_argument("--max-batch", type=int, default=64, metavar="N", help="items per batch request (default 64)")
    s.add_argument("--max-body-bytes", type=int, default=MAX_BODY_BYTES, metavar="N",
                   help=f"largest request body (default {MAX_BODY_BYTES}); larger ones get 413 unread")
    s.add_argument("--token-env", default=None, metavar="NAME", help="require 'Authorization: Bearer <token>' on "
                   "every endpoint but /healthz, the token read from environment variable NAME (never a flag)")
    s.add_argument("--reference-set", default=None, metavar="FILE",
                   help="ensembles (--member ...): the items each request's items are ranked among, a JSONL or "
                   "benchmark file scored once at startup (rated for --quality with --fit cv)")
    s.add_argument("--compare-prompt", default="pairwise", metavar="PROMPT",
                   help="the pairwise template POST /v1/compare reads two replies with (default pairwise; "
                   "pairwise-tie allows a tie; a .j2 path), on the model of --model and the other runtime flags; "
                   "'none': no /v1/compare (docs/pairwise.md)")
    add_judge_options(p)
    add_type_options(p, method_type("pairwise"))
    return p


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_args(args: argparse.Namespace) -> None:
    """The service's own options, before anything loads."""
    if not args.allow_remote and not is_loopback(args.host):
        raise InputError(f"{args.host} is reachable from other machines; pass --allow-remote to bind it (and set "
                         "--token-env)", field="--host")
    if not 0 <= args.port <= 65535:
        raise InputError(f"must be 0..65535, got {args.port}", field="--port")
    check_counts(args, "max_batch", "max_body_bytes")


def read_token(name: str | None) -> str | None:
    """The bearer token from environment variable ``name`` (None: no auth)."""
    if name is None:
        return None
    token = os.environ.get(name, "").strip()
    if not token:
        raise InputError(f"environment variable {name} is unset or empty (it must hold the bearer token)",
                         field="--token-env")
    return token


def bind(host: str, port: int) -> socket.socket:
    """A listening socket, bound before the model loads: a busy port fails fast, and --port 0 gets its number."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise InputError(f"cannot bind {host}:{port}: {exc.strerror or exc}", field="--port") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def run(args: argparse.Namespace) -> int:
    check_args(args)
    token = read_token(args.token_env)
    require_extra()
    spec = spec_from_args(args)
    # The quality's scale is read from the file that holds labels: the example pool, else the reference set.
    pool = spec.kind.examples(spec)[1]
    source = pool or args.reference_set
    reference = load_items(args.reference_set) if args.reference_set else None
    labelled = load_items(pool) if pool else reference or []
    known = _registered_qualities(source, labelled) if source else ()
    quality = resolve_quality(args.quality, labelled, known, parse_scales(args))
    check_servable(spec, reference)  # before the port opens: e.g. a method that reads the next user turn
    pairwise = compare_spec(args)
    sock = bind(args.host, args.port)
    try:
        from ..serve.app import Settings, create_app  # starlette loads only when a server starts

        service = JudgeService.build(spec, quality, reference, pairwise)
        try:
            settings = Settings(max_batch=args.max_batch, max_body_bytes=args.max_body_bytes, token=token)
            serve(create_app(service, settings), sock)
        finally:
            service.close()  # already closed by the app's shutdown; here for a failed start
    finally:
        sock.close()
    return EXIT_OK


def compare_spec(args: argparse.Namespace) -> MethodSpec | None:
    """The pairwise method of ``POST /v1/compare``: ``--compare-prompt`` and ``--orders``, run where the flags
    say the served judge runs (backend, model, options, generation settings); None for ``none``."""
    if args.compare_prompt.lower() == "none":
        return None
    check_not_spec_default(args.compare_prompt, "--compare-prompt")
    return spec_from_flags({"type": "pairwise", "prompt": args.compare_prompt,
                            **Settings(method_type("pairwise").settings).given(args),
                            "seeds": (args.seed or 0,), "backend": args.backend, "model": args.model,
                            "options": backend_options(args), "generate": GENERATE.given(args)},
                           {**FLAGS, "prompt": "--compare-prompt"})


def serve(app: Any, sock: socket.socket) -> None:
    """Run uvicorn on ``sock`` until SIGINT/SIGTERM; in-flight requests finish first (graceful shutdown)."""
    import uvicorn

    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"judge serve: listening on http://{shown}:{port}", file=sys.stderr, flush=True)
    # Access log off: request lines would be the only place a token-bearing request could be logged.
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", server_header=False,
                            timeout_graceful_shutdown=None)
    uvicorn.Server(config).run(sockets=[sock])
