"""Widget `tp`: Megatron-LM tensor parallelism (seed 000, step 4).

Each MLP and attention block is split over t GPUs (columns, then rows); four
all-reduces per layer (two forward, two backward) sum the partial results.

The figure draws one MLP block as Megatron's Fig. 3a: the input H times the first
matrix W_u split into t column blocks (one colour per GPU), the activation Y kept local,
times the second matrix W_d split into t row blocks, t partial sums, one all-reduce over
the chosen link, the output Z on every GPU. (Megatron writes X, A, B; the book keeps X
for a GPU's FLOP/s and B for the global batch, hence H, W_u, W_d.) Below it, one layer's all-reduce time over NVLink and
over the network against its compute time. Every number comes from `calc`.

The machine (calc.hardware.MACHINES) sets X and both links: by default the seed's
illustrative one (150 TFLOP/s, NVLink 450 GB/s, network 50 GB/s); on a real server
the ratio of communication to compute follows X/β of that generation.
"""

from __future__ import annotations

from typing import Any, Mapping

from calc import tensor
from calc.collectives import bus_factor
from calc.hardware import get_machine
from calc.models import layer_param_count

from ..framework.html import esc, num, stat_cards, svg
from ..framework.locale import Locale
from ..framework.spec import Choice
from ._common import MACHINE, machine_label, MODEL, all_values_table, model_params, output_label

NAME = "tp"
LINK_KEYS = ("nvlink", "network")

CONTROLS = (
    Choice("tp", ("1", "2", "4", "8"), "4", radio=True),
    Choice("link", LINK_KEYS, "nvlink", radio=True),
    MODEL,
    MACHINE,
)

OUTPUTS: dict[str, str] = {
    "layer_params": "count",
    "weights_per_gpu_layer": "count",
    "state_per_gpu_bytes": "bytes",
    "sent_per_gpu_layer_bytes": "bytes",
    "comm_time": "seconds",
    "compute_time": "seconds",
    "comm_over_compute": "ratio",
    # The same ratio as a percentage, whose format keeps three digits (10,0%, not 0,1×).
    "comm_share_of_compute": "fraction",
    "comm_time_nvlink": "seconds",
    "comm_time_network": "seconds",
    "link_bytes_per_s": "bytes_per_s",
    # The worked examples' steps: the message S = 2sbh, the ring factor 2(t−1)/t, the
    # bytes sent in messages, 4 × 2(t−1)/t, the shape and the heads of the model, the
    # machine's figures, and how many times NVLink outruns the network.
    "params": "integer",  # Ψ, exact, so that 16Ψ/t can be checked by hand
    "message_bytes": "bytes",
    "all_reduces_per_layer": "integer",
    "ring_factor": "number",
    "sent_over_message": "number",
    "seq_len": "integer",
    "hidden": "integer",
    "heads": "integer",
    "kv_heads": "integer",
    "heads_per_gpu": "number",
    "kv_heads_per_gpu": "number",
    "gpu_flops": "flops_per_s",
    "gpu_memory_bytes": "bytes",
    "gpus_per_node": "integer",
    "nvlink_bytes_per_s": "bytes_per_s",
    "network_bytes_per_s": "bytes_per_s",
    "nvlink_over_network": "ratio",
}


def link_bandwidths(state: Mapping[str, Any]) -> dict[str, float]:
    """β of each link of the state's machine, bytes/s per GPU and direction."""
    machine = get_machine(state["machine"])
    return {"nvlink": machine.nvlink_bytes_per_s, "network": machine.network_bytes_per_s}


