"""The command line: ``python -m numgrad demo | bench | info | notebooks | cache``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

# bench/ is a folder of the repository, not part of the installed package: found beside the
# package in a checkout (an editable install), whatever the working directory is.
_CHECKOUT = Path(__file__).resolve().parent.parent


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m numgrad",
                                     description="numgrad: PyTorch's gradients, compiled.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser("demo", help="walk through the five gradient tools, eager and compiled")
    demo.add_argument("--eager-only", action="store_true", help="skip the compiled column")
    sub.add_parser("info", help="versions, threads, cache directory and NUMGRAD_* flags")
    nbs = sub.add_parser("notebooks", help="execute notebooks/*.ipynb and save their outputs "
                                           "(needs the dev extra)")
    nbs.add_argument("paths", nargs="*", help="notebooks to run (default: all)")
    nbs.add_argument("--out-dir", metavar="DIR", default="executed-notebooks",
                     help="where the executed copies go (default: ./executed-notebooks)")
    nbs.add_argument("--in-place", action="store_true",
                     help="write the outputs back into the notebooks themselves (for "
                          "maintainers updating the committed notebooks)")
    cache = sub.add_parser("cache", help="the kernel cache on disk: where, how big; clear it")
    cache.add_argument("action", choices=("info", "clear"))
    bench = sub.add_parser("bench", help="benchmarks against PyTorch and JAX (run from the "
                                         "repository root, where bench/ is)",
                           description="Times W1-W6 for every installed system, interleaved, "
                                       "and writes a table, JSON, CSV and a plot.")
    add_arguments = _bench_arguments()
    if add_arguments is not None:
        add_arguments(bench)
    args, unknown = parser.parse_known_args(argv)
    # Without bench/ its options are unknown: the message below, not argparse's, says why.
    if unknown and not (args.command == "bench" and add_arguments is None):
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command is None:
        parser.print_help()
        print("\nStart with: python -m numgrad demo")
        return 0
    if args.command == "demo":
        from numgrad.demo import run
        return run(compiled=not args.eager_only)
    if args.command == "info":
        from numgrad.demo import info
        return info() or _flags()
    if args.command == "notebooks":
        from numgrad.notebooks import main as run_notebooks
        return run_notebooks(args.paths, out_dir=None if args.in_place else args.out_dir)
    if args.command == "cache":
        return _cache(args.action)
    if args.command == "bench":
        if add_arguments is None:
            print("the benchmarks live in the repository's bench/ folder, which this install "
                  "does not have: clone the repository, `pip install -e \".[bench]\"`, then "
                  "run `python -m numgrad bench --quick` (from any folder)", file=sys.stderr)
            return 2
        from bench.runner import run_args
        return run_args(args)
    return 0


def _bench_arguments():
    """bench.runner's add_arguments, from the checkout this numgrad was installed from (or
    the working directory's bench/); None where there is no bench/ to import."""
    if (_CHECKOUT / "bench" / "runner.py").is_file() and str(_CHECKOUT) not in sys.path:
        sys.path.insert(0, str(_CHECKOUT))
    try:
        from bench.runner import add_arguments
    except ImportError:
        return None
    return add_arguments


def _flags():
    """Every NUMGRAD_* variable (numgrad.config), its value now and what it does."""
    from numgrad import config
    print("flags (environment variables):")
    for name, value, doc in config.describe():
        print(f"  {name} = {value}\n      {doc}")
    return 0


def _cache(action):
    from numgrad.compiler.backends import disk_cache as cache
    if action == "clear":
        try:
            n = cache.clear()
        except PermissionError as exc:
            print(exc, file=sys.stderr)
            return 1
        print(f"removed {n} cache entr{'y' if n == 1 else 'ies'} from {cache.configured_dir()}")
        return 0
    i = cache.info()
    print(f"kernel cache: {i['path']}\nstatus: {i['status']}\n"
          f"entries: {i['entries']}, {i['bytes'] / 2**20:.1f} MiB of at most "
          f"{i['max_bytes'] / 2**20:.0f} MiB (NUMGRAD_CACHE_MAX_MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
