"""Registries: the names jaxsched offers (engines, each engine's policies) with their docs,
options and entry points, free of JAX.

Every name a user can type, and every list that validation, the command line, sweeps, the docs
tables and the tests read, comes from one `Registry`. An entry's target is a `"module:attribute"`
string resolved on first use (as jumanji's and gymnax's `register`), or the object itself for an
entry added from user code; so importing a registry imports no engine and no JAX, and the
command line's `--help` answers at once.

- `ENGINES`: engine name -> `"jaxsched.<name>:ENGINE"`. `register_engine` adds one from outside.
- `policies(engine)`: that engine's policy registry (`jaxsched.<engine>.registry.POLICIES`).
- `register_policy(engine, name, fn, doc, options, reference=None)`: a policy from user code,
  used by name like a built-in one (`DPConfig(policy=name)`, sweeps, `--set policy=name`).

A registry is a read-only mapping from name to `Entry` (`registry[name].fn` is the resolved
object); `Registry.require(value, field)` is the one error for a name that is not in it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

from .errors import ConfigError


@dataclass(frozen=True)
class Entry:
    """One registered name.

    name: the name users type. target: `"module:attribute"` (resolved lazily) or the object.
    doc: one line. options: the Config / Params fields this entry reads (other entries ignore
    them). reference: the plain-Python reference of a policy (`"module:attribute"` or object,
    None for the built-in ones, whose references live in `tests/reference/`).
    """

    name: str
    target: str | Any
    doc: str
    options: tuple[str, ...] = ()
    reference: str | Any | None = None
    builtin: bool = field(default=True, compare=False)

    @property
    def fn(self) -> Any:
        """The target object (the policy function, rule or engine), imported on first use."""
        return _resolve(self.target)

    def reference_fn(self) -> Any:
        """The plain-Python reference, resolved (None if the entry has none)."""
        return None if self.reference is None else _resolve(self.reference)


_RESOLVED: dict[str, Any] = {}


def _resolve(target: str | Any) -> Any:
    """`"module:attribute"` -> the attribute (cached); any other object -> itself."""
    if not isinstance(target, str):
        return target
    if target not in _RESOLVED:
        module, _, attr = target.partition(":")
        obj = importlib.import_module(module)
        for part in attr.split(".") if attr else ():
            obj = getattr(obj, part)
        _RESOLVED[target] = obj
    return _RESOLVED[target]


def _check_name(name: Any, what: str) -> str:
    if not (isinstance(name, str) and name.isidentifier() and name.islower()):
        raise ConfigError(
            f"{what} name must be a lower-case Python identifier (letters, digits, underscores), got {name!r}"
        )
    return name


class Registry(Mapping[str, Entry]):
    """The entries of one kind ("policy", "engine", ...) of one owner ("dp", "jaxsched"), in
    registration order. Read-only as a mapping; `register` adds entries."""

    def __init__(self, owner: str, kind: str):
        self.owner, self.kind = owner, kind
        self._entries: dict[str, Entry] = {}

    def __getitem__(self, name: str) -> Entry:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.owner!r}, {self.kind!r}, {list(self._entries)})"

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(self._entries)

    def register(
        self,
        name: str,
        target: str | Any,
        doc: str,
        options: tuple[str, ...] = (),
        reference: str | Any | None = None,
        *,
        builtin: bool = False,
        replace: bool = False,
    ) -> Entry:
        """Add `name` (ConfigError if it is taken, unless `replace` and the taken entry was
        itself added from user code: a built-in name is never replaced, so a results row that
        says `fcfs` always means the built-in FCFS)."""
        _check_name(name, self.kind)
        if not isinstance(doc, str) or not doc.strip():
            raise ConfigError(f"{self.kind} {name!r}: doc must be a non-empty one-line string")
        options = tuple(options)
        if not all(isinstance(o, str) for o in options):
            raise ConfigError(f"{self.kind} {name!r}: options must be field names (strings), got {options!r}")
        if target is None or (isinstance(target, str) and ":" not in target):
            raise ConfigError(
                f"{self.kind} {name!r}: the target must be an object or a 'module:attribute' string, got {target!r}"
            )
        old = self._entries.get(name)
        if old is not None and (old.builtin or not replace):
            why = "a built-in name" if old.builtin else "taken (pass replace=True to replace it)"
            raise ConfigError(f"{self.owner} {self.kind} {name!r} is {why}")
        entry = Entry(name, target, doc.strip(), options, reference, builtin)
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove an entry added from user code (ConfigError for a built-in or unknown name)."""
        old = self._entries.get(name)
        if old is None or old.builtin:
            raise ConfigError(f"{self.owner} {self.kind} {name!r}: only a name added from user code can be removed")
        del self._entries[name]

    def require(self, value: Any, field: str) -> str:
        """`value` if it is a registered name; one ConfigError naming the allowed names
        otherwise."""
        if not (isinstance(value, str) and value in self._entries):
            raise ConfigError(f"{field} must be one of {self.names()}, got {value!r}")
        return value