def compute(state: Mapping[str, Any]) -> dict[str, float]:
    model, params = model_params(state)
    machine = get_machine(state["machine"])
    t = int(state["tp"])
    betas = link_bandwidths(state)
    beta = betas[state["link"]]
    x = machine.gpu.flops_per_s
    layer = layer_param_count(model)
    sent = tensor.sent_per_gpu_layer_bytes(hidden=model.hidden, seq_len=model.seq_len, tp=t)
    comm = tensor.comm_seconds(sent, beta)
    work = tensor.compute_seconds_per_layer(layer_params=layer, seq_len=model.seq_len, tp=t,
                                            flops_per_gpu=x)
    return {
        "layer_params": layer,
        "weights_per_gpu_layer": tensor.weights_per_gpu_layer(layer, t),
        "state_per_gpu_bytes": tensor.state_per_gpu_bytes(params=params, tp=t),
        "sent_per_gpu_layer_bytes": sent,
        "comm_time": comm,
        "compute_time": work,
        "comm_over_compute": comm / work,
        "comm_share_of_compute": comm / work,
        **{f"comm_time_{key}": tensor.comm_seconds(sent, betas[key]) for key in LINK_KEYS},
        "link_bytes_per_s": beta,
        "params": params,
        "message_bytes": tensor.message_bytes(hidden=model.hidden, seq_len=model.seq_len),
        "all_reduces_per_layer": tensor.ALL_REDUCES_PER_LAYER,
        "ring_factor": bus_factor("all_reduce", t),
        "sent_over_message": tensor.sent_over_message(tp=t),
        "seq_len": model.seq_len,
        "hidden": model.hidden,
        "heads": model.heads,
        "kv_heads": model.kv_heads,
        "heads_per_gpu": tensor.heads_per_gpu(heads=model.heads, tp=t),
        "kv_heads_per_gpu": tensor.kv_heads_per_gpu(kv_heads=model.kv_heads, tp=t),
        "gpu_flops": x,
        "gpu_memory_bytes": machine.gpu.memory_bytes,
        "gpus_per_node": machine.gpus_per_node,
        "nvlink_bytes_per_s": betas["nvlink"],
        "network_bytes_per_s": betas["network"],
        "nvlink_over_network": betas["nvlink"] / betas["network"],
    }


def render(state: Mapping[str, Any], v: Mapping[str, float], loc: Locale) -> str:
    """Stat cards, the split MLP and the time bars, the sentence, the table of values."""
    model, _ = model_params(state)
    t = int(state["tp"])
    link = state["link"]
    other = LINK_KEYS[1 - LINK_KEYS.index(link)]
    f = {key: loc.format(kind, v[key]) for key, kind in OUTPUTS.items()}
    betas = link_bandwidths(state)
    names = {key: loc.t(f"tp.figure.link_{key}", bandwidth=loc.format("bytes_per_s", betas[key]))
             for key in LINK_KEYS}
    cards = stat_cards([(output_label(NAME, k, loc), k, v[k], OUTPUTS[k]) for k in
                        ("weights_per_gpu_layer", "state_per_gpu_bytes", "sent_per_gpu_layer_bytes", "comm_over_compute")], loc)
    seq = loc.integer(model.seq_len)
    if t == 1:
        sentence = loc.h("tp.sentence_single", model=model.name, weights=f["weights_per_gpu_layer"],
                         state=f["state_per_gpu_bytes"], compute=f["compute_time"], seq=seq)
    else:
        template = "tp.sentence_slower" if v["comm_time"] >= v["compute_time"] else "tp.sentence_split"
        sentence = loc.h(template, t=loc.integer(t), weights=f["weights_per_gpu_layer"],
                         state=f["state_per_gpu_bytes"], count=loc.integer(tensor.ALL_REDUCES_PER_LAYER),
                         sent=f["sent_per_gpu_layer_bytes"], seq=seq, link=names[link], comm=f["comm_time"],
                         compute=f["compute_time"], ratio=f["comm_over_compute"], other_link=names[other],
                         other_comm=f[f"comm_time_{other}"])
    return (f'{cards}{figure(t, link, state["machine"], v, f, names, seq, loc)}<p class="w-sentence">{sentence}</p>'
            f'{all_values_table(NAME, OUTPUTS, v, loc)}')


# -- the figure -------------------------------------------------------------------------
# Two SVGs 400 units wide (legible on a 375 px phone); heading, legend and notes are HTML.
WIDTH = 400
GPU_CLASSES = tuple(f"w-tp-g{i}" for i in range(8))  # one colour per GPU (widgets.css)
MID = 40  # vertical centre of the matrices


def _arrow(x1: float, x2: float, y: float, cls: str = "w-tp-arrow") -> str:
    return (f'<line class="{cls}" x1="{num(x1)}" y1="{num(y)}" x2="{num(x2 - 4)}" y2="{num(y)}"/>'
            f'<path class="{cls} w-tp-head" d="M{num(x2)} {num(y)}l-5 -3.5v7z"/>')


