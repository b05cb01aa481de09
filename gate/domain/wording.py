"""How every surface words the gate's facts for a person: a reason beside its outcome, a GPU kind,
a measured value with its unit, a count of things. Pure and stdlib only, so the pages, the CLI and
the messages say the same words (one fact in one place).
"""

from __future__ import annotations

import math

# The GPU kind of a job that may run on whichever GPU is free (`gate.domain.notices.JobFacts`), and
# the one a verdict records when the machine that ran the job had no CUDA device (`Fingerprint`).
ANY_GPU = "any"
NO_GPU = "cpu"

_GPU_WORDS = {
    ANY_GPU: "any GPU (the first free one)",
    NO_GPU: "no GPU (CPU only: compiled, not measured)",
}


def gpu_words(kind: str | None) -> str:
    """A GPU kind as a person reads it: `any` and `cpu` are routing words, not GPU names."""
    if not kind:
        return "unknown GPU"
    return _GPU_WORDS.get(kind, kind)


def on_gpu_words(kind: str | None) -> str:
    """Where a job ran, after its kernel ("wmma on H200"): `cpu` reads "without a GPU (compiled,
    not measured)", never "on no GPU (CPU only ...)"."""
    if kind == NO_GPU:
        return "without a GPU (compiled, not measured)"
    return f"on {gpu_words(kind)}"


def joined(*parts: str | None, sep: str = " \u00b7 ") -> str:
    """The non-empty `parts` joined by `sep`: an empty branch never leaves "mygemm \u00b7 \u00b7 t"."""
    return sep.join(p for p in parts if p)


def reason_beside(outcome: str, reason: str | None) -> str:
    """`reason` as shown next to its outcome: without the outcome's words repeated in front
    ("not run" beside "not run: no CUDA device" reads "no CUDA device"), empty when it only
    repeats them. `outcome` is a stored value (`not_run`, `passed`, `done`, ...)."""
    text = (reason or "").strip()
    said = (outcome or "").replace("_", " ").strip().lower()
    if not said:
        return text
    while text.lower() == said or text.lower().startswith(said + ":"):
        text = text[len(said):].lstrip(": ").strip()
    return text


def progress_line(state: str, progress: str | None) -> str:
    """A job's state and progress on one line, the state said once: never "done: done: incomplete"."""
    rest = reason_beside(state, progress)
    return f"{state}: {rest}" if rest else state


def checked_calls_words(checked: int) -> str:
    """What a job's `checked` calls checked in full can catch: the smallest share of wrong calls, at
    random, found with 99 % probability, 1 - 0.01^(1/n) (wrong on a share f, a kernel escapes n checks
    with probability (1 - f)^n)."""
    share = 1 - 0.01 ** (1 / checked)
    return (f"{plural(checked, 'call')} checked in full: a kernel wrong on {100 * share:.2g} % of its calls (at random) "
            f"or more is caught with 99 % probability")


def cut(text: str, limit: int) -> str:
    """`text`, or its first `limit` - 1 characters and an ellipsis when it is longer."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026"


def plural(n: int, word: str, many: str | None = None) -> str:
    """`1 revision`, `2 revisions`."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


# Display units: the stored unit, the steps up, the factor between steps.
_SCALES = {
    "us": (("µs", 1.0), ("ms", 1e3), ("s", 1e6)),
    "s": (("s", 1.0),),
    "B": (("B", 1.0), ("KiB", 1024.0), ("MiB", 1024.0 ** 2), ("GiB", 1024.0 ** 3)),
    "bytes": (("B", 1.0), ("KiB", 1024.0), ("MiB", 1024.0 ** 2), ("GiB", 1024.0 ** 3)),
}
_ALIASES = {"us": "µs"}


def display_unit(unit: str, magnitude: float) -> tuple[str, float]:
    """The unit a value of `magnitude` (in `unit`) reads best in, and the factor to divide by:
    45,230 us -> ("ms", 1000); 32,768 B -> ("KiB", 1024); other units unchanged."""
    steps = _SCALES.get(unit)
    if not steps:
        return _ALIASES.get(unit, unit), 1.0
    chosen = steps[0]
    for label, factor in steps:
        if abs(magnitude) >= factor:
            chosen = (label, factor)
    return chosen


def format_value(value: float | int | str | None, unit: str = "", digits: int = 4) -> str:
    """A value with its unit as a person reads it: `45.23 ms`, `32 KiB`, `34.5 %`, `96 registers`;
    never `4.523e+04 us`. Strings pass through; None reads `n/a`."""
    if value is None:
        return "n/a"
    if isinstance(value, str):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    shown, factor = display_unit(unit, float(value))
    number = _number(float(value) / factor, digits)
    if not shown:
        return number
    return f"{number} {shown}" if shown != "%" else f"{number} %"


def _number(x: float, digits: int) -> str:
    """`digits` significant digits without an exponent for everyday magnitudes; integers stay whole."""
    if abs(x) >= 10 ** digits or (x == int(x) and abs(x) < 1e15):
        whole = int(round(x))
        return f"{whole:,}".replace(",", "\u202f") if abs(whole) >= 10_000 else str(whole)
    if abs(x) < 1e-3:
        return f"{x:.{digits - 1}g}"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(x)))))
    return f"{x:.{decimals}f}".rstrip("0").rstrip(".")
