"""FlashCore Gate: gates CUDA kernel revisions on correctness, speed and profiler evidence."""

__version__ = "0.1.0"
