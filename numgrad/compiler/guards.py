"""compiler.guards: find what a traced function reads besides its arguments, and check it.

Room: compiler. Before a trace, ``scan`` walks what the function can reach: the
globals its code loads (``LOAD_GLOBAL``, in nested code too), its closure cells,
its defaults, and the attributes (``LOAD_ATTR`` names) of the objects it gets
(``self``, a config object, a list of layers), recursing into the Python
functions and methods it finds. Each value found is remembered with the path
that reaches it (``g['LR']``, ``cell.cell_contents``, ``obj.layers[0].W``).

After the trace, ``build`` turns what was found into one guard: a generated
Python function of one boolean expression, evaluated before every call of the
plan (the way TorchDynamo compiles its guards). It checks
- the function's code object and defaults (an edit in Jupyter retraces);
- captured tensors by identity, ``requires_grad``, shape and dtype (their data is
  read at call time, as implicit inputs of the plan);
- Python scalars, strings, ``None`` and tuples of them by value, floats by bits
  (``0.0`` and ``-0.0`` differ, NaN matches NaN);
- list and dict entries present at trace time; Python functions by identity;
- small NumPy arrays by content (a large one is baked in with a warning).
The scan over-approximates what the function reads (a guard on a value the trace
never used costs a retrace when it changes, never a wrong answer). What it cannot
see: values reached through module attributes (``cfg.LR`` with ``cfg`` a module)
or computed by C code. Those are documented in the README.

numgrad's own code is skipped (it reads no state a user changes between calls), with
one exception: the methods of ``numgrad.nn`` classes read the layer state a user sets
(``training``, a Dropout's ``p``, a LayerNorm's ``eps``, the children of a
``Sequential``, forward hooks, parameters replaced by new ones). Their bodies (the
methods reached, and ``__iter__``/``__getitem__``, which syntax calls) are walked for
the attribute names they load, which are then read on the instances of that class only
(a Linear is not guarded on the ``training`` flag a Dropout reads);
their code, defaults and globals are library constants and get no guard terms. A class
tells the scan, through ``_ng_attr_tables``, which dicts its ``__getattr__`` serves
attributes from (a module's parameters, buffers and children), and through
``_ng_keyed`` which dicts' key sets decide what a call does (a child appended to a
``Sequential``, a forward hook registered later): those are guarded by length too.
"""
from __future__ import annotations

import dis
import functools
import math
import types
import warnings
import weakref

import numpy as np

from numgrad.tensor import Tensor

_SCALARS = (bool, int, float, complex, str, bytes, type(None))
_MAX_ENTRIES = 64          # container entries walked (and guarded) per list / dict
_MAX_DEPTH = 6             # path length from a root
_SMALL_ARRAY = 4096        # bytes: NumPy arrays up to this size are guarded by content
_LOAD_ATTR = {"LOAD_ATTR", "LOAD_METHOD", "STORE_ATTR"}


def _skip_module(name):
    # Library code reads no user state that changes between calls; walking into it would
    # only add guards (and cost) that never fail.
    root = (name or "").split(".")[0]
    return root in ("numpy", "builtins", "functools", "math", "torch", "jax")


def _is_numgrad(fn):
    return (getattr(fn, "__module__", None) or "").split(".")[0] == "numgrad"


# numgrad packages whose classes' methods read state a user sets between calls (see the
# module docstring); their free functions (``nn.functional``) read only their arguments.
_STATEFUL_ROOMS = ("numgrad.nn.",)


_IMPLICIT = ("__iter__", "__getitem__", "__len__", "__contains__")


def _reads_user_state(fn):
    qual = getattr(fn, "__qualname__", "")
    return ((getattr(fn, "__module__", None) or "").startswith(_STATEFUL_ROOMS)
            and "." in qual and "<locals>" not in qual)


@functools.lru_cache(maxsize=4096)
def _code_names(code):
    """(global names, attribute names) a code object and its nested code objects load."""
    globs, attrs = set(), set()
    stack = [code]
    while stack:
        c = stack.pop()
        for ins in dis.get_instructions(c):
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                globs.add(ins.argval)
            elif ins.opname in _LOAD_ATTR:
                attrs.add(ins.argval)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return frozenset(globs), frozenset(attrs)