def builtin(registry: Registry, name: str, target: str, doc: str, options: tuple[str, ...] = ()) -> None:
    """Register a built-in entry (the package's own registries)."""
    registry.register(name, target, doc, options, builtin=True)


# ---------------------------------------------------------------------------------- engines

ENGINES = Registry("jaxsched", "engine")
for _name, _doc in (
    ("dp", "data-parallel decode workers behind a barrier (paper 000, BF-IO)"),
    ("kv", "one engine under a KV-memory limit (paper 001, WAIT)"),
    ("offline", "a batch present at t = 0 with known output lengths (paper 002, Sorted-F)"),
    ("interval", "a batch present at t = 0 with predicted intervals (paper 003, A_min)"),
    ("budget", "one engine with a token budget per batch (paper 004)"),
    ("network", "agents of token-budget engines, routed and in tandem (paper 004 §4)"),
):
    builtin(ENGINES, _name, f"jaxsched.{_name}:ENGINE", _doc)


def register_engine(name: str, target: str | Any, doc: str, *, policies: str | None = None) -> Entry:
    """Add an engine from user code: `target` is the `Engine` value (or `"module:attribute"`),
    `policies` the `"module:attribute"` of its policy `Registry` (default: none)."""
    entry = ENGINES.register(name, target, doc)
    if policies is not None:
        _POLICY_REGISTRIES[name] = policies
    return entry


def unregister_engine(name: str) -> None:
    """Remove an engine added by `register_engine`."""
    ENGINES.unregister(name)
    _POLICY_REGISTRIES.pop(name, None)


# Where each engine's policy registry lives; `register_engine` adds to it.
_POLICY_REGISTRIES: dict[str, str] = {name: f"jaxsched.{name}.registry:POLICIES" for name in ENGINES}


def policies(engine: str) -> Registry:
    """The policy registry of `engine` (ConfigError if the engine is unknown or has none)."""
    ENGINES.require(engine, "engine")
    if engine not in _POLICY_REGISTRIES:
        raise ConfigError(f"engine {engine!r} has no policy registry")
    return _resolve(_POLICY_REGISTRIES[engine])


def register_policy(
    engine: str,
    name: str,
    fn: Callable,
    doc: str,
    options: tuple[str, ...] = (),
    reference: Callable | str | None = None,
    *,
    replace: bool = False,
) -> Entry:
    """Add policy `name` to `engine` from user code, with the engine's policy signature (each
    engine's `policies` module documents it; dp: `fn(config, params, obs) -> (worker, rank,
    rr_pointer)`, with the run's random stream in `obs.seed` and `obs.step`). `options`: the
    Config / Params fields it reads; `reference`: its plain-Python reference, if any. It is
    then a valid `policy` of that engine's Config, in sweeps and in policy sets."""
    if not callable(fn):
        raise ConfigError(f"register_policy: fn must be callable, got {fn!r}")
    return policies(engine).register(name, fn, doc, options, reference, replace=replace)


def unregister_policy(engine: str, name: str) -> None:
    """Remove a policy added by `register_policy`."""
    policies(engine).unregister(name)
