"""Published layouts of real training runs, evaluated with the planner's model.

Each ``Run`` is a layout as its paper gives it: G = t·cp·p·d GPUs, ep carved out of
cp·d for an MoE model, the ZeRO stage its data parallelism matches, the sequence length
and global batch, the GPU's memory and links, and the throughput the run achieved.
``evaluate`` puts it through ``calc.planner.layout_memory`` and ``layout_times``;
``build_up`` adds the dimensions one at a time, in the order a practitioner adds them
(data parallelism over every GPU, then tensor parallelism inside a node, pipeline
stages across nodes, context parallelism for a long sequence, expert parallelism for an
MoE model), and gives the memory per GPU after each step.

What the papers leave open is stated in each run's ``assumed``: the micro-batch size
(one sequence), recomputation (selective) and sequence parallelism. The throughput is
the one achieved end to end; fed to the planner as the rate while computing it charges
the bubble twice (as in the planner chapter's Megatron-LM comparison), so the step
times below are a ceiling, and the shares of a step are what to read.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ._check import check_choice
from .hardware import GPUS, INTERCONNECTS
from .models import ALL_MODELS, ModelConfig, active_param_count
from .pipeline import in_flight_microbatches, layers_per_stage
from .planner import RunSpec, inside_node, layout_memory, layout_times, model_args, run_spec

__all__ = [
    "BUILD_STEPS",
    "DEEPSEEK_V3_PRETRAIN_GPU_HOURS",
    "DEEPSEEK_V3_PRETRAIN_TOKENS",
    "H100_MEMORY",
    "H800_MEMORY",
    "IB_H800",
    "NVLINK_H100",
    "NVLINK_H800",
    "ROCE_400G",
    "RUNS",
    "Run",
    "RunResult",
    "Step",
    "build_up",
    "deepseek_v3_flops_per_gpu",
    "evaluate",
    "get_run",
    "links",
    "spec_of",
]

H100_MEMORY = GPUS["h100-sxm"].memory_bytes  # NVIDIA H100 SXM datasheet: 80GB HBM3
H800_MEMORY = H100_MEMORY  # DeepSeek-V3 report, Sec. 3.1: H800 GPUs, 80 GB each (the H100's memory)
NVLINK_H100 = INTERCONNECTS["nvlink4"].bytes_per_s  # NVIDIA H100 datasheet: 900 GB/s total, 450 each way
ROCE_400G = 50e9  # Llama 3, Sec. 3.3.1: 400 Gbps RoCE between GPUs = 50 GB/s
NVLINK_H800 = 160e9  # DeepSeek-V3, Sec. 3.2.2: "NVLink offers a bandwidth of 160 GB/s"
IB_H800 = 50e9  # DeepSeek-V3, Sec. 3.2.2: "IB (50 GB/s)"

# DeepSeek-V3 report, Table 1: 2,664K H800 GPU hours of pre-training on 14.8T tokens.
DEEPSEEK_V3_PRETRAIN_GPU_HOURS = 2_664e3
DEEPSEEK_V3_PRETRAIN_TOKENS = 14.8e12


def deepseek_v3_flops_per_gpu() -> float:
    """The model FLOP/s DeepSeek-V3's pre-training sustained per GPU: 6·Ψ_a·D over its
    GPU hours (report Table 1), Ψ_a = ``active_param_count`` (37.6B): about 348 TFLOP/s,
    35% of an H800's 989 dense bf16 TFLOP/s. The report gives hours, not this rate."""
    active = active_param_count(ALL_MODELS["deepseek-v3"])
    return 6.0 * active * DEEPSEEK_V3_PRETRAIN_TOKENS / (DEEPSEEK_V3_PRETRAIN_GPU_HOURS * 3600.0)