def scalar_key(v):
    """A hashable key for a Python value that tells ``0.0`` from ``-0.0`` and matches NaN."""
    t = type(v)
    if t is float:
        if v != v:
            return (float, "nan")
        return (float, v, math.copysign(1.0, v))
    if t is complex:
        return (complex, scalar_key(v.real), scalar_key(v.imag))
    if t is tuple:
        return (tuple,) + tuple(scalar_key(x) for x in v)
    return (t, v)


def _is_value(v):
    t = type(v)
    if t in _SCALARS or isinstance(v, np.generic):
        return True
    return t is tuple and len(v) <= _MAX_ENTRIES and all(_is_value(x) for x in v)


class Scan:
    """What a function can reach: paths to tensors and the guard terms on everything else."""

    def __init__(self):
        self.tensors = {}      # id(tensor) -> (tensor, path expression)
        self.terms = []        # (tag, guard expression, path, value at trace), in order found
        self.shown = {}        # name in ns -> how a person names it ("" for a globals dict)
        self._attr_dicts = {}  # name of an object's attribute dict -> the object's name
        self.ns = {"_key": scalar_key, "_copysign": math.copysign}
        self._names = {}       # id(object) -> its name in ns
        self.warnings = []     # one-line texts for what is baked in unguarded
        self._seen = set()     # id() of containers / objects / functions already walked
        self._objects = []     # (object, path, depth) whose attributes are walked at the end
        self._attrs = set()    # attribute names any reached code loads
        self._cls_attrs = {}   # class -> attribute names its numgrad methods load on self
        self._tag = None       # the code object whose walk is adding terms (None: the roots)

    def add(self, term, path=None, was=None):
        # Terms are tagged with the function whose body reads the value: a function that did
        # not run during the trace (a hook, a branch not taken) read nothing the plan depends
        # on, so its terms are dropped after the trace (``build``). ``path`` and ``was`` say
        # what a retrace explanation names (``LR``: was 0.1).
        self.terms.append((self._tag, term, path, was))

    def name(self, obj):
        """A name in the guard's namespace bound to ``obj`` (one per object)."""
        n = self._names.get(id(obj))
        if n is None:
            n = self._names[id(obj)] = f"o{len(self.ns)}"
            self.ns[n] = obj    # (held: its id() stays its own)
        return n

    # ------------------------------------------------------------- roots
    def function(self, fn, path, depth=0, cls=None):
        """Walk a callable: its code, defaults, closure and globals. ``cls``: the class of
        the object it was found on, when it was found as a method."""
        if isinstance(fn, types.FunctionType) and _reads_user_state(fn):
            # Keyed by (function, class): Module.__call__ reads other names on a Linear
            # (its forward's) than on a Dropout.
            key = (id(fn), cls)
            if key not in self._seen:
                self._seen.add(key)
                names = _code_names(fn.__code__)[1]
                if cls is None:
                    self._attrs |= names
                else:
                    self._cls_attrs[cls] = self._cls_attrs.get(cls, frozenset()) | names
            return
        if id(fn) in self._seen or depth > _MAX_DEPTH:
            return
        self._seen.add(id(fn))
        inner = getattr(fn, "_ng_jit_fn", None)        # a CompiledFunction: walk what it runs
        if inner is not None:
            return self.function(inner, f"{path}._ng_jit_fn", depth + 1)
        if isinstance(fn, types.MethodType):
            self.value(fn.__self__, f"{path}.__self__", depth + 1)
            return self.function(fn.__func__, f"{path}.__func__", depth + 1,
                                 type(fn.__self__))
        if isinstance(fn, functools.partial):
            self.function(fn.func, f"{path}.func", depth + 1)
            for i, a in enumerate(fn.args):
                self.value(a, f"{path}.args[{i}]", depth + 1)
            for k, a in (fn.keywords or {}).items():
                self.value(a, f"{path}.keywords[{k!r}]", depth + 1)
            return
        if not isinstance(fn, types.FunctionType):
            call = getattr(type(fn), "__call__", None)
            if isinstance(call, types.FunctionType) and not _skip_module(call.__module__):
                # A callable object (an nn.Module): its attributes and class. ``path`` names
                # the object itself, so no identity term.
                self._objects.append((fn, path, depth))
            return
        if _skip_module(fn.__module__):
            return
        if _is_numgrad(fn):
            # numgrad's own wrappers (ng.grad, ng.value_and_grad...): only the user functions
            # they close over matter.
            for cell in fn.__closure__ or ():
                try:
                    v = cell.cell_contents
                except ValueError:
                    continue
                if callable(v):
                    self.value(v, f"{self.name(cell)}.cell_contents", depth + 1)
            return
        code = fn.__code__
        c = self.name(code)
        self.add(f"{path}.__code__ is {c}", f"{path}.__code__", "its code at trace time")
        outer, self._tag = self._tag, code
        try:
            self._function_body(fn, path, code, depth)
        finally:
            self._tag = outer

    def _function_body(self, fn, path, code, depth):
        if fn.__defaults__ is not None:
            d = self.name(fn.__defaults__)
            self.add(f"{path}.__defaults__ is {d}", f"{path}.__defaults__", repr(fn.__defaults__))
            for i, a in enumerate(fn.__defaults__):
                self.value(a, f"{d}[{i}]", depth + 1)
        else:
            self.add(f"{path}.__defaults__ is None", f"{path}.__defaults__", "None")
        if fn.__kwdefaults__:
            for k, a in fn.__kwdefaults__.items():
                self.value(a, f"{path}.__kwdefaults__[{k!r}]", depth + 1)
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                v = cell.cell_contents
            except ValueError:          # an unbound cell (a name assigned later)
                continue
            self.shown[self.name(cell)] = name
            self.value(v, f"{self.name(cell)}.cell_contents", depth + 1)
        globs, attrs = _code_names(code)
        self._attrs |= attrs
        g = fn.__globals__
        gname = None
        for n in sorted(globs):
            if n in g:
                gname = gname or self.name(g)
                self.shown[gname] = ""
                self.value(g[n], f"{gname}[{n!r}]", depth + 1)

    # ------------------------------------------------------------- values
    def value(self, v, path, depth):
        if depth > _MAX_DEPTH:
            return
        if isinstance(v, Tensor):
            self.tensors.setdefault(id(v), (v, path))
            return
        if _is_value(v):
            self.add(_value_term(self, v, path), path, _short(v))
            return
        if isinstance(v, types.ModuleType) or isinstance(v, type):
            return
        if isinstance(v, np.ndarray):
            self._array(v, path)
            return
        if callable(v) and isinstance(v, (types.FunctionType, types.MethodType,
                                          functools.partial)) or hasattr(v, "_ng_jit_fn"):
            o = self.name(v)
            self.add(f"{path} is {o}", path, _short(v))
            self.shown.setdefault(o, self.display(path))
            self.function(v, o, depth)
            return
        if id(v) in self._seen:
            return
        self._seen.add(id(v))
        if isinstance(v, (list, dict, tuple)):
            o = self.name(v)
            # NOTE: entries, not lengths: a list the function appends to (a log of losses)
            # must not retrace every call. A key added later is not seen.
            self.add(f"{path} is {o}", path, f"another {type(v).__name__}")
            self.shown.setdefault(o, self.display(path))
            items = v.items() if isinstance(v, dict) else enumerate(v)
            for n, (k, x) in enumerate(items):
                if n >= _MAX_ENTRIES:
                    break
                if isinstance(k, (str, int)):
                    self.value(x, f"{o}[{k!r}]", depth + 1)
            return
        if hasattr(v, "__dict__") or hasattr(type(v), "__slots__"):
            o = self.name(v)
            self.add(f"{path} is {o}", path, f"another {type(v).__name__}")
            self.shown.setdefault(o, self.display(path))
            self._objects.append((v, o, depth))

    def _array(self, a, path):
        o = self.name(a)
        terms = [f"{path} is {o}", f"{o}.shape == {a.shape!r}",
                 f"{o}.dtype == {self.name(a.dtype)}"]
        if a.nbytes <= _SMALL_ARRAY:
            terms.append(f"{o}.tobytes() == {self.name(a.tobytes())}")
        else:
            self.warnings.append(f"reads the NumPy array {path.split('[')[-1].rstrip(']')} "
                                 f"{a.shape} from outside its arguments; changes to its values "
                                 "are not seen (pass it as an argument, ng.from_numpy(a))")
        self.add(" and ".join(terms), path, f"array{a.shape} {a.dtype}")

    def display(self, path):
        """``path`` as a person names it: ``LR`` for a global, ``self.scale``, a closure
        variable by its name (``o4['LR']`` is how the guard spells it)."""
        import re

        def one(m):
            name, rest = m.group(1), m.group(2) or ""
            shown = self.shown.get(name)
            if shown == "" and rest.startswith("["):        # a global: its name
                return rest[2:-2]
            owner = self._attr_dicts.get(name)
            if owner is not None and rest.startswith("["):  # an attribute read from its dict
                return f"{self.display(owner)}.{rest[2:-2]}"
            if rest == ".cell_contents" and shown is not None:
                return shown
            return (shown if shown is not None else name) + rest
        return re.sub(r"\b(o\d+)(\[[^\]]+\]|\.cell_contents)?", one, path)

    def finish(self):
        """Walk the attributes that reached code loads, of every object found, to a fixpoint:
        a method found on an object may load further attributes, on it or on objects
        walked before."""
        done = {}               # index in _objects -> attribute names walked on it
        grown = True
        while grown:
            grown = False
            i = 0
            while i < len(self._objects):
                obj, o, depth = self._objects[i]
                cls = type(obj)
                names = self._attrs | self._cls_attrs.get(cls, frozenset())
                walked = done.get(i)
                if walked is None:
                    walked = done[i] = set()
                    call = getattr(cls, "__call__", None)
                    if isinstance(call, types.FunctionType) and not _skip_module(
                            call.__module__):
                        self.function(call, self.name(call), depth + 1, cls)
                        grown = True
                    for dunder in _IMPLICIT:
                        # Called by syntax (``for m in self.layers``, ``self.layers[0]``),
                        # so no code loads their names: an nn container's children are
                        # reached through them.
                        fn = getattr(cls, dunder, None)
                        if isinstance(fn, types.FunctionType) and _reads_user_state(fn):
                            self.function(fn, self.name(fn), depth + 1, cls)
                            grown = True
                new = names - walked
                if new:
                    walked |= new
                    grown = True
                    for n in sorted(new):
                        self._attribute(obj, cls, o, n, depth)
                i += 1

    def _attribute(self, obj, cls, o, n, depth):
        d = getattr(obj, "__dict__", {})
        tables = getattr(cls, "_ng_attr_tables", None)
        # A module's own state and children are one level down whatever the nesting: the
        # module tree is finite (and walked once), and a layer five containers deep
        # must be guarded as well as one at the top.
        sub = depth if tables is not None else depth + 1
        if n in d:
            if tables is not None:
                # A class that names its tables promises that they, and its __dict__, live
                # as long as the object: the guard reads the dict, not the attribute (a
                # module's __getattr__ makes every attribute load slow).
                path = f"{self.name(d)}[{n!r}]"
                self._attr_dicts[self.name(d)] = o
            else:
                path = f"{o}.{n}" if n.isidentifier() else f"getattr({o}, {n!r})"
            if n in getattr(cls, "_ng_keyed", ()) and isinstance(d[n], dict):
                self.shown.setdefault(self.name(d[n]), f"{self.display(o)}.{n}")
                self._keyed(d[n], sub)
            else:
                self.value(d[n], path, sub)
            return
        member = getattr(cls, n, None)
        if isinstance(member, (types.FunctionType, property)):
            fn = member.fget if isinstance(member, property) else member
            if fn is not None:
                self.function(fn, self.name(fn), depth + 1, cls)
            return
        if n in getattr(cls, "__slots__", ()) and hasattr(obj, n):
            self.value(getattr(obj, n), f"{o}.{n}", depth + 1)
            return
        for table in tables or ():
            # Served by the class's __getattr__ from one of its dicts (a module's
            # parameters, buffers and children).
            entries = d.get(table)
            if isinstance(entries, dict) and n in entries:
                self._attr_dicts[self.name(entries)] = o
                self.value(entries[n], f"{self.name(entries)}[{n!r}]", sub)
                return

    def _keyed(self, d, depth):
        """A dict whose key set matters (a module's hooks or children), which lives as long
        as its owner: its length is guarded with its entries, so a key added later
        retraces."""
        o = self.name(d)
        if not d:
            self.add(f"not {o}", o, "empty")  # the usual case (no hooks): one test
            return
        self.add(f"len({o}) == {len(d)}", f"len({o})", str(len(d)))
        for n, (k, x) in enumerate(d.items()):
            if n >= _MAX_ENTRIES:
                break
            if isinstance(k, (str, int)):
                self.value(x, f"{o}[{k!r}]", depth)


