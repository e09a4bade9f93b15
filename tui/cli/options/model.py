"""The model options shared by every command that loads a model, and verbosity."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.cli.options.sampler_registry import registry_of_args
from tui.cli.verbose import log

if TYPE_CHECKING:
    from backend.llama.repack_probe import Weights
    from backend.llama.rpc import Endpoint
    from backend.session.llama_backend import LlamaBackend
    from sampling.settings.registry import Registry


RPC_HELP = (
    "split the model's layers across llama.cpp RPC servers (samplescope rpc-server on each"
    ' machine; default: the config\'s rpc; "" runs locally)'
)


def add_rpc_flag(parser: Any) -> None:
    """Add `--rpc HOST:PORT[,HOST:PORT...]` to a parser or an argument group."""
    parser.add_argument("--rpc", default=None, metavar="HOST:PORT[,...]", help=RPC_HELP)


HF_HELP = (
    "a GGUF from a Hugging Face repository, as llama.cpp's -hf: downloaded into the hub"
    " cache (QUANT default Q4_K_M, else the first GGUF); offline, the cached copy"
)


REPACK_HELP = (
    "let llama.cpp repack the weights for its faster CPU kernels: faster, but a sequence"
    " decoded beside others (compare, explore, beams) can then get other tokens than"
    " alone; refused where the repacked kernels crash a batch (default: the config's"
    " repack)"
)


def add_repack_flag(parser: Any) -> None:
    """Add `--repack` to a parser or an argument group."""
    parser.add_argument("--repack", action="store_true", help=REPACK_HELP)


def add_one_sequence_repack_flags(parser: Any) -> None:
    """Add `--repack` and `--no-repack` for a job of one sequence (`kld`, `score`),
    whose default is llama-perplexity's way (`chosen_weights`)."""
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument(
        "--repack",
        action="store_const",
        const=True,
        default=None,
        help="let llama.cpp repack the weights for its CPU kernels (the default where its"
        " repacked kernels decode a batch of the model here, as llama-perplexity loads"
        " them; refused where they crash)",
    )
    choice.add_argument(
        "--no-repack",
        dest="repack",
        action="store_const",
        const=False,
        help="the weights as the file holds them, llama.cpp's one-row kernels (as"
        " llama-perplexity -nr and the app's lockstep)",
    )


def add_hf_flag(parser: Any) -> None:
    """Add `--hf ORG/REPO[:QUANT]` to a parser or an argument group."""
    parser.add_argument("--hf", default=None, metavar="ORG/REPO[:QUANT]", help=HF_HELP)


def hf_model_path(reference: str) -> Path:
    """The GGUF `--hf` names: downloaded with a progress bar on stderr, or found in the
    cache when the hub cannot be asked (said on stderr).

    Raises:
        HfFetchError: It cannot be named, fetched, or found in the cache.
    """
    from backend.config.hf_fetch import fetch_hf_model, parse_hf_ref

    ref = parse_hf_ref(reference)
    model = fetch_hf_model(ref)
    if model.note:
        print(f"samplescope: --hf {ref}: {model.note}", file=sys.stderr)
    return model.path


def model_or_hf(model: str | None, hf: str | None) -> str | None:
    """`--model`, or the file `--hf` fetches (None: neither was given).

    Raises:
        HfFetchError: Both were given, or `--hf` cannot be had.
    """
    if hf is None:
        return model
    if model is not None:
        from backend.config.hf_fetch import HfFetchError

        raise HfFetchError("give --model or --hf, not both")
    return str(hf_model_path(hf))


def add_model_flags(
    parser: argparse.ArgumentParser,
    *,
    ctx: int = 4096,
    one_sequence: bool = False,
    steering: bool | None = None,
) -> None:
    """Add `--model --hf --threads --ctx --batch --gpu-layers --rpc --repack --log` and
    `-v` to a parser (`one_sequence`: a job of one sequence, `--no-repack` too), and
    unless `steering` is False (by default: for a job of several sequences, which
    loads through `load_backend`), `--control-vector --control-vector-layers
    --contrast-model`."""
    group = parser.add_argument_group("model")
    group.add_argument(
        "--model",
        default=None,
        help="a GGUF file or a name `samplescope models` lists (default: $SAMPLESCOPE_MODEL,"
        " the config's model, then SmolLM2)",
    )
    add_hf_flag(group)
    group.add_argument(
        "--threads",
        type=int,
        default=None,
        help="threads for decode and prefill, at most the cores"
        " (default: $SAMPLESCOPE_THREADS, else all cores)",
    )
    group.add_argument(
        "--ctx", type=int, default=ctx, help=f"context size in tokens (default {ctx})"
    )
    group.add_argument("--batch", type=int, default=256, help="prefill chunk size (default 256)")
    group.add_argument(
        "--gpu-layers",
        type=int,
        default=None,
        help="layers offloaded to a GPU or the RPC servers (default 0; all with --rpc)",
    )
    add_rpc_flag(group)
    if one_sequence:
        add_one_sequence_repack_flags(group)
    else:
        add_repack_flag(group)
    group.add_argument(
        "--log", default=None, help="llama.cpp's log file (default: the user log dir)"
    )
    with_steering = not one_sequence if steering is None else steering
    if with_steering:
        add_steering_flags(group)
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="-v: phases on stderr; -vv: every step"
    )


