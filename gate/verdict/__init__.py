"""The verdict: pure functions from a job's typed results and the manifest's gates to a rule table.

Imports only `gate.domain` and `gate.nvidia` (an import-linter contract)."""
