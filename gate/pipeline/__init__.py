"""The order of the GPU child's stages, and nothing else: `run.measure` (static -> build ->
correctness -> bench -> profile -> fingerprint) and `ahead` (the GPU stages' head start). Each stage
lives in its subsystem's package: `gate.compiling` (static, build), `gate.checking` (correctness),
`gate.timing` (bench), `gate.profiling` (profile), `gate.nvidia` (NVIDIA's facts and tools: GPU
watch, clock lock, fingerprint); none of them imports this package (pyproject.toml's contracts).
"""
