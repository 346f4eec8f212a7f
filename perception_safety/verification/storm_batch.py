"""Many small Storm checks answered as a few: the chains of one round checked together as their disjoint union.

A computation that needs Storm is written as a generator of `Query` objects (`Steps`): it yields a query and
receives the query's value vector (every state of its chain), or the `VerificationError` the query ended in, which
`answer_of` raises in the generator. `run` answers one computation's queries one at a time (Storm on each chain
alone); `run_all` advances many computations in lockstep and answers each round with one Storm call per (kind,
formula, options) on the disjoint union of that round's chains (one sparse model; their state spaces side by side,
no transition between them, labels concatenated). A state's value depends only on the states it can reach, all in
its own part, so each part's values are those of its chain alone: bit-equal on the sweep's chains and the tests'
random ones (tests/verification/test_storm_batch.py). A union Storm refuses (e.g. a part its acyclic solver rejects)
is answered part by part, as `run` would, so every outcome, error included, is the one-chain outcome.

The sweep asks ~800 small checks (40 chains of 10–114 states, 5 specs, interval bounds min and max, memory chains);
Storm's fixed cost per call (≈ 0.4 ms) was most of the verification step's time (issue 27 target 1).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from perception_safety.verification.errors import VerificationError

T = TypeVar("T")
Steps = Generator["Query", Any, T]
"""A computation that yields `Query` objects and receives each one's answer (`answer_of` reads it)."""


@dataclass(frozen=True, eq=False)
class Part:
    """One chain as Storm receives it: CSR arrays (``values``: probabilities, or ``[lower, upper]`` pairs of an
    interval chain), initial states and state labels; ``model()`` is its Storm model alone (built once)."""

    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    initial_states: np.ndarray
    labels: Mapping[str, np.ndarray]
    build: Callable[[], Any]
    _model: list[Any] = field(default_factory=list, compare=False, repr=False)

    @property
    def n_states(self) -> int:
        return len(self.indptr) - 1

    def model(self) -> Any:
        if not self._model:
            self._model.append(self.build())
        return self._model[0]


@dataclass(eq=False)
class Query:
    """Check ``formula`` on ``part``: ``on(model)`` is the value vector of the formula on any Storm model holding the
    part (raising when Storm fails), ``solo()`` the one-chain answer with its own fallbacks and error messages.
    ``key`` groups queries answered by one call on a union (the same check, the same kind of model);
    ``batchable`` False keeps the query out of unions. ``seconds``: the Storm time charged to it (its share of
    its round's union calls, or its own call)."""

    part: Part
    key: Hashable
    on: Callable[[Any], np.ndarray]
    solo: Callable[[], np.ndarray]
    batchable: bool = True
    seconds: float = 0.0


def answer_of(value: np.ndarray | VerificationError) -> np.ndarray:
    """What a computation received for its query: the values, or the query's error raised here."""
    if isinstance(value, VerificationError):
        raise value
    return value


def ask(query: Query) -> Steps[np.ndarray]:
    """``values = yield from ask(query)``: one query's values (its error raised)."""
    return answer_of((yield query))


def timed(steps: Steps[T], seconds: list[float]) -> Steps[T]:
    """``yield from timed(steps, seconds)``: the value of ``steps``, adding to ``seconds[0]`` the time ``steps``
    itself ran plus the Storm time charged to its queries (not the time other computations of `run_all` took while
    it waited)."""
    t = time.perf_counter()
    try:
        query = next(steps)
        while True:
            seconds[0] += time.perf_counter() - t
            answer = yield query
            seconds[0] += query.seconds
            t = time.perf_counter()
            query = steps.send(answer)
    except StopIteration as stop:
        seconds[0] += time.perf_counter() - t
        return stop.value


def _solo(query: Query) -> np.ndarray | VerificationError:
    t = time.perf_counter()
    try:
        return query.solo()
    except VerificationError as exc:
        return exc
    finally:
        query.seconds += time.perf_counter() - t


def run(steps: Steps[T]) -> T:
    """Run one computation, each query answered on its own chain."""
    try:
        query = next(steps)
        while True:
            query = steps.send(_solo(query))
    except StopIteration as stop:
        return stop.value


