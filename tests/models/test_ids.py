"""Ids of messages, events and grants (``models.message.new_id``): unique, whatever the
process does with ``random`` and across a fork."""

from __future__ import annotations

import os
import random
import re

from agentworld.models import new_id


def test_an_id_is_its_prefix_the_time_and_sixty_four_random_bits() -> None:
    assert re.fullmatch(r"msg_[0-9a-f]{11,12}[0-9a-f]{16}", new_id("msg_"))


def test_seeding_random_does_not_make_ids_repeat() -> None:
    # Tests (hypothesis) and libraries seed the shared generator; ids have their own.
    random.seed(7)
    first = [new_id() for _ in range(3)]
    random.seed(7)
    again = [new_id() for _ in range(3)]
    assert len(set(first + again)) == 6


def test_a_forked_child_does_not_repeat_its_parents_ids() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent
        os.close(read)
        os.write(write, " ".join(new_id() for _ in range(50)).encode())
        os._exit(0)
    os.close(write)
    parents = {new_id() for _ in range(50)}
    with os.fdopen(read) as pipe:
        childs = set(pipe.read().split())
    os.waitpid(pid, 0)
    assert len(childs) == 50
    # Within the same millisecond the random part alone tells them apart.
    assert {i[-16:] for i in parents}.isdisjoint(i[-16:] for i in childs)
