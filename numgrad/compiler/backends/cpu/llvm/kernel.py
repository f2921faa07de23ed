"""backends.cpu.llvm.kernel: a kernel made only of ``llvm.body`` bodies, built by llvmlite alone.

Room: compiler. Profiled cold, Numba's part of a schedule whose loops are all
``llvm.body`` bodies was most of its compile: importing and starting Numba (its
registries, once per process), typing and lowering the stage shells, the IR's round trip
through text, and its O3 over every module (docs/design-notes.md, "llvmlite kernels").
Such a kernel's shell is small (read the hoisted scalars, call the body once per chunk,
add the chunks' sums in chunk order, divide a mean), so here it is IR as well, and the
module is optimised and compiled by llvmlite directly: no Numba in the process at all.

How it runs: NumPy allocates every array the kernel writes before the call (filled where
the schedule says); the entry gets one ``PyObject*``, a tuple of the arrays, and reads
each array's data pointer from the tuple and ndarray structs (``OFFSETS``, checked at
import against ``id`` and ``ndarray.ctypes.data``; if that check fails this path is
off). One ctypes call with one argument per kernel call: ``.ctypes.data`` per array
would cost more than the kernel on small inputs. The caller (generated per kernel,
``_caller``) first checks the type, dtype, size and layout of every input, as Numba's
dispatcher would, so a wrong array is a TypeError, never a stray write.

Where it is used (``backends.cpu.build.build``, ``program``): a plan with long loops (an
``llvm.body`` body each) whose kernels all qualify (``plan_kernel``), unless its prange
kernels are in Numba's disk cache already. Parallel loops run serially at the first
call and on Numba's threading layer from the second (its ``parallel_for``, as parfors
call it; importing that module is all it costs): the same chunks, each chunk's sums in
its own slot, added in chunk order, so the bits are those of Numba's kernels in both
tiers and on any number of threads (no fast-math flags, the same body IR).

Disk cache: the object code goes to the kernel cache (``cache.store_object`` /
``cache.load_object``: written atomically, its SHA-256 in a manifest this process
wrote, checked before the bytes are handed to the JIT linker), keyed by the plan, the
helpers' sources, llvmlite's and LLVM's versions and the host CPU.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import threading

import numpy as np
from llvmlite import ir

import numgrad.config as config
import numgrad.compiler.progress as _progress
import numgrad.compiler.backends.disk_cache as _disk
from numgrad.compiler.backends.cpu import cache as _cache
from numgrad.compiler.backends.cpu.llvm import body as _llvm_body
from numgrad.compiler.backends.cpu.program import Program
from numgrad.compiler.schedule import Alias, Loop, _size, cshape

# NUMGRAD_LLVM_KERNEL=0 sends every kernel through Numba, for comparison (read at each plan).
_LOCK = threading.Lock()
_FT = {"float64": ir.DoubleType(), "float32": ir.FloatType()}


def _offsets():
    """(offset of an ndarray's data pointer, offset of a tuple's first item) in bytes,
    or None if CPython's and NumPy's object layouts are not the ones assumed here (then
    nothing is built in this module)."""
    word = ctypes.sizeof(ctypes.c_void_p)
    data, item = 2 * word, 3 * word   # after the refcount and type (and a tuple's size)
    a = np.arange(4.0)
    xs = (a, a[1:], np.empty(0))
    for x in xs:
        if ctypes.c_void_p.from_address(id(x) + data).value != x.ctypes.data:
            return None
    for i, x in enumerate(xs):
        if ctypes.c_void_p.from_address(id(xs) + item + i * word).value != id(x):
            return None
    return data, item


OFFSETS = _offsets()


# ------------------------------------------------------------------ eligibility
def plan_kernel(kernel, specs, fastmath=False):
    """A description of ``kernel`` for the IR shell, or None when something in it is not
    written here. ``specs``: {loop index: (spec text, argument names)} of the loops the
    renderer gave an ``llvm.body`` body (backends.cpu.renderer.KernelRenderer.ir_specs)."""
    if kernel.extents:  # shape-generic: extents and chunks are known at run time only
        return None
    where = {v: ("in", i) for i, v in enumerate(kernel.inputs)}
    bufs, steps = [], []

    def buffer(v, fill=None):
        where[v] = ("buf", len(bufs))
        bufs.append((cshape(v.shape), np.dtype(v.dtype).name,
                     None if fill is None else fill.value))

    for b in kernel.body:
        if isinstance(b, Alias):
            if b.fill is not None:
                if b.src in where:
                    return None
                buffer(b.src, b.fill)
            if b.src not in where:
                return None
            where[b.out] = where[b.src]
            continue
        if not isinstance(b, Loop) or b.partial_reductions:
            return None
        spec = specs.get(b.index)
        if spec is None:
            # A short loop Numba renders itself, beside long ones: the same IR gives the
            # same elementwise bits, but a sum would add in another order; and a light
            # body runs ~10% slower as IR than Numba's vectorised loop (masked vector
            # loads), which only a serial loop of little work can afford.
            if b.full_reductions or b.parallel:
                return None
            spec = _llvm_body.build_spec(b, fastmath)
            if spec is None:
                return None
        chunked, size, nchunks = b.chunked, b.chunk_size, b.chunks
        for a in b.allocs:
            buffer(a.var, a.fill)
        text, names = spec
        spec = json.loads(text)
        hoisted = []
        for h in b.hoisted:
            if h.kind != "scalar":  # literals are constants of the body
                continue
            if h.var not in where:
                return None
            hoisted.append((f"s_{h.var.name}", where[h.var]))
        args = []
        for n in names:
            if n.startswith("s_"):
                args.append(("s", n))
            else:
                var = next((v for v in where if f"f_{v.name}" == n), None)
                if var is None:
                    return None
                args.append(("p", where[var]))
        reds = []
        for r in b.full_reductions:
            buffer(r.out)
            reds.append((r.identity.value, _size(b.shape) if r.mean else None, where[r.out]))
        chunks = ([(c * size, min(size, b.outer - c * size)) for c in range(nchunks)]
                  if chunked else [(0, b.outer)])
        steps.append({"spec": text, "dtype": spec[1], "hoisted": hoisted, "args": args,
                      "chunks": chunks, "reds": reds, "summed": chunked,
                      "parallel": chunked and b.parallel, "size": size, "outer": b.outer})
    outs = []
    for v in kernel.outputs:
        if v in kernel.literals:
            lit = kernel.literals[v]
            outs.append(("lit", lit.value, np.dtype(lit.dtype).name))
        elif v in where:
            outs.append(where[v] + (cshape(v.shape),))
        else:
            return None
    ins = [(_size(cshape(v.shape)), np.dtype(v.dtype).name) for v in kernel.inputs]
    return {"ins": ins, "bufs": bufs, "steps": steps, "outs": outs}


# ------------------------------------------------------------------ the IR
_I8P = ir.IntType(8).as_pointer()
_I64 = ir.IntType(64)
# Numba's threading layer's gufunc-style parallel loop (numba.np.ufunc.parallel, as
# parfors call it): (task, args, dimensions, steps, data, inner_ndim, array_count,
# num_threads); each thread calls task(args, dims, steps, data) on its share of
# dimensions[0], args[0] advanced by steps[0] per item.
_TASK_T = ir.FunctionType(ir.VoidType(), [_I8P.as_pointer(), _I64.as_pointer(),
                                          _I64.as_pointer(), _I8P])
_PFOR_T = ir.FunctionType(ir.VoidType(), [_I8P] * 5 + [_I64] * 3)


def _body(module, spec_text):
    fname = "numgrad_body_" + hashlib.sha256(spec_text.encode()).hexdigest()[:16]
    fn = module.globals.get(fname)
    return fn if fn is not None else _llvm_body._Body(module, json.loads(spec_text), fname).fn


def _c(n):
    return ir.Constant(_I64, n)


def _entry(module, name, desc):
    """The kernel's entry ``void name(i8* tuple, i8* parallel_for, i64 threads)``: the
    tuple holds the inputs, then the buffers; with ``parallel_for`` null the chunks of a
    parallel loop run here in order, else on the threading layer's threads (``_task``).
    Either way each chunk's sums land in its slot and are added in chunk order, so the
    bits do not depend on it."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [_I8P, _I8P, _I64]), name)
    tup, pfor, threads = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    data_off, item_off = OFFSETS
    n_in = len(desc["ins"])
    data = {}

    def ptr(loc, ft):
        key = (tuple(loc), str(ft))
        if key not in data:
            i = loc[1] + (n_in if loc[0] == "buf" else 0)
            obj = b.load(b.bitcast(b.gep(tup, [_c(item_off + 8 * i)]), _I8P.as_pointer()))
            data[key] = b.load(b.bitcast(b.gep(obj, [_c(data_off)]),
                                         ft.as_pointer().as_pointer()))
        return data[key]

    for k, st in enumerate(desc["steps"]):
        ft = _FT[st["dtype"]]
        body = _body(module, st["spec"])
        scalars = {n: b.load(ptr(loc, ft)) for n, loc in st["hoisted"]}
        args = [scalars[x] if kind == "s" else ptr(x, ft) for kind, x in st["args"]]
        nred, chunks = len(st["reds"]), st["chunks"]
        if st["summed"]:
            parts = b.alloca(ft, size=_c(max(1, nred * len(chunks))), name=f"parts{k}")
            if st["parallel"]:
                threaded = fn.append_basic_block(f"threaded{k}")
                serial = fn.append_basic_block(f"serial{k}")
                after = fn.append_basic_block(f"after{k}")
                b.cbranch(b.icmp_unsigned("!=", pfor, ir.Constant(_I8P, None)), threaded,
                          serial)
                b.position_at_end(threaded)
                _threaded(module, b, f"{name}_task{k}", body, st, args, parts, pfor, threads)
                b.branch(after)
                b.position_at_end(serial)
            for c, (lo, m) in enumerate(chunks):
                res = b.call(body, [_c(lo), _c(m)] + args)
                for r in range(nred):
                    b.store(b.extract_value(res, r), b.gep(parts, [_c(r * len(chunks) + c)]))
            if st["parallel"]:
                b.branch(after)
                b.position_at_end(after)
            sums = [[b.load(b.gep(parts, [_c(r * len(chunks) + c)])) for c in range(len(chunks))]
                    for r in range(nred)]
        else:
            res = b.call(body, [_c(chunks[0][0]), _c(chunks[0][1])] + args)
            sums = [[b.extract_value(res, r)] for r in range(nred)]
        for r, (identity, mean_n, loc) in enumerate(st["reds"]):
            if st["summed"]:  # the prange tier's order: identity, then chunk by chunk
                acc = ir.Constant(ft, float(identity))
                for p in sums[r]:
                    acc = b.fadd(acc, p)
            else:
                acc = sums[r][0]
            if mean_n is not None:
                acc = b.fdiv(acc, ir.Constant(ft, float(mean_n)))
            b.store(acc, ptr(loc, ft))
    b.ret_void()
    return fn


