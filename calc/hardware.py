"""GPUs and links, each figure with its source.

1 GB = 1e9 bytes throughout (SI), as in the seed explainer and the vendors' datasheets.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._check import check_choice

__all__ = [
    "DEFAULT_GPU",
    "DEFAULT_LINK",
    "DEFAULT_MACHINE",
    "GPUS",
    "GPUS_PER_NODE",
    "GpuSpec",
    "INTERCONNECTS",
    "LINKS",
    "LinkSpec",
    "MACHINES",
    "MachineSpec",
    "get_gpu",
    "get_link",
    "get_machine",
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
class MachineSpec:
    """One server generation as a whole: its GPU and, per GPU and one direction, the
    NVLink bandwidth inside the node and the network bandwidth between nodes."""

    key: str
    name: str
    gpu: GpuSpec
    nvlink_bytes_per_s: float
    network_bytes_per_s: float
    pcie_bytes_per_s: float  # GPU to its CPU (offload), PCIe x16 of the server's generation
    gpus_per_node: int
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
    "h200-sxm": GpuSpec(
        key="h200-sxm",
        name="NVIDIA H200 SXM",
        memory_bytes=141e9,  # datasheet: 141GB HBM3e
        flops_per_s=989e12,  # datasheet: BF16 1,979 TFLOPS with sparsity = 989 dense (H100's chip)
        source=(
            "NVIDIA H200 Tensor Core GPU datasheet: H200 SXM 141GB HBM3e, BF16 Tensor Core "
            "1,979 TFLOPS with sparsity, i.e. 989 TFLOPS dense"
        ),
    ),
    "b200": GpuSpec(
        key="b200",
        name="NVIDIA B200 (HGX/DGX B200)",
        memory_bytes=180e9,  # DGX B200 user guide: 8 GPUs with 1,440 GB in all
        flops_per_s=2.25e15,  # HGX B200 (1,000 W): BF16 Tensor Core 4.5 PFLOPS with sparsity = 2.25 dense
        source=(
            "NVIDIA DGX B200 user guide (8 x B200, 1,440 GB total GPU memory, i.e. 180 GB each); "
            "NVIDIA HGX B200 specification: FP16/BF16 Tensor Core 4.5 PFLOPS per GPU with "
            "sparsity, i.e. 2.25 PFLOPS dense"
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


# Whole machines, so that compute, memory, NVLink and network come from one generation.
# The seed's figures mix generations (half an A100's compute with an H100's links): the
# book keeps them where it reproduces the seed's steps and says they are illustrative.
MACHINES: dict[str, MachineSpec] = {
    "book": MachineSpec(
        key="book",
        name="The seed's illustrative machine (80 GB, 150 TFLOP/s, NVLink 450 GB/s, network 50 GB/s)",
        gpu=GPUS["illustrative"],
        nvlink_bytes_per_s=LINKS["nvlink"].bytes_per_s,
        network_bytes_per_s=LINKS["network"].bytes_per_s,
        pcie_bytes_per_s=63e9,  # PCIe 5.0 x16, as on the H100-class server the seed's links come from
        gpus_per_node=8,
        source="Seed explainer 000, steps 1, 2 and 4: illustrative figures, not one real server",
    ),
    "dgx-a100": MachineSpec(
        key="dgx-a100",
        name="DGX A100 (8 x A100 80GB)",
        gpu=GPUS["a100-80gb"],
        nvlink_bytes_per_s=300e9,  # NVLink 3: 600 GB/s per GPU in both directions
        network_bytes_per_s=25e9,  # 8 single-port ConnectX-6 HDR 200 Gb/s, one per GPU
        pcie_bytes_per_s=31.5e9,  # PCIe 4.0 x16 (DGX A100: AMD EPYC 7742 hosts, PCIe Gen4)
        gpus_per_node=8,
        source=(
            "NVIDIA DGX A100 datasheet: 8 x A100 80GB, NVLink 3 600 GB/s per GPU (300 GB/s "
            "each way), 8 x single-port ConnectX-6 VPI 200 Gb/s HDR InfiniBand (25 GB/s per GPU)"
        ),
    ),
    "dgx-h100": MachineSpec(
        key="dgx-h100",
        name="DGX H100 (8 x H100 SXM 80GB)",
        gpu=GPUS["h100-sxm"],
        nvlink_bytes_per_s=450e9,  # NVLink 4: 900 GB/s per GPU in both directions
        network_bytes_per_s=50e9,  # 8 ConnectX-7 NDR 400 Gb/s, one per GPU
        pcie_bytes_per_s=63e9,  # PCIe 5.0 x16 (DGX H100: Intel Xeon 8480C hosts, PCIe Gen5)
        gpus_per_node=8,
        source=(
            "NVIDIA DGX H100 datasheet: 8 x H100 SXM 80GB, NVLink 4 900 GB/s per GPU (450 GB/s "
            "each way), 8 x ConnectX-7 400 Gb/s NDR InfiniBand (50 GB/s per GPU)"
        ),
    ),
    "dgx-h200": MachineSpec(
        key="dgx-h200",
        name="DGX H200 (8 x H200 SXM 141GB)",
        gpu=GPUS["h200-sxm"],
        nvlink_bytes_per_s=450e9,  # NVLink 4, as in DGX H100
        network_bytes_per_s=50e9,  # 8 ConnectX-7 NDR 400 Gb/s, one per GPU
        pcie_bytes_per_s=63e9,  # PCIe 5.0 x16 (DGX H200: Intel Xeon 8480C hosts, PCIe Gen5)
        gpus_per_node=8,
        source=(
            "NVIDIA DGX H200 datasheet: 8 x H200 141GB (1,128 GB), NVLink 4 900 GB/s per GPU "
            "(450 GB/s each way), 8 x ConnectX-7 400 Gb/s NDR InfiniBand (50 GB/s per GPU)"
        ),
    ),
    "dgx-b200": MachineSpec(
        key="dgx-b200",
        name="DGX B200 (8 x B200 180GB)",
        gpu=GPUS["b200"],
        nvlink_bytes_per_s=900e9,  # NVLink 5: 1.8 TB/s per GPU in both directions
        network_bytes_per_s=50e9,  # 8 single-port ConnectX-7 400 Gb/s, one per GPU
        pcie_bytes_per_s=63e9,  # PCIe 5.0 x16 (DGX B200 user guide: Intel Xeon 8570 PCIe Gen5 CPUs)
        gpus_per_node=8,
        source=(
            "NVIDIA DGX B200 user guide: 8 x B200 (1,440 GB), 5th-generation NVLink 1.8 TB/s per "
            "GPU (900 GB/s each way; 14.4 TB/s over 8 GPUs), 8 x single-port ConnectX-7 400 Gb/s "
            "InfiniBand (50 GB/s per GPU)"
        ),
    ),
}

DEFAULT_MACHINE = "book"  # every existing figure of the book stays the seed's


def get_machine(machine: str) -> MachineSpec:
    """The preset ``MACHINES[machine]``; raises ValueError listing the known keys."""
    return MACHINES[check_choice("machine", machine, MACHINES)]


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
