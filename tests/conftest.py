import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _gpu_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


GPU = _gpu_available()


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="needs a CUDA GPU and torch (run on the H200 via the device tool)")
    for item in items:
        if "gpu" in item.keywords and not GPU:
            item.add_marker(skip)


def manifest_entries(arch: str):
    """A committed manifest's kernels by family (no GPU needed)."""
    from runtime import manifest
    from runtime.paths import manifest_path

    _, kernels = manifest.load(manifest_path(arch))
    out = {}
    for e in kernels:
        out.setdefault(e.family, []).append(e)
    return out


@pytest.fixture(scope="session")
def sm90a_entries():
    return manifest_entries("sm_90a")


@pytest.fixture(scope="session")
def sm89_entries():
    """An arch without wgmma: the single-scale arms take the mma.sync families."""
    return manifest_entries("sm_89")


@pytest.fixture(scope="session")
def rt():
    """The runtime of the current CUDA device (GPU tests only)."""
    import torch

    import runtime

    torch.cuda.init()
    return runtime.load(torch.cuda.current_device())


@pytest.fixture
def gen():
    """A CUDA generator with a fresh seed per test: new random data every run."""
    import torch

    g = torch.Generator(device="cuda")
    g.manual_seed(torch.randint(0, 2**31, ()).item())
    return g