@dataclass(frozen=True)
class Run:
    """A published layout (see the module docstring); ``flops_per_gpu`` is the model
    FLOP/s per GPU the run achieved, ``mfu`` its published model FLOP utilization (0 if
    none), ``source`` where each number comes from, ``assumed`` what the paper does not
    say and this book fills in."""

    key: str
    name: str
    model: str
    gpus: int
    tp: int
    cp: int
    pp: int
    dp: int
    ep: int
    zero_stage: int
    seq_len: int
    global_batch: int
    memory_bytes: float
    intra_bytes_per_s: float
    inter_bytes_per_s: float
    flops_per_gpu: float
    mfu: float
    recompute: str
    sequence_parallel: bool
    source: str
    assumed: str

    @property
    def microbatches(self) -> int:
        """m = B/(d·b) with b = 1: one sequence per micro-batch (``assumed``)."""
        return self.global_batch // self.dp

    @property
    def tokens_per_gpu(self) -> int:
        """The tokens of one sequence on one GPU, s/cp."""
        return self.seq_len // self.cp

    @property
    def chunks(self) -> int:
        """The 2·cp equal chunks of the balanced split for the causal mask (each GPU
        holds chunks i and 2·cp − 1 − i; Llama 3, Sec. 3.3.2; ``calc.context``)."""
        return 2 * self.cp

    @property
    def chunk_tokens(self) -> int:
        """Tokens of one chunk of the balanced split, s/(2·cp). 131,072/32 = 4,096."""
        return self.seq_len // self.chunks

    @property
    def layers(self) -> int:
        """L, the model's transformer layers."""
        return self.config.layers

    @property
    def layers_per_stage(self) -> int:
        """Layers charged to every stage, those of the most loaded one: ⌈L/p⌉
        (``calc.pipeline.layers_per_stage``). DeepSeek-V3: ⌈61/16⌉ = 4."""
        return layers_per_stage(self.layers, self.pp)

    @property
    def in_flight(self) -> int:
        """Micro-batches the first stage holds at once under 1F1B, min(p, m)
        (``calc.pipeline.in_flight_microbatches``)."""
        return in_flight_microbatches(pp=self.pp, microbatches=self.microbatches, schedule="1f1b")

    @property
    def expert_replicas(self) -> int:
        """GPUs that hold the same routed experts, the expert-data-parallel size
        cp·d/ep (Megatron-Core's expert grid, ``calc.planner``). DeepSeek-V3: 128/64 = 2."""
        return self.cp * self.dp // self.ep

    @property
    def config(self) -> ModelConfig:
        return ALL_MODELS[self.model]


_LLAMA3 = ("Dubey et al. 2024, 'The Llama 3 Herd of Models', Sec. 3.3.2 and Table 4 (GPUs, TP, CP, PP, "
           "DP, sequence length, batch size per DP group, TFLOPs/GPU, BF16 MFU); Sec. 3.3.1: H100 80 GB, "
           "8 per server on NVLink, 400 Gbps RoCE; Sec. 3.3.2: the DP dimension is FSDP that shards "
           "optimizer states and gradients and keeps the weights gathered from forward to backward, "
           "ZeRO-2's memory")
_LLAMA3_ASSUMED = ("one sequence per micro-batch; selective recomputation and sequence parallelism; the FSDP "
                   "group is the d·cp GPUs that hold the same weights (the paper does not say); every stage "
                   "charged ⌈126/16⌉ = 8 layers (Llama 3 takes one off the first and the last); K/V moved by "
                   "a ring that hides behind attention (Llama 3 all-gathers them, exposed but small with GQA)")

RUNS: dict[str, Run] = {
    "llama3-405b-8k": Run(
        key="llama3-405b-8k", name="Llama 3 405B, 8K context, 16,384 GPUs", model="llama3.1-405b",
        gpus=16384, tp=8, cp=1, pp=16, dp=128, ep=1, zero_stage=2, seq_len=8192,
        global_batch=128 * 16,  # Table 4: batch size 16 per DP group, 16M tokens per batch
        memory_bytes=H100_MEMORY, intra_bytes_per_s=NVLINK_H100, inter_bytes_per_s=ROCE_400G,
        flops_per_gpu=400e12, mfu=0.41, recompute="selective", sequence_parallel=True,
        source=_LLAMA3, assumed=_LLAMA3_ASSUMED),
    "llama3-405b-128k": Run(
        key="llama3-405b-128k", name="Llama 3 405B, 128K context, 16,384 GPUs", model="llama3.1-405b",
        gpus=16384, tp=8, cp=16, pp=16, dp=8, ep=1, zero_stage=2, seq_len=131072,
        global_batch=8 * 16,  # Table 4: batch size 16 per DP group, 16M tokens per batch
        memory_bytes=H100_MEMORY, intra_bytes_per_s=NVLINK_H100, inter_bytes_per_s=ROCE_400G,
        flops_per_gpu=380e12, mfu=0.38, recompute="selective", sequence_parallel=True,
        source=_LLAMA3, assumed=_LLAMA3_ASSUMED),
    "deepseek-v3": Run(
        key="deepseek-v3", name="DeepSeek-V3, 2,048 GPUs", model="deepseek-v3",
        gpus=2048, tp=1, cp=1, pp=16, dp=128, ep=64, zero_stage=1, seq_len=4096,
        global_batch=15360,  # Sec. 4.2: the batch grows from 3,072 to 15,360 sequences of 4K tokens
        memory_bytes=H800_MEMORY, intra_bytes_per_s=NVLINK_H800, inter_bytes_per_s=IB_H800,
        flops_per_gpu=deepseek_v3_flops_per_gpu(), mfu=0.0, recompute="selective", sequence_parallel=False,
        source=("DeepSeek-AI 2024, 'DeepSeek-V3 Technical Report', Sec. 3.1 (2,048 H800 GPUs, 8 per node), "
                "Sec. 3.2 (16-way pipeline parallelism with DualPipe, 64-way expert parallelism over 8 "
                "nodes, ZeRO-1 data parallelism, no tensor parallelism), Sec. 3.2.2 (NVLink 160 GB/s, IB "
                "50 GB/s), Sec. 4.2 (sequence length 4K, batch size up to 15,360), Table 1 (GPU hours)"),
        assumed=("one sequence per micro-batch; selective recomputation (the report recomputes RMSNorm "
                 "and MLA up-projections, Sec. 3.2.3); no overlap of the all-to-all (DualPipe's is the "
                 "point of the comparison); not modelled: bf16 AdamW moments and fp8 activations and "
                 "dispatch (Sec. 3.3), DualPipe's two copies of the parameters (Sec. 3.2.1), routing "
                 "limited to 4 nodes (Sec. 3.2.2), MLA's attention widths (the attention FLOP counts h)")),
}

