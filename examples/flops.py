"""Lab: count a small GPT's FLOPs with PyTorch's FlopCounterMode and compare with Megatron's formula.

    python examples/flops.py [--json out.json]

It builds a small GPT in Megatron's layout (the model of data_parallel.py) and runs one
training step on one process (a GPU if there is one, else the CPU) under
torch.utils.flop_counter.FlopCounterMode. The forward and the backward are counted
separately, by op. FlopCounterMode has formulas for matmuls only: aten.mm, aten.addmm,
aten.bmm and the fused attention kernels, 2 FLOP per multiply-add. A Linear's bias add
is not counted, and neither are softmax, LayerNorm, GELU, the residual adds, the
embedding lookups (forward and backward) or the loss. The lab lists those ops.

Checks (printed, and written with --json), at s = SEQ_LEN and at s = LONG_SEQ_LEN:

  * per op: the Linear layers' addmm, the tied head's mm and attention's bmm are the
    terms of Narayanan et al. 2021 (Appendix): per layer 24·B·s·h² + 4·B·s²·h forward,
    logits 2·B·s·h·V, and the backward is exactly twice the forward. Attention is run
    on SDPA's math backend, so it is two bmm of the full s×s scores (the causal mask is
    applied to the full product, and the formula counts the full s² as well);
  * the step's total equals Eq. 3 without recomputation (72·B·s·l·h²·(1 + s/(6h) +
    V/(12·l·h))); with torch.utils.checkpoint over each block it equals Eq. 3 with full
    recomputation (96·…), and with only the attention core checkpointed it equals
    selective recomputation. That holds only with checkpoint's "early stop" turned
    off: by default the recomputation stops as soon as the last tensor backward needs
    has been saved again, so it skips each checkpointed region's last matmul (fc2, or
    attention over V). Both counts are checked;
  * the fused SDPA kernel the model runs by default has no formula in FlopCounterMode's
    table on a CPU (its attention counts 0 FLOP); registered with torch's own sdpa
    formula it counts Eq. 3 plus one more QKᵀ per layer in backward (l·2·B·s²·h: a fused
    kernel never stored the scores, so its backward computes them again);
  * the step's FLOPs over 6·N·D (D = B·s tokens) with N = every parameter (the tied
    embedding and the position table included, Megatron's Eq. 2 plus the final
    LayerNorm), and with Kaplan's N = 12·l·h², which turns the ratio into Eq. 3's
    bracket 1 + s/(6h) + V/(12·l·h). At the longer sequence (a model with a position
    table of that length) the s/(6h) term grows.

Exits 1 if a check fails. PyTorch only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.checkpoint import checkpoint, set_checkpoint_early_stop
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

# A small GPT in Megatron's layout (Shoeybi et al. 2019): learned positions, pre-LN
# blocks with one fused QKV projection, a 4h MLP with GELU, a final LayerNorm and an
# output head tied to the word embedding.
LAYERS, HIDDEN, HEADS, VOCAB = 2, 64, 4, 128
SEQ_LEN, LONG_SEQ_LEN = 32, 256  # counted at both: the s/(6h) term grows with s
GLOBAL_BATCH = 8  # sequences in the step
INIT_SEED, DATA_SEED = 1234, 99
RATIO_TOLERANCE = 1e-12  # relative, for the ratios (the FLOP counts are exact integers)


# --8<-- [start:recompute]
class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(HIDDEN), nn.LayerNorm(HIDDEN)
        self.qkv, self.proj = nn.Linear(HIDDEN, 3 * HIDDEN), nn.Linear(HIDDEN, HIDDEN)
        self.fc1, self.fc2 = nn.Linear(HIDDEN, 4 * HIDDEN), nn.Linear(4 * HIDDEN, HIDDEN)

    @staticmethod
    def core(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """The attention core: softmax(QKᵀ/√d, causal) V."""
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def forward(self, x: torch.Tensor, recompute: str = "none") -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, HEADS, h // HEADS).permute(2, 0, 3, 1, 4)
        if recompute == "selective":
            # keep q, k, v for backward and run the core again there, instead of keeping
            # its s×s scores (Korthikanti et al. 2022's selective recomputation)
            y = checkpoint(self.core, q, k, v, use_reentrant=False)
        else:
            y = self.core(q, k, v)
        x = x + self.proj(y.transpose(1, 2).reshape(b, s, h))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, seq_len: int) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, HIDDEN), nn.Embedding(seq_len, HIDDEN)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(HIDDEN)

    def forward(self, tokens: torch.Tensor, recompute: str = "none") -> torch.Tensor:
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            if recompute == "full":
                # keep only the block's input; backward runs the whole block again
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x, recompute)
        return self.ln_f(x) @ self.wte.weight.T  # tied output head (not recomputed)
    # --8<-- [end:recompute]


def batch(seq_len: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """One batch of B random sequences: (inputs, next-token targets)."""
    g = torch.Generator().manual_seed(DATA_SEED)
    seq = torch.randint(0, VOCAB, (GLOBAL_BATCH, seq_len + 1), generator=g)
    return seq[:, :-1].to(device), seq[:, 1:].to(device)


class OpLog(TorchDispatchMode):
    """Every aten op that runs (views left out, they compute nothing), with its calls."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()

    def __torch_dispatch__(self, func: torch._ops.OpOverload, types: tuple, args: tuple = (),
                           kwargs: dict | None = None) -> object:
        if not func.is_view:
            self.calls[str(func.overloadpacket)] += 1
        return func(*args, **(kwargs or {}))


