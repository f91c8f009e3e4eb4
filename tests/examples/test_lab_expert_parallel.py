"""The expert-parallel lab (examples/expert_parallel.py) under torchrun, tied to calc.

Four gloo processes, one expert-parallel group of ep = 4: 8 SwiGLU experts, 2 per rank,
top-2 routing of 32 tokens per rank, dispatch and combine by all_to_all_single. The
output and every gradient equal one process's MoE layer; the token copies each rank sends
each rank, the bytes, the tokens per expert and the copies dropped under capacity are
calc.experts' (dispatch_counts, routed_sent_per_gpu_bytes, expert_load, dropped_tokens)
applied to the routing the report carries; the balanced routing's bytes per rank are
calc.experts.all_to_all_sent_per_gpu_layer_bytes (16-bit there, scaled to the lab's fp32).
"""

from __future__ import annotations

import importlib.util

import pytest
from labrun import EXAMPLES, WORLD, assert_page_quotes_the_report, checks_of, file_constants, lab_report, torchrun

from calc.experts import (
    capacity,
    dispatch_counts,
    dropped_tokens,
    expert_load,
    expert_params,
    experts_per_gpu,
    routed_sent_per_gpu_bytes,
)
from widgets.labs import expert_parallel as lab
from widgets.labs import figures

EXPECTED = figures("expert_parallel")
H, E, K, T = (lab.CONFIG[key] for key in ("hidden", "experts", "top_k", "tokens"))
BYTES = lab.CONFIG["dtype_bytes"]

# The one launch of the lab (conftest.py starts it early, in the background).
LAB_RUNS = [("expert_parallel.py", (), WORLD)]


@pytest.fixture(scope="module")
def ep_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    path = tmp_path_factory.mktemp("ep") / "ep.json"
    script, args, world = LAB_RUNS[0]
    done = torchrun(script, *args, "--json", str(path), world=world)
    return lab_report(path, "expert_parallel", WORLD), done.stdout


def measured(report: dict, name: str):
    return checks_of(report)[name]["measured"]


def transpose(counts) -> list[list[int]]:
    return [list(column) for column in zip(*counts)]


def test_every_check_passes_on_gloo(ep_run: tuple[dict, str]) -> None:
    report, stdout = ep_run
    assert report["backend"] == "gloo"
    assert all(check["ok"] for check in report["checks"]), stdout
    assert len(report["checks"]) == 31


def test_config_is_the_widgets_and_the_files_constants(ep_run: tuple[dict, str]) -> None:
    report, _ = ep_run
    assert lab.CONFIG["world_size"] == WORLD == report["world_size"]
    assert {key: report["config"][key] for key in lab.CONFIG if key != "world_size"} == {
        key: value for key, value in lab.CONFIG.items() if key != "world_size"}
    constants = {k.lower(): v for k, v in file_constants(EXAMPLES / "expert_parallel.py").items()}
    shared = set(constants) & set(lab.CONFIG)
    assert shared == set(lab.CONFIG) - {"world_size"}
    assert all(constants[key] == lab.CONFIG[key] for key in shared)


def test_the_report_carries_each_tokens_k_experts_in_rank_order(ep_run: tuple[dict, str]) -> None:
    routing = ep_run[0]["routing"]
    assert set(routing) == {"router", "balanced"}
    for routes in routing.values():
        assert len(routes) == T * WORLD == EXPECTED["tokens_total"] == 128
        assert all(len(chosen) == K == len(set(chosen)) and all(0 <= e < E for e in chosen) for chosen in routes)


def test_outputs_and_gradients_equal_one_process_within_the_tolerance(ep_run: tuple[dict, str]) -> None:
    """fp32: the experts see the same rows in the same order as one process, so the output
    and the expert gradients come out equal; the router's gradient is summed over the
    ranks by an all-reduce, in another order, a few ulps off."""
    checks = checks_of(ep_run[0])
    differences = {name: c["measured"] for name, c in checks.items() if "max |" in name}
    assert len(differences) == 12  # output, input, router and expert gradients; three runs
    assert all(0 <= d <= lab.CONFIG["tolerance"] for d in differences.values()), differences
    assert measured(ep_run[0], "router: tokens routed differently from one process") == 0
    assert measured(ep_run[0], "capacity: tokens routed differently from the router run") == 0


def test_the_dispatch_matrix_is_calcs_dispatch_counts_of_the_routing(ep_run: tuple[dict, str]) -> None:
    """Rank g holds tokens g·T … and experts g·E/ep …: calc counts the copies each rank
    sends each rank from the routing alone, and the lab's split sizes are those counts;
    what a rank receives is the transpose."""
    report = ep_run[0]
    counts = [list(row) for row in dispatch_counts(report["routing"]["router"], experts=E, ep=WORLD)]
    assert measured(report, "router: token copies each rank sends each rank (dispatch)") == counts
    assert measured(report, "router: token copies each rank receives from each rank") == transpose(counts)
    assert sum(map(sum, counts)) == T * WORLD * K
    assert all(sum(row) == T * K for row in counts)  # every rank sends each of its tokens k times
    assert len({n for row in counts for n in row}) > 1  # the router's routing is not balanced


