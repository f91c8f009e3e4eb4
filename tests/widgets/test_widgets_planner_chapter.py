"""Claims the chapter "Plan your training run" (docs/{id,zh}/plan-your-run.md) makes in
words about planner results: the numbers themselves are macros, but sentences such as "the
fastest layout is pure data parallelism" or "at 5 GB/s the planner picks Megatron's recipe"
must stay true when calc/planner.py changes. A failure names the sentence to reword.
"""

from __future__ import annotations

from widgets.framework.core import evaluate

MEGA = dict(tokens="3e11", gpus="1024", global_batch="1536", tflops="140", recompute="full",
            intra_gbps="300", inter_gbps="25")
ONE_T = dict(model="megatron-1t", tokens="4.5e11", gpus="3072", global_batch="3072", tflops="163",
             recompute="full", intra_gbps="300", inter_gbps="25")


def v(**kw: object) -> dict[str, float]:
    return evaluate("planner", {k: str(x) for k, x in kw.items()})[1]


def test_the_plan_chapter_says_what_the_planner_computes() -> None:
    failures: list[str] = []

    def claim(text: str, ok: bool) -> None:
        if not ok:
            failures.append(text)

    d = v()
    claim("default: best is pure DP (1 x 1 x n), ZeRO-1, time == ideal (box, Contoh 1)",
          (d["best_tp"], d["best_pp"], d["best_zero"]) == (1, 1, 1) and abs(d["best_over_ideal"] - 1) < 1e-9)
    claim("default: 3D layout fits, ranks below best, pays bubble > 0 (Contoh 1)",
          d["ref_fits"] == 1 and d["ref_rank"] > 1 and d["ref_bubble"] > 0)
    m40 = v(gpu_memory_gb=40)
    claim("40 GB: fewer feasible, same best time (what to try)",
          m40["feasible_count"] < d["feasible_count"] and abs(m40["best_time"] - d["best_time"]) < 1e-6 * d["best_time"])
    s5 = v(inter_gbps=5)
    claim("5 GB/s: best t > 1 and slower (what to try)", s5["best_tp"] > 1 and s5["best_time"] > d["best_time"])
    g = v(gpus=1024)
    claim("1024 GPUs: ref gap grows (what to try)", g["ref_over_best"] > d["ref_over_best"])
    claim("1024 GPUs: best has p = 1 and no exposed comm (Latihan 4)", g["best_pp"] == 1 and g["best_comm_time"] == 0)
    for name, kw in (("GPT-3", dict(model="gpt3-175b", **MEGA)), ("1T", ONE_T)):
        x = v(**kw)
        claim(f"{name}: best is ZeRO-3 without pipeline, only TP comm exposed (Megatron section)",
              x["best_zero"] == 3 and x["best_pp"] == 1 and x["best_comm_time"] == x["best_tp_comm_time"] > 0)
    l70 = v(model="llama2-70b", gpus=1024)
    l70s = v(model="llama2-70b", gpus=1024, inter_gbps=5)
    claim("70B/1024: ZeRO-3 best at 50 GB/s (Contoh 2)", l70["best_zero"] == 3)
    claim("70B/1024 at 5 GB/s: t = 8, p > 1, ZeRO-1, bubble > 0 (Contoh 2)",
          l70s["best_tp"] == 8 and l70s["best_pp"] > 1 and l70s["best_zero"] == 1 and l70s["best_bubble"] > 0)
    sel = v(**{**ONE_T, "recompute": "selective"})
    sp = v(**{**ONE_T, "recompute": "selective", "sequence_parallel": "1"})
    full = v(**ONE_T)
    claim("1T selective: nothing fits (Contoh 3)", sel["feasible_count"] == 0)
    claim("1T selective: the closest layout's activations alone exceed the GPU, at t = 8, b = 1 (Contoh 3)",
          sel["closest_activation_bytes"] > sel["gpu_memory_bytes"])
    e8 = v(gpus=8, global_batch=64)
    claim("8 GPUs, B = 64: every pipelined (t, p, m) is refused for ZeRO-2 and ZeRO-3 (Latihan 3)",
          e8["rejected_zero_pp"] == e8["pipelined_tp_pp_m_count"] * e8["zero_pp_stage_count"]
          and e8["layouts_count"] == e8["tp_pp_m_count"] * e8["zero_stage_count"])
    claim("1024 GPUs: the best step is the step's FLOP over G·X (Latihan 4)",
          abs(g["best_step_time"] - g["step_flops"] / g["cluster_flops"]) < 1e-9 * g["best_step_time"])
    claim("3D layout: min(p, m)·L/p = L layers of activations (Latihan 2)",
          d["ref_layers_in_flight"] == d["layers"] and d["ref_in_flight"] == d["ref_pp"])
    claim("1T selective+SP: fits, t = 8 with pipeline, faster than full (Contoh 3)",
          sp["feasible_count"] > 0 and sp["best_tp"] == 8 and sp["best_pp"] > 1 and sp["best_time"] < full["best_time"])
    assert not failures, "sentences of plan-your-run.md no longer true:\n" + "\n".join(failures)


