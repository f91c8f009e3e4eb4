"""Lab: every tensor autograd saves for backward in one GPT layer, against the paper's count.

    python examples/activations.py [--json out.json]

Builds one transformer layer of a GPT in Megatron's layout, in bf16, laid out as Korthikanti
et al. 2022 count it ("Reducing Activation Recomputation in Large Transformer Models",
Sec. 4.1): LayerNorm, QKV linear, QKᵀ, softmax, attention dropout, attention over V,
output projection, dropout, residual; LayerNorm, fc1, GELU, fc2, dropout, residual. The
attention is written out by hand (not scaled_dot_product_attention, which would keep no
s × s matrix), and every dropout has p > 0, so its mask exists.

A forward pass runs under torch.autograd.graph.saved_tensors_hooks, which sees every tensor
autograd keeps for the backward pass. Each one is named by the step (module) that saved
it and by what it is to that step (its input, its output, a copy of an input, or a tensor
made inside it), mapped to one term of the paper's list, and counted once per storage
(two saved views of one storage hold its memory once). Three runs: no recomputation;
selective recomputation (QKᵀ, softmax, dropout and ·V under torch.utils.checkpoint); full
recomputation (the whole layer under checkpoint).

Checks (printed, and written with --json): in each mode, the bytes of every term the mode
keeps equal the paper's (34sbh + 5as²b in all, 34sbh with selective, 2sbh with full), the
terms a mode drops are not saved, every saved tensor has a name, and the gradients with
recomputation equal those without. What PyTorch keeps beyond the paper's terms (LayerNorm
mean and rstd, masks wider than the paper's 1 byte) is listed apart, with its bytes. Exits
1 if a check fails. PyTorch only, one process: CPU, or CUDA when there is a GPU.
"""

from __future__ import annotations

import argparse
import functools
import json
from collections import Counter

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

# One layer of a small GPT: hidden size h, a heads, s tokens, b sequences (Megatron's
# GPT layout, as in data_parallel.py, but every step its own module).
HIDDEN, HEADS, SEQ_LEN, MICRO_BATCH = 64, 4, 32, 2
DROPOUT = 0.1  # Megatron's attention and hidden dropout; any p > 0 keeps a mask
SEED = 1234
MODES = ("none", "selective", "full")