def _value_term(scan, v, path):
    t = type(v)
    if v is None or t is bool:
        return f"{path} is {v!r}"   # singletons
    if t is float:
        if v != v:
            return f"({path}.__class__ is float and {path} != {path})"
        if v == 0.0:
            return (f"({path}.__class__ is float and {path} == 0.0 and "
                    f"_copysign(1.0, {path}) == {math.copysign(1.0, v)!r})")
        if math.isinf(v):
            return f"({path}.__class__ is float and {path} == {'-' if v < 0 else ''}1e999)"
        return f"({path}.__class__ is float and {path} == {v!r})"
    if t in (int, str, bytes):
        return f"({path}.__class__ is {t.__name__} and {path} == {v!r})"
    # complex, NumPy scalars, tuples: identity first (the usual case), else the full key
    o, k = scan.name(v), scan.name(scalar_key(v))
    return f"({path} is {o} or _key({path}) == {k})"


def scan(fn, args, kwargs):
    """Walk ``fn`` and its non-tensor arguments (``self``, config objects)."""
    s = Scan()
    s.shown[s.name(fn)] = getattr(fn, "__qualname__", "the function")
    s.function(fn, s.name(fn))
    for a in list(args) + list(kwargs.values()):
        # Arguments are keyed by identity or value (lists, tuples and dicts are flattened
        # into keyed leaves); what the function reads from an object argument (``self``'s
        # attributes) is guarded here.
        if not isinstance(a, (Tensor, np.ndarray, list, tuple, dict)) and not _is_value(a):
            s.shown[s.name(a)] = f"argument {type(a).__name__}"
            s.value(a, s.name(a), 1)
    s.finish()
    return s


