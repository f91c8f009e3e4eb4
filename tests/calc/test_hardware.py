"""GPU and link presets: each figure carries its source."""

from __future__ import annotations

from calc.hardware import (
    DEFAULT_GPU,
    DEFAULT_LINK,
    GPUS,
    GPUS_PER_NODE,
    LINKS,
    GpuSpec,
    LinkSpec,
    get_gpu,
    get_link,
)

import pytest


def test_seed_gpu_is_80_gb_at_150_tflops() -> None:
    """Seed 000: an illustrative 80 GB GPU sustaining 150 TFLOP/s."""
    gpu = GPUS[DEFAULT_GPU]
    assert DEFAULT_GPU == "illustrative"
    assert (gpu.memory_bytes, gpu.flops_per_s) == (80e9, 150e12)


def test_datasheet_gpus() -> None:
    """NVIDIA datasheets: A100 312 TFLOP/s and H100 SXM 989 TFLOP/s dense bf16."""
    assert GPUS["a100-80gb"].flops_per_s == 312e12
    assert GPUS["h100-sxm"].flops_per_s == 989e12


def test_seed_links() -> None:
    """Seed 000: NVLink 450 GB/s inside a node, network 50 GB/s between nodes,
    8 GPUs per node."""
    assert LINKS["nvlink"].bytes_per_s == 450e9
    assert LINKS["network"].bytes_per_s == 50e9
    assert DEFAULT_LINK == "nvlink"
    assert GPUS_PER_NODE == 8


def test_every_preset_cites_a_source() -> None:
    for key, gpu in GPUS.items():
        assert isinstance(gpu, GpuSpec) and gpu.key == key and gpu.source
    for key, link in LINKS.items():
        assert isinstance(link, LinkSpec) and link.key == key and link.source


def test_lookup_by_key() -> None:
    assert get_gpu("h100-sxm") is GPUS["h100-sxm"]
    assert get_link("network") is LINKS["network"]
    with pytest.raises(ValueError, match="link must be one of nvlink, network"):
        get_link("pcie")


def test_interconnect_hierarchy_is_ordered_fastest_first() -> None:
    """NVLink > PCIe > InfiniBand > Ethernet; the seed's links are the NVLink 4 and
    InfiniBand NDR entries."""
    from calc.hardware import INTERCONNECTS

    speeds = [link.bytes_per_s for link in INTERCONNECTS.values()]
    assert speeds[0] == LINKS["nvlink"].bytes_per_s
    assert INTERCONNECTS["ib-ndr"].bytes_per_s == LINKS["network"].bytes_per_s
    assert INTERCONNECTS["nvlink4"].bytes_per_s > INTERCONNECTS["pcie5"].bytes_per_s
    assert INTERCONNECTS["pcie5"].bytes_per_s > INTERCONNECTS["ib-ndr"].bytes_per_s
    assert INTERCONNECTS["ib-ndr"].bytes_per_s > INTERCONNECTS["ethernet-100g"].bytes_per_s
    assert min(speeds) == INTERCONNECTS["ethernet-100g"].bytes_per_s
    for key, link in INTERCONNECTS.items():
        assert link.key == key and link.source


def test_every_machine_is_one_generation_with_sourced_links() -> None:
    """Compute, memory, NVLink and network of a preset come from the same server:
    the links agree with the interconnect table, and the seed's mixed machine is the only
    one called illustrative."""
    from calc.hardware import INTERCONNECTS, MACHINES, get_machine

    assert set(MACHINES) == {"book", "dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200"}
    a100, h100, h200, b200 = (get_machine(k) for k in ("dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200"))
    assert a100.nvlink_bytes_per_s == INTERCONNECTS["nvlink3"].bytes_per_s
    assert a100.network_bytes_per_s == INTERCONNECTS["ib-hdr"].bytes_per_s
    for machine in (h100, h200):
        assert machine.nvlink_bytes_per_s == INTERCONNECTS["nvlink4"].bytes_per_s
        assert machine.network_bytes_per_s == INTERCONNECTS["ib-ndr"].bytes_per_s
    assert b200.nvlink_bytes_per_s == 2 * h100.nvlink_bytes_per_s  # NVLink 5 doubles NVLink 4
    assert b200.gpu.memory_bytes * 8 == 1_440e9 and h200.gpu.memory_bytes * 8 == 1_128e9
    assert h200.gpu.flops_per_s == h100.gpu.flops_per_s  # the same Hopper chip, more memory
    for machine in MACHINES.values():
        assert machine.gpus_per_node == 8 and machine.source
        assert ("illustrative" in machine.source) == (machine.key == "book")
    with pytest.raises(ValueError, match="dgx-h100"):
        get_machine("dgx-h1000")


def test_a_machines_pcie_is_its_generations() -> None:
    from calc.hardware import INTERCONNECTS, MACHINES

    assert MACHINES["dgx-a100"].pcie_bytes_per_s == INTERCONNECTS["pcie4"].bytes_per_s
    for key in ("book", "dgx-h100", "dgx-h200", "dgx-b200"):
        assert MACHINES[key].pcie_bytes_per_s == INTERCONNECTS["pcie5"].bytes_per_s
