"""The one error type jaxsched raises for bad input, and the checks that raise it."""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple


class ConfigError(ValueError):
    """An invalid configuration value, named with its field and allowed range."""


def require(ok: bool, field: str, allowed: str, value) -> None:
    """Raise ConfigError('<field> must be <allowed>, got <value>') unless ok."""
    if not ok:
        raise ConfigError(f"{field} must be {allowed}, got {value!r}")


def require_int(value, field: str, lo: int | None = None, hi: int | None = None) -> int:
    """Check that value is an integer in [lo, hi] (either bound optional) and return it."""
    allowed = "an integer" + (f" >= {lo}" if lo is not None else "") + (f" and <= {hi}" if hi is not None else "")
    ok = isinstance(value, (int,)) and not isinstance(value, bool)
    if not ok:
        try:
            import numpy as np

            ok = isinstance(value, np.integer)
        except ImportError:  # pragma: no cover
            ok = False
    require(ok, field, allowed, value)
    value = int(value)
    require((lo is None or value >= lo) and (hi is None or value <= hi), field, allowed, value)
    return value


def require_float(value, field: str, lo: float | None = None, hi: float | None = None, lo_open: bool = False) -> float:
    """Check that value is a finite real in [lo, hi] (or (lo, hi] with lo_open) and return it."""
    import math

    op = ">" if lo_open else ">="
    allowed = (
        "a finite number" + (f" {op} {lo}" if lo is not None else "") + (f" and <= {hi}" if hi is not None else "")
    )
    # A string is not a number even when float() would parse it: the caller passed the wrong
    # type (the command line converts its text itself, naming the flag).
    if isinstance(value, (str, bytes)):
        raise ConfigError(f"{field} must be {allowed}, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{field} must be {allowed}, got {value!r}") from None
    ok = math.isfinite(x) and not isinstance(value, bool)
    if lo is not None:
        ok = ok and (x > lo if lo_open else x >= lo)
    if hi is not None:
        ok = ok and x <= hi
    require(ok, field, allowed, value)
    return x


def require_choice(value, field: str, choices) -> str:
    """Check that value is one of the names `choices` (a string; any other type, hashable or
    not, gets the same one-line error instead of a TypeError) and return it."""
    names = tuple(choices)
    require(isinstance(value, str) and value in names, field, f"one of {names}", value)
    return value


def require_bool(value, field: str) -> bool:
    """Check that value is True or False (numpy bools included; 0 and 1 are not) and return it."""
    try:
        import numpy as np

        ok = isinstance(value, (bool, np.bool_))
    except ImportError:  # pragma: no cover
        ok = isinstance(value, bool)
    require(ok, field, "True or False", value)
    return bool(value)


# ---------------------------------------------------------------------------------- ignored options


class Reads(NamedTuple):
    """Where an option is read: only while the setting `setting` (e.g. "policy") has one of
    `values`. An option may need several (e.g. --noise: policy bfio and predictor noisy)."""

    setting: str
    values: tuple[str, ...]


def reads_from(entries: Mapping[str, Any], setting: str, rename: Mapping[str, str] | None = None) -> dict:
    """{option: (Reads(setting, names of the entries that read it),)} from registry entries
    (name -> an entry with `.options`, e.g. a policy `Registry`); `rename` maps an entry's option
    name to the caller's (a field to the flag dest that sets it)."""
    out: dict[str, list[str]] = {}
    for name, entry in entries.items():
        for option in getattr(entry, "options", ()):
            names = out.setdefault((rename or {}).get(option, option), [])
            if name not in names:  # two options renamed to one flag
                names.append(name)
    return {option: (Reads(setting, tuple(names)),) for option, names in out.items()}


def merge_reads(*tables: Mapping[str, tuple[Reads, ...]]) -> dict[str, tuple[Reads, ...]]:
    """One table of several: an option in more than one needs every condition (the earlier
    tables' first, so an error names the outermost setting that ignores the option)."""
    out: dict[str, tuple[Reads, ...]] = {}
    for table in tables:
        for option, conditions in table.items():
            out[option] = out.get(option, ()) + tuple(conditions)
    return out