def _threaded(module, b, tname, body, st, args, parts, pfor, threads):
    """At ``b``: run the chunks of step ``st`` through ``parallel_for``, one call per
    chunk. The task gets the body's arguments and the parts array through ``data``
    (pointers, and scalars by address), and a chunk counter as its one array argument,
    with step 0 (every call sees the same counter)."""
    n = len(st["chunks"])
    env = b.alloca(_I8P, size=_c(len(args) + 1), name="env")
    for i, a in enumerate(args):
        if isinstance(a.type, ir.PointerType):
            val = b.bitcast(a, _I8P)
        else:  # a scalar: by the address of a stack copy
            slot = b.alloca(a.type)
            b.store(a, slot)
            val = b.bitcast(slot, _I8P)
        b.store(val, b.gep(env, [_c(i)]))
    b.store(b.bitcast(parts, _I8P), b.gep(env, [_c(len(args))]))
    counter = b.alloca(_I64, name="next_chunk")
    b.store(_c(0), counter)
    argv = b.alloca(_I8P, size=_c(1))
    b.store(b.bitcast(counter, _I8P), argv)
    dims = b.alloca(_I64, size=_c(1))
    b.store(_c(n), dims)
    steps = b.alloca(_I64, size=_c(1))
    b.store(_c(0), steps)
    task = _task(module, tname, body, st, [a.type for a in args])
    b.call(b.bitcast(pfor, _PFOR_T.as_pointer()),
           [b.bitcast(task, _I8P), b.bitcast(argv, _I8P), b.bitcast(dims, _I8P),
            b.bitcast(steps, _I8P), b.bitcast(env, _I8P), _c(0), _c(1), threads])