LONG = dict(model="llama3.1-405b", seq_len="131072", gpus="16384", global_batch="128", tflops="380", tokens="8e11",
            sequence_parallel="1")


def test_the_plan_chapters_cp_and_ep_sentences_hold() -> None:
    failures: list[str] = []

    def claim(text: str, ok: bool) -> None:
        if not ok:
            failures.append(text)

    g = v(model="gpt3-175b", gpus=512, inter_gbps=25, context_parallel=1)
    claim("CP switch: inside a node the planner trades t for cp even at 2,048 tokens (layouts)",
          g["best_cp"] > 1 and g["best_tp"] * g["best_cp"] <= 8)
    off, on = v(**LONG), v(**LONG, context_parallel=1)
    claim("Contoh 4, CP off: few fit, many stages, bubble over half the step, fewer micro-batches than stages",
          0 < off["feasible_count"] < 10 and off["best_pp"] == 64 and off["best_bubble"] > 0.5
          and off["best_microbatches"] < off["best_pp"])
    claim("Contoh 4, CP on: cp > 1 without a pipeline, ZeRO-3, the ring hidden even across nodes",
          on["best_cp"] > 1 and on["best_pp"] == 1 and on["best_zero"] == 3 and on["best_cp_comm_time"] == 0
          and on["best_tp"] * on["best_cp"] > 8 and on["best_time"] < off["best_time"] / 5)
    claim("key ideas: at 128K attention is comparable to the parameters' FLOP (full recomputation)",
          v(**{**LONG, "recompute": "full"})["attention_over_params"] > 0.5)
    mx, mxs = v(model="mixtral-8x7b"), v(model="mixtral-8x7b", sequence_parallel=1)
    claim("Contoh 5 without SP: EP with TP rejected, the best uses no EP",
          mx["rejected_ep_sp"] > 0 and mx["best_ep"] == 1)
    claim("Contoh 5 with SP: experts on ep > 1 GPUs in the node of its TP, all-to-all exposed",
          mxs["best_ep"] > 1 and mxs["best_tp"] * mxs["best_ep"] <= 8 and mxs["best_ep_comm_time"] > 0)
    claim("Contoh 5: EP lets a smaller t fit", mxs["best_tp"] < mx["best_tp"])
    claim("Contoh 5: the time difference with and without EP is small (under 5%)",
          abs(mxs["best_time"] - mx["best_time"]) < 0.05 * mx["best_time"])
    claim("rejection table: ep_experts is zero for 8 experts", mx["rejected_ep_experts"] == 0)
    claim("rejection table: cp_seq rows exist at 16,384 GPUs",
          v(gpus=16384, context_parallel=1)["rejected_cp_seq"] > 0)
    assert not failures, "sentences of plan-your-run.md no longer true:\n" + "\n".join(failures)


def r(run: str) -> dict[str, float]:
    return evaluate("runs", {"run": run})[1]


def test_the_3d_chapters_five_dimension_sentences_hold() -> None:
    failures: list[str] = []

    def claim(text: str, ok: bool) -> None:
        if not ok:
            failures.append(text)

    short, long, deep = r("llama3-405b-8k"), r("llama3-405b-128k"), r("deepseek-v3")
    claim("step 1: data parallelism alone does not fit, even with ZeRO-1", not short["fits_after_dp"])
    claim("step 3: at 8K, TP and PP nearly suffice (within 15% of 80 GB)",
          short["memory_after_pp"] < 1.15 * short["gpu_memory_bytes"])
    claim("step 4: at 128K the activations after TP and PP are far beyond a GPU, CP brings them to the 8K figure",
          long["activation_after_pp"] > 10 * long["gpu_memory_bytes"]
          and abs(long["activation_after_cp"] - short["activation_after_pp"]) < 1e-6 * short["activation_after_pp"])
    claim("step 5: DeepSeek-V3 does not fit before EP and fits after", not deep["fits_after_pp"] and deep["fits_after_ep"])
    claim("Llama 3 slightly over 80 GB in this model, by less than the allowance",
          0 < long["memory_bytes"] - long["gpu_memory_bytes"] <= long["allowance_bytes"])
    claim("Contoh 4: with ZeRO-1 Llama 3's layout does not fit", long["memory_after_cp"] > long["gpu_memory_bytes"])
    claim("step 3: PP does not cut the activations (1F1B keeps p micro-batches)",
          long["activation_after_pp"] >= long["activation_after_tp"])
    claim("the bubble with plain 1F1B is large", long["bubble_share"] > 0.3)
    claim("DeepSeek-V3's all-to-all is about as long as its compute and crosses nodes",
          0.5 < deep["ep_over_compute"] < 1.5 and not deep["ep_inside"])
    assert not failures, "sentences of 3d-parallelism.md no longer true:\n" + "\n".join(failures)
