"""Loops compiled with numba where it is installed, for dedup's and formats' kernels (without
numba each caller runs the numpy code its kernel equals). Import it only where a kernel is first
used: numba takes a second to import."""

try:
    import numba
except ImportError:
    numba = None


def compiled(function):
    """`function` compiled by numba (cached for a later process), or None without numba."""
    if numba is None:
        return None
    try:
        return numba.njit(nogil=True, cache=True)(function)
    except RuntimeError:  # numba found no folder to cache in: each process compiles it again
        return numba.njit(nogil=True)(function)
