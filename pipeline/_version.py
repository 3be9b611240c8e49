"""The package's version: a leaf module (it imports nothing), so that every layer can read it.

``pyproject.toml`` reads it too (``[tool.setuptools.dynamic]``): this is the one place it is
written.
"""

__version__ = "0.1.0"
