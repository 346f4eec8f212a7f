"""Python's cyclic garbage collector around `evaluate`'s map and reduce (issue 27).

The map and the reduce build hundreds of thousands of containers (the partials, the reduced sums) that stay alive
for the whole run. Each full pass of the collector walks all of them and frees nothing: ≈ 0.4 CPU s per pass on 16
copies of the demo's bags, three passes per run (one at the end of the reduce, two during the analyses). So the
collector is paused while they are built (`collector_paused`), and what survives is moved out of its reach
(``gc.freeze``) until the run ends, inside `frozen_for_run` (outside it, e.g. `map_bags` called on its own, nothing
is frozen). Reference counting still frees every acyclic object, frozen
or not; only cyclic garbage among the frozen objects waits for the end of the run.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_RUNS = [0]
"""How many `frozen_for_run` scopes are open in this process (survivors are frozen only inside one)."""


@contextmanager
def collector_paused(pause: bool = True) -> Iterator[Callable[[], None]]:
    """The collector paused while the map (or the reduce) runs in this process; afterwards, inside `frozen_for_run`,
    the young generations are collected and the survivors frozen (module docstring); the collector runs as usual
    again (also when the map fails). A collector the caller had off stays off.

    Yields ``tidy``, which the map calls after each input: it collects the young generations only (the cycles made
    since the last call; no full pass), so cyclic garbage never outlives one bag on a long run."""
    was = gc.isenabled()
    if pause:
        gc.disable()
    try:
        yield (lambda: gc.collect(1)) if pause else (lambda: None)
    finally:
        if pause and was and _RUNS[0]:
            gc.collect(1)
            gc.freeze()
        if was:
            gc.enable()


@contextmanager
def frozen_for_run() -> Iterator[None]:
    """One run of `evaluate`: the objects `collector_paused` froze during it are handed back to the collector at its
    end (unless something else had frozen objects before the run: then its freeze is left as it was)."""
    before = gc.get_freeze_count()
    _RUNS[0] += 1
    try:
        yield
    finally:
        _RUNS[0] -= 1
        if before == 0 and not _RUNS[0]:
            gc.unfreeze()