def refuse_ignored(
    given: Iterable[str],
    chosen: Mapping[str, Any],
    reads: Mapping[str, tuple[Reads, ...]],
    exclusive: Iterable[tuple[str, str, str]] = (),
    label: Callable[[str], str] = str,
) -> None:
    """One ConfigError for the first option of `given` that the chosen settings ignore, or the
    first pair of `exclusive` options given together; the one check of every command and
    config for options that would change nothing.

    given: the options set by the user (a command line's flags, a config's non-default fields).
    chosen: {setting: its value, or a sequence of values (several policies run)}.
    reads: {option: conditions, all of which must hold for the option to be read}.
    exclusive: (a, b, why) triples: a and b must not both be given (why says which wins).
    label: the option's name in the message (a flag for the command line).
    Inside `as_one_grid` an ignored option is noted instead (the grid refuses it on leaving if
    no point reads it); exclusive options are refused at once everywhere.
    """
    given = list(given)
    for a, b, why in exclusive:
        if a in given and b in given:
            raise ConfigError(f"{label(a)} and {label(b)} are exclusive ({why}): give one or the other")
    grid = _GRID.get()
    for option in given:
        conditions = _conditions(option, chosen, reads)
        why = next(((s, v, n) for s, v, n in conditions if not any(x in v for x in n)), None)
        if grid is None:
            if why is not None:
                raise ConfigError(_ignored_message(label(option), *why))
        elif why is None:
            grid[label(option)] = None  # read by a point of the grid: kept
        elif grid.get(label(option), []) is not None:
            grid.setdefault(label(option), []).append((conditions, why))


def _conditions(option: str, chosen: Mapping[str, Any], reads: Mapping[str, tuple[Reads, ...]]) -> list:
    """[(setting, its readers, the chosen values)] of each condition of `option`."""
    out = []
    for setting, values in reads.get(option, ()):
        value = chosen[setting]
        out.append((setting, tuple(values), (value,) if isinstance(value, str) or value is None else tuple(value)))
    return out


def _ignored_message(name: str, setting: str, values: tuple, now: tuple) -> str:
    many = len(now) > 1
    return (
        f"{name} is read only by {setting} {', '.join(values)}; "
        f"{_plural(setting) if many else setting} {', '.join(map(str, now))} ignore{'' if many else 's'} it"
    )


def _plural(word: str) -> str:
    """'policy' -> 'policies', 'workload' -> 'workloads' (the settings' names)."""
    return word[:-1] + "ies" if word.endswith("y") and not word.endswith("ey") else word + "s"


def changed_fields(obj: Any, names: Iterable[str]) -> list[str]:
    """The fields among `names` of the dataclass `obj` whose values differ from their defaults:
    what a Python caller set (the API's counterpart of the flags given on a command line)."""
    import dataclasses

    defaults = {f.name: f.default for f in dataclasses.fields(obj)}
    return [n for n in names if not _same(getattr(obj, n), defaults[n])]


def changed_keywords(fn: Callable, values: Mapping[str, Any]) -> list[str]:
    """The keywords of `values` ({name: the value a call of `fn` got}) whose values differ from
    `fn`'s defaults for them: what a caller of a make_params set (`changed_fields` for
    keyword arguments)."""
    import inspect

    defaults = inspect.signature(fn).parameters
    return [n for n, v in values.items() if not _same(v, defaults[n].default)]


# -------------------------------------------------------------------------------- grids of points

# The ignored options noted inside `as_one_grid`: {option: None (a point reads it) or, for
# each point that ignores it, its conditions and the first one failed (`refuse_ignored`)};
# None outside a grid.
_GRID: contextvars.ContextVar[dict[str, list | None] | None] = contextvars.ContextVar("jaxsched_grid", default=None)


@contextlib.contextmanager
def as_one_grid() -> Iterator[None]:
    """Build the points of one grid, whose options are named once for all of them, inside this
    block: a sweep's base config and params over a policy axis, a comparison of policies with
    one set of make_params keywords.

    A config or make_params refuses an option its settings ignore at once when called alone
    (the caller named that combination); inside the block it notes the option instead, and on
    leaving the block one ConfigError names the first option that no point built inside reads
    (with the settings of the points that ignore it). An option some point reads is accepted
    for every point: the others run as they would without it. Build the points inside, run
    them after. A block inside another joins the outer one; exclusive options and bad values
    are refused at once, inside or not.
    """
    if _GRID.get() is not None:
        yield
        return
    noted: dict[str, list | None] = {}
    token = _GRID.set(noted)
    try:
        yield
    finally:
        _GRID.reset(token)
    for name, points in noted.items():
        if points:
            raise ConfigError(_grid_message(name, points))


def _grid_message(name: str, points: list) -> str:
    """Why no point of a grid reads option `name`, as the command line says it for several
    policies: the first condition that the settings of all the points together fail (with all
    their values), else (each setting has a reader somewhere, never all at one point) the
    first point's."""
    for i, (setting, values, _) in enumerate(points[0][0]):
        now: list = []
        for conditions, _ in points:
            now += [x for x in conditions[i][2] if x not in now]
        if not any(x in values for x in now):
            return _ignored_message(name, setting, values, tuple(now))
    return _ignored_message(name, *points[0][1])


def _same(value: Any, default: Any) -> bool:
    """value == default, False where the comparison is not a plain bool (arrays)."""
    try:
        return bool(value == default)
    except (TypeError, ValueError):
        return False
