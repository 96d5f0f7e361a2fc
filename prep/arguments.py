"""Command-line arguments: a bad value is one `error:` line (exit code 2), like every failure.

- ArgumentParser: argparse's, but a usage error is one line, `error: argument --seed: ...`
- fraction, seed, positive_int: argparse `type=` checks for numbers that must be sane

    parser.add_argument("--val-fraction", type=fraction)  # "nan", "inf", "0", "1.5" -> exit 2
"""

import argparse
import math
import sys


class ArgumentParser(argparse.ArgumentParser):
    """argparse.ArgumentParser whose usage errors are one line: `error: ... (see --help)`."""

    def error(self, message):
        print(f"error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def fraction(text):
    """A number strictly between 0 and 1: "0.0005" -> 0.0005; "nan", "inf", "0", "1" -> error."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and 0 < value < 1):
        raise argparse.ArgumentTypeError(f"{text} is not a number strictly between 0 and 1")
    return value


def _whole_number(text):
    """The integer `text` names: "12" -> 12; "1.5", "x" -> error."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def seed(text):
    """A random seed numpy accepts, 0 to 2**32 - 1: "2357" -> 2357; "-1" -> error."""
    value = _whole_number(text)
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 2**32 - 1")
    return value


def positive_int(text):
    """A whole number of at least 1 (processes, workers): "4" -> 4; "0" -> error."""
    value = _whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is less than 1")
    return value
