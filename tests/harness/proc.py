"""Processes as /proc shows them: the one reader of ``/proc/<pid>/stat`` (tests/conftest.py's CPU per file,
bench/run.py's CPU per run, the harness' process groups)."""
from __future__ import annotations

import os

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid) -> tuple | None:
    """(name, the fields after it) of ``/proc/<pid>/stat``, or None once the process is gone. The fields: state(0)
    ppid(1) pgrp(2) ... utime(11) stime(12) cutime(13) cstime(14), times in clock ticks."""
    try:
        with open("/proc/%s/stat" % pid) as handle:
            data = handle.read()
    except OSError:
        return None
    close = data.rfind(")")
    return data[data.find("(") + 1:close], data[close + 2:].split()


def read_stat(pid) -> tuple | None:
    """(ppid, name, own CPU s, CPU s of the children it reaped) of a process, or None once it is gone."""
    stat = _stat(pid)
    if stat is None:
        return None
    name, fields = stat
    return (int(fields[1]), name, (int(fields[11]) + int(fields[12])) / TICK,
            (int(fields[13]) + int(fields[14])) / TICK)


def live(pid) -> bool:
    """Whether the process runs: it exists and is not a zombie (ended, not yet reaped)."""
    return _running(_stat(pid))


def _running(stat) -> bool:
    """A process with this ``_stat`` exists and is not a zombie."""
    return stat is not None and stat[1][0] != "Z"


def group_members(pgid: int) -> list:
    """The live (not zombie) processes of process group ``pgid``."""
    members = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        stat = _stat(entry)
        if _running(stat) and int(stat[1][2]) == pgid:
            members.append(int(entry))
    return members


def tree(root: int) -> dict:
    """pid -> (ppid, name, CPU s with what it reaped) of `root` and every live process below it. Their sum is the
    CPU the tree has used so far: a process that ends moves its seconds into the parent that reaps it."""
    table = {}
    for entry in os.listdir("/proc"):
        stat = read_stat(entry) if entry.isdigit() else None
        if stat is not None:
            table[int(entry)] = (stat[0], stat[1], stat[2] + stat[3])
    children: dict = {}
    for pid, (ppid, _name, _cpu) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in table and pid not in out:
            out[pid] = table[pid]
            todo.extend(children.get(pid, ()))
    return out
