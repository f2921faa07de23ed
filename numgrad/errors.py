"""errors: exception types shared by every room.

Room: leaf. ``TracingError`` lives here (not in the compiler) so that eager ops
can raise it when handed a traced value they cannot take, without importing
the compiler.
"""


class TracingError(RuntimeError):
    """``@ng.jit`` cannot trace this code; the message names the user's file and line."""


def user_location() -> str:
    """``at file:line: `code``` for the innermost frame outside numgrad (the user's line)."""
    import os
    import traceback
    pkg = os.path.dirname(os.path.abspath(__file__))
    for fs in reversed(traceback.extract_stack()):
        if not os.path.abspath(fs.filename).startswith(pkg):
            code = f": `{_code_only(fs.line)}`" if fs.line else ""
            return f"at {where(fs.filename, fs.lineno)}{code}"
    return "in the traced function"


def _code_only(line: str) -> str:
    """``line`` without its trailing comment and the padding before it (the error quotes the
    code; the comment was the user's note to themselves)."""
    import io
    import tokenize
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline):
            if tok.type == tokenize.COMMENT:
                return line.strip()[:tok.start[1]].rstrip()
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass  # a line that does not tokenize alone (inside a bracket or string): as it is
    return line.strip()


def where(filename, lineno) -> str:
    """``file:line``, or ``Cell In[3], line 2`` for code typed into IPython/Jupyter (whose
    cells are compiled from files like ``/tmp/ipykernel_123/456.py``), as IPython says it."""
    import sys
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    fmt = getattr(getattr(shell, "compile", None), "format_code_name", None)
    if fmt is not None:
        try:
            named = fmt(filename)
        except Exception:  # an IPython without the cell map: fall back to the file name
            named = None
        if named:
            return f"{named[0]} {named[1]}, line {lineno}"
    return f"{filename}:{lineno}"


class DataDependentError(TracingError):
    """An op whose result's shape depends on tensor values (``x[mask]``, ``nonzero``) met
    while tracing. ``@ng.jit`` catches it and runs that signature eagerly (a graph break,
    ``compiler.graph_break``); it reaches the user only from ``trace()`` or ``source()``."""