# --8<-- [start:layer]
class MatMul(nn.Module):
    """a @ b, a module of its own only so that the recorder sees it as one step."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


class CoreAttention(nn.Module):
    """QKᵀ, softmax, dropout, attention over V: the part selective recomputation reruns."""

    def __init__(self) -> None:
        super().__init__()
        self.scores, self.softmax = MatMul(), nn.Softmax(dim=-1)
        self.attention_dropout, self.context = nn.Dropout(DROPOUT), MatMul()
        # Causal mask as a bias that is added: an addition saves nothing for backward,
        # while masked_fill would keep its s × s mask (the paper counts no mask).
        self.register_buffer("causal", torch.full((SEQ_LEN, SEQ_LEN), float("-inf")).triu(1))
        self.recompute = False

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if self.recompute:  # keeps only q, k, v; the rest is rerun in backward
            return checkpoint(self.attend, q, k, v, use_reentrant=False)
        return self.attend(q, k, v)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = self.scores(q, k.transpose(-2, -1)) * q.shape[-1] ** -0.5 + self.causal
        return self.context(self.attention_dropout(self.softmax(scores)), v)


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.qkv, self.core = nn.LayerNorm(HIDDEN), nn.Linear(HIDDEN, 3 * HIDDEN), CoreAttention()
        self.proj, self.proj_dropout = nn.Linear(HIDDEN, HIDDEN), nn.Dropout(DROPOUT)
        self.ln2, self.fc1, self.gelu = nn.LayerNorm(HIDDEN), nn.Linear(HIDDEN, 4 * HIDDEN), nn.GELU()
        self.fc2, self.mlp_dropout = nn.Linear(4 * HIDDEN, HIDDEN), nn.Dropout(DROPOUT)
        self.recompute = "none"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.core.recompute = self.recompute == "selective"
        if self.recompute == "full":  # keeps only x; the whole layer is rerun in backward
            return checkpoint(self.layer, x, use_reentrant=False)
        return self.layer(x)

    def layer(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, HEADS, h // HEADS).permute(2, 0, 3, 1, 4)
        y = self.core(q, k, v).transpose(1, 2).reshape(b, s, h)
        x = x + self.proj_dropout(self.proj(y))
        return x + self.mlp_dropout(self.fc2(self.gelu(self.fc1(self.ln2(x)))))
# --8<-- [end:layer]


# --8<-- [start:recorder]
class Recorder:
    """Every tensor autograd saves during one forward pass, with the step that saved it.

    Forward hooks on every module keep a stack of the steps running; the pack hook of
    saved_tensors_hooks, which autograd calls for each tensor it saves, notes the top of
    that stack. Inside a checkpointed part, checkpoint's own hooks replace these (the
    innermost hooks win), so what checkpoint does not keep never reaches `pack`."""

    def __init__(self, model: nn.Module) -> None:
        self.on = False
        self.stack: list[dict] = []
        self.saved: list[tuple[torch.Tensor, dict]] = []
        for name, module in model.named_modules():
            module.register_forward_pre_hook(functools.partial(self.enter, name or "layer"))
            module.register_forward_hook(self.leave)

    def enter(self, name: str, module: nn.Module, args: tuple) -> None:
        if self.on:  # not during backward, when checkpoint reruns the forward
            self.stack.append({"step": name, "inputs": [a for a in args if isinstance(a, torch.Tensor)]})

    def leave(self, module: nn.Module, args: tuple, output: torch.Tensor) -> None:
        if self.on:
            self.stack.pop()["output"] = output

    def pack(self, tensor: torch.Tensor) -> torch.Tensor:
        # Keeping the tensor (autograd keeps it anyway until backward) also keeps its
        # address from being reused, so a storage's data_ptr names it for the whole pass.
        self.saved.append((tensor, self.stack[-1]))
        return tensor

    def forward(self, model: nn.Module, x: torch.Tensor) -> torch.Tensor:
        self.saved.clear()
        self.on = True
        with torch.autograd.graph.saved_tensors_hooks(self.pack, lambda tensor: tensor):
            out = model(x)
        self.on = False
        return out
# --8<-- [end:recorder]


def storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def role(t: torch.Tensor, call: dict) -> tuple[str, bool]:
    """What a saved tensor is to the step that saved it, and whether it is a copy."""
    inputs, output = call["inputs"], call.get("output")
    view = (storage(t), t.storage_offset(), tuple(t.shape), t.stride())
    for i, x in enumerate(inputs):  # the very tensor (q, k, v share one storage)
        if view == (storage(x), x.storage_offset(), tuple(x.shape), x.stride()):
            return f"input {i}", False
    for i, x in enumerate(inputs):  # a view of it (Linear saves its input as 2-D)
        if storage(t) == storage(x):
            return f"input {i}", False
    if isinstance(output, torch.Tensor) and storage(t) == storage(output):
        return "output", False
    for i, x in enumerate(inputs):  # a contiguous copy (matmul's reshape of a transposed view)
        if t.numel() == x.numel() and t.dtype == x.dtype and torch.equal(t.flatten(), x.flatten()):
            return f"input {i}", True
    return "made inside", False


# --8<-- [start:terms]
def paper_terms() -> dict[str, int]:
    """Korthikanti et al. 2022, Sec. 4.1: bytes of each term one layer stores, 16-bit
    activations (2 bytes per element) and 1-byte dropout masks."""
    sbh, as2b = SEQ_LEN * MICRO_BATCH * HIDDEN, HEADS * SEQ_LEN**2 * MICRO_BATCH
    return {
        "qkv_input": 2 * sbh, "query_key": 4 * sbh, "softmax_output": 2 * as2b,
        "softmax_dropout_mask": as2b, "softmax_dropout_output": 2 * as2b, "value": 2 * sbh,
        "projection_input": 2 * sbh, "projection_dropout_mask": sbh,  # attention: 11sbh + 5as²b
        "fc1_input": 2 * sbh, "gelu_input": 8 * sbh, "fc2_input": 8 * sbh, "mlp_dropout_mask": sbh,  # MLP: 19sbh
        "attention_layernorm_input": 2 * sbh, "mlp_layernorm_input": 2 * sbh,  # LayerNorms: 4sbh
    }


# Which term each saved tensor is: (step that saved it, what it is to that step) -> term.
TERMS = {
    ("ln1", "input 0"): "attention_layernorm_input",
    ("qkv", "input 0"): "qkv_input",
    ("core.scores", "input 0"): "query_key", ("core.scores", "input 1"): "query_key",
    ("core.softmax", "output"): "softmax_output",
    ("core.attention_dropout", "made inside"): "softmax_dropout_mask",
    ("core.context", "input 0"): "softmax_dropout_output",
    ("core.context", "input 1"): "value",
    ("proj", "input 0"): "projection_input",
    ("proj_dropout", "made inside"): "projection_dropout_mask",
    ("ln2", "input 0"): "mlp_layernorm_input",
    ("fc1", "input 0"): "fc1_input",
    ("gelu", "input 0"): "gelu_input",
    ("fc2", "input 0"): "fc2_input",
    ("mlp_dropout", "made inside"): "mlp_dropout_mask",
    # What checkpoint keeps: the inputs of the part it will rerun.
    ("core", "input 0"): "query_key", ("core", "input 1"): "query_key", ("core", "input 2"): "value",
    ("layer", "input 0"): "attention_layernorm_input",
}
# What PyTorch saves that the paper does not count.
EXTRAS = {("ln1", "made inside"): "LayerNorm mean and rstd", ("ln2", "made inside"): "LayerNorm mean and rstd"}
SCORES = ("softmax_output", "softmax_dropout_mask", "softmax_dropout_output")  # the s × s terms


def kept_terms(mode: str) -> list[str]:
    """The terms a mode stores (Sec. 5 and Table 2): all; all but the attention scores;
    only the layer's input."""
    terms = list(paper_terms())
    if mode == "selective":
        return [t for t in terms if t not in SCORES]
    return terms if mode == "none" else ["attention_layernorm_input"]
