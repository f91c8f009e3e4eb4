"""The data-parallel lab (examples/data_parallel.py) under torchrun, tied to calc.

Four gloo processes: the naive loop, the bucketed hooks and DDP each end equal to one
process; the test recomputes the parameter count (Megatron's formula) and the bytes
all-reduced per step (calc.data_parallel.gradient_bytes) itself.
"""

from __future__ import annotations

import pytest
from labrun import WORLD, checks_of, lab_report, torchrun


@pytest.fixture(scope="module")
def data_parallel_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    path = tmp_path_factory.mktemp("dp") / "dp.json"
    done = torchrun("data_parallel.py", "--steps", "3", "--json", str(path))
    return lab_report(path, "data_parallel", WORLD), done.stdout


def test_data_parallel_three_ways_equal_one_process(data_parallel_run: tuple[dict, str]) -> None:
    report, stdout = data_parallel_run
    assert report["backend"] == "gloo"
    assert all(check["ok"] for check in report["checks"]), stdout
    checks = checks_of(report)
    for way in ("naive", "buckets", "ddp"):
        assert checks[f"{way}: max |parameter - one process|"]["measured"] <= 1e-5


def test_data_parallel_model_has_megatrons_parameter_count(data_parallel_run: tuple[dict, str]) -> None:
    """The lab's GPT is Megatron's layout: calc's count (Narayanan et al. 2021, Eq. 2, which
    leaves out the final LayerNorm's 2h) plus that LayerNorm."""
    from calc.models import megatron_param_count

    report, _ = data_parallel_run
    c = report["config"]
    expected = megatron_param_count(layers=c["layers"], hidden=c["hidden"], vocab=c["vocab"], seq_len=c["seq_len"])
    assert checks_of(report)["parameters"]["measured"] == expected + 2 * c["hidden"]


def test_data_parallel_all_reduces_the_gradient_bytes_of_calc(data_parallel_run: tuple[dict, str]) -> None:
    """Each way all-reduces exactly the gradient per rank per step: calc's gradient_bytes
    (2 bytes per parameter, fp16) scaled to the lab's fp32 gradients."""
    from calc.data_parallel import gradient_bytes
    from calc.memory import GRAD_BYTES

    report, _ = data_parallel_run
    checks = checks_of(report)
    params = checks["parameters"]["measured"]
    expected = gradient_bytes(params) / GRAD_BYTES * report["config"]["grad_dtype_bytes"]
    for way in ("naive", "buckets", "ddp"):
        assert checks[f"{way}: bytes all-reduced per rank per step"]["measured"] == expected


def test_buckets_need_fewer_collectives_and_start_during_backward(data_parallel_run: tuple[dict, str]) -> None:
    checks = checks_of(data_parallel_run[0])
    naive = checks["naive: collectives per step (one per parameter tensor)"]["measured"]
    buckets = checks["buckets: collectives per step (one per bucket)"]["measured"]
    assert 1 < buckets < naive and checks["ddp: collectives per step"]["measured"] < naive
    ready = checks["buckets: gradients ready before the first bucket leaves"]
    assert ready["measured"] < ready["expected"]  # the first all-reduce overlaps backward
