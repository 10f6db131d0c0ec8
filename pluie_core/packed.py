"""PLUIE's forward pass over the shared prefix, packed: the CPU path for decoders of the Llama family.

PluieScorer's generic path hands each batch to the model's own ``forward`` with the shared prefix's keys
and values as a cache. That works for every causal LM, but on CPU it does work PLUIE does not need:
the cache appends the prefix to every row (one copy of it per row and layer), each row is padded to the
batch's longest, and attention reads the prefix again for every row through a masked kernel at about half
the machine's matrix-multiply rate (bench/scorer.py --profile).

For the architectures whose layers it knows exactly (Llama, Mistral, Qwen2: RMSNorm, rotary
position embeddings, grouped-query attention, a gated SiLU MLP), this module runs the same layers with
the model's own weights, norms, rotary embedding and activation, differently arranged:

- the batch's new tokens are packed into one ``(tokens, hidden)`` matrix with no padding, so every
  linear layer is one matrix multiply over real tokens only (q, k and v in one, gate and up in one:
  their weights are concatenated once, and the model's parameters become views of the concatenation,
  so they are not held twice);
- attention splits each query's context in two: the shared prefix, the same keys for every pair, is
  one attention call over all the batch's queries at once (grouped heads side by side, no mask); the
  pair's own tokens are a small causal attention per row. The two are merged exactly by their
  log-sum-exp (``softmax([a, b]) · [Va; Vb]`` from the two halves), which torch's CPU flash kernel
  returns beside its output;
- only each pair's last position goes through the final norm and the output layer;
- the linear layers run through oneDNN (``torch.ops.mkldnn._linear_pointwise``, the kernel torch's own
  compiler uses on CPU) where torch has it, with the residual add inside the kernel, instead of MKL's
  sgemm behind ``torch.nn.functional.linear``: on the 2-core AMD EPYC this was measured on, 1.1-1.2x
  MKL's rate for these shapes (bench/scorer.py prints both libraries' 2048³ rates). For a model whose
  layers hold at most ``PREPACK_BYTES`` of weights (the demo judge: 0.5 GB) they are also copied once
  into oneDNN's blocked layout (another 4-5% on the whole pass), the one thing this pass holds twice;
  larger models use the model's own weights as they are.

The scores are the generic path's to float rounding (tests/test_packed.py compares both, and
tests/test_scorer.py and tests/test_demo_judge.py compare PluieScorer with the papers' two-pass formula).
Any model this module does not know, any device but the CPU, or a model accelerate placed or quantised,
takes the generic path. The private ops of torch this pass uses (the CPU flash kernel, oneDNN's, a tensor's
version count) come from pluie_core.private_api, which says what each one's fallback costs.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Optional, cast

from pluie_core.private_api import (
    MKLDNN_LINEAR,
    flash_attention_for_cpu,
    mkldnn_linear_pointwise,
    mkldnn_reorder_linear_weight,
    tensor_version,
)

PREPACK_BYTES = 1 << 30  # layers' weights up to this size get a oneDNN blocked copy (see the docstring)
_FAMILY = {"llama", "mistral", "qwen2"}  # config.model_type of the architectures whose layers this pass runs


class PackedForward:
    """The packed forward pass of one loaded model (see the module's docstring); build it with
    :func:`packed_forward`, which returns None for a model it does not know."""

    def __init__(self, model):
        import torch

        self.torch = torch
        self.model = model
        config = model.config
        self.base = model.model
        self.layers = list(self.base.layers)
        first = self.layers[0].self_attn
        self.heads = config.num_attention_heads
        self.kv_heads = getattr(config, "num_key_value_heads", None) or self.heads
        self.head_dim = getattr(first, "head_dim", None) or config.hidden_size // self.heads
        self.groups = self.heads // self.kv_heads
        self.sliding_window = getattr(config, "sliding_window", None)
        self.rope = sys.modules[type(first).__module__].apply_rotary_pos_emb
        # pluie_core.private_api: packed_forward checked it is there
        self.flash = cast(Callable[..., Any], flash_attention_for_cpu())
        self._fuse()
        self.onednn = onednn_works(torch, model.dtype)
        if self.onednn:  # pluie_core.private_api: onednn_works checked they are there
            self.linear_pointwise: Any = mkldnn_linear_pointwise()  # a torch op, with its .binary overload
            self.reorder_linear_weight = cast(Callable[..., Any], mkldnn_reorder_linear_weight())
        # None: no blocked copies, which could go stale unseen
        self.tensor_version: Optional[Callable[[Any], int]] = tensor_version()
        self._compute_weights()

    # ------------------------------------------------------------------ weights
    def _fuse(self) -> None:
        """Concatenate each layer's q / k / v and gate / up weights (and biases) once; the model's own
        parameters then point into the concatenation, so the memory is not doubled."""
        torch = self.torch
        self.fused = []
        with torch.no_grad():
            for layer in self.layers:
                attention, mlp = layer.self_attn, layer.mlp
                qkv = self._join([attention.q_proj, attention.k_proj, attention.v_proj])
                gate_up = self._join([mlp.gate_proj, mlp.up_proj])
                self.fused.append((qkv, gate_up))

    def _join(self, linears):
        torch = self.torch
        weight = torch.cat([linear.weight for linear in linears])
        biases = [linear.bias for linear in linears]
        bias = None
        if any(b is not None for b in biases):
            bias = torch.cat(
                [b if b is not None else weight.new_zeros(linear.out_features) for b, linear in zip(biases, linears)]
            )
        start = 0
        for linear in linears:
            end = start + linear.out_features
            linear.weight.data = weight[start:end]
            if linear.bias is not None and bias is not None:  # one bias: all were concatenated
                linear.bias.data = bias[start:end]
            start = end
        return weight, bias

    def _linears(self):
        """Every (weight, bias) this pass multiplies by: per layer q/k/v, o, gate/up, down; then the output
        layer."""
        pairs = []
        for layer, (qkv, gate_up) in zip(self.layers, self.fused):
            pairs += [
                qkv,
                (layer.self_attn.o_proj.weight, layer.self_attn.o_proj.bias),
                gate_up,
                (layer.mlp.down_proj.weight, layer.mlp.down_proj.bias),
            ]
        head = self.model.lm_head
        return pairs + [(head.weight, head.bias)]

    def _compute_weights(self) -> None:
        """The weights the matrix multiplies read: the model's own, or (oneDNN, a small enough model) a
        copy of each in oneDNN's blocked layout, made once."""
        torch = self.torch
        linears = self._linears()
        size = sum(weight.numel() * weight.element_size() for weight, _ in linears)
        blocked = self.onednn and size <= PREPACK_BYTES and self.tensor_version is not None
        self.prepacked = blocked
        with torch.no_grad():
            weights = [
                (self.reorder_linear_weight(weight.detach(), 1024) if blocked else weight, bias)
                for weight, bias in linears
            ]
        self.compute = [weights[i : i + 4] for i in range(0, len(weights) - 1, 4)]
        self.head = weights[-1]
        self._versions = self._weight_versions() if blocked else None  # current() reads it only when blocked

    def _weight_versions(self) -> int:
        """A count of in-place changes to the weights (load_state_dict, copy_...): a blocked copy made
        before one of them would be stale. Each parameter counts its own (a view made through ``.data``
        does not share its base's count), and so does each concatenation."""
        count = self.tensor_version
        assert count is not None  # _compute_weights makes blocked copies only where torch counts the changes
        concatenations = [weight for pair in self.fused for weight, _ in pair]
        return sum(count(tensor) for tensor in [*self.model.parameters(), *concatenations])

    def current(self) -> bool:
        """Whether the model's weights are still the views this pass made (not moved, cast or changed in
        place since)."""
        layer = self.layers[0]
        return (
            layer.self_attn.q_proj.weight.data_ptr() == self.fused[0][0][0].data_ptr()
            and layer.mlp.gate_proj.weight.data_ptr() == self.fused[0][1][0].data_ptr()
            and (not self.prepacked or self._weight_versions() == self._versions)
        )

    # ------------------------------------------------------------------ the pass
    def fits(self, rows: list[list[int]], prefix_length: int) -> bool:
        """Whether this batch is within what the packed pass computes exactly (a sliding window
        shorter than the prompts would hide part of the prefix)."""
        longest = prefix_length + max(len(row) for row in rows)
        return self.sliding_window is None or longest <= self.sliding_window

    def encode_prefix(self, ids: list[int]):
        """The shared prefix's keys and values, per layer ``(1, kv_heads, len(ids), head_dim)`` as the model's
        own cache holds them, or None where a sliding window would hide part of it (the model's own forward
        then encodes it). One causal pass over the prefix with this pass's linear layers."""
        torch = self.torch
        n = len(ids)
        if self.sliding_window is not None and n > self.sliding_window:
            return None
        heads, kv_heads, head_dim, groups = self.heads, self.kv_heads, self.head_dim, self.groups
        hidden = self.base.embed_tokens(torch.tensor(ids, device=self.model.device))
        cos, sin = self.base.rotary_emb(hidden[None], torch.arange(n, device=hidden.device)[None])
        cos, sin = cos[0], sin[0]
        q_end, k_end = heads * head_dim, (heads + kv_heads) * head_dim
        cache = []
        for layer, (qkv_weight, o_weight, gate_up_weight, down_weight) in zip(self.layers, self.compute):
            qkv = self._linear(layer.input_layernorm(hidden), *qkv_weight)
            q = qkv[:, :q_end].view(n, heads, head_dim)
            k = qkv[:, q_end:k_end].view(n, kv_heads, head_dim)
            q, k = self.rope(q, k, cos, sin, unsqueeze_dim=1)
            keys = k.transpose(0, 1)[None].contiguous()
            values = qkv[:, k_end:].view(n, kv_heads, head_dim).transpose(0, 1)[None].contiguous()
            cache.append((keys, values))
            out, _ = self.flash(
                q.transpose(0, 1)[None],
                keys.repeat_interleave(groups, dim=1),
                values.repeat_interleave(groups, dim=1),
                0.0,
                True,
                scale=layer.self_attn.scaling,
            )
            hidden = self._add_linear(hidden, out[0].transpose(0, 1).reshape(n, heads * head_dim), *o_weight)
            hidden = self._mlp(layer, hidden, gate_up_weight, down_weight)
        return tuple(cache)

    def _mlp(self, layer, hidden, gate_up_weight, down_weight):
        """``hidden + mlp(post_attention_layernorm(hidden))``."""
        gate_up = self._linear(layer.post_attention_layernorm(hidden), *gate_up_weight)
        half = gate_up.shape[1] // 2
        return self._add_linear(hidden, layer.mlp.act_fn(gate_up[:, :half]).mul_(gate_up[:, half:]), *down_weight)

    def last_hidden(self, rows: list[list[int]], prefix_kv, prefix_length: int):
        """The final-norm hidden state at each row's last token, rows in order: (len(rows), hidden)."""
        torch = self.torch
        lengths = [len(row) for row in rows]
        count, width, tokens = len(rows), max(lengths), sum(lengths)
        heads, kv_heads, head_dim, groups = self.heads, self.kv_heads, self.head_dim, self.groups
        ids = torch.tensor([token for row in rows for token in row], device=self.model.device)
        positions = torch.tensor([[prefix_length + j for n in lengths for j in range(n)]], device=ids.device)
        # where each packed token sits in the (rows × width) right-padded layout of the own-token attention
        slots = torch.tensor([i * width + j for i, n in enumerate(lengths) for j in range(n)], device=ids.device)
        last = torch.tensor(lengths, device=ids.device).cumsum(0) - 1
        # own tokens: causal within the row; the grouped heads stack their queries, so the mask repeats
        causal = torch.ones(width, width, dtype=torch.bool, device=ids.device).tril()
        own_mask = torch.zeros(width, width, dtype=self.model.dtype, device=ids.device)
        own_mask = own_mask.masked_fill(~causal, float("-inf")).repeat(groups, 1)[None, None]

        hidden = self.base.embed_tokens(ids)
        cos, sin = self.base.rotary_emb(hidden[None], positions)
        cos, sin = cos[0], sin[0]
        q_end, k_end = heads * head_dim, (heads + kv_heads) * head_dim
        for layer, (qkv_weight, o_weight, gate_up_weight, down_weight), (prefix_keys, prefix_values) in zip(
            self.layers, self.compute, prefix_kv
        ):
            attention = layer.self_attn
            x = layer.input_layernorm(hidden)
            qkv = self._linear(x, *qkv_weight)
            q = qkv[:, :q_end].view(tokens, heads, head_dim)
            k = qkv[:, q_end:k_end].view(tokens, kv_heads, head_dim)
            q, k = self.rope(q, k, cos, sin, unsqueeze_dim=1)

            # the shared prefix: every query of the batch against the one copy of its keys, per key head
            grouped = q.view(tokens, kv_heads, groups, head_dim).permute(1, 0, 2, 3)
            grouped = grouped.reshape(1, kv_heads, tokens * groups, head_dim)
            out_prefix, lse_prefix = self.flash(
                grouped, prefix_keys, prefix_values, 0.0, False, scale=attention.scaling
            )
            out_prefix = out_prefix[0].view(kv_heads, tokens, groups, head_dim).permute(1, 0, 2, 3)
            lse_prefix = lse_prefix[0].view(kv_heads, tokens, groups).permute(1, 0, 2)

            # the pair's own tokens: rows right-padded (a real query never sees a padded key under causality)
            padded = qkv.new_zeros(count * width, q_end + 2 * kv_heads * head_dim)
            padded[slots] = torch.cat([q.reshape(tokens, -1), k.reshape(tokens, -1), qkv[:, k_end:]], dim=1)
            padded = padded.view(count, width, -1)
            own_q = padded[..., :q_end].reshape(count, width, kv_heads, groups, head_dim)
            own_q = own_q.permute(0, 2, 3, 1, 4).reshape(count, kv_heads, groups * width, head_dim)
            own_k = padded[..., q_end:k_end].reshape(count, width, kv_heads, head_dim).transpose(1, 2)
            own_v = padded[..., k_end:].reshape(count, width, kv_heads, head_dim).transpose(1, 2)
            out_own, lse_own = self.flash(own_q, own_k, own_v, 0.0, False, attn_mask=own_mask, scale=attention.scaling)
            out_own = out_own.view(count, kv_heads, groups, width, head_dim).permute(0, 3, 1, 2, 4)
            out_own = out_own.reshape(count * width, kv_heads, groups, head_dim)[slots]
            lse_own = lse_own.view(count, kv_heads, groups, width).permute(0, 3, 1, 2)
            lse_own = lse_own.reshape(count * width, kv_heads, groups)[slots]

            # softmax over [prefix, own] from its two halves: the prefix's share of the whole is
            # e^lse_prefix / (e^lse_prefix + e^lse_own) = sigmoid(lse_prefix - lse_own)
            share = torch.sigmoid(lse_prefix - lse_own)[..., None]
            mixed = torch.lerp(out_own, out_prefix, share.to(out_own.dtype))
            mixed = mixed.reshape(tokens, heads * head_dim).to(hidden.dtype)
            hidden = self._add_linear(hidden, mixed, *o_weight)
            hidden = self._mlp(layer, hidden, gate_up_weight, down_weight)
        return self.base.norm(hidden[last])

    def _linear(self, x, weight, bias):
        """``x @ weight.T + bias`` (weight possibly in oneDNN's blocked layout)."""
        if self.onednn:
            return self.linear_pointwise(x, weight, bias, "none", [], "")
        return self.torch.nn.functional.linear(x, weight, bias)

    def _add_linear(self, residual, x, weight, bias):
        """``residual + x @ weight.T + bias``, the sum done by the matrix multiply itself (one pass less)."""
        if self.onednn:
            return self.linear_pointwise.binary(x, residual, weight, bias, "add")
        out = self.torch.addmm(residual, x, weight.t())
        return out if bias is None else out.add_(bias)

    def last_logits(self, rows: list[list[int]], prefix_kv, prefix_length: int):
        """The output layer's logits at each row's last token: (len(rows), vocab)."""
        return self._linear(self.last_hidden(rows, prefix_kv, prefix_length), *self.head)


def onednn_works(torch, dtype) -> bool:
    """Whether this torch build has oneDNN's linear kernels and they give F.linear's result here (a build
    without them, or a dtype or CPU they refuse, keeps torch's own matrix multiply)."""
    linear, reorder = mkldnn_linear_pointwise(), mkldnn_reorder_linear_weight()  # None without oneDNN
    if linear is None or reorder is None:
        return False
    try:
        generator = torch.Generator().manual_seed(0)
        x, weight, bias = (torch.randn(shape, generator=generator).to(dtype) for shape in ((5, 8), (3, 8), (3,)))
        residual = torch.randn((5, 3), generator=generator).to(dtype)
        expected = torch.nn.functional.linear(x, weight, bias).float()
        close = dict(atol=1e-2 if dtype != torch.float32 else 1e-5, rtol=0)
        works = torch.allclose(
            linear(x, reorder(weight, 5), bias, "none", [], "").float(), expected, **close
        ) and torch.allclose(
            linear.binary(x, residual, weight, bias, "add").float(),  # type: ignore[attr-defined]
            expected + residual.float(),
            **close,
        )
    except (AttributeError, RuntimeError, NotImplementedError) as exc:
        return MKLDNN_LINEAR.fall_back(f"it refuses {dtype} here: {exc}", False)
    return works or MKLDNN_LINEAR.fall_back(f"its result for {dtype} here is not F.linear's", False)


def packed_forward(model, device) -> PackedForward | None:
    """The packed pass for ``model`` when this module knows its layers exactly, else None (the
    scorer then keeps the generic path): a Llama / Mistral / Qwen2 causal LM of the stock classes,
    every weight a plain float32 or bfloat16 tensor on the CPU (a GGUF file's dequantised weights
    are; bitsandbytes' are not), not spread by accelerate."""
    import torch

    config = getattr(model, "config", None)
    if device.type != "cpu" or config is None or config.model_type not in _FAMILY:
        return None
    if len({str(d) for d in (getattr(model, "hf_device_map", None) or {}).values()} - {"cpu"}):
        return None
    dtypes = {p.dtype for p in model.parameters()}
    if len(dtypes) != 1 or dtypes & {torch.float32, torch.bfloat16} != dtypes:
        return None
    if any(p.device.type != "cpu" for p in model.parameters()):
        return None
    if getattr(config, "hidden_act", None) != "silu" or getattr(config, "pretraining_tp", 1) not in (None, 1):
        return None
    if flash_attention_for_cpu() is None:  # pluie_core.private_api: FLASH_ATTENTION
        return None
    if any(kind != "full_attention" for kind in getattr(config, "layer_types", None) or ()):
        return None  # Qwen2's alternating sliding-window layers
    base = getattr(model, "model", None)
    layers = getattr(base, "layers", None)
    if base is None or not layers or not all(hasattr(base, a) for a in ("embed_tokens", "rotary_emb", "norm")):
        return None
    module = sys.modules.get(type(layers[0].self_attn).__module__)
    if module is None or not hasattr(module, "apply_rotary_pos_emb"):
        return None
    linears = (
        "self_attn.q_proj",
        "self_attn.k_proj",
        "self_attn.v_proj",
        "self_attn.o_proj",
        "mlp.gate_proj",
        "mlp.up_proj",
        "mlp.down_proj",
    )
    expected = linears + ("input_layernorm", "post_attention_layernorm")
    for layer in layers:
        modules = dict(layer.named_modules())
        if not set(expected) <= set(modules) or not hasattr(layer.self_attn, "scaling"):
            return None
        if any(type(modules[name]) is not torch.nn.Linear for name in linears):
            return None  # quantised or adapted linear layers compute something else
        names = set(modules)
        # anything else in the layer (Qwen3's q / k norms, an adapter...) is work this pass would skip
        extra = names - set(expected) - {"", "self_attn", "mlp", "mlp.act_fn"}
        if extra:
            return None
    existing = getattr(model, "_pluie_packed", None)
    if existing is not None and existing.current():
        return existing  # another scorer on the same weights (e.g. the worker's runs of one model): one copy
    with torch.inference_mode(False):  # the model's parameters become views of the concatenations: plain tensors
        model._pluie_packed = PackedForward(model)
    return model._pluie_packed
