"""Constants of the course assignment's verifier files that the command line needs without
loading numpy."""

#: Relative tolerance of the value check: values are right when within this of the tables'.
DEFAULT_TOLERANCE = 1e-9
#: `check-verifier`'s exit code for a file that disagrees with the tables.
EXIT_BAD_FILE = 3