# The fused CPU attention kernel is missing from FlopCounterMode's table (the CUDA ones
# are there); this registers torch's own sdpa formulas for it, which count two bmm of
# the full s×s forward and five backward, whether the mask is causal or not.
CPU_FUSED_ATTENTION = {
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu:
        lambda q, k, v, *args, **kwargs: sdpa_flop_count(q, k, v),
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward:
        lambda grad, q, k, v, *args, **kwargs: sdpa_backward_flop_count(grad, q, k, v),
}


# --8<-- [start:count]
def count(model: GPT, tokens: torch.Tensor, targets: torch.Tensor, recompute: str = "none", *,
          early_stop: bool = False, fused: bool = False, mapping: dict | None = None) -> dict:
    """One training step under FlopCounterMode: {"forward"|"backward": ({op: FLOP}, {op: calls})}.

    `fused` runs attention on the kernel SDPA picks by default (one fused op); otherwise
    on the math backend, whose bmm's FlopCounterMode sees. `early_stop` is checkpoint's:
    stop recomputing once every tensor backward needs has been saved again."""
    attention = contextlib.nullcontext() if fused else sdpa_kernel(SDPBackend.MATH)
    phases = {}
    with attention, set_checkpoint_early_stop(early_stop):
        with FlopCounterMode(display=False, custom_mapping=mapping) as counter, OpLog() as ops:
            logits = model(tokens, recompute)
            loss = F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
        phases["forward"] = by_op(counter), ops.calls
        # recomputation happens here, inside backward, so it is counted as backward
        with FlopCounterMode(display=False, custom_mapping=mapping) as counter, OpLog() as ops:
            loss.backward()
        phases["backward"] = by_op(counter), ops.calls
    model.zero_grad(set_to_none=True)
    return phases


def by_op(counter: FlopCounterMode) -> dict[str, int]:
    return {str(op): flops for op, flops in counter.get_flop_counts().get("Global", {}).items()}
# --8<-- [end:count]


def total(phases: dict) -> int:
    return sum(sum(flops.values()) for flops, _ in phases.values())