def _task(module, name, body, st, argtypes):
    """``void name(i8** args, i64* dims, i64* steps, i8* env)``: takes the next chunk
    from the counter ``args[0]`` until none is left, each chunk's sums into its slots
    of the parts array.

    Chunks are handed out as threads ask for them, not split in fixed shares as
    ``parallel_for`` would: on a shared machine one thread may stall for milliseconds,
    and the other then does more chunks instead of waiting at the join. The sums do
    not depend on which thread ran a chunk (each has its own slot, added in chunk
    order). The calls ``parallel_for`` makes after the chunks are gone return at once."""
    fn = ir.Function(module, _TASK_T, name)
    fn.linkage = "internal"
    argv, env = fn.args[0], fn.args[3]
    entry = fn.append_basic_block("entry")
    loop = fn.append_basic_block("loop")
    run = fn.append_basic_block("run")
    done = fn.append_basic_block("done")
    b = ir.IRBuilder(entry)
    envp = b.bitcast(env, _I8P.as_pointer())
    args = []
    for i, t in enumerate(argtypes):
        raw = b.load(b.gep(envp, [_c(i)]))
        args.append(b.bitcast(raw, t) if isinstance(t, ir.PointerType)
                    else b.load(b.bitcast(raw, t.as_pointer())))
    ft = _FT[st["dtype"]]
    parts = b.bitcast(b.load(b.gep(envp, [_c(len(argtypes))])), ft.as_pointer())
    counter = b.bitcast(b.load(argv), _I64.as_pointer())
    size, outer, n = st["size"], st["outer"], len(st["chunks"])
    b.branch(loop)
    b.position_at_end(loop)
    c = b.atomic_rmw("add", counter, _c(1), "monotonic")
    b.cbranch(b.icmp_signed("<", c, _c(n)), run, done)
    b.position_at_end(run)
    lo = b.mul(c, _c(size))
    rest = b.sub(_c(outer), lo)
    m = b.select(b.icmp_signed("<", rest, _c(size)), rest, _c(size))
    res = b.call(body, [lo, m] + args)
    for r in range(len(st["reds"])):
        b.store(b.extract_value(res, r), b.gep(parts, [b.add(_c(r * n), c)]))
    b.branch(loop)
    b.position_at_end(done)
    b.ret_void()
    return fn


