"""Front ends: models written elsewhere, lowered to Capra graphs.

:mod:`.torch_fx` traces a PyTorch ``nn.Module`` with torch.fx (it needs the optional
``torch`` extra; importing this package without torch raises ImportError saying so).
"""

from .batch import Feed
from .torch_fx import Refusal, TorchGraph, UnsupportedModel, from_torch, run_torch

__all__ = ["Feed", "Refusal", "TorchGraph", "UnsupportedModel", "from_torch", "run_torch"]