def build(s, used_tensors, const_versions, grad_reads, executed, where):
    """The guard for one plan: a function of no arguments, or None when nothing can change.

    ``used_tensors``: the tensors the trace lifted or read as constants, each guarded by
    identity and metadata where the scan found a path to it; ``const_versions``: tensors baked
    in as constants, guarded by their version counter (an in-place change retraces);
    ``grad_reads``: ``(owner, g)`` for each ``owner.grad`` the function read; ``executed``:
    the code objects that ran during the trace (None if unknown: every term is kept).
    """
    kept = [(t, path, was) for tag, t, path, was in s.terms
            if tag is None or executed is None or tag in executed]
    s._tag = None
    ns = s.ns
    for t in used_tensors:
        found = s.tensors.get(id(t))
        if found is None:
            continue
        _, path = found
        o, dt = s.name(t), s.name(t._data.dtype)
        meta = (f"{o}._data.shape == {t._data.shape!r} and "
                f"({o}._data.dtype is {dt} or {o}._data.dtype == {dt})")
        try:
            # The payload seen at trace time (a weak reference: the guard must not keep an
            # array the tensor let go of) has that shape and dtype: numgrad never reshapes
            # an array in place, and an optimizer's step writes into it.
            meta = f"{o}._data is {s.name(weakref.ref(t._data))}() or ({meta})"
        except TypeError:
            pass
        kept.append((f"{path} is {o} and {o}._requires_grad is {t._requires_grad} and "
                     f"({meta})", path, _short(t)))
    for t, version in const_versions:
        o = s.name(t)
        kept.append((f"{o}._vc.value == {version}", f"{o}._vc.value",
                     f"version {version} (a constant tensor, changed in place since)"))
    for owner, g in grad_reads:  # `.grad` read inside: a new grad tensor is another input
        kept.append((f"{s.name(owner)}._grad is {s.name(g)}", f"{s.name(owner)}.grad",
                     _short(g)))
    terms = [t for t, _, _ in kept]
    for w in s.warnings:
        warnings.warn(f"@ng.jit {where} {w}", stacklevel=3)
    if not terms:
        return None
    src = "def guard():\n    try:\n        return (" + "\n                and ".join(
        f"({x})" for x in terms) + ")\n    except Exception:\n        return False\n"
    exec(compile(src, f"<numgrad guard of {where}>", "exec"), ns)
    guard = ns["guard"]
    guard.source = src
    guard.failing = functools.partial(_failing, s, kept)
    return guard


def _failing(scan, kept):
    """Why the guard fails now, for a person to read (``LR: was 0.1, now 0.2``), or None if
    every term holds."""
    for term, path, was in kept:
        try:
            ok = eval(term, scan.ns)
        except Exception:
            ok = False
        if not ok:
            if path is None:
                return term
            try:
                now = _short(eval(path, scan.ns))
            except Exception:
                now = "gone"
            if now == was:  # the same description of another object
                now += " (another object)"
            return f"{scan.display(path)}: was {was}, now {now}"
    return None


def _short(v):
    if isinstance(v, Tensor):
        return (f"tensor {v.dtype.name}{list(v.shape)} on {v.device}"
                f"{' requires_grad' if v.requires_grad else ''}")
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
