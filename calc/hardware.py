"""GPUs and links, each figure with its source.

1 GB = 1e9 bytes throughout (SI), as in the seed explainer and the vendors' datasheets.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._check import check_choice

__all__ = [
    "DEFAULT_GPU",
    "DEFAULT_LINK",
    "GPUS",
    "GPUS_PER_NODE",
    "GpuSpec",
    "INTERCONNECTS",
    "LINKS",
    "LinkSpec",
    "get_gpu",
    "get_link",
]


@dataclass(frozen=True)
class GpuSpec:
    """One accelerator: memory in bytes, sustained or peak dense throughput in FLOP/s."""

    key: str
    name: str
    memory_bytes: float
    flops_per_s: float
    source: str


@dataclass(frozen=True)
class LinkSpec:
    """One interconnect: bandwidth per GPU, one direction, in bytes/s."""

    key: str
    name: str
    bytes_per_s: float
    source: str


GPUS: dict[str, GpuSpec] = {
    "illustrative": GpuSpec(
        key="illustrative",
        name="80 GB GPU at 150 TFLOP/s (illustrative)",
        memory_bytes=80e9,  # seed 000: "80 GB GPU"
        flops_per_s=150e12,  # seed 000: "150 TFLOP/s per GPU ... (ilustratif)", sustained
        source=(
            "Seed explainer 000, step 1: 80 GB GPU, 150 TFLOP/s per GPU, illustrative "
            "sustained rate (about half of an A100's 312 TFLOP/s bf16 peak)"
        ),
    ),
    "a100-80gb": GpuSpec(
        key="a100-80gb",
        name="NVIDIA A100 80GB SXM",
        memory_bytes=80e9,  # datasheet: 80GB HBM2e
        flops_per_s=312e12,  # datasheet: BF16 Tensor Core 312 TFLOPS (dense)
        source="NVIDIA A100 Tensor Core GPU datasheet: 80GB HBM2e, BF16 312 TFLOPS dense",
    ),
    "h100-sxm": GpuSpec(
        key="h100-sxm",
        name="NVIDIA H100 SXM",
        memory_bytes=80e9,  # datasheet: 80GB HBM3
        flops_per_s=989e12,  # datasheet: BF16 1,979 TFLOPS with sparsity = 989 dense
        source=(
            "NVIDIA H100 Tensor Core GPU datasheet: H100 SXM 80GB, BF16 Tensor Core "
            "1,979 TFLOPS with sparsity, i.e. 989 TFLOPS dense"
        ),
    ),
}

DEFAULT_GPU = "illustrative"  # the seed's assumption

LINKS: dict[str, LinkSpec] = {
    "nvlink": LinkSpec(
        key="nvlink",
        name="NVLink (inside a node)",
        bytes_per_s=450e9,  # seed 000; H100 NVLink 4: 900 GB/s total = 450 GB/s per direction
        source=(
            "Seed explainer 000, step 4: NVLink 450 GB/s; NVIDIA H100 datasheet: "
            "NVLink 900 GB/s bidirectional, i.e. 450 GB/s per direction"
        ),
    ),
    "network": LinkSpec(
        key="network",
        name="Network (between nodes)",
        bytes_per_s=50e9,  # seed 000; one 400 Gb/s InfiniBand NDR port per GPU = 50 GB/s
        source=(
            "Seed explainer 000, steps 2 and 4: network 50 GB/s; one 400 Gb/s "
            "InfiniBand NDR adapter per GPU (NVIDIA ConnectX-7) = 50 GB/s"
        ),
    ),
}

DEFAULT_LINK = "nvlink"

GPUS_PER_NODE = 8  # an HGX/DGX A100 or H100 server holds 8 GPUs (NVIDIA DGX datasheets)


def get_gpu(gpu: str) -> GpuSpec:
    """The preset ``GPUS[gpu]``; raises ValueError listing the known keys."""
    return GPUS[check_choice("gpu", gpu, GPUS)]


def get_link(link: str) -> LinkSpec:
    """The preset ``LINKS[link]``; raises ValueError listing the known keys."""
    return LINKS[check_choice("link", link, LINKS)]


# The interconnect hierarchy, fastest first, for the `hardware` widget. Bandwidth per
# GPU (or per adapter) in one direction, bytes/s, from the standards and datasheets.
INTERCONNECTS: dict[str, LinkSpec] = {
    "nvlink4": LinkSpec(
        key="nvlink4",
        name="NVLink 4 / NVSwitch (H100, inside a node)",
        bytes_per_s=450e9,  # 18 links × 25 GB/s = 450 GB/s per direction (900 GB/s total)
        source="NVIDIA H100 datasheet: NVLink 900 GB/s (bidirectional), 450 GB/s each way",
    ),
    "nvlink3": LinkSpec(
        key="nvlink3",
        name="NVLink 3 / NVSwitch (A100, inside a node)",
        bytes_per_s=300e9,  # 12 links × 25 GB/s = 300 GB/s per direction (600 GB/s total)
        source="NVIDIA A100 datasheet: NVLink 600 GB/s (bidirectional), 300 GB/s each way",
    ),
    "pcie5": LinkSpec(
        key="pcie5",
        name="PCIe 5.0 x16 (GPU to CPU or NIC)",
        bytes_per_s=63e9,  # 32 GT/s × 16 lanes × 128/130 encoding / 8 = 63.0 GB/s
        source="PCI-SIG PCIe 5.0 specification: 32 GT/s per lane, 128b/130b encoding",
    ),
    "pcie4": LinkSpec(
        key="pcie4",
        name="PCIe 4.0 x16",
        bytes_per_s=31.5e9,  # 16 GT/s × 16 lanes × 128/130 / 8 = 31.5 GB/s
        source="PCI-SIG PCIe 4.0 specification: 16 GT/s per lane, 128b/130b encoding",
    ),
    "ib-ndr": LinkSpec(
        key="ib-ndr",
        name="InfiniBand NDR 400 Gb/s (between nodes, one adapter per GPU)",
        bytes_per_s=50e9,  # 400 Gb/s / 8
        source="NVIDIA ConnectX-7 datasheet: InfiniBand NDR 400 Gb/s per port",
    ),
    "ib-hdr": LinkSpec(
        key="ib-hdr",
        name="InfiniBand HDR 200 Gb/s (A100 clusters)",
        bytes_per_s=25e9,  # 200 Gb/s / 8
        source="NVIDIA ConnectX-6 datasheet: InfiniBand HDR 200 Gb/s per port",
    ),
    "ethernet-100g": LinkSpec(
        key="ethernet-100g",
        name="Ethernet 100 GbE (between pods, data-center network)",
        bytes_per_s=12.5e9,  # 100 Gb/s / 8
        source="IEEE 802.3 100GBASE (100 Gb/s)",
    ),
}
