"""The one error type jaxsched raises for bad input."""


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
