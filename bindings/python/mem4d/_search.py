# SPDX-License-Identifier: MIT
"""plan(): every valid layout for a GPU count, filtered and ranked, as an iterator."""

import ctypes
import dataclasses

from . import _capi
from ._capi import lib
from ._enums import ParamKind, SearchOption, SearchStat
from ._errors import Mem4dError, Status, check
from ._estimate import Report, ReportBuffer, _read_report
from ._objects import Layout, _Handle, _new

# mem4d_search_option values by name ("fits_only": SearchOption.FITS_ONLY).
OPTIONS = {o.name.lower(): o for o in SearchOption}
# mem4d_search_stat names, in enum order.
STATS = tuple(s.name.lower() for s in SearchStat)
# Layout keys the search varies (mem4d_search_bound() takes them), as the
# loaded library says.
SEARCHED = tuple(name for key, name in enumerate(Layout.keys()) if lib.mem4d_search_varies(key))


@dataclasses.dataclass(frozen=True)
class Plan:
    """One layout the search yielded, and its estimate. equivalent_to_fastest:
    with tie_break=1, its speed band overlaps the fastest's (the fastest's own
    too), as `mem4d plan` marks the row and `plan --json` names it; False
    without tie_break or a speed prediction, and for a layout that does not
    fit (none is equivalent where none fits)."""
    layout: Layout
    report: Report
    equivalent_to_fastest: bool = False


class Search(_Handle):
    """A C search: constrain it, then iterate. Also a context manager."""

    _free = lib.mem4d_search_free

    def __init__(self, model, device, base):
        super().__init__(_new(lib.mem4d_search_new, _capi.SEARCH, model, device, base))
        self._layout = Layout()
        self._report = ReportBuffer()

    def option(self, name, value):
        if isinstance(value, bool):
            value = int(value)
        if not isinstance(value, int):
            raise TypeError(f"search option {name} takes an int or a bool, not {value!r}")
        if not 0 <= value < 1 << 64:
            raise Mem4dError(Status.E_RANGE, f"search option {name} = {value} is outside [0, 2**64 - 1]")
        code = lib.mem4d_search_set_option(self, OPTIONS[name], value)
        check(code, f"search option {name} = {value!r} is not accepted")

    def constrain(self, name, spec):
        """spec: a value (exact), a (min, max) tuple, or a list/set of allowed values."""
        key = Layout.key(name)
        if isinstance(spec, tuple):
            lo, hi = spec
            code = lib.mem4d_search_bound(self, key, lo, hi)
        elif isinstance(spec, (list, set, frozenset, range)):
            values = sorted(spec)
            array = (ctypes.c_uint64 * len(values))(*values)
            code = lib.mem4d_search_allow(self, key, array, len(values))
        else:
            value = _value(name, spec)
            code = lib.mem4d_search_bound(self, key, value, value)
        check(code, f"search constraint {name} = {spec!r} is not accepted")

    def reset(self):
        check(lib.mem4d_search_reset(self))

    def _stat(self, stat):
        out = ctypes.c_uint64()
        check(lib.mem4d_search_stat_get(self, stat, ctypes.byref(out)))
        return out.value

    @property
    def stats(self):
        return {name: self._stat(index) for index, name in enumerate(STATS)}

    def __iter__(self):
        return self

    def __next__(self):
        code = lib.mem4d_search_next(self, self._layout, self._report)
        if code == Status.END:
            raise StopIteration
        check(code, "the search failed")
        # The equivalent layouts are the first stats["equivalent"] yielded
        # (counted once the first is); this one is stats["yielded"]-th.
        equivalent = self._stat(SearchStat.YIELDED) <= self._stat(SearchStat.EQUIVALENT)
        return Plan(layout=self._layout.copy(), report=_read_report(self._report),
                    equivalent_to_fastest=equivalent)


def _value(name, spec):
    """A constraint's single value: an int, or a value name ("full")."""
    if isinstance(spec, bool):
        if Layout.kind(name) != ParamKind.BOOLEAN:
            raise TypeError(f"search constraint {name} is not a boolean: {spec!r} is refused")
        return int(spec)
    if isinstance(spec, int):
        if not 0 <= spec < 1 << 64:
            raise Mem4dError(Status.E_RANGE, f"search constraint {name} = {spec} is outside [0, 2**64 - 1]")
        return spec
    probe = Layout()
    probe[name] = spec  # parses "full", "true", ... the way the library does
    return probe[name]


def plan(model, device, gpus, seq, gbs=0, base=None, **constraints):
    """Iterate over the layouts of model on gpus devices, fastest first; with
    tie_break=1 as `mem4d plan` lists them: those whose speed band overlaps the
    fastest's first, by fewer model-parallel GPUs, then speed (the returned
    Search's stats["equivalent"] counts them once the first is yielded).

    gpus, seq and gbs set the world size, sequence length and global batch of
    the base layout (a Layout or a dict of further fixed settings, e.g.
    mode="paper"). Keyword arguments are, by name:
      - search options: fits_only, node_local, ranked, max_results, uneven_stages,
        tie_break;
      - searched knobs (tp, cp, pp, dp, mbs, vpp, recompute, dist_opt; ep, etp
        and moe_dispatcher for a model with experts: SEARCHED lists them): an
        exact value, a (min, max) tuple, or a list of allowed values;
      - any other layout parameter: a fixed setting of the base layout.
    Yields Plan(layout, report, equivalent_to_fastest). Raises Mem4dError on a
    bad argument.
    """
    fixed = Layout()
    if isinstance(base, Layout):
        fixed = base.copy()
    elif base:
        fixed.set(**base)
    knobs, options = {}, {}
    for name, spec in constraints.items():
        if name in OPTIONS:
            options[name] = spec
        elif Layout.keys()[Layout.key(name)] in SEARCHED:
            knobs[name] = spec
        else:
            fixed[name] = spec
    fixed.set(world=gpus, seq=seq, gbs=gbs)
    search = Search(model, device, fixed)
    for name, value in options.items():
        search.option(name, value)
    for name, spec in knobs.items():
        search.constrain(name, spec)
    return search
