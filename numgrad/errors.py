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
            code = f": `{fs.line.strip()}`" if fs.line else ""
            return f"at {fs.filename}:{fs.lineno}{code}"
    return "in the traced function"
