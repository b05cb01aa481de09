"""One router per resource; `gate.api.app` includes them from a list."""