def _label(x: float, name: str, note: str, cls: str = "w-fig-tick", sub: str = "") -> str:
    """A matrix's name under it (with an optional subscript, W_u) and a note below that."""
    if sub:
        name_html = f'{esc(name)}<tspan class="w-tp-sub" dy="3" font-size="8.5">{esc(sub)}</tspan>'
    else:
        name_html = esc(name)
    text = f'<text class="w-fig-value" x="{num(x)}" y="94" text-anchor="middle">{name_html}</text>'
    if note:
        text += f'<text class="{cls}" x="{num(x)}" y="107" text-anchor="middle">{esc(note)}</text>'
    return text


def _blocks(x: float, y: float, w: float, h: float, t: int, columns: bool, digits: bool) -> str:
    """A matrix split into t column (or row) blocks, block i in GPU i's colour."""
    parts = []
    for i in range(t):
        if columns:
            bx, by, bw, bh = x + i * w / t, y, w / t, h
        else:
            bx, by, bw, bh = x, y + i * h / t, w, h / t
        parts.append(f'<rect class="{GPU_CLASSES[i]} w-tp-block" x="{num(bx)}" y="{num(by)}" width="{num(bw)}" height="{num(bh)}"/>')
        if digits and t > 1 and min(bw, bh) >= 11:
            parts.append(f'<text class="w-tp-digit" x="{num(bx + bw / 2)}" y="{num(by + bh / 2 + 3.5)}" text-anchor="middle">{i}</text>')
    parts.append(f'<rect class="w-tp-frame" x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(h)}"/>')
    return "".join(parts)


def _mlp_svg(t: int, link: str, loc: Locale, title: str, desc: str) -> str:
    """H → W_u in t column blocks → local activation Y → W_d in t row blocks → partial
    sums → all-reduce Σ over the link → Z (Shoeybi et al. 2019, Fig. 3a, where the input
    is X and the matrices A and B)."""
    L = lambda key, **kw: loc.t(f"tp.figure.{key}", **kw)  # noqa: E731
    parts = [
        # H: the input, the same on every GPU
        f'<rect class="w-tp-rep" x="2" y="{MID - 20}" width="26" height="40"/>',
        f'<text class="w-tp-op" x="36" y="{MID + 4}" text-anchor="middle">×</text>',
        _blocks(44, MID - 20, 60, 40, t, columns=True, digits=True),  # W_u: h × d_ff, by columns
        _arrow(107, 121, MID),
        _blocks(124, MID - 20, 48, 40, t, columns=True, digits=False),  # Y = act(H W_u,i), local
        f'<text class="w-tp-op" x="180" y="{MID + 4}" text-anchor="middle">×</text>',
        _blocks(188, MID - 35, 36, 70, t, columns=False, digits=True),  # W_d: d_ff × h, by rows
        _label(15, "H", L("input")),
        _label(74, "W", L("columns") if t > 1 else L("whole"), sub="u"),
        _label(148, "Y", L("local")),
        _label(206, "W", L("rows") if t > 1 else L("whole"), sub="d"),
    ]
    if t == 1:  # one GPU computes Z whole: nothing to exchange
        parts.append(_arrow(227, 346, MID))
        parts.append(f'<text class="w-fig-tick" x="287" y="{MID - 7}" text-anchor="middle">{esc(L("no_comm"))}</text>')
    else:
        # t partial sums Z_i, stacked like cards, card i in GPU i's colour
        step_x, step_y = min(3.0, 18.0 / (t - 1)), min(4.0, 24.0 / (t - 1))
        card_h = 46.0 - step_y * (t - 1)
        top = MID - (card_h + step_y * (t - 1)) / 2
        for i in range(t):
            parts.append(f'<rect class="{GPU_CLASSES[i]} w-tp-card" x="{num(244 + i * step_x)}"'
                         f' y="{num(top + i * step_y)}" width="26" height="{num(card_h)}"/>')
        cls = f"w-tp-arrow w-tp-{link}"
        parts += [
            _arrow(227, 241, MID),
            _label(257 + step_x * (t - 1) / 2, f"Z₀…Z{_subscript(t - 1)}", L("partials")),
            _arrow(274 + step_x * (t - 1), 305, MID, cls),
            f'<circle class="w-tp-sum w-tp-{link}" cx="318" cy="{MID}" r="12"/>'
            f'<text class="w-fig-value" x="318" y="{MID + 4.5}" text-anchor="middle">Σ</text>'
            f'<text class="w-fig-tick w-tp-label-{link}" x="318" y="{MID - 17}" text-anchor="middle">{esc(L(f"link_short_{link}"))}</text>',
            _arrow(331, 346, MID, cls),
            _label(318, L("all_reduce"), ""),
        ]
    parts.append(f'<rect class="w-tp-rep" x="350" y="{MID - 20}" width="26" height="40"/>')
    parts.append(_label(363, "Z", L("every_gpu")))
    return svg("w-tp-mlp", WIDTH, 112, "".join(parts), title, desc)