# ------------------------------------------------------------------ compiling
_TM = None


def _new_target_machine():
    """A target machine for this host (O3, for the JIT)."""
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
        opt=3, reloc="default", codemodel="jitdefault", jit=True)


def _target_machine():
    """The one that optimises and emits the objects."""
    global _TM
    if _TM is None:
        _TM = _new_target_machine()
    return _TM


def cache_key(descs):
    """What the object code depends on, as text (hashed into its cache entry's name)."""
    import llvmlite
    import llvmlite.binding as llvm
    return json.dumps({"kernels": descs, "llvmlite": llvmlite.__version__,
                       "llvm": list(llvm.llvm_version_info), "triple": llvm.get_process_triple(),
                       "cpu": llvm.get_host_cpu_name(),
                       "features": llvm.get_host_cpu_features().flatten(),
                       "offsets": OFFSETS}, sort_keys=True)


def compile_object(descs, names):
    """Object code for the kernels ``descs`` (entries called ``names``)."""
    import llvmlite.binding as llvm
    module = ir.Module(name="numgrad_llvm_kernel")
    module.triple = llvm.get_process_triple()
    for desc, name in zip(descs, names):
        _entry(module, name, desc)
    mod = llvm.parse_assembly(str(module))
    for f in mod.functions:  # only the entries are called from outside
        if not f.is_declaration and f.name not in names:
            f.linkage = llvm.Linkage.internal
    mod.verify()
    tm = _target_machine()
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=3))
    pb.getModulePassManager().run(mod, pb)
    return tm.emit_object(mod)


