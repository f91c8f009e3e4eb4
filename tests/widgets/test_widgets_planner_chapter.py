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
    claim("1T selective+SP: fits, t = 8 with pipeline, faster than full (Contoh 3)",
          sp["feasible_count"] > 0 and sp["best_tp"] == 8 and sp["best_pp"] > 1 and sp["best_time"] < full["best_time"])
    assert not failures, "sentences of plan-your-run.md no longer true:\n" + "\n".join(failures)