def test_bytes_sent_per_rank_are_calcs_routed_bytes(ep_run: tuple[dict, str]) -> None:
    """Dispatch: routed_sent_per_gpu_bytes of the dispatch matrix (the off-diagonal copies ×
    h × 4 bytes); combine: of its transpose; the backward pass sends both once more."""
    report = ep_run[0]
    counts = dispatch_counts(report["routing"]["router"], experts=E, ep=WORLD)
    dispatch = routed_sent_per_gpu_bytes(counts, hidden=H, bytes_per_element=BYTES)
    combine = routed_sent_per_gpu_bytes(transpose(counts), hidden=H, bytes_per_element=BYTES)
    assert measured(report, "router: bytes sent per rank, dispatch") == list(dispatch)
    assert measured(report, "router: bytes sent per rank, combine") == list(combine)
    assert measured(report, "router: bytes sent per rank, backward") == [d + c for d, c in zip(dispatch, combine)]
    assert sum(dispatch) == sum(combine)  # every copy that leaves a rank comes back
    assert measured(report, "router gradient bytes all-reduced after backward") == EXPECTED["router_grad_bytes"] == 1_024


def test_balanced_routing_sends_what_calcs_formula_says(ep_run: tuple[dict, str]) -> None:
    """T·k·h·(ep − 1)/ep elements per all-to-all: 32·2·32·3/4 fp32 values = 6,144 bytes,
    two all-to-alls forward (12,288 bytes) and two backward, on every rank."""
    report = ep_run[0]
    routes = report["routing"]["balanced"]
    assert expert_load(routes, E) == (EXPECTED["mean_load"],) * E == (32,) * E
    uniform = [[EXPECTED["balanced_copies_per_pair"]] * WORLD] * WORLD
    assert [list(row) for row in dispatch_counts(routes, experts=E, ep=WORLD)] == uniform == [[16] * 4] * 4
    assert measured(report, "balanced: token copies each rank sends each rank") == uniform
    assert measured(report, "balanced: token copies per expert") == list(expert_load(routes, E))
    assert routed_sent_per_gpu_bytes(uniform, hidden=H, bytes_per_element=BYTES) == (EXPECTED["balanced_all_to_all_bytes"],) * WORLD
    forward = measured(report, "balanced: bytes sent per rank, forward (dispatch + combine)")
    backward = measured(report, "balanced: bytes sent per rank, backward")
    assert forward == [EXPECTED["balanced_forward_bytes"]] * WORLD == [12_288] * 4
    assert backward == [EXPECTED["balanced_backward_bytes"]] * WORLD
    assert EXPECTED["balanced_layer_bytes"] == 4 * EXPECTED["balanced_all_to_all_bytes"] == 24_576


def test_tokens_per_expert_capacity_and_drops_are_calcs(ep_run: tuple[dict, str]) -> None:
    """C = ⌈k·T_total/E · 1.0⌉ = 32; each expert keeps min(load, C) copies, and calc's
    dropped_tokens of the load is how many copies the lab dropped (some: the router is
    not balanced). The dropped copies still travel: the bytes are those without capacity."""
    report = ep_run[0]
    load = expert_load(report["routing"]["router"], E)
    c = capacity(tokens=T * WORLD, experts=E, experts_per_token=K, capacity_factor=lab.CONFIG["capacity_factor"])
    assert c == EXPECTED["capacity"] == 32
    assert measured(report, "router: token copies per expert") == list(load)
    assert measured(report, "capacity: token copies each expert keeps") == [min(n, c) for n in load]
    dropped = dropped_tokens(load, c)
    assert measured(report, "capacity: token copies dropped") == dropped > 0
    dispatch = measured(report, "router: bytes sent per rank, dispatch")
    combine = measured(report, "router: bytes sent per rank, combine")
    name = "capacity: bytes sent per rank, forward (dropped copies still travel)"
    assert measured(report, name) == [d + b for d, b in zip(dispatch, combine)]


def test_each_rank_holds_e_over_ep_experts_and_the_whole_router(ep_run: tuple[dict, str]) -> None:
    """E/ep = 2 experts of 3·h·f = 6,144 parameters (12,288 per rank) and the router's h·E = 256."""
    report = ep_run[0]
    per = experts_per_gpu(E, WORLD)
    assert measured(report, "experts per rank") == [per] * WORLD == [EXPECTED["experts_per_rank"]] * WORLD
    assert measured(report, "expert parameters per rank") == [per * expert_params(hidden=H, moe_ffn=lab.CONFIG["moe_ffn"])] * WORLD
    assert EXPECTED["expert_params_per_rank"] == 12_288
    assert measured(report, "router parameters per rank") == [EXPECTED["router_params"]] * WORLD == [H * E] * WORLD


def test_the_one_process_layer_is_the_sum_of_k_gated_experts() -> None:
    """In-process, no torchrun: the reference MoE is what the book defines, y = Σ_j g_j ·
    expert_{e_j}(x) over the k most probable experts, gates renormalized to sum to 1; and
    the balanced routing loads every expert equally (calc.experts.expert_load)."""
    spec = importlib.util.spec_from_file_location("lab_expert_parallel", EXAMPLES / "expert_parallel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch = module.torch
    moe = module.build(torch.device("cpu"))
    x, _ = module.data(8, torch.device("cpu"))
    with torch.no_grad():
        y, chosen = moe(x)
        probs = torch.softmax(x @ moe.router.weight.T, dim=-1)
        for i in range(len(x)):
            top = probs[i].topk(K).indices
            assert chosen[i].tolist() == top.tolist()
            gates = probs[i, top] / probs[i, top].sum()
            direct = sum(g * moe.experts[e](x[i]) for g, e in zip(gates, top.tolist()))
            assert torch.allclose(y[i], direct, atol=1e-6)
    routes = module.balanced_routing(T * WORLD, torch.device("cpu")).tolist()
    assert expert_load(routes, E) == (K * T * WORLD // E,) * E


def test_the_page_quotes_what_the_lab_prints(ep_run: tuple[dict, str]) -> None:
    """The report on the lab's page (docs/*/lab-expert-parallel.md) is this run's, check by check."""
    assert_page_quotes_the_report("lab-expert-parallel", ep_run[1])