# --8<-- [start:formula]
def megatron_forward(seq_len: int) -> dict[str, int]:
    """One forward pass over the batch, matmul by matmul, as Narayanan et al. 2021 list
    them (Appendix), summed over the layers: per layer QKV 6·B·s·h², scores QKᵀ
    2·B·s²·h, attention over V 2·B·s²·h, projection 2·B·s·h², MLP 8·B·s·h² twice;
    the logits 2·B·s·h·V once."""
    tokens, h, s = GLOBAL_BATCH * seq_len, HIDDEN, seq_len
    return {"qkv": LAYERS * 6 * tokens * h * h, "scores": LAYERS * 2 * tokens * s * h,
            "context": LAYERS * 2 * tokens * s * h, "proj": LAYERS * 2 * tokens * h * h,
            "fc1": LAYERS * 8 * tokens * h * h, "fc2": LAYERS * 8 * tokens * h * h,
            "logits": 2 * tokens * h * VOCAB}


def bracket(seq_len: int) -> float:
    """Eq. 3's bracket without recomputation: F / (72·B·s·l·h²) = 1 + s/(6h) + V/(12·l·h)."""
    return 1 + seq_len / (6 * HIDDEN) + VOCAB / (12 * LAYERS * HIDDEN)
# --8<-- [end:formula]


def checks_at(seq_len: int, device: torch.device, everything: bool) -> tuple[list, dict]:
    """The checks at one sequence length (`everything`: also per op and recomputation)."""
    torch.manual_seed(INIT_SEED)
    model = GPT(seq_len).to(device)
    tokens, targets = batch(seq_len, device)
    m = megatron_forward(seq_len)
    linear = m["qkv"] + m["proj"] + m["fc1"] + m["fc2"]
    attention = m["scores"] + m["context"]
    forward = linear + attention + m["logits"]
    step = 3 * forward  # backward is twice the forward

    phases = count(model, tokens, targets)
    (fwd, fwd_ops), (bwd, bwd_ops) = phases["forward"], phases["backward"]
    measured = total(phases)
    params = sum(p.numel() for p in model.parameters())
    tokens_in_step = GLOBAL_BATCH * seq_len
    kaplan_n = 12 * LAYERS * HIDDEN**2  # Kaplan et al. 2020's non-embedding N
    # Megatron's Eq. 2 (embeddings and positions included) plus the final LayerNorm
    eq2 = VOCAB * HIDDEN + seq_len * HIDDEN + LAYERS * (12 * HIDDEN**2 + 13 * HIDDEN) + 2 * HIDDEN
    p = f"s={seq_len}: "
    checks = [(p + "parameters", params, eq2)]
    if everything:
        checks += [
            (p + "forward aten.addmm (qkv, proj, fc1, fc2; bias adds not counted)", fwd.get("aten.addmm", 0), linear),
            (p + "forward aten.mm (tied output head)", fwd.get("aten.mm", 0), m["logits"]),
            (p + "forward aten.bmm (QK^T and attention over V, full s x s)", fwd.get("aten.bmm", 0), attention),
            (p + "forward total", sum(fwd.values()), forward),
            (p + "backward aten.mm (input and weight gradients)", bwd.get("aten.mm", 0), 2 * (linear + m["logits"])),
            (p + "backward aten.bmm (attention)", bwd.get("aten.bmm", 0), 2 * attention),
            (p + "backward total", sum(bwd.values()), 2 * forward),
        ]
    checks += [
        (p + "step, no recomputation (Eq. 3, 72)", measured, step),
        (p + "attention share of the step (bmm)", (fwd.get("aten.bmm", 0) + bwd.get("aten.bmm", 0)) / measured,
         3 * attention / step),
        (p + "step / 6ND, N = every parameter", measured / (6 * params * tokens_in_step),
         step / (6 * params * tokens_in_step)),
        (p + "step / 6ND, N = 12lh^2 (non-embedding)", measured / (6 * kaplan_n * tokens_in_step), bracket(seq_len)),
    ]
    notes = {}
    if everything:
        # --8<-- [start:recompute_checks]
        checks += [
            (p + "step, full recomputation (Eq. 3, 96)",
             total(count(model, tokens, targets, "full")), step + linear + attention),
            (p + "step, full recomputation, checkpoint's default early stop",
             total(count(model, tokens, targets, "full", early_stop=True)), step + linear + attention - m["fc2"]),
            (p + "step, selective recomputation (attention core)",
             total(count(model, tokens, targets, "selective")), step + attention),
            (p + "step, selective recomputation, checkpoint's default early stop",
             total(count(model, tokens, targets, "selective", early_stop=True)), step + attention - m["context"]),
            # a fused kernel never stores the s×s scores, so its backward computes QKᵀ
            # again: torch's formula counts 5 bmm backward where Megatron counts 4
            (p + "step, fused sdpa kernel with torch's sdpa formula registered",
             total(count(model, tokens, targets, fused=True, mapping=CPU_FUSED_ATTENTION)), step + m["scores"]),
        ]
        # --8<-- [end:recompute_checks]
        fused = count(model, tokens, targets, fused=True)  # FlopCounterMode's table as it ships
        fused_ops = fused["forward"][1] + fused["backward"][1]
        registry = FlopCounterMode(display=False).flop_registry
        notes = {
            "fused_attention_ops": sorted(op for op in fused_ops if "attention" in op),
            "fused_step_flops_default_table": total(fused),
            "per_op": {phase: flops for phase, (flops, _) in phases.items()},
            "uncounted_ops": {phase: dict(sorted((op, n) for op, n in calls.items()
                                                 if getattr(torch.ops.aten, op.split(".")[1], None) not in registry))
                              for phase, calls in (("forward", fwd_ops), ("backward", bwd_ops))},
        }
    return checks, notes


