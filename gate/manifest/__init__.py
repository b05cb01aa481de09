"""gate.toml: loading and validating the manifest, and the compile flags it may carry."""