_ENGINE = None
_LOADED = {}   # cache entry name -> Loaded (one copy of a plan's code per process)


def _engine():
    """The process's one MCJIT engine (it owns the target machine it is given, so it gets
    its own; objects are added to it and live as long as the process, as Numba's do)."""
    global _ENGINE
    if _ENGINE is None:
        import llvmlite.binding as llvm
        _ENGINE = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _new_target_machine())
    return _ENGINE


class Loaded:
    """Object code linked into this process: its entries' addresses."""

    def __init__(self, obj, names):
        import llvmlite.binding as llvm
        engine = _engine()
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
        self.addresses = [engine.get_function_address(n) for n in names]
        if not all(self.addresses):
            raise RuntimeError("an llvm.kernel entry did not link")


def load(name, obj, names):
    """``Loaded`` for the cache entry ``name`` (linked once per process)."""
    with _LOCK:
        loaded = _LOADED.get(name)
        if loaded is None:
            loaded = _LOADED[name] = Loaded(obj, names)
        return loaded


class LLVMKernel:
    """A kernel's entry as a Python callable: ``kernel(*input arrays) -> output tuple``,
    the calling convention of the Numba kernels it stands in for. Serial until
    ``threaded()``."""

    def __init__(self, name, desc, address):
        self.name = name
        self.desc = desc
        self.parallel = any(st["parallel"] for st in desc["steps"])
        self._entry = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p,
                                       ctypes.c_int64)(address)
        self._call = _caller(name, desc, self._entry, None)

    def threaded(self):
        """Run the parallel loops on Numba's threading layer from now on."""
        if self.parallel:
            self._call = _caller(self.name, self.desc, self._entry, _threading())

    def __call__(self, *arrays):
        return self._call(*arrays)


@functools.lru_cache(maxsize=None)
def _threading():
    """``(parallel_for's address, get_num_threads)`` of Numba's threading layer, started
    here (after ``omp.tune``, which must run before OpenMP loads). Imports Numba's
    threading module only: no compiler."""
    from numgrad.compiler.backends.cpu import omp
    omp.tune()
    from numba.np.ufunc import parallel
    parallel._launch_threads()
    import llvmlite.binding as llvm
    address = llvm.address_of_symbol("numba_parallel_for")  # registered by the launch
    if not address:
        raise RuntimeError("Numba's threading layer has no parallel_for")
    # The layer's own ctypes getter of this thread's count (what numba.get_num_threads
    # returns after its checks): cheaper per call (docs/design-notes.md, "llvmlite kernels").
    return address, getattr(parallel, "_get_num_threads", None) or parallel.get_num_threads


def threads_tier(kernels):
    """The upgrade (cpu_program.Program) of a program of LLVMKernels to threads."""
    def upgrade(prog):
        for k in kernels:
            k.fn.threaded()
    return upgrade