def main() -> None:
    parser = argparse.ArgumentParser(description="FlopCounterMode on a small GPT against Megatron's FLOP formula.")
    parser.add_argument("--json", help="write the checks to this file")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    short, notes = checks_at(SEQ_LEN, device, everything=True)
    long, _ = checks_at(LONG_SEQ_LEN, device, everything=False)
    results = []
    for name, measured, expected in short + long:
        if isinstance(expected, int):
            ok = measured == expected  # FLOP and parameter counts: exact
        else:
            ok = math.isclose(measured, expected, rel_tol=RATIO_TOLERANCE)
        results.append({"name": name, "measured": measured, "expected": expected, "ok": bool(ok)})

    print(f"FLOPs of one training step on {device.type}, l={LAYERS} h={HIDDEN} a={HEADS} V={VOCAB} "
          f"B={GLOBAL_BATCH}, s={SEQ_LEN} and s={LONG_SEQ_LEN} (FlopCounterMode, torch {torch.__version__})")
    print(f"  per op at s={SEQ_LEN}, no recomputation:")
    for phase, flops in notes["per_op"].items():
        print(f"    {phase:9} " + ", ".join(f"{op} {n:,}" for op, n in flops.items()))
    for r in results:
        number = "{:,}" if isinstance(r["expected"], int) else "{:.6f}"
        print(f"  {'ok  ' if r['ok'] else 'FAIL'} {r['name']}: {number.format(r['measured'])} "
              f"(expected {number.format(r['expected'])})")
    print(f"  fused attention ({', '.join(notes['fused_attention_ops'])}) with FlopCounterMode's own table: "
          f"{notes['fused_step_flops_default_table']:,} FLOP for the step")
    for phase, calls in notes["uncounted_ops"].items():
        print(f"  0 FLOP, {phase}: " + ", ".join(f"{op.removeprefix('aten.')} x{n}" for op, n in calls.items()))
    if args.json:
        report = {"lab": "flops", "world_size": 1, "backend": "none", "device": device.type,
                  "config": {"layers": LAYERS, "hidden": HIDDEN, "heads": HEADS, "vocab": VOCAB,
                             "seq_len": SEQ_LEN, "long_seq_len": LONG_SEQ_LEN, "global_batch": GLOBAL_BATCH,
                             "init_seed": INIT_SEED, "data_seed": DATA_SEED, "ratio_tolerance": RATIO_TOLERANCE},
                  "checks": results, "notes": notes}
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=1)
    raise SystemExit(1 if any(not r["ok"] for r in results) else 0)


if __name__ == "__main__":
    main()
