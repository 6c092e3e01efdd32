"""Threads parsing source while the garbage collector runs weakref callbacks during AST construction, as
schemathesis's workers and Hypothesis do: prints how many parses failed with the AST recursion-depth
SystemError. With --serialized, `serialize_ast` (the fuzzer's fix) is imported first."""

import gc
import inspect
import sys
import threading
import weakref

if "--serialized" in sys.argv:
    import serialize_ast  # noqa: F401

import ast

SOURCE = open(inspect.getsourcefile(threading)).read()
CACHE = weakref.WeakKeyDictionary()
errors = []


class Key:
    pass


def work():
    for _ in range(40):
        # Garbage in reference cycles with weakref callbacks, collected during the next parse.
        for _ in range(200):
            key = Key()
            key.me = key
            CACHE[key] = 1
        try:
            ast.parse(SOURCE)
        except SystemError as e:
            errors.append(str(e))


gc.set_threshold(50)
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro} {len(errors)}")
