"""On a GPU machine the parent's probe for the reuse key (docs/reuse.md) sees the GPU the child
measures on, and gives the same answer twice: otherwise nothing would ever be reused, or a figure of
one GPU would stand for another's."""

import pytest

from gate.domain.job import RunOptions
from gate.executors import reuse_key as rk

pytestmark = pytest.mark.gpu


def test_the_parent_probe_names_the_childs_gpu_and_is_stable():
    torch = pytest.importorskip("torch")
    first, second = rk.environment_inputs(RunOptions()), rk.environment_inputs(RunOptions())
    assert first and first == second
    assert torch.cuda.get_device_name(torch.cuda.current_device()) in rk.visible_gpus()
    assert torch.__version__.split("+")[0] in first      # the installed torch, read without importing it
