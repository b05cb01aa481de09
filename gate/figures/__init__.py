"""Plotly figure builders: plain data in, figure JSON (a dict of `data` and `layout`) out.

Pure functions, no database and no I/O. They build the JSON directly rather than through
`plotly.graph_objects`, whose validation costs milliseconds per figure on a page of a dozen; the
unit tests validate every builder's output against plotly's schema instead.
"""
