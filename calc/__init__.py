"""Formulas of distributed LLM training, one module per concern.

Pure Python, standard library only (it also runs in Pyodide in the browser). Plain
numbers in (SI base units: bytes, seconds, FLOP, parameters), plain numbers or small
frozen dataclasses out. Every public function validates its arguments and raises
``ValueError`` naming the argument and its allowed range; every docstring gives the
formula and its source.

Modules: ``models`` (model configs, parameter and FLOP counts), ``hardware`` (GPUs,
links), ``memory`` (training state bytes), ``precision`` (number formats and the
mixed-precision recipes' bytes per parameter), ``compute`` (6ND), ``activations``
(Korthikanti et al. 2022), ``collectives`` (ring costs and simulations), ``latency``
(the α–β cost of each collective algorithm), ``data_parallel``, ``zero``, ``offload``
(ZeRO-Offload, ZeRO-Infinity and DeepSpeed's memory estimators), ``tensor``,
``pipeline``, ``context``, ``experts``, ``parallel3d``, ``planner`` (every layout of a
run, ranked by estimated time, with the reason each rejected one fails), ``runs``
(published runs built up one dimension at a time), ``utilization`` (MFU and HFU as
PaLM and Megatron-LM count them).

One name per quantity, in every module. A public function that takes more than two
numbers takes them as keyword arguments (``zero.state_per_gpu_bytes(params=…, dp=…,
zero_stage=…)``); the model's shape comes in the order ``layers, hidden, heads, vocab,
seq_len``, then the batch (``micro_batch``, ``global_batch``, ``microbatches``).

======  ===================  ==================================================  ===========
symbol  name in calc         meaning                                             unit
======  ===================  ==================================================  ===========
Ψ       ``params``           parameters of the model                             parameters
D       ``tokens``           training tokens                                     tokens
C       ``flops``            FLOP of the whole training run                      FLOP
G       ``gpus``             total GPU count of a run, G = t·p·d (only this)     GPUs
d       ``dp``               data-parallel size: replicas of the model, ZeRO's   GPUs
                             N_d (in plain data parallelism every GPU)
t       ``tp``               tensor-parallel size                                GPUs
p       ``pp``               pipeline-parallel size, pipeline stages             stages
v       ``chunks``           interleaved model chunks per GPU                    chunks
m       ``microbatches``     micro-batches per pipeline per step                 micro-batches
b       ``micro_batch``      sequences per micro-batch                           sequences
B       ``global_batch``     sequences per optimizer step                        sequences
s       ``seq_len``          tokens per sequence                                 tokens
h       ``hidden``           hidden size                                         elements
a       ``heads``            attention heads                                     heads
L       ``layers``           transformer layers                                  layers
V       ``vocab``            vocabulary size                                     tokens
K       ``optimizer_bytes``  optimizer state per parameter (12 for mixed-        bytes
                             precision Adam, ZeRO Sec. 3.1)
—       ``grad_bytes``       gradient bytes per parameter (2 in ZeRO; 4 for      bytes
                             Megatron-LM's fp32 gradient buffer)
—       ``zero_stage``       ZeRO stage, 0 (plain data parallelism) to 3         —
—       ``recompute``        activation recomputation: "none", "selective",      —
                             "full" (Korthikanti et al. 2022)
X       ``flops_per_gpu``    sustained FLOP/s of one GPU                         FLOP/s
β       ``bytes_per_s``      bandwidth of one link, per GPU, one direction       bytes/s
S       ``size_bytes``       size of one message of a collective                 bytes
α       ``alpha_s``          latency of one step of a collective algorithm       s
n       ``ranks``            members of one collective                           ranks
M_GPU   ``memory_bytes``     memory of one GPU                                   bytes
—       ``gpus_per_node``    GPUs in one server                                  GPUs
======  ===================  ==================================================  ===========

The book's notation page (docs/<lang>/notation.md) lists the same symbols for readers.
"""
