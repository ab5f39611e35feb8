"""The step gate lets a Temporal activity through its one model call or tool call and stops the
work before any other; outside a worker no gate is set and nothing stops."""

from __future__ import annotations

import pytest

from agentworld.runtime import step_gate
from agentworld.runtime.step_gate import StepGate, StepReached


def test_a_gate_lets_its_one_call_through_and_stops_before_the_next() -> None:
    gate = StepGate(allow="model")
    gate.enter("model")
    with pytest.raises(StepReached) as second:
        gate.enter("model")
    assert second.value.kind == "model"


def test_a_gate_stops_before_a_call_of_another_kind() -> None:
    gate = StepGate(allow="model")
    with pytest.raises(StepReached) as reached:
        gate.enter("tool")
    assert reached.value.kind == "tool"
    gate.enter("model")  # the stop took nothing of the model call it lets through


def test_a_stop_is_no_failure_an_except_exception_could_take() -> None:
    assert not issubclass(StepReached, Exception)


def test_without_a_gate_every_call_goes_on() -> None:
    assert step_gate.GATE.get() is None
    for _ in range(3):
        step_gate.enter("model")
        step_gate.enter("tool")


def test_a_gate_held_open_lets_every_call_through_and_closes_again() -> None:
    gate = StepGate(allow="tool")
    token = step_gate.GATE.set(gate)
    try:
        with step_gate.held_open():
            for _ in range(3):
                step_gate.enter("tool")
                step_gate.enter("model")
        step_gate.enter("tool")  # the one call the gate is for is still to be had
        with pytest.raises(StepReached):
            step_gate.enter("tool")
    finally:
        step_gate.GATE.reset(token)
