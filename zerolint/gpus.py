"""The GPU architectures an operator can name to `zerolint capture` and `zerolint audit`.

DeepGEMM's paged-MQA kernels are built for SM90 and the SM100 family only, and ZL001's fault
is in the SM90 scheduler (docs/hazards/ZL001.md); the other architectures listed here do not
run the faulting scheduler.
"""

from __future__ import annotations

# Architectures that do not run DeepGEMM's SM90 paged-MQA metadata scheduler.
UNAFFECTED_GPUS = {
    "sm80": "Ampere (A100)",
    "sm89": "Ada (L4, L40S)",
    "sm120": "Blackwell workstation (RTX PRO 6000, RTX 50)",
}
GPU_CHOICES = ("sm80", "sm89", "sm90", "sm100", "sm120")