def add_steering_flags(group: Any) -> None:
    """Add `--control-vector --control-vector-layers --contrast-model` (`load_backend`
    and the app read them) to a parser or an argument group."""
    group.add_argument(
        "--control-vector",
        action="append",
        default=None,
        metavar="FILE[:SCALE]",
        help="steer the model's activations with a control vector (llama.cpp's GGUF format,"
        " from its cvector-generator), scaled (default 1); repeatable: the vectors are summed",
    )
    group.add_argument(
        "--contrast-model",
        default=None,
        metavar="PATH",
        help="a smaller model of the same vocabulary that decodes every reply in step, for"
        " --contrast-beta (contrastive decoding)",
    )
    group.add_argument(
        "--control-vector-layers",
        default=None,
        metavar="A,B",
        help="the layers the control vectors steer, A to B included (default: all)",
    )


def chosen_model_path(explicit: str | os.PathLike[str] | None, registry: Registry) -> Path:
    """The model a command uses: --model, $SAMPLESCOPE_MODEL, the config's `model`, the
    bundled SmolLM2 (as the app and `samplescope config --show` decide it); the config
    is read with `registry` (the run's).

    A broken config file is reported on stderr and ignored.

    Raises:
        ModelFileError: Nothing was chosen and the default model is not installed.
    """
    from backend.config.config import load_config_or_default, model_with_config
    from backend.config.model_path import resolve_model_path

    config, problem = load_config_or_default(registry=registry)
    if problem:
        print(f"samplescope: {problem}", file=sys.stderr)
    return resolve_model_path(model_with_config(explicit, config))


def chosen_rpc(explicit: str | None, registry: Registry) -> tuple[Endpoint, ...]:
    """The RPC servers a command uses: --rpc, else the config's `rpc` (else none); the
    config is read with `registry` (the run's).

    Raises:
        RpcError: --rpc is malformed.
    """
    from backend.config.config import load_config_or_default, rpc_with_config

    # A broken file is reported by chosen_model_path.
    config, _problem = load_config_or_default(registry=registry)
    return rpc_with_config(explicit, config)


def chosen_weights(args: argparse.Namespace, path: Path) -> Weights:
    """How a job of one sequence loads the model at `path`: `--repack`, `--no-repack`,
    the config's `repack = true`, else as llama-perplexity does where its repacked
    kernels run here (`one_sequence_weights`: a child process tries a batch)."""
    from backend.config.config import load_config_or_default
    from backend.llama.repack_probe import Weights, one_sequence_weights

    if args.repack is None:
        # A broken file is reported by chosen_model_path.
        config, _problem = load_config_or_default(registry=registry_of_args(args))
        if config.repack:
            return Weights(True, "the config's repack = true")
    return one_sequence_weights(
        path, args.repack, remote=bool(chosen_rpc(args.rpc, registry_of_args(args)))
    )


def load_backend(
    args: argparse.Namespace,
    *,
    n_seq_max: int | None = None,
    repack: bool | None = None,
    path: Path | None = None,
) -> LlamaBackend:
    """Resolve, validate and load the model the flags name (`n_seq_max`: the sequences
    one job may decode at once; None: the runtime's default; `repack`: the weights
    repacked or not, None: `--repack`; `path`: the model, already resolved).

    Raises:
        ModelFileError: The file is missing or not a usable GGUF.
        LlamaError: llama.cpp could not load it.
        RpcError: An RPC server is malformed or cannot be reached.
    """
    from backend.session.llama_backend import LlamaBackend

    if path is None:
        path = chosen_model_path(
            model_or_hf(args.model, getattr(args, "hf", None)), registry_of_args(args)
        )
    from backend.llama.control_vector import steering_of

    started = time.perf_counter()
    backend = LlamaBackend.load(
        path,
        n_threads=args.threads,
        n_ctx=args.ctx,
        n_batch=args.batch,
        n_gpu_layers=args.gpu_layers,
        log_path=args.log,
        rpc=chosen_rpc(args.rpc, registry_of_args(args)),
        repack=bool(getattr(args, "repack", False)) if repack is None else repack,
        n_seq_max=n_seq_max,
        steering=steering_of(
            getattr(args, "control_vector", None) or (),
            getattr(args, "control_vector_layers", None),
        ),
    )
    contrast = getattr(args, "contrast_model", None)
    if contrast is not None:
        try:
            small = LlamaBackend.load(
                chosen_model_path(contrast, registry_of_args(args)),
                n_threads=args.threads,
                n_ctx=args.ctx,
                n_batch=args.batch,
                n_gpu_layers=args.gpu_layers,
                log_path=args.log,
                n_seq_max=n_seq_max,
            )
            backend.add_contrast(small)
        except BaseException:
            backend.close()
            raise
    if getattr(args, "verbose", 0) >= 1:
        info = backend.info
        log(
            f"loaded {info.name} ({path}) in {(time.perf_counter() - started) * 1000:.0f} ms:"
            f" n_ctx={info.n_ctx} n_batch={info.n_batch} threads={info.n_threads}"
            f" vocab={info.n_vocab}{'; layers on ' + info.placement if info.placement else ''};"
            f" llama.cpp log: {backend.log_path}"
        )
    return backend
