"""One AST construction at a time in the fuzzing process.

CPython before 3.11.8 and 3.12.2 (gh-106905) keeps one recursion-depth counter per interpreter while it turns a
parse tree into `ast` objects. When the garbage collector runs Python code in the middle of that (a weakref
callback, a finalizer) and another thread gets the GIL and parses too, the two change the same counter and one
of them fails with "SystemError: AST constructor recursion depth mismatch". Schemathesis runs its workers as
threads and Hypothesis parses source files to describe lambdas (since 6.139, whole files), so a run failed in
about half the cases. Every `ast.parse` of the process goes through one re-entrant lock: a thread that wants to
parse while another is constructing waits for it (a nested parse on the same thread is properly nested).
`ast_race.py` shows the failure and its absence."""

import ast
import threading

_LOCK = threading.RLock()
_parse = ast.parse


def _serialized_parse(*args, **kwargs):
    with _LOCK:
        return _parse(*args, **kwargs)


if getattr(ast.parse, "__name__", "") != "_serialized_parse":
    ast.parse = _serialized_parse