def _caller(name, desc, entry, threading):
    """The Python function that checks the inputs, allocates the buffers, calls ``entry``
    and returns the outputs, written out for this kernel: a loop over lists here cost
    more than the whole Numba dispatch. ``threading``: ``_threading()``,
    or None for serial."""
    ns = {"entry": entry, "empty": np.empty, "full": np.full, "ndarray": np.ndarray,
          "_bad": _bad, "name": name}
    ins = [f"a{i}" for i in range(len(desc["ins"]))]
    lines = [f"def call({', '.join(ins)}):"]
    for i, (n, dt) in enumerate(desc["ins"]):
        ns[f"D{i}"] = np.dtype(dt)
        lines.append(f"    if (a{i}.__class__ is not ndarray or a{i}.dtype != D{i} or "
                     f"a{i}.size != {n} or not a{i}.flags.c_contiguous "
                     f"or not a{i}.flags.writeable):")
        lines.append(f"        _bad(name, a{i}, D{i}, {n})")
    bufs = []
    for j, (shape, dt, fill) in enumerate(desc["bufs"]):
        ns[f"B{j}"] = np.dtype(dt)
        shape = tuple(shape)
        if fill is None:
            lines.append(f"    b{j} = empty({shape!r}, B{j})")
        else:
            ns[f"F{j}"] = fill
            lines.append(f"    b{j} = full({shape!r}, F{j}, B{j})")
        bufs.append(f"b{j}")
    lines.append(f"    t = ({', '.join(ins + bufs)},)")  # alive until the call returns
    if threading is None:
        lines.append("    entry(id(t), None, 0)")
    else:
        ns["PFOR"], ns["threads"] = threading
        lines.append("    entry(id(t), PFOR, threads())")
    outs = []
    for k, o in enumerate(desc["outs"]):
        if o[0] == "lit":
            ns[f"L{k}"], ns[f"LD{k}"] = o[1], np.dtype(o[2])
            outs.append(f"full(1, L{k}, LD{k})")
            continue
        var = f"a{o[1]}" if o[0] == "in" else f"b{o[1]}"
        have = tuple(desc["bufs"][o[1]][0]) if o[0] == "buf" else None
        outs.append(var if have == tuple(o[2]) else f"{var}.reshape({tuple(o[2])!r})")
    lines.append(f"    return ({', '.join(outs)},)")
    exec("\n".join(lines), ns)  # noqa: S102 (source written above from the kernel's plan)
    return ns["call"]


def _bad(name, a, dtype, n):
    raise TypeError(f"kernel {name} takes writeable C-contiguous {dtype} arrays of {n} "
                    f"elements, got {type(a).__name__} "
                    f"{getattr(a, 'dtype', '')}{list(getattr(a, 'shape', ()))}")


# ------------------------------------------------------------------ the program
def program(sched, steps, options, source):
    """``sched``'s Program with llvmlite-built kernels, or None where a kernel does not
    qualify (``plan_kernel``), no loop is long enough for an llvm.body body (Numba's
    loops then compile fast and run a light body faster) or fastmath is on (Numba's
    fast flags on the shell's sums would let the bits differ from its kernels').
    ``source``: the Numba source of the
    same plan (what ``compiled.source`` shows). Kernels with parallel loops run serially
    at the first call and on threads from the second (``options.parallel=True``: from
    the first)."""
    enabled = config.get("NUMGRAD_LLVM_KERNEL")
    if (not enabled or OFFSETS is None or options.fastmath
            or not any(k.ir_specs for k in sched.kernels)):  # nothing long: Numba's own
        return None
    descs = []
    for k in sched.kernels:
        d = plan_kernel(k, k.ir_specs, options.fastmath)
        if d is None:
            return None
        descs.append(d)
    name = _cache.module_name("llvm_kernel\n" + cache_key(descs))
    entries = [f"{name}_{i}" for i in range(len(descs))]
    loaded = _LOADED.get(name)  # this plan's code is linked already (another function)
    obj = _disk.load_object(name) if options.cache and loaded is None else None
    disk_hit = obj is not None
    try:
        if loaded is None and obj is None:
            _progress.note(options.role, None, [k.name for k in sched.kernels])
            if options.verbose:
                print(f"[numgrad.jit] compiling {name} with llvmlite "
                      f"({len(descs)} kernel{'s' if len(descs) > 1 else ''})")
            obj = compile_object(descs, entries)
            if options.cache:
                _disk.store_object(name, obj)
        loaded = loaded or load(name, obj, entries)
    except Exception as exc:  # noqa: BLE001 (Numba's path compiles it instead)
        if options.verbose:
            print(f"[numgrad.jit] llvm.kernel declined ({type(exc).__name__}: {exc}); "
                  "compiling with Numba")
        return None
    for k, d, address in zip(sched.kernels, descs, loaded.addresses):
        k.fn = LLVMKernel(k.name, d, address)
    upgrade = None
    if any(k.fn.parallel for k in sched.kernels):
        if options.parallel is True:
            threads_tier(sched.kernels)(None)
        else:
            upgrade = threads_tier(sched.kernels)
    prog = Program(sched.graph, steps, None, source, disk_hit, upgrade)
    prog.schedule = sched
    return prog
