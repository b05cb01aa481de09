"""The dashboards' Jinja templates (`templates/`) and static files (`static/`), shipped as package data.

A package of its own at the top of the repository so the layout stays as the project fixes it, and
so `gate.api.pages` reaches them with `importlib.resources.files("dashboards")` wherever the
distribution is installed: a wheel, an editable install or a checkout on PYTHONPATH.
"""
