"""Synthetic sample data (generated, never measured): see `gate.sample.seed`."""