def _subscript(n: int) -> str:
    return str(n).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))


BAR_X, BAR_MAX = 100, 190


def _time_svg(t: int, link: str, v: Mapping[str, float], f: Mapping[str, str], loc: Locale,
              title: str, desc: str) -> str:
    """One layer's compute time and its all-reduce time over each link, linear scale;
    the link not chosen is faded; a dashed line carries the compute time down."""
    rows = (("compute_time", "w-c3", loc.t("tp.figure.compute")),
            ("comm_time_nvlink", "w-c1", loc.t("tp.figure.link_short_nvlink")),
            ("comm_time_network", "w-c2", loc.t("tp.figure.link_short_network")))
    scale = BAR_MAX / max(v[key] for key, _, _ in rows)
    parts = []
    compute_x = BAR_X + v["compute_time"] * scale
    for row, (key, cls, label) in enumerate(rows):
        y = 4 + row * 28
        chosen = row == 0 or key == f"comm_time_{link}"
        end = BAR_X + v[key] * scale
        value = loc.t("tp.figure.no_comm") if row and t == 1 else f[key]
        group = "<g>" if chosen else '<g class="w-tp-other">'
        parts.append(
            f'{group}'
            f'<text class="w-fig-note" x="{BAR_X - 6}" y="{y + 14}" text-anchor="end">{esc(label)}</text>'
            f'<rect class="{cls}" x="{BAR_X}" y="{y}" width="{num(max(v[key] * scale, 0))}" height="20"/>'
            f'<text class="{"w-fig-value" if chosen else "w-fig-note"}" x="{num(end + 5)}" y="{y + 14}">{esc(value)}</text></g>'
        )
    parts.append(f'<line class="w-tp-ref" x1="{num(compute_x)}" y1="0" x2="{num(compute_x)}" y2="88"/>')
    parts.append(f'<line class="w-grid" x1="{BAR_X}" y1="0" x2="{BAR_X}" y2="88"/>')
    return svg("w-tp-time", WIDTH, 90, "".join(parts), title, desc)


def figure(t: int, link: str, machine: str, v: Mapping[str, float], f: Mapping[str, str],
           names: Mapping[str, str], seq: str, loc: Locale) -> str:
    L = lambda key, **kw: loc.t(f"tp.figure.{key}", **kw)  # noqa: E731
    t_text = loc.integer(t)
    if t == 1:
        mlp_desc = L("mlp_desc_single")
    else:
        mlp_desc = L("mlp_desc", t=t_text, link=names[link])
    legend = "".join(
        f'<li><span class="w-swatch {GPU_CLASSES[i]}"></span>{esc(L("gpu", index=loc.integer(i)))}</li>'
        for i in range(t)
    ) + f'<li><span class="w-swatch w-tp-rep"></span>{esc(L("replicated"))}</li>'
    heading = L("mlp_single") if t == 1 else L("mlp", t=t_text)
    # Only the book's own machine is illustrative; a preset is a real DGX and is named.
    time_heading = (L("time", seq=seq, gpu_flops=f["gpu_flops"]) if machine == "book" else
                    L("time_machine", seq=seq, gpu_flops=f["gpu_flops"],
                      machine=machine_label("tp", machine, loc)))
    time_desc = L("time_desc", compute=f["compute_time"], nvlink=f["comm_time_nvlink"],
                  network=f["comm_time_network"])
    note = L("note", count=loc.integer(tensor.ALL_REDUCES_PER_LAYER))
    return (
        f'<figure class="w-fig w-tp-fig">'
        f'<figcaption class="w-fig-heading">{esc(heading)}</figcaption>'
        f'{_mlp_svg(t, link, loc, heading, mlp_desc)}'
        f'<ul class="w-legend w-tp-legend">{legend}</ul>'
        f'<p class="w-tp-note">{esc(note)}</p>'
        f'<p class="w-fig-heading">{esc(time_heading)}</p>'
        f'{_time_svg(t, link, v, f, loc, time_heading, time_desc)}'
        f'<p class="w-tp-note">{esc(L("time_note_single" if t == 1 else "time_note"))}</p></figure>'
    )