# --8<-- [end:terms]


def paper_width(term: str) -> int:
    return 1 if term.endswith("_mask") else 2  # bytes per element as the paper counts them


def account(saved: list[tuple[torch.Tensor, dict]], params: set[int]) -> dict:
    """Group the saved tensors by storage, name each, and total the bytes: the paper's
    terms (elements × the paper's bytes per element) apart from the extras."""
    rows, storages = [], {}
    for t, call in saved:
        if storage(t) in params:  # a weight, saved by reference: no activation memory
            continue
        what, copy = role(t, call)
        name = TERMS.get((call["step"], what)) or EXTRAS.get((call["step"], what))
        dtype = str(t.dtype).removeprefix("torch.")
        rows.append({"step": call["step"], "what": what + (" (copy)" if copy else ""), "name": name,
                     "shape": list(t.shape), "dtype": dtype, "storage_bytes": t.untyped_storage().nbytes(),
                     "shared": storage(t) in storages})  # a view of a storage listed above
        st = storages.setdefault(storage(t), {"bytes": t.untyped_storage().nbytes(), "width": t.element_size(),
                                              "dtype": dtype, "views": {}})
        st["views"][(t.storage_offset(), tuple(t.shape), t.stride())] = (name, t.numel())
    terms, extras = Counter(), Counter()
    for st in storages.values():
        named = 0
        for name, numel in st["views"].values():  # distinct views, each counted once
            named += numel
            if name in paper_terms():
                terms[name] += numel * paper_width(name)
                wider = numel * (st["width"] - paper_width(name))
                if wider:  # a dropout mask kept in 2 bytes, not the paper's 1
                    extras[f"{name} kept as {st['dtype']}, {st['width']} bytes per element "
                           f"(the paper counts {paper_width(name)})"] += wider
            else:
                extras[name or "unnamed"] += numel * st["width"]
        if st["bytes"] > named * st["width"]:  # a saved view keeps its whole storage alive
            extras["rest of a storage that a saved view keeps alive"] += st["bytes"] - named * st["width"]
    total = sum(st["bytes"] for st in storages.values())
    assert total == sum(terms.values()) + sum(extras.values())
    return {"rows": rows, "terms": terms, "extras": extras, "storages": len(storages), "total": total,
            "unnamed": sum(r["name"] is None for r in rows)}


