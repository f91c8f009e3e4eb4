"""The data-parallel lab (examples/data_parallel.py) under torchrun, tied to calc.

Four gloo processes: the naive loop, the bucketed hooks and DDP each end equal to one
process. The expected figures come from `widgets.labs.data_parallel` (calc: Megatron's
parameter count, calc.data_parallel.gradient_bytes), the same numbers the lab page shows.
"""

from __future__ import annotations

import importlib.util

import pytest
from labrun import EXAMPLES, WORLD, checks_of, lab_report, torchrun

from widgets.labs import data_parallel as lab
from widgets.labs import figures

EXPECTED = figures("data_parallel")


# The one launch of the lab (conftest.py starts it early, in the background).
LAB_RUNS = [("data_parallel.py", ("--steps", "3"), WORLD)]


@pytest.fixture(scope="module")
def data_parallel_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    path = tmp_path_factory.mktemp("dp") / "dp.json"
    script, args, world = LAB_RUNS[0]
    done = torchrun(script, *args, "--json", str(path), world=world)
    return lab_report(path, "data_parallel", WORLD), done.stdout


def test_the_lab_runs_the_config_the_book_describes(data_parallel_run: tuple[dict, str]) -> None:
    report, _ = data_parallel_run
    assert lab.CONFIG["world_size"] == WORLD == report["world_size"]
    for key, value in lab.CONFIG.items():
        if key != "world_size":
            assert report["config"][key] == value, key


def test_data_parallel_three_ways_equal_one_process(data_parallel_run: tuple[dict, str]) -> None:
    report, stdout = data_parallel_run
    assert report["backend"] == "gloo"
    assert all(check["ok"] for check in report["checks"]), stdout
    checks = checks_of(report)
    for way in ("naive", "buckets", "ddp"):
        assert checks[f"{way}: max |parameter - one process|"]["measured"] <= 1e-5


def test_data_parallel_model_has_megatrons_parameter_count(data_parallel_run: tuple[dict, str]) -> None:
    """The lab's GPT is Megatron's layout: calc's count (Narayanan et al. 2021, Eq. 2, which
    leaves out the final LayerNorm's 2h) plus that LayerNorm, in 28 tensors."""
    checks = checks_of(data_parallel_run[0])
    assert checks["parameters"]["measured"] == EXPECTED["parameters"] == 110_336
    assert checks["naive: collectives per step (one per parameter tensor)"]["measured"] == EXPECTED["parameter_tensors"]


def test_data_parallel_all_reduces_the_gradient_bytes_of_calc(data_parallel_run: tuple[dict, str]) -> None:
    """Each way all-reduces exactly the gradient per rank per step: calc's gradient_bytes
    (2 bytes per parameter, fp16) scaled to the lab's fp32 gradients."""
    checks = checks_of(data_parallel_run[0])
    for way in ("naive", "buckets", "ddp"):
        assert checks[f"{way}: bytes all-reduced per rank per step"]["measured"] == EXPECTED["gradient_bytes"]


def test_buckets_need_fewer_collectives_and_start_during_backward(data_parallel_run: tuple[dict, str]) -> None:
    checks = checks_of(data_parallel_run[0])
    naive = checks["naive: collectives per step (one per parameter tensor)"]["measured"]
    buckets = checks["buckets: collectives per step (one per bucket)"]["measured"]
    assert buckets == EXPECTED["buckets"]
    assert 1 < buckets < naive and checks["ddp: collectives per step"]["measured"] < naive
    ready = checks["buckets: gradients ready before the first bucket leaves"]
    assert ready["measured"] < ready["expected"]  # the first all-reduce overlaps backward


@pytest.mark.parametrize("bucket_kb", [1, 16, 32, 64, 100, 256, 1024])
def test_the_books_bucket_count_is_the_labs(bucket_kb: int) -> None:
    """The page's exercise ("halve the bucket size") is answered by widgets.labs; the lab's
    own Buckets class, built on the lab's model, must agree at every size."""
    spec = importlib.util.spec_from_file_location("lab_data_parallel", EXAMPLES / "data_parallel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.build(module.INIT_SEED, module.torch.device("cpu"))
    assert [p.numel() for p in model.parameters()] == lab.tensor_sizes(lab.CONFIG)
    buckets = module.Buckets(model, bucket_kb * 1024, world=1)
    assert len(buckets.buckets) == figures("data_parallel", {"bucket_kb": bucket_kb})["buckets"]