BUILD_STEPS = ("dp", "tp", "pp", "cp", "ep", "zero")


def get_run(run: str) -> Run:
    """``RUNS[run]``; raises ValueError listing the known keys."""
    return RUNS[check_choice("run", run, RUNS)]


def spec_of(run: Run) -> RunSpec:
    """The planner's ``RunSpec`` of a run's model, GPUs and links, with D = one global
    batch of tokens (a step is what is compared)."""
    return run_spec(**model_args(run.config), seq_len=run.seq_len, tokens=float(run.global_batch * run.seq_len),
                    gpus=run.gpus, memory_bytes=run.memory_bytes, flops_per_gpu=run.flops_per_gpu,
                    intra_bytes_per_s=run.intra_bytes_per_s, inter_bytes_per_s=run.inter_bytes_per_s,
                    global_batch=run.global_batch, recompute=run.recompute,
                    sequence_parallel=run.sequence_parallel)


@dataclass(frozen=True)
class RunResult:
    """A run's layout through the planner's model: bytes per GPU, seconds per step."""

    memory_bytes: float
    state_bytes: float
    activation_bytes: float
    compute_s: float
    bubble_s: float
    tp_comm_s: float
    cp_comm_s: float
    ep_comm_s: float
    pp_comm_s: float
    dp_comm_s: float
    step_s: float


def evaluate(run: Run) -> RunResult:
    """The run's memory per GPU (``layout_memory``) and step (``layout_times``) with its
    own ZeRO stage, m = B/d micro-batches of one sequence. The planner's search would
    reject ZeRO-2 with a pipeline (DeepSpeed's rule, ``zero_pp``); these functions
    evaluate it all the same, as Llama 3's own FSDP runs it."""
    spec = spec_of(run)
    layout = dict(tp=run.tp, cp=run.cp, pp=run.pp, dp=run.dp, ep=run.ep, zero_stage=run.zero_stage,
                  microbatches=run.microbatches)
    memory = layout_memory(spec, **layout)
    times = layout_times(spec, **layout)
    return RunResult(*memory, *times)


@dataclass(frozen=True)
class Step:
    """One step of ``build_up``: the layout so far and its memory per GPU."""

    name: str
    tp: int
    cp: int
    pp: int
    dp: int
    ep: int
    zero_stage: int
    memory_bytes: float
    state_bytes: float
    activation_bytes: float


def build_up(run: Run) -> tuple[Step, ...]:
    """The run's dimensions added one at a time (``BUILD_STEPS``), each step keeping the
    GPU count: data parallelism over all G GPUs with ZeRO-1, then t (d = G/t), then p
    (d = G/(t·cp·p)), then cp (d = G/(t·cp·p)), then ep, and last the run's own ZeRO
    stage. A dimension the run does not use (or ZeRO-1 itself) leaves its step equal to
    the one before. Every step holds one sequence per micro-batch and min(p, m) of
    them in flight, m the run's own (the memory does not depend on how B splits)."""
    spec = spec_of(run)
    m = run.microbatches
    t = c = p = e = 1
    steps = []
    for name in BUILD_STEPS:
        if name == "tp":
            t = run.tp
        elif name == "pp":
            p = run.pp
        elif name == "cp":
            c = run.cp
        elif name == "ep":
            e = run.ep
        d = run.gpus // (t * c * p)
        zero = run.zero_stage if name == "zero" else 1
        here = dataclasses.replace(spec, global_batch=d * m)  # one sequence per micro-batch
        memory = layout_memory(here, tp=t, cp=c, pp=p, dp=d, ep=e, zero_stage=zero, microbatches=m)
        steps.append(Step(name, t, c, p, d, e, zero, *memory))
    return tuple(steps)


def links(run: Run) -> dict[str, bool]:
    """Whether each group of the run stays inside a node (``planner.inside_node``, ranks
    placed tp-cp-ep-dp-pp as Megatron-Core places them): "tp" t GPUs, "cp" t·cp, "ep"
    t·ep, "dp" t·cp·d (the GPUs that hold the same weights), "pp" the whole job (its
    stages cross nodes as soon as it has more than one)."""
    g = spec_of(run).gpus_per_node
    spans = {"tp": run.tp, "cp": run.tp * run.cp, "ep": run.tp * run.ep, "dp": run.tp * run.cp * run.dp,
             "pp": run.gpus}
    return {name: inside_node(span, g) for name, span in spans.items()}