@dataclass(frozen=True)
class Outcome:
    """What a computation of `run_all` returned, or the exception it ended with."""

    value: Any = None
    error: BaseException | None = None


def run_alone(steps: Steps[Any]) -> Outcome:
    """`run` as an `Outcome` (the error a computation ends with recorded, as `run_all` records it)."""
    try:
        return Outcome(run(steps))
    except Exception as exc:
        return Outcome(error=exc)


def run_all(computations: Sequence[Steps[Any]]) -> list[Outcome]:
    """Run every computation, rounds of their queries answered together (module docstring); outcomes in order.

    A computation that raises ends alone (its `Outcome.error`); the others go on.
    """
    outcomes: list[Outcome | None] = [None] * len(computations)
    pending: dict[int, Query] = {}
    answers: dict[int, Any] = {}
    unions: dict[tuple[Hashable, ...], Any] = {}

    def advance(i: int, answer: Any) -> None:
        try:
            pending[i] = computations[i].send(answer)
        except StopIteration as stop:
            outcomes[i] = Outcome(stop.value)
        except Exception as exc:  # the computation's own failure: recorded, raised by the caller if it wants
            outcomes[i] = Outcome(error=exc)

    for i in range(len(computations)):
        advance(i, None)
    while pending:
        answers.clear()
        _answer_round(pending, answers, unions)
        round_queries = dict(pending)
        pending.clear()
        for i in round_queries:
            advance(i, answers[i])
    return [o if o is not None else Outcome() for o in outcomes]


def _answer_round(queries: Mapping[int, Query], answers: dict[int, Any],
                  unions: dict[tuple[Hashable, ...], Any]) -> None:
    """Answer one round: one union call per key (a lone query or an unbatchable one: on its own chain)."""
    groups: dict[Hashable, list[int]] = {}
    for i, q in queries.items():
        if q.batchable:
            groups.setdefault(q.key, []).append(i)
        else:
            answers[i] = _solo(q)
    for members in groups.values():
        if len(members) == 1:
            answers[members[0]] = _solo(queries[members[0]])
            continue
        parts = list({id(queries[i].part): queries[i].part for i in members}.values())
        t = time.perf_counter()
        try:
            model, offsets = _union(parts, unions)
            values = queries[members[0]].on(model)
        except Exception:  # Storm refused the union: each part as it would be alone (its own error, fallback)
            for i in members:
                answers[i] = _solo(queries[i])
            continue
        share = (time.perf_counter() - t) / len(members)
        where = {id(p): k for k, p in enumerate(parts)}
        for i in members:
            k = where[id(queries[i].part)]
            answers[i] = values[offsets[k]:offsets[k + 1]].copy()
            queries[i].seconds += share


def _union(parts: Sequence[Part], cache: dict[tuple[Hashable, ...], Any]) -> tuple[Any, np.ndarray]:
    """The Storm model of the parts side by side (cached for the run: rounds ask the same parts again)."""
    from perception_safety.verification.storm_umb import storm_dtmc

    offsets = np.cumsum([0, *(p.n_states for p in parts)])
    key = tuple(id(p) for p in parts)
    if key not in cache:
        names = list(dict.fromkeys(n for p in parts for n in p.labels))
        starts = np.cumsum([0, *(len(p.indices) for p in parts)])
        indptr = np.concatenate([[0], *(np.asarray(p.indptr[1:], dtype=np.int64) + s
                                        for p, s in zip(parts, starts, strict=False))])
        indices = np.concatenate([np.asarray(p.indices, dtype=np.int64) + o for p, o in zip(parts, offsets,
                                                                                            strict=False)])
        values = np.concatenate([np.asarray(p.values, dtype=np.float64) for p in parts])
        initial = np.concatenate([np.asarray(p.initial_states, dtype=np.int64) + o
                                  for p, o in zip(parts, offsets, strict=False)])
        labels = {n: np.concatenate([np.asarray(p.labels[n], dtype=bool) if n in p.labels
                                     else np.zeros(p.n_states, dtype=bool) for p in parts]) for n in names}
        cache[key] = (storm_dtmc(indptr, indices, values, initial, labels), parts)  # parts kept: ids stay theirs
    return cache[key][0], offsets
