"""The order of the GPU child's stages, and nothing else: `run.measure` and `ahead` (the GPU stages'
head start). Each stage lives in its subsystem's package, none of which imports this one.
"""
