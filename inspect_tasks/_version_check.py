"""The Inspect release the tasks need, checked before they are imported.

An older ``inspect_ai`` lacks names the tasks import (``HeadlineMetric`` before 0.3.261):
Inspect would then report the entry point's ``ImportError`` and "No inspect tasks were
found". This names the version needed instead, in one line. The minimum is read from this
package's own requirement (the ``inspect`` extra), so it is declared once.
"""

from __future__ import annotations

import re
from importlib import metadata

_REQUIREMENT = re.compile(r"^inspect-ai\s*>=\s*([0-9][0-9.]*)", re.IGNORECASE)


def release(text: str) -> tuple[int, ...]:
    """``0.3.261`` (or ``0.3.261.dev4+g...``) -> (0, 3, 261)."""
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:3])


def required_inspect() -> str | None:
    """The lowest ``inspect-ai`` the installed condambig declares, if it declares one."""
    try:
        requirements = metadata.requires("condambig") or []
    except metadata.PackageNotFoundError:
        return None
    for requirement in requirements:
        found = _REQUIREMENT.match(requirement.strip())
        if found:
            return found.group(1)
    return None


def check_inspect(installed: str, required: str | None) -> None:
    """Raise ImportError naming both versions when ``installed`` is older than ``required``."""
    if required is not None and release(installed) < release(required):
        raise ImportError(
            f"condambig's Inspect tasks need inspect-ai>={required} (installed: {installed}); "
            f"run: pip install 'inspect-ai>={required}'")
