"""The order of the GPU child's stages (`run.measure`) and their head start (`ahead`), and nothing else."""