def run(model: Layer, recorder: Recorder, mode: str, x: torch.Tensor, g: torch.Tensor) -> tuple[dict, list]:
    """One forward pass under the recorder and its backward pass; the gradients of x and
    of every weight."""
    model.recompute = mode
    model.zero_grad(set_to_none=True)
    x.grad = None
    torch.manual_seed(SEED + 1)  # the same dropout masks in every mode
    out = recorder.forward(model, x)
    params = {storage(p) for p in model.parameters()}
    found = account(recorder.saved, params)
    found["tensors"] = len(recorder.saved)
    recorder.saved.clear()
    (out.float() * g).sum().backward()  # checkpoint reruns the forward here, with the same masks
    return found, [x.grad.clone()] + [p.grad.clone() for p in model.parameters()]


def main() -> None:
    parser = argparse.ArgumentParser(description="What autograd saves for backward in one GPT layer.")
    parser.add_argument("--json", help="write the checks to this file")
    args = parser.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(SEED)
    model = Layer().to(device=device, dtype=torch.bfloat16)  # bf16: 2 bytes per activation
    recorder = Recorder(model)
    x = torch.randn(MICRO_BATCH, SEQ_LEN, HIDDEN, device=device, dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(MICRO_BATCH, SEQ_LEN, HIDDEN, device=device)

    expected = paper_terms()
    results, runs, grads = [], {}, {}
    for mode in MODES:
        found, grads[mode] = run(model, recorder, mode, x, g)
        runs[mode] = found
        kept = kept_terms(mode)
        for term in kept:
            results.append((f"{mode}: {term}", found["terms"].get(term, 0), expected[term]))
        if mode != "none":
            dropped = sum(b for term, b in found["terms"].items() if term not in kept)
            results.append((f"{mode}: bytes of the terms it does not keep", dropped, 0))
        results.append((f"{mode}: the paper's terms in all", sum(found["terms"].values()),
                        sum(expected[term] for term in kept)))
        results.append((f"{mode}: saved tensors without a name", found["unnamed"], 0))
        if mode != "none":
            diff = max((a.float() - b.float()).abs().max().item() for a, b in zip(grads[mode], grads["none"]))
            results.append((f"{mode}: max |gradient - no recomputation|", diff, 0.0))
    checks = [{"name": n, "measured": m, "expected": e, "ok": bool(m == e)} for n, m, e in results]
    for mode in MODES:  # reported, not checked: the paper does not count these
        for label, b in runs[mode]["extras"].items():
            checks.append({"name": f"{mode}: extra: {label}", "measured": b, "expected": None, "ok": True})
        checks.append({"name": f"{mode}: every saved storage", "measured": runs[mode]["total"],
                       "expected": None, "ok": True})

    print(f"what autograd saves for backward: one GPT layer in bf16 on {device.type}, h {HIDDEN}, a {HEADS}, "
          f"s {SEQ_LEN}, b {MICRO_BATCH}, dropout {DROPOUT}")
    for mode in MODES:
        r = runs[mode]
        weights = r["tensors"] - len(r["rows"])
        print(f"\nrecompute={mode}: autograd saved {r['tensors']} tensor(s)" +
              (f", {weights} of them weights (saved by reference)" if weights else "") +
              f"; the activations fill {r['storages']} storage(s), {r['total']:,} bytes")
        print(f"    {'saved by':<24} {'what it is':<18} {'shape':<12} {'dtype':<9} {'storage':>7}  paper term")
        for row in r["rows"]:
            shape = "x".join(map(str, row["shape"]))
            size = "same" if row["shared"] else f"{row['storage_bytes']:,}"
            print(f"    {row['step']:<24} {row['what']:<18} {shape:<12} {row['dtype']:<9} "
                  f"{size:>7}  {row['name'] or 'UNNAMED'}")
        for c in checks:
            if c["name"].startswith(f"{mode}:"):
                expected_text = "" if c["expected"] is None else f" (expected {c['expected']:g})"
                mark = "    " if c["expected"] is None else ("ok  " if c["ok"] else "FAIL")
                print(f"  {mark} {c['name'].removeprefix(mode + ': ')}: {c['measured']:g}{expected_text}")
    if args.json:
        report = {"lab": "activations", "world_size": 1, "backend": device.type,
                  "config": {"hidden": HIDDEN, "heads": HEADS, "seq_len": SEQ_LEN, "micro_batch": MICRO_BATCH,
                             "dropout": DROPOUT, "seed": SEED},
                  "checks": checks}
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=1)
    raise SystemExit(1 if any(not c["ok"] for c in checks) else 0)


if __name__ == "__main__":
    main()
