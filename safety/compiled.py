"""Loops compiled with numba where it is installed (the extras `fast` and `fast-dedup`), for
the kernels of dedup/compiled.py and formats/compiled.py; without numba each caller runs the
numpy code its kernel equals. Import this module only where a kernel is first used: numba takes
a second to import, which a run that needs no kernel skips."""

try:
    import numba
except ImportError:
    numba = None


def compiled(function):
    """`function` compiled by numba (cached beside its file, or in the user's cache folder: a
    later process loads it), or None without numba."""
    if numba is None:
        return None
    try:
        return numba.njit(nogil=True, cache=True)(function)
    except RuntimeError:  # numba found no folder to cache in: each process compiles it again
        return numba.njit(nogil=True)(function)
